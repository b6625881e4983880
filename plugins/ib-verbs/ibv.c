/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * ibv.c: the ib-verbs transport's ABI table: InfiniBand and RoCE v2
 * through reliable-connected QPs of rdma-core's libibverbs, opened at
 * run time. Set-up, tear-down and the small entry points live here; see
 * ibv.h for the design and the other ibv_*.c files for the work.
 *
 * init refuses (WEFT_ERR_UNSUPPORTED, with the reason) where libibverbs
 * cannot be opened, finds no device, or no port is usable, and where
 * RLIMIT_MEMLOCK is below what the transport pins at least: the job then
 * runs on the other transports. Parameters: ibv_param.c and
 * weft-ib-verbs(7).
 */
#include "config.h"

#include <errno.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/timerfd.h>
#include <unistd.h>

#include "plugins/ib-verbs/ibv.h"

/* How long finalize waits for its goodbyes to leave, beyond the retries. */
#define WIB_BYE_WAIT_MS 200

/* ------------------------------------------------------------ set-up */

static int peer_state(struct tp_ctx *tp, int peer, int kind)
{
    const struct wib_peer *p = &((struct wib_ctx *)tp)->peers[peer];

    if (!p->known)
        return TP_PEER_UNKNOWN;
    return p->lost || p->departed || p->state == WIB_P_FAILED ? TP_PEER_GONE : TP_PEER_UP;
}

static const struct tp_ops wib_tp_ops = {
    .req_size = sizeof(struct wib_req),
    .peer = peer_state,
    .send_cancel = weft__ibv_send_cancel,
    .match = &weft__ibv_msg_ops,
};

/* Our address: each rail as the peers' QPs will see it. */
static void describe_self(struct wib_ctx *ctx)
{
    double gbps = 0;

    ctx->self.magic = WIB_ADDR_MAGIC;
    ctx->self.version = WIB_WIRE_VERSION;
    ctx->self.nrails = (uint8_t)ctx->nrails;
    ctx->self.qps = (uint8_t)ctx->prm.qps;
    ctx->self.nonce = weft__ibv_psn() ^ ((uint32_t)getpid() << 8);
    for (int r = 0; r < ctx->nrails; r++) {
        const struct wib_port_info *p = ctx->rail[r];
        struct wib_wire_rail *w = &ctx->self.rail[r];
        union ibv_gid g;

        w->link_layer = (uint8_t)p->link_layer;
        w->mtu = (uint8_t)p->mtu;
        w->port = (uint8_t)p->port;
        w->lid = p->lid;
        if (p->gid.index >= 0) {
            w->gid_index = (uint8_t)p->gid.index;
            memcpy(w->gid, p->gid.raw, 16);
        } else if (ctx->fns.query_gid(ctx->devs[p->devi].vctx, (uint8_t)p->port, 0, &g) == 0) {
            /* InfiniBand: the port GID, whose prefix says the subnet. */
            memcpy(w->gid, g.raw, 16);
        }
        gbps += p->gbps;
    }
    weft__tp_describe(&ctx->tp, WEFT_TRANSPORT_CAP_PUT | WEFT_TRANSPORT_CAP_MPROBE |
                      WEFT_TRANSPORT_CAP_SELF, 2.0, gbps > 0 ? gbps : 100.0, &ctx->self,
                      sizeof(ctx->self));
    /* Through dma-bufs or nvidia-peermem, and with the driver to copy
     * small messages (ibv_gdr.c). */
    if (ctx->gdr_mode != WIB_GDR_OFF)
        ctx->caps.mem_types |= 1u << WEFT_TRANSPORT_MEM_CUDA;
}

static weft_result_t open_fds(struct wib_ctx *ctx)
{
    struct epoll_event ev;

    ctx->epfd = epoll_create1(EPOLL_CLOEXEC);
    ctx->busy_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    ctx->timer_fd = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK);
    if (ctx->epfd < 0 || ctx->busy_fd < 0 || ctx->timer_fd < 0) {
        weft__tp_error(&ctx->tp, "cannot make its wait descriptors: %s", strerror(errno));
        return WEFT_ERR_SYSTEM;
    }
    memset(&ev, 0, sizeof(ev));
    ev.events = EPOLLIN;
    ev.data.u64 = 0;
    if (epoll_ctl(ctx->epfd, EPOLL_CTL_ADD, ctx->busy_fd, &ev) != 0 ||
        epoll_ctl(ctx->epfd, EPOLL_CTL_ADD, ctx->timer_fd, &ev) != 0) {
        weft__tp_error(&ctx->tp, "epoll_ctl: %s", strerror(errno));
        return WEFT_ERR_SYSTEM;
    }
    return WEFT_SUCCESS;
}

static void close_fds(struct wib_ctx *ctx)
{
    if (ctx->timer_fd >= 0)
        close(ctx->timer_fd);
    if (ctx->busy_fd >= 0)
        close(ctx->busy_fd);
    if (ctx->epfd >= 0)
        close(ctx->epfd);
}

/* Bytes the transport pins whatever the job does: bounce slots, staging
 * windows on each device, knocks; and what it would like besides, for a
 * few hundred pairs and the registration cache. */
static size_t pinned_need(const struct wib_ctx *ctx)
{
    return (size_t)ctx->prm.sq_depth * ctx->prm.eager_size +
           ctx->prm.staging + 2 * WIB_UD_SLOTS * WIB_UD_BUF;
}

static size_t pinned_want(const struct wib_ctx *ctx)
{
    size_t pair = (size_t)ctx->prm.eager_credits * ctx->prm.eager_size +
                  2 * (size_t)(ctx->prm.cts_slots + 1) * WIB_CTS_BYTES;

    return pinned_need(ctx) + 256 * pair + (64u << 20);
}

static weft_result_t wib_init(const weft_transport_core_t *core, void **out)
{
    struct wib_ctx *ctx;
    weft_result_t rc;
    char msg[512], missing[256];
    int judged;

    ctx = weft__tp_ctx_new(core, out, WIB_NAME, sizeof(*ctx), &wib_tp_ops, &rc);
    if (!ctx)
        return rc;
    ctx->epfd = ctx->busy_fd = ctx->timer_fd = -1;
    ctx->max_inline = -1;
    ctx->page = (size_t)sysconf(_SC_PAGESIZE);
    if (weft__ibv_params_read(&ctx->tp, &ctx->prm) != 0) {
        rc = WEFT_ERR_INVALID_ARG;
        goto err_free_ctx;
    }
    if (weft__ibv_hca_parse(ctx->prm.hca, &ctx->hca, msg, sizeof(msg)) != 0) {
        weft__tp_error(&ctx->tp, "WEFT_IB_HCA=%s: %s", ctx->prm.hca, msg);
        rc = WEFT_ERR_INVALID_ARG;
        goto err_free_ctx;
    }
    if (weft__ibv_sym_load(&ctx->fns, ctx->prm.lib, msg, sizeof(msg)) != 0) {
        weft__tp_error(&ctx->tp, "%s", msg);
        rc = WEFT_ERR_UNSUPPORTED;
        goto err_free_ctx;
    }
    weft__ibv_sym_missing(&ctx->fns, missing, sizeof(missing));
    TP_INFO(ctx, "%s opened%s%s%s", ctx->fns.path,
            ctx->fns.unversioned ? " (no symbol versions: resolved by name)" : "",
            missing[0] ? "; it lacks " : "", missing);
    weft__ibv_boot_subnet(core->master_addr, &ctx->boot);
    ctx->rank_numa = weft__ibv_rank_numa();
    rc = weft__ibv_dev_open(ctx);
    if (rc != WEFT_SUCCESS)
        goto err_close_devs;
    /* Before any region is registered (libibverbs refuses it later), and
     * only where the transport is of use: a process it refuses is left
     * as it was. */
    weft__ibv_fork_setup(&ctx->fns, ctx->prm.fork_init, msg, sizeof(msg));
    TP_INFO(ctx, "%s", msg);
    judged = weft__ibv_memlock_check(pinned_need(ctx), pinned_want(ctx), msg, sizeof(msg));
    if (judged < 0) {
        weft__tp_error(&ctx->tp, "%s", msg);
        rc = WEFT_ERR_UNSUPPORTED;
        goto err_close_devs;
    }
    if (judged > 0)
        TP_WARN(ctx, "%s", msg);
    ctx->reg_fly = ctx->prm.reg_cache > 0;
    if (ctx->prm.reg_cache < 0) {
        ctx->reg_fly = 1;
        for (int i = 0; i < ctx->ndevs; i++)
            if (ctx->devs[i].used && !ctx->devs[i].odp)
                ctx->reg_fly = 0;
    }
    ctx->peers = calloc((size_t)ctx->size, sizeof(*ctx->peers));
    if (!ctx->peers) {
        weft__tp_error(&ctx->tp, "out of memory for %d peers", ctx->size);
        rc = WEFT_ERR_NO_MEMORY;
        goto err_close_devs;
    }
    rc = open_fds(ctx);
    if (rc == WEFT_SUCCESS)
        rc = weft__ibv_dev_setup(ctx);
    if (rc == WEFT_SUCCESS)
        rc = weft__ibv_mem_setup(ctx);
    if (rc == WEFT_SUCCESS)
        rc = weft__ibv_ud_setup(ctx);
    if (rc != WEFT_SUCCESS)
        goto err_undo_setup;
    weft__ibv_gdr_setup(ctx);
    describe_self(ctx);
    TP_INFO(ctx, "rank %d: %d rail%s, %d QP%s per rail, eager up to %zu bytes, unregistered "
            "buffers %s", ctx->rank, ctx->nrails, ctx->nrails > 1 ? "s" : "", ctx->prm.qps,
            ctx->prm.qps > 1 ? "s" : "", ctx->prm.eager_size - sizeof(struct wib_hdr),
            ctx->reg_fly ? "registered on the fly" : "staged");
    *out = ctx;
    return WEFT_SUCCESS;

err_undo_setup:
    weft__ibv_ud_fini(ctx);
    weft__ibv_mem_fini(ctx);
    close_fds(ctx);
    free(ctx->peers);
err_close_devs:
    weft__ibv_dev_close(ctx);
    weft__ibv_sym_unload(&ctx->fns);
err_free_ctx:
    free(ctx);
    return rc;
}

static weft_result_t wib_reach(void *vctx, const void *addr, size_t len,
                               weft_transport_reach_t *reach)
{
    struct wib_ctx *ctx = vctx;
    struct wib_addr a;

    if (!reach)
        return WEFT_ERR_INVALID_ARG;
    *reach = WEFT_TRANSPORT_REACH_NONE;
    if (!weft__ibv_addr_valid(addr, len))
        return WEFT_SUCCESS;
    memcpy(&a, addr, sizeof(a));
    /* Its first rail of our first rail's link layer: a fabric we share. */
    if (weft__ibv_pair_rails(&ctx->self, &a) > 0)
        *reach = WEFT_TRANSPORT_REACH_NETWORK;
    return WEFT_SUCCESS;
}

static weft_result_t wib_connect(void *vctx, int peer, const void *addr, size_t len)
{
    struct wib_ctx *ctx = vctx;
    struct wib_peer *p;

    if (weft__tp_check_rank(&ctx->tp, "connect to", peer) != 0)
        return WEFT_ERR_INVALID_ARG;
    if (!weft__ibv_addr_valid(addr, len)) {
        weft__tp_error(&ctx->tp, "the address of rank %d (%zu bytes) is not an " WIB_NAME
                       " address", peer, len);
        return WEFT_ERR_INVALID_ARG;
    }
    p = &ctx->peers[peer];
    if (p->known && p->state != WIB_P_IDLE && memcmp(&p->addr, addr, sizeof(p->addr))) {
        /* A new incarnation: what is left of the old one goes. */
        weft__ibv_conn_destroy(ctx, peer);
    }
    memcpy(&p->addr, addr, sizeof(p->addr));
    p->known = 1;
    p->lost = p->departed = 0;
    /* The pair itself connects on first use. */
    return WEFT_SUCCESS;
}

static weft_result_t wib_disconnect(void *vctx, int peer)
{
    struct wib_ctx *ctx = vctx;
    struct wib_peer *p;

    if (weft__tp_check_rank(&ctx->tp, "disconnect from", peer) != 0)
        return WEFT_ERR_INVALID_ARG;
    p = &ctx->peers[peer];
    weft__ibv_conn_destroy(ctx, peer);
    weft__ibv_sends_fail(ctx, peer, WEFT_ERR_ABORTED, 0);
    weft__tp_match_drop_peer(&ctx->tp, peer);
    weft__tp_match_fail_peer(&ctx->tp, peer, 0, WEFT_ERR_ABORTED);
    p->known = 0;
    p->lost = p->departed = 0;
    return WEFT_SUCCESS;
}

/* 1 while a pair that is up still has work requests not completed. A
 * peer that said goodbye is left out: it may destroy its QPs before it
 * acknowledges what we sent since, and wants none of it. */
static int sends_pending(const struct wib_ctx *ctx)
{
    for (const struct wib_peer *p = ctx->active; p; p = p->anext) {
        if (p->state != WIB_P_UP || p->departed)
            continue;
        if (p->ctl.head != p->ctl.tail)
            return 1;
        for (int l = 0; l < p->nlanes; l++)
            if (p->lane[l].head != p->lane[l].tail)
                return 1;
    }
    return 0;
}

/* Progresses until no up pair has work requests left, or until. */
static void drain(struct wib_ctx *ctx, int64_t until)
{
    while (sends_pending(ctx) && weft__ibv_now_ms() < until) {
        weft__ibv_progress(ctx);
        if (sends_pending(ctx))
            sched_yield();
    }
    for (struct wib_peer *p = ctx->active; p; p = p->anext) {
        if (p->state != WIB_P_UP || p->departed)
            continue;
        if (p->ctl.head != p->ctl.tail)
            TP_INFO(ctx, "finalize: %u requests to rank %d never completed (control QP)",
                    p->ctl.head - p->ctl.tail, (int)(p - ctx->peers));
        for (int l = 0; l < p->nlanes; l++)
            if (p->lane[l].head != p->lane[l].tail)
                TP_INFO(ctx, "finalize: %u requests to rank %d never completed (lane %d)",
                        p->lane[l].head - p->lane[l].tail, (int)(p - ctx->peers), l);
    }
}

/* Tells every connected peer this rank leaves on purpose, after everything
 * posted before has arrived: an eager send was done when posted, and
 * destroying its QP now would flush it; the goodbye goes on another QP,
 * so it must not overtake what is still on the way; and a peer that sees
 * our QPs go without the goodbye takes us for crashed. Each wait ends
 * when the send queues are empty, at once where the NIC keeps up; at
 * worst, with the peer gone, when the retries run out (WEFT_IB_TIMEOUT x
 * (WEFT_IB_RETRY_CNT + 1)), which fails what is left. */
static void say_goodbye(struct wib_ctx *ctx)
{
    double ack_ms = 4.096e-3 * (double)(1ull << ctx->prm.timeout) * (ctx->prm.retry_cnt + 1);
    int64_t until = weft__ibv_now_ms() + WIB_BYE_WAIT_MS + (int64_t)ack_ms;
    int sent = 0;

    /* Requests behind the last signalled one retire only with a later
     * completion: each busy QP gets one. */
    for (struct wib_peer *p = ctx->active; p; p = p->anext) {
        if (p->state != WIB_P_UP)
            continue;
        if (p->ctl.head != p->ctl.tail)
            weft__ibv_sq_ping(ctx, p, &p->ctl);
        for (int l = 0; l < p->nlanes; l++)
            if (p->lane[l].head != p->lane[l].tail)
                weft__ibv_sq_ping(ctx, p, &p->lane[l]);
    }
    drain(ctx, until);
    for (struct wib_peer *p = ctx->active; p; p = p->anext)
        if ((int)(p - ctx->peers) != ctx->rank && weft__ibv_say_bye(ctx, p) == 0)
            sent++;
    if (sent)
        drain(ctx, until);
}

static weft_result_t wib_finalize(void *vctx)
{
    struct wib_ctx *ctx = vctx;

    if (!ctx)
        return WEFT_ERR_INVALID_ARG;
    TP_INFO(ctx, "rank %d received %lu windows in place, %lu through staging", ctx->rank,
            ctx->windows_in_place, ctx->windows_staged);
    TP_INFO(ctx, "rank %d counts: sends %llu of %llu bytes; send WRs %llu (%llu signalled), "
            "receive WRs %llu, completions %llu; payload bytes copied by the CPU %llu, by the "
            "CUDA driver %llu; GPU flushes %llu", ctx->rank, ctx->st.sends, ctx->st.send_bytes,
            ctx->st.send_wrs, ctx->st.signaled, ctx->st.recv_wrs, ctx->st.cqes, ctx->st.copied,
            ctx->st.copied_cuda, ctx->st.flushes);
    say_goodbye(ctx);
    ctx->finalizing = 1;
    weft__ibv_flush_drop(ctx);
    for (int i = 0; i < ctx->size; i++)
        if (ctx->peers[i].active)
            weft__ibv_conn_destroy(ctx, i);
    weft__tp_ctx_fini(&ctx->tp);
    weft__ibv_ud_fini(ctx);
    /* Handles never deregistered give their regions back first. */
    weft__ibv_mem_fini(ctx);
    weft__ibv_gdr_fini(ctx);
    weft__ibv_dev_close(ctx);
    weft__ibv_sym_unload(&ctx->fns);
    close_fds(ctx);
    free(ctx->peers);
    free(ctx);
    return WEFT_SUCCESS;
}

/* hwloc sees the RDMA devices of a node; where it cannot (a container
 * without their sysfs, a stand-in library), WEFT_TRANSPORTS=ib-verbs
 * starts the transport anyway and init judges. TP_TRANSPORT_V1 fills in
 * plugins/common's host-only registration, which this transport
 * replaces with real regions: the later initializer is meant. */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Woverride-init"
TP_TRANSPORT_V1(WIB_NAME, "InfiniBand and RoCE v2 through libibverbs (reliable connections)",
                WEFT_TRANSPORT_NEED_RDMA_PORT,
                .init = wib_init, .reach = wib_reach, .connect = wib_connect,
                .disconnect = wib_disconnect, .finalize = wib_finalize,
                .isend = weft__ibv_isend, .progress = weft__ibv_progress,
                .get_wait_fd = weft__ibv_get_wait_fd,
                .mem_register = weft__ibv_mem_register,
                .mem_deregister = weft__ibv_mem_deregister,
                .mem_export = weft__ibv_mem_export, .put = weft__ibv_put);
#pragma GCC diagnostic pop
