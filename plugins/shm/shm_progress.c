/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * shm_progress.c: progress, the fate of peers, and sleeping.
 *
 * progress() drains every incoming ring and pumps every send queue. Every
 * so often, and whenever the wait descriptor woke us, it also asks the
 * pidfds which peers died: a peer's death is rare, and a system call per
 * progress would double the latency of a small message.
 */
#include "config.h"

#include <errno.h>
#include <signal.h>
#include <string.h>
#include <sys/epoll.h>
#include <time.h>
#include <unistd.h>

#include "plugins/shm/shm.h"

/* Progress calls between two looks at the clock, and milliseconds between
 * two liveness checks. */
#define SHM_CHECK_TICKS 256u
#define SHM_CHECK_MS 10

static int64_t coarse_ms(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Whatever is left of peer's current message can never come. */
void weft__shm_fail_current(struct shm_ctx *ctx, int peer, weft_result_t status)
{
    struct shm_peer *p = &ctx->peers[peer];

    if (p->cur) {
        weft__tp_match_fail(&ctx->tp, &p->cur->tp, status);
        p->cur = NULL;
    }
}

void weft__shm_peer_lost(struct shm_ctx *ctx, int peer, const char *why)
{
    struct shm_peer *p = &ctx->peers[peer];

    if (p->lost || p->departed)
        return;
    TP_WARN(ctx, "rank %d lost: %s", peer, why);
    p->lost = 1;
    weft__shm_sends_fail(ctx, peer, WEFT_ERR_PEER_LOST);
    weft__shm_fail_current(ctx, peer, WEFT_ERR_PEER_LOST);
    weft__tp_match_fail_peer(&ctx->tp, peer, 1, WEFT_ERR_PEER_LOST);
}

/* It said goodbye: everything it sent is here, so receives from it alone
 * can never match; receives from any source may still. */
void weft__shm_peer_departed(struct shm_ctx *ctx, int peer)
{
    struct shm_peer *p = &ctx->peers[peer];

    if (p->lost || p->departed)
        return;
    TP_TRACE(ctx, "rank %d left", peer);
    p->departed = 1;
    weft__shm_sends_fail(ctx, peer, WEFT_ERR_PEER_LOST);
    weft__shm_fail_current(ctx, peer, WEFT_ERR_PEER_LOST);
    weft__tp_match_fail_peer(&ctx->tp, peer, 0, WEFT_ERR_PEER_LOST);
}

/* peer's process is gone. What it wrote before is valid: take it first,
 * so that a BYE among it makes this a departure. */
static void peer_exited(struct shm_ctx *ctx, int peer)
{
    struct shm_peer *p = &ctx->peers[peer];

    if (p->pidfd >= 0) {
        epoll_ctl(ctx->epfd, EPOLL_CTL_DEL, p->pidfd, NULL);
        close(p->pidfd);
        p->pidfd = -1;
    }
    /* It may have attached, written and died since we last looked. */
    weft__shm_seg_discover(ctx);
    if (p->has_in && !p->lost && !p->departed)
        weft__shm_drain(ctx, peer, SIZE_MAX);
    weft__shm_peer_lost(ctx, peer, "its process exited");
}

static void drain_fifo(struct shm_ctx *ctx)
{
    char buf[256];

    while (read(ctx->fifo_fd, buf, sizeof(buf)) > 0)
        ;
}

void weft__shm_check_peers(struct shm_ctx *ctx)
{
    struct epoll_event ev[32];
    int n = epoll_wait(ctx->epfd, ev, 32, 0);

    for (int i = 0; i < n; i++) {
        if (ev[i].data.u64 == 0)
            drain_fifo(ctx);
        else
            peer_exited(ctx, (int)(ev[i].data.u64 - 1));
    }
    /* Without pidfds (kernels before 5.3): ask the kernel by pid. */
    for (int i = 0; i < ctx->nlocals; i++) {
        int peer = ctx->locals[i];
        struct shm_peer *p = &ctx->peers[peer];

        if (peer != ctx->rank && p->pidfd < 0 && !p->lost && !p->departed &&
            kill((pid_t)p->addr.pid, 0) != 0 && errno == ESRCH)
            peer_exited(ctx, peer);
    }
}

weft_result_t weft__shm_progress(void *vctx)
{
    struct shm_ctx *ctx = vctx;

    if (!ctx->created)
        return WEFT_SUCCESS;
    if (ctx->armed) {
        ctx->armed = 0;
        __atomic_store_n(&ctx->hdr->waiting, 0, __ATOMIC_RELAXED);
        weft__shm_check_peers(ctx);
    }
    if (__atomic_load_n(&ctx->hdr->nclaimed, __ATOMIC_RELAXED) != ctx->slots_seen)
        weft__shm_seg_discover(ctx);
    for (int i = 0; i < ctx->nlocals; i++) {
        int peer = ctx->locals[i];
        struct shm_peer *p = &ctx->peers[peer];

        if (p->has_in && !p->lost && !p->departed)
            weft__shm_drain(ctx, peer, SHM_DRAIN_BUDGET);
        if (p->sq.head || p->fins_owed)
            weft__shm_pump(ctx, peer);
    }
    if (++ctx->ticks % SHM_CHECK_TICKS == 0) {
        int64_t now = coarse_ms();

        if (now >= ctx->next_check_ms) {
            ctx->next_check_ms = now + SHM_CHECK_MS;
            weft__shm_check_peers(ctx);
        }
    }
    /* Progress runs only once weft_init connected every peer: from then
     * on the count of attached peers is final. */
    if (!ctx->unlinked &&
        __atomic_load_n(&ctx->hdr->attached, __ATOMIC_ACQUIRE) >= (uint32_t)ctx->npeers_expected)
        weft__shm_seg_unlink(ctx);
    return WEFT_SUCCESS;
}

/* 1 when progress() has something to do right now. */
static int work_pending(struct shm_ctx *ctx)
{
    if (__atomic_load_n(&ctx->hdr->nclaimed, __ATOMIC_RELAXED) != ctx->slots_seen)
        return 1;
    for (int i = 0; i < ctx->nlocals; i++) {
        int peer = ctx->locals[i];
        struct shm_peer *p = &ctx->peers[peer];

        if (p->has_in && !p->lost && !p->departed && weft__shm_ring_avail(&p->in))
            return 1;
        if (weft__shm_pump_ready(ctx, peer))
            return 1;
    }
    return 0;
}

weft_result_t weft__shm_get_wait_fd(void *vctx, int *fd)
{
    struct shm_ctx *ctx = vctx;
    char byte = 0;

    if (!fd)
        return WEFT_ERR_INVALID_ARG;
    if (!ctx->block) {
        *fd = ctx->spin_fd;
        return WEFT_SUCCESS;
    }
    *fd = ctx->epfd;
    if (!ctx->created)
        return WEFT_SUCCESS;
    /* Raise the flag, then look: a producer writes, then looks at the
     * flag; one of the two sees the other (see shm.h). */
    __atomic_store_n(&ctx->hdr->waiting, 1, __ATOMIC_RELAXED);
    __atomic_thread_fence(__ATOMIC_SEQ_CST);
    ctx->armed = 1;
    if (work_pending(ctx) && write(ctx->fifo_fd, &byte, 1) < 0 && errno != EAGAIN)
        TP_WARN(ctx, "write to own wake-up FIFO: %s", strerror(errno));
    return WEFT_SUCCESS;
}
