/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * barrier.c: the dissemination barrier, for any number of ranks.
 */
#include "config.h"

#include "core/coll/algo/algo.h"

/* Round k: tell rank + 2^k, hear from rank - 2^k; after ceil(log2 n)
 * rounds every rank has heard, transitively, from every other. */
static weft_result_t barrier_step(weft__coll_t *c, int *done)
{
    int n = c->gsize, me = c->grank, dist = 1 << c->round;
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
