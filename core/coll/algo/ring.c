/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * ring.c: the ring algorithms — reduce-scatter, allgather and the
 * allreduce made of the two — for any number of ranks and any block sizes.
 *
 * Reduce-scatter: in step s (0 .. n-2) rank r sends block r-s-1 to r+1 and
 * receives block r-s-2 from r-1, which it reduces with its own input of
 * that block; after n-1 steps it holds block r reduced over every rank.
 * Every rank sends and receives (n-1)/n of the buffer, the bandwidth
 * optimum. Blocks move in chunks (weft__algo_chunk_bytes): the round that
 * receives chunk j+1 is posted before chunk j is reduced, so the
 * reduction overlaps the neighbour's transfer.
 *
 * Allgather: in step s rank r passes block r-s on to r+1 and receives
 * block r-s-1 from r-1.
 */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "core/coll/algo/algo.h"
#include "core/base/error.h"
#include "core/dt/reduce.h"

typedef struct ring {
    const size_t *off, *cnt;  /* reduce-scatter block b: cnt[b] elements at off[b] */
    size_t chunk;             /* elements per chunk */
    int s, j;                 /* the reduce-scatter round in flight */
    int parity;               /* which rbuf that round receives into */
    int in_recvbuf;           /* allreduce: partial sums go to their blocks of recvbuf */
    const char *in;           /* this rank's input, blocks at off */
    char *rbuf[2];            /* received chunks, alternately */
    char *part[2];            /* partial sums of the blocks passed on, by step */
    char *out;                /* where block r's result goes */
    int ag_step;              /* allgather rounds posted */
    const size_t *ag_off, *ag_cnt; /* allgather's blocks in recvbuf */
} ring_t;

static int mod(int a, int n)
{
    return ((a % n) + n) % n;
}

static int nchunks(const ring_t *g, int b)
{
    return g->cnt[b] ? (int)((g->cnt[b] + g->chunk - 1) / g->chunk) : 1;
}

/* Elements of chunk j of block b. */
static size_t chunk_len(const ring_t *g, int b, int j)
{
    size_t first = (size_t)j * g->chunk;

    if (first >= g->cnt[b])
        return 0;
    return g->cnt[b] - first < g->chunk ? g->cnt[b] - first : g->chunk;
}

static int send_block(const weft__coll_t *c, int s)
{
    return mod(c->grank - s - 1, c->gsize);
}

static int recv_block(const weft__coll_t *c, int s)
{
    return mod(c->grank - s - 2, c->gsize);
}

static int rounds_in_step(const weft__coll_t *c, const ring_t *g, int s)
{
    int a = nchunks(g, send_block(c, s)), b = nchunks(g, recv_block(c, s));

    return a > b ? a : b;
}

/* Where chunk j of block b's sum at step s is: the data sent at step s + 1. */
static char *sum_at(const weft__coll_t *c, const ring_t *g, int s, int b, int j)
{
    size_t skip = (size_t)j * g->chunk * c->esize;

    if (g->in_recvbuf)
        return (char *)c->recvbuf + g->off[b] * c->esize + skip;
    if (s == c->gsize - 2)
        return g->out + skip;
    return g->part[s % 2] + skip;
}

static weft_result_t rs_post(weft__coll_t *c, ring_t *g)
{
    int n = c->gsize, me = c->grank, s = g->s, j = g->j;
    int bs = send_block(c, s), br = recv_block(c, s), nops = 0;
    weft_p2p_op_t ops[2];

    if (j < nchunks(g, bs)) {
        const char *src = s == 0 ? g->in + (g->off[bs] + (size_t)j * g->chunk) * c->esize
                                 : sum_at(c, g, s - 1, bs, j);

        ops[nops++] = (weft_p2p_op_t){ WEFT_P2P_SEND, (void *)src, chunk_len(g, bs, j) * c->esize,
                                       WEFT_UINT8, mod(me + 1, n), 0 };
    }
    if (j < nchunks(g, br))
        ops[nops++] = (weft_p2p_op_t){ WEFT_P2P_RECV, g->rbuf[g->parity],
                                       chunk_len(g, br, j) * c->esize, WEFT_UINT8,
                                       mod(me - 1, n), 0 };
    return weft__coll_post(c, nops, ops);
}

/* Folds the chunk received in round (s, j) (held in rbuf[parity]) into
 * this rank's input of that block. */
static void rs_reduce(weft__coll_t *c, const ring_t *g, int s, int j, int parity)
{
    int br = recv_block(c, s);
    size_t len = chunk_len(g, br, j);

    if (j >= nchunks(g, br) || !len)
        return;
    weft__reduce(sum_at(c, g, s, br, j), g->in + (g->off[br] + (size_t)j * g->chunk) * c->esize,
                 g->rbuf[parity], len, c->dt, c->op);
}

/* One reduce-scatter round finished (or none yet: s < 0). Posts the next
 * round, reduces what arrived; *finished when block r is complete. */
static weft_result_t rs_advance(weft__coll_t *c, ring_t *g, int *finished)
{
    int n = c->gsize, s = g->s, j = g->j, parity = g->parity;
    int last_step = n - 2, post_first;
    weft_result_t rc = WEFT_SUCCESS;

    *finished = 0;
    if (s < 0) {
        g->s = 0;
        g->j = 0;
        return rs_post(c, g);
    }
    if (j + 1 < rounds_in_step(c, g, s)) {
        g->j = j + 1;
    } else {
        g->s = s + 1;
        g->j = 0;
    }
    g->parity ^= 1;
    /* The next round sends what this one received only when a step is one
     * round long; otherwise it goes out before the reduction. */
    post_first = g->s <= last_step && !(g->s == s + 1 && g->j == j);
    if (post_first)
        rc = rs_post(c, g);
    rs_reduce(c, g, s, j, parity);
    if (rc == WEFT_SUCCESS && !post_first && g->s <= last_step)
        rc = rs_post(c, g);
    *finished = g->s > last_step;
    return rc;
}

static void ring_free(void *p)
{
    ring_t *g = p;

    free(g->rbuf[0]);
    free(g->part[0]);
}

/* Sets up the reduce-scatter of blocks (off, cnt) of input in. */
static weft_result_t ring_new(weft__coll_t *c, const size_t *off, const size_t *cnt,
                              const char *in, int in_recvbuf, ring_t **out)
{
    int n = c->gsize;
    size_t chunk_bytes = weft__algo_chunk_bytes(), largest = 0;
    ring_t *g = weft__coll_alloc(c, sizeof(*g));

    if (!g)
        return WEFT_ERR_NO_MEMORY;
    c->ctx = g;
    c->ctx_free = ring_free;
    g->off = off;
    g->cnt = cnt;
    g->in = in;
    g->in_recvbuf = in_recvbuf;
    g->s = -1;
    g->chunk = chunk_bytes / c->esize ? chunk_bytes / c->esize : 1;
    for (int b = 0; b < n; b++)
        if (cnt[b] > largest)
            largest = cnt[b];
    if (largest < g->chunk)
        g->chunk = largest ? largest : 1;
    g->rbuf[0] = malloc(2 * g->chunk * c->esize);
    if (!g->rbuf[0])
        return weft__error(WEFT_ERR_NO_MEMORY, "ring: out of memory");
    g->rbuf[1] = g->rbuf[0] + g->chunk * c->esize;
    if (!in_recvbuf && n > 2) {
        g->part[0] = malloc(2 * largest * c->esize);
        if (!g->part[0])
            return weft__error(WEFT_ERR_NO_MEMORY, "ring: out of memory");
        g->part[1] = g->part[0] + largest * c->esize;
    }
    *out = g;
    return WEFT_SUCCESS;
}

/* Allgather step s of blocks (ag_off, ag_cnt) of recvbuf. */
static weft_result_t ag_post(weft__coll_t *c, ring_t *g)
{
    int n = c->gsize, me = c->grank, s = g->ag_step++;
    int bs = mod(me - s, n), br = mod(me - s - 1, n);
    char *rb = c->recvbuf;
    weft_p2p_op_t ops[2];

    ops[0] = (weft_p2p_op_t){ WEFT_P2P_SEND, rb + g->ag_off[bs] * c->esize,
                              g->ag_cnt[bs] * c->esize, WEFT_UINT8, mod(me + 1, n), 0 };
    ops[1] = (weft_p2p_op_t){ WEFT_P2P_RECV, rb + g->ag_off[br] * c->esize,
                              g->ag_cnt[br] * c->esize, WEFT_UINT8, mod(me - 1, n), 0 };
    return weft__coll_post(c, 2, ops);
}

/* --------------------------------------------------------------- allreduce */

/* Phases: 0 set-up, 1 reduce-scatter, 2 allgather. */
static weft_result_t allreduce_step(weft__coll_t *c, int *done)
{
    int n = c->gsize, me = c->grank;
    ring_t *g = c->ctx;
    weft_result_t rc;
    int finished;

    if (c->phase == 0) {
        const char *in = c->sendbuf == WEFT_IN_PLACE ? c->recvbuf : c->sendbuf;
        size_t *off, *cnt;

        if (n == 1 || c->count == 0) {
            if (in != c->recvbuf && c->count)
                memcpy(c->recvbuf, in, c->count * c->esize);
            *done = 1;
            return WEFT_SUCCESS;
        }
        c->offs = malloc((2 * (size_t)n + 1) * sizeof(*c->offs));
        if (!c->offs)
            return weft__error(WEFT_ERR_NO_MEMORY, "allreduce: out of memory");
        off = c->offs;
        cnt = c->offs + n + 1;
        for (int b = 0; b <= n; b++) {
            size_t q = c->count / (size_t)n, extra = c->count % (size_t)n;

            off[b] = q * (size_t)b + ((size_t)b < extra ? (size_t)b : extra);
        }
        for (int b = 0; b < n; b++)
            cnt[b] = off[b + 1] - off[b];
        /* Out of place, no copy of the input first: each block's first
         * reduction reads sendbuf and writes recvbuf, and the one block
         * this rank never reduces (r - 1, sent at step 0) comes back whole
         * in the allgather. 3 ms of a 32 MiB allreduce at 2 ranks. */
        rc = ring_new(c, off, cnt, in, 1, &g);
        if (rc != WEFT_SUCCESS)
            return rc;
        g->ag_off = off;
        g->ag_cnt = cnt;
        c->phase = 1;
        return rs_advance(c, g, &finished);
    }
    if (c->phase == 1) {
        rc = rs_advance(c, g, &finished);
        if (rc != WEFT_SUCCESS || !finished)
            return rc;
        if (c->op == WEFT_AVG)
            weft__reduce_avg_finish((char *)c->recvbuf + g->off[me] * c->esize, g->cnt[me],
                                    c->dt, n);
        c->phase = 2;
    }
    if (g->ag_step < n - 1)
        return ag_post(c, g);
    *done = 1;
    return WEFT_SUCCESS;
}

void weft__allreduce_ring(weft__coll_t *c)
{
    c->step = allreduce_step;
}

/* ---------------------------------------------------------- reduce-scatter */

/* The input is c->sendbuf (blocks of rcounts[b] back to back), or recvbuf
 * in place; block r's result goes to recvbuf. */
static weft_result_t reduce_scatter_step(weft__coll_t *c, int *done)
{
    int n = c->gsize, me = c->grank;
    int in_place = c->sendbuf == WEFT_IN_PLACE || c->sendbuf == c->recvbuf;
    const char *in = in_place ? c->recvbuf : c->sendbuf;
    ring_t *g = c->ctx;
    weft_result_t rc;
    int finished;

    if (c->phase == 0) {
        if ((rc = weft__coll_block_offsets(c, n)) != WEFT_SUCCESS)
            return rc;
        if (c->offs[n] == 0) {
            *done = 1;
            return WEFT_SUCCESS;
        }
        if (n == 1) {
            if (!in_place)
                memcpy(c->recvbuf, in, c->rcounts[0] * c->esize);
            *done = 1;
            return WEFT_SUCCESS;
        }
        rc = ring_new(c, c->offs, c->rcounts, in, 0, &g);
        if (rc != WEFT_SUCCESS)
            return rc;
        /* In place, block r's result must not overwrite input still to be
         * read: it is assembled aside and moved at the end. */
        g->out = in_place ? malloc(c->rcounts[me] * c->esize + 1) : c->recvbuf;
        if (!g->out)
            return weft__error(WEFT_ERR_NO_MEMORY, "reduce_scatter: out of memory");
        c->tmp = in_place ? g->out : NULL;
        c->phase = 1;
        return rs_advance(c, g, &finished);
    }
    rc = rs_advance(c, g, &finished);
    if (rc != WEFT_SUCCESS || !finished)
        return rc;
    if (g->out != c->recvbuf)
        memcpy(c->recvbuf, g->out, c->rcounts[me] * c->esize);
    if (c->op == WEFT_AVG)
        weft__reduce_avg_finish(c->recvbuf, c->rcounts[me], c->dt, n);
    *done = 1;
    return WEFT_SUCCESS;
}

void weft__reduce_scatterv_ring(weft__coll_t *c)
{
    c->step = reduce_scatter_step;
}

/* --------------------------------------------------------------- allgather */

/* Blocks rcounts[b] at rdispls[b] of recvbuf; this rank's comes from
 * sendbuf unless in place. */
static weft_result_t allgather_step(weft__coll_t *c, int *done)
{
    int n = c->gsize, me = c->grank;
    ring_t *g = c->ctx;

    if (c->phase == 0) {
        char *mine = (char *)c->recvbuf + c->rdispls[me] * c->esize;
        size_t total = 0;

        for (int b = 0; b < n; b++)
            total += c->rcounts[b];
        if (c->sendbuf != WEFT_IN_PLACE && c->sendbuf != c->recvbuf && c->sendbuf != mine &&
            c->rcounts[me])
            memcpy(mine, c->sendbuf, c->rcounts[me] * c->esize);
        if (n == 1 || total == 0) {
            *done = 1;
            return WEFT_SUCCESS;
        }
        if (!(g = weft__coll_alloc(c, sizeof(*g))))
            return WEFT_ERR_NO_MEMORY;
        c->ctx = g;
        g->ag_off = c->rdispls;
        g->ag_cnt = c->rcounts;
        c->phase = 1;
    }
    if (g->ag_step < n - 1)
        return ag_post(c, g);
    *done = 1;
    return WEFT_SUCCESS;
}

void weft__allgatherv_ring(weft__coll_t *c)
{
    c->step = allgather_step;
}
