/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * shm_pingpong.c: the shm transport's own latency and bandwidth, driven
 * through its ABI by two processes bound to cores 0 and 1, without the
 * core's requests, communicators and progress engine in between. Set
 * against weft-bench -o pingpong (the whole library) and Open MPI's
 * figure (bench/mpi_bench.c pingpong), it tells the transport's share of
 * a message's time from the rest.
 *
 *   bench/shm_pingpong [ITERS [BYTES ...]]   (default 100000 iterations, 8 B)
 *
 * Prints the one-way time (half the round trip) per size; WEFT_SHM_*
 * variables apply as in a job.
 */
#include "config.h"

#include <sched.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "weft/transport.h"

extern const weft_transport_v1_t weft_transport_v1;
static const weft_transport_v1_t *T = &weft_transport_v1;

static void quiet_log(int level, const char *plugin, const char *fmt, ...)
{
}

static void print_error(const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
}

static const char *param(const char *name)
{
    return getenv(name);
}

static double now_us(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec / 1e3;
}

/* Spins on progress until req is done: the transport alone. */
static void wait_req(void *ctx, void *req)
{
    weft_transport_completion_t c;
    int done = 0;

    while (!done) {
        T->progress(ctx);
        T->test(ctx, req, &done, &c);
    }
}

static int exchange(int rank, int wfd, int rfd, void *mine, void *theirs, size_t len)
{
    return write(wfd, mine, len) == (ssize_t)len && read(rfd, theirs, len) == (ssize_t)len
               ? 0 : -1;
}

int main(int argc, char **argv)
{
    int to_child[2], to_parent[2], rank, iters = argc > 1 ? atoi(argv[1]) : 100000;
    unsigned char addr[2][WEFT_TRANSPORT_ADDR_MAX];
    size_t len = WEFT_TRANSPORT_ADDR_MAX;
    weft_transport_core_t core;
    cpu_set_t cpus;
    pid_t child;
    void *ctx;

    if (iters <= 0 || pipe(to_child) != 0 || pipe(to_parent) != 0)
        return 2;
    child = fork();
    if (child < 0)
        return 2;
    rank = child == 0;
    CPU_ZERO(&cpus);
    CPU_SET(rank, &cpus);
    sched_setaffinity(0, sizeof(cpus), &cpus);
    memset(&core, 0, sizeof(core));
    core.struct_size = sizeof(core);
    core.rank = rank;
    core.size = 2;
    core.job_id = "shmpingpong";
    core.log = quiet_log;
    core.set_error = print_error;
    core.get_param = param;
    if (T->init(&core, &ctx) != WEFT_SUCCESS || T->get_address(ctx, addr[rank], &len) ||
        exchange(rank, rank ? to_parent[1] : to_child[1], rank ? to_child[0] : to_parent[0],
                 addr[rank], addr[1 - rank], len) != 0 ||
        T->connect(ctx, rank, addr[rank], len) || T->connect(ctx, 1 - rank, addr[1 - rank], len))
        return 1;
    for (int a = 2; a < argc || (a == 2 && argc <= 2); a++) {
        size_t bytes = argc > a ? strtoull(argv[a], NULL, 0) : 8;
        unsigned char *buf = calloc(1, bytes ? bytes : 1);
        double t0 = 0;
        void *req;

        for (int i = -iters / 10 - 1; i < iters; i++) {
            if (i == 0)
                t0 = now_us();
            if (rank == 0) {
                T->isend(ctx, 1, buf, bytes, 1, NULL, &req);
                wait_req(ctx, req);
                T->irecv(ctx, 1, buf, bytes, 1, 0, NULL, &req);
                wait_req(ctx, req);
            } else {
                T->irecv(ctx, 0, buf, bytes, 1, 0, NULL, &req);
                wait_req(ctx, req);
                T->isend(ctx, 0, buf, bytes, 1, NULL, &req);
                wait_req(ctx, req);
            }
        }
        if (rank == 0) {
            double one_way = (now_us() - t0) / iters / 2;

            printf("shm transport ping-pong %zu B: %.3f us one way, %.2f GB/s\n", bytes,
                   one_way, (double)bytes / one_way / 1e3);
        }
        free(buf);
    }
    T->finalize(ctx);
    if (child)
        waitpid(child, NULL, 0);
    return 0;
}
