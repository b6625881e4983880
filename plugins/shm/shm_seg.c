/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * shm_seg.c: segments. Ours is created at the first connect (the job id is
 * known from then on) and unlinked once every local peer attached; a
 * peer's is attached by claiming one slot of it. Names carry the job, the
 * rank and the creator's pid, so that the segments of ranks that died
 * before they could unlink are found and removed by the next job.
 */
#include "config.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "plugins/shm/shm.h"

#define SHM_DIR "/dev/shm"
#define SHM_PREFIX "weft-shm-"
#define SHM_FIFO_SUFFIX ".wake"
#define MPOL_PREFERRED_ 1

void weft__shm_seg_name(char *buf, size_t cap, const char *job, int rank, unsigned pid)
{
    snprintf(buf, cap, "/" SHM_PREFIX "%s-%d-%u", job && *job ? job : "nojob", rank, pid);
}

static void fifo_name(char *buf, size_t cap, const char *seg_name)
{
    snprintf(buf, cap, SHM_DIR "%s" SHM_FIFO_SUFFIX, seg_name);
}

static size_t slot_stride(size_t ring_size)
{
    return SHM_PAGE + ring_size;
}

static void sleep_ms(int ms)
{
    struct timespec ts = { ms / 1000, (long)(ms % 1000) * 1000000L };

    nanosleep(&ts, NULL);
}

/* ------------------------------------------------------------ stale ones */

/* The creator's pid is the last dash-separated number of the name. */
static int name_pid(const char *name, pid_t *pid)
{
    const char *dash = strrchr(name, '-');
    char *end;
    unsigned long v;

    if (!dash || !dash[1])
        return -1;
    v = strtoul(dash + 1, &end, 10);
    if (end == dash + 1 || (*end && strcmp(end, SHM_FIFO_SUFFIX)) || v == 0 ||
        v > (unsigned long)INT32_MAX)
        return -1;
    *pid = (pid_t)v;
    return 0;
}

void weft__shm_remove_stale(struct shm_ctx *ctx)
{
    DIR *dir = opendir(SHM_DIR);
    struct dirent *e;

    if (!dir)
        return;
    while ((e = readdir(dir))) {
        char path[sizeof(SHM_DIR) + 256];
        struct stat st;
        pid_t pid;

        if (strncmp(e->d_name, SHM_PREFIX, strlen(SHM_PREFIX)) || name_pid(e->d_name, &pid))
            continue;
        /* Only our own files, and only of processes that are gone. */
        snprintf(path, sizeof(path), SHM_DIR "/%s", e->d_name);
        if (lstat(path, &st) != 0 || st.st_uid != getuid())
            continue;
        if (kill(pid, 0) == 0 || errno != ESRCH)
            continue;
        if (unlink(path) == 0)
            TP_INFO(ctx, "removed %s, left by pid %d which is gone", path, (int)pid);
    }
    closedir(dir);
}

/* ------------------------------------------------------------ NUMA */

/* The rings of a segment are read by its owner only: their pages go to
 * the owner's NUMA node, whoever touches them first. mbind on a shared
 * mapping sets the policy of the shared object itself. A machine with
 * one node has nothing to gain; a failure costs only locality. */
static void place_on_my_node(struct shm_ctx *ctx, void *addr, size_t len)
{
    unsigned cpu = 0, node = 0;
    unsigned long mask[16];

    if (access("/sys/devices/system/node/node1", F_OK) != 0)
        return;
    if (syscall(SYS_getcpu, &cpu, &node, NULL) != 0 || node >= 16 * 8 * sizeof(long))
        return;
    memset(mask, 0, sizeof(mask));
    mask[node / (8 * sizeof(long))] = 1ul << (node % (8 * sizeof(long)));
    if (syscall(SYS_mbind, addr, len, MPOL_PREFERRED_, mask, 16 * 8 * sizeof(long), 0) != 0)
        TP_INFO(ctx, "mbind of the receive rings to NUMA node %u failed: %s", node,
                strerror(errno));
    else
        TP_INFO(ctx, "receive rings prefer NUMA node %u", node);
}

/* ------------------------------------------------------------ ours */

weft_result_t weft__shm_seg_create(struct shm_ctx *ctx)
{
    const weft_transport_core_t *core = ctx->core;
    size_t stride = slot_stride(ctx->ring_size);
    struct epoll_event ev;
    weft_result_t rc = WEFT_ERR_SYSTEM;
    int fd;

    weft__shm_remove_stale(ctx);
    weft__shm_seg_name(ctx->seg_name, sizeof(ctx->seg_name), core->job_id, ctx->rank,
                       (unsigned)getpid());
    fifo_name(ctx->fifo_path, sizeof(ctx->fifo_path), ctx->seg_name);
    ctx->seg_len = SHM_PAGE + (size_t)SHM_MAX_SLOTS * stride;
    fd = shm_open(ctx->seg_name, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd < 0) {
        core->set_error(SHM_NAME ": shm_open(%s): %s", ctx->seg_name, strerror(errno));
        return WEFT_ERR_SYSTEM;
    }
    /* Sparse: only the pages of rings in use ever take memory. */
    if (ftruncate(fd, (off_t)ctx->seg_len) != 0) {
        core->set_error(SHM_NAME ": ftruncate(%s, %zu): %s", ctx->seg_name, ctx->seg_len,
                        strerror(errno));
        goto err_unlink;
    }
    ctx->seg = mmap(NULL, ctx->seg_len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (ctx->seg == MAP_FAILED) {
        ctx->seg = NULL;
        core->set_error(SHM_NAME ": mmap(%s): %s", ctx->seg_name, strerror(errno));
        goto err_unlink;
    }
    place_on_my_node(ctx, ctx->seg, ctx->seg_len);
    ctx->hdr = ctx->seg;
    ctx->hdr->version = SHM_VERSION;
    ctx->hdr->owner_rank = (uint32_t)ctx->rank;
    ctx->hdr->owner_pid = (uint32_t)getpid();
    ctx->hdr->nslots = SHM_MAX_SLOTS;
    ctx->hdr->ring_size = ctx->ring_size;
    ctx->hdr->slot_stride = stride;

    if (mkfifo(ctx->fifo_path, 0600) != 0) {
        core->set_error(SHM_NAME ": mkfifo(%s): %s", ctx->fifo_path, strerror(errno));
        goto err_unmap;
    }
    /* Read and write: the FIFO never reads as closed, whoever comes and
     * goes on the writing side. */
    ctx->fifo_fd = open(ctx->fifo_path, O_RDWR | O_NONBLOCK | O_NOFOLLOW | O_CLOEXEC);
    if (ctx->fifo_fd < 0) {
        core->set_error(SHM_NAME ": open(%s): %s", ctx->fifo_path, strerror(errno));
        goto err_unlink_fifo;
    }
    memset(&ev, 0, sizeof(ev));
    ev.events = EPOLLIN;
    ev.data.u64 = 0;
    if (epoll_ctl(ctx->epfd, EPOLL_CTL_ADD, ctx->fifo_fd, &ev) != 0) {
        core->set_error(SHM_NAME ": epoll_ctl: %s", strerror(errno));
        goto err_close_fifo;
    }
    close(fd);
    /* Everything above is visible before a peer sees the magic. */
    __atomic_store_n(&ctx->hdr->magic, SHM_SEG_MAGIC, __ATOMIC_RELEASE);
    ctx->created = 1;
    TP_INFO(ctx, "segment %s: %d slots of %zu-byte rings", ctx->seg_name, SHM_MAX_SLOTS,
            ctx->ring_size);
    return WEFT_SUCCESS;

err_close_fifo:
    close(ctx->fifo_fd);
    ctx->fifo_fd = -1;
err_unlink_fifo:
    unlink(ctx->fifo_path);
err_unmap:
    munmap(ctx->seg, ctx->seg_len);
    ctx->seg = NULL;
    ctx->hdr = NULL;
err_unlink:
    shm_unlink(ctx->seg_name);
    close(fd);
    return rc;
}

void weft__shm_seg_unlink(struct shm_ctx *ctx)
{
    if (!ctx->created || ctx->unlinked)
        return;
    ctx->unlinked = 1;
    if (shm_unlink(ctx->seg_name) != 0 && errno != ENOENT)
        TP_WARN(ctx, "shm_unlink(%s): %s", ctx->seg_name, strerror(errno));
    if (unlink(ctx->fifo_path) != 0 && errno != ENOENT)
        TP_WARN(ctx, "unlink(%s): %s", ctx->fifo_path, strerror(errno));
    TP_TRACE(ctx, "unlinked %s: every local peer attached", ctx->seg_name);
}

/* 1 when peer's process is gone: its pidfd is readable (it is as soon
 * as the process exits, reaped or not), or without one, the kernel knows
 * no such pid. */
static int peer_exited(const struct shm_peer *p)
{
    struct pollfd pfd = { p->pidfd, POLLIN, 0 };

    if (p->pidfd >= 0)
        return poll(&pfd, 1, 0) > 0;
    return kill((pid_t)p->addr.pid, 0) != 0 && errno == ESRCH;
}

/* Local peers that have not attached to our segment and still may. */
static int peers_to_come(struct shm_ctx *ctx)
{
    int n = 0;

    weft__shm_seg_discover(ctx);
    for (int i = 0; i < ctx->nlocals; i++) {
        int peer = ctx->locals[i];
        const struct shm_peer *p = &ctx->peers[peer];

        if (peer != ctx->rank && !p->has_in && !peer_exited(p))
            n++;
    }
    return n;
}

void weft__shm_seg_wait_attached(struct shm_ctx *ctx)
{
    int waited = 0;

    /* A rank that leaves right after weft_init may be ahead of a peer
     * that has yet to attach: the name must stay until it did, or that
     * peer would wait for it in vain. A peer that died never will. */
    while (ctx->created && !ctx->unlinked &&
           __atomic_load_n(&ctx->hdr->attached, __ATOMIC_ACQUIRE) <
               (uint32_t)ctx->npeers_expected &&
           waited < ctx->timeout_ms) {
        if (waited % 10 == 0 && peers_to_come(ctx) == 0)
            break;
        sleep_ms(1);
        waited++;
    }
}

void weft__shm_seg_destroy(struct shm_ctx *ctx)
{
    weft__shm_seg_unlink(ctx);
    if (ctx->seg)
        munmap(ctx->seg, ctx->seg_len);
    if (ctx->fifo_fd >= 0)
        close(ctx->fifo_fd);
    ctx->seg = NULL;
    ctx->hdr = NULL;
    ctx->fifo_fd = -1;
}

/* Takes up the slots peers claimed since the last look: each is the ring
 * one peer writes to us. A slot whose claimer has not filled it in yet is
 * looked at again next time. */
void weft__shm_seg_discover(struct shm_ctx *ctx)
{
    uint32_t n = __atomic_load_n(&ctx->hdr->nclaimed, __ATOMIC_ACQUIRE);
    size_t stride = slot_stride(ctx->ring_size);

    if (n > SHM_MAX_SLOTS)
        n = SHM_MAX_SLOTS;
    while (ctx->slots_seen < n) {
        unsigned char *base = (unsigned char *)ctx->seg + SHM_PAGE +
                              (size_t)ctx->slots_seen * stride;
        struct shm_slot *slot = (struct shm_slot *)base;
        struct shm_peer *p;
        int sender;

        if (!__atomic_load_n(&slot->info.ready, __ATOMIC_ACQUIRE))
            break;
        ctx->slots_seen++;
        sender = slot->info.sender;
        if (sender < 0 || sender >= ctx->size) {
            TP_WARN(ctx, "slot %u of %s claims to be rank %d's; ignored",
                    ctx->slots_seen - 1, ctx->seg_name, sender);
            continue;
        }
        p = &ctx->peers[sender];
        p->in_slot = slot;
        weft__shm_ring_attach(&p->in, &slot->ctl, base + SHM_PAGE, ctx->ring_size, 0);
        p->has_in = 1;
        /* The sender told whether it can read our memory: if so, our
         * long messages to it go by cross memory attach. */
        p->cma_send = ctx->cma_mode != 0 &&
                      (sender == ctx->rank || slot->info.sender_can_read_owner);
        TP_TRACE(ctx, "rank %d writes to slot %u%s", sender, ctx->slots_seen - 1,
                 p->cma_send ? ", reads our memory" : "");
    }
}

/* ------------------------------------------------------------ theirs */

/* A peer's segment or FIFO is a file in /dev/shm under a name another
 * user might learn: use it only if it is of its type, this user's, and
 * closed to everybody else (a planted file would let its owner read or
 * change what the ranks exchange). */
static int peer_file_ok(struct shm_ctx *ctx, int fd, mode_t type, const char *path)
{
    struct stat st;

    if (fstat(fd, &st) != 0) {
        ctx->core->set_error(SHM_NAME ": fstat(%s): %s", path, strerror(errno));
        return 0;
    }
    if ((st.st_mode & S_IFMT) != type || st.st_uid != geteuid() ||
        (st.st_mode & (S_IRWXG | S_IRWXO))) {
        ctx->core->set_error(SHM_NAME ": refusing %s: not a %s of this user (uid %u) closed "
                             "to others (it is mode %04o, uid %u)", path,
                             type == S_IFIFO ? "FIFO" : "file", (unsigned)geteuid(),
                             (unsigned)(st.st_mode & 07777), (unsigned)st.st_uid);
        return 0;
    }
    return 1;
}

/* Opens peer's segment, waiting for the peer to create it (at its own
 * first connect) for up to ctx->timeout_ms. */
static int open_peer_segment(struct shm_ctx *ctx, const char *name, int peer)
{
    int waited = 0;

    for (;;) {
        int fd = shm_open(name, O_RDWR | O_NOFOLLOW | O_CLOEXEC, 0);
        int err = errno;

        if (fd >= 0)
            return fd;
        /* The peer creates it at its first connect; one that is gone
         * never will. */
        if (err == ENOENT && kill((pid_t)ctx->peers[peer].addr.pid, 0) != 0 &&
            errno == ESRCH) {
            ctx->core->set_error(SHM_NAME ": rank %d (pid %u) exited before it created its "
                                 "segment", peer, ctx->peers[peer].addr.pid);
            return -1;
        }
        if (err != ENOENT || waited >= ctx->timeout_ms) {
            ctx->core->set_error(SHM_NAME ": cannot open rank %d's segment %s%s: %s", peer,
                                 name, err == ENOENT ? " within WEFT_TIMEOUT" : "",
                                 strerror(err));
            return -1;
        }
        sleep_ms(1);
        waited++;
    }
}

weft_result_t weft__shm_seg_attach(struct shm_ctx *ctx, int peer)
{
    const weft_transport_core_t *core = ctx->core;
    struct shm_peer *p = &ctx->peers[peer];
    char name[SHM_NAME_MAX], fifo[SHM_NAME_MAX + 16];
    struct shm_seg_hdr *hdr;
    size_t stride;
    uint32_t claim;
    void *slot_map;
    int fd, waited = 0;

    weft__shm_seg_name(name, sizeof(name), core->job_id, peer, p->addr.pid);
    fifo_name(fifo, sizeof(fifo), name);
    fd = open_peer_segment(ctx, name, peer);
    if (fd < 0)
        return WEFT_ERR_SYSTEM;
    if (!peer_file_ok(ctx, fd, S_IFREG, name)) {
        close(fd);
        return WEFT_ERR_SYSTEM;
    }
    /* The file exists before its creator sized it, and touching a page
     * past its end is SIGBUS. ftruncate sizes it whole at once. */
    for (;;) {
        struct stat st;

        if (fstat(fd, &st) != 0) {
            core->set_error(SHM_NAME ": fstat(%s): %s", name, strerror(errno));
            goto err_close;
        }
        if ((size_t)st.st_size >= SHM_PAGE)
            break;
        if (waited++ >= ctx->timeout_ms) {
            core->set_error(SHM_NAME ": rank %d's segment %s never got its size", peer, name);
            goto err_close;
        }
        sleep_ms(1);
    }
    hdr = mmap(NULL, SHM_PAGE, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (hdr == MAP_FAILED) {
        core->set_error(SHM_NAME ": mmap(%s): %s", name, strerror(errno));
        goto err_close;
    }
    /* The file may exist before its creator filled it in. */
    while (__atomic_load_n(&hdr->magic, __ATOMIC_ACQUIRE) != SHM_SEG_MAGIC) {
        if (waited++ >= ctx->timeout_ms) {
            core->set_error(SHM_NAME ": rank %d's segment %s never became ready", peer, name);
            goto err_unmap_hdr;
        }
        sleep_ms(1);
    }
    if (hdr->version != SHM_VERSION || hdr->owner_rank != (uint32_t)peer ||
        hdr->ring_size < SHM_MIN_RING || (hdr->ring_size & (hdr->ring_size - 1)) ||
        hdr->slot_stride != slot_stride(hdr->ring_size)) {
        core->set_error(SHM_NAME ": rank %d's segment %s is not one this weft can use", peer,
                        name);
        goto err_unmap_hdr;
    }
    stride = hdr->slot_stride;
    claim = __atomic_fetch_add(&hdr->nclaimed, 1, __ATOMIC_ACQ_REL);
    if (claim >= hdr->nslots) {
        core->set_error(SHM_NAME ": rank %d's segment has no free slot (%u ranks on this "
                        "node at most)", peer, hdr->nslots);
        goto err_unmap_hdr;
    }
    slot_map = mmap(NULL, stride, PROT_READ | PROT_WRITE, MAP_SHARED, fd,
                    (off_t)(SHM_PAGE + (size_t)claim * stride));
    if (slot_map == MAP_FAILED) {
        core->set_error(SHM_NAME ": mmap of a slot of %s: %s", name, strerror(errno));
        goto err_unmap_hdr;
    }
    /* Read-write: a write to a FIFO whose reader exited raises SIGPIPE,
     * which would kill this process when it wakes a peer just gone. */
    p->wake_fd = open(fifo, O_RDWR | O_NONBLOCK | O_NOFOLLOW | O_CLOEXEC);
    if (p->wake_fd < 0 || !peer_file_ok(ctx, p->wake_fd, S_IFIFO, fifo)) {
        if (p->wake_fd < 0)
            core->set_error(SHM_NAME ": open(%s): %s", fifo, strerror(errno));
        else
            close(p->wake_fd);
        p->wake_fd = -1;
        munmap(slot_map, stride);
        goto err_unmap_hdr;
    }
    close(fd);
    p->hdr = hdr;
    p->map = slot_map;
    p->map_len = stride;
    p->slot = slot_map;
    weft__shm_ring_attach(&p->out, &p->slot->ctl, (unsigned char *)slot_map + SHM_PAGE,
                          hdr->ring_size, 1);
    p->slot->info.sender = ctx->rank;
    p->slot->info.sender_can_read_owner =
        ctx->cma_mode != 0 && weft__shm_cma_probe(ctx, &p->addr);
    __atomic_store_n(&p->slot->info.ready, 1, __ATOMIC_RELEASE);
    __atomic_fetch_add(&hdr->attached, 1, __ATOMIC_ACQ_REL);
    return WEFT_SUCCESS;

err_unmap_hdr:
    munmap(hdr, SHM_PAGE);
err_close:
    close(fd);
    return WEFT_ERR_SYSTEM;
}

void weft__shm_seg_detach(struct shm_peer *p)
{
    if (p->map)
        munmap(p->map, p->map_len);
    if (p->hdr)
        munmap(p->hdr, SHM_PAGE);
    if (p->wake_fd >= 0)
        close(p->wake_fd);
    p->map = NULL;
    p->hdr = NULL;
    p->slot = NULL;
    p->wake_fd = -1;
}
