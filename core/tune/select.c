/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * select.c: which algorithm runs a collective.
 *
 * Each operation has a flat algorithm, correct everywhere (the first
 * non-hierarchical entry of algos[] for its operation), and may have others
 * that pay off in some shapes. The tuner (tune.h) predicts each one's time
 * from its cost formula (tune/model.c) and the job's measured parameters
 * and runs the fastest that applies; an algorithm without a cost formula
 * is never chosen that way, only when WEFT_ALGO forces it
 * ("allreduce:ring,bcast:hier"). Without any formula for an operation, its
 * flat algorithm runs. The table lists
 * every algorithm with what it needs of a call (WEFT__ALGO_NEEDS_*); one
 * forced where it cannot run gives way to the automatic choice.
 */
#include "config.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/coll/coll.h"
#include "core/base/error.h"
#include "core/base/log.h"
#include "core/coll/shared/segment.h"
#include "core/tune/tune.h"

/* Costs for the tuner, with p ranks, n bytes per rank (the whole vector
 * for allreduce, reduce and bcast; one block for the others), alpha the
 * latency of a message, beta the time per byte, gamma the time per byte
 * reduced and c = n / WEFT_COLL_CHUNK the pieces of a pipeline; the
 * tuner's formulas are in tune/model.c. */
static const weft__coll_algo_t algos[] = {
    { WEFT__COLL_BARRIER, "barrier", "dissemination", weft__barrier_dissemination, 0, 0 },
    { WEFT__COLL_BARRIER, "barrier", "hier", weft__barrier_hier, 1, 0 },
    /* a/2: one counter per rank, read by all (the shared ones: coll/shared/small.c) */
    { WEFT__COLL_BARRIER, "barrier", "shared", weft__barrier_shared, 0, WEFT__ALGO_NEEDS_SHARED },
    { WEFT__COLL_BCAST, "bcast", "binomial", weft__bcast_binomial, 0, 0 },
    { WEFT__COLL_BCAST, "bcast", "hier", weft__bcast_hier, 1, 0 },
    /* (c + p - 2) (alpha + n / c beta) */
    { WEFT__COLL_BCAST, "bcast", "chain", weft__bcast_chain, 0, 0 },
    /* p alpha + 2 (p - 1) / p n beta (linear scatter, ring allgather) */
    { WEFT__COLL_BCAST, "bcast", "scatter_allgather", weft__bcast_scatter_allgather, 0, 0 },
    /* a/2 + n b (a copy in, a copy out: half a link transfer each) */
    { WEFT__COLL_BCAST, "bcast", "shared", weft__bcast_shared, 0, WEFT__ALGO_NEEDS_SHARED },
    /* (c + 1) a/2 + n b/2 + min(n, slot) b/2, c the chunks */
    { WEFT__COLL_BCAST, "bcast", "shared_pipelined", weft__bcast_shared_pipelined, 0,
      WEFT__ALGO_NEEDS_SEGMENT },
    { WEFT__COLL_REDUCE, "reduce", "binomial", weft__reduce_binomial, 0, 0 },
    { WEFT__COLL_REDUCE, "reduce", "hier", weft__reduce_hier, 1, 0 },
    /* (p + c) alpha + 2 (p - 1) / p n beta + (p - 1) / p n gamma */
    { WEFT__COLL_REDUCE, "reduce", "ring_gather", weft__reduce_ring_gather, 0, 0 },
    /* a/2 + n b/2 + (p - 1) n g */
    { WEFT__COLL_REDUCE, "reduce", "shared", weft__reduce_shared, 0, WEFT__ALGO_NEEDS_SHARED },
    { WEFT__COLL_ALLREDUCE, "allreduce", "ring", weft__allreduce_ring, 0, 0 },
    { WEFT__COLL_ALLREDUCE, "allreduce", "rd", weft__allreduce_rd, 0, 0 },
    { WEFT__COLL_ALLREDUCE, "allreduce", "rabenseifner", weft__allreduce_rabenseifner, 0, 0 },
    { WEFT__COLL_ALLREDUCE, "allreduce", "hier", weft__allreduce_hier, 1, 0 },
    /* (3 log2(p) + 2 c) alpha + 3 n beta + 2 n gamma (an inner rank of the
     * binary tree receives from two children and sends to two) */
    { WEFT__COLL_ALLREDUCE, "allreduce", "tree", weft__allreduce_tree, 0, 0 },
    /* (3 log2(p) + c) alpha + 2 n beta + n gamma (two trees, half each) */
    { WEFT__COLL_ALLREDUCE, "allreduce", "dbtree", weft__allreduce_dbtree, 0, 0 },
    /* alpha + (p - 1) n beta + (p - 1) n gamma */
    { WEFT__COLL_ALLREDUCE, "allreduce", "direct", weft__allreduce_direct, 0, 0 },
    /* a/2 + n b/2 + (p - 1) n g */
    { WEFT__COLL_ALLREDUCE, "allreduce", "shared", weft__allreduce_shared, 0,
      WEFT__ALGO_NEEDS_SHARED },
    /* a/2 + c a + (2p - 1)/p n b/2 + (p - 1)/p n g, c the chunks */
    { WEFT__COLL_ALLREDUCE, "allreduce", "shared_pipelined", weft__allreduce_shared_pipelined, 0,
      WEFT__ALGO_NEEDS_SEGMENT },
    { WEFT__COLL_ALLGATHER, "allgather", "ring", weft__allgatherv_ring, 0, 0 },
    { WEFT__COLL_ALLGATHER, "allgather", "bruck", weft__allgather_bruck, 0, WEFT__ALGO_NEEDS_EVEN },
    { WEFT__COLL_ALLGATHER, "allgather", "hier", weft__allgather_hier, 1,
      WEFT__ALGO_NEEDS_EVEN | WEFT__ALGO_NEEDS_NODES_CONTIG },
    /* (log2(p) + 2) alpha + (p - 1) n beta, with the ranks beyond a power of
     * two folded in and out (2 more messages, p n bytes the last) */
    { WEFT__COLL_ALLGATHER, "allgather", "rd", weft__allgatherv_rd, 0, 0 },
    /* a/2 + (p + 1) n b/2 */
    { WEFT__COLL_ALLGATHER, "allgather", "shared", weft__allgather_shared, 0,
      WEFT__ALGO_NEEDS_EVEN | WEFT__ALGO_NEEDS_SHARED },
    /* (c + 1) a/2 + p n b/2 + n g, c the chunks */
    { WEFT__COLL_ALLGATHER, "allgather", "shared_pipelined", weft__allgather_shared_pipelined, 0,
      WEFT__ALGO_NEEDS_EVEN | WEFT__ALGO_NEEDS_SEGMENT },
    { WEFT__COLL_REDUCE_SCATTER, "reduce_scatter", "ring", weft__reduce_scatterv_ring, 0, 0 },
    { WEFT__COLL_REDUCE_SCATTER, "reduce_scatter", "rd", weft__reduce_scatterv_rd, 0, 0 },
    /* (p - 1) alpha + (p - 1) n beta + (p - 1) n gamma */
    { WEFT__COLL_REDUCE_SCATTER, "reduce_scatter", "pairwise", weft__reduce_scatterv_pairwise,
      0, 0 },
    /* a/2 + n b/2 + (p - 1) n/p g */
    { WEFT__COLL_REDUCE_SCATTER, "reduce_scatter", "shared", weft__reduce_scatter_shared, 0,
      WEFT__ALGO_NEEDS_SHARED },
    /* (c + 1) a/2 + (p - 1)/p n b/2 + (p - 1)/p n g */
    { WEFT__COLL_REDUCE_SCATTER, "reduce_scatter", "shared_pipelined",
      weft__reduce_scatter_shared_pipelined, 0, WEFT__ALGO_NEEDS_SEGMENT },
    { WEFT__COLL_ALLTOALL, "alltoall", "pairwise", weft__alltoallv_pairwise, 0, 0 },
    { WEFT__COLL_ALLTOALL, "alltoall", "scattered", weft__alltoallv_scattered, 0, 0 },
    /* log2(p) alpha + log2(p) p / 2 n beta (plus two local rotations) */
    { WEFT__COLL_ALLTOALL, "alltoall", "bruck", weft__alltoall_bruck, 0, WEFT__ALGO_NEEDS_EVEN },
    /* a/2 + n b (the whole send buffer in, every block out) */
    { WEFT__COLL_ALLTOALL, "alltoall", "shared", weft__alltoall_shared, 0,
      WEFT__ALGO_NEEDS_EVEN | WEFT__ALGO_NEEDS_SHARED },
    /* (c + 1) a/2 + (p - 1)/p n b, c the chunks */
    { WEFT__COLL_ALLTOALL, "alltoall", "shared_pipelined", weft__alltoall_shared_pipelined, 0,
      WEFT__ALGO_NEEDS_EVEN | WEFT__ALGO_NEEDS_SEGMENT },
    /* (p - 1) alpha + (p - 1) n beta at the root */
    { WEFT__COLL_GATHER, "gather", "linear", weft__gatherv_linear, 0, 0 },
    /* log2(p) alpha + (p - 1) n beta at the root */
    { WEFT__COLL_GATHER, "gather", "binomial", weft__gather_binomial, 0, WEFT__ALGO_NEEDS_EVEN },
    /* (p - 1) alpha + (p - 1) n beta at the root */
    { WEFT__COLL_SCATTER, "scatter", "linear", weft__scatterv_linear, 0, 0 },
    /* log2(p) alpha + (p - 1) n beta at the root */
    { WEFT__COLL_SCATTER, "scatter", "binomial", weft__scatter_binomial, 0, WEFT__ALGO_NEEDS_EVEN },
    /* log2(p) alpha + log2(p) n beta + log2(p) n gamma */
    { WEFT__COLL_SCAN, "scan", "rd", weft__scan_rd, 0, 0 },
    { WEFT__COLL_EXSCAN, "exscan", "rd", weft__exscan_rd, 0, 0 },
};
#define NALGOS (sizeof(algos) / sizeof(algos[0]))

/* WEFT_ALGO's choice per operation (index into algos, or -1). */
static int forced[WEFT__COLL_NKINDS];
static int forced_set;

weft_result_t weft__coll_algo_parse(const char *spec)
{
    char buf[512], *save = NULL;

    for (int k = 0; k < WEFT__COLL_NKINDS; k++)
        forced[k] = -1;
    forced_set = 1;
    if (!spec || !*spec)
        return WEFT_SUCCESS;
    if (strlen(spec) >= sizeof(buf))
        return weft__error(WEFT_ERR_INVALID_ARG, "WEFT_ALGO is longer than %zu characters",
                           sizeof(buf) - 1);
    strcpy(buf, spec);
    for (char *item = strtok_r(buf, ",", &save); item; item = strtok_r(NULL, ",", &save)) {
        char *colon = strchr(item, ':'), valid[256] = "";
        int found = -1, op_known = 0;

        if (colon)
            *colon = '\0';
        for (size_t i = 0; i < NALGOS; i++) {
            if (strcmp(algos[i].op_name, item))
                continue;
            op_known = 1;
            snprintf(valid + strlen(valid), sizeof(valid) - strlen(valid), "%s%s",
                     valid[0] ? ", " : "", algos[i].name);
            if (colon && !strcmp(algos[i].name, colon + 1))
                found = (int)i;
        }
        if (!op_known) {
            for (size_t i = 0; i < NALGOS; i++)
                if (i == 0 || strcmp(algos[i].op_name, algos[i - 1].op_name))
                    snprintf(valid + strlen(valid), sizeof(valid) - strlen(valid), "%s%s",
                             valid[0] ? ", " : "", algos[i].op_name);
            return weft__error(WEFT_ERR_INVALID_ARG, "WEFT_ALGO: '%s' is not an operation "
                               "with a choice of algorithm (%s)", item, valid);
        }
        if (found < 0)
            return weft__error(WEFT_ERR_INVALID_ARG, "WEFT_ALGO: '%s' is not an algorithm of "
                               "%s (valid: %s)", colon ? colon + 1 : "", item, valid);
        forced[algos[found].kind] = found;
    }
    return WEFT_SUCCESS;
}

const weft__coll_algo_t *weft__coll_algos(size_t *n)
{
    *n = NALGOS;
    return algos;
}

int weft__coll_algo_applies(const weft__coll_algo_t *a, const weft__tune_shape_t *s, int even,
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

/* The first flat entry of each operation, -1 where it has none: looked up
 * once rather than on every call (a scan of the table was 3% of a small
 * allreduce). */
static int first_flat[WEFT__COLL_NKINDS];
static pthread_once_t first_flat_once = PTHREAD_ONCE_INIT;

static void first_flat_find(void)
{
    for (int k = 0; k < WEFT__COLL_NKINDS; k++)
        first_flat[k] = -1;
    for (size_t i = NALGOS; i-- > 0;)
        if (!algos[i].hierarchical)
            first_flat[algos[i].kind] = (int)i;
}

void weft__coll_choose(weft__coll_t *c, weft_comm_t comm, weft__coll_kind_t kind, size_t bytes,
                       int even)
{
    const weft__node_map_t *m = &comm->nodes;
    int flat, pick;

    pthread_once(&first_flat_once, first_flat_find);
    flat = first_flat[kind];
    if (flat < 0)
        return; /* no choice for this operation: the caller set its algorithm */
    /* An allgatherv's bytes are this rank's own block, which differs
     * between ranks, and its algorithms do not interoperate: it keeps the
     * flat ring unless forced. (The other v-forms may choose by their own
     * bytes: the all-to-all exchanges send the same messages, and the
     * rooted ones have only the linear algorithm.) */
    if (kind == WEFT__COLL_ALLGATHER && !even)
        pick = flat;
    else
        pick = weft__tune_pick(comm, kind, bytes, even);
    if (pick < 0)
        pick = flat;
    if (forced_set && forced[kind] >= 0) {
        weft__tune_shape_t shape;

        weft__tune_shape_of(comm, &shape);
        if (weft__coll_algo_applies(&algos[forced[kind]], &shape, even, bytes))
            pick = forced[kind];
        else
            WEFT_INFO(COLL, "WEFT_ALGO %s:%s does not apply to this call; using %s",
                      algos[forced[kind]].op_name, algos[forced[kind]].name, algos[pick].name);
    }
    /* The shared algorithms number their generations on comm. */
    c->comm = comm;
    algos[pick].set(c);
    /* A flat allreduce ring visits each node's ranks in a row, so that it
     * crosses between nodes once per node rather than at every step. */
    if (m->nnodes > 1 && !m->contiguous && algos[pick].set == weft__allreduce_ring)
        weft__coll_set_group(c, comm->size, m->my_order, m->order);
}

void weft__allreduce_flat(weft__coll_t *c, weft_comm_t comm, size_t bytes)
{
    const weft__tune_params_t *p = &comm->inst->tune;
    weft__tune_shape_t leaders = { comm->nodes.nnodes, comm->nodes.nnodes, 1, 1 };
    int pick = weft__tune_best(p, &leaders, WEFT__COLL_ALLREDUCE, bytes, 1, 1, NULL);

    if (pick < 0)
        weft__allreduce_ring(c);
    else
        algos[pick].set(c);
}
