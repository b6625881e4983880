/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * probe.c: agreeing on the tuner's parameters at init, measuring them
 * when asked (see tune.h).
 *
 * Rank 0 alone reads WEFT_TUNE and WEFT_TUNE_FILE (mode.c) and broadcasts
 * what it decided, so ranks started with different environments still
 * agree (and a rank never waits in a probe the others skip). The probe is a
 * collective on the world communicator, run through the collective engine
 * like any other: its messages travel on the internal context under the
 * collective's own sequence number, so user traffic cannot match them.
 * It runs inside weft_init, before the user holds a communicator: run
 * lazily in a user's first (possibly nonblocking) collective, its blocking
 * exchange could wait on a rank that is itself blocked in a collective on
 * another communicator.
 *
 * What it measures: neighbouring ranks exchange messages of a few sizes,
 * all pairs at once as the steps of a collective do, first pairs on one
 * node (the intra-node transport), then pairs on neighbouring nodes (the
 * network); alpha is the smallest exchange's time, beta the slope between
 * the two largest, so that latency and streaming rate are each measured
 * where they dominate. gamma times the reduction kernel on float32 sums.
 * alpha is the median of a few repetitions: a collective pays a typical
 * step's latency, not the luckiest one's (on a quiet 16-core machine the
 * best exchange of 8 bytes took 7.5 us, the collectives' steps about 12).
 * beta comes from the best times: what delays a step (a process losing
 * its processor) adds per message, which alpha already holds, and the
 * slope between two medians of a few large exchanges was too noisy to
 * steer by (0.3 to 0.9 ns/B from one job to the next). The gamma kernel,
 * which involves no other process, keeps its best time. Each figure is
 * then the maximum over the ranks: the slowest pair paces a collective.
 */
#include "config.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/base/error.h"
#include "core/base/log.h"
#include "core/coll/algo/algo.h"
#include "core/dt/reduce.h"
#include "core/tune/tune.h"

/* Exchange sizes and repetitions (after one untimed warm-up each): at 4
 * ranks on loopback TCP both link classes together take a few ms. */
static const size_t probe_sizes[] = { 8, 32768, 262144 };
static const int probe_reps[] = { 10, 5, 4 };
#define NSIZES (sizeof(probe_sizes) / sizeof(probe_sizes[0]))
#define MAX_REPS 128
#define MAX_PROBE_BYTES 262144
/* Larger than a core's cache, as the data of a large reduction is. */
#define GAMMA_BYTES (1 << 20)

enum { CLASS_INTRA, CLASS_INTER, NCLASSES };

typedef struct probe {
    int partner[NCLASSES];   /* comm rank, or -1 */
    int cls, size, rep;      /* the exchange in flight */
    int scale;               /* repetitions multiplier */
    int posted;
    double start;
    double typical[NCLASSES][NSIZES];  /* median of the timed repetitions */
    double best[NCLASSES][NSIZES];     /* their minimum */
    double times[MAX_REPS];            /* of the exchange size in flight */
    char *sendbuf, *recvbuf;
} probe_t;

static double now_s(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void probe_free(void *p)
{
    probe_t *pr = p;

    free(pr->sendbuf);
    free(pr->recvbuf);
    free(pr);
}

/* Pairs: on a node, its ranks 2i and 2i+1; across nodes, the ranks at the
 * same index on nodes 2j and 2j+1. Symmetric, so both ends agree. */
static void find_partners(const weft_comm_t comm, probe_t *pr)
{
    const weft__node_map_t *m = &comm->nodes;
    int node = m->my_node, me = m->my_index, other = node ^ 1;
    int on_node = m->node_start[node + 1] - m->node_start[node];

    pr->partner[CLASS_INTRA] = (me ^ 1) < on_node ? m->order[m->node_start[node] + (me ^ 1)]
                                                   : -1;
    pr->partner[CLASS_INTER] = -1;
    if (other < m->nnodes && me < m->node_start[other + 1] - m->node_start[other])
        pr->partner[CLASS_INTER] = m->order[m->node_start[other] + me];
}

static int reps_of(const probe_t *pr)
{
    int n = probe_reps[pr->size] * pr->scale;

    return n < MAX_REPS ? n : MAX_REPS;
}

static int by_value(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;

    return (x > y) - (x < y);
}

static double median(double *t, int n)
{
    qsort(t, (size_t)n, sizeof(*t), by_value);
    return n % 2 ? t[n / 2] : (t[n / 2 - 1] + t[n / 2]) / 2;
}

static weft_result_t probe_step(weft__coll_t *c, int *done)
{
    probe_t *pr = c->ctx;
    weft_p2p_op_t ops[2];

    if (pr->posted) {
        double t = now_s() - pr->start;

        /* Repetition 0 warms up (connections, caches): not timed. */
        if (pr->rep > 0)
            pr->times[pr->rep - 1] = t;
        if (++pr->rep > reps_of(pr)) {
            pr->typical[pr->cls][pr->size] = median(pr->times, reps_of(pr));
            pr->best[pr->cls][pr->size] = pr->times[0]; /* sorted by median() */
            pr->rep = 0;
            if (++pr->size == (int)NSIZES) {
                pr->size = 0;
                pr->cls++;
            }
        }
    }
    while (pr->cls < NCLASSES && pr->partner[pr->cls] < 0)
        pr->cls++;
    if (pr->cls == NCLASSES) {
        *done = 1;
        return WEFT_SUCCESS;
    }
    ops[0] = (weft_p2p_op_t){ .kind = WEFT_P2P_SEND, .buf = pr->sendbuf,
                              .count = probe_sizes[pr->size], .dt = WEFT_UINT8,
                              .peer = pr->partner[pr->cls] };
    ops[1] = (weft_p2p_op_t){ .kind = WEFT_P2P_RECV, .buf = pr->recvbuf,
                              .count = probe_sizes[pr->size], .dt = WEFT_UINT8,
                              .peer = pr->partner[pr->cls] };
    pr->posted = 1;
    pr->start = now_s();
    return weft__coll_post(c, 2, ops);
}

/* The best time of the reduction kernel over GAMMA_BYTES, per byte. */
static double measure_gamma(int scale)
{
    size_t count = GAMMA_BYTES / sizeof(float);
    float *a = calloc(count, sizeof(float)), *b = calloc(count, sizeof(float));
    double best = 0;

    if (!a || !b) {
        free(a);
        free(b);
        return 0;
    }
    /* Written, so that the pages are real rather than the zero page. */
    memset(a, 1, GAMMA_BYTES);
    memset(b, 2, GAMMA_BYTES);
    for (int i = 0; i <= 3 * scale; i++) {
        double t0 = now_s(), t;

        weft__reduce(a, a, b, count, WEFT_FLOAT32, WEFT_SUM);
        t = now_s() - t0;
        if (i > 0 && (best == 0 || t < best))
            best = t;
    }
    free(a);
    free(b);
    return best / GAMMA_BYTES;
}

static weft_result_t run_blocking(weft_comm_t comm, weft__coll_t *c, weft__coll_kind_t kind)
{
    return weft__coll_start(comm, c, kind, WEFT__COLL_BLOCKING);
}

static weft_result_t bcast_doubles(weft_comm_t comm, double *v, size_t n)
{
    weft__coll_t *c = weft__coll_new(NULL, v, n, sizeof(double), WEFT_FLOAT64, WEFT_SUM, 0);

    if (!c)
        return WEFT_ERR_NO_MEMORY;
    weft__bcast_binomial(c);
    return run_blocking(comm, c, WEFT__COLL_BCAST);
}

static weft_result_t max_doubles(weft_comm_t comm, double *v, size_t n)
{
    weft__coll_t *c = weft__coll_new(WEFT_IN_PLACE, v, n, sizeof(double), WEFT_FLOAT64,
                                     WEFT_MAX, 0);

    if (!c)
        return WEFT_ERR_NO_MEMORY;
    weft__allreduce_rd(c);
    return run_blocking(comm, c, WEFT__COLL_ALLREDUCE);
}

/* alpha from the smallest exchange's median, beta from the slope between
 * the two largest best times; a class nobody measured keeps its previous
 * values. */
static void fit(const double *typical, const double *best, weft__tune_link_t *l)
{
    double dt = best[NSIZES - 1] - best[NSIZES - 2];
    double ds = (double)(probe_sizes[NSIZES - 1] - probe_sizes[NSIZES - 2]);

    if (typical[0] <= 0 || best[NSIZES - 1] <= 0)
        return;
    l->alpha = typical[0];
    /* A slope lost in noise still leaves the average rate of the largest. */
    l->beta = dt > 0 ? dt / ds : best[NSIZES - 1] / (double)probe_sizes[NSIZES - 1];
}

/* Measures the parameters on every rank and keeps the maximum: all ranks
 * end with the same figures. */
static weft_result_t measure(weft_comm_t world, int scale, weft__tune_params_t *p)
{
    /* Medians, best times, gamma. */
    double v[2 * NCLASSES * NSIZES + 1] = { 0 };
    const size_t g = 2 * NCLASSES * NSIZES;
    weft__coll_t *c;
    probe_t *pr;
    weft_result_t rc;

    if (!(pr = calloc(1, sizeof(*pr))) || !(pr->sendbuf = calloc(1, MAX_PROBE_BYTES)) ||
        !(pr->recvbuf = malloc(MAX_PROBE_BYTES))) {
        rc = weft__error(WEFT_ERR_NO_MEMORY, "cannot allocate the tuning probe");
        goto out_free;
    }
    pr->scale = scale;
    find_partners(world, pr);
    if (!(c = weft__coll_new(NULL, NULL, 0, 1, WEFT_UINT8, WEFT_SUM, 0))) {
        rc = WEFT_ERR_NO_MEMORY;
        goto out_free;
    }
    /* pr is ours, not the collective's: its results outlive the wait
     * that frees c. */
    c->ctx = pr;
    c->step = probe_step;
    rc = run_blocking(world, c, WEFT__COLL_BARRIER);
    if (rc != WEFT_SUCCESS)
        goto out_free;
    memcpy(v, pr->typical, sizeof(pr->typical));
    memcpy(v + NCLASSES * NSIZES, pr->best, sizeof(pr->best));
    v[g] = measure_gamma(scale);
    rc = max_doubles(world, v, sizeof(v) / sizeof(v[0]));
    if (rc != WEFT_SUCCESS)
        goto out_free;
    fit(v + CLASS_INTRA * NSIZES, v + (NCLASSES + CLASS_INTRA) * NSIZES, &p->intra);
    fit(v + CLASS_INTER * NSIZES, v + (NCLASSES + CLASS_INTER) * NSIZES, &p->inter);
    if (v[g] > 0)
        p->gamma = v[g];
out_free:
    if (pr)
        probe_free(pr);
    return rc;
}

weft_result_t weft__tune_agree(weft_comm_t world, int reps_scale)
{
    weft__instance_t *inst = world->inst;
    weft__tune_params_t p;
    double msg[7], t0 = now_s();
    char why[512] = "";
    weft_result_t rc;
    int mode = WEFT__TUNE_MODE_DEFAULTS, adapt = 1;

    weft__tune_defaults(&p);
    if (world->rank == 0)
        mode = weft__tune_mode(reps_scale, &p, &adapt, why, sizeof(why));
    msg[0] = mode;
    msg[1] = p.intra.alpha;
    msg[2] = p.intra.beta;
    msg[3] = p.inter.alpha;
    msg[4] = p.inter.beta;
    msg[5] = p.gamma;
    msg[6] = adapt;
    if ((rc = bcast_doubles(world, msg, 7)) != WEFT_SUCCESS)
        return rc;
    mode = (int)msg[0];
    if (mode == WEFT__TUNE_MODE_ERROR)
        return weft__error(WEFT_ERR_INVALID_ARG, "%s", world->rank == 0 ? why :
                           "rank 0 could not set up the tuner (WEFT_TUNE, WEFT_TUNE_FILE, "
                           "WEFT_TUNE_ADAPT): rank 0's weft_init error says why");
    p.intra.alpha = msg[1];
    p.intra.beta = msg[2];
    p.inter.alpha = msg[3];
    p.inter.beta = msg[4];
    p.gamma = msg[5];
    adapt = msg[6] != 0;
    if (mode == WEFT__TUNE_MODE_MEASURE &&
        (rc = measure(world, reps_scale > 0 ? reps_scale : 1, &p)) != WEFT_SUCCESS)
        return rc;
    if (!inst->tune && !(inst->tune = calloc(1, sizeof(*inst->tune))))
        return weft__error(WEFT_ERR_NO_MEMORY, "cannot allocate the tuner's parameters");
    inst->tune->params = p;
    inst->tune->source = mode == WEFT__TUNE_MODE_MEASURE ? WEFT__TUNE_MEASURED
                         : mode == WEFT__TUNE_MODE_FILE ? WEFT__TUNE_FILE : WEFT__TUNE_DEFAULTS;
    inst->tune->probe_ms = mode == WEFT__TUNE_MODE_MEASURE ? (now_s() - t0) * 1e3 : 0;
    inst->tune->adapt = adapt;
    /* Identical on every rank: rank 0 tells. */
    if (world->rank == 0)
        WEFT_INFO(TUNING, "parameters %s%s: intra alpha %.2f us beta %.3f ns/B, inter alpha "
                  "%.2f us beta %.3f ns/B, gamma %.3f ns/B; took %.1f ms",
                  weft__tune_source_name(inst->tune->source),
                  mode == WEFT__TUNE_MODE_FILE ? " (WEFT_TUNE_FILE of rank 0)" : "",
                  p.intra.alpha * 1e6, p.intra.beta * 1e9, p.inter.alpha * 1e6, p.inter.beta * 1e9, p.gamma * 1e9,
                  (now_s() - t0) * 1e3);
    return WEFT_SUCCESS;
}

void weft__tune_fini(weft__instance_t *inst)
{
    free(inst->tune);
    inst->tune = NULL;
}
