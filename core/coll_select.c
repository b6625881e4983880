/*
 * coll_select.c: which algorithm runs a collective.
 *
 * Each operation has a flat algorithm, correct everywhere, and may have
 * others that pay off in some shapes; this file holds the choice, so that
 * the tuner of a later release replaces one function. Today: the
 * node-aware variants when the communicator spans several nodes with
 * several ranks on some of them and the message is small or medium (the
 * network's latency dominates); the flat ones otherwise, allreduce's by
 * size: recursive doubling for small messages, Rabenseifner's for medium
 * ones, the pipelined ring above. WEFT_ALGO forces
 * a choice per operation ("allreduce:ring,bcast:hier"). The table lists
 * every algorithm with what it needs of a call (NEEDS_*); one forced where
 * it cannot run gives way to the automatic choice.
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/coll.h"
#include "core/error.h"
#include "core/log.h"

/* Above this many bytes the flat ring's bandwidth wins over funnelling
 * each node through one rank. */
#define HIER_MAX_BYTES (1u << 20)
/* Allreduce: recursive doubling (log2 n steps of the whole buffer) up to
 * RD_MAX_BYTES, Rabenseifner (2 log2 n steps, the ring's bandwidth) up to
 * RAB_MAX_BYTES, the pipelined ring above. At 4 ranks on loopback sockets:
 * rd 38-75 us up to 32 KiB against the ring's 122-172; at 16 KiB rd 121,
 * Rabenseifner 115, ring 255; at 256 KiB 797, 567, 778; at 4 MiB 39.5,
 * 19.7, 24.2 ms. The tuner will measure this per machine. */
#define RD_MAX_BYTES (16u << 10)
#define RAB_MAX_BYTES (8u << 20)
/* Reduce-scatter by recursive doubling over the whole buffer up to this
 * many bytes in all: at 4 ranks 29-32 us up to 4 KiB against the ring's
 * 62-69, even at 32 KiB, behind at 256 KiB. */
#define RS_RD_MAX_BYTES (32u << 10)
/* Bruck's allgather, ceil(log2 n) steps, up to this much gathered: at 4
 * ranks on loopback sockets 40-45 us up to 8 KiB against the ring's 57-95,
 * even at 32 KiB, behind at 128 KiB. */
#define BRUCK_MAX_BYTES (32u << 10)
/* All-to-all exchanges all posted at once up to this many bytes per rank
 * (sent in all): beyond, pairwise steps keep fewer messages in flight. */
#define SCATTERED_MAX_BYTES (64u << 10)

/* What an algorithm needs of a call besides its kind. A tuner decision can
 * never be wrong, only slow: an entry is offered only where it can run. */
enum {
    NEEDS_EVEN = 1 << 0,        /* equal blocks in rank order (the even forms) */
    NEEDS_NODES_CONTIG = 1 << 1 /* each node's ranks consecutive */
};

typedef struct algo {
    weft__coll_kind_t kind;
    const char *op_name;      /* as written in WEFT_ALGO */
    const char *name;
    void (*set)(weft__coll_t *c);
    int hierarchical;
    int needs;                /* NEEDS_* */
} algo_t;

/* Costs for the tuner, with p ranks, n bytes per rank (the whole vector
 * for allreduce, reduce and bcast; one block for the others), alpha the
 * latency of a message, beta the time per byte, gamma the time per byte
 * reduced and c = n / WEFT_COLL_CHUNK the pieces of a pipeline. The
 * entries without one are described in their files. */
static const algo_t algos[] = {
    { WEFT__COLL_BARRIER, "barrier", "dissemination", weft__barrier_dissemination, 0, 0 },
    { WEFT__COLL_BARRIER, "barrier", "hier", weft__barrier_hier, 1, 0 },
    { WEFT__COLL_BCAST, "bcast", "binomial", weft__bcast_binomial, 0, 0 },
    { WEFT__COLL_BCAST, "bcast", "hier", weft__bcast_hier, 1, 0 },
    /* (c + p - 2) (alpha + n / c beta) */
    { WEFT__COLL_BCAST, "bcast", "chain", weft__bcast_chain, 0, 0 },
    /* p alpha + 2 (p - 1) / p n beta (linear scatter, ring allgather) */
    { WEFT__COLL_BCAST, "bcast", "scatter_allgather", weft__bcast_scatter_allgather, 0, 0 },
    { WEFT__COLL_REDUCE, "reduce", "binomial", weft__reduce_binomial, 0, 0 },
    { WEFT__COLL_REDUCE, "reduce", "hier", weft__reduce_hier, 1, 0 },
    /* (p + c) alpha + 2 (p - 1) / p n beta + (p - 1) / p n gamma */
    { WEFT__COLL_REDUCE, "reduce", "ring_gather", weft__reduce_ring_gather, 0, 0 },
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
    { WEFT__COLL_ALLGATHER, "allgather", "ring", weft__allgatherv_ring, 0, 0 },
    { WEFT__COLL_ALLGATHER, "allgather", "bruck", weft__allgather_bruck, 0, NEEDS_EVEN },
    { WEFT__COLL_ALLGATHER, "allgather", "hier", weft__allgather_hier, 1,
      NEEDS_EVEN | NEEDS_NODES_CONTIG },
    /* (log2(p) + 2) alpha + (p - 1) n beta, with the ranks beyond a power of
     * two folded in and out (2 more messages, p n bytes the last) */
    { WEFT__COLL_ALLGATHER, "allgather", "rd", weft__allgatherv_rd, 0, 0 },
    { WEFT__COLL_REDUCE_SCATTER, "reduce_scatter", "ring", weft__reduce_scatterv_ring, 0, 0 },
    { WEFT__COLL_REDUCE_SCATTER, "reduce_scatter", "rd", weft__reduce_scatterv_rd, 0, 0 },
    /* (p - 1) alpha + (p - 1) n beta + (p - 1) n gamma */
    { WEFT__COLL_REDUCE_SCATTER, "reduce_scatter", "pairwise", weft__reduce_scatterv_pairwise,
      0, 0 },
    { WEFT__COLL_ALLTOALL, "alltoall", "pairwise", weft__alltoallv_pairwise, 0, 0 },
    { WEFT__COLL_ALLTOALL, "alltoall", "scattered", weft__alltoallv_scattered, 0, 0 },
    /* log2(p) alpha + log2(p) p / 2 n beta (plus two local rotations) */
    { WEFT__COLL_ALLTOALL, "alltoall", "bruck", weft__alltoall_bruck, 0, NEEDS_EVEN },
    /* (p - 1) alpha + (p - 1) n beta at the root */
    { WEFT__COLL_GATHER, "gather", "linear", weft__gatherv_linear, 0, 0 },
    /* log2(p) alpha + (p - 1) n beta at the root */
    { WEFT__COLL_GATHER, "gather", "binomial", weft__gather_binomial, 0, NEEDS_EVEN },
    /* (p - 1) alpha + (p - 1) n beta at the root */
    { WEFT__COLL_SCATTER, "scatter", "linear", weft__scatterv_linear, 0, 0 },
    /* log2(p) alpha + (p - 1) n beta at the root */
    { WEFT__COLL_SCATTER, "scatter", "binomial", weft__scatter_binomial, 0, NEEDS_EVEN },
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

static int find_algo(weft__coll_kind_t kind, const char *name)
{
    for (size_t i = 0; i < NALGOS; i++)
        if (algos[i].kind == kind && !strcmp(algos[i].name, name))
            return (int)i;
    return -1;
}

static int applicable(const algo_t *a, weft_comm_t comm, int even)
{
    if ((a->needs & NEEDS_EVEN) && !even)
        return 0;
    if ((a->needs & NEEDS_NODES_CONTIG) && !comm->nodes.contiguous)
        return 0;
    return 1;
}

void weft__coll_choose(weft__coll_t *c, weft_comm_t comm, weft__coll_kind_t kind, size_t bytes,
                       int even)
{
    const weft__node_map_t *m = &comm->nodes;
    int flat = -1, hier = -1, pick;

    for (size_t i = 0; i < NALGOS; i++) {
        if (algos[i].kind != kind)
            continue;
        if (algos[i].hierarchical)
            hier = (int)i;
        else if (flat < 0)
            flat = (int)i;
    }
    if (flat < 0)
        return; /* no choice for this operation: the caller set its algorithm */
    pick = flat;
    if (kind == WEFT__COLL_ALLREDUCE)
        pick = find_algo(kind, bytes <= RD_MAX_BYTES ? "rd" : bytes <= RAB_MAX_BYTES
                                                             ? "rabenseifner" : "ring");
    if (kind == WEFT__COLL_ALLGATHER && even && bytes * (size_t)comm->size <= BRUCK_MAX_BYTES)
        pick = find_algo(kind, "bruck");
    if (kind == WEFT__COLL_REDUCE_SCATTER && bytes <= RS_RD_MAX_BYTES)
        pick = find_algo(kind, "rd");
    if (kind == WEFT__COLL_ALLTOALL && bytes <= SCATTERED_MAX_BYTES)
        pick = find_algo(kind, "scattered");
    if (hier >= 0 && m->nnodes > 1 && m->max_per_node > 1 && bytes <= HIER_MAX_BYTES &&
        applicable(&algos[hier], comm, even))
        pick = hier;
    if (forced_set && forced[kind] >= 0) {
        if (applicable(&algos[forced[kind]], comm, even))
            pick = forced[kind];
        else
            WEFT_INFO(COLL, "WEFT_ALGO %s:%s does not apply to this call; using %s",
                      algos[forced[kind]].op_name, algos[forced[kind]].name, algos[pick].name);
    }
    algos[pick].set(c);
    /* A flat allreduce ring visits each node's ranks in a row, so that it
     * crosses between nodes once per node rather than at every step. */
    if (kind == WEFT__COLL_ALLREDUCE && !strcmp(algos[pick].name, "ring") && m->nnodes > 1 &&
        !m->contiguous)
        weft__coll_set_group(c, comm->size, m->my_order, m->order);
}

void weft__allreduce_flat(weft__coll_t *c, size_t bytes)
{
    if (bytes <= RD_MAX_BYTES)
        weft__allreduce_rd(c);
    else if (bytes <= RAB_MAX_BYTES)
        weft__allreduce_rabenseifner(c);
    else
        weft__allreduce_ring(c);
}
