/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * conf_gpu_reduce.c: conf_gpu's wrappers of the reductions and the
 * broadcast, blocking and nonblocking (see conf_gpu.h). The extents, from
 * weft_allreduce(3), weft_reduce(3), weft_reduce_scatter(3), weft_scan(3)
 * and weft_broadcast(3):
 *
 *   allreduce, scan, exscan  sendbuf count, recvbuf count
 *   reduce          sendbuf count; recvbuf count at the root, and on every
 *                   rank in place (each rank's input is its recvbuf)
 *   reduce_scatter  sendbuf size x count; recvbuf count, or size x count
 *                   in place (the input is recvbuf, the result its start)
 *   reduce_scatterv the same with the sum of recvcounts and this rank's
 *   broadcast       buf count on every rank, read at the root
 *
 * In place is WEFT_IN_PLACE (sendbuf then has no bytes) or sendbuf equal
 * to recvbuf (one device buffer then serves both).
 */
#include "config.h"

#include "tests/gpu/conf_gpu.h"

CG_WRAP(weft_allreduce);
CG_WRAP(weft_iallreduce);
CG_WRAP(weft_reduce);
CG_WRAP(weft_ireduce);
CG_WRAP(weft_reduce_scatter);
CG_WRAP(weft_ireduce_scatter);
CG_WRAP(weft_reduce_scatterv);
CG_WRAP(weft_ireduce_scatterv);
CG_WRAP(weft_scan);
CG_WRAP(weft_iscan);
CG_WRAP(weft_exscan);
CG_WRAP(weft_iexscan);
CG_WRAP(weft_broadcast);
CG_WRAP(weft_ibroadcast);

static int in_place(const void *send, const void *recv)
{
    return send == WEFT_IN_PLACE || send == recv;
}

static size_t unless_in_place(const void *send, size_t bytes)
{
    return send == WEFT_IN_PLACE ? 0 : bytes;
}

/* allreduce, scan and exscan */
static int elementwise(cg_call_t *c, const char *fn, const void *s, void *r, size_t n,
                       weft_dtype_t dt, weft_comm_t comm)
{
    int rank, size;
    size_t b;

    if (cg_args_comm(comm, &rank, &size) || cg_args_bytes(dt, n, &b))
        return 0;
    return cg_dev_mirror(c, fn, s, unless_in_place(s, b), r, b);
}

static int reduce_args(cg_call_t *c, const char *fn, const void *s, void *r, size_t n,
                       weft_dtype_t dt, int root, weft_comm_t comm)
{
    int rank, size;
    size_t b;

    if (cg_args_root(comm, root, &rank, &size) || cg_args_bytes(dt, n, &b))
        return 0;
    return cg_dev_mirror(c, fn, s, unless_in_place(s, b), r,
                         rank == root || in_place(s, r) ? b : 0);
}

/* counts NULL: reduce_scatter's recvcount, the same for every rank */
static int reduce_scatter_args(cg_call_t *c, const char *fn, const void *s, void *r,
                               size_t count, const size_t *counts, weft_dtype_t dt,
                               weft_comm_t comm)
{
    int rank, size;
    size_t mine, all;

    if (cg_args_comm(comm, &rank, &size))
        return 0;
    if (counts && (cg_args_sum(counts, size, dt, &all) ||
                   cg_args_bytes(dt, counts[rank], &mine)))
        return 0;
    if (!counts && (cg_args_bytes(dt, count, &mine) || cg_args_times(mine, size, &all)))
        return 0;
    return cg_dev_mirror(c, fn, s, unless_in_place(s, all), r, in_place(s, r) ? all : mine);
}

static int broadcast_args(cg_call_t *c, const char *fn, void *buf, size_t n, weft_dtype_t dt,
                          int root, weft_comm_t comm)
{
    int rank, size;
    size_t b;

    if (cg_args_root(comm, root, &rank, &size) || cg_args_bytes(dt, n, &b))
        return 0;
    return cg_dev_mirror(c, fn, NULL, 0, buf, b);
}

weft_result_t __wrap_weft_allreduce(const void *s, void *r, size_t n, weft_dtype_t dt,
                                    weft_op_t op, weft_comm_t comm)
{
    cg_call_t c;

    if (!elementwise(&c, "weft_allreduce", s, r, n, dt, comm))
        return __real_weft_allreduce(s, r, n, dt, op, comm);
    return cg_dev_blocking(&c, __real_weft_allreduce(c.dsend, c.drecv, n, dt, op, comm));
}

weft_result_t __wrap_weft_iallreduce(const void *s, void *r, size_t n, weft_dtype_t dt,
                                     weft_op_t op, weft_comm_t comm, weft_request_t *req)
{
    cg_call_t c;

    if (!req || !elementwise(&c, "weft_iallreduce", s, r, n, dt, comm))
        return __real_weft_iallreduce(s, r, n, dt, op, comm, req);
    return cg_req_started(&c, __real_weft_iallreduce(c.dsend, c.drecv, n, dt, op, comm, req),
                          comm, req);
}

weft_result_t __wrap_weft_scan(const void *s, void *r, size_t n, weft_dtype_t dt, weft_op_t op,
                               weft_comm_t comm)
{
    cg_call_t c;

    if (!elementwise(&c, "weft_scan", s, r, n, dt, comm))
        return __real_weft_scan(s, r, n, dt, op, comm);
    return cg_dev_blocking(&c, __real_weft_scan(c.dsend, c.drecv, n, dt, op, comm));
}

weft_result_t __wrap_weft_iscan(const void *s, void *r, size_t n, weft_dtype_t dt,
                                weft_op_t op, weft_comm_t comm, weft_request_t *req)
{
    cg_call_t c;

    if (!req || !elementwise(&c, "weft_iscan", s, r, n, dt, comm))
        return __real_weft_iscan(s, r, n, dt, op, comm, req);
    return cg_req_started(&c, __real_weft_iscan(c.dsend, c.drecv, n, dt, op, comm, req), comm,
                          req);
}

weft_result_t __wrap_weft_exscan(const void *s, void *r, size_t n, weft_dtype_t dt,
                                 weft_op_t op, weft_comm_t comm)
{
    cg_call_t c;

    if (!elementwise(&c, "weft_exscan", s, r, n, dt, comm))
        return __real_weft_exscan(s, r, n, dt, op, comm);
    return cg_dev_blocking(&c, __real_weft_exscan(c.dsend, c.drecv, n, dt, op, comm));
}

weft_result_t __wrap_weft_iexscan(const void *s, void *r, size_t n, weft_dtype_t dt,
                                  weft_op_t op, weft_comm_t comm, weft_request_t *req)
{
    cg_call_t c;

    if (!req || !elementwise(&c, "weft_iexscan", s, r, n, dt, comm))
        return __real_weft_iexscan(s, r, n, dt, op, comm, req);
    return cg_req_started(&c, __real_weft_iexscan(c.dsend, c.drecv, n, dt, op, comm, req),
                          comm, req);
}

weft_result_t __wrap_weft_reduce(const void *s, void *r, size_t n, weft_dtype_t dt,
                                 weft_op_t op, int root, weft_comm_t comm)
{
    cg_call_t c;

    if (!reduce_args(&c, "weft_reduce", s, r, n, dt, root, comm))
        return __real_weft_reduce(s, r, n, dt, op, root, comm);
    return cg_dev_blocking(&c, __real_weft_reduce(c.dsend, c.drecv, n, dt, op, root, comm));
}

weft_result_t __wrap_weft_ireduce(const void *s, void *r, size_t n, weft_dtype_t dt,
                                  weft_op_t op, int root, weft_comm_t comm, weft_request_t *req)
{
    cg_call_t c;

    if (!req || !reduce_args(&c, "weft_ireduce", s, r, n, dt, root, comm))
        return __real_weft_ireduce(s, r, n, dt, op, root, comm, req);
    return cg_req_started(&c,
                          __real_weft_ireduce(c.dsend, c.drecv, n, dt, op, root, comm, req),
                          comm, req);
}

weft_result_t __wrap_weft_reduce_scatter(const void *s, void *r, size_t n, weft_dtype_t dt,
                                         weft_op_t op, weft_comm_t comm)
{
    cg_call_t c;

    if (!reduce_scatter_args(&c, "weft_reduce_scatter", s, r, n, NULL, dt, comm))
        return __real_weft_reduce_scatter(s, r, n, dt, op, comm);
    return cg_dev_blocking(&c, __real_weft_reduce_scatter(c.dsend, c.drecv, n, dt, op, comm));
}

weft_result_t __wrap_weft_ireduce_scatter(const void *s, void *r, size_t n, weft_dtype_t dt,
                                          weft_op_t op, weft_comm_t comm, weft_request_t *req)
{
    cg_call_t c;

    if (!req || !reduce_scatter_args(&c, "weft_ireduce_scatter", s, r, n, NULL, dt, comm))
        return __real_weft_ireduce_scatter(s, r, n, dt, op, comm, req);
    return cg_req_started(&c,
                          __real_weft_ireduce_scatter(c.dsend, c.drecv, n, dt, op, comm, req),
                          comm, req);
}

weft_result_t __wrap_weft_reduce_scatterv(const void *s, void *r, const size_t *counts,
                                          weft_dtype_t dt, weft_op_t op, weft_comm_t comm)
{
    cg_call_t c;

    if (!counts || !reduce_scatter_args(&c, "weft_reduce_scatterv", s, r, 0, counts, dt, comm))
        return __real_weft_reduce_scatterv(s, r, counts, dt, op, comm);
    return cg_dev_blocking(&c,
                           __real_weft_reduce_scatterv(c.dsend, c.drecv, counts, dt, op, comm));
}

weft_result_t __wrap_weft_ireduce_scatterv(const void *s, void *r, const size_t *counts,
                                           weft_dtype_t dt, weft_op_t op, weft_comm_t comm,
                                           weft_request_t *req)
{
    cg_call_t c;

    if (!req || !counts ||
        !reduce_scatter_args(&c, "weft_ireduce_scatterv", s, r, 0, counts, dt, comm))
        return __real_weft_ireduce_scatterv(s, r, counts, dt, op, comm, req);
    return cg_req_started(
        &c, __real_weft_ireduce_scatterv(c.dsend, c.drecv, counts, dt, op, comm, req), comm,
        req);
}

weft_result_t __wrap_weft_broadcast(void *buf, size_t n, weft_dtype_t dt, int root,
                                    weft_comm_t comm)
{
    cg_call_t c;

    if (!broadcast_args(&c, "weft_broadcast", buf, n, dt, root, comm))
        return __real_weft_broadcast(buf, n, dt, root, comm);
    return cg_dev_blocking(&c, __real_weft_broadcast(c.drecv, n, dt, root, comm));
}

weft_result_t __wrap_weft_ibroadcast(void *buf, size_t n, weft_dtype_t dt, int root,
                                     weft_comm_t comm, weft_request_t *req)
{
    cg_call_t c;

    if (!req || !broadcast_args(&c, "weft_ibroadcast", buf, n, dt, root, comm))
        return __real_weft_ibroadcast(buf, n, dt, root, comm, req);
    return cg_req_started(&c, __real_weft_ibroadcast(c.drecv, n, dt, root, comm, req), comm,
                          req);
}
