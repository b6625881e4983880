/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * registry.c: the table of every collective algorithm (registry.h).
 */
#include "config.h"

#include "core/coll/algo/algo.h"
#include "core/coll/algo/registry.h"
#include "core/coll/shared/shared.h"

const weft__algo_t weft__algos[WEFT__ALGO_COUNT] = {
    [WEFT__ALGO_BARRIER_DISSEMINATION] =
        { WEFT__COLL_BARRIER, "barrier", "dissemination",
          weft__barrier_dissemination, 0, 0 },
    [WEFT__ALGO_BARRIER_HIER] =
        { WEFT__COLL_BARRIER, "barrier", "hier",
          weft__barrier_hier, 1, 0 },
    [WEFT__ALGO_BARRIER_SHARED] =
        { WEFT__COLL_BARRIER, "barrier", "shared",
          weft__barrier_shared, 0, WEFT__ALGO_NEEDS_SHARED },
    [WEFT__ALGO_BCAST_BINOMIAL] =
        { WEFT__COLL_BCAST, "bcast", "binomial",
          weft__bcast_binomial, 0, 0 },
    [WEFT__ALGO_BCAST_HIER] =
        { WEFT__COLL_BCAST, "bcast", "hier",
          weft__bcast_hier, 1, 0 },
    [WEFT__ALGO_BCAST_CHAIN] =
        { WEFT__COLL_BCAST, "bcast", "chain",
          weft__bcast_chain, 0, 0 },
    [WEFT__ALGO_BCAST_SCATTER_ALLGATHER] =
        { WEFT__COLL_BCAST, "bcast", "scatter_allgather",
          weft__bcast_scatter_allgather, 0, 0 },
    [WEFT__ALGO_BCAST_SHARED] =
        { WEFT__COLL_BCAST, "bcast", "shared",
          weft__bcast_shared, 0, WEFT__ALGO_NEEDS_SHARED },
    [WEFT__ALGO_BCAST_SHARED_PIPELINED] =
        { WEFT__COLL_BCAST, "bcast", "shared_pipelined",
          weft__bcast_shared_pipelined, 0, WEFT__ALGO_NEEDS_SEGMENT },
    [WEFT__ALGO_REDUCE_BINOMIAL] =
        { WEFT__COLL_REDUCE, "reduce", "binomial",
          weft__reduce_binomial, 0, 0 },
    [WEFT__ALGO_REDUCE_HIER] =
        { WEFT__COLL_REDUCE, "reduce", "hier",
          weft__reduce_hier, 1, 0 },
    [WEFT__ALGO_REDUCE_RING_GATHER] =
        { WEFT__COLL_REDUCE, "reduce", "ring_gather",
          weft__reduce_ring_gather, 0, 0 },
    [WEFT__ALGO_REDUCE_SHARED] =
        { WEFT__COLL_REDUCE, "reduce", "shared",
          weft__reduce_shared, 0, WEFT__ALGO_NEEDS_SHARED },
    [WEFT__ALGO_ALLREDUCE_RING] =
        { WEFT__COLL_ALLREDUCE, "allreduce", "ring",
          weft__allreduce_ring, 0, 0 },
    [WEFT__ALGO_ALLREDUCE_RD] =
        { WEFT__COLL_ALLREDUCE, "allreduce", "rd",
          weft__allreduce_rd, 0, 0 },
    [WEFT__ALGO_ALLREDUCE_RABENSEIFNER] =
        { WEFT__COLL_ALLREDUCE, "allreduce", "rabenseifner",
          weft__allreduce_rabenseifner, 0, 0 },
    [WEFT__ALGO_ALLREDUCE_HIER] =
        { WEFT__COLL_ALLREDUCE, "allreduce", "hier",
          weft__allreduce_hier, 1, 0 },
    [WEFT__ALGO_ALLREDUCE_TREE] =
        { WEFT__COLL_ALLREDUCE, "allreduce", "tree",
          weft__allreduce_tree, 0, 0 },
    [WEFT__ALGO_ALLREDUCE_DBTREE] =
        { WEFT__COLL_ALLREDUCE, "allreduce", "dbtree",
          weft__allreduce_dbtree, 0, 0 },
    [WEFT__ALGO_ALLREDUCE_DIRECT] =
        { WEFT__COLL_ALLREDUCE, "allreduce", "direct",
          weft__allreduce_direct, 0, 0 },
    [WEFT__ALGO_ALLREDUCE_SHARED] =
        { WEFT__COLL_ALLREDUCE, "allreduce", "shared",
          weft__allreduce_shared, 0, WEFT__ALGO_NEEDS_SHARED },
    [WEFT__ALGO_ALLREDUCE_SHARED_PIPELINED] =
        { WEFT__COLL_ALLREDUCE, "allreduce", "shared_pipelined",
          weft__allreduce_shared_pipelined, 0, WEFT__ALGO_NEEDS_SEGMENT },
    [WEFT__ALGO_ALLGATHER_RING] =
        { WEFT__COLL_ALLGATHER, "allgather", "ring",
          weft__allgatherv_ring, 0, 0 },
    [WEFT__ALGO_ALLGATHER_BRUCK] =
        { WEFT__COLL_ALLGATHER, "allgather", "bruck",
          weft__allgather_bruck, 0, WEFT__ALGO_NEEDS_EVEN },
    [WEFT__ALGO_ALLGATHER_HIER] =
        { WEFT__COLL_ALLGATHER, "allgather", "hier",
          weft__allgather_hier, 1, WEFT__ALGO_NEEDS_EVEN | WEFT__ALGO_NEEDS_NODES_CONTIG },
    [WEFT__ALGO_ALLGATHER_RD] =
        { WEFT__COLL_ALLGATHER, "allgather", "rd",
          weft__allgatherv_rd, 0, 0 },
    [WEFT__ALGO_ALLGATHER_SHARED] =
        { WEFT__COLL_ALLGATHER, "allgather", "shared",
          weft__allgather_shared, 0, WEFT__ALGO_NEEDS_EVEN | WEFT__ALGO_NEEDS_SHARED },
    [WEFT__ALGO_ALLGATHER_SHARED_PIPELINED] =
        { WEFT__COLL_ALLGATHER, "allgather", "shared_pipelined",
          weft__allgather_shared_pipelined, 0, WEFT__ALGO_NEEDS_EVEN | WEFT__ALGO_NEEDS_SEGMENT },
    [WEFT__ALGO_REDUCE_SCATTER_RING] =
        { WEFT__COLL_REDUCE_SCATTER, "reduce_scatter", "ring",
          weft__reduce_scatterv_ring, 0, 0 },
    [WEFT__ALGO_REDUCE_SCATTER_RD] =
        { WEFT__COLL_REDUCE_SCATTER, "reduce_scatter", "rd",
          weft__reduce_scatterv_rd, 0, 0 },
    [WEFT__ALGO_REDUCE_SCATTER_PAIRWISE] =
        { WEFT__COLL_REDUCE_SCATTER, "reduce_scatter", "pairwise",
          weft__reduce_scatterv_pairwise, 0, 0 },
    [WEFT__ALGO_REDUCE_SCATTER_SHARED] =
        { WEFT__COLL_REDUCE_SCATTER, "reduce_scatter", "shared",
          weft__reduce_scatter_shared, 0, WEFT__ALGO_NEEDS_SHARED },
    [WEFT__ALGO_REDUCE_SCATTER_SHARED_PIPELINED] =
        { WEFT__COLL_REDUCE_SCATTER, "reduce_scatter", "shared_pipelined",
          weft__reduce_scatter_shared_pipelined, 0, WEFT__ALGO_NEEDS_SEGMENT },
    [WEFT__ALGO_ALLTOALL_PAIRWISE] =
        { WEFT__COLL_ALLTOALL, "alltoall", "pairwise",
          weft__alltoallv_pairwise, 0, 0 },
    [WEFT__ALGO_ALLTOALL_SCATTERED] =
        { WEFT__COLL_ALLTOALL, "alltoall", "scattered",
          weft__alltoallv_scattered, 0, 0 },
    [WEFT__ALGO_ALLTOALL_BRUCK] =
        { WEFT__COLL_ALLTOALL, "alltoall", "bruck",
          weft__alltoall_bruck, 0, WEFT__ALGO_NEEDS_EVEN },
    [WEFT__ALGO_ALLTOALL_SHARED] =
        { WEFT__COLL_ALLTOALL, "alltoall", "shared",
          weft__alltoall_shared, 0, WEFT__ALGO_NEEDS_EVEN | WEFT__ALGO_NEEDS_SHARED },
    [WEFT__ALGO_ALLTOALL_SHARED_PIPELINED] =
        { WEFT__COLL_ALLTOALL, "alltoall", "shared_pipelined",
          weft__alltoall_shared_pipelined, 0, WEFT__ALGO_NEEDS_EVEN | WEFT__ALGO_NEEDS_SEGMENT },
    [WEFT__ALGO_GATHER_LINEAR] =
        { WEFT__COLL_GATHER, "gather", "linear",
          weft__gatherv_linear, 0, 0 },
    [WEFT__ALGO_GATHER_BINOMIAL] =
        { WEFT__COLL_GATHER, "gather", "binomial",
          weft__gather_binomial, 0, WEFT__ALGO_NEEDS_EVEN },
    [WEFT__ALGO_SCATTER_LINEAR] =
        { WEFT__COLL_SCATTER, "scatter", "linear",
          weft__scatterv_linear, 0, 0 },
    [WEFT__ALGO_SCATTER_BINOMIAL] =
        { WEFT__COLL_SCATTER, "scatter", "binomial",
          weft__scatter_binomial, 0, WEFT__ALGO_NEEDS_EVEN },
    [WEFT__ALGO_SCAN_RD] =
        { WEFT__COLL_SCAN, "scan", "rd",
          weft__scan_rd, 0, 0 },
    [WEFT__ALGO_EXSCAN_RD] =
        { WEFT__COLL_EXSCAN, "exscan", "rd",
          weft__exscan_rd, 0, 0 },
};
