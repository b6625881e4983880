/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * registry.h: every collective algorithm, numbered.
 *
 * An algorithm's id indexes the registry's table (registry.c), which says
 * which operation it serves, its names in WEFT_ALGO ("allreduce:ring"),
 * the function that sets it on a collective and what it needs of a call;
 * the tuner's cost models (tune/model.c) are indexed by the same ids, and
 * a unit test fails when an id lacks an entry or a model. The ids of one
 * operation are consecutive, and its first flat (not node-aware) one is
 * its default, correct everywhere: it runs where nothing else is chosen.
 * Ties between predicted times go to the lower id.
 */
#ifndef WEFT_CORE_REGISTRY_H
#define WEFT_CORE_REGISTRY_H

#include "core/coll/coll.h"

typedef enum weft__algo_id {
    WEFT__ALGO_BARRIER_DISSEMINATION,
    WEFT__ALGO_BARRIER_HIER,
    WEFT__ALGO_BARRIER_SHARED,
    WEFT__ALGO_BCAST_BINOMIAL,
    WEFT__ALGO_BCAST_HIER,
    WEFT__ALGO_BCAST_CHAIN,
    WEFT__ALGO_BCAST_SCATTER_ALLGATHER,
    WEFT__ALGO_BCAST_SHARED,
    WEFT__ALGO_BCAST_SHARED_PIPELINED,
    WEFT__ALGO_REDUCE_BINOMIAL,
    WEFT__ALGO_REDUCE_HIER,
    WEFT__ALGO_REDUCE_RING_GATHER,
    WEFT__ALGO_REDUCE_SHARED,
    WEFT__ALGO_ALLREDUCE_RING,
    WEFT__ALGO_ALLREDUCE_RD,
    WEFT__ALGO_ALLREDUCE_RABENSEIFNER,
    WEFT__ALGO_ALLREDUCE_HIER,
    WEFT__ALGO_ALLREDUCE_TREE,
    WEFT__ALGO_ALLREDUCE_DBTREE,
    WEFT__ALGO_ALLREDUCE_DIRECT,
    WEFT__ALGO_ALLREDUCE_SHARED,
    WEFT__ALGO_ALLREDUCE_SHARED_PIPELINED,
    WEFT__ALGO_ALLGATHER_RING,
    WEFT__ALGO_ALLGATHER_BRUCK,
    WEFT__ALGO_ALLGATHER_HIER,
    WEFT__ALGO_ALLGATHER_RD,
    WEFT__ALGO_ALLGATHER_SHARED,
    WEFT__ALGO_ALLGATHER_SHARED_PIPELINED,
    WEFT__ALGO_REDUCE_SCATTER_RING,
    WEFT__ALGO_REDUCE_SCATTER_RD,
    WEFT__ALGO_REDUCE_SCATTER_PAIRWISE,
    WEFT__ALGO_REDUCE_SCATTER_SHARED,
    WEFT__ALGO_REDUCE_SCATTER_SHARED_PIPELINED,
    WEFT__ALGO_ALLTOALL_PAIRWISE,
    WEFT__ALGO_ALLTOALL_SCATTERED,
    WEFT__ALGO_ALLTOALL_BRUCK,
    WEFT__ALGO_ALLTOALL_SHARED,
    WEFT__ALGO_ALLTOALL_SHARED_PIPELINED,
    WEFT__ALGO_GATHER_LINEAR,
    WEFT__ALGO_GATHER_BINOMIAL,
    WEFT__ALGO_SCATTER_LINEAR,
    WEFT__ALGO_SCATTER_BINOMIAL,
    WEFT__ALGO_SCAN_RD,
    WEFT__ALGO_EXSCAN_RD,
    WEFT__ALGO_COUNT
} weft__algo_id_t;

/* What an algorithm needs of a call besides its kind. A tuner decision can
 * never be wrong, only slow: an algorithm is offered only where it can run. */
enum {
    WEFT__ALGO_NEEDS_EVEN = 1 << 0,        /* equal blocks in rank order (even forms) */
    WEFT__ALGO_NEEDS_NODES_CONTIG = 1 << 1, /* each node's ranks consecutive */
    /* a communicator on one node with a shared segment
     * (weft__shared_usable), and at most WEFT__SHARED_SLOT bytes */
    WEFT__ALGO_NEEDS_SHARED = 1 << 2,
    /* the same segment, any size, at most WEFT__SHARED_PIPE_RANKS ranks */
    WEFT__ALGO_NEEDS_SEGMENT = 1 << 3
};

typedef struct weft__algo {
    weft__coll_kind_t kind;
    const char *op_name;      /* as written in WEFT_ALGO */
    const char *name;
    void (*set)(weft__coll_t *c);
    int hierarchical;         /* node-aware: phases within and between nodes */
    int needs;                /* WEFT__ALGO_NEEDS_* */
} weft__algo_t;

/* The table, WEFT__ALGO_COUNT entries indexed by id. */
extern const weft__algo_t weft__algos[WEFT__ALGO_COUNT];

#endif /* WEFT_CORE_REGISTRY_H */
