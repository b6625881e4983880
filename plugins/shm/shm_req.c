/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * shm_req.c: the requests handed to the core. Every live request is on
 * ctx->reqs, so that finalize frees the ones the core never tested.
 */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "plugins/shm/shm.h"

/* Freed requests kept for reuse, linked by next: a small message costs
 * the transport a few hundred cycles, as much as a calloc and a free. */
#define SHM_REQ_SPARE_MAX 16

struct shm_req *weft__shm_req_new(struct shm_ctx *ctx, int kind, int peer, void *buf,
                                  size_t len, uint64_t tag, uint64_t ignore)
{
    struct shm_req *r = ctx->spare_reqs;

    if (r) {
        ctx->spare_reqs = r->next;
        ctx->nspare_reqs--;
        memset(r, 0, sizeof(*r));
    } else {
        r = calloc(1, sizeof(*r));
    }
    if (!r) {
        ctx->core->set_error(SHM_NAME ": out of memory for a request");
        return NULL;
    }
    r->kind = kind;
    r->peer = peer;
    r->buf = buf;
    r->len = len;
    r->tag = tag;
    r->ignore = ignore;
    r->src = peer;
    r->mtag = tag;
    r->total = kind == SHM_SEND ? len : 0;
    r->next = ctx->reqs;
    if (ctx->reqs)
        ctx->reqs->prev = r;
    ctx->reqs = r;
    return r;
}

/* The first result sticks; a cancelled request that finishes anyway
 * reports the cancel, as transport.h asks. */
void weft__shm_req_complete(struct shm_req *r, weft_result_t status)
{
    if (r->done)
        return;
    r->done = 1;
    r->status = r->cancelled && status == WEFT_SUCCESS ? WEFT_ERR_ABORTED : status;
}

void weft__shm_req_free(struct shm_ctx *ctx, struct shm_req *r)
{
    if (r->prev)
        r->prev->next = r->next;
    else
        ctx->reqs = r->next;
    if (r->next)
        r->next->prev = r->prev;
    if (ctx->nspare_reqs >= SHM_REQ_SPARE_MAX || ctx->finalizing) {
        free(r);
        return;
    }
    r->next = ctx->spare_reqs;
    ctx->spare_reqs = r;
    ctx->nspare_reqs++;
}

void weft__shm_req_spares_free(struct shm_ctx *ctx)
{
    while (ctx->spare_reqs) {
        struct shm_req *r = ctx->spare_reqs;

        ctx->spare_reqs = r->next;
        free(r);
    }
    ctx->nspare_reqs = 0;
}
