/*
 * coll_algos.c: collective algorithms as round-by-round steps (coll.h).
 * Each works for any number of ranks, powers of two or not.
 */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "core/coll.h"
#include "core/error.h"
#include "core/reduce.h"

/* ---------------------------------------------------- dissemination barrier */

/* Round k: tell rank + 2^k, hear from rank - 2^k; after ceil(log2 n)
 * rounds every rank has heard, transitively, from every other. */
static weft_result_t barrier_step(weft__coll_t *c, int *done)
{
    int n = c->comm->size, me = c->comm->rank, dist = 1 << c->round;
    weft_p2p_op_t ops[2];

    if (dist >= n) {
        *done = 1;
        return WEFT_SUCCESS;
    }
    ops[0] = (weft_p2p_op_t){ WEFT_P2P_SEND, NULL, 0, WEFT_UINT8, (me + dist) % n, 0 };
    ops[1] = (weft_p2p_op_t){ WEFT_P2P_RECV, NULL, 0, WEFT_UINT8, (me - dist + n) % n, 0 };
    return weft__coll_post(c, 2, ops);
}

void weft__barrier_dissemination(weft__coll_t *c)
{
    c->step = barrier_step;
}

/* ---------------------------------------------------- binomial broadcast */

/* Ranks relative to the root (vr): vr receives from vr minus its lowest set
 * bit, then sends to vr + m for every power of two m below that bit (the
 * root: below the smallest power of two >= n), largest subtree first. */
static weft_result_t bcast_step(weft__coll_t *c, int *done)
{
    int n = c->comm->size, root = c->root, vr = (c->comm->rank - root + n) % n;
    size_t bytes = c->count * c->esize;
    weft_p2p_op_t ops[32];
    int nops = 0, low;

    if (c->phase == 0) {
        c->phase = 1;
        if (vr != 0 && bytes > 0) {
            ops[0] = (weft_p2p_op_t){ WEFT_P2P_RECV, c->recvbuf, bytes, WEFT_UINT8,
                                      ((vr - (vr & -vr)) + root) % n, 0 };
            return weft__coll_post(c, 1, ops);
        }
    }
    if (c->phase == 1) {
        c->phase = 2;
        if (vr) {
            low = vr & -vr;
        } else {
            low = 1;
            while (low < n)
                low <<= 1;
        }
        for (int m = low >> 1; m > 0 && bytes > 0; m >>= 1)
            if (vr + m < n)
                ops[nops++] = (weft_p2p_op_t){ WEFT_P2P_SEND, c->recvbuf, bytes, WEFT_UINT8,
                                               (vr + m + root) % n, 0 };
        if (nops)
            return weft__coll_post(c, nops, ops);
    }
    *done = 1;
    return WEFT_SUCCESS;
}

void weft__bcast_binomial(weft__coll_t *c)
{
    c->step = bcast_step;
}

/* ---------------------------------------------------- binomial-tree reduce */

/* The broadcast tree run backwards: vr receives the partial results of its
 * children (vr + m for each power of two m below its lowest set bit),
 * folds each into its accumulator, and sends that to its parent. The
 * accumulator is recvbuf at the root and a scratch buffer elsewhere. */
static weft_result_t reduce_step(weft__coll_t *c, int *done)
{
    int n = c->comm->size, root = c->root, vr = (c->comm->rank - root + n) % n;
    size_t bytes = c->count * c->esize;
    char *acc, *in;
    weft_p2p_op_t op;
    int low = 1;

    if (c->phase < 0) { /* the send to the parent finished */
        *done = 1;
        return WEFT_SUCCESS;
    }
    if (vr) {
        low = vr & -vr;
    } else {
        while (low < n)
            low <<= 1;
    }
    if (c->phase == 0) {
        if (bytes == 0) {
            *done = 1;
            return WEFT_SUCCESS;
        }
        c->tmp = malloc(vr == 0 ? bytes : 2 * bytes);
        if (!c->tmp)
            return weft__error(WEFT_ERR_NO_MEMORY, "reduce: out of memory");
    }
    acc = vr == 0 ? c->recvbuf : c->tmp;
    in = vr == 0 ? c->tmp : (char *)c->tmp + bytes;
    if (c->phase == 0) {
        if (c->sendbuf != WEFT_IN_PLACE && c->sendbuf != acc)
            memcpy(acc, c->sendbuf, bytes);
    } else {
        weft__reduce(acc, acc, in, c->count, c->dt, c->op); /* a child arrived */
    }
    /* Next child: vr + 2^phase, for the powers of two below low. */
    for (;;) {
        int m = 1 << c->phase;

        c->phase++;
        if (m >= low)
            break;
        if (vr + m < n) {
            op = (weft_p2p_op_t){ WEFT_P2P_RECV, in, bytes, WEFT_UINT8, (vr + m + root) % n, 0 };
            return weft__coll_post(c, 1, &op);
        }
    }
    if (vr) {
        c->phase = -1;
        op = (weft_p2p_op_t){ WEFT_P2P_SEND, acc, bytes, WEFT_UINT8, (vr - low + root) % n, 0 };
        return weft__coll_post(c, 1, &op);
    }
    if (c->op == WEFT_AVG)
        weft__reduce_avg_finish(acc, c->count, c->dt, n);
    *done = 1;
    return WEFT_SUCCESS;
}

void weft__reduce_binomial(weft__coll_t *c)
{
    c->step = reduce_step;
}
