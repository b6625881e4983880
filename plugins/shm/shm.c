/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * shm.c: the shared-memory transport's ABI table: ranks of one node talk
 * through rings in POSIX shared memory, and read large messages from each
 * other's memory where the kernel permits it. Set-up, tear-down and the
 * small entry points live here; see shm.h for the design and the other
 * shm_*.c files for the work.
 *
 * Parameters: WEFT_SHM_RING_SIZE (bytes of each receive ring, a power of
 * two from 4 KiB to 64 MiB, default 1 MiB), WEFT_SHM_CMA (0: never read
 * a peer's memory; 1: where permitted; unset: where permitted and faster
 * than copying through the ring on this machine), WEFT_SHM_CMA_THRESHOLD
 * (bytes from which a message goes by cross memory attach, default
 * 32 KiB), WEFT_SHM_BLOCK (0: never sleep, spin; for measurements),
 * WEFT_SHM_CUDA_IPC (0: host memory only; 1, the default: CUDA device
 * buffers too, GPU to GPU through CUDA IPC where the driver allows it).
 */
#include "config.h"

#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "plugins/shm/shm.h"

/* ------------------------------------------------------------ parameters */

static int read_params(struct shm_ctx *ctx)
{
    const struct tp_ctx *tp = &ctx->tp;
    long ring, cma, threshold, block, timeout_s, cuda;

    if (weft__tp_param_long(tp, "WEFT_SHM_RING_SIZE", SHM_MIN_RING, SHM_MAX_RING,
                            SHM_DEFAULT_RING, &ring) != 0 ||
        weft__tp_param_long(tp, "WEFT_SHM_CMA", 0, 1, -1, &cma) != 0 ||
        weft__tp_param_long(tp, "WEFT_SHM_CMA_THRESHOLD", 0, LONG_MAX,
                            SHM_DEFAULT_CMA_THRESHOLD, &threshold) != 0 ||
        weft__tp_param_long(tp, "WEFT_SHM_BLOCK", 0, 1, 1, &block) != 0 ||
        weft__tp_param_long(tp, "WEFT_TIMEOUT", 1, 86400, 300, &timeout_s) != 0 ||
        weft__tp_param_long(tp, "WEFT_SHM_CUDA_IPC", 0, 1, 1, &cuda) != 0)
        return -1;
    if (ring & (ring - 1)) {
        weft__tp_error(tp, "WEFT_SHM_RING_SIZE=%ld is not a power of two", ring);
        return -1;
    }
    ctx->ring_size = (size_t)ring;
    /* A quarter of the ring per record: the receiver copies one out while
     * the sender copies the next ones in. */
    ctx->frag = ctx->ring_size / 4;
    /* Unset: where permitted and where it is faster than the ring. */
    ctx->cma_mode = cma >= 0 ? (int)cma : weft__shm_cma_worth(ctx);
    ctx->cma_threshold = (size_t)threshold;
    ctx->block = (int)block;
    ctx->timeout_ms = (int)(timeout_s * 1000);
    ctx->cuda_param = (int)cuda;
    return 0;
}

/* ------------------------------------------------------------ set-up */

/* Peers are the same to sends and receives: lost and departed ones take
 * nothing more. */
static int peer_state(struct tp_ctx *tp, int peer, int kind)
{
    const struct shm_peer *p = &((struct shm_ctx *)tp)->peers[peer];

    if (!p->known)
        return TP_PEER_UNKNOWN;
    return p->lost || p->departed ? TP_PEER_GONE : TP_PEER_UP;
}

static const struct tp_ops shm_tp_ops = {
    .req_size = sizeof(struct shm_req),
    .peer = peer_state,
    .send_cancel = weft__shm_send_cancel,
    .match = &weft__shm_msg_ops,
};

static weft_result_t shm_init(const weft_transport_core_t *core, void **out)
{
    struct shm_ctx *ctx;
    struct timespec ts;
    weft_result_t rc;

    ctx = weft__tp_ctx_new(core, out, SHM_NAME, sizeof(*ctx), &shm_tp_ops, &rc);
    if (!ctx)
        return rc;
    ctx->fifo_fd = ctx->epfd = ctx->spin_fd = -1;
    if (read_params(ctx) != 0) {
        rc = WEFT_ERR_INVALID_ARG;
        goto err_free_ctx;
    }
    ctx->peers = calloc((size_t)ctx->size, sizeof(*ctx->peers));
    ctx->locals = calloc((size_t)ctx->size, sizeof(*ctx->locals));
    if (!ctx->peers || !ctx->locals) {
        core->set_error(SHM_NAME ": out of memory for %d peers", ctx->size);
        rc = WEFT_ERR_NO_MEMORY;
        goto err_free_peers;
    }
    for (int i = 0; i < ctx->size; i++) {
        ctx->peers[i].pidfd = -1;
        ctx->peers[i].wake_fd = -1;
    }
    ctx->epfd = epoll_create1(EPOLL_CLOEXEC);
    if (ctx->epfd < 0) {
        core->set_error(SHM_NAME ": epoll_create1: %s", strerror(errno));
        rc = WEFT_ERR_SYSTEM;
        goto err_free_peers;
    }
    if (!ctx->block) {
        /* Readable for ever: the core's sleep returns at once. */
        ctx->spin_fd = eventfd(1, EFD_CLOEXEC | EFD_NONBLOCK);
        if (ctx->spin_fd < 0) {
            core->set_error(SHM_NAME ": eventfd: %s", strerror(errno));
            rc = WEFT_ERR_SYSTEM;
            goto err_close_epoll;
        }
    }
    /* The probe word lets a peer check that it may read our memory. */
    clock_gettime(CLOCK_MONOTONIC, &ts);
    ctx->probe_value = ((uint64_t)getpid() << 32) ^ (uint64_t)ts.tv_nsec ^ 0x5eedf00dull;
    ctx->self.magic = SHM_ADDR_MAGIC;
    ctx->self.version = SHM_VERSION;
    ctx->self.pid = (uint32_t)getpid();
    ctx->self.uid = (uint32_t)getuid();
    ctx->self.probe_addr = (uint64_t)(uintptr_t)&ctx->probe_value;
    ctx->self.probe_value = ctx->probe_value;
    weft__shm_host_id(core, ctx->self.host, sizeof(ctx->self.host));
    weft__shm_cuda_setup(ctx, ctx->cuda_param);
    weft__tp_describe(&ctx->tp, WEFT_TRANSPORT_CAP_MPROBE | WEFT_TRANSPORT_CAP_SELF, 0.5, 80.0,
                      &ctx->self, sizeof(ctx->self));
    if (weft__shm_cuda_announce(ctx))
        ctx->tp.caps.mem_types |= 1u << WEFT_TRANSPORT_MEM_CUDA;
    TP_INFO(ctx, "rank %d on node %s: rings of %zu bytes, cross memory attach %s from %zu "
            "bytes, %s", ctx->rank, ctx->self.host, ctx->ring_size,
            ctx->cma_mode ? "where permitted" : "off", ctx->cma_threshold,
            ctx->block ? "spin then block" : "spin only");
    *out = ctx;
    return WEFT_SUCCESS;

err_close_epoll:
    close(ctx->epfd);
err_free_peers:
    free(ctx->peers);
    free(ctx->locals);
err_free_ctx:
    free(ctx);
    return rc;
}

static int addr_valid(const void *blob, size_t len)
{
    const struct shm_addr *a = blob;

    return blob && len == sizeof(*a) && a->magic == SHM_ADDR_MAGIC &&
           a->version == SHM_VERSION && memchr(a->host, '\0', sizeof(a->host));
}

/* Same node and same user: only then can we open each other's 0600
 * segments. */
static int reaches(const struct shm_ctx *ctx, const struct shm_addr *a)
{
    return a->uid == ctx->self.uid && !strcmp(a->host, ctx->self.host);
}

static weft_result_t shm_reach(void *vctx, const void *addr, size_t len,
                               weft_transport_reach_t *reach)
{
    struct shm_ctx *ctx = vctx;

    if (!reach)
        return WEFT_ERR_INVALID_ARG;
    *reach = addr_valid(addr, len) && reaches(ctx, addr) ? WEFT_TRANSPORT_REACH_NODE
                                                         : WEFT_TRANSPORT_REACH_NONE;
    return WEFT_SUCCESS;
}

/* Our own slot in our own segment: messages to ourselves take the same
 * path as any other. */
static weft_result_t connect_self(struct shm_ctx *ctx)
{
    struct shm_peer *p = &ctx->peers[ctx->rank];
    uint32_t claim = __atomic_fetch_add(&ctx->hdr->nclaimed, 1, __ATOMIC_ACQ_REL);
    unsigned char *base;

    if (claim >= SHM_MAX_SLOTS) {
        ctx->core->set_error(SHM_NAME ": no free slot in our own segment");
        return WEFT_ERR_SYSTEM;
    }
    base = (unsigned char *)ctx->seg + SHM_PAGE + (size_t)claim * (SHM_PAGE + ctx->ring_size);
    p->slot = (struct shm_slot *)base;
    p->hdr = ctx->hdr;
    weft__shm_ring_attach(&p->out, &p->slot->ctl, base + SHM_PAGE, ctx->ring_size, 1);
    p->slot->info.sender = ctx->rank;
    p->slot->info.sender_can_read_owner = (uint32_t)ctx->cma_mode;
    __atomic_store_n(&p->slot->info.ready, 1, __ATOMIC_RELEASE);
    return WEFT_SUCCESS;
}

static void watch_peer(struct shm_ctx *ctx, int peer)
{
    struct shm_peer *p = &ctx->peers[peer];
    struct epoll_event ev;

#ifdef SYS_pidfd_open
    p->pidfd = (int)syscall(SYS_pidfd_open, (pid_t)p->addr.pid, 0);
#endif
    if (p->pidfd < 0) {
        TP_INFO(ctx, "no pidfd for rank %d (%s): its death is seen by polling", peer,
                strerror(errno));
        p->pidfd = -1;
        return;
    }
    memset(&ev, 0, sizeof(ev));
    ev.events = EPOLLIN;
    ev.data.u64 = (uint64_t)peer + 1;
    if (epoll_ctl(ctx->epfd, EPOLL_CTL_ADD, p->pidfd, &ev) != 0) {
        close(p->pidfd);
        p->pidfd = -1;
    }
}

static void forget_peer(struct shm_ctx *ctx, int peer)
{
    struct shm_peer *p = &ctx->peers[peer];

    if (p->pidfd >= 0) {
        epoll_ctl(ctx->epfd, EPOLL_CTL_DEL, p->pidfd, NULL);
        close(p->pidfd);
        p->pidfd = -1;
    }
    if (peer == ctx->rank) {
        p->hdr = NULL;
        p->slot = NULL;
    }
    weft__shm_seg_detach(p);
    weft__shm_cuda_forget_peer(ctx, peer);
}

static weft_result_t shm_connect(void *vctx, int peer, const void *addr, size_t len)
{
    struct shm_ctx *ctx = vctx;
    struct shm_peer *p;
    weft_result_t rc;

    if (weft__tp_check_rank(&ctx->tp, "connect to", peer) != 0)
        return WEFT_ERR_INVALID_ARG;
    if (!addr_valid(addr, len) || !reaches(ctx, addr)) {
        weft__tp_error(&ctx->tp, "rank %d's address (%zu bytes) is not a " SHM_NAME
                       " address of this node and user", peer, len);
        return WEFT_ERR_INVALID_ARG;
    }
    if (!ctx->created) {
        rc = weft__shm_seg_create(ctx);
        if (rc != WEFT_SUCCESS)
            return rc;
    }
    p = &ctx->peers[peer];
    if (p->known && !p->lost && !p->departed &&
        !memcmp(&p->addr, addr, sizeof(p->addr)))
        return WEFT_SUCCESS;
    if (p->slot) {
        /* A new incarnation: what is left of the old one goes. */
        weft__shm_sends_fail(ctx, peer, WEFT_ERR_PEER_LOST);
        weft__shm_fail_current(ctx, peer, WEFT_ERR_PEER_LOST);
        forget_peer(ctx, peer);
        p->has_in = 0;
        p->in_slot = NULL;
        p->next_rts_id = p->fins_owed = p->next_fin_id = 0;
    }
    memcpy(&p->addr, addr, sizeof(p->addr));
    p->lost = p->departed = 0;
    if (peer == ctx->rank)
        rc = connect_self(ctx);
    else
        rc = weft__shm_seg_attach(ctx, peer);
    if (rc != WEFT_SUCCESS)
        return rc;
    if (peer != ctx->rank) {
        watch_peer(ctx, peer);
        ctx->npeers_expected++;
    }
    if (!p->known) {
        p->local = ctx->nlocals;
        ctx->locals[ctx->nlocals++] = peer;
    }
    p->known = 1;
    return WEFT_SUCCESS;
}

static weft_result_t shm_disconnect(void *vctx, int peer)
{
    struct shm_ctx *ctx = vctx;

    if (weft__tp_check_rank(&ctx->tp, "disconnect from", peer) != 0)
        return WEFT_ERR_INVALID_ARG;
    weft__shm_sends_fail(ctx, peer, WEFT_ERR_ABORTED);
    weft__shm_fail_current(ctx, peer, WEFT_ERR_ABORTED);
    weft__tp_match_drop_peer(&ctx->tp, peer);
    weft__tp_match_fail_peer(&ctx->tp, peer, 0, WEFT_ERR_ABORTED);
    weft__shm_cuda_forget_peer(ctx, peer);
    /* The ring stays mapped: the peer may be connected again, and a
     * reconnect of the same incarnation picks it up where it was. */
    ctx->peers[peer].known = 0;
    return WEFT_SUCCESS;
}

static weft_result_t shm_finalize(void *vctx)
{
    struct shm_ctx *ctx = vctx;

    if (!ctx)
        return WEFT_ERR_INVALID_ARG;
    weft__shm_say_goodbye(ctx);
    /* Before the pidfds go: they tell which peers will never attach. */
    weft__shm_seg_wait_attached(ctx);
    for (int i = 0; i < ctx->size; i++)
        forget_peer(ctx, i);
    ctx->finalizing = 1;
    weft__shm_msgs_free(ctx);
    weft__tp_ctx_fini(&ctx->tp);
    weft__shm_spares_free(ctx);
    weft__shm_seg_destroy(ctx);
    weft__shm_cuda_fini(ctx);
    if (ctx->spin_fd >= 0)
        close(ctx->spin_fd);
    close(ctx->epfd);
    free(ctx->peers);
    free(ctx->locals);
    free(ctx);
    return WEFT_SUCCESS;
}

/* Without another rank on the node it would carry nothing: the core then
 * does not keep it started. TP_TRANSPORT_V1 fills in plugins/common's
 * host-only registration, which device buffers replace here: the later
 * initializer is meant. */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Woverride-init"
TP_TRANSPORT_V1(SHM_NAME, "shared memory between ranks of one node",
                WEFT_TRANSPORT_NEED_LOCAL_PEER,
                .init = shm_init, .reach = shm_reach, .connect = shm_connect,
                .disconnect = shm_disconnect, .finalize = shm_finalize,
                .isend = weft__shm_isend, .progress = weft__shm_progress,
                .get_wait_fd = weft__shm_get_wait_fd,
                .mem_register = weft__shm_mem_register,
                .mem_deregister = weft__shm_mem_deregister);
#pragma GCC diagnostic pop
