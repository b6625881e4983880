/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * pairwise.c: reduce-scatter by pairwise exchange.
 *
 * In step k (1 .. n-1) rank r sends its input of block r + k straight to
 * rank r + k and receives rank r - k's input of block r, which it folds
 * into its own: every step is a permutation, each rank sends n - 1 blocks
 * once and reduces n - 1 of them, with no partial sums travelling. The
 * receive of step k + 1 is posted before step k's block is folded, so the
 * reduction overlaps the transfer. Blocks may have any sizes.
 */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "core/coll/algo/algo.h"
#include "core/base/error.h"
#include "core/dt/reduce.h"

typedef struct pairwise {
    const char *in;   /* every rank's blocks of this rank's input */
    char *acc;        /* block me's partial result */
    char *rbuf[2];    /* block me from the rank of step k, by k's parity */
} pairwise_t;

static void pairwise_free(void *p)
{
    pairwise_t *w = p;

    free(w->rbuf[0]);
    free(w);
}

static weft_result_t post_step(weft__coll_t *c, pairwise_t *w, int k)
{
    int n = c->gsize, me = c->grank, to = (me + k) % n, from = (me - k + n) % n;
    weft_p2p_op_t ops[2] = {
        { WEFT_P2P_SEND, (void *)(w->in + c->offs[to] * c->esize),
          c->rcounts[to] * c->esize, WEFT_UINT8, to, 0 },
        { WEFT_P2P_RECV, w->rbuf[k % 2], c->rcounts[me] * c->esize, WEFT_UINT8, from, 0 },
    };

    return weft__coll_post(c, 2, ops);
}

static weft_result_t setup(weft__coll_t *c, pairwise_t **out)
{
    int n = c->gsize, me = c->grank;
    int in_place = c->sendbuf == WEFT_IN_PLACE || c->sendbuf == c->recvbuf;
    size_t mine = c->rcounts[me] * c->esize;
    pairwise_t *w = calloc(1, sizeof(*w));
    weft_result_t rc;

    if (!w)
        return weft__error(WEFT_ERR_NO_MEMORY, "reduce_scatter: out of memory");
    c->ctx = w;
    c->ctx_free = pairwise_free;
    if ((rc = weft__coll_block_offsets(c, n)) != WEFT_SUCCESS)
        return rc;
    w->in = in_place ? c->recvbuf : c->sendbuf;
    /* In place, block me's result would overwrite input still to be sent:
     * it is assembled aside. */
    if (!(w->rbuf[0] = malloc(2 * mine + 1)) || (in_place && !(c->tmp = malloc(mine + 1))))
        return weft__error(WEFT_ERR_NO_MEMORY, "reduce_scatter: out of memory");
    w->rbuf[1] = w->rbuf[0] + mine;
    w->acc = in_place ? c->tmp : c->recvbuf;
    if (mine)
        memcpy(w->acc, w->in + c->offs[me] * c->esize, mine);
    *out = w;
    return WEFT_SUCCESS;
}

/* phase k: step k's exchange completed (0: none yet). */
static weft_result_t pairwise_step(weft__coll_t *c, int *done)
{
    int n = c->gsize, me = c->grank, k = c->phase++;
    pairwise_t *w = c->ctx;
    weft_result_t rc = WEFT_SUCCESS;

    if (k == 0) {
        if ((rc = setup(c, &w)) != WEFT_SUCCESS)
            return rc;
        if (n == 1 || c->offs[n] == 0)
            goto finish;
        return post_step(c, w, 1);
    }
    if (k + 1 < n)
        rc = post_step(c, w, k + 1);
    weft__reduce(w->acc, w->acc, w->rbuf[k % 2], c->rcounts[me], c->dt, c->op);
    if (rc != WEFT_SUCCESS || k + 1 < n)
        return rc;
finish:
    if (w->acc != c->recvbuf && c->rcounts[me])
        memcpy(c->recvbuf, w->acc, c->rcounts[me] * c->esize);
    if (c->op == WEFT_AVG)
        weft__reduce_avg_finish(c->recvbuf, c->rcounts[me], c->dt, n);
    *done = 1;
    return WEFT_SUCCESS;
}

void weft__reduce_scatterv_pairwise(weft__coll_t *c)
{
    c->step = pairwise_step;
}
