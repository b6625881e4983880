/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * sockets_match.c: tag matching. Receives wait in the posted list in post
 * order, messages without a receive in the unexpected queue in arrival
 * order; a new message takes the first posted receive it matches, a new
 * receive the first queued message. Starts arrive in send order per peer
 * (stream 0), which gives per-peer, per-tag ordering.
 */
#include "config.h"

#include <string.h>

#include "plugins/sockets/sockets.h"

int weft__sock_tag_match(uint64_t want, uint64_t ignore, uint64_t got)
{
    return (want & ~ignore) == (got & ~ignore);
}

static int recv_matches(const struct sock_req *r, const struct sock_msg *m)
{
    return (r->peer == WEFT_TRANSPORT_ANY_PEER || r->peer == m->peer) &&
           weft__sock_tag_match(r->tag, r->ignore, m->tag);
}

/* ------------------------------------------------------------ lists */

static void posted_append(struct sock_ctx *ctx, struct sock_req *r)
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

static void posted_remove(struct sock_ctx *ctx, struct sock_req *r)
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

static void unexp_append(struct sock_ctx *ctx, struct sock_msg *m)
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

void weft__sock_unexp_remove(struct sock_ctx *ctx, struct sock_msg *m)
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

static void claimed_add(struct sock_ctx *ctx, struct sock_msg *m)
{
    m->qprev = NULL;
    m->qnext = ctx->claimed;
    if (ctx->claimed)
        ctx->claimed->qprev = m;
    ctx->claimed = m;
    m->claimed = 1;
}

void weft__sock_claimed_remove(struct sock_ctx *ctx, struct sock_msg *m)
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

static struct sock_msg *unexp_find(struct sock_ctx *ctx, int peer, uint64_t tag,
                                   uint64_t ignore)
{
    for (struct sock_msg *m = ctx->unexp_head; m; m = m->qnext)
        if ((peer == WEFT_TRANSPORT_ANY_PEER || m->peer == peer) &&
            weft__sock_tag_match(tag, ignore, m->tag))
            return m;
    return NULL;
}

/* ------------------------------------------------------------ arrivals */

/* m's start frame arrived: bind it to the first matching posted receive,
 * or queue it. -1 when it cannot be buffered. */
int weft__sock_msg_started(struct sock_ctx *ctx, struct sock_msg *m)
{
    struct sock_req *r;

    for (r = ctx->post_head; r; r = r->qnext)
        if (recv_matches(r, m))
            break;
    if (r) {
        posted_remove(ctx, r);
        weft__sock_msg_bind(ctx, r, m);
        return 0;
    }
    if (weft__sock_msg_buffer(m) != 0)
        return -1;
    unexp_append(ctx, m);
    return 0;
}

/* Posted receives from peer (and from any peer when any_too) complete
 * with status. */
void weft__sock_posted_fail(struct sock_ctx *ctx, int peer, int any_too, weft_result_t status)
{
    for (struct sock_req *r = ctx->post_head, *next; r; r = next) {
        next = r->qnext;
        if (r->peer == peer || (any_too && r->peer == WEFT_TRANSPORT_ANY_PEER)) {
            posted_remove(ctx, r);
            weft__sock_req_complete(r, status);
        }
    }
}

/* Forgets every queued message from peer, whole or not. */
void weft__sock_unexp_drop(struct sock_ctx *ctx, int peer)
{
    for (struct sock_msg *m = ctx->unexp_head, *next; m; m = next) {
        next = m->qnext;
        if (m->peer != peer)
            continue;
        weft__sock_unexp_remove(ctx, m);
        weft__sock_msg_flight_remove(ctx, m);
        weft__sock_msg_free(m);
    }
}

/* ------------------------------------------------------------ the ABI */

/* A peer that can send nothing more: crashed, or left and every message
 * it started to this rank has started here. */
static int peer_mute(const struct sock_ctx *ctx, int peer)
{
    const struct sock_peer *p = &ctx->peers[peer];

    return p->lost || (p->departed && p->next_start_id >= p->bye_msgs);
}

weft_result_t weft__sock_irecv(void *vctx, int peer, void *buf, size_t len, uint64_t tag,
                               uint64_t ignore, void *mh, void **out)
{
    struct sock_ctx *ctx = vctx;
    struct sock_msg *m;
    struct sock_req *r;

    if (!out || (!buf && len)) {
        ctx->core->set_error(SOCK_NAME ": irecv from rank %d: %s is NULL", peer,
                             out ? "buf" : "req");
        return WEFT_ERR_INVALID_ARG;
    }
    if (peer != WEFT_TRANSPORT_ANY_PEER && (peer < 0 || peer >= ctx->size)) {
        ctx->core->set_error(SOCK_NAME ": irecv from rank %d, not in 0..%d", peer,
                             ctx->size - 1);
        return WEFT_ERR_INVALID_ARG;
    }
    if (peer != WEFT_TRANSPORT_ANY_PEER && !ctx->peers[peer].known) {
        ctx->core->set_error(SOCK_NAME ": irecv from rank %d, which is not connected", peer);
        return WEFT_ERR_INVALID_ARG;
    }
    r = weft__sock_req_new(ctx, SOCK_RECV, peer, buf, len, tag, ignore);
    if (!r)
        return WEFT_ERR_NO_MEMORY;
    *out = r;
    m = unexp_find(ctx, peer, tag, ignore);
    if (m) {
        weft__sock_unexp_remove(ctx, m);
        weft__sock_msg_bind(ctx, r, m);
    } else if (peer != WEFT_TRANSPORT_ANY_PEER && peer_mute(ctx, peer)) {
        weft__sock_req_complete(r, WEFT_ERR_PEER_LOST);
    } else {
        posted_append(ctx, r);
    }
    return WEFT_SUCCESS;
}

weft_result_t weft__sock_improbe(void *vctx, int peer, uint64_t tag, uint64_t ignore,
                                 int *found, void **msg, weft_transport_completion_t *info)
{
    struct sock_ctx *ctx = vctx;
    struct sock_msg *m;

    if (!found || !msg || !info) {
        ctx->core->set_error(SOCK_NAME ": improbe: an output argument is NULL");
        return WEFT_ERR_INVALID_ARG;
    }
    if (peer != WEFT_TRANSPORT_ANY_PEER && (peer < 0 || peer >= ctx->size)) {
        ctx->core->set_error(SOCK_NAME ": improbe from rank %d, not in 0..%d", peer,
                             ctx->size - 1);
        return WEFT_ERR_INVALID_ARG;
    }
    m = unexp_find(ctx, peer, tag, ignore);
    if (!m) {
        *found = 0;
        return WEFT_SUCCESS;
    }
    weft__sock_unexp_remove(ctx, m);
    claimed_add(ctx, m);
    info->status = WEFT_SUCCESS;
    info->peer = m->peer;
    info->tag = m->tag;
    info->len = m->total;
    *msg = m;
    *found = 1;
    return WEFT_SUCCESS;
}

weft_result_t weft__sock_imrecv(void *vctx, void *msg, void *buf, size_t len, void *mh,
                                void **out)
{
    struct sock_ctx *ctx = vctx;
    struct sock_msg *m = msg;
    struct sock_req *r;

    if (!m || !out || (!buf && len) || !m->claimed) {
        ctx->core->set_error(SOCK_NAME ": imrecv: %s", !m || !m->claimed ?
                             "msg is not a message from improbe" : out ? "buf is NULL" :
                             "req is NULL");
        return WEFT_ERR_INVALID_ARG;
    }
    r = weft__sock_req_new(ctx, SOCK_RECV, m->peer, buf, len, m->tag, 0);
    if (!r)
        return WEFT_ERR_NO_MEMORY;
    weft__sock_claimed_remove(ctx, m);
    *out = r;
    if (m->dead) {
        r->total = m->total;
        weft__sock_req_complete(r, WEFT_ERR_PEER_LOST);
        weft__sock_msg_free(m);
        return WEFT_SUCCESS;
    }
    weft__sock_msg_bind(ctx, r, m);
    return WEFT_SUCCESS;
}

/* A receive still waiting leaves the posted list; one whose message is
 * arriving lets the rest of it go to the discard buffer. Either way it is
 * done now. */
void weft__sock_recv_cancel(struct sock_ctx *ctx, struct sock_req *r)
{
    if (r->queued) {
        posted_remove(ctx, r);
    } else if (r->msg) {
        r->msg->req = NULL;
        r->msg->orphan = 1;
        r->msg = NULL;
    }
    r->cancelled = 1;
    weft__sock_req_complete(r, WEFT_ERR_ABORTED);
}
