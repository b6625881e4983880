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

static weft__coll_t *coll_new(void)
{
    weft__coll_t *c = calloc(1, sizeof(*c));

    if (!c)
        weft__error(WEFT_ERR_NO_MEMORY, "cannot allocate a collective");
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
    weft_result_t rc = check_comm(comm, "weft_ibarrier");
    weft__coll_t *c;

    if (rc != WEFT_SUCCESS)
        return rc;
    if (!req)
        return weft__error(WEFT_ERR_INVALID_ARG, "weft_ibarrier: req is NULL");
    if (!(c = coll_new()))
        return WEFT_ERR_NO_MEMORY;
    weft__barrier_dissemination(c);
    return weft__coll_start(comm, c, req);
}

WEFT_API weft_result_t weft_barrier(weft_comm_t comm)
{
    weft_request_t req = NULL;

    return run_blocking(weft_ibarrier(comm, &req), &req);
}

WEFT_API weft_result_t weft_ibroadcast(void *buf, size_t count, weft_dtype_t dt, int root,
                                       weft_comm_t comm, weft_request_t *req)
{
    weft_result_t rc = check_comm(comm, "weft_ibroadcast");
    weft__coll_t *c;
    size_t esize;

    if (rc != WEFT_SUCCESS)
        return rc;
    if (!req)
        return weft__error(WEFT_ERR_INVALID_ARG, "weft_ibroadcast: req is NULL");
    rc = check_data("weft_ibroadcast", "buf", buf, count, dt, &esize);
    if (rc != WEFT_SUCCESS)
        return rc;
    if (root < 0 || root >= comm->size)
        return weft__error(WEFT_ERR_INVALID_ARG, "weft_ibroadcast: root %d is not a rank of "
                           "the communicator (size %d)", root, comm->size);
    if (!(c = coll_new()))
        return WEFT_ERR_NO_MEMORY;
    c->recvbuf = buf;
    c->count = count;
    c->esize = esize;
    c->dt = dt;
    c->root = root;
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
    weft_result_t rc = check_comm(comm, "weft_iallreduce");
    weft__coll_t *c;
    size_t esize;

    if (rc != WEFT_SUCCESS)
        return rc;
    if (!req)
        return weft__error(WEFT_ERR_INVALID_ARG, "weft_iallreduce: req is NULL");
    rc = check_data("weft_iallreduce", "recvbuf", recvbuf, count, dt, &esize);
    if (rc == WEFT_SUCCESS)
        rc = check_data("weft_iallreduce", "sendbuf", sendbuf, count, dt, &esize);
    if (rc != WEFT_SUCCESS)
        return rc;
    rc = weft__reduce_check(dt, op);
    if (rc != WEFT_SUCCESS)
        return weft__error(rc, "weft_iallreduce: %s", weft__get_error());
    if (!(c = coll_new()))
        return WEFT_ERR_NO_MEMORY;
    c->sendbuf = sendbuf;
    c->recvbuf = recvbuf;
    c->count = count;
    c->esize = esize;
    c->dt = dt;
    c->op = op;
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
    weft_result_t rc = check_comm(comm, "weft_ireduce");
    weft__coll_t *c;
    size_t esize;

    if (rc != WEFT_SUCCESS)
        return rc;
    if (!req)
        return weft__error(WEFT_ERR_INVALID_ARG, "weft_ireduce: req is NULL");
    if (root < 0 || root >= comm->size)
        return weft__error(WEFT_ERR_INVALID_ARG, "weft_ireduce: root %d is not a rank of the "
                           "communicator (size %d)", root, comm->size);
    /* recvbuf matters at the root, and wherever it holds the input. */
    if (sendbuf == WEFT_IN_PLACE || comm->rank == root)
        rc = check_data("weft_ireduce", "recvbuf", recvbuf, count, dt, &esize);
    if (rc == WEFT_SUCCESS && sendbuf != WEFT_IN_PLACE)
        rc = check_data("weft_ireduce", "sendbuf", sendbuf, count, dt, &esize);
    if (rc != WEFT_SUCCESS)
        return rc;
    rc = weft__reduce_check(dt, op);
    if (rc != WEFT_SUCCESS)
        return weft__error(rc, "weft_ireduce: %s", weft__get_error());
    if (!(c = coll_new()))
        return WEFT_ERR_NO_MEMORY;
    c->sendbuf = sendbuf == WEFT_IN_PLACE ? recvbuf : sendbuf;
    c->recvbuf = recvbuf;
    c->count = count;
    c->esize = esize;
    c->dt = dt;
    c->op = op;
    c->root = root;
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
    weft_result_t rc = check_comm(comm, "weft_iallgather");
    weft__coll_t *c;
    size_t esize;

    if (rc != WEFT_SUCCESS)
        return rc;
    if (!req)
        return weft__error(WEFT_ERR_INVALID_ARG, "weft_iallgather: req is NULL");
    rc = check_data("weft_iallgather", "sendbuf", sendbuf, count, dt, &esize);
    if (rc == WEFT_SUCCESS)
        rc = check_data("weft_iallgather", "recvbuf", recvbuf, count, dt, &esize);
    if (rc == WEFT_SUCCESS && count > SIZE_MAX / esize / (size_t)comm->size)
        rc = weft__error(WEFT_ERR_INVALID_ARG, "weft_iallgather: count %zu times %d ranks "
                         "overflows", count, comm->size);
    if (rc != WEFT_SUCCESS)
        return rc;
    if (!(c = coll_new()))
        return WEFT_ERR_NO_MEMORY;
    c->sendbuf = sendbuf;
    c->recvbuf = recvbuf;
    c->count = count;
    c->esize = esize;
    c->dt = dt;
    weft__allgather_ring(c);
    return weft__coll_start(comm, c, req);
}

WEFT_API weft_result_t weft_allgather(const void *sendbuf, void *recvbuf, size_t count,
                                      weft_dtype_t dt, weft_comm_t comm)
{
    weft_request_t req = NULL;

    return run_blocking(weft_iallgather(sendbuf, recvbuf, count, dt, comm, &req), &req);
}
