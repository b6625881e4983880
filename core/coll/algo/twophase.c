/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * twophase.c: large-message broadcast and reduce, each made of two
 * collectives over n blocks of the buffer.
 *
 * Broadcast (van de Geijn): the root scatters the blocks, then a ring
 * allgather gives everyone all of them. The root sends the buffer about
 * once instead of log2 n times (binomial tree), and every link carries
 * 2 (n - 1) / n of it.
 *
 * Reduce: a ring reduce-scatter leaves block r reduced at rank r, then the
 * root gathers the blocks: the ring's bandwidth, with the reduction spread
 * over every rank instead of done log2 n times on the tree's inner ones.
 */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "core/coll/algo/algo.h"
#include "core/base/error.h"
#include "core/dt/reduce.h"

/* c->offs: n + 1 block offsets, then n block counts (elements). */
static weft_result_t split_blocks(weft__coll_t *c)
{
    int n = c->gsize;
    size_t q = c->count / (size_t)n, extra = c->count % (size_t)n, *cnt;

    if (!(c->offs = malloc((2 * (size_t)n + 1) * sizeof(*c->offs))))
        return weft__error(WEFT_ERR_NO_MEMORY, "out of memory for %d blocks", n);
    cnt = c->offs + n + 1;
    for (int b = 0; b <= n; b++)
        c->offs[b] = q * (size_t)b + ((size_t)b < extra ? (size_t)b : extra);
    for (int b = 0; b < n; b++)
        cnt[b] = c->offs[b + 1] - c->offs[b];
    return WEFT_SUCCESS;
}

/* Runs k as c's next step, or frees it if its vectors cannot be set. */
static weft_result_t run(weft__coll_t *c, weft__coll_t *k, const size_t *scounts,
                         const size_t *sdispls, const size_t *rcounts, const size_t *rdispls)
{
    weft_result_t rc;

    if (!k)
        return WEFT_ERR_NO_MEMORY;
    rc = weft__coll_set_vectors(k, c->gsize, scounts, sdispls, rcounts, rdispls);
    if (rc != WEFT_SUCCESS) {
        weft__coll_free(k);
        return rc;
    }
    return weft__coll_run_child(c, k);
}

/* ---------------------------------------------------------------- broadcast */

static weft_result_t bcast_step(weft__coll_t *c, int *done)
{
    int n = c->gsize, me = c->grank;
    char *buf = c->recvbuf;
    const size_t *off = c->offs, *cnt;
    weft__coll_t *k;
    weft_result_t rc;

    switch (c->phase++) {
    case 0:
        if (n == 1 || !c->count)
            break;
        if ((rc = split_blocks(c)) != WEFT_SUCCESS)
            return rc;
        off = c->offs;
        cnt = off + n + 1;
        k = weft__coll_new(buf, me == c->root ? WEFT_IN_PLACE : buf + off[me] * c->esize,
                           cnt[me], c->esize, c->dt, WEFT_SUM, c->root);
        if (k)
            weft__scatterv_linear(k);
        return run(c, k, cnt, off, NULL, NULL);
    case 1:
        cnt = off + n + 1;
        k = weft__coll_new(WEFT_IN_PLACE, buf, cnt[me], c->esize, c->dt, WEFT_SUM, 0);
        if (k)
            weft__allgatherv_ring(k);
        return run(c, k, NULL, NULL, cnt, off);
    default:
        break;
    }
    *done = 1;
    return WEFT_SUCCESS;
}

void weft__bcast_scatter_allgather(weft__coll_t *c)
{
    c->step = bcast_step;
}

/* ------------------------------------------------------------------- reduce */

/* The input is c->sendbuf (the entry point resolved in place); block me's
 * result waits in c->tmp for the gather. */
static weft_result_t reduce_step(weft__coll_t *c, int *done)
{
    int n = c->gsize, me = c->grank;
    const size_t *off = c->offs, *cnt;
    weft__coll_t *k;
    weft_result_t rc;

    switch (c->phase++) {
    case 0:
        if (!c->count)
            break;
        if (n == 1) {
            if (c->recvbuf != c->sendbuf)
                memcpy(c->recvbuf, c->sendbuf, c->count * c->esize);
            break;
        }
        if ((rc = split_blocks(c)) != WEFT_SUCCESS)
            return rc;
        off = c->offs;
        cnt = off + n + 1;
        if (!(c->tmp = malloc(cnt[me] * c->esize + 1)))
            return weft__error(WEFT_ERR_NO_MEMORY, "reduce: out of memory");
        k = weft__coll_new(c->sendbuf, c->tmp, c->count, c->esize, c->dt, c->op, 0);
        if (k)
            weft__reduce_scatterv_ring(k);
        return run(c, k, NULL, NULL, cnt, NULL);
    case 1:
        cnt = off + n + 1;
        k = weft__coll_new(c->tmp, c->recvbuf, cnt[me], c->esize, c->dt, WEFT_SUM, c->root);
        if (k)
            weft__gatherv_linear(k);
        return run(c, k, NULL, NULL, cnt, off);
    default:
        break;
    }
    *done = 1;
    return WEFT_SUCCESS;
}

void weft__reduce_ring_gather(weft__coll_t *c)
{
    c->step = reduce_step;
}
