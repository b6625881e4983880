/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * conf_gpu_move.c: conf_gpu's wrappers of the collectives that move data
 * without reducing it, blocking and nonblocking (see conf_gpu.h). The
 * extents, from weft_gather(3), weft_scatter(3), weft_allgather(3) and
 * weft_alltoall(3), b being count elements:
 *
 *   gather     sendbuf b (none at the root in place); recvbuf size x b at
 *              the root, none elsewhere
 *   gatherv    sendbuf sendcount; at the root recvbuf to the end of the
 *              last nonempty block of recvcounts and displs
 *   scatter    sendbuf size x b at the root, none elsewhere; recvbuf b
 *              (none at the root in place: WEFT_IN_PLACE as recvbuf)
 *   scatterv   sendbuf to the end of the last block at the root; recvbuf
 *              recvcount
 *   allgather  sendbuf b; recvbuf size x b
 *   allgatherv sendbuf sendcount; recvbuf to the end of the last block
 *   alltoall   size x b each; in place, recvbuf is the input too
 *   alltoallv  each to the end of its last block; in place, recvbuf
 *              holds the input, laid out as the output
 *
 * recvbuf is copied to the device whole, so that gaps between blocks and
 * the root's own block in place come back as they were.
 */
#include "config.h"

#include "tests/gpu/conf_gpu.h"

CG_WRAP(weft_gather);
CG_WRAP(weft_igather);
CG_WRAP(weft_gatherv);
CG_WRAP(weft_igatherv);
CG_WRAP(weft_scatter);
CG_WRAP(weft_iscatter);
CG_WRAP(weft_scatterv);
CG_WRAP(weft_iscatterv);
CG_WRAP(weft_allgather);
CG_WRAP(weft_iallgather);
CG_WRAP(weft_allgatherv);
CG_WRAP(weft_iallgatherv);
CG_WRAP(weft_alltoall);
CG_WRAP(weft_ialltoall);
CG_WRAP(weft_alltoallv);
CG_WRAP(weft_ialltoallv);

/* gather and gatherv (counts NULL: gather of count per rank); root < 0:
 * allgather(v), every rank a root */
static int gather_args(cg_call_t *c, const char *fn, const void *s, size_t count, void *r,
                       const size_t *counts, const size_t *displs, int vector,
                       weft_dtype_t dt, int root, weft_comm_t comm)
{
    int rank, size, at_root;
    size_t sb, rb = 0;

    if (root < 0 ? cg_args_comm(comm, &rank, &size) : cg_args_root(comm, root, &rank, &size))
        return 0;
    at_root = root < 0 || rank == root;
    if (cg_args_bytes(dt, count, &sb))
        return 0;
    if (at_root && (vector ? cg_args_span(counts, displs, size, dt, &rb)
                           : cg_args_times(sb, size, &rb)))
        return 0;
    if (at_root && s == WEFT_IN_PLACE)
        sb = 0;
    return cg_dev_mirror(c, fn, s, sb, r, rb);
}

static int scatter_args(cg_call_t *c, const char *fn, const void *s, const size_t *counts,
                        const size_t *displs, int vector, void *r, size_t count,
                        weft_dtype_t dt, int root, weft_comm_t comm)
{
    int rank, size, at_root;
    size_t sb = 0, rb;

    if (cg_args_root(comm, root, &rank, &size) || cg_args_bytes(dt, count, &rb))
        return 0;
    at_root = rank == root;
    if (at_root && (vector ? cg_args_span(counts, displs, size, dt, &sb)
                           : cg_args_times(rb, size, &sb)))
        return 0;
    if (at_root && r == WEFT_IN_PLACE)
        rb = 0;
    return cg_dev_mirror(c, fn, s, sb, r, rb);
}

/* alltoall (scounts NULL, count per block) and alltoallv */
static int alltoall_args(cg_call_t *c, const char *fn, const void *s, const size_t *scounts,
                         const size_t *sdispls, void *r, const size_t *rcounts,
                         const size_t *rdispls, size_t count, int vector, weft_dtype_t dt,
                         weft_comm_t comm)
{
    int rank, size;
    size_t sb, rb;

    if (cg_args_comm(comm, &rank, &size))
        return 0;
    if (vector) {
        if (cg_args_span(rcounts, rdispls, size, dt, &rb))
            return 0;
        /* in place the send layout is ignored and may be anything */
        if (s == WEFT_IN_PLACE || s == r)
            sb = rb;
        else if (cg_args_span(scounts, sdispls, size, dt, &sb))
            return 0;
    } else if (cg_args_bytes(dt, count, &sb) || cg_args_times(sb, size, &rb)) {
        return 0;
    } else {
        sb = rb;
    }
    return cg_dev_mirror(c, fn, s, s == WEFT_IN_PLACE ? 0 : sb, r, rb);
}

weft_result_t __wrap_weft_gather(const void *s, void *r, size_t n, weft_dtype_t dt, int root,
                                 weft_comm_t comm)
{
    cg_call_t c;

    if (root < 0 || !gather_args(&c, "weft_gather", s, n, r, NULL, NULL, 0, dt, root, comm))
        return __real_weft_gather(s, r, n, dt, root, comm);
    return cg_dev_blocking(&c, __real_weft_gather(c.dsend, c.drecv, n, dt, root, comm));
}

weft_result_t __wrap_weft_igather(const void *s, void *r, size_t n, weft_dtype_t dt, int root,
                                  weft_comm_t comm, weft_request_t *req)
{
    cg_call_t c;

    if (!req || root < 0 ||
        !gather_args(&c, "weft_igather", s, n, r, NULL, NULL, 0, dt, root, comm))
        return __real_weft_igather(s, r, n, dt, root, comm, req);
    return cg_req_started(&c, __real_weft_igather(c.dsend, c.drecv, n, dt, root, comm, req),
                          comm, req);
}

weft_result_t __wrap_weft_gatherv(const void *s, size_t sn, void *r, const size_t *rcounts,
                                  const size_t *displs, weft_dtype_t dt, int root,
                                  weft_comm_t comm)
{
    cg_call_t c;

    if (root < 0 ||
        !gather_args(&c, "weft_gatherv", s, sn, r, rcounts, displs, 1, dt, root, comm))
        return __real_weft_gatherv(s, sn, r, rcounts, displs, dt, root, comm);
    return cg_dev_blocking(
        &c, __real_weft_gatherv(c.dsend, sn, c.drecv, rcounts, displs, dt, root, comm));
}

weft_result_t __wrap_weft_igatherv(const void *s, size_t sn, void *r, const size_t *rcounts,
                                   const size_t *displs, weft_dtype_t dt, int root,
                                   weft_comm_t comm, weft_request_t *req)
{
    cg_call_t c;

    if (!req || root < 0 ||
        !gather_args(&c, "weft_igatherv", s, sn, r, rcounts, displs, 1, dt, root, comm))
        return __real_weft_igatherv(s, sn, r, rcounts, displs, dt, root, comm, req);
    return cg_req_started(
        &c, __real_weft_igatherv(c.dsend, sn, c.drecv, rcounts, displs, dt, root, comm, req),
        comm, req);
}

weft_result_t __wrap_weft_allgather(const void *s, void *r, size_t n, weft_dtype_t dt,
                                    weft_comm_t comm)
{
    cg_call_t c;

    if (!gather_args(&c, "weft_allgather", s, n, r, NULL, NULL, 0, dt, -1, comm))
        return __real_weft_allgather(s, r, n, dt, comm);
    return cg_dev_blocking(&c, __real_weft_allgather(c.dsend, c.drecv, n, dt, comm));
}

weft_result_t __wrap_weft_iallgather(const void *s, void *r, size_t n, weft_dtype_t dt,
                                     weft_comm_t comm, weft_request_t *req)
{
    cg_call_t c;

    if (!req || !gather_args(&c, "weft_iallgather", s, n, r, NULL, NULL, 0, dt, -1, comm))
        return __real_weft_iallgather(s, r, n, dt, comm, req);
    return cg_req_started(&c, __real_weft_iallgather(c.dsend, c.drecv, n, dt, comm, req), comm,
                          req);
}

weft_result_t __wrap_weft_allgatherv(const void *s, size_t sn, void *r, const size_t *rcounts,
                                     const size_t *displs, weft_dtype_t dt, weft_comm_t comm)
{
    cg_call_t c;

    if (!gather_args(&c, "weft_allgatherv", s, sn, r, rcounts, displs, 1, dt, -1, comm))
        return __real_weft_allgatherv(s, sn, r, rcounts, displs, dt, comm);
    return cg_dev_blocking(
        &c, __real_weft_allgatherv(c.dsend, sn, c.drecv, rcounts, displs, dt, comm));
}

weft_result_t __wrap_weft_iallgatherv(const void *s, size_t sn, void *r, const size_t *rcounts,
                                      const size_t *displs, weft_dtype_t dt, weft_comm_t comm,
                                      weft_request_t *req)
{
    cg_call_t c;

    if (!req ||
        !gather_args(&c, "weft_iallgatherv", s, sn, r, rcounts, displs, 1, dt, -1, comm))
        return __real_weft_iallgatherv(s, sn, r, rcounts, displs, dt, comm, req);
    return cg_req_started(
        &c, __real_weft_iallgatherv(c.dsend, sn, c.drecv, rcounts, displs, dt, comm, req), comm,
        req);
}

weft_result_t __wrap_weft_scatter(const void *s, void *r, size_t n, weft_dtype_t dt, int root,
                                  weft_comm_t comm)
{
    cg_call_t c;

    if (!scatter_args(&c, "weft_scatter", s, NULL, NULL, 0, r, n, dt, root, comm))
        return __real_weft_scatter(s, r, n, dt, root, comm);
    return cg_dev_blocking(&c, __real_weft_scatter(c.dsend, c.drecv, n, dt, root, comm));
}

weft_result_t __wrap_weft_iscatter(const void *s, void *r, size_t n, weft_dtype_t dt, int root,
                                   weft_comm_t comm, weft_request_t *req)
{
    cg_call_t c;

    if (!req || !scatter_args(&c, "weft_iscatter", s, NULL, NULL, 0, r, n, dt, root, comm))
        return __real_weft_iscatter(s, r, n, dt, root, comm, req);
    return cg_req_started(&c, __real_weft_iscatter(c.dsend, c.drecv, n, dt, root, comm, req),
                          comm, req);
}

weft_result_t __wrap_weft_scatterv(const void *s, const size_t *scounts, const size_t *displs,
                                   void *r, size_t rn, weft_dtype_t dt, int root,
                                   weft_comm_t comm)
{
    cg_call_t c;

    if (!scatter_args(&c, "weft_scatterv", s, scounts, displs, 1, r, rn, dt, root, comm))
        return __real_weft_scatterv(s, scounts, displs, r, rn, dt, root, comm);
    return cg_dev_blocking(
        &c, __real_weft_scatterv(c.dsend, scounts, displs, c.drecv, rn, dt, root, comm));
}

weft_result_t __wrap_weft_iscatterv(const void *s, const size_t *scounts, const size_t *displs,
                                    void *r, size_t rn, weft_dtype_t dt, int root,
                                    weft_comm_t comm, weft_request_t *req)
{
    cg_call_t c;

    if (!req ||
        !scatter_args(&c, "weft_iscatterv", s, scounts, displs, 1, r, rn, dt, root, comm))
        return __real_weft_iscatterv(s, scounts, displs, r, rn, dt, root, comm, req);
    return cg_req_started(
        &c, __real_weft_iscatterv(c.dsend, scounts, displs, c.drecv, rn, dt, root, comm, req),
        comm, req);
}

weft_result_t __wrap_weft_alltoall(const void *s, void *r, size_t n, weft_dtype_t dt,
                                   weft_comm_t comm)
{
    cg_call_t c;

    if (!alltoall_args(&c, "weft_alltoall", s, NULL, NULL, r, NULL, NULL, n, 0, dt, comm))
        return __real_weft_alltoall(s, r, n, dt, comm);
    return cg_dev_blocking(&c, __real_weft_alltoall(c.dsend, c.drecv, n, dt, comm));
}

weft_result_t __wrap_weft_ialltoall(const void *s, void *r, size_t n, weft_dtype_t dt,
                                    weft_comm_t comm, weft_request_t *req)
{
    cg_call_t c;

    if (!req ||
        !alltoall_args(&c, "weft_ialltoall", s, NULL, NULL, r, NULL, NULL, n, 0, dt, comm))
        return __real_weft_ialltoall(s, r, n, dt, comm, req);
    return cg_req_started(&c, __real_weft_ialltoall(c.dsend, c.drecv, n, dt, comm, req), comm,
                          req);
}

weft_result_t __wrap_weft_alltoallv(const void *s, const size_t *scounts, const size_t *sdispls,
                                    void *r, const size_t *rcounts, const size_t *rdispls,
                                    weft_dtype_t dt, weft_comm_t comm)
{
    cg_call_t c;

    if (!alltoall_args(&c, "weft_alltoallv", s, scounts, sdispls, r, rcounts, rdispls, 0, 1, dt,
                       comm))
        return __real_weft_alltoallv(s, scounts, sdispls, r, rcounts, rdispls, dt, comm);
    return cg_dev_blocking(&c, __real_weft_alltoallv(c.dsend, scounts, sdispls, c.drecv,
                                                     rcounts, rdispls, dt, comm));
}

weft_result_t __wrap_weft_ialltoallv(const void *s, const size_t *scounts,
                                     const size_t *sdispls, void *r, const size_t *rcounts,
                                     const size_t *rdispls, weft_dtype_t dt, weft_comm_t comm,
                                     weft_request_t *req)
{
    cg_call_t c;

    if (!req || !alltoall_args(&c, "weft_ialltoallv", s, scounts, sdispls, r, rcounts, rdispls,
                               0, 1, dt, comm))
        return __real_weft_ialltoallv(s, scounts, sdispls, r, rcounts, rdispls, dt, comm, req);
    return cg_req_started(&c, __real_weft_ialltoallv(c.dsend, scounts, sdispls, c.drecv, rcounts,
                                                     rdispls, dt, comm, req),
                          comm, req);
}
