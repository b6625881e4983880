/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * coll_axis.c: collectives on row-major N-D arrays split or joined along an
 * axis (torch.cat / torch.chunk along dim).
 *
 * An array of shape s split along axis a is outer x s[a] x inner, with
 * outer the product of the dimensions before a and inner of those after.
 * Block r of the split is rows r*s[a]/n .. of every outer slice: when
 * outer is 1 the blocks are contiguous and the plain collective does the
 * work in place; otherwise the blocks are packed rank-major into a scratch
 * buffer (n x outer x blk x inner) before the collective, or unpacked from
 * it after.
 */
#include "config.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core/api/coll_args.h"
#include "core/api/coll_stage.h"
#include "core/base/error.h"

enum axis_kind { AX_GATHER, AX_ALLGATHER, AX_SCATTER, AX_REDUCE_SCATTER, AX_ALLTOALL };

typedef struct axis {
    enum axis_kind kind;
    size_t outer, rows, inner;  /* rows: one block's extent along the axis; inner in bytes */
    size_t block;               /* elements of one rank's block */
    char *packed;               /* rank-major blocks, or NULL when outer is 1 */
    char *packed_in;            /* alltoall: the packed input */
    size_t *layout;             /* even counts and displacements for the v-algorithms */
} axis_t;

static void axis_free(void *p)
{
    axis_t *x = p;

    free(x->packed);
    free(x->packed_in);
    free(x->layout);
    free(x);
}

/* Joined (outer x n*rows x inner) -> rank-major (n x outer x rows x inner),
 * or back when unpack is set. */
static void repack(const axis_t *x, int n, char *joined, char *ranked, int unpack)
{
    size_t row_bytes = x->rows * x->inner;

    for (int r = 0; r < n; r++)
        for (size_t o = 0; o < x->outer; o++) {
            char *j = joined + (o * (size_t)n + (size_t)r) * row_bytes;
            char *k = ranked + ((size_t)r * x->outer + o) * row_bytes;

            if (unpack)
                memcpy(j, k, row_bytes);
            else
                memcpy(k, j, row_bytes);
        }
}

/* The plain collective on the (packed or original) buffers. Its operator
 * is c's as it is now: where staging scaled a PREMUL_SUM input already
 * (coll_stage.c), c->op is WEFT_SUM and the input must not be scaled
 * again. */
static weft_result_t axis_child(weft__coll_t *c, axis_t *x, const void *in, void *out)
{
    int n = c->comm->size;
    weft__coll_t *child = weft__coll_new(in, out, x->block, c->esize, c->dt, c->op, c->root);
    const size_t *cnt = x->layout, *dsp = x->layout + n;
    weft_result_t rc = WEFT_SUCCESS;

    if (!child)
        return WEFT_ERR_NO_MEMORY;
    switch (x->kind) {
    case AX_GATHER:
        rc = weft__coll_set_vectors(child, n, NULL, NULL, cnt, dsp);
        weft__gatherv_linear(child);
        break;
    case AX_ALLGATHER:
        rc = weft__coll_set_vectors(child, n, NULL, NULL, cnt, dsp);
        weft__allgatherv_ring(child);
        break;
    case AX_SCATTER:
        rc = weft__coll_set_vectors(child, n, cnt, dsp, NULL, NULL);
        weft__scatterv_linear(child);
        break;
    case AX_REDUCE_SCATTER:
        rc = weft__coll_set_vectors(child, n, NULL, NULL, cnt, NULL);
        if (rc == WEFT_SUCCESS &&
            (rc = weft__coll_apply_op(c->comm, child, c->op, in, x->block * (size_t)n)) !=
                WEFT_SUCCESS)
            return rc; /* apply_op freed the child */
        weft__reduce_scatterv_ring(child);
        break;
    case AX_ALLTOALL:
        rc = weft__coll_set_vectors(child, n, cnt, dsp, cnt, dsp);
        weft__alltoallv_pairwise(child);
        break;
    }
    if (rc != WEFT_SUCCESS) {
        weft__coll_free(child);
        return rc;
    }
    return weft__coll_run_child(c, child);
}

static weft_result_t axis_step(weft__coll_t *c, int *done)
{
    axis_t *x = c->ctx;
    int n = c->comm->size, root = c->comm->rank == c->root;
    size_t bytes = x->block * (size_t)n * c->esize;
    const void *in = c->sendbuf;
    void *out = c->recvbuf;

    if (c->phase++ == 0) {
        int gathers = x->kind == AX_GATHER || x->kind == AX_ALLGATHER;
        int need = x->outer > 1 && (x->kind != AX_GATHER || root) &&
                   (x->kind != AX_SCATTER || root);

        if (need && !(x->packed = malloc(bytes + 1)))
            return weft__error(WEFT_ERR_NO_MEMORY, "axis collective: out of memory");
        if (need && !gathers) {
            /* The input, in full shape, becomes rank-major blocks. */
            repack(x, n, (char *)c->sendbuf, x->packed, 0);
            in = x->packed;
            if (x->kind == AX_ALLTOALL) {
                x->packed_in = x->packed;
                if (!(x->packed = malloc(bytes + 1)))
                    return weft__error(WEFT_ERR_NO_MEMORY, "axis collective: out of memory");
                out = x->packed;
            }
        } else if (need) {
            out = x->packed;
        }
        return axis_child(c, x, in, out);
    }
    if (x->packed && (x->kind == AX_GATHER || x->kind == AX_ALLGATHER ||
                      x->kind == AX_ALLTOALL))
        repack(x, n, c->recvbuf, x->packed, 1);
    *done = 1;
    return WEFT_SUCCESS;
}

/* Checks the shape and splits it at axis. For the gather forms shape is
 * one rank's block; for the others the whole array, split n ways. */
static weft_result_t axis_shape(const char *fn, int ndims, const size_t *shape, int axis,
                                size_t esize, int n, int split, axis_t *x)
{
    size_t outer = 1, inner = esize, limit = SIZE_MAX / 2;

    if (ndims < 1 || ndims > WEFT_MAX_DIMS)
        return weft__error(WEFT_ERR_INVALID_ARG, "%s: ndims %d is not in 1..%d", fn, ndims,
                           WEFT_MAX_DIMS);
    if (!shape)
        return weft__error(WEFT_ERR_INVALID_ARG, "%s: %s is NULL", fn,
                           split ? "shape" : "local_shape");
    if (axis < 0 || axis >= ndims)
        return weft__error(WEFT_ERR_INVALID_ARG, "%s: axis %d is not in 0..%d", fn, axis,
                           ndims - 1);
    if (split && shape[axis] % (size_t)n)
        return weft__error(WEFT_ERR_INVALID_ARG, "%s: shape[%d] = %zu is not divisible by the "
                           "communicator's size %d", fn, axis, shape[axis], n);
    for (int d = 0; d < ndims; d++) {
        size_t *acc = d < axis ? &outer : d > axis ? &inner : NULL;

        if (shape[d] && (outer > limit / shape[d] || inner > limit / shape[d]))
            return weft__error(WEFT_ERR_INVALID_ARG, "%s: the array of shape[%d] = %zu "
                               "overflows", fn, d, shape[d]);
        if (acc)
            *acc *= shape[d];
    }
    x->outer = outer;
    x->inner = inner;
    x->rows = split ? shape[axis] / (size_t)n : shape[axis];
    /* An empty dimension anywhere makes an empty array (inner or outer 0). */
    if (x->rows && inner && (outer > limit / x->rows || outer * x->rows > limit / inner ||
                             outer * x->rows * inner > limit / (size_t)n))
        return weft__error(WEFT_ERR_INVALID_ARG, "%s: the array of shape[%d] = %zu overflows",
                           fn, axis, shape[axis]);
    x->block = outer * x->rows * (inner / esize);
    return WEFT_SUCCESS;
}

static const weft__coll_kind_t axis_kinds[] = {
    [AX_GATHER] = WEFT__COLL_GATHER_AXIS, [AX_ALLGATHER] = WEFT__COLL_ALLGATHER_AXIS,
    [AX_SCATTER] = WEFT__COLL_SCATTER_AXIS, [AX_REDUCE_SCATTER] = WEFT__COLL_REDUCE_SCATTER_AXIS,
    [AX_ALLTOALL] = WEFT__COLL_ALLTOALL_AXIS,
};

static weft_result_t start_axis(const char *fn, enum axis_kind kind, const void *sendbuf,
                                void *recvbuf, int ndims, const size_t *shape, int axis,
                                weft_dtype_t dt, weft_op_t op, int root, weft_comm_t comm,
                                weft_request_t *req)
{
    weft_result_t rc = weft__coll_check_call(comm, fn, req);
    int split = kind != AX_GATHER && kind != AX_ALLGATHER, n, me;
    size_t esize = weft__dtype_bytes(dt), send_count, recv_count;
    axis_t x = { .kind = kind }, *xp;
    weft__coll_t *c;

    if (rc != WEFT_SUCCESS)
        return rc;
    n = comm->size;
    me = comm->rank;
    if (!esize)
        return weft__error(WEFT_ERR_INVALID_ARG, "%s: dt %d is not a weft_dtype_t", fn, (int)dt);
    if ((rc = axis_shape(fn, ndims, shape, axis, esize, n, split, &x)) != WEFT_SUCCESS)
        return rc;
    if ((kind == AX_GATHER || kind == AX_SCATTER) &&
        (rc = weft__coll_check_root(fn, root, comm)) != WEFT_SUCCESS)
        return rc;
    if (kind == AX_REDUCE_SCATTER && (rc = weft__coll_check_op(fn, dt, op)) != WEFT_SUCCESS)
        return rc;
    if (sendbuf == WEFT_IN_PLACE || recvbuf == WEFT_IN_PLACE)
        return weft__error(WEFT_ERR_INVALID_ARG, "%s: WEFT_IN_PLACE is not supported along an "
                           "axis (a rank's block is not contiguous in general)", fn);
    /* What each rank sends and receives, in elements. */
    send_count = kind == AX_GATHER || kind == AX_ALLGATHER ? x.block : x.block * (size_t)n;
    recv_count = kind == AX_SCATTER || kind == AX_REDUCE_SCATTER ? x.block
                                                                 : x.block * (size_t)n;
    if (kind == AX_SCATTER && me != root)
        send_count = 0;
    if (kind == AX_GATHER && me != root)
        recv_count = 0;
    if ((rc = weft__coll_check_data(fn, "sendbuf", sendbuf, send_count, dt, &esize)) !=
        WEFT_SUCCESS || (rc = weft__coll_check_data(fn, "recvbuf", recvbuf, recv_count, dt,
                                                    &esize)) != WEFT_SUCCESS)
        return rc;
    if (!(c = weft__coll_new(sendbuf, recvbuf, x.block, esize, dt, op, root)))
        return WEFT_ERR_NO_MEMORY;
    xp = malloc(sizeof(*xp));
    x.layout = malloc(2 * (size_t)n * sizeof(*x.layout));
    if (!xp || !x.layout) {
        free(xp);
        free(x.layout);
        weft__coll_free(c);
        return weft__error(WEFT_ERR_NO_MEMORY, "%s: out of memory", fn);
    }
    for (int i = 0; i < n; i++) {
        x.layout[i] = x.block;
        x.layout[n + i] = (size_t)i * x.block;
    }
    *xp = x;
    c->ctx = xp;
    c->ctx_free = axis_free;
    c->step = axis_step;
    return weft__coll_launch(comm, c, axis_kinds[kind], req);
}

WEFT_API weft_result_t weft_igather_axis(const void *sendbuf, void *recvbuf, int ndims,
                                         const size_t *local_shape, int axis, weft_dtype_t dt,
                                         int root, weft_comm_t comm, weft_request_t *req)
{
    return start_axis("weft_igather_axis", AX_GATHER, sendbuf, recvbuf, ndims, local_shape,
                      axis, dt, WEFT_SUM, root, comm, req);
}

WEFT_API weft_result_t weft_gather_axis(const void *sendbuf, void *recvbuf, int ndims,
                                        const size_t *local_shape, int axis, weft_dtype_t dt,
                                        int root, weft_comm_t comm)
{
    return start_axis("weft_gather_axis", AX_GATHER, sendbuf, recvbuf, ndims, local_shape, axis, dt,
                      WEFT_SUM, root, comm, WEFT__COLL_BLOCKING);
}

WEFT_API weft_result_t weft_iallgather_axis(const void *sendbuf, void *recvbuf, int ndims,
                                            const size_t *local_shape, int axis,
                                            weft_dtype_t dt, weft_comm_t comm,
                                            weft_request_t *req)
{
    return start_axis("weft_iallgather_axis", AX_ALLGATHER, sendbuf, recvbuf, ndims,
                      local_shape, axis, dt, WEFT_SUM, 0, comm, req);
}

WEFT_API weft_result_t weft_allgather_axis(const void *sendbuf, void *recvbuf, int ndims,
                                           const size_t *local_shape, int axis,
                                           weft_dtype_t dt, weft_comm_t comm)
{
    return start_axis("weft_allgather_axis", AX_ALLGATHER, sendbuf, recvbuf, ndims, local_shape,
                      axis, dt, WEFT_SUM, 0, comm, WEFT__COLL_BLOCKING);
}

WEFT_API weft_result_t weft_iscatter_axis(const void *sendbuf, void *recvbuf, int ndims,
                                          const size_t *shape, int axis, weft_dtype_t dt,
                                          int root, weft_comm_t comm, weft_request_t *req)
{
    return start_axis("weft_iscatter_axis", AX_SCATTER, sendbuf, recvbuf, ndims, shape, axis,
                      dt, WEFT_SUM, root, comm, req);
}

WEFT_API weft_result_t weft_scatter_axis(const void *sendbuf, void *recvbuf, int ndims,
                                         const size_t *shape, int axis, weft_dtype_t dt,
                                         int root, weft_comm_t comm)
{
    return start_axis("weft_scatter_axis", AX_SCATTER, sendbuf, recvbuf, ndims, shape, axis, dt,
                      WEFT_SUM, root, comm, WEFT__COLL_BLOCKING);
}

WEFT_API weft_result_t weft_ireduce_scatter_axis(const void *sendbuf, void *recvbuf,
                                                 int ndims, const size_t *shape, int axis,
                                                 weft_dtype_t dt, weft_op_t op,
                                                 weft_comm_t comm, weft_request_t *req)
{
    return start_axis("weft_ireduce_scatter_axis", AX_REDUCE_SCATTER, sendbuf, recvbuf, ndims,
                      shape, axis, dt, op, 0, comm, req);
}

WEFT_API weft_result_t weft_reduce_scatter_axis(const void *sendbuf, void *recvbuf,
                                                int ndims, const size_t *shape, int axis,
                                                weft_dtype_t dt, weft_op_t op,
                                                weft_comm_t comm)
{
    return start_axis("weft_reduce_scatter_axis", AX_REDUCE_SCATTER, sendbuf, recvbuf, ndims, shape,
                      axis, dt, op, 0, comm, WEFT__COLL_BLOCKING);
}

WEFT_API weft_result_t weft_ialltoall_axis(const void *sendbuf, void *recvbuf, int ndims,
                                           const size_t *shape, int axis, weft_dtype_t dt,
                                           weft_comm_t comm, weft_request_t *req)
{
    return start_axis("weft_ialltoall_axis", AX_ALLTOALL, sendbuf, recvbuf, ndims, shape, axis,
                      dt, WEFT_SUM, 0, comm, req);
}

WEFT_API weft_result_t weft_alltoall_axis(const void *sendbuf, void *recvbuf, int ndims,
                                          const size_t *shape, int axis, weft_dtype_t dt,
                                          weft_comm_t comm)
{
    return start_axis("weft_alltoall_axis", AX_ALLTOALL, sendbuf, recvbuf, ndims, shape, axis, dt,
                      WEFT_SUM, 0, comm, WEFT__COLL_BLOCKING);
}
