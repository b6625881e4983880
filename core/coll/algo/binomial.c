/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * binomial.c: gather and scatter along a binomial tree, for blocks of
 * one size that every rank knows (the even forms).
 *
 * Ranks are numbered from the root (vr). Rank vr's subtree is ranks vr ..
 * vr + h - 1, h = min(low, n - vr) with low vr's lowest set bit (the root:
 * the smallest power of two >= n), and its children are vr + m for the
 * powers of two m < low still below n. A gather receives every child's
 * subtree at once into one buffer, blocks in vr order, and sends it up in
 * one message; a scatter does the reverse. Two rounds of ceil(log2 n)
 * message latencies in all, against the linear forms' n - 1 at the root,
 * for the same bytes on the root's link.
 */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "core/coll/algo/algo.h"
#include "core/base/error.h"

#define BINOMIAL_MAX_CHILDREN 32

typedef struct binomial {
    int vr, low, held;  /* held: blocks of the subtree */
    char *sub;          /* the subtree's blocks in vr order */
} binomial_t;

static void shape(const weft__coll_t *c, binomial_t *t)
{
    int n = c->gsize;

    t->vr = (c->grank - c->root + n) % n;
    if (t->vr) {
        t->low = t->vr & -t->vr;
    } else {
        for (t->low = 1; t->low < n; t->low <<= 1)
            ;
    }
    t->held = n - t->vr < t->low ? n - t->vr : t->low;
}

/* One operation per child: its subtree's blocks at their place in sub. */
static int child_ops(const weft__coll_t *c, const binomial_t *t, int kind, weft_p2p_op_t *ops)
{
    int n = c->gsize, nops = 0;
    size_t block = c->count * c->esize;

    for (int m = t->low >> 1; m > 0; m >>= 1) {
        int held = n - t->vr - m < m ? n - t->vr - m : m;

        if (t->vr + m >= n)
            continue;
        ops[nops++] = (weft_p2p_op_t){ kind, t->sub + (size_t)m * block, (size_t)held * block,
                                       WEFT_UINT8, (c->grank + m) % n, 0 };
    }
    return nops;
}

static int parent_of(const weft__coll_t *c, const binomial_t *t)
{
    return (c->grank - t->low + c->gsize) % c->gsize;
}

/* The root's blocks between vr order (sub) and rank order. */
static void to_rank_order(const weft__coll_t *c, char *ranked, const char *sub)
{
    size_t block = c->count * c->esize;

    for (int v = 0; v < c->gsize; v++)
        memcpy(ranked + (size_t)((v + c->root) % c->gsize) * block, sub + (size_t)v * block,
               block);
}

static void to_vr_order(const weft__coll_t *c, char *sub, const char *ranked)
{
    size_t block = c->count * c->esize;

    for (int v = 0; v < c->gsize; v++)
        memcpy(sub + (size_t)v * block, ranked + (size_t)((v + c->root) % c->gsize) * block,
               block);
}

/* ------------------------------------------------------------------ gather */

/* Round 1: the children's subtrees; round 2: this subtree to the parent. */
static weft_result_t gather_step(weft__coll_t *c, int *done)
{
    binomial_t *t = c->ctx;
    size_t block = c->count * c->esize;
    weft_p2p_op_t ops[BINOMIAL_MAX_CHILDREN];
    int nops;

    switch (c->phase++) {
    case 0: {
        const char *mine = c->sendbuf;

        if (!(t = calloc(1, sizeof(*t))))
            return weft__error(WEFT_ERR_NO_MEMORY, "gather: out of memory");
        c->ctx = t;
        c->ctx_free = free;
        shape(c, t);
        if (!block || c->gsize == 1) {
            if (block && mine != WEFT_IN_PLACE && mine != c->recvbuf)
                memcpy(c->recvbuf, mine, block);
            break;
        }
        if (t->vr == 0 && mine == WEFT_IN_PLACE)
            mine = (char *)c->recvbuf + (size_t)c->root * block;
        if (t->vr == 0 && c->root == 0) {
            t->sub = c->recvbuf; /* already in rank order */
        } else if (t->held > 1 || t->vr == 0) {
            if (!(c->tmp = malloc((size_t)t->held * block)))
                return weft__error(WEFT_ERR_NO_MEMORY, "gather: out of memory");
            t->sub = c->tmp;
        } else {
            t->sub = (char *)mine; /* a leaf sends its block as it is */
        }
        if (t->sub != mine)
            memcpy(t->sub, mine, block);
        if ((nops = child_ops(c, t, WEFT_P2P_RECV, ops)))
            return weft__coll_post(c, nops, ops);
        c->phase++; /* a leaf sends at once */
    }
        /* fall through */
    case 1:
        if (t->vr) {
            ops[0] = (weft_p2p_op_t){ WEFT_P2P_SEND, t->sub, (size_t)t->held * block,
                                      WEFT_UINT8, parent_of(c, t), 0 };
            return weft__coll_post(c, 1, ops);
        }
        if (t->sub != c->recvbuf)
            to_rank_order(c, c->recvbuf, t->sub);
        break;
    default:
        break;
    }
    *done = 1;
    return WEFT_SUCCESS;
}

void weft__gather_binomial(weft__coll_t *c)
{
    c->step = gather_step;
}

/* ----------------------------------------------------------------- scatter */

/* Round 1: this subtree from the parent; round 2: the children's. The
 * root's recvbuf may be WEFT_IN_PLACE (its block stays in sendbuf). */
static weft_result_t scatter_step(weft__coll_t *c, int *done)
{
    binomial_t *t = c->ctx;
    size_t block = c->count * c->esize;
    weft_p2p_op_t ops[BINOMIAL_MAX_CHILDREN];
    int nops;

    switch (c->phase++) {
    case 0:
        if (!(t = calloc(1, sizeof(*t))))
            return weft__error(WEFT_ERR_NO_MEMORY, "scatter: out of memory");
        c->ctx = t;
        c->ctx_free = free;
        shape(c, t);
        if (!block || c->gsize == 1) {
            if (block && c->recvbuf != WEFT_IN_PLACE && c->recvbuf != c->sendbuf)
                memcpy(c->recvbuf, c->sendbuf, block);
            break;
        }
        if (t->vr == 0 && c->root == 0) {
            t->sub = (char *)c->sendbuf;
        } else if (t->held > 1 || t->vr == 0) {
            if (!(c->tmp = malloc((size_t)t->held * block)))
                return weft__error(WEFT_ERR_NO_MEMORY, "scatter: out of memory");
            t->sub = c->tmp;
        } else {
            t->sub = c->recvbuf; /* a leaf receives its block where it goes */
        }
        if (t->vr) {
            ops[0] = (weft_p2p_op_t){ WEFT_P2P_RECV, t->sub, (size_t)t->held * block,
                                      WEFT_UINT8, parent_of(c, t), 0 };
            return weft__coll_post(c, 1, ops);
        }
        if (t->sub != c->sendbuf)
            to_vr_order(c, t->sub, c->sendbuf);
        /* fall through */
    case 1:
        c->phase = 2;
        if ((nops = child_ops(c, t, WEFT_P2P_SEND, ops)))
            return weft__coll_post(c, nops, ops);
        /* fall through */
    case 2:
        if (c->recvbuf != WEFT_IN_PLACE && t->sub != c->recvbuf)
            memcpy(c->recvbuf, t->sub, block);
        break;
    default:
        break;
    }
    *done = 1;
    return WEFT_SUCCESS;
}

void weft__scatter_binomial(weft__coll_t *c)
{
    c->step = scatter_step;
}
