/*
 * coll_api.c: the collective API: argument checks, then a collective
 * request running the algorithm (the tuner of a later release chooses
 * among several; today each operation has one).
 */
#include "config.h"

#include <stdlib.h>

#include "core/coll.h"
#include "core/error.h"
#include "core/reduce.h"
#include "core/request.h"

static weft_result_t check_comm(weft_comm_t comm, const char *fn)
{
    weft_result_t rc = weft__comm_check(comm, fn);

    if (rc == WEFT_SUCCESS && comm->aborted)
        rc = weft__error(WEFT_ERR_ABORTED, "%s: the communicator was aborted", fn);
    return rc;
}

static weft_result_t check_data(const char *fn, const char *name, const void *buf, size_t count,
                                weft_dtype_t dt, size_t *esize)
{
    *esize = weft__dtype_bytes(dt);
    if (!*esize)
        return weft__error(WEFT_ERR_INVALID_ARG, "%s: dt %d is not a weft_dtype_t", fn, (int)dt);
    if (count > SIZE_MAX / *esize)
        return weft__error(WEFT_ERR_INVALID_ARG, "%s: count %zu overflows the buffer size", fn,
                           count);
    if (count > 0 && !buf)
        return weft__error(WEFT_ERR_INVALID_ARG, "%s: %s is NULL with count %zu", fn, name,
                           count);
    return WEFT_SUCCESS;
}

/* Checks that every collective makes: a live communicator and a request. */
static weft_result_t check_call(weft_comm_t comm, const char *fn, const weft_request_t *req)
{
    weft_result_t rc = check_comm(comm, fn);

    if (rc == WEFT_SUCCESS && !req)
        rc = weft__error(WEFT_ERR_INVALID_ARG, "%s: req is NULL", fn);
    return rc;
}

static weft_result_t check_op(const char *fn, weft_dtype_t dt, weft_op_t op)
{
    weft_result_t rc = weft__reduce_check(dt, op);

    return rc == WEFT_SUCCESS ? rc : weft__error(rc, "%s: %s", fn, weft__get_error());
}

/* A collective with its arguments filled in (NULL: out of memory). */
static weft__coll_t *coll_new(const void *sendbuf, void *recvbuf, size_t count, size_t esize,
                              weft_dtype_t dt, weft_op_t op, int root)
{
    weft__coll_t *c = calloc(1, sizeof(*c));

    if (!c) {
        weft__error(WEFT_ERR_NO_MEMORY, "cannot allocate a collective");
        return NULL;
    }
    c->sendbuf = sendbuf;
    c->recvbuf = recvbuf;
    c->count = count;
    c->esize = esize;
    c->dt = dt;
    c->op = op;
    c->root = root;
    return c;
}

/* A blocking collective: start, wait; on timeout give the operation up. */
static weft_result_t run_blocking(weft_result_t rc, weft_request_t *req)
{
    if (rc != WEFT_SUCCESS)
        return rc;
    rc = weft_wait(req, NULL);
    if (rc == WEFT_ERR_TIMEOUT && *req) {
        weft__request_cancel(*req, WEFT_ERR_TIMEOUT);
        weft_request_free(req);
    }
    return rc;
}

WEFT_API weft_result_t weft_ibarrier(weft_comm_t comm, weft_request_t *req)
{
    weft_result_t rc = check_call(comm, "weft_ibarrier", req);
    weft__coll_t *c;

    if (rc != WEFT_SUCCESS)
        return rc;
    if (!(c = coll_new(NULL, NULL, 0, 0, WEFT_UINT8, WEFT_SUM, 0)))
        return WEFT_ERR_NO_MEMORY;
    weft__barrier_dissemination(c);
    return weft__coll_start(comm, c, req);
}

WEFT_API weft_result_t weft_barrier(weft_comm_t comm)
{
    weft_request_t req = NULL;

    return run_blocking(weft_ibarrier(comm, &req), &req);
}

static weft_result_t check_root(const char *fn, int root, weft_comm_t comm)
{
    if (root < 0 || root >= comm->size)
        return weft__error(WEFT_ERR_INVALID_ARG, "%s: root %d is not a rank of the "
                           "communicator (size %d)", fn, root, comm->size);
    return WEFT_SUCCESS;
}

WEFT_API weft_result_t weft_ibroadcast(void *buf, size_t count, weft_dtype_t dt, int root,
                                       weft_comm_t comm, weft_request_t *req)
{
    weft_result_t rc = check_call(comm, "weft_ibroadcast", req);
    weft__coll_t *c;
    size_t esize = 0;

    if (rc == WEFT_SUCCESS)
        rc = check_data("weft_ibroadcast", "buf", buf, count, dt, &esize);
    if (rc == WEFT_SUCCESS)
        rc = check_root("weft_ibroadcast", root, comm);
    if (rc != WEFT_SUCCESS)
        return rc;
    if (!(c = coll_new(NULL, buf, count, esize, dt, WEFT_SUM, root)))
        return WEFT_ERR_NO_MEMORY;
    weft__bcast_binomial(c);
    return weft__coll_start(comm, c, req);
}

WEFT_API weft_result_t weft_broadcast(void *buf, size_t count, weft_dtype_t dt, int root,
                                      weft_comm_t comm)
{
    weft_request_t req = NULL;

    return run_blocking(weft_ibroadcast(buf, count, dt, root, comm, &req), &req);
}

WEFT_API weft_result_t weft_iallreduce(const void *sendbuf, void *recvbuf, size_t count,
                                       weft_dtype_t dt, weft_op_t op, weft_comm_t comm,
                                       weft_request_t *req)
{
    weft_result_t rc = check_call(comm, "weft_iallreduce", req);
    weft__coll_t *c;
    size_t esize = 0;

    if (rc == WEFT_SUCCESS)
        rc = check_data("weft_iallreduce", "recvbuf", recvbuf, count, dt, &esize);
    if (rc == WEFT_SUCCESS)
        rc = check_data("weft_iallreduce", "sendbuf", sendbuf, count, dt, &esize);
    if (rc == WEFT_SUCCESS)
        rc = check_op("weft_iallreduce", dt, op);
    if (rc != WEFT_SUCCESS)
        return rc;
    if (!(c = coll_new(sendbuf, recvbuf, count, esize, dt, op, 0)))
        return WEFT_ERR_NO_MEMORY;
    weft__allreduce_ring(c);
    return weft__coll_start(comm, c, req);
}

WEFT_API weft_result_t weft_allreduce(const void *sendbuf, void *recvbuf, size_t count,
                                      weft_dtype_t dt, weft_op_t op, weft_comm_t comm)
{
    weft_request_t req = NULL;

    return run_blocking(weft_iallreduce(sendbuf, recvbuf, count, dt, op, comm, &req), &req);
}

WEFT_API weft_result_t weft_ireduce(const void *sendbuf, void *recvbuf, size_t count,
                                    weft_dtype_t dt, weft_op_t op, int root, weft_comm_t comm,
                                    weft_request_t *req)
{
    weft_result_t rc = check_call(comm, "weft_ireduce", req);
    weft__coll_t *c;
    size_t esize = 0;

    if (rc == WEFT_SUCCESS)
        rc = check_root("weft_ireduce", root, comm);
    /* recvbuf matters at the root, and wherever it holds the input. */
    if (rc == WEFT_SUCCESS && (sendbuf == WEFT_IN_PLACE || comm->rank == root))
        rc = check_data("weft_ireduce", "recvbuf", recvbuf, count, dt, &esize);
    if (rc == WEFT_SUCCESS && sendbuf != WEFT_IN_PLACE)
        rc = check_data("weft_ireduce", "sendbuf", sendbuf, count, dt, &esize);
    if (rc == WEFT_SUCCESS)
        rc = check_op("weft_ireduce", dt, op);
    if (rc != WEFT_SUCCESS)
        return rc;
    if (!(c = coll_new(sendbuf == WEFT_IN_PLACE ? recvbuf : sendbuf, recvbuf, count, esize, dt,
                       op, root)))
        return WEFT_ERR_NO_MEMORY;
    weft__reduce_binomial(c);
    return weft__coll_start(comm, c, req);
}

WEFT_API weft_result_t weft_reduce(const void *sendbuf, void *recvbuf, size_t count,
                                   weft_dtype_t dt, weft_op_t op, int root, weft_comm_t comm)
{
    weft_request_t req = NULL;

    return run_blocking(weft_ireduce(sendbuf, recvbuf, count, dt, op, root, comm, &req), &req);
}

WEFT_API weft_result_t weft_iallgather(const void *sendbuf, void *recvbuf, size_t count,
                                       weft_dtype_t dt, weft_comm_t comm, weft_request_t *req)
{
    weft_result_t rc = check_call(comm, "weft_iallgather", req);
    weft__coll_t *c;
    size_t esize = 0;

    if (rc == WEFT_SUCCESS)
        rc = check_data("weft_iallgather", "sendbuf", sendbuf, count, dt, &esize);
    if (rc == WEFT_SUCCESS)
        rc = check_data("weft_iallgather", "recvbuf", recvbuf, count, dt, &esize);
    if (rc == WEFT_SUCCESS && count > SIZE_MAX / esize / (size_t)comm->size)
        rc = weft__error(WEFT_ERR_INVALID_ARG, "weft_iallgather: count %zu times %d ranks "
                         "overflows", count, comm->size);
    if (rc != WEFT_SUCCESS)
        return rc;
    if (!(c = coll_new(sendbuf, recvbuf, count, esize, dt, WEFT_SUM, 0)))
        return WEFT_ERR_NO_MEMORY;
    weft__allgather_ring(c);
    return weft__coll_start(comm, c, req);
}

WEFT_API weft_result_t weft_allgather(const void *sendbuf, void *recvbuf, size_t count,
                                      weft_dtype_t dt, weft_comm_t comm)
{
    weft_request_t req = NULL;

    return run_blocking(weft_iallgather(sendbuf, recvbuf, count, dt, comm, &req), &req);
}
