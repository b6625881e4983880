/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * async.c: asynchronous events. Each context's async_fd is an eventfd in
 * semaphore mode: one count per queued event, so poll() says POLLIN
 * exactly while ibv_get_async_event() has something to return, a blocking
 * read sleeps in the kernel, and O_NONBLOCK set by the caller makes it
 * fail with EAGAIN as the real descriptor does. Events raised by other
 * processes' NICs arrive through this process's segment and are turned
 * into events of the owning context by the NIC thread.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tests/swrdma/swrdma.h"

static bool is_qp_event(enum ibv_event_type t)
{
    switch (t) {
    case IBV_EVENT_QP_FATAL:
    case IBV_EVENT_QP_REQ_ERR:
    case IBV_EVENT_QP_ACCESS_ERR:
    case IBV_EVENT_COMM_EST:
    case IBV_EVENT_SQ_DRAINED:
    case IBV_EVENT_PATH_MIG:
    case IBV_EVENT_PATH_MIG_ERR:
    case IBV_EVENT_QP_LAST_WQE_REACHED:
        return true;
    default:
        return false;
    }
}

void sw_async_push(struct sw_context *ctx, const struct ibv_async_event *ev)
{
    struct sw_event_node *n = calloc(1, sizeof(*n));
    if (!n)
        return;
    n->ev = *ev;
    pthread_mutex_lock(&ctx->lock);
    if (ctx->ev_tail)
        ctx->ev_tail->next = n;
    else
        ctx->ev_head = n;
    ctx->ev_tail = n;
    pthread_mutex_unlock(&ctx->lock);
    uint64_t one = 1;
    if (write(ctx->vctx.context.async_fd, &one, sizeof(one)) < 0)
        sw_log("cannot signal an async event: %m");
}

/* Takes one count from an eventfd without waiting, whatever O_NONBLOCK
 * the caller set on it; false when there was none to take. */
bool sw_eventfd_take(int fd)
{
    int fl = fcntl(fd, F_GETFL);
    if (fl < 0)
        return false;
    if (!(fl & O_NONBLOCK))
        fcntl(fd, F_SETFL, fl | O_NONBLOCK);
    uint64_t v;
    bool took = read(fd, &v, sizeof(v)) == sizeof(v);
    if (!(fl & O_NONBLOCK))
        fcntl(fd, F_SETFL, fl);
    return took;
}

/* Drops the events of QP or CQ that are queued and not yet taken, as
 * the kernel does when they are destroyed: each with its eventfd count,
 * so poll() stops saying there is one. Where a reader already took the
 * count, the event stays marked dead and that reader passes over it. */
void sw_async_forget(struct sw_context *ctx, struct ibv_qp *qp, struct ibv_cq *cq)
{
    pthread_mutex_lock(&ctx->lock);
    struct sw_event_node **pp = &ctx->ev_head, *prev = NULL;
    while (*pp) {
        struct sw_event_node *n = *pp;
        bool mine = (qp && is_qp_event(n->ev.event_type) && n->ev.element.qp == qp) ||
                    (cq && n->ev.event_type == IBV_EVENT_CQ_ERR && n->ev.element.cq == cq);
        if (mine && sw_eventfd_take(ctx->vctx.context.async_fd)) {
            *pp = n->next;
            if (ctx->ev_tail == n)
                ctx->ev_tail = prev;
            free(n);
            continue;
        }
        if (mine)
            n->dead = true;
        prev = n;
        pp = &n->next;
    }
    pthread_mutex_unlock(&ctx->lock);
}

/* An event request from a segment, on the NIC thread with sw.nic_lock. */
void sw_async_deliver(const struct sw_ev_req *req)
{
    struct ibv_async_event ev;
    memset(&ev, 0, sizeof(ev));
    ev.event_type = req->type;
    struct sw_context *ctx = NULL;
    pthread_mutex_lock(&sw.obj_lock);
    if (req->kind == SW_EV_QP && req->slot < sw.seg->max_qp) {
        struct sw_qp *qp = sw.qps[req->slot];
        if (qp && qp->gen == req->gen && !qp->dying) {
            ev.element.qp = &qp->qp;
            ctx = sw_ctx(qp->qp.context);
        }
    } else if (req->kind == SW_EV_CQ && req->slot < sw.seg->max_cq) {
        struct sw_cq *cq = sw.cqs[req->slot];
        if (cq && cq->gen == req->gen) {
            ev.element.cq = &cq->cq;
            ctx = sw_ctx(cq->cq.context);
        }
    }
    pthread_mutex_unlock(&sw.obj_lock);
    if (ctx)
        sw_async_push(ctx, &ev);
}

/* Port state changes, seen by each context once. With sw.nic_lock. */
void sw_async_port_watch(void)
{
    const struct sw_reg_host *h = &sw.reg->host[sw.host];
    pthread_mutex_lock(&sw.lock);
    for (struct sw_context *ctx = sw.contexts; ctx; ctx = ctx->next) {
        for (uint32_t p = 0; p < h->conf.nports; p++) {
            uint32_t gen = atomic_load(&h->port[p].gen);
            if (gen == ctx->port_gen_seen[p])
                continue;
            ctx->port_gen_seen[p] = gen;
            uint32_t st = atomic_load(&h->port[p].state);
            if (st == ctx->port_state_seen[p])
                continue;
            ctx->port_state_seen[p] = st;
            struct ibv_async_event ev;
            memset(&ev, 0, sizeof(ev));
            ev.element.port_num = (int)p + 1;
            ev.event_type = st == IBV_PORT_ACTIVE ? IBV_EVENT_PORT_ACTIVE : IBV_EVENT_PORT_ERR;
            sw_async_push(ctx, &ev);
        }
    }
    pthread_mutex_unlock(&sw.lock);
}

/* What ibv_destroy_qp() and ibv_destroy_cq() wait to see acknowledged. */
static void count_reported(const struct ibv_async_event *ev)
{
    if (is_qp_event(ev->event_type)) {
        struct sw_qp *qp = SW_CONTAINER(ev->element.qp, struct sw_qp, qp);
        pthread_mutex_lock(&qp->qp.mutex);
        qp->events_reported++;
        pthread_mutex_unlock(&qp->qp.mutex);
    } else if (ev->event_type == IBV_EVENT_CQ_ERR) {
        struct sw_cq *cq = SW_CONTAINER(ev->element.cq, struct sw_cq, cq);
        pthread_mutex_lock(&cq->cq.mutex);
        cq->async_reported++;
        pthread_mutex_unlock(&cq->cq.mutex);
    }
}

SW_DEFAULT(ibv_get_async_event) int sw_get_async_event(struct ibv_context *c,
                                                       struct ibv_async_event *event);
int sw_get_async_event(struct ibv_context *c, struct ibv_async_event *event)
{
    if (!sw_ctx_ok(c) || !event) {
        errno = EINVAL;
        return -1;
    }
    struct sw_context *ctx = sw_ctx(c);
    for (;;) {
        uint64_t v;
        if (read(c->async_fd, &v, sizeof(v)) != sizeof(v))
            return -1;
        pthread_mutex_lock(&ctx->lock);
        struct sw_event_node *n = ctx->ev_head;
        if (n) {
            ctx->ev_head = n->next;
            if (!ctx->ev_head)
                ctx->ev_tail = NULL;
            if (!n->dead)
                ctx->async_unacked++;
        }
        pthread_mutex_unlock(&ctx->lock);
        if (!n)
            continue;
        if (n->dead) {
            free(n);
            continue;       /* its object was destroyed: there was no event */
        }
        *event = n->ev;
        free(n);
        count_reported(event);
        return 0;
    }
}

SW_DEFAULT(ibv_ack_async_event) void sw_ack_async_event(struct ibv_async_event *event);
void sw_ack_async_event(struct ibv_async_event *event)
{
    struct ibv_context *c = NULL;
    if (event->event_type == IBV_EVENT_CQ_ERR) {
        struct ibv_cq *cq = event->element.cq;
        c = cq->context;
        pthread_mutex_lock(&cq->mutex);
        cq->async_events_completed++;
        pthread_cond_signal(&cq->cond);
        pthread_mutex_unlock(&cq->mutex);
    } else if (is_qp_event(event->event_type)) {
        struct ibv_qp *qp = event->element.qp;
        c = qp->context;
        pthread_mutex_lock(&qp->mutex);
        qp->events_completed++;
        pthread_cond_signal(&qp->cond);
        pthread_mutex_unlock(&qp->mutex);
    }
    /* port and device events carry no context: count them on every one */
    pthread_mutex_lock(&sw.lock);
    for (struct sw_context *ctx = sw.contexts; ctx; ctx = ctx->next) {
        if (c && &ctx->vctx.context != c)
            continue;
        pthread_mutex_lock(&ctx->lock);
        if (ctx->async_unacked)
            ctx->async_unacked--;
        pthread_mutex_unlock(&ctx->lock);
        break;
    }
    pthread_mutex_unlock(&sw.lock);
}
