/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * conf_gpu_axis.c: conf_gpu's wrappers of the collectives along an axis
 * (see conf_gpu.h). From weft_gather_axis(3), with L the bytes of the
 * array local_shape describes and W those of shape:
 *
 *   gather_axis          sendbuf L; recvbuf size x L at the root only
 *   allgather_axis       sendbuf L; recvbuf size x L
 *   scatter_axis         sendbuf W at the root only; recvbuf W / size
 *   reduce_scatter_axis  sendbuf W; recvbuf W / size
 *   alltoall_axis        sendbuf W; recvbuf W
 *
 * None has an in-place form: WEFT_IN_PLACE goes to weft as given.
 */
#include "config.h"

#include "tests/gpu/conf_gpu.h"

CG_WRAP(weft_gather_axis);
CG_WRAP(weft_igather_axis);
CG_WRAP(weft_allgather_axis);
CG_WRAP(weft_iallgather_axis);
CG_WRAP(weft_scatter_axis);
CG_WRAP(weft_iscatter_axis);
CG_WRAP(weft_reduce_scatter_axis);
CG_WRAP(weft_ireduce_scatter_axis);
CG_WRAP(weft_alltoall_axis);
CG_WRAP(weft_ialltoall_axis);

enum { JOIN, SCATTER, REDUCE_SCATTER, ALLTOALL };

/* root < 0: every rank holds the result (allgather_axis), or no root */
static int axis_args(cg_call_t *c, const char *fn, int kind, const void *s, void *r, int ndims,
                     const size_t *shape, int axis, weft_dtype_t dt, int root, weft_comm_t comm)
{
    int rank, size, at_root;
    size_t b, whole;

    if (root < 0 ? cg_args_comm(comm, &rank, &size) : cg_args_root(comm, root, &rank, &size))
        return 0;
    if (cg_args_array(ndims, shape, axis, dt, size, kind != JOIN, &b))
        return 0;
    at_root = root < 0 || rank == root;
    switch (kind) {
    case JOIN:
        if (cg_args_times(b, size, &whole))
            return 0;
        return cg_dev_mirror(c, fn, s, b, r, at_root ? whole : 0);
    case SCATTER:
        return cg_dev_mirror(c, fn, s, at_root ? b : 0, r, b / (size_t)size);
    case REDUCE_SCATTER:
        return cg_dev_mirror(c, fn, s, b, r, b / (size_t)size);
    default:
        return cg_dev_mirror(c, fn, s, b, r, b);
    }
}

weft_result_t __wrap_weft_gather_axis(const void *s, void *r, int ndims, const size_t *shape,
                                      int axis, weft_dtype_t dt, int root, weft_comm_t comm)
{
    cg_call_t c;

    if (root < 0 ||
        !axis_args(&c, "weft_gather_axis", JOIN, s, r, ndims, shape, axis, dt, root, comm))
        return __real_weft_gather_axis(s, r, ndims, shape, axis, dt, root, comm);
    return cg_dev_blocking(
        &c, __real_weft_gather_axis(c.dsend, c.drecv, ndims, shape, axis, dt, root, comm));
}

weft_result_t __wrap_weft_igather_axis(const void *s, void *r, int ndims, const size_t *shape,
                                       int axis, weft_dtype_t dt, int root, weft_comm_t comm,
                                       weft_request_t *req)
{
    cg_call_t c;

    if (!req || root < 0 ||
        !axis_args(&c, "weft_igather_axis", JOIN, s, r, ndims, shape, axis, dt, root, comm))
        return __real_weft_igather_axis(s, r, ndims, shape, axis, dt, root, comm, req);
    return cg_req_started(&c, __real_weft_igather_axis(c.dsend, c.drecv, ndims, shape, axis, dt,
                                                       root, comm, req),
                          comm, req);
}

weft_result_t __wrap_weft_allgather_axis(const void *s, void *r, int ndims, const size_t *shape,
                                         int axis, weft_dtype_t dt, weft_comm_t comm)
{
    cg_call_t c;

    if (!axis_args(&c, "weft_allgather_axis", JOIN, s, r, ndims, shape, axis, dt, -1, comm))
        return __real_weft_allgather_axis(s, r, ndims, shape, axis, dt, comm);
    return cg_dev_blocking(
        &c, __real_weft_allgather_axis(c.dsend, c.drecv, ndims, shape, axis, dt, comm));
}

weft_result_t __wrap_weft_iallgather_axis(const void *s, void *r, int ndims,
                                          const size_t *shape, int axis, weft_dtype_t dt,
                                          weft_comm_t comm, weft_request_t *req)
{
    cg_call_t c;

    if (!req ||
        !axis_args(&c, "weft_iallgather_axis", JOIN, s, r, ndims, shape, axis, dt, -1, comm))
        return __real_weft_iallgather_axis(s, r, ndims, shape, axis, dt, comm, req);
    return cg_req_started(
        &c, __real_weft_iallgather_axis(c.dsend, c.drecv, ndims, shape, axis, dt, comm, req),
        comm, req);
}

weft_result_t __wrap_weft_scatter_axis(const void *s, void *r, int ndims, const size_t *shape,
                                       int axis, weft_dtype_t dt, int root, weft_comm_t comm)
{
    cg_call_t c;

    if (root < 0 ||
        !axis_args(&c, "weft_scatter_axis", SCATTER, s, r, ndims, shape, axis, dt, root, comm))
        return __real_weft_scatter_axis(s, r, ndims, shape, axis, dt, root, comm);
    return cg_dev_blocking(
        &c, __real_weft_scatter_axis(c.dsend, c.drecv, ndims, shape, axis, dt, root, comm));
}

weft_result_t __wrap_weft_iscatter_axis(const void *s, void *r, int ndims, const size_t *shape,
                                        int axis, weft_dtype_t dt, int root, weft_comm_t comm,
                                        weft_request_t *req)
{
    cg_call_t c;

    if (!req || root < 0 ||
        !axis_args(&c, "weft_iscatter_axis", SCATTER, s, r, ndims, shape, axis, dt, root, comm))
        return __real_weft_iscatter_axis(s, r, ndims, shape, axis, dt, root, comm, req);
    return cg_req_started(&c, __real_weft_iscatter_axis(c.dsend, c.drecv, ndims, shape, axis,
                                                        dt, root, comm, req),
                          comm, req);
}

weft_result_t __wrap_weft_reduce_scatter_axis(const void *s, void *r, int ndims,
                                              const size_t *shape, int axis, weft_dtype_t dt,
                                              weft_op_t op, weft_comm_t comm)
{
    cg_call_t c;

    if (!axis_args(&c, "weft_reduce_scatter_axis", REDUCE_SCATTER, s, r, ndims, shape, axis, dt,
                   -1, comm))
        return __real_weft_reduce_scatter_axis(s, r, ndims, shape, axis, dt, op, comm);
    return cg_dev_blocking(&c, __real_weft_reduce_scatter_axis(c.dsend, c.drecv, ndims, shape,
                                                               axis, dt, op, comm));
}

weft_result_t __wrap_weft_ireduce_scatter_axis(const void *s, void *r, int ndims,
                                               const size_t *shape, int axis, weft_dtype_t dt,
                                               weft_op_t op, weft_comm_t comm,
                                               weft_request_t *req)
{
    cg_call_t c;

    if (!req || !axis_args(&c, "weft_ireduce_scatter_axis", REDUCE_SCATTER, s, r, ndims, shape,
                           axis, dt, -1, comm))
        return __real_weft_ireduce_scatter_axis(s, r, ndims, shape, axis, dt, op, comm, req);
    return cg_req_started(&c, __real_weft_ireduce_scatter_axis(c.dsend, c.drecv, ndims, shape,
                                                               axis, dt, op, comm, req),
                          comm, req);
}

weft_result_t __wrap_weft_alltoall_axis(const void *s, void *r, int ndims, const size_t *shape,
                                        int axis, weft_dtype_t dt, weft_comm_t comm)
{
    cg_call_t c;

    if (!axis_args(&c, "weft_alltoall_axis", ALLTOALL, s, r, ndims, shape, axis, dt, -1, comm))
        return __real_weft_alltoall_axis(s, r, ndims, shape, axis, dt, comm);
    return cg_dev_blocking(
        &c, __real_weft_alltoall_axis(c.dsend, c.drecv, ndims, shape, axis, dt, comm));
}

weft_result_t __wrap_weft_ialltoall_axis(const void *s, void *r, int ndims, const size_t *shape,
                                         int axis, weft_dtype_t dt, weft_comm_t comm,
                                         weft_request_t *req)
{
    cg_call_t c;

    if (!req ||
        !axis_args(&c, "weft_ialltoall_axis", ALLTOALL, s, r, ndims, shape, axis, dt, -1, comm))
        return __real_weft_ialltoall_axis(s, r, ndims, shape, axis, dt, comm, req);
    return cg_req_started(
        &c, __real_weft_ialltoall_axis(c.dsend, c.drecv, ndims, shape, axis, dt, comm, req),
        comm, req);
}
