/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * rd_allgather.c: allgather(v) by recursive doubling, for any number
 * of ranks and any block sizes.
 *
 * With p the largest power of two <= n and rem = n - p, the first 2 rem
 * ranks pair up as in coll/algo/rd.c: each even one hands its block to the odd
 * one above it and sits out. The p left exchange everything they hold with
 * partners 1, 2, 4 ... p/2 away in their own numbering, doubling what they
 * hold each time; their blocks stay in rank order, since member i of the
 * p stands for ranks 2i and 2i + 1 (i < rem) or i + rem. The odd ranks
 * finally hand the whole result to the even ones that sat out: log2 p + 2
 * steps against the ring's n - 1. Blocks move where they lie in recvbuf,
 * one message each, so uneven counts and gaps cost nothing extra.
 */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "core/coll/algo/algo.h"
#include "core/base/error.h"

typedef struct rdag {
    int p, rem, newrank;  /* newrank -1: sitting out */
    int mask;             /* the next exchange's distance */
    int stage;            /* 0 fold-in, 1 exchanges, 2 fold-out, 3 done */
} rdag_t;

/* The first rank member nr of the p stands for (nr == p: n). */
static int first_rank(const rdag_t *g, int nr)
{
    return nr < g->rem ? 2 * nr : nr + g->rem;
}

static int real_rank(const rdag_t *g, int nr)
{
    return nr < g->rem ? 2 * nr + 1 : nr + g->rem;
}

/* Adds one operation per nonempty block of ranks [lo, hi) with peer. */
static int add_blocks(const weft__coll_t *c, weft_p2p_op_t *ops, int nops, int kind, int lo,
                      int hi, int peer)
{
    for (int b = lo; b < hi; b++)
        if (c->rcounts[b])
            ops[nops++] = (weft_p2p_op_t){ kind, (char *)c->recvbuf + c->rdispls[b] * c->esize,
                                           c->rcounts[b] * c->esize, WEFT_UINT8, peer, 0 };
    return nops;
}

/* Posts the next step with anything to move; *done when none is left. */
static weft_result_t next_step(weft__coll_t *c, rdag_t *g, weft_p2p_op_t *ops, int *done)
{
    int n = c->gsize, me = c->grank, nops = 0;

    while (!nops) {
        if (g->stage == 0) {
            g->stage = 1;
            g->mask = 1;
            if (me < 2 * g->rem)
                nops = add_blocks(c, ops, 0, me % 2 ? WEFT_P2P_RECV : WEFT_P2P_SEND,
                                  me - me % 2, me - me % 2 + 1, me % 2 ? me - 1 : me + 1);
        } else if (g->stage == 1 && g->newrank >= 0 && g->mask < g->p) {
            int m = g->mask, mine = g->newrank & ~(m - 1), theirs = (g->newrank ^ m) & ~(m - 1);
            int peer = real_rank(g, g->newrank ^ m);

            nops = add_blocks(c, ops, 0, WEFT_P2P_SEND, first_rank(g, mine),
                              first_rank(g, mine + m), peer);
            nops = add_blocks(c, ops, nops, WEFT_P2P_RECV, first_rank(g, theirs),
                              first_rank(g, theirs + m), peer);
            g->mask <<= 1;
        } else if (g->stage == 1) {
            g->stage = 2;
            if (me < 2 * g->rem) {
                int kind = me % 2 ? WEFT_P2P_SEND : WEFT_P2P_RECV, peer = me % 2 ? me - 1 : me + 1;

                /* Everything but the sitting-out rank's own block. */
                nops = add_blocks(c, ops, 0, kind, 0, me - me % 2, peer);
                nops = add_blocks(c, ops, nops, kind, me - me % 2 + 1, n, peer);
            }
        } else {
            *done = 1;
            return WEFT_SUCCESS;
        }
    }
    return weft__coll_post(c, nops, ops);
}

static weft_result_t rdag_step(weft__coll_t *c, int *done)
{
    int n = c->gsize, me = c->grank;
    rdag_t *g = c->ctx;
    weft_p2p_op_t *ops;
    weft_result_t rc;

    if (c->phase++ == 0) {
        char *mine = (char *)c->recvbuf + c->rdispls[me] * c->esize;

        if (c->sendbuf != WEFT_IN_PLACE && c->sendbuf != c->recvbuf && c->sendbuf != mine &&
            c->rcounts[me])
            memcpy(mine, c->sendbuf, c->rcounts[me] * c->esize);
        if (n == 1) {
            *done = 1;
            return WEFT_SUCCESS;
        }
        if (!(g = calloc(1, sizeof(*g))))
            return weft__error(WEFT_ERR_NO_MEMORY, "allgather: out of memory");
        c->ctx = g;
        c->ctx_free = free;
        for (g->p = 1; g->p * 2 <= n; g->p *= 2)
            ;
        g->rem = n - g->p;
        g->newrank = me < 2 * g->rem ? (me % 2 ? me / 2 : -1) : me - g->rem;
    }
    /* Two operations per block at most in one step. */
    if (!(ops = malloc(2 * (size_t)n * sizeof(*ops))))
        return weft__error(WEFT_ERR_NO_MEMORY, "allgather: out of memory");
    rc = next_step(c, g, ops, done);
    free(ops);
    return rc;
}

void weft__allgatherv_rd(weft__coll_t *c)
{
    c->step = rdag_step;
}
