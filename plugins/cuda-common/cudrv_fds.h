/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * cudrv_fds.h: VMM allocations handed between the processes of a node as
 * POSIX file descriptors (cudrv_fds.c).
 *
 * A VMM allocation (cuMemCreate) has no legacy IPC handle; made with
 * CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR among its handle types, it
 * exports as a file descriptor, which only a Unix socket carries to
 * another process (SCM_RIGHTS; pidfd_getfd is refused under Yama and in
 * containers). So a GPU transport that shares such memory runs a
 * descriptor server: a thread listening on an abstract socket, named in
 * what the transport sends its peers, that answers "the allocation at
 * base with buffer id" with a descriptor of it. The server answers
 * processes of its own user only (SO_PEERCRED), and only for an
 * allocation of this process that is still the one named (freed memory,
 * or another allocation at that address now, is refused with
 * CUDA_ERROR_INVALID_HANDLE). Abstract sockets belong to a network
 * namespace: a process of another one cannot connect, and its transport
 * falls back as for memory it cannot map.
 */
#ifndef WEFT_CUDA_COMMON_CUDRV_FDS_H
#define WEFT_CUDA_COMMON_CUDRV_FDS_H

#include <pthread.h>
#include <stdint.h>

#include "plugins/cuda-common/cudrv.h"

/* The name of a server, without the abstract namespace's leading NUL:
 * "weft-cuda-fds-PIDNS-PID-OWNER", at most this many bytes with the NUL. */
#define WCU_FDS_NAME 64

struct wcu_fds_server {
    int fd;                             /* listening; -1 while not started */
    pthread_t thread;
    const struct wcu_drv *drv;
    /* Called first on the server's thread: makes a context current there
     * (the pointer queries need one). */
    void (*thread_init)(void *arg);
    void *arg;
    char name[WCU_FDS_NAME];
    unsigned long long served;          /* descriptors handed out (atomic) */
    int started;                        /* its thread is past thread_init (atomic) */
};

/* A server not started (fd -1). */
void weft__cudrv_fds_init(struct wcu_fds_server *s);
/* Starts s for this process's allocations, named after owner (the
 * transport: two transports of a process each run one), unless it runs
 * already: 0, or -1 with why. Not thread-safe: the transport's lock. */
int weft__cudrv_fds_start(struct wcu_fds_server *s, const struct wcu_drv *d,
                          const char *owner, void (*thread_init)(void *), void *arg,
                          char *why, size_t cap);
/* Stops a started server and waits for its thread. */
void weft__cudrv_fds_stop(struct wcu_fds_server *s);
/* Asks server name for a descriptor of the allocation at base with
 * buffer_id: the descriptor (the caller closes it), or -1 with *rc
 * (CUDA_ERROR_OPERATING_SYSTEM where the server cannot be reached). Waits
 * 10 s at most. */
int weft__cudrv_fds_fetch(const char *name, uint64_t base, uint64_t buffer_id, CUresult *rc);

#endif /* WEFT_CUDA_COMMON_CUDRV_FDS_H */
