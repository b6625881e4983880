/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * tp_match.c: tag matching over the posted and unexpected queues, and what
 * becomes of a message once it is whole, failed, cancelled or dropped.
 * See tp_match.h for the rules.
 */
#include "config.h"

#include <stddef.h>

#include "plugins/common/tp.h"

/* ------------------------------------------------------------ queues */

/* The unexpected and the claimed queue: messages in order, by qprev and
 * qnext. */
static void msgq_append(struct tp_msg **head, struct tp_msg **tail, struct tp_msg *m)
{
    m->qnext = NULL;
    m->qprev = *tail;
    if (*tail)
        (*tail)->qnext = m;
    else
        *head = m;
    *tail = m;
}

static void msgq_remove(struct tp_msg **head, struct tp_msg **tail, struct tp_msg *m)
{
    if (m->qprev)
        m->qprev->qnext = m->qnext;
    else
        *head = m->qnext;
    if (m->qnext)
        m->qnext->qprev = m->qprev;
    else
        *tail = m->qprev;
    m->qprev = m->qnext = NULL;
}

/* Takes m off the queue it is in, if any. */
static void msg_unqueue(struct tp_ctx *tp, struct tp_msg *m)
{
    if (m->in_unexp)
        msgq_remove(&tp->unexp_head, &tp->unexp_tail, m);
    else if (m->claimed)
        msgq_remove(&tp->claimed, &tp->claimed_tail, m);
    m->in_unexp = m->claimed = 0;
}

/* The first queued message a receive from peer with tag and ignore
 * matches, left in the queue. */
static struct tp_msg *unexp_find(const struct tp_ctx *tp, int peer, uint64_t tag,
                                 uint64_t ignore)
{
    for (struct tp_msg *m = tp->unexp_head; m; m = m->qnext)
        if ((peer == WEFT_TRANSPORT_ANY_PEER || m->peer == peer) &&
            tp_tag_match(tag, ignore, m->tag))
            return m;
    return NULL;
}

/* ------------------------------------------------------------ binding */

static void recv_finish(struct tp_req *r, const struct tp_msg *m)
{
    r->msg = NULL;
    weft__tp_req_complete(r, m->total > r->len ? WEFT_ERR_TRUNCATED : WEFT_SUCCESS);
}

/* r receives m, which is in no queue. */
static void msg_bind(struct tp_ctx *tp, struct tp_msg *m, struct tp_req *r)
{
    r->src = m->peer;
    r->mtag = m->tag;
    r->total = m->total;
    m->req = r;
    r->msg = m;
    if (tp->ops->match->bind(tp, m, r)) {
        recv_finish(r, m);
        tp->ops->match->free(tp, m);
    }
}

struct tp_req *weft__tp_match_take(struct tp_ctx *tp, int peer, uint64_t tag, size_t total)
{
    struct tp_req *r;

    for (r = tp->posted.head; r; r = r->qnext)
        if ((r->peer == WEFT_TRANSPORT_ANY_PEER || r->peer == peer) &&
            tp_tag_match(r->tag, r->ignore, tag))
            break;
    if (!r)
        return NULL;
    weft__tp_queue_remove(&tp->posted, r);
    r->src = peer;
    r->mtag = tag;
    r->total = total;
    return r;
}

int weft__tp_match_arrive(struct tp_ctx *tp, struct tp_msg *m)
{
    struct tp_req *r = weft__tp_match_take(tp, m->peer, m->tag, m->total);

    if (r) {
        msg_bind(tp, m, r);
        return 0;
    }
    if (tp->ops->match->hold(tp, m) != 0)
        return -1;
    msgq_append(&tp->unexp_head, &tp->unexp_tail, m);
    m->in_unexp = 1;
    return 0;
}

void weft__tp_match_done(struct tp_ctx *tp, struct tp_msg *m)
{
    if (m->req) {
        recv_finish(m->req, m);
        tp->ops->match->free(tp, m);
    } else if (m->orphan) {
        tp->ops->match->free(tp, m);
    }
    /* Otherwise whole and waiting, unexpected or claimed. */
}

void weft__tp_match_fail(struct tp_ctx *tp, struct tp_msg *m, weft_result_t status)
{
    if (m->req) {
        m->req->msg = NULL;
        weft__tp_req_complete(m->req, status);
    } else if (m->claimed) {
        /* The core holds it from improbe: imrecv reports the loss. */
        m->dead = 1;
        return;
    } else {
        msg_unqueue(tp, m);
    }
    tp->ops->match->free(tp, m);
}

void weft__tp_match_fail_peer(struct tp_ctx *tp, int peer, int any_too, weft_result_t status)
{
    for (struct tp_req *r = tp->posted.head, *next; r; r = next) {
        next = r->qnext;
        if (r->peer == peer || (any_too && r->peer == WEFT_TRANSPORT_ANY_PEER)) {
            weft__tp_queue_remove(&tp->posted, r);
            weft__tp_req_complete(r, status);
        }
    }
}

void weft__tp_match_drop_peer(struct tp_ctx *tp, int peer)
{
    for (struct tp_msg *m = tp->unexp_head, *next; m; m = next) {
        next = m->qnext;
        if (m->peer == peer) {
            msg_unqueue(tp, m);
            tp->ops->match->free(tp, m);
        }
    }
}

/* A receive whose message is arriving lets the plugin discard the rest of
 * it: the sender sends it whole whatever happens here. */
void weft__tp_match_cancel(struct tp_ctx *tp, struct tp_req *r)
{
    if (r->queued) {
        weft__tp_queue_remove(&tp->posted, r);
    } else if (r->msg) {
        r->msg->req = NULL;
        r->msg->orphan = 1;
        r->msg = NULL;
    }
    r->cancelled = 1;
    weft__tp_req_complete(r, WEFT_ERR_ABORTED);
}

void weft__tp_match_fini(struct tp_ctx *tp)
{
    struct tp_msg *m;

    while ((m = tp->unexp_head ? tp->unexp_head : tp->claimed)) {
        msg_unqueue(tp, m);
        tp->ops->match->free(tp, m);
    }
}

/* ------------------------------------------------------------ receiving */

weft_result_t weft__tp_irecv(void *ctx, int peer, void *buf, size_t len, uint64_t tag,
                             uint64_t ignore, void *mhandle, void **out)
{
    struct tp_ctx *tp = ctx;
    int state = weft__tp_check_op(tp, "irecv from", TP_RECV, peer, buf, len, out);
    struct tp_msg *m;
    struct tp_req *r;

    if (state < 0)
        return WEFT_ERR_INVALID_ARG;
    r = weft__tp_req_new(tp, TP_RECV, peer, buf, len, tag, ignore);
    if (!r)
        return WEFT_ERR_NO_MEMORY;
    /* Before binding: a plugin's bind may copy into device memory. */
    r->mhandle = mhandle;
    *out = r;
    m = unexp_find(tp, peer, tag, ignore);
    if (m) {
        msg_unqueue(tp, m);
        msg_bind(tp, m, r);
    } else if (state == TP_PEER_GONE) {
        weft__tp_req_complete(r, WEFT_ERR_PEER_LOST);
    } else {
        weft__tp_queue_append(&tp->posted, r);
    }
    return WEFT_SUCCESS;
}

weft_result_t weft__tp_improbe(void *ctx, int peer, uint64_t tag, uint64_t ignore, int *found,
                               void **msg, weft_transport_completion_t *info)
{
    struct tp_ctx *tp = ctx;
    struct tp_msg *m;

    if (!found || !msg || !info) {
        weft__tp_error(tp, "improbe: an output argument is NULL");
        return WEFT_ERR_INVALID_ARG;
    }
    if (peer != WEFT_TRANSPORT_ANY_PEER && weft__tp_check_rank(tp, "improbe from", peer) != 0)
        return WEFT_ERR_INVALID_ARG;
    m = unexp_find(tp, peer, tag, ignore);
    if (!m) {
        *found = 0;
        return WEFT_SUCCESS;
    }
    msg_unqueue(tp, m);
    msgq_append(&tp->claimed, &tp->claimed_tail, m);
    m->claimed = 1;
    info->status = WEFT_SUCCESS;
    info->peer = m->peer;
    info->tag = m->tag;
    info->len = m->total;
    *msg = m;
    *found = 1;
    return WEFT_SUCCESS;
}

weft_result_t weft__tp_imrecv(void *ctx, void *msg, void *buf, size_t len, void *mhandle,
                              void **out)
{
    struct tp_ctx *tp = ctx;
    struct tp_msg *m = msg;
    struct tp_req *r;

    if (!m || !out || (!buf && len) || !m->claimed) {
        weft__tp_error(tp, "imrecv: %s", !m || !m->claimed ? "msg is not a message from improbe"
                                        : out ? "buf is NULL" : "req is NULL");
        return WEFT_ERR_INVALID_ARG;
    }
    r = weft__tp_req_new(tp, TP_RECV, m->peer, buf, len, m->tag, 0);
    if (!r)
        return WEFT_ERR_NO_MEMORY;
    r->mhandle = mhandle;
    msg_unqueue(tp, m);
    *out = r;
    if (m->dead) {
        r->total = m->total;
        weft__tp_req_complete(r, WEFT_ERR_PEER_LOST);
        tp->ops->match->free(tp, m);
        return WEFT_SUCCESS;
    }
    msg_bind(tp, m, r);
    return WEFT_SUCCESS;
}
