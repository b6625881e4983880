/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * hier.c: node-aware (hierarchical) collectives.
 *
 * Ranks of one node talk through the node-local transport, nodes through
 * the network, whose latency is what small and medium collectives pay
 * for. These algorithms cross the network once per node instead of once
 * per rank: an intra-node phase gathers or reduces onto one rank per node
 * (the node's leader, its lowest rank, or the root on the root's node), an
 * inter-node phase runs among those representatives, and an intra-node
 * phase hands the result out. Each phase is one of the flat algorithms run
 * over a subgroup (weft__coll_set_group), so they stay correct for any
 * shape: uneven nodes, one rank per node, one node.
 */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "core/coll/algo/algo.h"
#include "core/base/error.h"
#include "core/dt/reduce.h"

typedef struct hier {
    int *reps;       /* one rank per node: the leader, or the root on its node */
    size_t *layout;  /* counts and displacements of the allgather phases */
} hier_t;

static void hier_free(void *p)
{
    hier_t *h = p;

    free(h->reps);
    free(h->layout);
    free(h);
}

static const weft__node_map_t *map_of(const weft__coll_t *c)
{
    return &c->comm->nodes;
}

/* The state, with reps chosen for c's root (root < 0: the leaders). */
static weft_result_t hier_setup(weft__coll_t *c, int root, hier_t **out)
{
    const weft__node_map_t *m = map_of(c);
    hier_t *h = calloc(1, sizeof(*h));

    if (!h || !(h->reps = malloc((size_t)m->nnodes * sizeof(int)))) {
        free(h);
        return weft__error(WEFT_ERR_NO_MEMORY, "hierarchical collective: out of memory");
    }
    c->ctx = h;
    c->ctx_free = hier_free;
    memcpy(h->reps, m->leaders, (size_t)m->nnodes * sizeof(int));
    if (root >= 0)
        h->reps[m->node_of[root]] = root;
    *out = h;
    return WEFT_SUCCESS;
}

/* A child over this rank's node: members in node order. */
static weft_result_t on_node(weft__coll_t *c, weft__coll_t *child)
{
    const weft__node_map_t *m = map_of(c);
    int first = m->node_start[m->my_node];

    if (!child)
        return WEFT_ERR_NO_MEMORY;
    weft__coll_set_group(child, m->node_start[m->my_node + 1] - first, m->my_index,
                         m->order + first);
    return weft__coll_run_child(c, child);
}

/* A child over the representatives, one per node, in node order. */
static weft_result_t on_reps(weft__coll_t *c, const hier_t *h, weft__coll_t *child)
{
    const weft__node_map_t *m = map_of(c);

    if (!child)
        return WEFT_ERR_NO_MEMORY;
    weft__coll_set_group(child, m->nnodes, m->my_node, h->reps);
    return weft__coll_run_child(c, child);
}

static int is_rep(const weft__coll_t *c, const hier_t *h)
{
    return h->reps[map_of(c)->my_node] == c->comm->rank;
}

/* Index of the node's representative among the node's ranks. */
static int rep_index(const weft__coll_t *c, const hier_t *h)
{
    const weft__node_map_t *m = map_of(c);
    int first = m->node_start[m->my_node];

    for (int i = first; i < m->node_start[m->my_node + 1]; i++)
        if (m->order[i] == h->reps[m->my_node])
            return i - first;
    return 0;
}

static weft__coll_t *tree_child(const weft__coll_t *c, const void *sendbuf, void *recvbuf,
                                weft_op_t op, int root, int reduce)
{
    weft__coll_t *k = weft__coll_new(sendbuf, recvbuf, c->count, c->esize, c->dt, op, root);

    if (k) {
        if (reduce)
            weft__reduce_binomial(k);
        else
            weft__bcast_binomial(k);
    }
    return k;
}

/* AVG sums in every phase and divides once by the whole group. */
static weft_op_t phase_op(const weft__coll_t *c)
{
    return c->op == WEFT_AVG ? WEFT_SUM : c->op;
}

/* --------------------------------------------------------------- allreduce */

/* Reduce onto the node leader, allreduce among leaders, broadcast on the
 * node. */
static weft_result_t allreduce_step(weft__coll_t *c, int *done)
{
    hier_t *h = c->ctx;
    weft_result_t rc;
    weft__coll_t *k;

    switch (c->phase++) {
    case 0:
        if ((rc = hier_setup(c, -1, &h)) != WEFT_SUCCESS)
            return rc;
        return on_node(c, tree_child(c, c->sendbuf == WEFT_IN_PLACE ? c->recvbuf : c->sendbuf,
                                     c->recvbuf, phase_op(c), 0, 1));
    case 1:
        if (is_rep(c, h)) {
            k = weft__coll_new(WEFT_IN_PLACE, c->recvbuf, c->count, c->esize, c->dt,
                               phase_op(c), 0);
            /* Between the leaders, the flat algorithm the tuner chose
             * for them when it chose this one. */
            if (k && c->leaders_algo)
                c->leaders_algo(k);
            else if (k)
                weft__allreduce_ring(k);
            return on_reps(c, h, k);
        }
        /* Non-leaders go straight on to wait for the broadcast. */
        /* fall through */
    case 2:
        c->phase = 3;
        if (is_rep(c, h) && c->op == WEFT_AVG)
            weft__reduce_avg_finish(c->recvbuf, c->count, c->dt, c->gsize);
        return on_node(c, tree_child(c, NULL, c->recvbuf, WEFT_SUM, 0, 0));
    default:
        *done = 1;
        return WEFT_SUCCESS;
    }
}

void weft__allreduce_hier(weft__coll_t *c)
{
    c->step = allreduce_step;
}

/* --------------------------------------------------------------- broadcast */

/* Among the representatives from the root, then on every node from its
 * representative. */
static weft_result_t bcast_step(weft__coll_t *c, int *done)
{
    const weft__node_map_t *m = map_of(c);
    hier_t *h = c->ctx;
    weft_result_t rc;

    switch (c->phase++) {
    case 0:
        if ((rc = hier_setup(c, c->root, &h)) != WEFT_SUCCESS)
            return rc;
        if (is_rep(c, h))
            return on_reps(c, h, tree_child(c, NULL, c->recvbuf, WEFT_SUM,
                                            m->node_of[c->root], 0));
        /* fall through */
    case 1:
        c->phase = 2;
        return on_node(c, tree_child(c, NULL, c->recvbuf, WEFT_SUM, rep_index(c, h), 0));
    default:
        *done = 1;
        return WEFT_SUCCESS;
    }
}

void weft__bcast_hier(weft__coll_t *c)
{
    c->step = bcast_step;
}

/* ------------------------------------------------------------------ reduce */

/* On every node onto its representative, then among the representatives
 * onto the root. Off the root, the partial result needs scratch space. */
static weft_result_t reduce_step(weft__coll_t *c, int *done)
{
    const weft__node_map_t *m = map_of(c);
    int root = c->comm->rank == c->root;
    hier_t *h = c->ctx;
    weft_result_t rc;
    char *acc;

    switch (c->phase++) {
    case 0:
        if ((rc = hier_setup(c, c->root, &h)) != WEFT_SUCCESS)
            return rc;
        if (is_rep(c, h) && !root && c->count &&
            !(c->tmp = malloc(c->count * c->esize)))
            return weft__error(WEFT_ERR_NO_MEMORY, "reduce: out of memory");
        acc = root ? c->recvbuf : c->tmp;
        return on_node(c, tree_child(c, c->sendbuf, acc, phase_op(c), rep_index(c, h), 1));
    case 1:
        if (is_rep(c, h)) {
            acc = root ? c->recvbuf : c->tmp;
            return on_reps(c, h, tree_child(c, acc, acc, phase_op(c), m->node_of[c->root], 1));
        }
        /* fall through */
    default:
        if (root && c->op == WEFT_AVG)
            weft__reduce_avg_finish(c->recvbuf, c->count, c->dt, c->gsize);
        *done = 1;
        return WEFT_SUCCESS;
    }
}

void weft__reduce_hier(weft__coll_t *c)
{
    c->step = reduce_step;
}

/* ----------------------------------------------------------------- barrier */

/* Everyone checks in with the node leader, the leaders meet, the leaders
 * let their nodes go: zero-byte gathers and scatters. */
static weft__coll_t *empty_exchange(const weft__coll_t *c, hier_t *h, int gather)
{
    const weft__node_map_t *m = map_of(c);
    int n = m->node_start[m->my_node + 1] - m->node_start[m->my_node];
    weft__coll_t *k = weft__coll_new(NULL, NULL, 0, 1, WEFT_UINT8, WEFT_SUM, 0);

    if (!k)
        return NULL;
    if (!h->layout && !(h->layout = calloc(2 * (size_t)m->max_per_node, sizeof(size_t)))) {
        weft__coll_free(k);
        return NULL;
    }
    if (weft__coll_set_vectors(k, n, gather ? NULL : h->layout, gather ? NULL : h->layout,
                               gather ? h->layout : NULL, gather ? h->layout : NULL) !=
        WEFT_SUCCESS) {
        weft__coll_free(k);
        return NULL;
    }
    if (gather)
        weft__gatherv_linear(k);
    else
        weft__scatterv_linear(k);
    return k;
}

static weft_result_t barrier_step(weft__coll_t *c, int *done)
{
    hier_t *h = c->ctx;
    weft_result_t rc;
    weft__coll_t *k;

    switch (c->phase++) {
    case 0:
        if ((rc = hier_setup(c, -1, &h)) != WEFT_SUCCESS)
            return rc;
        return on_node(c, empty_exchange(c, h, 1));
    case 1:
        if (is_rep(c, h)) {
            k = weft__coll_new(NULL, NULL, 0, 1, WEFT_UINT8, WEFT_SUM, 0);
            if (k)
                weft__barrier_dissemination(k);
            return on_reps(c, h, k);
        }
        /* fall through */
    case 2:
        c->phase = 3;
        return on_node(c, empty_exchange(c, h, 0));
    default:
        *done = 1;
        return WEFT_SUCCESS;
    }
}

void weft__barrier_hier(weft__coll_t *c)
{
    c->step = barrier_step;
}

/* --------------------------------------------------------------- allgather */

/* For communicators whose nodes hold consecutive ranks and equal counts:
 * gather each node's blocks at its leader (they are adjacent in recvbuf),
 * allgather the node slabs among leaders, broadcast the whole on each
 * node. */
static weft_result_t allgather_step(weft__coll_t *c, int *done)
{
    const weft__node_map_t *m = map_of(c);
    int first = m->node_start[m->my_node], nn = m->node_start[m->my_node + 1] - first;
    size_t block = c->count, total = block * (size_t)c->gsize;
    char *rb = c->recvbuf;
    hier_t *h = c->ctx;
    weft__coll_t *k = NULL;
    weft_result_t rc;

    switch (c->phase++) {
    case 0:
        if ((rc = hier_setup(c, -1, &h)) != WEFT_SUCCESS)
            return rc;
        h->layout = malloc(2 * (size_t)(m->nnodes > nn ? m->nnodes : nn) * sizeof(size_t));
        if (!h->layout)
            return weft__error(WEFT_ERR_NO_MEMORY, "allgather: out of memory");
        for (int i = 0; i < nn; i++) {
            h->layout[i] = block;
            h->layout[nn + i] = (size_t)i * block;
        }
        /* The node's blocks, gathered into their place at the leader. */
        k = weft__coll_new(c->sendbuf == WEFT_IN_PLACE ? rb + (size_t)c->grank * block * c->esize
                                                       : c->sendbuf,
                           rb + (size_t)first * block * c->esize, block, c->esize, c->dt,
                           WEFT_SUM, 0);
        if (k && (rc = weft__coll_set_vectors(k, nn, NULL, NULL, h->layout, h->layout + nn)) !=
                 WEFT_SUCCESS) {
            weft__coll_free(k);
            return rc;
        }
        if (k)
            weft__gatherv_linear(k);
        return on_node(c, k);
    case 1:
        if (is_rep(c, h)) {
            for (int j = 0; j < m->nnodes; j++) {
                h->layout[j] = (size_t)(m->node_start[j + 1] - m->node_start[j]) * block;
                h->layout[m->nnodes + j] = (size_t)m->node_start[j] * block;
            }
            k = weft__coll_new(WEFT_IN_PLACE, rb, h->layout[m->my_node], c->esize, c->dt,
                               WEFT_SUM, 0);
            if (k && (rc = weft__coll_set_vectors(k, m->nnodes, NULL, NULL, h->layout,
                                                  h->layout + m->nnodes)) != WEFT_SUCCESS) {
                weft__coll_free(k);
                return rc;
            }
            if (k)
                weft__allgatherv_ring(k);
            return on_reps(c, h, k);
        }
        /* fall through */
    case 2:
        c->phase = 3;
        k = weft__coll_new(NULL, rb, total, c->esize, c->dt, WEFT_SUM, 0);
        if (k)
            weft__bcast_binomial(k);
        return on_node(c, k);
    default:
        *done = 1;
        return WEFT_SUCCESS;
    }
}

void weft__allgather_hier(weft__coll_t *c)
{
    c->step = allgather_step;
}
