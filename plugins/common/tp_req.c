/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * tp_req.c: requests: the pool they come from and go back to, their
 * queues, completion, and the test and cancel entry points.
 */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "plugins/common/tp.h"

/* ------------------------------------------------------------ the pool */

struct tp_req *weft__tp_req_new(struct tp_ctx *tp, int kind, int peer, void *buf,
                                size_t len, uint64_t tag, uint64_t ignore)
{
    struct tp_req_pool *pool = &tp->pool;
    struct tp_req *r = pool->spare;

    if (r) {
        pool->spare = r->next;
        pool->nspare--;
        memset(r, 0, pool->size);
    } else if (!(r = calloc(1, pool->size))) {
        weft__tp_error(tp, "out of memory for a request");
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
    r->next = pool->live;
    if (pool->live)
        pool->live->prev = r;
    pool->live = r;
    return r;
}

void weft__tp_req_complete(struct tp_req *r, weft_result_t status)
{
    if (r->done)
        return;
    r->done = 1;
    r->status = r->cancelled && status == WEFT_SUCCESS ? WEFT_ERR_ABORTED : status;
}

void weft__tp_req_free(struct tp_ctx *tp, struct tp_req *r)
{
    struct tp_req_pool *pool = &tp->pool;

    if (r->prev)
        r->prev->next = r->next;
    else
        pool->live = r->next;
    if (r->next)
        r->next->prev = r->prev;
    if (pool->nspare >= TP_REQ_SPARE_MAX) {
        free(r);
        return;
    }
    r->next = pool->spare;
    pool->spare = r;
    pool->nspare++;
}

void weft__tp_req_pool_fini(struct tp_req_pool *pool)
{
    struct tp_req *lists[2] = { pool->live, pool->spare };

    for (int i = 0; i < 2; i++)
        while (lists[i]) {
            struct tp_req *r = lists[i];

            lists[i] = r->next;
            free(r);
        }
    pool->live = pool->spare = NULL;
    pool->nspare = 0;
}

/* ------------------------------------------------------------ queues */

void weft__tp_queue_append(struct tp_req_queue *q, struct tp_req *r)
{
    r->qnext = NULL;
    r->qprev = q->tail;
    if (q->tail)
        q->tail->qnext = r;
    else
        q->head = r;
    q->tail = r;
    r->queued = 1;
}

void weft__tp_queue_remove(struct tp_req_queue *q, struct tp_req *r)
{
    if (!r->queued)
        return;
    if (r->qprev)
        r->qprev->qnext = r->qnext;
    else
        q->head = r->qnext;
    if (r->qnext)
        r->qnext->qprev = r->qprev;
    else
        q->tail = r->qprev;
    r->qprev = r->qnext = NULL;
    r->queued = 0;
}

/* ------------------------------------------------------------ entry points */

struct tp_req *weft__tp_isend_new(struct tp_ctx *tp, int peer, const void *buf, size_t len,
                                  uint64_t tag, void **out, weft_result_t *rc)
{
    int state = weft__tp_check_op(tp, "isend to", TP_SEND, peer, buf, len, out);
    struct tp_req *r;

    *rc = WEFT_ERR_INVALID_ARG;
    if (state < 0)
        return NULL;
    /* The core's buffer is const; only receives write to buf. */
    r = weft__tp_req_new(tp, TP_SEND, peer, (void *)buf, len, tag, 0);
    if (!r) {
        *rc = WEFT_ERR_NO_MEMORY;
        return NULL;
    }
    *out = r;
    *rc = WEFT_SUCCESS;
    if (state == TP_PEER_GONE)
        weft__tp_req_complete(r, WEFT_ERR_PEER_LOST);
    return r;
}

weft_result_t weft__tp_test(void *ctx, void *req, int *done, weft_transport_completion_t *c)
{
    struct tp_ctx *tp = ctx;
    struct tp_req *r = req;

    if (!r || !done) {
        weft__tp_error(tp, "test: %s is NULL", r ? "done" : "req");
        return WEFT_ERR_INVALID_ARG;
    }
    if (!r->done) {
        *done = 0;
        return WEFT_SUCCESS;
    }
    *done = 1;
    if (c) {
        c->status = r->status;
        c->peer = r->src;
        c->tag = r->mtag;
        c->len = r->total;
    }
    weft__tp_req_free(tp, r);
    return WEFT_SUCCESS;
}

weft_result_t weft__tp_cancel(void *ctx, void *req)
{
    struct tp_ctx *tp = ctx;
    struct tp_req *r = req;

    if (!r) {
        weft__tp_error(tp, "cancel: req is NULL");
        return WEFT_ERR_INVALID_ARG;
    }
    if (r->done)
        return WEFT_SUCCESS;
    if (r->kind == TP_RECV)
        weft__tp_match_cancel(tp, r);
    else
        tp->ops->send_cancel(tp, r);
    return WEFT_SUCCESS;
}
