/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * dbtree.c: allreduce as a pipelined reduce then broadcast along
 * binary trees: one tree over the whole buffer ("tree"), or two trees each
 * carrying half of it ("dbtree", the double binary tree NCCL 2.4
 * described).
 *
 * Tree 0 is the in-order binary tree on positions x = 1 .. n (rank x - 1):
 * x's level is its lowest set bit l, its children are x - l/2 and x + l/2,
 * its parent x - l or x + l (the one whose lowest bit is 2l); positions
 * beyond n are skipped over, a missing right child replaced by the first of
 * its left descendants that exists. The odd positions are the leaves: half
 * the ranks, which only send up and receive down. Tree 1 is tree 0 shifted
 * by one rank, so a rank that is a leaf of one is interior in the other
 * (all but rank n - 1 at odd n), and with half the data each, every rank
 * sends and receives about the buffer once each way instead of an interior
 * rank's three times in a single tree.
 *
 * Each tree is a lane (its own tag stream, coll.c), so the two can share a
 * pair of ranks. Both trees move their halves in chunks
 * (weft__algo_chunk_bytes) in one schedule of rounds that every rank counts
 * alike, and every message is sent in the round its receiver expects it or
 * earlier: then no round can wait on a later one elsewhere, although each
 * rank's rounds mix the two trees (round by round per tree, a rank waiting
 * on one tree would hold up its part in the other). In the reduce, a rank of height h (a leaf: 0)
 * receives chunk j from its children in round j + 2h - 2 and sends it up
 * in round j + 2h; it folds chunk j after posting the round that follows
 * its arrival, so the reduction overlaps the transfers (as coll/algo/tree.c).
 * In the broadcast that follows, a rank at depth d receives chunk j in
 * round j + d - 1 after the reduce and passes it on in round j + d.
 */
#include "config.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core/coll/algo/algo.h"
#include "core/base/error.h"
#include "core/dt/reduce.h"

typedef struct lane {
    int parent;             /* group rank, -1 at the root */
    int height, depth;      /* rounds of the schedule: see the top */
    int nchildren;
    int children[2];
    size_t off, len;        /* the lane's bytes of recvbuf */
    size_t nchunks;
    char *in[2];            /* reduce: chunks from the children, by round parity */
} lane_t;

typedef struct treeall {
    int nlanes;
    lane_t lane[2];
    size_t chunk;           /* bytes, whole elements */
    size_t reduce_rounds;   /* the broadcast's first round */
    size_t rounds;          /* in all */
    size_t r;               /* the round in flight (SIZE_MAX: none yet) */
    char *scratch;
} treeall_t;

static void treeall_free(void *p)
{
    treeall_t *t = p;

    free(t->scratch);
    free(t);
}

static int lowbit(int x)
{
    return x & -x;
}

/* The parent position of x in the in-order tree on 1 .. n (0: the root). */
static int tree_parent(int x, int n)
{
    int root = 1;

    while (root * 2 <= n)
        root *= 2;
    while (x != root) {
        int l = lowbit(x);

        x = x & (2 * l) ? x - l : x + l;
        if (x <= n)
            return x;
    }
    return 0;
}

/* The children of position x, the existing one nearest each side. */
static int tree_children(int x, int n, int *kids)
{
    int k = 0;

    for (int half = lowbit(x) / 2, side = 0; half && side < 2; side++) {
        int c = side ? x + half : x - half, l = half;

        while (c > n && l > 1) {
            l /= 2;
            c -= l;
        }
        if (c <= n)
            kids[k++] = c;
    }
    return k;
}

int weft__dbtree_shape(int n, int rank, int tree, int *parent, int *children)
{
    int shift = tree ? 1 : 0, x = (rank + shift) % n + 1, kids[2], k, p;

    p = tree_parent(x, n);
    *parent = p ? (p - 1 - shift + n) % n : -1;
    k = tree_children(x, n, kids);
    for (int i = 0; i < k; i++)
        children[i] = (kids[i] - 1 - shift + n) % n;
    return k;
}

/* Sets up lane's tree: tree number l of the group. */
static void lane_shape(const weft__coll_t *c, lane_t *lane, int l)
{
    int n = c->gsize, x = (c->grank + l) % n + 1, p;

    lane->nchildren = weft__dbtree_shape(n, c->grank, l, &lane->parent, lane->children);
    for (int bit = lowbit(x); bit > 1; bit >>= 1)
        lane->height++;
    for (p = tree_parent(x, n); p; p = tree_parent(p, n))
        lane->depth++;
}

static size_t chunk_len(const treeall_t *t, const lane_t *lane, size_t j)
{
    size_t first = j * t->chunk;

    return lane->len - first < t->chunk ? lane->len - first : t->chunk;
}

static char *chunk_at(const weft__coll_t *c, const treeall_t *t, const lane_t *lane, size_t j)
{
    return (char *)c->recvbuf + lane->off + j * t->chunk;
}

static weft_result_t setup(weft__coll_t *c, int nlanes, treeall_t **out)
{
    size_t bytes = c->count * c->esize, half = (c->count / (size_t)nlanes) * c->esize;
    size_t per_lane = 0, nmax;
    int root_height;
    treeall_t *t = calloc(1, sizeof(*t));

    if (!t)
        return weft__error(WEFT_ERR_NO_MEMORY, "allreduce: out of memory");
    c->ctx = t;
    c->ctx_free = treeall_free;
    t->nlanes = nlanes;
    /* Lane 0 takes the first half (rounded down to whole elements). */
    t->lane[0].off = 0;
    t->lane[0].len = nlanes == 2 ? half : bytes;
    t->lane[1].off = t->lane[0].len;
    t->lane[1].len = bytes - t->lane[0].len;
    t->chunk = weft__algo_chunk_bytes();
    if (t->chunk > t->lane[nlanes - 1].len)
        t->chunk = t->lane[nlanes - 1].len; /* the larger lane */
    t->chunk -= t->chunk % c->esize;
    if (!t->chunk)
        t->chunk = c->esize;
    for (int i = 0; i < nlanes; i++) {
        lane_t *lane = &t->lane[i];

        lane_shape(c, lane, i);
        lane->nchunks = (lane->len + t->chunk - 1) / t->chunk;
        per_lane += (size_t)lane->nchildren * 2 * t->chunk;
    }
    /* The root's height bounds every rank's, and every depth. */
    for (root_height = 0; (2 << root_height) <= c->gsize; root_height++)
        ;
    nmax = t->lane[nlanes - 1].nchunks;
    t->reduce_rounds = nmax + 2 * (size_t)root_height;
    t->rounds = t->reduce_rounds + nmax + (size_t)root_height;
    t->r = SIZE_MAX;
    if (per_lane && !(t->scratch = malloc(per_lane)))
        return weft__error(WEFT_ERR_NO_MEMORY, "allreduce: out of memory");
    per_lane = 0;
    for (int i = 0; i < nlanes; i++) {
        lane_t *lane = &t->lane[i];

        lane->in[0] = t->scratch + per_lane;
        lane->in[1] = lane->in[0] + (size_t)lane->nchildren * t->chunk;
        per_lane += (size_t)lane->nchildren * 2 * t->chunk;
    }
    *out = t;
    return WEFT_SUCCESS;
}

/* Adds lane's operations of reduce round r (see the top). The subtractions
 * wrap below zero to huge chunk numbers: nothing to do. */
static int reduce_ops(const weft__coll_t *c, const treeall_t *t, int l, size_t r,
                      weft_p2p_op_t *ops)
{
    const lane_t *lane = &t->lane[l];
    size_t h2 = 2 * (size_t)lane->height, receiving = r + 2 - h2, sending = r - h2;
    int nops = 0;

    if (lane->nchildren && r + 2 >= h2 && receiving < lane->nchunks)
        for (int i = 0; i < lane->nchildren; i++)
            ops[nops++] = (weft_p2p_op_t){ WEFT_P2P_RECV,
                                           lane->in[receiving % 2] + (size_t)i * t->chunk,
                                           chunk_len(t, lane, receiving), WEFT_UINT8,
                                           lane->children[i], l };
    if (lane->parent >= 0 && r >= h2 && sending < lane->nchunks)
        ops[nops++] = (weft_p2p_op_t){ WEFT_P2P_SEND, chunk_at(c, t, lane, sending),
                                       chunk_len(t, lane, sending), WEFT_UINT8, lane->parent, l };
    return nops;
}

/* Adds lane's operations of broadcast round r (counted from the
 * broadcast's first): chunk r - d + 1 from the parent, chunk r - d to the
 * children. */
static int bcast_ops(const weft__coll_t *c, const treeall_t *t, int l, size_t r,
                     weft_p2p_op_t *ops)
{
    const lane_t *lane = &t->lane[l];
    size_t d = (size_t)lane->depth, receiving = r + 1 - d, sending = r - d;
    int nops = 0;

    if (lane->parent >= 0 && r + 1 >= d && receiving < lane->nchunks)
        ops[nops++] = (weft_p2p_op_t){ WEFT_P2P_RECV, chunk_at(c, t, lane, receiving),
                                       chunk_len(t, lane, receiving), WEFT_UINT8,
                                       lane->parent, l };
    if (r >= d && sending < lane->nchunks)
        for (int i = 0; i < lane->nchildren; i++)
            ops[nops++] = (weft_p2p_op_t){ WEFT_P2P_SEND, chunk_at(c, t, lane, sending),
                                           chunk_len(t, lane, sending), WEFT_UINT8,
                                           lane->children[i], l };
    return nops;
}

/* Posts round r for every lane; *posted 0 when none has anything. */
static weft_result_t post_round(weft__coll_t *c, treeall_t *t, size_t r, int *posted)
{
    weft_p2p_op_t ops[2 * 3];
    int nops = 0;

    for (int l = 0; l < t->nlanes; l++)
        nops += r < t->reduce_rounds ? reduce_ops(c, t, l, r, ops + nops)
                                     : bcast_ops(c, t, l, r - t->reduce_rounds, ops + nops);
    *posted = nops > 0;
    return nops ? weft__coll_post(c, nops, ops) : WEFT_SUCCESS;
}

/* Folds what the children sent in reduce round r into this rank's chunks. */
static void fold(weft__coll_t *c, treeall_t *t, size_t r)
{
    for (int l = 0; l < t->nlanes; l++) {
        lane_t *lane = &t->lane[l];
        size_t j = r + 2 - 2 * (size_t)lane->height;
        char *acc;

        if (!lane->nchildren || r + 2 < 2 * (size_t)lane->height || j >= lane->nchunks)
            continue;
        acc = chunk_at(c, t, lane, j);
        for (int i = 0; i < lane->nchildren; i++)
            weft__reduce(acc, acc, lane->in[j % 2] + (size_t)i * t->chunk,
                         chunk_len(t, lane, j) / c->esize, c->dt, c->op);
    }
}

static weft_result_t treeall_step(weft__coll_t *c, int *done, int nlanes)
{
    treeall_t *t = c->ctx;
    weft_result_t rc;
    int posted = 0;

    if (c->phase == 0) {
        c->phase = 1;
        if (c->sendbuf != WEFT_IN_PLACE && c->sendbuf != c->recvbuf && c->count)
            memcpy(c->recvbuf, c->sendbuf, c->count * c->esize);
        if (c->gsize == 1 || !c->count) {
            *done = 1;
            return WEFT_SUCCESS;
        }
        if ((rc = setup(c, nlanes, &t)) != WEFT_SUCCESS)
            return rc;
    }
    /* Round t->r completed: post the next with anything in it (the rounds
     * between are empty here), then fold what arrived. */
    while (!posted && t->r + 1 < t->rounds) {
        size_t done_round = t->r++;

        if ((rc = post_round(c, t, t->r, &posted)) != WEFT_SUCCESS)
            return rc;
        if (done_round < t->reduce_rounds)
            fold(c, t, done_round); /* wraps to a huge round at the start: none */
    }
    if (posted)
        return WEFT_SUCCESS;
    if (t->r < t->reduce_rounds)
        fold(c, t, t->r);
    if (c->op == WEFT_AVG)
        weft__reduce_avg_finish(c->recvbuf, c->count, c->dt, c->gsize);
    *done = 1;
    return WEFT_SUCCESS;
}

static weft_result_t tree_step(weft__coll_t *c, int *done)
{
    return treeall_step(c, done, 1);
}

static weft_result_t dbtree_step(weft__coll_t *c, int *done)
{
    return treeall_step(c, done, 2);
}

void weft__allreduce_tree(weft__coll_t *c)
{
    c->step = tree_step;
}

void weft__allreduce_dbtree(weft__coll_t *c)
{
    c->step = dbtree_step;
}
