/*
 * shm_cma.c: cross memory attach: the receiver copies a large message
 * straight from the sender's buffer with process_vm_readv, one copy
 * instead of two through the ring. The kernel allows it only where the
 * reader may ptrace the other process (same user, Yama ptrace_scope,
 * containers' seccomp filters), so it is probed per peer at connect.
 */
#include "config.h"

#include <errno.h>
#include <sys/uio.h>

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
        SHM_INFO(ctx, "cross memory attach to pid %u not permitted (%s): large messages "
                 "go through the ring", peer->pid, n < 0 ? "process_vm_readv failed" :
                 "probe mismatch");
        return 0;
    }
    return 1;
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
