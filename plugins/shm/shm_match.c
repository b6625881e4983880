/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * shm_match.c: tag matching. Receives wait in the posted list in post
 * order, messages without a receive in the unexpected queue in arrival
 * order; a new message takes the first posted receive it matches, a new
 * receive the first queued message. Each ring is in send order, which
 * gives per-peer, per-tag ordering.
 *
 * A message's bytes go to its receive's buffer when it has one, to its
 * own buffer (ubuf) while it waits unexpected, or nowhere once its
 * receive was cancelled (orphan) or past the receive's capacity.
 */
#include "config.h"

#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "plugins/shm/shm.h"

int weft__shm_tag_match(uint64_t want, uint64_t ignore, uint64_t got)
{
    return (want & ~ignore) == (got & ~ignore);
}

/* ------------------------------------------------------------ lists */

static void posted_append(struct shm_ctx *ctx, struct shm_req *r)
{
    r->qnext = NULL;
    r->qprev = ctx->post_tail;
    if (ctx->post_tail)
        ctx->post_tail->qnext = r;
    else
        ctx->post_head = r;
    ctx->post_tail = r;
    r->queued = 1;
}

static void posted_remove(struct shm_ctx *ctx, struct shm_req *r)
{
    if (!r->queued)
        return;
    if (r->qprev)
        r->qprev->qnext = r->qnext;
    else
        ctx->post_head = r->qnext;
    if (r->qnext)
        r->qnext->qprev = r->qprev;
    else
        ctx->post_tail = r->qprev;
    r->qprev = r->qnext = NULL;
    r->queued = 0;
}

static void unexp_append(struct shm_ctx *ctx, struct shm_msg *m)
{
    m->qnext = NULL;
    m->qprev = ctx->unexp_tail;
    if (ctx->unexp_tail)
        ctx->unexp_tail->qnext = m;
    else
        ctx->unexp_head = m;
    ctx->unexp_tail = m;
    m->in_unexp = 1;
}

static void unexp_remove(struct shm_ctx *ctx, struct shm_msg *m)
{
    if (!m->in_unexp)
        return;
    if (m->qprev)
        m->qprev->qnext = m->qnext;
    else
        ctx->unexp_head = m->qnext;
    if (m->qnext)
        m->qnext->qprev = m->qprev;
    else
        ctx->unexp_tail = m->qprev;
    m->qprev = m->qnext = NULL;
    m->in_unexp = 0;
}

static void claimed_add(struct shm_ctx *ctx, struct shm_msg *m)
{
    m->qprev = NULL;
    m->qnext = ctx->claimed;
    if (ctx->claimed)
        ctx->claimed->qprev = m;
    ctx->claimed = m;
    m->claimed = 1;
}

static void claimed_remove(struct shm_ctx *ctx, struct shm_msg *m)
{
    if (!m->claimed)
        return;
    if (m->qprev)
        m->qprev->qnext = m->qnext;
    else
        ctx->claimed = m->qnext;
    if (m->qnext)
        m->qnext->qprev = m->qprev;
    m->qprev = m->qnext = NULL;
    m->claimed = 0;
}

static struct shm_msg *unexp_find(struct shm_ctx *ctx, int peer, uint64_t tag,
                                  uint64_t ignore)
{
    for (struct shm_msg *m = ctx->unexp_head; m; m = m->qnext)
        if ((peer == WEFT_TRANSPORT_ANY_PEER || m->peer == peer) &&
            weft__shm_tag_match(tag, ignore, m->tag))
            return m;
    return NULL;
}

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

/* A cleared message, from the spares when there is one. */
static struct shm_msg *msg_new(struct shm_ctx *ctx)
{
    struct shm_msg *m = ctx->spare_msgs;

    if (m) {
        ctx->spare_msgs = m->qnext;
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
    m->qnext = ctx->spare_msgs;
    ctx->spare_msgs = m;
    ctx->nspare_msgs++;
}

/* ------------------------------------------------------------ messages */

/* r receives m. What arrived already moves from ubuf to r's buffer; the
 * rest will be written there directly. Frees m when it was whole. */
static void msg_bind(struct shm_ctx *ctx, struct shm_msg *m, struct shm_req *r)
{
    r->src = m->peer;
    r->mtag = m->tag;
    r->total = m->total;
    if (m->got && r->len)
        memcpy(r->buf, m->ubuf, shm_min(m->got, r->len));
    msg_drop_ubuf(ctx, m);
    if (m->got == m->total) {
        weft__shm_req_complete(r, m->total > r->len ? WEFT_ERR_TRUNCATED : WEFT_SUCCESS);
        msg_free(ctx, m);
        return;
    }
    m->req = r;
    r->msg = m;
}

struct shm_req *weft__shm_posted_take(struct shm_ctx *ctx, int peer, uint64_t tag,
                                      size_t total)
{
    struct shm_req *r;

    for (r = ctx->post_head; r; r = r->qnext)
        if ((r->peer == WEFT_TRANSPORT_ANY_PEER || r->peer == peer) &&
            weft__shm_tag_match(r->tag, r->ignore, tag))
            break;
    if (!r)
        return NULL;
    posted_remove(ctx, r);
    r->src = peer;
    r->mtag = tag;
    r->total = total;
    return r;
}

struct shm_msg *weft__shm_msg_arrive(struct shm_ctx *ctx, int peer, uint64_t tag,
                                     size_t total)
{
    struct shm_msg *m = msg_new(ctx);
    struct shm_req *r;

    if (!m)
        return NULL;
    m->peer = peer;
    m->tag = tag;
    m->total = total;
    r = weft__shm_posted_take(ctx, peer, tag, total);
    if (r) {
        m->req = r;
        r->msg = m;
        return m;
    }
    if (total <= SHM_MSG_INLINE) {
        m->ubuf = m->inline_data;
        m->ucap = SHM_MSG_INLINE;
        m->ubuf_inline = 1;
    } else if (!(m->ubuf = ubuf_get(ctx, total, &m->ucap))) {
        msg_free(ctx, m);
        return NULL;
    }
    unexp_append(ctx, m);
    return m;
}

unsigned char *weft__shm_msg_dest(struct shm_msg *m, size_t *cap)
{
    if (m->req) {
        *cap = m->req->len > m->got ? m->req->len - m->got : 0;
        return *cap ? m->req->buf + m->got : NULL;
    }
    if (m->ubuf) {
        *cap = m->total - m->got;
        return m->ubuf + m->got;
    }
    *cap = 0;
    return NULL;
}

/* len more bytes of m arrived (and were copied to weft__shm_msg_dest).
 * m is freed when it is whole and has a receive, or nobody wants it. */
void weft__shm_msg_add(struct shm_ctx *ctx, struct shm_msg *m, size_t len)
{
    struct shm_req *r = m->req;

    m->got += len;
    if (m->got < m->total)
        return;
    if (r) {
        r->msg = NULL;
        weft__shm_req_complete(r, m->total > r->len ? WEFT_ERR_TRUNCATED : WEFT_SUCCESS);
        msg_free(ctx, m);
    } else if (m->orphan) {
        msg_free(ctx, m);
    }
    /* Otherwise whole and waiting, in the unexpected queue or claimed. */
}

/* m can never be whole: its receive fails with status, or a receive that
 * comes for it later does. */
void weft__shm_msg_fail(struct shm_ctx *ctx, struct shm_msg *m, weft_result_t status)
{
    if (m->req) {
        m->req->msg = NULL;
        weft__shm_req_complete(m->req, status);
        msg_free(ctx, m);
    } else if (m->claimed) {
        m->dead = 1;
    } else if (m->in_unexp) {
        unexp_remove(ctx, m);
        msg_free(ctx, m);
    } else {
        msg_free(ctx, m);
    }
}

/* Posted receives from peer (and from any peer when any_too) complete
 * with status. */
void weft__shm_posted_fail(struct shm_ctx *ctx, int peer, int any_too, weft_result_t status)
{
    for (struct shm_req *r = ctx->post_head, *next; r; r = next) {
        next = r->qnext;
        if (r->peer == peer || (any_too && r->peer == WEFT_TRANSPORT_ANY_PEER)) {
            posted_remove(ctx, r);
            weft__shm_req_complete(r, status);
        }
    }
}

/* Forgets every queued message from peer, except the one arriving now
 * (the caller fails that one through weft__shm_msg_fail). */
void weft__shm_unexp_drop(struct shm_ctx *ctx, int peer)
{
    for (struct shm_msg *m = ctx->unexp_head, *next; m; m = next) {
        next = m->qnext;
        if (m->peer == peer && m != ctx->peers[peer].cur) {
            unexp_remove(ctx, m);
            msg_free(ctx, m);
        }
    }
}

void weft__shm_msgs_free(struct shm_ctx *ctx)
{
    for (int i = 0; i < ctx->size; i++) {
        struct shm_msg *m = ctx->peers[i].cur;

        /* Queued ones go with their queues below. */
        if (m && !m->in_unexp && !m->claimed)
            msg_free(ctx, m);
        ctx->peers[i].cur = NULL;
    }
    while (ctx->unexp_head) {
        struct shm_msg *m = ctx->unexp_head;

        ctx->unexp_head = m->qnext;
        msg_free(ctx, m);
    }
    while (ctx->claimed) {
        struct shm_msg *m = ctx->claimed;

        ctx->claimed = m->qnext;
        msg_free(ctx, m);
    }
    while (ctx->nspare_ubufs > 0)
        free(ctx->spare_ubuf[--ctx->nspare_ubufs]);
    ctx->spare_ubytes = 0;
    while (ctx->spare_msgs) {
        struct shm_msg *m = ctx->spare_msgs;

        ctx->spare_msgs = m->qnext;
        free(m);
    }
    ctx->nspare_msgs = 0;
}

/* ------------------------------------------------------------ the ABI */

weft_result_t weft__shm_irecv(void *vctx, int peer, void *buf, size_t len, uint64_t tag,
                              uint64_t ignore, void *mh, void **out)
{
    struct shm_ctx *ctx = vctx;
    struct shm_msg *m;
    struct shm_req *r;

    if (!out || (!buf && len)) {
        ctx->core->set_error(SHM_NAME ": irecv from rank %d: %s is NULL", peer,
                             out ? "buf" : "req");
        return WEFT_ERR_INVALID_ARG;
    }
    if (peer != WEFT_TRANSPORT_ANY_PEER &&
        (peer < 0 || peer >= ctx->size || !ctx->peers[peer].known)) {
        ctx->core->set_error(SHM_NAME ": irecv from rank %d, which is not connected", peer);
        return WEFT_ERR_INVALID_ARG;
    }
    r = weft__shm_req_new(ctx, SHM_RECV, peer, buf, len, tag, ignore);
    if (!r)
        return WEFT_ERR_NO_MEMORY;
    *out = r;
    m = unexp_find(ctx, peer, tag, ignore);
    if (m) {
        unexp_remove(ctx, m);
        msg_bind(ctx, m, r);
    } else if (peer != WEFT_TRANSPORT_ANY_PEER &&
               (ctx->peers[peer].lost || ctx->peers[peer].departed)) {
        weft__shm_req_complete(r, WEFT_ERR_PEER_LOST);
    } else {
        posted_append(ctx, r);
    }
    return WEFT_SUCCESS;
}

weft_result_t weft__shm_improbe(void *vctx, int peer, uint64_t tag, uint64_t ignore,
                                int *found, void **msg, weft_transport_completion_t *info)
{
    struct shm_ctx *ctx = vctx;
    struct shm_msg *m;

    if (!found || !msg || !info) {
        ctx->core->set_error(SHM_NAME ": improbe: an output argument is NULL");
        return WEFT_ERR_INVALID_ARG;
    }
    if (peer != WEFT_TRANSPORT_ANY_PEER && (peer < 0 || peer >= ctx->size)) {
        ctx->core->set_error(SHM_NAME ": improbe from rank %d, not in 0..%d", peer,
                             ctx->size - 1);
        return WEFT_ERR_INVALID_ARG;
    }
    m = unexp_find(ctx, peer, tag, ignore);
    if (!m) {
        *found = 0;
        return WEFT_SUCCESS;
    }
    unexp_remove(ctx, m);
    claimed_add(ctx, m);
    info->status = WEFT_SUCCESS;
    info->peer = m->peer;
    info->tag = m->tag;
    info->len = m->total;
    *msg = m;
    *found = 1;
    return WEFT_SUCCESS;
}

weft_result_t weft__shm_imrecv(void *vctx, void *msg, void *buf, size_t len, void *mh,
                               void **out)
{
    struct shm_ctx *ctx = vctx;
    struct shm_msg *m = msg;
    struct shm_req *r;

    if (!m || !out || (!buf && len) || !m->claimed) {
        ctx->core->set_error(SHM_NAME ": imrecv: %s", !m || !m->claimed ?
                             "msg is not a message from improbe" : out ? "buf is NULL" :
                             "req is NULL");
        return WEFT_ERR_INVALID_ARG;
    }
    r = weft__shm_req_new(ctx, SHM_RECV, m->peer, buf, len, m->tag, 0);
    if (!r)
        return WEFT_ERR_NO_MEMORY;
    claimed_remove(ctx, m);
    *out = r;
    if (m->dead) {
        r->total = m->total;
        weft__shm_req_complete(r, WEFT_ERR_PEER_LOST);
        msg_free(ctx, m);
        return WEFT_SUCCESS;
    }
    msg_bind(ctx, m, r);
    return WEFT_SUCCESS;
}

/* A receive still waiting leaves the posted list; one whose message is
 * arriving lets the rest of it be discarded. Either way it is done now. */
void weft__shm_recv_cancel(struct shm_ctx *ctx, struct shm_req *r)
{
    if (r->queued) {
        posted_remove(ctx, r);
    } else if (r->msg) {
        r->msg->req = NULL;
        r->msg->orphan = 1;
        r->msg = NULL;
    }
    r->cancelled = 1;
    weft__shm_req_complete(r, WEFT_ERR_ABORTED);
}
