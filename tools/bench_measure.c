/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * bench_measure.c: the timing and the check of one operation at one
 * size, shared by the sweep (bench_main.c) and --tune (bench_tune.c).
 * Both are collective: every rank of comm calls them with the same
 * operation, size and settings.
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "tools/bench.h"

void bench_check(weft_result_t rc, const char *what, int rank)
{
    if (rc != WEFT_SUCCESS) {
        fprintf(stderr, "weft-bench: rank %d: %s: %s (%s)\n", rank, what, weft_strerror(rc),
                weft_last_error());
        exit(1);
    }
}

static double now_us(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec / 1e3;
}

double bench_measure(bench_kind_t k, void *sb, void *rb, size_t count, const bench_opts_t *o,
                     int in_place, weft_comm_t comm)
{
    const char *name = bench_kind_name(k); /* not looked up in the timed loop */
    int rank = 0;
    double t0, t;

    weft_comm_rank(comm, &rank);
    for (int i = 0; i < o->warmup; i++)
        bench_check(bench_run(k, sb, rb, count, o, in_place, comm), name, rank);
    /* Then blocks of warm-up iterations until --warmup-ms passed, the
     * ranks agreeing after each block (they must run the same number): a
     * virtual machine's cores can run a burst of work slowly for its
     * first tens of milliseconds. */
    for (double start = now_us(), more = o->warmup_ms > 0; more > 0;) {
        for (int i = 0; i < 8; i++)
            bench_check(bench_run(k, sb, rb, count, o, in_place, comm), name, rank);
        more = now_us() - start < o->warmup_ms * 1e3;
        bench_check(weft_allreduce(WEFT_IN_PLACE, &more, 1, WEFT_FLOAT64, WEFT_MIN, comm),
                    "allreduce", rank);
    }
    bench_check(weft_barrier(comm), "barrier", rank);
    t0 = now_us();
    for (int i = 0; i < o->iters; i++)
        bench_check(bench_run(k, sb, rb, count, o, in_place, comm), name, rank);
    t = (now_us() - t0) / o->iters;
    if (k == BENCH_PINGPONG)
        t /= 2; /* one way of the round trip */
    if (k == BENCH_BW)
        t /= BENCH_BW_WINDOW; /* one message of the window */
    bench_check(weft_allreduce(WEFT_IN_PLACE, &t, 1, WEFT_FLOAT64, WEFT_MAX, comm), "allreduce",
                rank);
    return t;
}

long long bench_wrong_elements(bench_kind_t k, void *sb, void *rb, size_t count,
                               const bench_opts_t *o, int in_place, weft_comm_t comm,
                               const bench_mirror_t *dev)
{
    const char *name = bench_kind_name(k);
    long long wrong;
    int rank = 0, n = 1;

    weft_comm_rank(comm, &rank);
    weft_comm_size(comm, &n);
    bench_fill(k, sb, rb, count, o, rank, n, in_place);
    if (dev && dev->sb) {
        bench_cuda_to(dev->sb, sb, dev->sbytes);
        bench_cuda_to(dev->rb, rb, dev->rbytes);
        bench_check(bench_run(k, dev->sb, dev->rb, count, o, in_place, comm), name, rank);
        bench_cuda_from(rb, dev->rb, dev->rbytes);
    } else {
        bench_check(bench_run(k, sb, rb, count, o, in_place, comm), name, rank);
    }
    wrong = (long long)bench_wrong(k, rb, count, o, rank, n, in_place);
    bench_check(weft_allreduce(WEFT_IN_PLACE, &wrong, 1, WEFT_INT64, WEFT_SUM, comm),
                "allreduce", rank);
    return wrong;
}
