/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * rd.c: recursive-doubling allreduce, for small messages.
 *
 * With p the largest power of two <= n and rem = n - p, the first 2 rem
 * ranks pair up first: each even one hands its buffer to the odd one above
 * it and sits out. The p ranks left exchange whole buffers with partners
 * 1, 2, 4 ... p/2 away (in their own numbering) and combine, so after
 * log2 p steps each holds the reduction of every input; the odd ranks
 * then hand the result back to the even ones that sat out. That is
 * log2 p + 2 messages of the whole buffer at most, against 2 (n - 1) for
 * the ring: the ring wins on bandwidth, this on latency.
 *
 * Each step combines the same two partial results on both partners, and
 * the operators are commutative bit for bit, so every rank ends with the
 * same bits.
 */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "core/coll/algo/algo.h"
#include "core/base/error.h"
#include "core/dt/reduce.h"

/* Phases: 0 set-up and fold-in, 1 .. log2 p exchanges, then fold-out. */
typedef struct rd {
    int p, rem;
    int newrank;      /* rank among the p, -1 when sitting out */
    int mask;         /* the exchange in flight */
    int stage;        /* 0 fold-in, 1 exchanges, 2 fold-out, 3 done */
    char *tmp;
} rd_t;

/* The real rank of member nr among the p. */
static int real_rank(const rd_t *r, int nr)
{
    return nr < r->rem ? 2 * nr + 1 : nr + r->rem;
}

static weft_result_t rd_post(weft__coll_t *c, int peer, int send, int recv)
{
    size_t bytes = c->count * c->esize;
    rd_t *r = c->ctx;
    weft_p2p_op_t ops[2];
    int nops = 0;

    if (send)
        ops[nops++] = (weft_p2p_op_t){ WEFT_P2P_SEND, c->recvbuf, bytes, WEFT_UINT8, peer, 0 };
    if (recv)
        ops[nops++] = (weft_p2p_op_t){ WEFT_P2P_RECV, r->tmp, bytes, WEFT_UINT8, peer, 0 };
    return weft__coll_post(c, nops, ops);
}

static weft_result_t rd_step(weft__coll_t *c, int *done)
{
    int n = c->gsize, me = c->grank;
    rd_t *r = c->ctx;

    if (c->phase == 0) {
        c->phase = 1;
        if (c->sendbuf != WEFT_IN_PLACE && c->sendbuf != c->recvbuf && c->count)
            memcpy(c->recvbuf, c->sendbuf, c->count * c->esize);
        if (n == 1 || c->count == 0) {
            *done = 1;
            return WEFT_SUCCESS;
        }
        /* Both from the collective's room while the buffer is small. */
        if (!(r = weft__coll_alloc(c, sizeof(*r))) ||
            !(r->tmp = weft__coll_scratch(c, c->count * c->esize)))
            return WEFT_ERR_NO_MEMORY;
        c->ctx = r;
        for (r->p = 1; r->p * 2 <= n; r->p *= 2)
            ;
        r->rem = n - r->p;
        if (me < 2 * r->rem) {
            r->newrank = me % 2 ? me / 2 : -1;
            /* Even ranks hand their input up; odd ones take it. */
            return rd_post(c, me % 2 ? me - 1 : me + 1, me % 2 == 0, me % 2 == 1);
        }
        r->newrank = me - r->rem;
    } else if (r->stage == 0 && me < 2 * r->rem && me % 2) {
        weft__reduce(c->recvbuf, r->tmp, c->recvbuf, c->count, c->dt, c->op);
    } else if (r->stage == 1) {
        /* The partner's partial result arrived: the lower rank's first. */
        int partner = r->newrank ^ (r->mask >> 1);

        if (partner < r->newrank)
            weft__reduce(c->recvbuf, r->tmp, c->recvbuf, c->count, c->dt, c->op);
        else
            weft__reduce(c->recvbuf, c->recvbuf, r->tmp, c->count, c->dt, c->op);
    }
    if (r->stage == 0) {
        r->stage = 1;
        r->mask = 1;
    }
    if (r->stage == 1) {
        if (r->newrank >= 0 && r->mask < r->p) {
            int partner = real_rank(r, r->newrank ^ r->mask);

            r->mask <<= 1;
            return rd_post(c, partner, 1, 1);
        }
        r->stage = 2;
        if (me < 2 * r->rem)
            /* Odd ranks hand the result back down. */
            return rd_post(c, me % 2 ? me - 1 : me + 1, me % 2 == 1, me % 2 == 0);
    }
    if (r->stage == 2 && me < 2 * r->rem && me % 2 == 0)
        memcpy(c->recvbuf, r->tmp, c->count * c->esize);
    if (c->op == WEFT_AVG)
        weft__reduce_avg_finish(c->recvbuf, c->count, c->dt, n);
    *done = 1;
    return WEFT_SUCCESS;
}

void weft__allreduce_rd(weft__coll_t *c)
{
    c->step = rd_step;
}

/* ----------------------------------------------------------- reduce-scatter */

/* For small buffers: recursive doubling over the whole input, then this
 * rank keeps its block. log2 n steps against the ring's n - 1, for n
 * times the data, which is cheap while the buffer is small. */
static weft_result_t rs_step(weft__coll_t *c, int *done)
{
    int me = c->grank;
    size_t total = c->count; /* all blocks, set by the entry point */
    const char *in = c->sendbuf == WEFT_IN_PLACE || c->sendbuf == c->recvbuf ? c->recvbuf
                                                                             : c->sendbuf;
    weft__coll_t *k;
    size_t off = 0;

    if (c->phase++ == 0) {
        if (!total) {
            *done = 1;
            return WEFT_SUCCESS;
        }
        if (!(c->tmp = malloc(total * c->esize)))
            return weft__error(WEFT_ERR_NO_MEMORY, "reduce_scatter: out of memory");
        memcpy(c->tmp, in, total * c->esize);
        if (!(k = weft__coll_new(WEFT_IN_PLACE, c->tmp, total, c->esize, c->dt, c->op, 0)))
            return WEFT_ERR_NO_MEMORY;
        weft__allreduce_rd(k);
        return weft__coll_run_child(c, k);
    }
    for (int b = 0; b < me; b++)
        off += c->rcounts[b];
    memcpy(c->recvbuf, (char *)c->tmp + off * c->esize, c->rcounts[me] * c->esize);
    *done = 1;
    return WEFT_SUCCESS;
}

void weft__reduce_scatterv_rd(weft__coll_t *c)
{
    c->step = rs_step;
}
