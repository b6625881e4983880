/*
 * coll_bruck.c: Bruck's allgather, for small blocks and any number of
 * ranks.
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

#include "core/coll.h"
#include "core/error.h"

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
