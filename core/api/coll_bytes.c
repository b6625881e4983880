/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * coll_bytes.c: broadcast and allgather of byte strings whose lengths the
 * receivers do not know (torch's broadcast_object_list and
 * all_gather_object, for bytes the caller serialised). Each runs two
 * collectives in turn: the lengths, then the bytes into a buffer weft
 * allocates for the caller.
 */
#include "config.h"

#include <stdint.h>
#include <stdlib.h>

#include "core/api/coll_args.h"
#include "core/api/coll_stage.h"
#include "core/base/error.h"

WEFT_API void weft_free(void *ptr)
{
    free(ptr);
}

/* ----------------------------------------------------------- broadcast */

typedef struct bcast_bytes {
    void **buf;
    size_t *len;
    uint64_t n;        /* the root's length, broadcast first */
    void *data;        /* the buffer allocated here, until handed over */
} bcast_bytes_t;

static void bcast_bytes_free(void *p)
{
    bcast_bytes_t *b = p;

    free(b->data);
    free(b);
}

static weft_result_t bcast_child(weft__coll_t *c, void *buf, size_t count, weft_dtype_t dt,
                                 size_t esize)
{
    weft__coll_t *child = weft__coll_new(NULL, buf, count, esize, dt, WEFT_SUM, c->root);

    if (!child)
        return WEFT_ERR_NO_MEMORY;
    weft__bcast_binomial(child);
    return weft__coll_run_child(c, child);
}

static weft_result_t bcast_bytes_step(weft__coll_t *c, int *done)
{
    bcast_bytes_t *b = c->ctx;
    int root = c->comm->rank == c->root;

    switch (c->phase++) {
    case 0:
        if (root)
            b->n = *b->len;
        return bcast_child(c, &b->n, 1, WEFT_UINT64, sizeof(b->n));
    case 1:
        if (!root) {
            if (b->n > SIZE_MAX - 1 || !(b->data = malloc((size_t)b->n + 1)))
                return weft__error(WEFT_ERR_NO_MEMORY, "weft_broadcast_bytes: cannot allocate "
                                   "%llu bytes", (unsigned long long)b->n);
        }
        return bcast_child(c, root ? *b->buf : b->data, (size_t)b->n, WEFT_UINT8, 1);
    default:
        if (!root) {
            *b->buf = b->data;
            *b->len = (size_t)b->n;
            b->data = NULL;
        }
        *done = 1;
        return WEFT_SUCCESS;
    }
}

static weft_result_t start_bcast_bytes(const char *fn, void **buf, size_t *len, int root,
                                       weft_comm_t comm, weft_request_t *req)
{
    weft_result_t rc = weft__coll_check_call(comm, fn, req);
    bcast_bytes_t *b;
    weft__coll_t *c;

    if (rc == WEFT_SUCCESS)
        rc = weft__coll_check_root(fn, root, comm);
    if (rc == WEFT_SUCCESS && !buf)
        rc = weft__error(WEFT_ERR_INVALID_ARG, "%s: buf is NULL", fn);
    if (rc == WEFT_SUCCESS && !len)
        rc = weft__error(WEFT_ERR_INVALID_ARG, "%s: len is NULL", fn);
    if (rc == WEFT_SUCCESS && comm->rank == root && *len && !*buf)
        rc = weft__error(WEFT_ERR_INVALID_ARG, "%s: *buf is NULL at the root with *len %zu", fn,
                         *len);
    if (rc != WEFT_SUCCESS)
        return rc;
    if (!(c = weft__coll_new(NULL, NULL, 0, 1, WEFT_UINT8, WEFT_SUM, root)))
        return WEFT_ERR_NO_MEMORY;
    if (!(b = calloc(1, sizeof(*b)))) {
        weft__coll_free(c);
        return weft__error(WEFT_ERR_NO_MEMORY, "%s: out of memory", fn);
    }
    b->buf = buf;
    b->len = len;
    c->ctx = b;
    c->ctx_free = bcast_bytes_free;
    c->step = bcast_bytes_step;
    return weft__coll_launch(comm, c, WEFT__COLL_BCAST_BYTES, req);
}

WEFT_API weft_result_t weft_ibroadcast_bytes(void **buf, size_t *len, int root,
                                             weft_comm_t comm, weft_request_t *req)
{
    return start_bcast_bytes("weft_ibroadcast_bytes", buf, len, root, comm, req);
}

WEFT_API weft_result_t weft_broadcast_bytes(void **buf, size_t *len, int root,
                                            weft_comm_t comm)
{
    return start_bcast_bytes("weft_broadcast_bytes", buf, len, root, comm, WEFT__COLL_BLOCKING);
}

/* ----------------------------------------------------------- allgather */

typedef struct gather_bytes {
    const void *buf;
    void **out;
    size_t *lens;
    uint64_t mine;     /* this rank's length */
    uint64_t *all;     /* every rank's, gathered first */
    size_t *layout;    /* counts and displacements of the bytes */
    char *data;        /* the buffer allocated here, until handed over */
} gather_bytes_t;

static void gather_bytes_free(void *p)
{
    gather_bytes_t *g = p;

    free(g->all);
    free(g->layout);
    free(g->data);
    free(g);
}

static weft_result_t allgather_child(weft__coll_t *c, const void *sendbuf, void *recvbuf,
                                     const size_t *counts, const size_t *displs, size_t esize,
                                     weft_dtype_t dt)
{
    int me = c->comm->rank;
    weft__coll_t *child = weft__coll_new(sendbuf, recvbuf, counts[me], esize, dt, WEFT_SUM, 0);
    weft_result_t rc;

    if (!child)
        return WEFT_ERR_NO_MEMORY;
    rc = weft__coll_set_vectors(child, c->comm->size, NULL, NULL, counts, displs);
    if (rc != WEFT_SUCCESS) {
        weft__coll_free(child);
        return rc;
    }
    weft__allgatherv_ring(child);
    return weft__coll_run_child(c, child);
}

static weft_result_t gather_bytes_step(weft__coll_t *c, int *done)
{
    gather_bytes_t *g = c->ctx;
    int n = c->comm->size;
    size_t total = 0;

    switch (c->phase++) {
    case 0:
        g->all = malloc((size_t)n * sizeof(*g->all));
        g->layout = malloc(2 * (size_t)n * sizeof(*g->layout));
        if (!g->all || !g->layout)
            return weft__error(WEFT_ERR_NO_MEMORY, "weft_allgather_bytes: out of memory");
        for (int i = 0; i < n; i++) {
            g->layout[i] = 1;
            g->layout[n + i] = (size_t)i;
        }
        return allgather_child(c, &g->mine, g->all, g->layout, g->layout + n, sizeof(uint64_t),
                               WEFT_UINT64);
    case 1:
        for (int i = 0; i < n; i++) {
            if (g->all[i] > SIZE_MAX - total - 1)
                return weft__error(WEFT_ERR_NO_MEMORY, "weft_allgather_bytes: the ranks' "
                                   "lengths add up to more than memory can hold");
            g->layout[i] = (size_t)g->all[i];
            g->layout[n + i] = total;
            total += (size_t)g->all[i];
        }
        if (!(g->data = malloc(total + 1)))
            return weft__error(WEFT_ERR_NO_MEMORY, "weft_allgather_bytes: cannot allocate %zu "
                               "bytes", total);
        return allgather_child(c, g->buf, g->data, g->layout, g->layout + n, 1, WEFT_UINT8);
    default:
        for (int i = 0; i < n; i++)
            g->lens[i] = g->layout[i];
        *g->out = g->data;
        g->data = NULL;
        *done = 1;
        return WEFT_SUCCESS;
    }
}

static weft_result_t start_gather_bytes(const char *fn, const void *buf, size_t len, void **out,
                                        size_t *lens, weft_comm_t comm, weft_request_t *req)
{
    weft_result_t rc = weft__coll_check_call(comm, fn, req);
    gather_bytes_t *g;
    weft__coll_t *c;

    if (rc == WEFT_SUCCESS && len && !buf)
        rc = weft__error(WEFT_ERR_INVALID_ARG, "%s: buf is NULL with len %zu", fn, len);
    if (rc == WEFT_SUCCESS && !out)
        rc = weft__error(WEFT_ERR_INVALID_ARG, "%s: out is NULL", fn);
    if (rc == WEFT_SUCCESS && !lens)
        rc = weft__error(WEFT_ERR_INVALID_ARG, "%s: lens is NULL", fn);
    if (rc != WEFT_SUCCESS)
        return rc;
    if (!(c = weft__coll_new(NULL, NULL, 0, 1, WEFT_UINT8, WEFT_SUM, 0)))
        return WEFT_ERR_NO_MEMORY;
    if (!(g = calloc(1, sizeof(*g)))) {
        weft__coll_free(c);
        return weft__error(WEFT_ERR_NO_MEMORY, "%s: out of memory", fn);
    }
    g->buf = buf;
    g->out = out;
    g->lens = lens;
    g->mine = len;
    c->ctx = g;
    c->ctx_free = gather_bytes_free;
    c->step = gather_bytes_step;
    return weft__coll_launch(comm, c, WEFT__COLL_ALLGATHER_BYTES, req);
}

WEFT_API weft_result_t weft_iallgather_bytes(const void *buf, size_t len, void **out,
                                             size_t *lens, weft_comm_t comm,
                                             weft_request_t *req)
{
    return start_gather_bytes("weft_iallgather_bytes", buf, len, out, lens, comm, req);
}

WEFT_API weft_result_t weft_allgather_bytes(const void *buf, size_t len, void **out,
                                            size_t *lens, weft_comm_t comm)
{
    return start_gather_bytes("weft_allgather_bytes", buf, len, out, lens, comm,
                              WEFT__COLL_BLOCKING);
}
