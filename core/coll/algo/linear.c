/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * linear.c: gather, scatter and all-to-all with their v-forms, as
 * direct exchanges.
 *
 * Gather and scatter move each rank's block straight between it and the
 * root, all posted at once: the root's link carries every byte once,
 * which is the bound of these operations. All-to-all is pairwise exchange:
 * in step k rank r sends to r+k and receives from r-k, so every step is a
 * permutation and no rank is a hot spot; for small blocks, the exchanges
 * with a window of peers are posted at once instead (scattered).
 */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "core/coll/algo/algo.h"
#include "core/base/error.h"

/* Posts ops and frees them; with none (a single rank) the collective is
 * done. */
static weft_result_t post_all(weft__coll_t *c, weft_p2p_op_t *ops, int nops, int *done)
{
    weft_result_t rc = nops ? weft__coll_post(c, nops, ops) : WEFT_SUCCESS;

    *done = !nops;
    free(ops);
    return rc;
}

/* ---------------------------------------------------------------- gatherv */

/* Root: rcounts[i] elements from rank i land at rdispls[i]; its own block
 * comes from sendbuf unless in place. Others send count elements. */
static weft_result_t gather_step(weft__coll_t *c, int *done)
{
    int n = c->gsize, me = c->grank, nops = 0;
    char *rb = c->recvbuf;
    weft_p2p_op_t *ops;

    if (c->phase++ > 0) {
        *done = 1;
        return WEFT_SUCCESS;
    }
    if (me != c->root) {
        weft_p2p_op_t op = { WEFT_P2P_SEND, (void *)c->sendbuf, c->count * c->esize,
                             WEFT_UINT8, c->root, 0 };

        return weft__coll_post(c, 1, &op);
    }
    if (c->sendbuf != WEFT_IN_PLACE && c->rcounts[me] &&
        c->sendbuf != rb + c->rdispls[me] * c->esize)
        memcpy(rb + c->rdispls[me] * c->esize, c->sendbuf, c->rcounts[me] * c->esize);
    if (!(ops = malloc((size_t)n * sizeof(*ops))))
        return weft__error(WEFT_ERR_NO_MEMORY, "gather: out of memory");
    for (int i = 0; i < n; i++)
        if (i != me)
            ops[nops++] = (weft_p2p_op_t){ WEFT_P2P_RECV, rb + c->rdispls[i] * c->esize,
                                           c->rcounts[i] * c->esize, WEFT_UINT8, i, 0 };
    return post_all(c, ops, nops, done);
}

void weft__gatherv_linear(weft__coll_t *c)
{
    c->step = gather_step;
}

/* --------------------------------------------------------------- scatterv */

/* Root: scounts[i] elements at sdispls[i] go to rank i; its own block is
 * copied to recvbuf unless recvbuf is WEFT_IN_PLACE. Others receive count
 * elements. */
static weft_result_t scatter_step(weft__coll_t *c, int *done)
{
    int n = c->gsize, me = c->grank, nops = 0;
    const char *sb = c->sendbuf;
    weft_p2p_op_t *ops;

    if (c->phase++ > 0) {
        *done = 1;
        return WEFT_SUCCESS;
    }
    if (me != c->root) {
        weft_p2p_op_t op = { WEFT_P2P_RECV, c->recvbuf, c->count * c->esize, WEFT_UINT8,
                             c->root, 0 };

        return weft__coll_post(c, 1, &op);
    }
    if (c->recvbuf != WEFT_IN_PLACE && c->scounts[me] &&
        c->recvbuf != sb + c->sdispls[me] * c->esize)
        memcpy(c->recvbuf, sb + c->sdispls[me] * c->esize, c->scounts[me] * c->esize);
    if (!(ops = malloc((size_t)n * sizeof(*ops))))
        return weft__error(WEFT_ERR_NO_MEMORY, "scatter: out of memory");
    for (int i = 0; i < n; i++)
        if (i != me)
            ops[nops++] = (weft_p2p_op_t){ WEFT_P2P_SEND, (void *)(sb + c->sdispls[i] * c->esize),
                                           c->scounts[i] * c->esize, WEFT_UINT8, i, 0 };
    return post_all(c, ops, nops, done);
}

void weft__scatterv_linear(weft__coll_t *c)
{
    c->step = scatter_step;
}

/* --------------------------------------------------------------- alltoallv */

/* In place (sendbuf WEFT_IN_PLACE), the outgoing blocks are first copied
 * aside, laid out by rcounts/rdispls as MPI does; then this rank's own
 * block is copied. */
static weft_result_t alltoall_setup(weft__coll_t *c)
{
    int n = c->gsize, me = c->grank;
    char *rb = c->recvbuf;
    const char *sb;

    if (c->sendbuf == WEFT_IN_PLACE) {
        size_t extent = 0;

        for (int i = 0; i < n; i++)
            if (c->rcounts[i] && c->rdispls[i] + c->rcounts[i] > extent)
                extent = c->rdispls[i] + c->rcounts[i];
        if (!(c->tmp = malloc(extent * c->esize + 1)))
            return weft__error(WEFT_ERR_NO_MEMORY, "alltoall: out of memory");
        if (extent)
            memcpy(c->tmp, rb, extent * c->esize);
        c->sendbuf = c->tmp;
    }
    sb = c->sendbuf;
    if (c->rcounts[me] && sb + c->sdispls[me] * c->esize != rb + c->rdispls[me] * c->esize)
        memmove(rb + c->rdispls[me] * c->esize, sb + c->sdispls[me] * c->esize,
                c->rcounts[me] * c->esize);
    return WEFT_SUCCESS;
}

/* Step k's exchange: send to rank me + k, receive from me - k; the
 * operations it needs, at most 2. An empty block is not sent at all: its
 * receiver's count for it is zero too (the counts of a pair agree), so
 * the receiver skips it likewise, and sparse splits (a mixture of experts'
 * routing) cost no message per empty pair. */
static int exchange(const weft__coll_t *c, int k, weft_p2p_op_t *ops)
{
    int n = c->gsize, me = c->grank, to = (me + k) % n, from = (me - k + n) % n, nops = 0;

    if (c->scounts[to])
        ops[nops++] = (weft_p2p_op_t){ WEFT_P2P_SEND,
                                       (void *)((const char *)c->sendbuf +
                                                c->sdispls[to] * c->esize),
                                       c->scounts[to] * c->esize, WEFT_UINT8, to, 0 };
    if (c->rcounts[from])
        ops[nops++] = (weft_p2p_op_t){ WEFT_P2P_RECV,
                                       (char *)c->recvbuf + c->rdispls[from] * c->esize,
                                       c->rcounts[from] * c->esize, WEFT_UINT8, from, 0 };
    return nops;
}

/* In place: in step k (0 .. n-1) rank r swaps block p = k - r (mod n)
 * with rank p, whose partner in that step is r again; the block goes out
 * from a copy, since the answer lands where it was. One block of scratch
 * at a time instead of a copy of the whole buffer: that copy, 32 MiB
 * allocated and faulted in afresh on every call, made an in-place
 * all-to-all at 2 ranks seven times slower than out of place. */
static weft_result_t alltoall_in_place_step(weft__coll_t *c, int *done)
{
    int n = c->gsize, me = c->grank;
    char *rb = c->recvbuf;

    if (c->phase == 0) {
        size_t largest = 0;

        for (int i = 0; i < n; i++)
            if (i != me && c->rcounts[i] > largest)
                largest = c->rcounts[i];
        if (!(c->tmp = malloc(largest * c->esize + 1)))
            return weft__error(WEFT_ERR_NO_MEMORY, "alltoall: out of memory");
    }
    while (c->phase < n) {
        int p = ((c->phase++ - me) % n + n) % n;
        size_t bytes = c->rcounts[p] * c->esize;
        weft_p2p_op_t ops[2];

        /* The pair's counts agree: an empty block moves nothing either way. */
        if (p == me || !bytes)
            continue;
        memcpy(c->tmp, rb + c->rdispls[p] * c->esize, bytes);
        ops[0] = (weft_p2p_op_t){ WEFT_P2P_SEND, c->tmp, bytes, WEFT_UINT8, p, 0 };
        ops[1] = (weft_p2p_op_t){ WEFT_P2P_RECV, rb + c->rdispls[p] * c->esize, bytes,
                                  WEFT_UINT8, p, 0 };
        return weft__coll_post(c, 2, ops);
    }
    *done = 1;
    return WEFT_SUCCESS;
}

static weft_result_t alltoall_step(weft__coll_t *c, int *done)
{
    weft_p2p_op_t ops[2];
    weft_result_t rc;
    int nops = 0;

    if (c->sendbuf == WEFT_IN_PLACE) {
        c->step = alltoall_in_place_step;
        return alltoall_in_place_step(c, done);
    }
    if (c->phase == 0 && (rc = alltoall_setup(c)) != WEFT_SUCCESS)
        return rc;
    /* Steps with nothing to move are passed over at once. */
    while (!nops) {
        if (++c->phase >= c->gsize) {
            *done = 1;
            return WEFT_SUCCESS;
        }
        nops = exchange(c, c->phase, ops);
    }
    return weft__coll_post(c, nops, ops);
}

void weft__alltoallv_pairwise(weft__coll_t *c)
{
    c->step = alltoall_step;
}

/* Exchanges posted a window of peers at a time, in pairwise order: one
 * round of latency instead of n - 1 for small blocks, up to 33 ranks at
 * the default window, without flooding a large job. */
static weft_result_t alltoall_scattered_step(weft__coll_t *c, int *done)
{
    int n = c->gsize, w = weft__algo_alltoall_window(), nops = 0;
    weft_p2p_op_t *ops = c->ctx;
    weft_result_t rc;

    if (w == 0 || w > n - 1)
        w = n - 1;
    if (c->phase == 0) {
        if ((rc = alltoall_setup(c)) != WEFT_SUCCESS)
            return rc;
        c->phase = 1; /* the next peer distance to post */
        if (n > 1 && !(c->ctx = ops = weft__coll_scratch(c, 2 * (size_t)w * sizeof(*ops))))
            return WEFT_ERR_NO_MEMORY;
    }
    /* Windows with nothing to move are passed over at once. */
    while (!nops && c->phase < n) {
        int end = c->phase + w < n ? c->phase + w : n;

        for (; c->phase < end; c->phase++)
            nops += exchange(c, c->phase, ops + nops);
    }
    if (!nops) {
        *done = 1;
        return WEFT_SUCCESS;
    }
    return weft__coll_post(c, nops, ops);
}

void weft__alltoallv_scattered(weft__coll_t *c)
{
    c->step = alltoall_scattered_step;
}
