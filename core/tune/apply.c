/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * apply.c: setting a chosen algorithm on a collective, with what some
 * need beyond their step function: the node-aware allreduce's algorithm
 * between the nodes' leaders, and the ring's order of the ranks. Both
 * select.c (at the call) and adapt.c (once a calibration ruled) set
 * algorithms through it.
 */
#include "config.h"

#include "core/coll/algo/algo.h"
#include "core/tune/tune.h"

/* The flat allreduce predicted fastest among comm's nodes' leaders for
 * this many bytes: a node-aware allreduce's phase between the nodes. */
static void (*leaders_allreduce(weft_comm_t comm, size_t bytes))(weft__coll_t *c)
{
    weft__tune_shape_t leaders = { comm->nodes.nnodes, comm->nodes.nnodes, 1, 1 };
    int pick = weft__tune_best(&comm->inst->tune->params, &leaders, WEFT__COLL_ALLREDUCE, bytes,
                               1, 1, NULL);

    return pick < 0 ? weft__allreduce_ring : weft__algos[pick].set;
}

void weft__tune_apply(weft__coll_t *c, weft_comm_t comm, int pick)
{
    const weft__node_map_t *m = &comm->nodes;

    /* The shared algorithms number their generations on comm. */
    c->comm = comm;
    weft__algos[pick].set(c);
    if (pick == WEFT__ALGO_ALLREDUCE_HIER)
        c->leaders_algo = leaders_allreduce(comm, c->count * c->esize);
    /* A flat allreduce ring visits each node's ranks in a row, so that it
     * crosses between nodes once per node rather than at every step. */
    if (m->nnodes > 1 && !m->contiguous && pick == WEFT__ALGO_ALLREDUCE_RING)
        weft__coll_set_group(c, comm->size, m->my_order, m->order);
}
