/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * bruck.c: Bruck's allgather and all-to-all, for small blocks and any
 * number of ranks.
 *
 * Rank r keeps a scratch buffer whose block i is meant to hold rank
 * r + i's. In step k it sends its first min(2^k, n - 2^k) blocks to rank
 * r - 2^k and receives as many from rank r + 2^k behind them, so after
 * ceil(log2 n) steps (against the ring's n - 1) it holds all n; a final
 * local rotation puts them in rank order.
 */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "core/coll/algo/algo.h"
#include "core/base/error.h"

static weft_result_t bruck_step(weft__coll_t *c, int *done)
{
    int n = c->gsize, me = c->grank, dist = 1 << c->phase;
    size_t block = c->count * c->esize, have;
    char *rb = c->recvbuf, *t;
    weft_p2p_op_t ops[2];

    if (c->phase == 0) {
        const char *mine = c->sendbuf == WEFT_IN_PLACE ? rb + (size_t)me * block : c->sendbuf;

        if (n == 1 || block == 0) {
            if (n == 1 && mine != rb && block)
                memcpy(rb, mine, block);
            *done = 1;
            return WEFT_SUCCESS;
        }
        if (!(c->tmp = malloc((size_t)n * block)))
            return weft__error(WEFT_ERR_NO_MEMORY, "allgather: out of memory");
        memcpy(c->tmp, mine, block);
    }
    t = c->tmp;
    if (dist < n) {
        have = (size_t)(dist < n - dist ? dist : n - dist);
        c->phase++;
        ops[0] = (weft_p2p_op_t){ WEFT_P2P_SEND, t, have * block, WEFT_UINT8,
                                  (me - dist + n) % n, 0 };
        ops[1] = (weft_p2p_op_t){ WEFT_P2P_RECV, t + (size_t)dist * block, have * block,
                                  WEFT_UINT8, (me + dist) % n, 0 };
        return weft__coll_post(c, 2, ops);
    }
    /* Block i is rank me + i's. */
    for (int i = 0; i < n; i++)
        memcpy(rb + (size_t)((me + i) % n) * block, t + (size_t)i * block, block);
    *done = 1;
    return WEFT_SUCCESS;
}

void weft__allgather_bruck(weft__coll_t *c)
{
    c->step = bruck_step;
}

/* ---------------------------------------------------------------- alltoall */

/*
 * Bruck's all-to-all, for small equal blocks. Rank r's scratch block i
 * holds data bound for rank r + i. In the step of bit k it packs the blocks
 * whose index has bit k set into one message to rank r + k and unpacks the
 * same positions from rank r - k's, so a block moves by the bits of its
 * distance and, after ceil(log2 n) messages (against n - 1), block i holds
 * rank r - i's data for r. Each step sends about half the buffer: for
 * latency-bound sizes only. Intermediate ranks must know every block's
 * size, hence the even form only.
 */
typedef struct bruck_a2a {
    char *blocks;   /* n blocks, as above */
    char *out, *in; /* one step's packed blocks, n / 2 + 1 each */
    int k;          /* the bit of the step in flight */
} bruck_a2a_t;

static void bruck_a2a_free(void *p)
{
    bruck_a2a_t *b = p;

    free(b->blocks);
    free(b);
}

/* Copies the blocks with bit k set between the scratch and a packed buffer. */
static size_t pack(const weft__coll_t *c, const bruck_a2a_t *b, int unpack)
{
    size_t block = c->count * c->esize, at = 0;

    for (int i = 1; i < c->gsize; i++) {
        if (!(i & b->k))
            continue;
        if (unpack)
            memcpy(b->blocks + (size_t)i * block, b->in + at, block);
        else
            memcpy(b->out + at, b->blocks + (size_t)i * block, block);
        at += block;
    }
    return at;
}

static weft_result_t bruck_a2a_post(weft__coll_t *c, bruck_a2a_t *b)
{
    int n = c->gsize, me = c->grank;
    size_t bytes = pack(c, b, 0);
    weft_p2p_op_t ops[2] = {
        { WEFT_P2P_SEND, b->out, bytes, WEFT_UINT8, (me + b->k) % n, 0 },
        { WEFT_P2P_RECV, b->in, bytes, WEFT_UINT8, (me - b->k + n) % n, 0 },
    };

    return weft__coll_post(c, 2, ops);
}

static weft_result_t bruck_a2a_step(weft__coll_t *c, int *done)
{
    int n = c->gsize, me = c->grank;
    size_t block = c->count * c->esize, half = (size_t)(n / 2 + 1) * block;
    const char *in = c->sendbuf == WEFT_IN_PLACE ? c->recvbuf : c->sendbuf;
    bruck_a2a_t *b = c->ctx;

    if (c->phase++ == 0) {
        if (!block || n == 1) {
            if (block && in != c->recvbuf)
                memcpy(c->recvbuf, in, block);
            *done = 1;
            return WEFT_SUCCESS;
        }
        if (!(b = calloc(1, sizeof(*b))) || !(b->blocks = malloc((size_t)n * block + 2 * half))) {
            free(b);
            return weft__error(WEFT_ERR_NO_MEMORY, "alltoall: out of memory");
        }
        c->ctx = b;
        c->ctx_free = bruck_a2a_free;
        b->out = b->blocks + (size_t)n * block;
        b->in = b->out + half;
        for (int i = 0; i < n; i++)
            memcpy(b->blocks + (size_t)i * block, in + (size_t)((me + i) % n) * block, block);
        b->k = 1;
        return bruck_a2a_post(c, b);
    }
    pack(c, b, 1);
    b->k <<= 1;
    if (b->k < n)
        return bruck_a2a_post(c, b);
    /* Block i came from rank me - i. */
    for (int i = 0; i < n; i++)
        memcpy((char *)c->recvbuf + (size_t)((me - i + n) % n) * block,
               b->blocks + (size_t)i * block, block);
    *done = 1;
    return WEFT_SUCCESS;
}

void weft__alltoall_bruck(weft__coll_t *c)
{
    c->step = bruck_a2a_step;
}
