/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * rabenseifner.c: Rabenseifner's allreduce, a reduce-scatter by
 * recursive halving then an allgather by recursive doubling.
 *
 * As in recursive doubling (coll/algo/rd.c), the ranks beyond the largest power
 * of two p fold their input into a partner first and get the result back
 * last. Among the p others, step k of the reduce-scatter pairs ranks whose
 * numbers differ in bit log2(p) - 1 - k: each sends the half of its
 * current range the partner keeps and folds in the half it keeps, so after
 * log2 p steps rank i holds block i reduced over everyone, having sent
 * (p - 1) / p of the buffer. The allgather retraces the steps backwards
 * with the finished blocks. Bandwidth like the ring's, in 2 log2 p steps
 * instead of 2 (p - 1): the medium sizes' algorithm.
 */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "core/coll/algo/algo.h"
#include "core/base/error.h"
#include "core/dt/reduce.h"

typedef struct rab {
    int p, rem, newrank;
    int stage;           /* 0 fold-in, 1 halving, 2 doubling, 3 fold-out */
    int mask;            /* the step in flight */
    int lo, hi;          /* the blocks this rank holds, [lo, hi) */
    int keep_lo, keep_hi;/* the half kept in the halving step in flight */
    size_t *off;         /* p + 1 block offsets, in elements */
    char *tmp;
} rab_t;

static void rab_free(void *p)
{
    rab_t *r = p;

    free(r->off);
    free(r->tmp);
    free(r);
}

static int real_rank(const rab_t *r, int nr)
{
    return nr < r->rem ? 2 * nr + 1 : nr + r->rem;
}

static char *at(const weft__coll_t *c, const rab_t *r, int b)
{
    return (char *)c->recvbuf + r->off[b] * c->esize;
}

static size_t span(const weft__coll_t *c, const rab_t *r, int from, int to)
{
    return (r->off[to] - r->off[from]) * c->esize;
}

static weft_result_t exchange(weft__coll_t *c, int peer, const void *sbuf, size_t sbytes,
                              void *rbuf, size_t rbytes)
{
    weft_p2p_op_t ops[2] = {
        { WEFT_P2P_SEND, (void *)sbuf, sbytes, WEFT_UINT8, peer, 0 },
        { WEFT_P2P_RECV, rbuf, rbytes, WEFT_UINT8, peer, 0 },
    };

    return weft__coll_post(c, 2, ops);
}

static weft_result_t setup(weft__coll_t *c, rab_t **out)
{
    int n = c->gsize, me = c->grank;
    rab_t *r = calloc(1, sizeof(*r));

    if (!r)
        return weft__error(WEFT_ERR_NO_MEMORY, "allreduce: out of memory");
    c->ctx = r;
    c->ctx_free = rab_free;
    for (r->p = 1; r->p * 2 <= n; r->p *= 2)
        ;
    r->rem = n - r->p;
    r->newrank = me < 2 * r->rem ? (me % 2 ? me / 2 : -1) : me - r->rem;
    r->off = malloc(((size_t)r->p + 1) * sizeof(*r->off));
    r->tmp = malloc(c->count * c->esize);
    if (!r->off || !r->tmp)
        return weft__error(WEFT_ERR_NO_MEMORY, "allreduce: out of memory");
    for (int b = 0; b <= r->p; b++) {
        size_t q = c->count / (size_t)r->p, extra = c->count % (size_t)r->p;

        r->off[b] = q * (size_t)b + ((size_t)b < extra ? (size_t)b : extra);
    }
    r->lo = 0;
    r->hi = r->p;
    *out = r;
    return WEFT_SUCCESS;
}

static weft_result_t rab_step(weft__coll_t *c, int *done)
{
    int n = c->gsize, me = c->grank;
    size_t bytes = c->count * c->esize;
    rab_t *r = c->ctx;
    weft_result_t rc;

    if (c->phase == 0) {
        c->phase = 1;
        if (c->sendbuf != WEFT_IN_PLACE && c->sendbuf != c->recvbuf && bytes)
            memcpy(c->recvbuf, c->sendbuf, bytes);
        if (n == 1 || !bytes) {
            *done = 1;
            return WEFT_SUCCESS;
        }
        if ((rc = setup(c, &r)) != WEFT_SUCCESS)
            return rc;
        if (me < 2 * r->rem) {
            weft_p2p_op_t op = { me % 2 ? WEFT_P2P_RECV : WEFT_P2P_SEND,
                                 me % 2 ? r->tmp : c->recvbuf, bytes, WEFT_UINT8,
                                 me % 2 ? me - 1 : me + 1, 0 };

            return weft__coll_post(c, 1, &op);
        }
    } else if (r->stage == 0 && me < 2 * r->rem && me % 2) {
        weft__reduce(c->recvbuf, r->tmp, c->recvbuf, c->count, c->dt, c->op);
    } else if (r->stage == 1) {
        /* The kept half arrived from the partner: lower rank's data first. */
        int partner = r->newrank ^ r->mask;
        char *mine = at(c, r, r->keep_lo);
        size_t elems = span(c, r, r->keep_lo, r->keep_hi) / c->esize;

        if (partner < r->newrank)
            weft__reduce(mine, r->tmp, mine, elems, c->dt, c->op);
        else
            weft__reduce(mine, mine, r->tmp, elems, c->dt, c->op);
        r->lo = r->keep_lo;
        r->hi = r->keep_hi;
        r->mask >>= 1;
    } else if (r->stage == 2) {
        /* The partner's range arrived in place: the union is ours. */
        int width = r->hi - r->lo;

        if (r->newrank & r->mask)
            r->lo -= width;
        else
            r->hi += width;
        r->mask <<= 1;
    }
    if (r->stage == 0) {
        r->stage = 1;
        r->mask = r->p >> 1;
    }
    if (r->stage == 1 && r->newrank >= 0 && r->mask >= 1) {
        int mid = (r->lo + r->hi) / 2, partner = real_rank(r, r->newrank ^ r->mask);
        int send_lo = r->newrank & r->mask ? r->lo : mid;
        int send_hi = r->newrank & r->mask ? mid : r->hi;

        r->keep_lo = r->newrank & r->mask ? mid : r->lo;
        r->keep_hi = r->newrank & r->mask ? r->hi : mid;
        return exchange(c, partner, at(c, r, send_lo), span(c, r, send_lo, send_hi), r->tmp,
                        span(c, r, r->keep_lo, r->keep_hi));
    }
    if (r->stage == 1) {
        r->stage = 2;
        r->mask = 1;
        /* Rank i now holds block i; AVG divides its own block once. */
        if (c->op == WEFT_AVG && r->newrank >= 0)
            weft__reduce_avg_finish(at(c, r, r->lo), span(c, r, r->lo, r->hi) / c->esize,
                                    c->dt, n);
    }
    if (r->stage == 2 && r->newrank >= 0 && r->mask < r->p) {
        int width = r->hi - r->lo, partner = real_rank(r, r->newrank ^ r->mask);
        int plo = r->newrank & r->mask ? r->lo - width : r->hi;

        return exchange(c, partner, at(c, r, r->lo), span(c, r, r->lo, r->hi), at(c, r, plo),
                        span(c, r, plo, plo + width));
    }
    if (r->stage == 2) {
        r->stage = 3;
        if (me < 2 * r->rem) {
            weft_p2p_op_t op = { me % 2 ? WEFT_P2P_SEND : WEFT_P2P_RECV, c->recvbuf, bytes,
                                 WEFT_UINT8, me % 2 ? me - 1 : me + 1, 0 };

            return weft__coll_post(c, 1, &op);
        }
    }
    *done = 1;
    return WEFT_SUCCESS;
}

void weft__allreduce_rabenseifner(weft__coll_t *c)
{
    c->step = rab_step;
}
