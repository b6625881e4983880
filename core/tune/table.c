/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * table.c: the tuner's choice per call, cached per communicator, and
 * the predicted-time table it logs.
 *
 * A choice depends only on the job's parameters (identical on all ranks),
 * the communicator's shape (identical on all its ranks) and the call's
 * operation and size bucket (identical, as the ranks make the same call),
 * so every rank picks the same algorithm without talking. Within a bucket
 * (2^(b-1), 2^b] the choice is the one predicted for 2^b bytes; caching it
 * makes a call's selection a table lookup after the first of its bucket.
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/base/log.h"
#include "core/coll/shared/shared.h"
#include "core/tune/tune.h"

#define NBUCKETS 65              /* buckets 0 .. 64 of a size_t */
#define NOT_CHOSEN (-2)

/* The communicator's choices: pick[kind][even][bucket] is an algorithm id,
 * -1 when no algorithm has a model, NOT_CHOSEN before the first call of
 * that bucket. */
struct weft__tune_cache {
    short pick[WEFT__COLL_NKINDS][2][NBUCKETS];
    weft__tune_shape_t shape;
    /* adapt.c's entries of the even forms (malloc'd), NULL until the
     * first call. */
    weft__tune_adapt_t *adapt[WEFT__COLL_NKINDS][NBUCKETS];
};

int weft__tune_bucket(size_t bytes)
{
    /* Every call looks its bucket up (twice where adapt.c times it): the
     * bit length of bytes - 1, in one instruction rather than a loop. */
    return bytes <= 1 ? 0 : 64 - __builtin_clzll((unsigned long long)(bytes - 1));
}

static size_t bucket_bytes(int b)
{
    return b >= 64 ? SIZE_MAX : (size_t)1 << b;
}

int weft__tune_applies(const weft__algo_t *a, const weft__tune_shape_t *s, int even,
                       size_t bytes)
{
    if ((a->needs & WEFT__ALGO_NEEDS_EVEN) && !even)
        return 0;
    if ((a->needs & WEFT__ALGO_NEEDS_NODES_CONTIG) && !s->contiguous)
        return 0;
    if ((a->needs & WEFT__ALGO_NEEDS_SHARED) && (!s->shared || bytes > WEFT__SHARED_SLOT))
        return 0;
    if ((a->needs & WEFT__ALGO_NEEDS_SEGMENT) &&
        (!s->shared || s->ranks > WEFT__SHARED_PIPE_RANKS))
        return 0;
    return 1;
}

int weft__tune_best(const weft__tune_params_t *p, const weft__tune_shape_t *s, int kind,
                    size_t bytes, int even, int flat_only, double *t)
{
    const weft__algo_t *algos = weft__algos;
    double best_t = 0;
    int best = -1;

    for (int i = 0; i < WEFT__ALGO_COUNT; i++) {
        weft__tune_cost_fn cost;
        double ti;

        /* Node-aware algorithms pay off only with several ranks on
         * several nodes; elsewhere they are the flat one plus phases. */
        if (algos[i].hierarchical && (flat_only || s->nodes < 2 || s->per_node < 2))
            continue;
        if ((int)algos[i].kind != kind || !weft__tune_applies(&algos[i], s, even, bytes))
            continue;
        /* No formula, no automatic choice: it runs only when forced. */
        if (!(cost = weft__tune_cost_of(i)))
            continue;
        ti = cost(p, s, bytes);
        if (best < 0 || ti < best_t) {
            best = i;
            best_t = ti;
        }
    }
    if (t)
        *t = best_t;
    return best;
}

void weft__tune_shape_of(const struct weft_comm *comm, weft__tune_shape_t *s)
{
    s->ranks = comm->size;
    s->nodes = comm->nodes.nnodes;
    s->per_node = comm->nodes.max_per_node;
    s->contiguous = comm->nodes.contiguous;
    s->shared = weft__shared_usable(comm);
    s->stream_from =
        (double)weft__shared_stream_default(weft__instance_llc_bytes(comm->inst));
}

/* comm's destructor (weft__comm_add_destructor): frees the cache. */
static void cache_free(struct weft_comm *comm, void *arg)
{
    struct weft__tune_cache *tc = arg;

    for (int k = 0; k < WEFT__COLL_NKINDS; k++)
        for (int b = 0; b < NBUCKETS; b++)
            free(tc->adapt[k][b]);
    free(tc);
    comm->tune = NULL;
}

/* One line of the table to f, or to the TUNING log. */
static void emit(FILE *f, const char *line)
{
    if (f)
        fprintf(f, "%s\n", line);
    else
        WEFT_INFO(TUNING, "%s", line);
}

static void format_bytes(char *buf, size_t cap, size_t bytes)
{
    if (bytes >= (1u << 30) && bytes % (1u << 30) == 0)
        snprintf(buf, cap, "%zuG", bytes >> 30);
    else if (bytes >= (1u << 20) && bytes % (1u << 20) == 0)
        snprintf(buf, cap, "%zuM", bytes >> 20);
    else if (bytes >= (1u << 10) && bytes % (1u << 10) == 0)
        snprintf(buf, cap, "%zuK", bytes >> 10);
    else
        snprintf(buf, cap, "%zu", bytes);
}

int weft__tune_predict(const weft__tune_params_t *p, const weft__tune_shape_t *s, int id,
                       size_t bytes, double *t)
{
    const weft__algo_t *a = &weft__algos[id];
    weft__tune_cost_fn cost = weft__tune_cost_of(id);

    if (!cost || !weft__tune_applies(a, s, 1, bytes) ||
        (a->hierarchical && (s->nodes < 2 || s->per_node < 2)))
        return 0;
    *t = cost(p, s, bytes);
    return 1;
}

/* The rows of one operation: a size per line, each algorithm's predicted
 * microseconds (a dash where it has no model or does not apply) and the
 * choice. */
static void print_kind(FILE *f, const weft__tune_params_t *p, const weft__tune_shape_t *s,
                       int kind)
{
    const weft__algo_t *algos = weft__algos;
    int n = WEFT__ALGO_COUNT;
    char line[512];
    int len, first = -1;

    len = snprintf(line, sizeof(line), "%-14s %6s", "", "bytes");
    for (int i = 0; i < n; i++) {
        if ((int)algos[i].kind != kind)
            continue;
        if (first < 0) {
            first = i;
            len = snprintf(line, sizeof(line), "%-14s %6s", algos[i].op_name, "bytes");
        }
        len += snprintf(line + len, sizeof(line) - (size_t)len, " %12s", algos[i].name);
    }
    if (first < 0)
        return;
    snprintf(line + len, sizeof(line) - (size_t)len, "  -> choice");
    emit(f, line);
    /* Barrier moves nothing: one row. */
    for (int b = kind == WEFT__COLL_BARRIER ? 0 : 3; b <= (kind == WEFT__COLL_BARRIER ? 0 : 30);
         b++) {
        size_t bytes = kind == WEFT__COLL_BARRIER ? 0 : bucket_bytes(b);
        int pick = weft__tune_best(p, s, kind, bytes, 1, 0, NULL);
        char size[16];

        format_bytes(size, sizeof(size), bytes);
        len = snprintf(line, sizeof(line), "%-14s %6s", "", size);
        for (int i = first; i < n && (int)algos[i].kind == kind; i++) {
            double t;

            if (weft__tune_predict(p, s, i, bytes, &t))
                len += snprintf(line + len, sizeof(line) - (size_t)len, " %12.1f", t * 1e6);
            else
                len += snprintf(line + len, sizeof(line) - (size_t)len, " %12s", "-");
        }
        snprintf(line + len, sizeof(line) - (size_t)len, "  -> %s",
                 pick >= 0 ? algos[pick].name : algos[first].name);
        emit(f, line);
    }
}

void weft__tune_print_table(FILE *f, const weft__tune_params_t *p, const weft__tune_shape_t *s)
{
    char line[256];

    snprintf(line, sizeof(line), "predicted microseconds for %d ranks on %d nodes (up to %d a "
             "node%s%s): intra a=%.2fus b=%.3fns/B, inter a=%.2fus b=%.3fns/B, g=%.3fns/B",
             s->ranks, s->nodes, s->per_node, s->contiguous ? "" : ", interleaved",
             s->shared ? ", shared segment" : "",
             p->intra.alpha * 1e6, p->intra.beta * 1e9, p->inter.alpha * 1e6,
             p->inter.beta * 1e9, p->gamma * 1e9);
    emit(f, line);
    for (int k = 0; k < WEFT__COLL_NKINDS; k++)
        print_kind(f, p, s, k);
}

static struct weft__tune_cache *cache_of(struct weft_comm *comm)
{
    struct weft__tune_cache *tc = comm->tune;

    if (tc)
        return tc;
    if (!(tc = malloc(sizeof(*tc))))
        return NULL;
    if (weft__comm_add_destructor(comm, cache_free, tc) != WEFT_SUCCESS) {
        free(tc);
        return NULL;
    }
    for (int k = 0; k < WEFT__COLL_NKINDS; k++) {
        for (int e = 0; e < 2; e++)
            for (int b = 0; b < NBUCKETS; b++)
                tc->pick[k][e][b] = NOT_CHOSEN;
        for (int b = 0; b < NBUCKETS; b++)
            tc->adapt[k][b] = NULL;
    }
    weft__tune_shape_of(comm, &tc->shape);
    comm->tune = tc;
    /* Every rank holds the same table: its first rank prints it. */
    if (comm->rank == 0 && weft__log_enabled(WEFT__LOG_INFO, WEFT__SUBSYS_TUNING)) {
        WEFT_INFO(TUNING, "communicator of %d ranks (context %u), parameters %s",
                  comm->size, comm->ctx.context_id,
                  weft__tune_source_name(comm->inst->tune->source));
        weft__tune_print_table(NULL, &comm->inst->tune->params, &tc->shape);
    }
    return tc;
}

int weft__tune_pick(struct weft_comm *comm, int kind, size_t bytes, int even)
{
    struct weft__tune_cache *tc = cache_of(comm);
    weft__tune_shape_t shape;
    int b = weft__tune_bucket(bytes);
    short *slot;

    if (!tc) {
        /* Out of memory for the cache: choose uncached, still the same
         * choice as the other ranks. */
        weft__tune_shape_of(comm, &shape);
        return weft__tune_best(&comm->inst->tune->params, &shape, kind, bucket_bytes(b), even,
                               0, NULL);
    }
    slot = &tc->pick[kind][even != 0][b];
    if (*slot == NOT_CHOSEN)
        *slot = (short)weft__tune_best(&comm->inst->tune->params, &tc->shape, kind,
                                       bucket_bytes(b), even, 0, NULL);
    return *slot;
}

weft__tune_adapt_t **weft__tune_adapt_slot(struct weft_comm *comm, int kind, size_t bytes)
{
    struct weft__tune_cache *tc = cache_of(comm);

    return tc ? &tc->adapt[kind][weft__tune_bucket(bytes)] : NULL;
}

int weft__tune_candidates(struct weft_comm *comm, int kind, size_t bytes, int *ids,
                          double *t, int cap)
{
    struct weft__tune_cache *tc = cache_of(comm);
    size_t at = bucket_bytes(weft__tune_bucket(bytes));
    int n = 0;

    if (!tc)
        return 0;
    for (int i = 0; i < WEFT__ALGO_COUNT && n < cap; i++)
        if ((int)weft__algos[i].kind == kind &&
            weft__tune_predict(&comm->inst->tune->params, &tc->shape, i, at, &t[n]))
            ids[n++] = i;
    return n;
}
