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
 * 32 KiB), WEFT_SHM_BLOCK (0: never sleep, spin; for measurements).
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

/* Reads an integer parameter within [lo, hi]; 0 on success (def when
 * unset), -1 with the error set. */
static int param_long(const weft_transport_core_t *core, const char *name, long lo, long hi,
                      long def, long *out)
{
    const char *s = core->get_param ? core->get_param(name) : NULL;
    char *end;
    long v;

    if (!s || !*s) {
        *out = def;
        return 0;
    }
    errno = 0;
    v = strtol(s, &end, 10);
    if (errno || end == s || *end || v < lo || v > hi) {
        core->set_error(SHM_NAME ": %s=%s is not a number from %ld to %ld", name, s, lo, hi);
        return -1;
    }
    *out = v;
    return 0;
}

static int read_params(struct shm_ctx *ctx)
{
    const weft_transport_core_t *core = ctx->core;
    long ring, cma, threshold, block, timeout_s;

    if (param_long(core, "WEFT_SHM_RING_SIZE", SHM_MIN_RING, SHM_MAX_RING, SHM_DEFAULT_RING,
                   &ring) != 0 ||
        param_long(core, "WEFT_SHM_CMA", 0, 1, -1, &cma) != 0 ||
        param_long(core, "WEFT_SHM_CMA_THRESHOLD", 0, LONG_MAX, SHM_DEFAULT_CMA_THRESHOLD,
                   &threshold) != 0 ||
        param_long(core, "WEFT_SHM_BLOCK", 0, 1, 1, &block) != 0 ||
        param_long(core, "WEFT_TIMEOUT", 1, 86400, 300, &timeout_s) != 0)
        return -1;
    if (ring & (ring - 1)) {
        core->set_error(SHM_NAME ": WEFT_SHM_RING_SIZE=%ld is not a power of two", ring);
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
    return 0;
}

/* ------------------------------------------------------------ set-up */

static weft_result_t shm_init(const weft_transport_core_t *core, void **out)
{
    struct shm_ctx *ctx;
    struct timespec ts;
    weft_result_t rc;

    if (!core || core->struct_size < sizeof(*core) || !out)
        return WEFT_ERR_INVALID_ARG;
    if (core->size <= 0 || core->rank < 0 || core->rank >= core->size) {
        core->set_error(SHM_NAME ": rank %d of %d makes no sense", core->rank, core->size);
        return WEFT_ERR_INVALID_ARG;
    }
    ctx = calloc(1, sizeof(*ctx));
    if (!ctx) {
        core->set_error(SHM_NAME ": out of memory");
        return WEFT_ERR_NO_MEMORY;
    }
    ctx->core = core;
    ctx->rank = core->rank;
    ctx->size = core->size;
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
    SHM_INFO(ctx, "rank %d on node %s: rings of %zu bytes, cross memory attach %s from %zu "
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

static weft_result_t shm_query(void *vctx, weft_transport_caps_t *caps)
{
    weft_transport_caps_t mine;

    if (!caps)
        return WEFT_ERR_INVALID_ARG;
    memset(&mine, 0, sizeof(mine));
    mine.flags = WEFT_TRANSPORT_CAP_MPROBE | WEFT_TRANSPORT_CAP_SELF;
    mine.mem_types = 1u << WEFT_TRANSPORT_MEM_HOST;
    mine.max_msg_size = SIZE_MAX;
    mine.latency_us = 0.5;
    mine.bandwidth_gbps = 80.0;
    mine.struct_size = caps->struct_size;
    memcpy(caps, &mine, shm_min(caps->struct_size, sizeof(mine)));
    return WEFT_SUCCESS;
}

static weft_result_t shm_get_address(void *vctx, void *addr, size_t *len)
{
    struct shm_ctx *ctx = vctx;

    if (!addr || !len || *len < sizeof(ctx->self)) {
        ctx->core->set_error(SHM_NAME ": get_address needs %zu bytes", sizeof(ctx->self));
        return WEFT_ERR_INVALID_ARG;
    }
    memcpy(addr, &ctx->self, sizeof(ctx->self));
    *len = sizeof(ctx->self);
    return WEFT_SUCCESS;
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
        SHM_INFO(ctx, "no pidfd for rank %d (%s): its death is seen by polling", peer,
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
}

static weft_result_t shm_connect(void *vctx, int peer, const void *addr, size_t len)
{
    struct shm_ctx *ctx = vctx;
    struct shm_peer *p;
    weft_result_t rc;

    if (peer < 0 || peer >= ctx->size) {
        ctx->core->set_error(SHM_NAME ": connect to rank %d, not in 0..%d", peer,
                             ctx->size - 1);
        return WEFT_ERR_INVALID_ARG;
    }
    if (!addr_valid(addr, len) || !reaches(ctx, addr)) {
        ctx->core->set_error(SHM_NAME ": rank %d's address (%zu bytes) is not a " SHM_NAME
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
        if (p->cur) {
            weft__shm_msg_fail(ctx, p->cur, WEFT_ERR_PEER_LOST);
            p->cur = NULL;
        }
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
    struct shm_peer *p;

    if (peer < 0 || peer >= ctx->size) {
        ctx->core->set_error(SHM_NAME ": disconnect from rank %d, not in 0..%d", peer,
                             ctx->size - 1);
        return WEFT_ERR_INVALID_ARG;
    }
    p = &ctx->peers[peer];
    weft__shm_sends_fail(ctx, peer, WEFT_ERR_ABORTED);
    if (p->cur) {
        weft__shm_msg_fail(ctx, p->cur, WEFT_ERR_ABORTED);
        p->cur = NULL;
    }
    weft__shm_unexp_drop(ctx, peer);
    weft__shm_posted_fail(ctx, peer, 0, WEFT_ERR_ABORTED);
    /* The ring stays mapped: the peer may be connected again, and a
     * reconnect of the same incarnation picks it up where it was. */
    p->known = 0;
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
    while (ctx->reqs)
        weft__shm_req_free(ctx, ctx->reqs);
    weft__shm_req_spares_free(ctx);
    weft__shm_msgs_free(ctx);
    weft__shm_seg_destroy(ctx);
    if (ctx->spin_fd >= 0)
        close(ctx->spin_fd);
    close(ctx->epfd);
    free(ctx->peers);
    free(ctx->locals);
    free(ctx);
    return WEFT_SUCCESS;
}

/* ------------------------------------------------------------ small calls */

static weft_result_t shm_mem_register(void *vctx, void *buf, size_t len, int mem_type,
                                      void **mh)
{
    struct shm_ctx *ctx = vctx;

    if (!mh)
        return WEFT_ERR_INVALID_ARG;
    if (mem_type != WEFT_TRANSPORT_MEM_HOST) {
        ctx->core->set_error(SHM_NAME ": memory type %d is not host memory", mem_type);
        return WEFT_ERR_UNSUPPORTED;
    }
    /* Rings copy from any buffer, and process_vm_readv reads any. */
    *mh = NULL;
    return WEFT_SUCCESS;
}

static weft_result_t shm_mem_deregister(void *vctx, void *mh)
{
    return WEFT_SUCCESS;
}

static weft_result_t shm_test(void *vctx, void *vreq, int *done,
                              weft_transport_completion_t *c)
{
    struct shm_ctx *ctx = vctx;
    struct shm_req *r = vreq;

    if (!r || !done) {
        ctx->core->set_error(SHM_NAME ": test: %s is NULL", r ? "done" : "req");
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
    weft__shm_req_free(ctx, r);
    return WEFT_SUCCESS;
}

static weft_result_t shm_cancel(void *vctx, void *vreq)
{
    struct shm_ctx *ctx = vctx;
    struct shm_req *r = vreq;

    if (!r) {
        ctx->core->set_error(SHM_NAME ": cancel: req is NULL");
        return WEFT_ERR_INVALID_ARG;
    }
    if (r->done)
        return WEFT_SUCCESS;
    if (r->kind == SHM_RECV)
        weft__shm_recv_cancel(ctx, r);
    else
        weft__shm_send_cancel(ctx, r);
    return WEFT_SUCCESS;
}

__attribute__((visibility("default"))) const weft_transport_v1_t weft_transport_v1 = {
    .abi_version = WEFT_TRANSPORT_ABI_VERSION,
    .struct_size = sizeof(weft_transport_v1_t),
    .name = SHM_NAME,
    .description = "shared memory between ranks of one node",
    .init = shm_init,
    .query = shm_query,
    .get_address = shm_get_address,
    .reach = shm_reach,
    .connect = shm_connect,
    .disconnect = shm_disconnect,
    .finalize = shm_finalize,
    .mem_register = shm_mem_register,
    .mem_deregister = shm_mem_deregister,
    .isend = weft__shm_isend,
    .irecv = weft__shm_irecv,
    .test = shm_test,
    .cancel = shm_cancel,
    .progress = weft__shm_progress,
    .get_wait_fd = weft__shm_get_wait_fd,
    .improbe = weft__shm_improbe,
    .imrecv = weft__shm_imrecv,
    .mem_export = NULL,
    .put = NULL,
    /* Without another rank on the node it would carry nothing: the core
     * then does not keep it started. */
    .needs = WEFT_TRANSPORT_NEED_LOCAL_PEER,
};
