/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * shm_msg.c: where a message's bytes wait. The common matcher
 * (plugins/common/tp_match.c) decides which receive a message goes to;
 * the bytes go to that receive's buffer when it has one, to the message's
 * own buffer (ubuf) while it waits unexpected, or nowhere once its
 * receive was cancelled (orphan) or past the receive's capacity. Small
 * messages wait inside their shm_msg, larger ones in reused buffers, and
 * shm_msg structs are reused too: see shm.h for what that saved.
 */
#include "config.h"

#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "plugins/shm/shm.h"

/* ------------------------------------------------------------ buffers */

/* A buffer for an unexpected message of total bytes: the smallest spare
 * that holds it, else a new one. */
static unsigned char *ubuf_get(struct shm_ctx *ctx, size_t total, size_t *cap)
{
    int best = -1;

    for (int i = 0; i < ctx->nspare_ubufs; i++)
        if (ctx->spare_ucap[i] >= total &&
            (best < 0 || ctx->spare_ucap[i] < ctx->spare_ucap[best]))
            best = i;
    if (best >= 0) {
        unsigned char *b = ctx->spare_ubuf[best];

        *cap = ctx->spare_ucap[best];
        ctx->spare_ubytes -= *cap;
        ctx->nspare_ubufs--;
        ctx->spare_ubuf[best] = ctx->spare_ubuf[ctx->nspare_ubufs];
        ctx->spare_ucap[best] = ctx->spare_ucap[ctx->nspare_ubufs];
        return b;
    }
    *cap = total ? total : 1;
    return malloc(*cap);
}

/* Keeps b for the next unexpected message, or frees it: when it is too
 * large, or when the spares are full of larger ones (a full set gives up
 * its smallest for a larger buffer). */
static void ubuf_put(struct shm_ctx *ctx, unsigned char *b, size_t cap)
{
    int smallest = 0;

    if (!b)
        return;
    if (cap > SHM_UBUF_KEEP_MAX || ctx->finalizing) {
        free(b);
        return;
    }
    if (ctx->nspare_ubufs < SHM_UBUF_SPARE_MAX &&
        ctx->spare_ubytes + cap <= SHM_UBUF_KEEP_MAX) {
        ctx->spare_ubuf[ctx->nspare_ubufs] = b;
        ctx->spare_ucap[ctx->nspare_ubufs++] = cap;
        ctx->spare_ubytes += cap;
        return;
    }
    for (int i = 1; i < ctx->nspare_ubufs; i++)
        if (ctx->spare_ucap[i] < ctx->spare_ucap[smallest])
            smallest = i;
    if (!ctx->nspare_ubufs || ctx->spare_ucap[smallest] >= cap ||
        ctx->spare_ubytes - ctx->spare_ucap[smallest] + cap > SHM_UBUF_KEEP_MAX) {
        free(b);
        return;
    }
    free(ctx->spare_ubuf[smallest]);
    ctx->spare_ubytes += cap - ctx->spare_ucap[smallest];
    ctx->spare_ubuf[smallest] = b;
    ctx->spare_ucap[smallest] = cap;
}

/* Gives m's buffer back, unless it is m's own. */
static void msg_drop_ubuf(struct shm_ctx *ctx, struct shm_msg *m)
{
    if (!m->ubuf_inline)
        ubuf_put(ctx, m->ubuf, m->ucap);
    m->ubuf = NULL;
    m->ubuf_inline = 0;
}

/* ------------------------------------------------------------ messages */

/* A cleared message, from the spares when there is one. */
static struct shm_msg *msg_new(struct shm_ctx *ctx)
{
    struct shm_msg *m = ctx->spare_msgs;

    if (m) {
        ctx->spare_msgs = (struct shm_msg *)m->qnext;
        ctx->nspare_msgs--;
    } else if (!(m = malloc(sizeof(*m)))) {
        return NULL;
    }
    memset(m, 0, offsetof(struct shm_msg, inline_data));
    return m;
}

/* Frees m and its buffer, keeping m for the next message while there is
 * room among the spares. */
static void msg_free(struct shm_ctx *ctx, struct shm_msg *m)
{
    msg_drop_ubuf(ctx, m);
    if (ctx->nspare_msgs >= SHM_MSG_SPARE_MAX || ctx->finalizing) {
        free(m);
        return;
    }
    m->qnext = (struct tp_msg *)ctx->spare_msgs;
    ctx->spare_msgs = m;
    ctx->nspare_msgs++;
}

/* ------------------------------------------------------------ the matcher's calls */

/* What arrived moves from ubuf to r's buffer (with the CUDA driver when
 * that is device memory); the rest will be written there directly. A
 * failed copy completes r with the driver's error. */
static int msg_bind(struct tp_ctx *tp, struct tp_msg *tm, struct tp_req *r)
{
    struct shm_msg *m = (struct shm_msg *)tm;

    if (tm->got && r->len) {
        if (!r->mhandle)
            memcpy(r->buf, m->ubuf, tp_min(tm->got, r->len));
        else if (weft__shm_cuda_copy(tp, r->buf, m->ubuf, tp_min(tm->got, r->len)) != 0)
            weft__tp_req_complete(r, WEFT_ERR_SYSTEM);
    }
    msg_drop_ubuf((struct shm_ctx *)tp, m);
    return tm->got == tm->total;
}

static int msg_hold(struct tp_ctx *tp, struct tp_msg *tm)
{
    struct shm_msg *m = (struct shm_msg *)tm;

    if (tm->total <= SHM_MSG_INLINE) {
        m->ubuf = m->inline_data;
        m->ucap = SHM_MSG_INLINE;
        m->ubuf_inline = 1;
        return 0;
    }
    m->ubuf = ubuf_get((struct shm_ctx *)tp, tm->total, &m->ucap);
    return m->ubuf ? 0 : -1;
}

static void msg_release(struct tp_ctx *tp, struct tp_msg *tm)
{
    msg_free((struct shm_ctx *)tp, (struct shm_msg *)tm);
}

const struct tp_match_ops weft__shm_msg_ops = {
    .bind = msg_bind,
    .hold = msg_hold,
    .free = msg_release,
};

/* ------------------------------------------------------------ arrivals */

struct shm_msg *weft__shm_msg_arrive(struct shm_ctx *ctx, int peer, uint64_t tag,
                                     size_t total)
{
    struct shm_msg *m = msg_new(ctx);

    if (!m)
        return NULL;
    m->peer = peer;
    m->tag = tag;
    m->total = total;
    if (weft__tp_match_arrive(&ctx->tp, &m->tp) != 0) {
        msg_free(ctx, m);
        return NULL;
    }
    return m;
}

unsigned char *weft__shm_msg_dest(struct shm_msg *m, size_t *cap)
{
    struct tp_req *r = m->req;

    if (r) {
        /* Not past the message either: a receive's bytes beyond it stay
         * as they were, whatever a corrupt peer's records claim. */
        size_t end = tp_min(r->len, m->total);

        *cap = end > m->got ? end - m->got : 0;
        return *cap ? r->buf + m->got : NULL;
    }
    if (m->ubuf) {
        *cap = m->total - m->got;
        return m->ubuf + m->got;
    }
    *cap = 0;
    return NULL;
}

/* len more bytes of m arrived (and were copied to weft__shm_msg_dest). */
void weft__shm_msg_add(struct shm_ctx *ctx, struct shm_msg *m, size_t len)
{
    /* Records that carry more than the message's total (a corrupt peer)
     * end it: got never passes total, as binding (which finishes a
     * message at got == total and copies got bytes of ubuf) counts on. */
    m->got += tp_min(len, m->total - m->got);
    if (m->got >= m->total)
        weft__tp_match_done(&ctx->tp, &m->tp);
}

/* Frees the messages still arriving that are in no queue (the common
 * part frees the queued ones). */
void weft__shm_msgs_free(struct shm_ctx *ctx)
{
    for (int i = 0; i < ctx->size; i++) {
        struct shm_msg *m = ctx->peers[i].cur;

        if (m && !m->in_unexp && !m->claimed)
            msg_free(ctx, m);
        ctx->peers[i].cur = NULL;
    }
}

void weft__shm_spares_free(struct shm_ctx *ctx)
{
    while (ctx->nspare_ubufs > 0)
        free(ctx->spare_ubuf[--ctx->nspare_ubufs]);
    ctx->spare_ubytes = 0;
    while (ctx->spare_msgs) {
        struct shm_msg *m = ctx->spare_msgs;

        ctx->spare_msgs = (struct shm_msg *)m->qnext;
        free(m);
    }
    ctx->nspare_msgs = 0;
}
