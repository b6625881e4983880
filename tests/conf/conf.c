/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * conf.c: the collectives conformance suite's driver.
 *
 *   conf [--comms world|all] [--ops NAME,...] [--counts N,...|none]
 *        [--big N] [--big-all] [--subs-full] [--no-illegal]
 *
 * The world communicator gets the full matrix of the plan: every dtype x
 * every legal operator (PREMUL_SUM included) x the counts (default 0, 1,
 * 7, 1031), in place and not, blocking and nonblocking by turns, every
 * root at counts up to 7 and the last rank above. --comms all adds the
 * communicators of conf_comms.c with a smaller plan (--subs-full: the
 * full one) and the overlap test across all of them. --big N runs a
 * representative subset at N elements (--big-all: every operation,
 * dtype and operator at N). --ops restricts the operations (names of
 * conf_func_names, e.g. for a forced WEFT_ALGO). Rank 0 prints how many
 * cases every rank checked and how long it took.
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/conf/conf.h"

#define MAX_COMMS 16
#define ALL_DTYPES ((1u << WEFT_DTYPE_COUNT) - 1)
#define ALL_OPS ((1u << CONF_NOPS) - 1)
#define ALL_FUNCS ((1u << CONF_NFUNCS) - 1)

typedef struct options {
    int all_comms, subs_full, illegal, big_all;
    unsigned funcs;
    size_t counts[CONF_MAX_COUNTS];
    int ncounts;
    size_t big;
} options_t;

static unsigned parse_funcs(const char *list)
{
    char buf[512], *save = NULL;
    unsigned mask = 0;

    snprintf(buf, sizeof(buf), "%s", list);
    for (char *w = strtok_r(buf, ",", &save); w; w = strtok_r(NULL, ",", &save)) {
        int f;

        for (f = 0; f < CONF_NFUNCS && strcmp(conf_func_names[f], w); f++)
            ;
        if (f == CONF_NFUNCS)
            MP_FAIL("--ops: unknown operation '%s'", w);
        mask |= 1u << f;
    }
    return mask;
}

static void parse(int argc, char **argv, options_t *o)
{
    *o = (options_t){ .illegal = 1, .funcs = ALL_FUNCS, .counts = { 0, 1, 7, 1031 },
                      .ncounts = 4 };
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;

        if (!strcmp(a, "--comms") && v) {
            o->all_comms = !strcmp(v, "all");
            i++;
        } else if (!strcmp(a, "--ops") && v) {
            o->funcs = parse_funcs(v);
            i++;
        } else if (!strcmp(a, "--counts") && v) {
            char buf[256], *save = NULL;

            snprintf(buf, sizeof(buf), "%s", v);
            o->ncounts = 0;
            for (char *w = strcmp(v, "none") ? strtok_r(buf, ",", &save) : NULL;
                 w && o->ncounts < CONF_MAX_COUNTS; w = strtok_r(NULL, ",", &save))
                o->counts[o->ncounts++] = strtoull(w, NULL, 0);
            i++;
        } else if (!strcmp(a, "--big") && v) {
            o->big = strtoull(v, NULL, 0);
            i++;
        } else if (!strcmp(a, "--big-all")) {
            o->big_all = 1;
        } else if (!strcmp(a, "--subs-full")) {
            o->subs_full = 1;
        } else if (!strcmp(a, "--no-illegal")) {
            o->illegal = 0;
        } else {
            MP_FAIL("unknown argument '%s' (see tests/conf/conf.c)", a);
        }
    }
}

static conf_plan_t full_plan(const options_t *o)
{
    conf_plan_t p = { .dtypes = ALL_DTYPES, .ops = ALL_OPS, .funcs = o->funcs,
                      .all_roots_max = 7, .ncounts = o->ncounts, .placements = 3 };

    memcpy(p.counts, o->counts, sizeof(p.counts));
    return p;
}

/* Sub-communicators: one dtype of each element size and kind, and the
 * operators whose code paths differ (arithmetic, selection, average,
 * bitwise, scaled). */
static conf_plan_t sub_plan(const options_t *o)
{
    conf_plan_t p = full_plan(o);

    if (o->subs_full)
        return p;
    p.dtypes = (1u << WEFT_INT8) | (1u << WEFT_UINT32) | (1u << WEFT_BFLOAT16) |
               (1u << WEFT_FLOAT64);
    p.ops = (1u << WEFT_SUM) | (1u << WEFT_MIN) | (1u << WEFT_AVG) | (1u << WEFT_BXOR) |
            (1u << CONF_PREMUL);
    return p;
}

static void run_plan(const conf_comm_t *cc, const conf_plan_t *p)
{
    conf_run_reductions(cc, p);
    conf_run_movement(cc, p);
    conf_run_vectors(cc, p);
    conf_run_axis(cc, p);
    conf_run_bytes(cc, p);
}

/* One operation, dtype and operator at count n, in place or not (where
 * the operation has an in-place form; out of place otherwise). */
static void run_one(const conf_comm_t *cc, int func, weft_dtype_t dt, int op, size_t n,
                    int in_place, unsigned allowed)
{
    conf_plan_t p = { .dtypes = 1u << dt, .ops = 1u << op, .counts = { n }, .ncounts = 1,
                      .funcs = (1u << func) & allowed, .all_roots_max = 0,
                      .placements = in_place && func != CONF_F_BCAST &&
                                    func != CONF_F_ALLTOALLV ? 2 : 1 };

    conf_run_reductions(cc, &p);
    conf_run_movement(cc, &p);
    conf_run_vectors(cc, &p);
}

/* Large counts: a representative subset, or everything with --big-all. */
static void run_big(const conf_comm_t *cc, const options_t *o)
{
    if (o->big_all) {
        conf_plan_t p = full_plan(o);

        p.counts[0] = o->big;
        p.ncounts = 1;
        p.all_roots_max = 0;
        p.funcs &= ~((1u << CONF_F_AXIS) | (1u << CONF_F_BARRIER));
        run_plan(cc, &p);
        return;
    }
    run_one(cc, CONF_F_ALLREDUCE, WEFT_FLOAT32, WEFT_SUM, o->big, 1, o->funcs);
    run_one(cc, CONF_F_ALLREDUCE, WEFT_BFLOAT16, WEFT_AVG, o->big, 0, o->funcs);
    run_one(cc, CONF_F_ALLREDUCE, WEFT_INT64, WEFT_MAX, o->big, 1, o->funcs);
    run_one(cc, CONF_F_ALLREDUCE, WEFT_FLOAT64, CONF_PREMUL, o->big, 0, o->funcs);
    run_one(cc, CONF_F_REDUCE, WEFT_FLOAT16, WEFT_SUM, o->big, 1, o->funcs);
    run_one(cc, CONF_F_BCAST, WEFT_UINT8, 0, o->big, 0, o->funcs);
    run_one(cc, CONF_F_ALLGATHER, WEFT_INT32, 0, o->big, 1, o->funcs);
    run_one(cc, CONF_F_ALLGATHERV, WEFT_UINT8, 0, o->big, 0, o->funcs);
    run_one(cc, CONF_F_REDUCE_SCATTER, WEFT_FLOAT32, WEFT_SUM, o->big, 1, o->funcs);
    run_one(cc, CONF_F_REDUCE_SCATTERV, WEFT_UINT32, WEFT_BXOR, o->big, 0, o->funcs);
    run_one(cc, CONF_F_ALLTOALL, WEFT_FLOAT16, 0, o->big, 1, o->funcs);
    run_one(cc, CONF_F_ALLTOALLV, WEFT_INT8, 0, o->big, 0, o->funcs);
    run_one(cc, CONF_F_SCAN, WEFT_INT32, WEFT_SUM, o->big, 1, o->funcs);
}

int main(int argc, char **argv)
{
    weft_comm_t world;
    conf_comm_t ccs[MAX_COMMS];
    options_t o;
    conf_plan_t full, sub;
    int n;
    double t0, elapsed;
    uint64_t total;

    setvbuf(stdout, NULL, _IOLBF, 0);
    parse(argc, argv, &o);
    mp_init_world(&world, NULL, NULL);
    if (getenv("WEFT_ALGO") && *getenv("WEFT_ALGO"))
        conf_algo = getenv("WEFT_ALGO");
    full = full_plan(&o);
    sub = sub_plan(&o);
    t0 = mp_now();

    n = conf_comms_create(world, ccs, MAX_COMMS, o.all_comms);
    if (o.illegal) {
        conf_run_illegal(&ccs[0]);
        conf_run_zero(&ccs[0]);
    }
    run_plan(&ccs[0], &full);
    if (o.big)
        run_big(&ccs[0], &o);
    for (int i = 1; i < n; i++) {
        run_plan(&ccs[i], &sub);
        if (o.big && o.subs_full)
            run_big(&ccs[i], &o);
    }
    if (o.all_comms)
        conf_run_overlap(ccs, n);
    conf_comms_destroy(ccs, n);
    conf_free_ops();

    /* every rank's count, summed at rank 0 */
    total = conf_cases;
    MP_CHECK(weft_reduce(WEFT_IN_PLACE, &total, 1, WEFT_UINT64, WEFT_SUM, 0, world));
    elapsed = mp_now() - t0;
    if (mp_rank == 0)
        printf("conf: %d ranks, algo %s: %llu cases on rank 0, %llu over all ranks, "
               "checked in %.1f s\n", mp_size, conf_algo, (unsigned long long)conf_cases,
               (unsigned long long)total, elapsed);
    MP_CHECK(weft_comm_destroy(world));
    return 0;
}
