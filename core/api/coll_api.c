/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * coll_api.c: the entry points of the reducing collectives, barrier and
 * broadcast: argument checks, then a collective request running the
 * algorithm (the tuner of a later release chooses among several).
 */
#include "config.h"

#include <stdlib.h>

#include "core/api/coll_args.h"
#include "core/api/coll_stage.h"
#include "core/base/error.h"

/* The input of a reducing collective: sendbuf, or recvbuf in place. */
static const void *input_of(const void *sendbuf, void *recvbuf)
{
    return sendbuf == WEFT_IN_PLACE ? recvbuf : sendbuf;
}

static weft_result_t start_barrier(const char *fn, weft_comm_t comm, weft_request_t *req)
{
    weft_result_t rc = weft__coll_check_call(comm, fn, req);
    weft__coll_t *c;

    if (rc != WEFT_SUCCESS)
        return rc;
    if (!(c = weft__coll_new(NULL, NULL, 0, 1, WEFT_UINT8, WEFT_SUM, 0)))
        return WEFT_ERR_NO_MEMORY;
    return weft__coll_launch_tuned(comm, c, WEFT__COLL_BARRIER, 0, 1, req);
}

WEFT_API weft_result_t weft_ibarrier(weft_comm_t comm, weft_request_t *req)
{
    return start_barrier("weft_ibarrier", comm, req);
}

WEFT_API weft_result_t weft_barrier(weft_comm_t comm)
{
    return start_barrier("weft_barrier", comm, WEFT__COLL_BLOCKING);
}

static weft_result_t start_bcast(const char *fn, void *buf, size_t count, weft_dtype_t dt,
                                 int root, weft_comm_t comm, weft_request_t *req)
{
    weft_result_t rc = weft__coll_check_call(comm, fn, req);
    weft__coll_t *c;
    size_t esize = 0;

    if (rc == WEFT_SUCCESS)
        rc = weft__coll_check_data(fn, "buf", buf, count, dt, &esize);
    if (rc == WEFT_SUCCESS)
        rc = weft__coll_check_root(fn, root, comm);
    if (rc != WEFT_SUCCESS)
        return rc;
    if (count == 0 && weft__coll_skip_empty(comm, req))
        return WEFT_SUCCESS;
    if (!(c = weft__coll_new(NULL, buf, count, esize, dt, WEFT_SUM, root)))
        return WEFT_ERR_NO_MEMORY;
    return weft__coll_launch_tuned(comm, c, WEFT__COLL_BCAST, count * esize, 1, req);
}

WEFT_API weft_result_t weft_ibroadcast(void *buf, size_t count, weft_dtype_t dt, int root,
                                       weft_comm_t comm, weft_request_t *req)
{
    return start_bcast("weft_ibroadcast", buf, count, dt, root, comm, req);
}

WEFT_API weft_result_t weft_broadcast(void *buf, size_t count, weft_dtype_t dt, int root,
                                      weft_comm_t comm)
{
    return start_bcast("weft_broadcast", buf, count, dt, root, comm, WEFT__COLL_BLOCKING);
}

static weft_result_t start_allreduce(const char *fn, const void *sendbuf, void *recvbuf,
                                     size_t count, weft_dtype_t dt, weft_op_t op,
                                     weft_comm_t comm, weft_request_t *req)
{
    weft_result_t rc = weft__coll_check_call(comm, fn, req);
    weft__coll_t *c;
    size_t esize = 0;

    if (rc == WEFT_SUCCESS)
        rc = weft__coll_check_data(fn, "recvbuf", recvbuf, count, dt, &esize);
    if (rc == WEFT_SUCCESS)
        rc = weft__coll_check_data(fn, "sendbuf", sendbuf, count, dt, &esize);
    if (rc == WEFT_SUCCESS)
        rc = weft__coll_check_op(fn, dt, op);
    if (rc != WEFT_SUCCESS)
        return rc;
    if (count == 0 && weft__coll_skip_empty(comm, req))
        return WEFT_SUCCESS;
    if (!(c = weft__coll_new(sendbuf, recvbuf, count, esize, dt, op, 0)))
        return WEFT_ERR_NO_MEMORY;
    rc = weft__coll_apply_op(comm, c, op, input_of(sendbuf, recvbuf), count);
    if (rc != WEFT_SUCCESS)
        return rc;
    return weft__coll_launch_tuned(comm, c, WEFT__COLL_ALLREDUCE, count * esize, 1, req);
}

WEFT_API weft_result_t weft_iallreduce(const void *sendbuf, void *recvbuf, size_t count,
                                       weft_dtype_t dt, weft_op_t op, weft_comm_t comm,
                                       weft_request_t *req)
{
    return start_allreduce("weft_iallreduce", sendbuf, recvbuf, count, dt, op, comm, req);
}

WEFT_API weft_result_t weft_allreduce(const void *sendbuf, void *recvbuf, size_t count,
                                      weft_dtype_t dt, weft_op_t op, weft_comm_t comm)
{
    return start_allreduce("weft_allreduce", sendbuf, recvbuf, count, dt, op, comm,
                           WEFT__COLL_BLOCKING);
}

static weft_result_t start_reduce(const char *fn, const void *sendbuf, void *recvbuf,
                                  size_t count, weft_dtype_t dt, weft_op_t op, int root,
                                  weft_comm_t comm, weft_request_t *req)
{
    weft_result_t rc = weft__coll_check_call(comm, fn, req);
    weft__coll_t *c;
    size_t esize = 0;

    if (rc == WEFT_SUCCESS)
        rc = weft__coll_check_root(fn, root, comm);
    /* recvbuf matters at the root, and wherever it holds the input. */
    if (rc == WEFT_SUCCESS && (sendbuf == WEFT_IN_PLACE || comm->rank == root))
        rc = weft__coll_check_data(fn, "recvbuf", recvbuf, count, dt, &esize);
    if (rc == WEFT_SUCCESS && sendbuf != WEFT_IN_PLACE)
        rc = weft__coll_check_data(fn, "sendbuf", sendbuf, count, dt, &esize);
    if (rc == WEFT_SUCCESS)
        rc = weft__coll_check_op(fn, dt, op);
    if (rc != WEFT_SUCCESS)
        return rc;
    if (count == 0 && weft__coll_skip_empty(comm, req))
        return WEFT_SUCCESS;
    if (!(c = weft__coll_new(input_of(sendbuf, recvbuf), recvbuf, count, esize, dt, op, root)))
        return WEFT_ERR_NO_MEMORY;
    if ((rc = weft__coll_apply_op(comm, c, op, c->sendbuf, count)) != WEFT_SUCCESS)
        return rc;
    return weft__coll_launch_tuned(comm, c, WEFT__COLL_REDUCE, count * esize, 1, req);
}

WEFT_API weft_result_t weft_ireduce(const void *sendbuf, void *recvbuf, size_t count,
                                    weft_dtype_t dt, weft_op_t op, int root, weft_comm_t comm,
                                    weft_request_t *req)
{
    return start_reduce("weft_ireduce", sendbuf, recvbuf, count, dt, op, root, comm, req);
}

WEFT_API weft_result_t weft_reduce(const void *sendbuf, void *recvbuf, size_t count,
                                   weft_dtype_t dt, weft_op_t op, int root, weft_comm_t comm)
{
    return start_reduce("weft_reduce", sendbuf, recvbuf, count, dt, op, root, comm,
                        WEFT__COLL_BLOCKING);
}

static weft_result_t start_reduce_scatter(const char *fn, const void *sendbuf, void *recvbuf,
                                          const size_t *recvcounts, weft_dtype_t dt,
                                          weft_op_t op, weft_comm_t comm, weft_request_t *req)
{
    weft_result_t rc = weft__coll_check_call(comm, fn, req);
    int in_place = sendbuf == WEFT_IN_PLACE || sendbuf == recvbuf;
    size_t esize = weft__dtype_bytes(dt), total = 0;
    weft__coll_t *c;

    if (rc == WEFT_SUCCESS && !esize)
        rc = weft__error(WEFT_ERR_INVALID_ARG, "%s: dt %d is not a weft_dtype_t", fn, (int)dt);
    if (rc == WEFT_SUCCESS)
        rc = weft__coll_check_vector(fn, "recvcounts", recvcounts, NULL, NULL,
                                     in_place ? "recvbuf" : "sendbuf",
                                     in_place ? recvbuf : sendbuf, esize, comm);
    if (rc == WEFT_SUCCESS)
        rc = weft__coll_check_data(fn, "recvbuf", recvbuf, recvcounts[comm->rank], dt, &esize);
    if (rc == WEFT_SUCCESS)
        rc = weft__coll_check_op(fn, dt, op);
    if (rc != WEFT_SUCCESS)
        return rc;
    for (int i = 0; i < comm->size; i++)
        total += recvcounts[i];
    if (total == 0 && weft__coll_skip_empty(comm, req))
        return WEFT_SUCCESS;
    if (!(c = weft__coll_new(sendbuf, recvbuf, total, esize, dt, op, 0)))
        return WEFT_ERR_NO_MEMORY;
    if ((rc = weft__coll_set_vectors(c, comm->size, NULL, NULL, recvcounts, NULL)) !=
        WEFT_SUCCESS) {
        weft__coll_free(c);
        return rc;
    }
    rc = weft__coll_apply_op(comm, c, op, in_place ? recvbuf : sendbuf, total);
    if (rc != WEFT_SUCCESS)
        return rc;
    return weft__coll_launch_tuned(comm, c, WEFT__COLL_REDUCE_SCATTER, total * esize, 1,
                                   req);
}

WEFT_API weft_result_t weft_ireduce_scatterv(const void *sendbuf, void *recvbuf,
                                             const size_t *recvcounts, weft_dtype_t dt,
                                             weft_op_t op, weft_comm_t comm,
                                             weft_request_t *req)
{
    return start_reduce_scatter("weft_ireduce_scatterv", sendbuf, recvbuf, recvcounts, dt, op,
                                comm, req);
}

WEFT_API weft_result_t weft_reduce_scatterv(const void *sendbuf, void *recvbuf,
                                            const size_t *recvcounts, weft_dtype_t dt,
                                            weft_op_t op, weft_comm_t comm)
{
    return start_reduce_scatter("weft_reduce_scatterv", sendbuf, recvbuf, recvcounts, dt, op, comm,
                                WEFT__COLL_BLOCKING);
}

/* The even form with its counts written out, for start_reduce_scatter.
 * Not inlined: its array would make every call, those of count 0 too,
 * set up a 512-byte frame. */
static __attribute__((noinline)) weft_result_t start_reduce_scatter_counts(const char *fn, const void *sendbuf,
                                                 void *recvbuf, size_t recvcount,
                                                 weft_dtype_t dt, weft_op_t op, weft_comm_t comm,
                                                 weft_request_t *req)
{
    size_t local[64], *counts = local; /* no allocation up to 64 ranks; filled below */
    weft_result_t rc;

    if (comm->size > 64 && !(counts = malloc((size_t)comm->size * sizeof(*counts))))
        return weft__error(WEFT_ERR_NO_MEMORY, "%s: out of memory", fn);
    /* A communicator has a rank at least (which the compiler cannot know). */
    counts[0] = recvcount;
    for (int i = 1; i < comm->size; i++)
        counts[i] = recvcount;
    rc = start_reduce_scatter(fn, sendbuf, recvbuf, counts, dt, op, comm, req);
    if (counts != local)
        free(counts);
    return rc;
}

static weft_result_t start_reduce_scatter_even(const char *fn, const void *sendbuf,
                                               void *recvbuf, size_t recvcount, weft_dtype_t dt,
                                               weft_op_t op, weft_comm_t comm,
                                               weft_request_t *req)
{
    weft_result_t rc = weft__coll_check_call(comm, fn, req);

    if (rc != WEFT_SUCCESS)
        return rc;
    /* Nothing to move: only the dtype and operator can be wrong. */
    if (recvcount == 0 && weft__dtype_bytes(dt) &&
        weft__coll_check_op(fn, dt, op) == WEFT_SUCCESS && weft__coll_skip_empty(comm, req))
        return WEFT_SUCCESS;
    return start_reduce_scatter_counts(fn, sendbuf, recvbuf, recvcount, dt, op, comm, req);
}

WEFT_API weft_result_t weft_ireduce_scatter(const void *sendbuf, void *recvbuf,
                                            size_t recvcount, weft_dtype_t dt, weft_op_t op,
                                            weft_comm_t comm, weft_request_t *req)
{
    return start_reduce_scatter_even("weft_ireduce_scatter", sendbuf, recvbuf, recvcount, dt,
                                     op, comm, req);
}

WEFT_API weft_result_t weft_reduce_scatter(const void *sendbuf, void *recvbuf,
                                           size_t recvcount, weft_dtype_t dt, weft_op_t op,
                                           weft_comm_t comm)
{
    return start_reduce_scatter_even("weft_reduce_scatter", sendbuf, recvbuf, recvcount, dt, op,
                                     comm, WEFT__COLL_BLOCKING);
}

static weft_result_t start_scan(const char *fn, const void *sendbuf, void *recvbuf,
                                size_t count, weft_dtype_t dt, weft_op_t op, weft_comm_t comm,
                                weft_request_t *req, int exclusive)
{
    weft_result_t rc = weft__coll_check_call(comm, fn, req);
    weft__coll_t *c;
    size_t esize = 0;

    if (rc == WEFT_SUCCESS)
        rc = weft__coll_check_data(fn, "recvbuf", recvbuf, count, dt, &esize);
    if (rc == WEFT_SUCCESS)
        rc = weft__coll_check_data(fn, "sendbuf", sendbuf, count, dt, &esize);
    if (rc == WEFT_SUCCESS)
        rc = weft__coll_check_op(fn, dt, op);
    if (rc != WEFT_SUCCESS)
        return rc;
    if (count == 0 && weft__coll_skip_empty(comm, req))
        return WEFT_SUCCESS;
    if (!(c = weft__coll_new(sendbuf == recvbuf ? WEFT_IN_PLACE : sendbuf, recvbuf, count,
                             esize, dt, op, 0)))
        return WEFT_ERR_NO_MEMORY;
    rc = weft__coll_apply_op(comm, c, op, input_of(sendbuf, recvbuf), count);
    if (rc != WEFT_SUCCESS)
        return rc;
    return weft__coll_launch_tuned(comm, c, exclusive ? WEFT__COLL_EXSCAN : WEFT__COLL_SCAN,
                                   count * esize, 1, req);
}

WEFT_API weft_result_t weft_iscan(const void *sendbuf, void *recvbuf, size_t count,
                                  weft_dtype_t dt, weft_op_t op, weft_comm_t comm,
                                  weft_request_t *req)
{
    return start_scan("weft_iscan", sendbuf, recvbuf, count, dt, op, comm, req, 0);
}

WEFT_API weft_result_t weft_scan(const void *sendbuf, void *recvbuf, size_t count,
                                 weft_dtype_t dt, weft_op_t op, weft_comm_t comm)
{
    return start_scan("weft_scan", sendbuf, recvbuf, count, dt, op, comm, WEFT__COLL_BLOCKING, 0);
}

WEFT_API weft_result_t weft_iexscan(const void *sendbuf, void *recvbuf, size_t count,
                                    weft_dtype_t dt, weft_op_t op, weft_comm_t comm,
                                    weft_request_t *req)
{
    return start_scan("weft_iexscan", sendbuf, recvbuf, count, dt, op, comm, req, 1);
}

WEFT_API weft_result_t weft_exscan(const void *sendbuf, void *recvbuf, size_t count,
                                   weft_dtype_t dt, weft_op_t op, weft_comm_t comm)
{
    return start_scan("weft_exscan", sendbuf, recvbuf, count, dt, op, comm, WEFT__COLL_BLOCKING, 1);
}
