/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * bench_tune_measure.c: weft-bench --tune's second half: every algorithm
 * the tuner's table predicts, forced in turn and measured at the table's
 * sizes, printed beside its prediction, with the tuner's pick and the
 * fastest marked and a count of the sizes where the pick was within 10%
 * of the fastest.
 *
 * Every rank runs the same sequence: the sizes, the algorithms that
 * apply and the number of timed iterations derive from what every rank
 * holds alike (the job's parameters, the communicator's shape) or from
 * times the ranks agreed on (bench_measure returns the slowest rank's).
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>

#include "tools/bench.h"
#include "core/comm/comm.h"
#include "core/tune/tune.h"

/* Microseconds of timed calls per algorithm and size: the iterations are
 * this over the first timed call's time, at least TUNE_MIN_ITERS and at
 * most -n. Small sizes average hundreds of calls, so that one call held
 * up by the scheduler (milliseconds where ranks outnumber cores: 200 us
 * means of 20 calls of 8 bytes among 7 us ones at 4 ranks on 2 cores)
 * does not decide their mean; the largest sizes run a few. */
#define TUNE_TARGET_US 5000.0
#define TUNE_MIN_ITERS 3
/* The pick counts as right within this factor of the fastest. */
#define TUNE_SLACK 1.10

/* The operation as the tuner knows it; -1 without a choice of algorithm. */
static int coll_kind(bench_kind_t k)
{
    switch (k) {
    case BENCH_ALLREDUCE: return WEFT__COLL_ALLREDUCE;
    case BENCH_REDUCE: return WEFT__COLL_REDUCE;
    case BENCH_BROADCAST: return WEFT__COLL_BCAST;
    case BENCH_ALLGATHER: return WEFT__COLL_ALLGATHER;
    case BENCH_REDUCE_SCATTER: return WEFT__COLL_REDUCE_SCATTER;
    case BENCH_ALLTOALL: return WEFT__COLL_ALLTOALL;
    case BENCH_GATHER: return WEFT__COLL_GATHER;
    case BENCH_SCATTER: return WEFT__COLL_SCATTER;
    default: return -1;
    }
}

/* The tuner counts the bytes of a call as its entry point does
 * (core/api/coll_api.c, coll_api_v.c): reduce_scatter and alltoall every
 * rank's blocks together, allgather, gather and scatter one rank's
 * block, the others the buffer. Elements per rank for bytes; 0 where
 * bytes cannot be split into the ranks' blocks. */
static size_t count_for(bench_kind_t k, size_t bytes, size_t esize, int n)
{
    if (k == BENCH_REDUCE_SCATTER || k == BENCH_ALLTOALL)
        return bytes / esize / (size_t)n;
    return bytes / esize;
}

static size_t bytes_of(bench_kind_t k, size_t count, size_t esize, int n)
{
    if (k == BENCH_REDUCE_SCATTER || k == BENCH_ALLTOALL)
        return count * esize * (size_t)n;
    return count * esize;
}

/* The table's sizes between -b and -e: the power of two at or above
 * each of the sweep's sizes (the top of its size bucket), each once;
 * fills up to cap of them and returns how many. */
static int sizes_of(const bench_opts_t *o, size_t *out, int cap)
{
    int ns = 0;

    for (double b = (double)o->min_bytes; b <= (double)o->max_bytes && ns < cap;
         b *= o->factor) {
        size_t top = (size_t)1 << weft__tune_bucket((size_t)b);

        if (top <= o->max_bytes && (ns == 0 || top > out[ns - 1]))
            out[ns++] = top;
        if (b * o->factor <= b)
            break;
    }
    return ns;
}

/* Forces algorithm a as WEFT_ALGO would (select.c); NULL goes back to
 * WEFT_ALGO's own choices. */
static void force(const weft__algo_t *a)
{
    char spec[128];

    if (!a) {
        weft__tune_algo_parse(getenv("WEFT_ALGO"));
        return;
    }
    snprintf(spec, sizeof(spec), "%s:%s", a->op_name, a->name);
    weft__tune_algo_parse(spec);
}

/* One algorithm at one size: the slowest rank's mean microseconds, after
 * one untimed and one timed call that set the number of iterations. */
static double time_one(bench_kind_t k, void *sb, void *rb, size_t count, const bench_opts_t *o,
                       weft_comm_t comm)
{
    bench_opts_t t = *o;
    double first;
    int iters;

    t.warmup = 1;
    t.iters = 1;
    first = bench_measure(k, sb, rb, count, &t, 0, comm);
    iters = first * o->iters > TUNE_TARGET_US ? (int)(TUNE_TARGET_US / first) : o->iters;
    iters = iters > TUNE_MIN_ITERS ? iters : TUNE_MIN_ITERS;
    t.iters = iters < o->iters ? iters : o->iters;
    t.warmup = 0;
    t.warmup_ms = 0;
    return bench_measure(k, sb, rb, count, &t, 0, comm);
}

typedef struct tally {
    int sizes, right;    /* sizes with a measured pick; those within TUNE_SLACK */
    long long wrong;
} tally_t;

/* Every algorithm of operation k with a prediction at bytes, measured and
 * printed (rank 0), the pick judged into *tl. */
static void one_size(bench_kind_t k, size_t count, size_t bytes, void *sb, void *rb,
                     const bench_opts_t *o, weft_comm_t comm, const weft__tune_shape_t *s,
                     tally_t *tl)
{
    const weft__tune_params_t *p = &comm->inst->tune->params;
    int kind = coll_kind(k), pick = weft__tune_pick(comm, kind, bytes, 1);
    int ids[WEFT__ALGO_COUNT], na = 0, fastest = -1, at_pick = -1;
    double pred[WEFT__ALGO_COUNT], meas[WEFT__ALGO_COUNT];
    long long wrong[WEFT__ALGO_COUNT];

    for (int i = 0; i < WEFT__ALGO_COUNT; i++) {
        if ((int)weft__algos[i].kind != kind || !weft__tune_predict(p, s, i, bytes, &pred[na]))
            continue;
        force(&weft__algos[i]);
        bench_fill(k, sb, rb, count, o, comm->rank, comm->size, 0);
        meas[na] = time_one(k, sb, rb, count, o, comm);
        wrong[na] = o->check ? bench_wrong_elements(k, sb, rb, count, o, 0, comm, NULL) : 0;
        tl->wrong += wrong[na];
        if (fastest < 0 || meas[na] < meas[fastest])
            fastest = na;
        if (i == pick)
            at_pick = na;
        ids[na++] = i;
    }
    force(NULL);
    if (at_pick >= 0) {
        tl->sizes++;
        tl->right += meas[at_pick] <= TUNE_SLACK * meas[fastest];
    }
    if (comm->rank != 0)
        return;
    for (int j = 0; j < na; j++) {
        char w[16];

        if (o->check)
            snprintf(w, sizeof(w), "%lld", wrong[j]);
        else
            snprintf(w, sizeof(w), "N/A");
        printf("  %10zu %10zu %-17s %10.1f %10.1f %7.2f %6s%s%s\n", bytes, count,
               weft__algos[ids[j]].name, pred[j] * 1e6, meas[j], meas[j] / (pred[j] * 1e6), w,
               j == at_pick ? "  pick" : "", j == fastest ? "  fastest" : "");
    }
    if (at_pick >= 0 && meas[at_pick] > TUNE_SLACK * meas[fastest])
        printf("# miss: %s %zu B: pick %s %.1f us, fastest %s %.1f us (%.2fx)\n",
               bench_kind_name(k), bytes, weft__algos[ids[at_pick]].name, meas[at_pick],
               weft__algos[ids[fastest]].name, meas[fastest], meas[at_pick] / meas[fastest]);
    fflush(stdout);
}

int bench_tune_measure(weft_comm_t world, const bench_opts_t *o)
{
    weft__tune_shape_t shape;
    size_t sizes[64], esize = 0, most;
    long long wrong = 0;
    weft_comm_t comm;
    void *sb, *rb;
    int ns = sizes_of(o, sizes, 64);

    /* A communicator of its own: its table of choices starts empty, made
     * with the parameters just measured. */
    bench_check(weft_comm_dup(world, &comm), "weft_comm_dup", world->rank);
    weft__tune_shape_of(comm, &shape);
    weft_dtype_size(o->dt, &esize);
    /* The largest buffer any operation needs: n blocks of the largest size. */
    most = ns ? sizes[ns - 1] / esize * (size_t)comm->size + 1 : 1;
    sb = calloc(most, esize);
    rb = calloc(most, esize);
    if (!sb || !rb) {
        fprintf(stderr, "weft-bench: --tune: cannot allocate the buffers for -e\n");
        exit(1);
    }
    if (comm->rank == 0)
        printf("#\n# measured against predicted: microseconds of one call out of place (the "
               "slowest rank's mean), %d ranks, %s, each algorithm forced%s\n", comm->size,
               bench_dtype_name(o->dt), o->check ? ", checked" : "");
    for (int k = 0; k < BENCH_NKINDS; k++) {
        tally_t tl = { 0, 0, 0 };

        if (!o->kinds[k] || coll_kind((bench_kind_t)k) < 0)
            continue;
        if (comm->rank == 0)
            printf("#\n# %s\n# %10s %10s %-17s %10s %10s %7s %6s\n",
                   bench_kind_name((bench_kind_t)k), "bytes", "count", "algorithm", "predicted",
                   "measured", "ratio", "#wrong");
        for (int i = 0; i < ns; i++) {
            size_t count = count_for((bench_kind_t)k, sizes[i], esize, comm->size);

            if (count)
                one_size((bench_kind_t)k, count,
                         bytes_of((bench_kind_t)k, count, esize, comm->size), sb, rb, o, comm,
                         &shape, &tl);
        }
        if (comm->rank == 0)
            printf("# %s: tuner's pick within 10%% of the fastest measured at %d of %d sizes\n",
                   bench_kind_name((bench_kind_t)k), tl.right, tl.sizes);
        wrong += tl.wrong;
    }
    if (comm->rank == 0)
        printf("# Out of bounds values : %lld %s\n#\n", wrong, wrong ? "FAILED" : "OK");
    free(sb);
    free(rb);
    bench_check(weft_comm_destroy(comm), "weft_comm_destroy", world->rank);
    return wrong ? 1 : 0;
}
