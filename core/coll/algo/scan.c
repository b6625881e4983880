/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * scan.c: inclusive and exclusive prefix reductions by recursive
 * doubling.
 *
 * After round k, rank r's partial holds the reduction over ranks
 * max(0, r - 2^(k+1) + 1) .. r: in round k it sends its partial to r + 2^k
 * and folds in the one of r - 2^k. After ceil(log2 n) rounds the partial
 * is the inclusive prefix; the exclusive prefix is the fold of the partials
 * received, which cover 0 .. r - 1.
 */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "core/coll/algo/algo.h"
#include "core/base/error.h"
#include "core/dt/reduce.h"

typedef struct scan {
    int exclusive;
    int have_result;      /* exclusive: something was received */
    char *partial;        /* inclusive: recvbuf itself */
    char *rbuf;
    int received;         /* the round in flight receives */
} scan_t;

static void scan_free(void *p)
{
    scan_t *sc = p;

    if (sc->exclusive)
        free(sc->partial);
    free(sc->rbuf);
    free(sc);
}

static weft_result_t scan_setup(weft__coll_t *c, scan_t *sc)
{
    size_t bytes = c->count * c->esize;
    const void *in = c->sendbuf == WEFT_IN_PLACE ? c->recvbuf : c->sendbuf;

    sc->rbuf = malloc(bytes);
    if (sc->exclusive)
        sc->partial = malloc(bytes);
    else
        sc->partial = c->recvbuf;
    if (!sc->rbuf || !sc->partial)
        return weft__error(WEFT_ERR_NO_MEMORY, "scan: out of memory");
    if (in != sc->partial)
        memcpy(sc->partial, in, bytes);
    return WEFT_SUCCESS;
}

static weft_result_t scan_step(weft__coll_t *c, int *done)
{
    int n = c->gsize, me = c->grank;
    size_t bytes = c->count * c->esize;
    scan_t *sc = c->ctx;

    if (c->phase == 0) {
        weft_result_t rc;

        if (c->count == 0) {
            *done = 1;
            return WEFT_SUCCESS;
        }
        if (!sc)
            return weft__error(WEFT_ERR_NO_MEMORY, "scan: out of memory");
        rc = scan_setup(c, sc);
        if (rc != WEFT_SUCCESS)
            return rc;
    } else if (sc->received) {
        /* rbuf holds ranks below this one's partial: fold it in. */
        if (sc->exclusive && !sc->have_result)
            memcpy(c->recvbuf, sc->rbuf, bytes);
        else if (sc->exclusive)
            weft__reduce(c->recvbuf, sc->rbuf, c->recvbuf, c->count, c->dt, c->op);
        sc->have_result = 1;
        weft__reduce(sc->partial, sc->rbuf, sc->partial, c->count, c->dt, c->op);
    }
    for (;;) {
        int dist = 1 << c->phase, nops = 0;
        weft_p2p_op_t ops[2];

        if (dist >= n || c->phase >= 30)
            break;
        c->phase++;
        sc->received = me - dist >= 0;
        if (me + dist < n)
            ops[nops++] = (weft_p2p_op_t){ WEFT_P2P_SEND, sc->partial, bytes, WEFT_UINT8,
                                           me + dist, 0 };
        if (sc->received)
            ops[nops++] = (weft_p2p_op_t){ WEFT_P2P_RECV, sc->rbuf, bytes, WEFT_UINT8,
                                           me - dist, 0 };
        if (nops)
            return weft__coll_post(c, nops, ops);
    }
    if (c->op == WEFT_AVG) {
        if (!sc->exclusive)
            weft__reduce_avg_finish(c->recvbuf, c->count, c->dt, me + 1);
        else if (me > 0)
            weft__reduce_avg_finish(c->recvbuf, c->count, c->dt, me);
    }
    *done = 1;
    return WEFT_SUCCESS;
}

static void scan_recursive_doubling(weft__coll_t *c, int exclusive)
{
    scan_t *sc = calloc(1, sizeof(*sc));

    /* Out of memory shows at the first step (ctx NULL). */
    c->ctx = sc;
    c->ctx_free = sc ? scan_free : NULL;
    if (sc)
        sc->exclusive = exclusive;
    c->step = scan_step;
}

void weft__scan_rd(weft__coll_t *c)
{
    scan_recursive_doubling(c, 0);
}

void weft__exscan_rd(weft__coll_t *c)
{
    scan_recursive_doubling(c, 1);
}
