/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * sockets_req.c: the requests handed to the core. Every live request is
 * on ctx->reqs, so that finalize frees the ones the core never tested.
 */
#include "config.h"

#include <stdlib.h>

#include "plugins/sockets/sockets.h"

struct sock_req *weft__sock_req_new(struct sock_ctx *ctx, int kind, int peer, void *buf,
                                    size_t len, uint64_t tag, uint64_t ignore)
{
    struct sock_req *r = calloc(1, sizeof(*r));

    if (!r) {
        ctx->core->set_error(SOCK_NAME ": out of memory for a request");
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
    r->next = ctx->reqs;
    if (ctx->reqs)
        ctx->reqs->prev = r;
    ctx->reqs = r;
    return r;
}

/* The first result sticks; a cancelled request that finishes anyway
 * reports the cancel, as transport.h asks. */
void weft__sock_req_complete(struct sock_req *r, weft_result_t status)
{
    if (r->done)
        return;
    r->done = 1;
    r->status = r->cancelled && status == WEFT_SUCCESS ? WEFT_ERR_ABORTED : status;
}

void weft__sock_req_free(struct sock_ctx *ctx, struct sock_req *r)
{
    if (r->prev)
        r->prev->next = r->next;
    else
        ctx->reqs = r->next;
    if (r->next)
        r->next->prev = r->prev;
    free(r);
}
