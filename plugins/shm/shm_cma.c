/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * shm_cma.c: cross memory attach: the receiver copies a large message
 * straight from the sender's buffer with process_vm_readv, one copy
 * instead of two through the ring. The kernel allows it only where the
 * reader may ptrace the other process (same user, Yama ptrace_scope,
 * containers' seccomp filters), so it is probed per peer at connect.
 */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include "plugins/shm/shm.h"

/* 1 when this process may read the peer's memory: the probe word the
 * peer published must read back with its value. */
int weft__shm_cma_probe(struct shm_ctx *ctx, const struct shm_addr *peer)
{
    uint64_t got = 0;
    struct iovec local = { &got, sizeof(got) };
    struct iovec remote = { (void *)(uintptr_t)peer->probe_addr, sizeof(got) };
    ssize_t n = process_vm_readv((pid_t)peer->pid, &local, 1, &remote, 1, 0);

    if (n != (ssize_t)sizeof(got) || got != peer->probe_value) {
        TP_INFO(ctx, "cross memory attach to pid %u not permitted (%s): large messages "
                "go through the ring", peer->pid, n < 0 ? "process_vm_readv failed" :
                "probe mismatch");
        return 0;
    }
    return 1;
}

#define CALIBRATE_BYTES (1u << 20)
#define CALIBRATE_TRIES 4

static double now_s(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* 1 when reading another process's memory is fast enough to beat two
 * copies through a ring, which run on two cores at once and so move data
 * at about the rate of one memcpy. Some kernels (virtual machines,
 * hardening options) pin pages so slowly that process_vm_readv runs at a
 * fraction of memcpy's rate. Measured once, on this process's own memory,
 * best of a few tries of 1 MiB each: a millisecond or two at start-up. */
int weft__shm_cma_worth(struct shm_ctx *ctx)
{
    unsigned char *a = malloc(CALIBRATE_BYTES), *b = malloc(CALIBRATE_BYTES);
    double best_cma = 1e9, best_copy = 1e9;
    int ok = 1;

    if (!a || !b) {
        free(a);
        free(b);
        return 0;
    }
    memset(a, 1, CALIBRATE_BYTES);
    memset(b, 2, CALIBRATE_BYTES);
    for (int i = 0; i < CALIBRATE_TRIES && ok; i++) {
        struct iovec local = { b, CALIBRATE_BYTES }, remote = { a, CALIBRATE_BYTES };
        double t0 = now_s(), t1, t2;

        ok = process_vm_readv(getpid(), &local, 1, &remote, 1, 0) == CALIBRATE_BYTES;
        t1 = now_s();
        memcpy(b, a, CALIBRATE_BYTES);
        /* Keep the copy: the compiler may not drop it. */
        __asm__ volatile("" : : "r"(b) : "memory");
        t2 = now_s();
        if (t1 - t0 < best_cma)
            best_cma = t1 - t0;
        if (t2 - t1 < best_copy)
            best_copy = t2 - t1;
    }
    free(a);
    free(b);
    if (!ok) {
        TP_INFO(ctx, "process_vm_readv on this process failed: large messages go through "
                "the ring");
        return 0;
    }
    TP_INFO(ctx, "process_vm_readv %.1f GB/s, memcpy %.1f GB/s: large messages %s",
            CALIBRATE_BYTES / best_cma / 1e9, CALIBRATE_BYTES / best_copy / 1e9,
            best_cma <= 2 * best_copy ? "by cross memory attach where permitted"
                                      : "through the ring (WEFT_SHM_CMA=1 forces it)");
    return best_cma <= 2 * best_copy;
}

/* Copies len bytes at src in the peer's memory to dst: 0, or an errno. */
int weft__shm_cma_read(struct shm_ctx *ctx, int peer, void *dst, uint64_t src, size_t len)
{
    pid_t pid = (pid_t)ctx->peers[peer].addr.pid;
    size_t done = 0;

    while (done < len) {
        struct iovec local = { (unsigned char *)dst + done, len - done };
        struct iovec remote = { (void *)(uintptr_t)(src + done), len - done };
        ssize_t n = process_vm_readv(pid, &local, 1, &remote, 1, 0);

        if (n < 0) {
            if (errno == EINTR)
                continue;
            return errno;
        }
        if (n == 0)
            return EFAULT;
        done += (size_t)n;
    }
    return 0;
}
