/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * tree.c: binomial-tree broadcast and reduce, pipelined.
 *
 * Ranks are numbered relative to the root (vr). vr's parent is vr minus
 * its lowest set bit; its children are vr + m for the powers of two m below
 * that bit (the root: below the smallest power of two >= n), largest
 * subtree first. Depth is ceil(log2 n).
 *
 * Large buffers move in chunks (weft__algo_chunk_bytes): in round r a rank
 * takes chunk r from one side of the tree while it passes an earlier chunk
 * on to the other, so all levels of the tree work at once and a large
 * broadcast or reduce costs about one buffer's transfer time plus one chunk
 * per level, instead of one buffer per level.
 */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "core/coll/algo/algo.h"
#include "core/base/error.h"
#include "core/dt/reduce.h"

#define TREE_MAX_CHILDREN 32

typedef struct tree {
    int parent;                       /* comm rank, -1 at the root */
    int nchildren;
    int children[TREE_MAX_CHILDREN];  /* comm ranks */
    size_t chunk, nchunks;            /* bytes per chunk, and how many */
    char *acc;                        /* reduce: this rank's partial result */
    char *in[2];                      /* reduce: chunks from the children, by round parity */
} tree_t;

static void tree_free(void *p)
{
    tree_t *t = p;

    free(t->in[0]);
}

/* Builds the tree of c's root; NULL ctx stays NULL on failure. */
static weft_result_t tree_new(weft__coll_t *c, size_t bytes, tree_t **out)
{
    int n = c->gsize, root = c->root, vr = (c->grank - root + n) % n, low = 1;
    tree_t *t = weft__coll_alloc(c, sizeof(*t));

    if (!t)
        return WEFT_ERR_NO_MEMORY;
    c->ctx = t;
    c->ctx_free = tree_free;
    if (vr) {
        low = vr & -vr;
        t->parent = (vr - low + root) % n;
    } else {
        while (low < n)
            low <<= 1;
        t->parent = -1;
    }
    for (int m = low >> 1; m > 0; m >>= 1)
        if (vr + m < n)
            t->children[t->nchildren++] = (vr + m + root) % n;
    t->chunk = weft__algo_chunk_bytes();
    if (t->chunk > bytes)
        t->chunk = bytes;
    t->chunk -= t->chunk % c->esize; /* reductions need whole elements */
    if (!t->chunk)
        t->chunk = c->esize;
    t->nchunks = (bytes + t->chunk - 1) / t->chunk;
    *out = t;
    return WEFT_SUCCESS;
}

static size_t chunk_len(const tree_t *t, size_t bytes, size_t j)
{
    size_t first = j * t->chunk;

    return bytes - first < t->chunk ? bytes - first : t->chunk;
}

/* ---------------------------------------------------------------- broadcast */

/* Round r: receive chunk r from the parent, send chunk r - 1 to the
 * children (the root sends chunk r: it has them all). */
static weft_result_t bcast_step(weft__coll_t *c, int *done)
{
    size_t bytes = c->count * c->esize;
    tree_t *t = c->ctx;
    weft_p2p_op_t ops[TREE_MAX_CHILDREN + 1];
    int nops = 0;
    size_t r = (size_t)c->phase++, sending;

    if (r == 0) {
        weft_result_t rc;

        if (bytes == 0 || c->gsize == 1) {
            *done = 1;
            return WEFT_SUCCESS;
        }
        if ((rc = tree_new(c, bytes, &t)) != WEFT_SUCCESS)
            return rc;
    }
    if (t->parent >= 0 && r < t->nchunks)
        ops[nops++] = (weft_p2p_op_t){ WEFT_P2P_RECV, (char *)c->recvbuf + r * t->chunk,
                                       chunk_len(t, bytes, r), WEFT_UINT8, t->parent, 0 };
    sending = t->parent >= 0 ? r - 1 : r; /* wraps to SIZE_MAX at r == 0 */
    if (sending < t->nchunks)
        for (int i = 0; i < t->nchildren; i++)
            ops[nops++] = (weft_p2p_op_t){ WEFT_P2P_SEND, (char *)c->recvbuf + sending * t->chunk,
                                           chunk_len(t, bytes, sending), WEFT_UINT8,
                                           t->children[i], 0 };
    if (!nops) { /* every chunk received and passed on */
        *done = 1;
        return WEFT_SUCCESS;
    }
    return weft__coll_post(c, nops, ops);
}

void weft__bcast_binomial(weft__coll_t *c)
{
    c->step = bcast_step;
}

/* ------------------------------------------------------------------- reduce */

/* Round r: receive chunk r from every child (into in[r % 2]) and send
 * chunk r - 2 to the parent. When round r completes, round r + 1 is posted
 * first (its send, chunk r - 1, was folded a round earlier), then chunk r
 * is folded: the reduction overlaps the next chunk's transfer. A leaf has
 * nothing to fold and sends chunk r in round r. */
static weft_result_t reduce_post(weft__coll_t *c, tree_t *t, size_t r)
{
    size_t bytes = c->count * c->esize, lag = t->nchildren ? 2 : 0, sending = r - lag;
    weft_p2p_op_t ops[TREE_MAX_CHILDREN + 1];
    int nops = 0;

    if (r < t->nchunks)
        for (int i = 0; i < t->nchildren; i++)
            ops[nops++] = (weft_p2p_op_t){ WEFT_P2P_RECV,
                                           t->in[r % 2] + (size_t)i * t->chunk,
                                           chunk_len(t, bytes, r), WEFT_UINT8,
                                           t->children[i], 0 };
    if (t->parent >= 0 && r >= lag && sending < t->nchunks)
        ops[nops++] = (weft_p2p_op_t){ WEFT_P2P_SEND, t->acc + sending * t->chunk,
                                       chunk_len(t, bytes, sending), WEFT_UINT8, t->parent, 0 };
    return nops ? weft__coll_post(c, nops, ops) : WEFT_SUCCESS;
}

static weft_result_t reduce_step(weft__coll_t *c, int *done)
{
    size_t bytes = c->count * c->esize, r;
    tree_t *t = c->ctx;
    weft_result_t rc;

    if (c->phase == 0) {
        int root = c->grank == c->root;

        if (bytes == 0) {
            *done = 1;
            return WEFT_SUCCESS;
        }
        if ((rc = tree_new(c, bytes, &t)) != WEFT_SUCCESS)
            return rc;
        /* The partial result: recvbuf at the root, scratch elsewhere; a
         * leaf sends its input as it is. */
        if (root) {
            t->acc = c->recvbuf;
        } else if (t->nchildren) {
            if (!(c->tmp = malloc(bytes)))
                return weft__error(WEFT_ERR_NO_MEMORY, "reduce: out of memory");
            t->acc = c->tmp;
        } else {
            t->acc = (char *)c->sendbuf;
        }
        if (t->acc != c->sendbuf)
            memcpy(t->acc, c->sendbuf, bytes);
        if (t->nchildren &&
            !(t->in[0] = malloc(2 * (size_t)t->nchildren * t->chunk)))
            return weft__error(WEFT_ERR_NO_MEMORY, "reduce: out of memory");
        t->in[1] = t->in[0] + (size_t)t->nchildren * t->chunk;
        c->phase = 1;
        if ((rc = reduce_post(c, t, 0)) != WEFT_SUCCESS || c->inner)
            return rc;
    }
    /* Round r = phase - 1 completed (or posted nothing). */
    for (;;) {
        r = (size_t)c->phase - 1;
        c->phase++;
        rc = reduce_post(c, t, r + 1);
        if (rc != WEFT_SUCCESS)
            return rc;
        if (r < t->nchunks)
            for (int i = 0; i < t->nchildren; i++)
                weft__reduce(t->acc + r * t->chunk, t->acc + r * t->chunk,
                             t->in[r % 2] + (size_t)i * t->chunk,
                             chunk_len(t, bytes, r) / c->esize, c->dt, c->op);
        if (c->inner)
            return WEFT_SUCCESS;
        if (r + 1 >= t->nchunks + (t->nchildren ? 2 : 0))
            break;
    }
    if (t->parent < 0 && c->op == WEFT_AVG)
        weft__reduce_avg_finish(t->acc, c->count, c->dt, c->gsize);
    *done = 1;
    return WEFT_SUCCESS;
}

void weft__reduce_binomial(weft__coll_t *c)
{
    c->step = reduce_step;
}
