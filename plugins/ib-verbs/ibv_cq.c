/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * ibv_cq.c: progress and waiting. progress() polls each device's
 * completion queue in batches and hands every completion to the code of
 * what its wr_id points to; error completions are decoded (ibv_wc.c)
 * and fail the pair. Asynchronous events (ports going down, GIDs
 * changing, QPs failing) are read from the devices' async descriptors
 * when they are readable: no thread waits on them.
 *
 * Waiting: get_wait_fd hands the core one epoll descriptor holding each
 * device's completion channel and async descriptor, a timer for set-up
 * retries, and an event descriptor made readable when progress still
 * has work that no completion will announce. Before the core sleeps, the
 * completion queues are armed and then polled once more: a completion
 * that came between the last poll and the arming would otherwise raise
 * no event.
 */
#include "config.h"

#include <arpa/inet.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/timerfd.h>
#include <unistd.h>

#include "plugins/ib-verbs/ibv.h"

#define WIB_POLL_BATCH 32
/* Completions one progress() call takes from a device, so that a flood
 * on one does not starve the rest. */
#define WIB_POLL_BUDGET 512

/* ------------------------------------------------------------ completions */

static void wc_failed(struct wib_ctx *ctx, struct wib_qpx *q, const struct ibv_wc *wc)
{
    char line[512];

    if (q->dead || q->peer < 0)
        return;
    weft__ibv_wc_explain(wc->status, wc->opcode, wc->vendor_err, wc->qp_num, q->peer, line,
                         sizeof(line));
    weft__ibv_conn_fail(ctx, q->peer, WEFT_ERR_PEER_LOST, line);
}

static void dispatch(struct wib_ctx *ctx, const struct ibv_wc *wc)
{
    const struct wib_wrid *id = (const struct wib_wrid *)(uintptr_t)wc->wr_id;
    struct wib_qpx *q = id->q;
    int ok = wc->status == IBV_WC_SUCCESS && !q->dead;

    switch (id->type) {
    case WIB_WRID_SQ:
        if (!ok) {
            /* Retire first: the pair's failure then frees the owners. */
            weft__ibv_sq_retire(ctx, q, 1);
            wc_failed(ctx, q, wc);
            return;
        }
        weft__ibv_sq_retire(ctx, q, 0);
        return;
    case WIB_WRID_CTL_RX:
        if (!ok) {
            wc_failed(ctx, q, wc);
            return;
        }
        weft__ibv_ctl_arrived(ctx, &ctx->peers[q->peer], id->index, wc->byte_len);
        return;
    case WIB_WRID_LANE_RX: {
        uint32_t imm;

        if (!ok) {
            wc_failed(ctx, q, wc);
            return;
        }
        if (weft__ibv_post_lane_rx(ctx, q, 1) != 0) {
            weft__ibv_conn_fail(ctx, q->peer, WEFT_ERR_PEER_LOST,
                                "cannot post a receive again");
            return;
        }
        if (!(wc->wc_flags & IBV_WC_WITH_IMM)) {
            weft__ibv_conn_fail(ctx, q->peer, WEFT_ERR_PEER_LOST,
                                "it sent on a data QP without an immediate");
            return;
        }
        imm = ntohl(wc->imm_data);
        switch (WIB_IMM_KIND(imm)) {
        case WIB_IMM_CTS:
            weft__ibv_cts_arrived(ctx, q->peer, (int)WIB_IMM_SLOT(imm));
            break;
        case WIB_IMM_DATA:
            weft__ibv_data_arrived(ctx, q->peer, (int)WIB_IMM_SLOT(imm));
            break;
        case WIB_IMM_CREDIT:
            weft__ibv_credit_arrived(ctx, q->peer, WIB_IMM_SLOT(imm) == WIB_CREDIT_BYE);
            break;
        default:
            weft__ibv_conn_fail(ctx, q->peer, WEFT_ERR_PEER_LOST,
                                "it sent an immediate of unknown kind");
            break;
        }
        return;
    }
    case WIB_WRID_UD_RX:
    case WIB_WRID_UD_SQ:
        weft__ibv_ud_recv(ctx, wc);
        return;
    default:
        TP_WARN(ctx, "a completion of unknown origin (wr_id 0x%llx) ignored",
                (unsigned long long)wc->wr_id);
        return;
    }
}

/* Polls device d: the number of completions taken. */
static int poll_dev(struct wib_ctx *ctx, struct wib_dev *d)
{
    struct ibv_wc wc[WIB_POLL_BATCH];
    int total = 0, n;

    for (int c = 0; c < d->ncqs; c++) {
        int taken = 0;

        do {
            n = ibv_poll_cq(d->cqs[c].cq, WIB_POLL_BATCH, wc);
            if (n < 0) {
                TP_WARN(ctx, "%s: polling its completion queue failed (%d): the device is "
                        "in error", d->name, n);
                break;
            }
            for (int i = 0; i < n; i++)
                dispatch(ctx, &wc[i]);
            taken += n;
            ctx->st.cqes += (unsigned)n;
        } while (n == WIB_POLL_BATCH && taken < WIB_POLL_BUDGET);
        total += taken;
    }
    return total;
}

/* ------------------------------------------------------------ asynchronous events */

static struct wib_qpx *qpx_of(struct wib_ctx *ctx, const struct ibv_qp *qp)
{
    for (struct wib_peer *p = ctx->active; p; p = p->anext) {
        if (p->ctl.qp == qp)
            return &p->ctl;
        for (int l = 0; l < p->nlanes; l++)
            if (p->lane[l].qp == qp)
                return &p->lane[l];
    }
    return NULL;
}

/* A GID of a port changed: the one chosen is read again, for the pairs
 * set up from now on. */
static void gid_changed(struct wib_ctx *ctx, struct wib_dev *d, int port)
{
    for (int r = 0; r < ctx->nrails; r++) {
        struct wib_port_info *pi = ctx->rail[r];
        struct wib_gid_cand *c;
        struct wib_gid_pick pick;
        int n;

        if (&ctx->devs[pi->devi] != d || pi->port != port ||
            pi->link_layer != IBV_LINK_LAYER_ETHERNET)
            continue;
        c = calloc(WIB_GIDS_MAX, sizeof(*c));
        if (!c)
            return;
        n = weft__ibv_gid_read(&ctx->fns, d->vctx, d->sysfs, (uint8_t)port, pi->gid_tbl_len, c,
                               WIB_GIDS_MAX);
        if (weft__ibv_gid_choose(c, n, &ctx->boot, ctx->prm.gid_index, &pick) == 0 &&
            (pick.index != pi->gid.index || memcmp(pick.raw, pi->gid.raw, 16))) {
            TP_WARN(ctx, "%s:%d: GID now %s (was index %d): pairs set up from now on use it",
                    d->name, port, pick.why, pi->gid.index);
            pi->gid = pick;
            ctx->self.rail[r].gid_index = (uint8_t)pick.index;
            memcpy(ctx->self.rail[r].gid, pick.raw, 16);
        } else if (pick.index < 0) {
            TP_WARN(ctx, "%s:%d: no RoCE GID any more (%s): new pairs over it will fail",
                    d->name, port, pick.why);
        }
        free(c);
    }
}

static void async_events(struct wib_ctx *ctx, struct wib_dev *d)
{
    struct ibv_async_event ev;

    while (ctx->fns.get_async_event(d->vctx, &ev) == 0) {
        struct wib_qpx *q;

        switch (ev.event_type) {
        case IBV_EVENT_PORT_ERR:
            TP_WARN(ctx, "%s:%d went down: pairs over it fail once their operations time "
                    "out", d->name, ev.element.port_num);
            break;
        case IBV_EVENT_PORT_ACTIVE:
            TP_INFO(ctx, "%s:%d is active again", d->name, ev.element.port_num);
            break;
        case IBV_EVENT_GID_CHANGE:
            gid_changed(ctx, d, ev.element.port_num);
            break;
        case IBV_EVENT_QP_FATAL:
        case IBV_EVENT_QP_REQ_ERR:
        case IBV_EVENT_QP_ACCESS_ERR:
            q = qpx_of(ctx, ev.element.qp);
            if (q && q->peer >= 0) {
                char why[160];

                snprintf(why, sizeof(why), "its QP 0x%x failed (%s)", ev.element.qp->qp_num,
                         ev.event_type == IBV_EVENT_QP_FATAL ? "fatal error" :
                         ev.event_type == IBV_EVENT_QP_REQ_ERR ? "invalid request"
                                                               : "access violation");
                weft__ibv_conn_fail(ctx, q->peer, WEFT_ERR_PEER_LOST, why);
            }
            break;
        case IBV_EVENT_CQ_ERR:
        case IBV_EVENT_DEVICE_FATAL:
            TP_WARN(ctx, "%s: %s: every pair over it fails", d->name,
                    ev.event_type == IBV_EVENT_CQ_ERR ? "its completion queue overflowed"
                                                      : "fatal device error (see dmesg)");
            for (struct wib_peer *p = ctx->active; p; p = p->anext)
                if (p->state != WIB_P_IDLE && p->state != WIB_P_FAILED)
                    weft__ibv_conn_fail(ctx, (int)(p - ctx->peers), WEFT_ERR_PEER_LOST,
                                        "its device failed");
            break;
        default:
            break;
        }
        ctx->fns.ack_async_event(&ev);
    }
}

/* ------------------------------------------------------------ progress */

/* The events of armed CQs (the channel is non-blocking): each is
 * acknowledged on its own CQ (its context is its wib_cq), which is then
 * disarmed, to be armed again before the rank sleeps. */
static void take_cq_events(struct wib_ctx *ctx, struct wib_dev *d)
{
    struct ibv_cq *cq;
    void *cq_ctx;
    int armed = 0;

    /* No CQ armed, no event: spare the read. */
    for (int c = 0; c < d->ncqs; c++)
        armed |= d->cqs[c].armed;
    while (armed && ctx->fns.get_cq_event(d->ch, &cq, &cq_ctx) == 0) {
        struct wib_cq *q = cq_ctx;

        ctx->fns.ack_cq_events(cq, 1);
        if (q)
            q->armed = 0;
    }
}

weft_result_t weft__ibv_progress(void *vctx)
{
    struct wib_ctx *ctx = vctx;

    if (!ctx)
        return WEFT_ERR_INVALID_ARG;
    ctx->ticks++;
    for (int i = 0; i < ctx->ndevs; i++) {
        struct wib_dev *d = &ctx->devs[i];

        if (!d->used)
            continue;
        take_cq_events(ctx, d);
        poll_dev(ctx, d);
        /* Asynchronous events are rare: looked for now and then. */
        if (ctx->ticks % 256 == 0)
            async_events(ctx, d);
    }
    if (ctx->ticks % 16 == 0) {
        weft__ibv_conn_timers(ctx);
        weft__ibv_keepalive(ctx);
    }
    for (struct wib_peer *p = ctx->active; p; p = p->anext)
        if (p->state == WIB_P_UP && (p->sq.head || p->sw_head || p->rv_head))
            weft__ibv_pump(ctx, p);
    if (ctx->flush_head)
        weft__ibv_flush_retry(ctx);
    return WEFT_SUCCESS;
}

void weft__ibv_busy(struct wib_ctx *ctx)
{
    uint64_t one = 1;

    if (!ctx->busy && write(ctx->busy_fd, &one, sizeof(one)) == (ssize_t)sizeof(one))
        ctx->busy = 1;
}

static void idle(struct wib_ctx *ctx)
{
    uint64_t v;

    if (ctx->busy && read(ctx->busy_fd, &v, sizeof(v)) == (ssize_t)sizeof(v))
        ctx->busy = 0;
}

/* Arms the timer for the earliest set-up retry or keepalive probe, or
 * disarms it. */
static void arm_timer(struct wib_ctx *ctx)
{
    struct itimerspec its;
    int64_t next = 0, now = weft__ibv_now_ms();

    int64_t probe = weft__ibv_keepalive_due(ctx);

    for (struct wib_peer *p = ctx->active; p; p = p->anext)
        if ((p->state == WIB_P_WAIT_INFO || p->state == WIB_P_WAIT_READY) &&
            (!next || p->next_try_ms < next))
            next = p->next_try_ms;
    /* A rank asleep waiting for a peer wakes to probe it. */
    if (probe && (!next || probe < next))
        next = probe;
    memset(&its, 0, sizeof(its));
    if (next) {
        int64_t in = next > now ? next - now : 1;

        its.it_value.tv_sec = in / 1000;
        its.it_value.tv_nsec = (long)(in % 1000) * 1000000;
    }
    timerfd_settime(ctx->timer_fd, 0, &its, NULL);
}

weft_result_t weft__ibv_get_wait_fd(void *vctx, int *fd)
{
    struct wib_ctx *ctx = vctx;
    int work = 0;
    uint64_t expirations;

    if (!fd)
        return WEFT_ERR_INVALID_ARG;
    /* Drain the timer: it is armed again below when still needed. */
    if (read(ctx->timer_fd, &expirations, sizeof(expirations)) < 0 && errno != EAGAIN)
        expirations = 0;
    weft__ibv_conn_timers(ctx);
    weft__ibv_keepalive(ctx);
    for (int i = 0; i < ctx->ndevs; i++) {
        struct wib_dev *d = &ctx->devs[i];

        if (!d->used)
            continue;
        async_events(ctx, d);
        for (int c = 0; c < d->ncqs; c++)
            if (!d->cqs[c].armed && ibv_req_notify_cq(d->cqs[c].cq, 0) == 0)
                d->cqs[c].armed = 1;
        work += poll_dev(ctx, d);
    }
    /* Flushes waiting for room are retried by progress, not woken. */
    if (work || ctx->flush_head)
        weft__ibv_busy(ctx);
    else
        idle(ctx);
    arm_timer(ctx);
    *fd = ctx->epfd;
    return WEFT_SUCCESS;
}
