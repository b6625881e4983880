/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * direct.c: the direct allreduce, for tiny messages.
 *
 * Every rank sends its whole buffer to every other and receives all of
 * theirs in one round, then reduces the n inputs itself: one message
 * latency against log2 n for recursive doubling, at n - 1 times the bytes
 * on every link. Every rank folds the inputs in rank order, so all of them
 * compute the same bits.
 */
#include "config.h"

#include <stdint.h>
#include <string.h>

#include "core/coll/algo/algo.h"
#include "core/base/error.h"
#include "core/dt/reduce.h"

/* c->ctx holds the n inputs, rank order, this rank's among them. */
static weft_result_t direct_step(weft__coll_t *c, int *done)
{
    int n = c->gsize, me = c->grank, nops = 0;
    size_t bytes = c->count * c->esize;
    const char *in = c->sendbuf == WEFT_IN_PLACE ? c->recvbuf : c->sendbuf;
    char *all;
    weft_p2p_op_t *ops;

    if (c->phase++ == 0) {
        if (n == 1 || !bytes) {
            if (bytes && in != c->recvbuf)
                memcpy(c->recvbuf, in, bytes);
            *done = 1;
            return WEFT_SUCCESS;
        }
        if (bytes > SIZE_MAX / (size_t)n ||
            !(c->ctx = weft__coll_scratch(c, (size_t)n * bytes)) ||
            !(ops = weft__coll_scratch(c, 2 * (size_t)n * sizeof(*ops))))
            return weft__error(WEFT_ERR_NO_MEMORY, "allreduce: out of memory");
        all = c->ctx;
        memcpy(all + (size_t)me * bytes, in, bytes);
        for (int k = 1; k < n; k++) {
            int to = (me + k) % n, from = (me - k + n) % n;

            ops[nops++] = (weft_p2p_op_t){ WEFT_P2P_SEND, all + (size_t)me * bytes, bytes,
                                           WEFT_UINT8, to, 0 };
            ops[nops++] = (weft_p2p_op_t){ WEFT_P2P_RECV, all + (size_t)from * bytes, bytes,
                                           WEFT_UINT8, from, 0 };
        }
        return weft__coll_post(c, nops, ops);
    }
    all = c->ctx;
    weft__reduce(c->recvbuf, all, all + bytes, c->count, c->dt, c->op);
    for (int r = 2; r < n; r++)
        weft__reduce(c->recvbuf, c->recvbuf, all + (size_t)r * bytes, c->count, c->dt, c->op);
    if (c->op == WEFT_AVG)
        weft__reduce_avg_finish(c->recvbuf, c->count, c->dt, n);
    *done = 1;
    return WEFT_SUCCESS;
}

void weft__allreduce_direct(weft__coll_t *c)
{
    c->step = direct_step;
}
