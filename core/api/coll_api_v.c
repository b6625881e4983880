/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * coll_api_v.c: the entry points of the collectives that move blocks
 * without reducing them — gather, scatter, allgather, alltoall and their
 * v-forms. The even forms are the v-forms with equal counts.
 */
#include "config.h"

#include <stdint.h>
#include <stdlib.h>

#include "core/api/coll_args.h"
#include "core/api/coll_stage.h"
#include "core/base/error.h"

/* Room for an even layout on the stack: up to this many ranks, an even
 * call allocates none. */
#define EVEN_LOCAL_RANKS 64

/* Counts all equal to count, displacements i * count, in local when n
 * fits (NULL: no memory); even_free gives it back. */
static size_t *even_layout(const char *fn, int n, size_t count,
                           size_t local[2 * EVEN_LOCAL_RANKS])
{
    size_t *v = n <= EVEN_LOCAL_RANKS ? local : malloc(2 * (size_t)n * sizeof(*v));

    if (!v) {
        weft__error(WEFT_ERR_NO_MEMORY, "%s: out of memory", fn);
        return NULL;
    }
    for (int i = 0; i < n; i++) {
        v[i] = count;
        v[n + i] = (size_t)i * count;
    }
    return v;
}

static void even_free(size_t *v, const size_t *local)
{
    if (v != local)
        free(v);
}

/* Whether any of the n blocks of counts (and of counts2, unless NULL) has
 * an element. */
static int any_block(const size_t *counts, const size_t *counts2, int n)
{
    size_t any = 0;

    for (int i = 0; i < n; i++)
        any |= counts[i] | (counts2 ? counts2[i] : 0);
    return any != 0;
}

/* Starts c with its vectors, its algorithm chosen for bytes, or frees
 * it. */
static weft_result_t start_v(weft_comm_t comm, weft__coll_t *c, weft__coll_kind_t kind,
                             size_t bytes, int even, const size_t *scounts,
                             const size_t *sdispls, const size_t *rcounts, const size_t *rdispls,
                             weft_request_t *req)
{
    weft_result_t rc = weft__coll_set_vectors(c, comm->size, scounts, sdispls, rcounts, rdispls);

    if (rc != WEFT_SUCCESS) {
        weft__coll_free(c);
        return rc;
    }
    return weft__coll_launch_tuned(comm, c, kind, bytes, even, req);
}

/* ------------------------------------------------------------------ gather */

/* even: the even form, whose layout every rank knows. */
static weft_result_t start_gather(const char *fn, const void *sendbuf, size_t sendcount,
                                  void *recvbuf, const size_t *recvcounts, const size_t *displs,
                                  weft_dtype_t dt, int root, weft_comm_t comm, int even,
                                  weft_request_t *req)
{
    weft_result_t rc = weft__coll_check_call(comm, fn, req);
    int at_root = rc == WEFT_SUCCESS && comm->rank == root;
    size_t esize = weft__dtype_bytes(dt);
    weft__coll_t *c;

    if (rc == WEFT_SUCCESS)
        rc = weft__coll_check_root(fn, root, comm);
    if (rc == WEFT_SUCCESS && (!at_root || sendbuf != WEFT_IN_PLACE))
        rc = weft__coll_check_data(fn, "sendbuf", sendbuf, sendcount, dt, &esize);
    if (rc == WEFT_SUCCESS && !esize)
        rc = weft__error(WEFT_ERR_INVALID_ARG, "%s: dt %d is not a weft_dtype_t", fn, (int)dt);
    if (rc == WEFT_SUCCESS && at_root)
        rc = weft__coll_check_vector(fn, "recvcounts", recvcounts, "displs", displs, "recvbuf",
                                     recvbuf, esize, comm);
    if (rc == WEFT_SUCCESS && at_root && sendbuf != WEFT_IN_PLACE &&
        sendcount != recvcounts[root])
        rc = weft__error(WEFT_ERR_INVALID_ARG, "%s: sendcount %zu at the root differs from "
                         "its recvcounts[%d] = %zu", fn, sendcount, root, recvcounts[root]);
    if (rc != WEFT_SUCCESS)
        return rc;
    if (even && sendcount == 0 && weft__coll_skip_empty(comm, req))
        return WEFT_SUCCESS;
    if (!(c = weft__coll_new(sendbuf, recvbuf, sendcount, esize, dt, WEFT_SUM, root)))
        return WEFT_ERR_NO_MEMORY;
    return start_v(comm, c, WEFT__COLL_GATHER, sendcount * esize, even, NULL, NULL,
                   at_root ? recvcounts : NULL, at_root ? displs : NULL, req);
}

WEFT_API weft_result_t weft_igatherv(const void *sendbuf, size_t sendcount, void *recvbuf,
                                     const size_t *recvcounts, const size_t *displs,
                                     weft_dtype_t dt, int root, weft_comm_t comm,
                                     weft_request_t *req)
{
    return start_gather("weft_igatherv", sendbuf, sendcount, recvbuf, recvcounts, displs, dt,
                        root, comm, 0, req);
}

WEFT_API weft_result_t weft_gatherv(const void *sendbuf, size_t sendcount, void *recvbuf,
                                    const size_t *recvcounts, const size_t *displs,
                                    weft_dtype_t dt, int root, weft_comm_t comm)
{
    return start_gather("weft_gatherv", sendbuf, sendcount, recvbuf, recvcounts, displs, dt, root,
                        comm, 0, WEFT__COLL_BLOCKING);
}

static weft_result_t start_gather_even(const char *fn, const void *sendbuf, void *recvbuf,
                                       size_t count, weft_dtype_t dt, int root,
                                       weft_comm_t comm, weft_request_t *req)
{
    weft_result_t rc = weft__coll_check_call(comm, fn, req);
    size_t esize = weft__dtype_bytes(dt), *v, local[2 * EVEN_LOCAL_RANKS];

    if (rc == WEFT_SUCCESS && esize)
        rc = weft__coll_check_total(fn, "count", count, esize, comm);
    if (rc != WEFT_SUCCESS)
        return rc;
    if (!(v = even_layout(fn, comm->size, count, local)))
        return WEFT_ERR_NO_MEMORY;
    rc = start_gather(fn, sendbuf, count, recvbuf, v, v + comm->size, dt, root, comm, 1, req);
    even_free(v, local);
    return rc;
}

WEFT_API weft_result_t weft_igather(const void *sendbuf, void *recvbuf, size_t count,
                                    weft_dtype_t dt, int root, weft_comm_t comm,
                                    weft_request_t *req)
{
    return start_gather_even("weft_igather", sendbuf, recvbuf, count, dt, root, comm, req);
}

WEFT_API weft_result_t weft_gather(const void *sendbuf, void *recvbuf, size_t count,
                                   weft_dtype_t dt, int root, weft_comm_t comm)
{
    return start_gather_even("weft_gather", sendbuf, recvbuf, count, dt, root, comm,
                             WEFT__COLL_BLOCKING);
}

/* ----------------------------------------------------------------- scatter */

/* even: the even form, whose layout every rank knows. */
static weft_result_t start_scatter(const char *fn, const void *sendbuf, const size_t *sendcounts,
                                   const size_t *displs, void *recvbuf, size_t recvcount,
                                   weft_dtype_t dt, int root, weft_comm_t comm, int even,
                                   weft_request_t *req)
{
    weft_result_t rc = weft__coll_check_call(comm, fn, req);
    int at_root = rc == WEFT_SUCCESS && comm->rank == root;
    size_t esize = weft__dtype_bytes(dt);
    weft__coll_t *c;

    if (rc == WEFT_SUCCESS)
        rc = weft__coll_check_root(fn, root, comm);
    if (rc == WEFT_SUCCESS && (!at_root || recvbuf != WEFT_IN_PLACE))
        rc = weft__coll_check_data(fn, "recvbuf", recvbuf, recvcount, dt, &esize);
    if (rc == WEFT_SUCCESS && !esize)
        rc = weft__error(WEFT_ERR_INVALID_ARG, "%s: dt %d is not a weft_dtype_t", fn, (int)dt);
    if (rc == WEFT_SUCCESS && at_root)
        rc = weft__coll_check_vector(fn, "sendcounts", sendcounts, "displs", displs, "sendbuf",
                                     sendbuf, esize, comm);
    if (rc == WEFT_SUCCESS && at_root && recvbuf != WEFT_IN_PLACE &&
        recvcount != sendcounts[root])
        rc = weft__error(WEFT_ERR_INVALID_ARG, "%s: recvcount %zu at the root differs from "
                         "its sendcounts[%d] = %zu", fn, recvcount, root, sendcounts[root]);
    if (rc != WEFT_SUCCESS)
        return rc;
    if (even && recvcount == 0 && weft__coll_skip_empty(comm, req))
        return WEFT_SUCCESS;
    if (!(c = weft__coll_new(sendbuf, recvbuf, recvcount, esize, dt, WEFT_SUM, root)))
        return WEFT_ERR_NO_MEMORY;
    return start_v(comm, c, WEFT__COLL_SCATTER, recvcount * esize, even,
                   at_root ? sendcounts : NULL, at_root ? displs : NULL, NULL, NULL, req);
}

WEFT_API weft_result_t weft_iscatterv(const void *sendbuf, const size_t *sendcounts,
                                      const size_t *displs, void *recvbuf, size_t recvcount,
                                      weft_dtype_t dt, int root, weft_comm_t comm,
                                      weft_request_t *req)
{
    return start_scatter("weft_iscatterv", sendbuf, sendcounts, displs, recvbuf, recvcount, dt,
                         root, comm, 0, req);
}

WEFT_API weft_result_t weft_scatterv(const void *sendbuf, const size_t *sendcounts,
                                     const size_t *displs, void *recvbuf, size_t recvcount,
                                     weft_dtype_t dt, int root, weft_comm_t comm)
{
    return start_scatter("weft_scatterv", sendbuf, sendcounts, displs, recvbuf, recvcount, dt, root,
                         comm, 0, WEFT__COLL_BLOCKING);
}

static weft_result_t start_scatter_even(const char *fn, const void *sendbuf, void *recvbuf,
                                        size_t count, weft_dtype_t dt, int root,
                                        weft_comm_t comm, weft_request_t *req)
{
    weft_result_t rc = weft__coll_check_call(comm, fn, req);
    size_t esize = weft__dtype_bytes(dt), *v, local[2 * EVEN_LOCAL_RANKS];

    if (rc == WEFT_SUCCESS && esize)
        rc = weft__coll_check_total(fn, "count", count, esize, comm);
    if (rc != WEFT_SUCCESS)
        return rc;
    if (!(v = even_layout(fn, comm->size, count, local)))
        return WEFT_ERR_NO_MEMORY;
    rc = start_scatter(fn, sendbuf, v, v + comm->size, recvbuf, count, dt, root, comm, 1, req);
    even_free(v, local);
    return rc;
}

WEFT_API weft_result_t weft_iscatter(const void *sendbuf, void *recvbuf, size_t count,
                                     weft_dtype_t dt, int root, weft_comm_t comm,
                                     weft_request_t *req)
{
    return start_scatter_even("weft_iscatter", sendbuf, recvbuf, count, dt, root, comm, req);
}

WEFT_API weft_result_t weft_scatter(const void *sendbuf, void *recvbuf, size_t count,
                                    weft_dtype_t dt, int root, weft_comm_t comm)
{
    return start_scatter_even("weft_scatter", sendbuf, recvbuf, count, dt, root, comm,
                              WEFT__COLL_BLOCKING);
}

/* --------------------------------------------------------------- allgather */

static weft_result_t start_allgather(const char *fn, const void *sendbuf, size_t sendcount,
                                     void *recvbuf, const size_t *recvcounts,
                                     const size_t *displs, weft_dtype_t dt, weft_comm_t comm,
                                     weft_request_t *req)
{
    weft_result_t rc = weft__coll_check_call(comm, fn, req);
    int in_place = sendbuf == WEFT_IN_PLACE || sendbuf == recvbuf, even = 1;
    size_t esize = weft__dtype_bytes(dt);
    weft__coll_t *c;

    if (rc == WEFT_SUCCESS && !in_place)
        rc = weft__coll_check_data(fn, "sendbuf", sendbuf, sendcount, dt, &esize);
    if (rc == WEFT_SUCCESS && !esize)
        rc = weft__error(WEFT_ERR_INVALID_ARG, "%s: dt %d is not a weft_dtype_t", fn, (int)dt);
    if (rc == WEFT_SUCCESS)
        rc = weft__coll_check_vector(fn, "recvcounts", recvcounts, "displs", displs, "recvbuf",
                                     recvbuf, esize, comm);
    if (rc == WEFT_SUCCESS && !in_place && sendcount != recvcounts[comm->rank])
        rc = weft__error(WEFT_ERR_INVALID_ARG, "%s: sendcount %zu differs from this rank's "
                         "recvcounts[%d] = %zu", fn, sendcount, comm->rank,
                         recvcounts[comm->rank]);
    if (rc != WEFT_SUCCESS)
        return rc;
    if (!any_block(recvcounts, NULL, comm->size) && weft__coll_skip_empty(comm, req))
        return WEFT_SUCCESS;
    if (!(c = weft__coll_new(in_place ? WEFT_IN_PLACE : sendbuf, recvbuf, sendcount, esize, dt,
                             WEFT_SUM, 0)))
        return WEFT_ERR_NO_MEMORY;
    for (int i = 0; i < comm->size; i++)
        even &= recvcounts[i] == recvcounts[0] && displs[i] == (size_t)i * recvcounts[0];
    return start_v(comm, c, WEFT__COLL_ALLGATHER, sendcount * esize, even, NULL, NULL,
                   recvcounts, displs, req);
}

WEFT_API weft_result_t weft_iallgatherv(const void *sendbuf, size_t sendcount, void *recvbuf,
                                        const size_t *recvcounts, const size_t *displs,
                                        weft_dtype_t dt, weft_comm_t comm,
                                        weft_request_t *req)
{
    return start_allgather("weft_iallgatherv", sendbuf, sendcount, recvbuf, recvcounts, displs,
                           dt, comm, req);
}

WEFT_API weft_result_t weft_allgatherv(const void *sendbuf, size_t sendcount, void *recvbuf,
                                       const size_t *recvcounts, const size_t *displs,
                                       weft_dtype_t dt, weft_comm_t comm)
{
    return start_allgather("weft_allgatherv", sendbuf, sendcount, recvbuf, recvcounts, displs, dt,
                           comm, WEFT__COLL_BLOCKING);
}

/* The even allgather with its layout written out. Not inlined, as
 * start_reduce_scatter_counts: its array would give calls of count 0 a
 * large frame too. */
static __attribute__((noinline)) weft_result_t
start_allgather_layout(const char *fn, const void *sendbuf, void *recvbuf, size_t count,
                       size_t esize, weft_dtype_t dt, weft_comm_t comm, weft_request_t *req)
{
    size_t *v, local[2 * EVEN_LOCAL_RANKS];
    weft_result_t rc;

    if (!(v = even_layout(fn, comm->size, count, local)))
        return WEFT_ERR_NO_MEMORY;
    /* sendbuf at this rank's block of recvbuf is in place too. */
    if (sendbuf != WEFT_IN_PLACE && recvbuf && esize &&
        sendbuf == (char *)recvbuf + (size_t)comm->rank * count * esize)
        sendbuf = WEFT_IN_PLACE;
    rc = start_allgather(fn, sendbuf, count, recvbuf, v, v + comm->size, dt, comm, req);
    even_free(v, local);
    return rc;
}

static weft_result_t start_allgather_even(const char *fn, const void *sendbuf, void *recvbuf,
                                          size_t count, weft_dtype_t dt, weft_comm_t comm,
                                          weft_request_t *req)
{
    weft_result_t rc = weft__coll_check_call(comm, fn, req);
    size_t esize = weft__dtype_bytes(dt);

    if (rc == WEFT_SUCCESS && esize)
        rc = weft__coll_check_total(fn, "count", count, esize, comm);
    if (rc != WEFT_SUCCESS)
        return rc;
    /* Nothing to move (a valid dtype, so no error to report either). */
    if (count == 0 && esize && weft__coll_skip_empty(comm, req))
        return WEFT_SUCCESS;
    return start_allgather_layout(fn, sendbuf, recvbuf, count, esize, dt, comm, req);
}

WEFT_API weft_result_t weft_iallgather(const void *sendbuf, void *recvbuf, size_t count,
                                       weft_dtype_t dt, weft_comm_t comm, weft_request_t *req)
{
    return start_allgather_even("weft_iallgather", sendbuf, recvbuf, count, dt, comm, req);
}

WEFT_API weft_result_t weft_allgather(const void *sendbuf, void *recvbuf, size_t count,
                                      weft_dtype_t dt, weft_comm_t comm)
{
    return start_allgather_even("weft_allgather", sendbuf, recvbuf, count, dt, comm,
                                WEFT__COLL_BLOCKING);
}

/* ---------------------------------------------------------------- alltoall */

/* even: the even form, whose layout every rank knows. */
static weft_result_t start_alltoall(const char *fn, int even, size_t even_count,
                                    const void *sendbuf, const size_t *sendcounts,
                                    const size_t *sdispls, void *recvbuf, const size_t *recvcounts,
                                    const size_t *rdispls, weft_dtype_t dt, weft_comm_t comm,
                                    weft_request_t *req)
{
    weft_result_t rc = weft__coll_check_call(comm, fn, req);
    int in_place = sendbuf == WEFT_IN_PLACE || sendbuf == recvbuf;
    size_t esize = weft__dtype_bytes(dt), total = 0;
    weft__coll_t *c;

    if (rc == WEFT_SUCCESS && !esize)
        rc = weft__error(WEFT_ERR_INVALID_ARG, "%s: dt %d is not a weft_dtype_t", fn, (int)dt);
    if (rc == WEFT_SUCCESS)
        rc = weft__coll_check_vector(fn, "recvcounts", recvcounts, "rdispls", rdispls,
                                     "recvbuf", recvbuf, esize, comm);
    if (in_place) {
        /* MPI's convention: the outgoing blocks have the incoming layout. */
        sendcounts = recvcounts;
        sdispls = rdispls;
    } else if (rc == WEFT_SUCCESS) {
        rc = weft__coll_check_vector(fn, "sendcounts", sendcounts, "sdispls", sdispls,
                                     "sendbuf", sendbuf, esize, comm);
    }
    if (rc != WEFT_SUCCESS)
        return rc;
    /* The exchanges skip empty blocks on both sides (coll/algo/linear.c): a rank
     * whose blocks are all empty has no part in an all-to-all even where
     * the others have. */
    if (!any_block(sendcounts, recvcounts, comm->size) && weft__coll_skip_empty(comm, req))
        return WEFT_SUCCESS;
    /* even_count: what WEFT_CHECK compares (0 for the v-form). */
    if (!(c = weft__coll_new(in_place ? WEFT_IN_PLACE : sendbuf, recvbuf, even_count, esize, dt,
                             WEFT_SUM, 0)))
        return WEFT_ERR_NO_MEMORY;
    for (int i = 0; i < comm->size; i++) /* saturating: only compared */
        total = sendcounts[i] > SIZE_MAX / esize - total ? SIZE_MAX / esize
                                                         : total + sendcounts[i];
    return start_v(comm, c, WEFT__COLL_ALLTOALL, total * esize, even, sendcounts, sdispls,
                   recvcounts, rdispls, req);
}

WEFT_API weft_result_t weft_ialltoallv(const void *sendbuf, const size_t *sendcounts,
                                       const size_t *sdispls, void *recvbuf,
                                       const size_t *recvcounts, const size_t *rdispls,
                                       weft_dtype_t dt, weft_comm_t comm,
                                       weft_request_t *req)
{
    return start_alltoall("weft_ialltoallv", 0, 0, sendbuf, sendcounts, sdispls, recvbuf,
                          recvcounts, rdispls, dt, comm, req);
}

WEFT_API weft_result_t weft_alltoallv(const void *sendbuf, const size_t *sendcounts,
                                      const size_t *sdispls, void *recvbuf,
                                      const size_t *recvcounts, const size_t *rdispls,
                                      weft_dtype_t dt, weft_comm_t comm)
{
    return start_alltoall("weft_alltoallv", 0, 0, sendbuf, sendcounts, sdispls, recvbuf, recvcounts,
                          rdispls, dt, comm, WEFT__COLL_BLOCKING);
}

/* The even all-to-all with its layout written out (not inlined, as
 * start_allgather_layout). */
static __attribute__((noinline)) weft_result_t
start_alltoall_layout(const char *fn, const void *sendbuf, void *recvbuf, size_t count,
                      weft_dtype_t dt, weft_comm_t comm, weft_request_t *req)
{
    size_t *v, local[2 * EVEN_LOCAL_RANKS];
    weft_result_t rc;

    if (!(v = even_layout(fn, comm->size, count, local)))
        return WEFT_ERR_NO_MEMORY;
    rc = start_alltoall(fn, 1, count, sendbuf, v, v + comm->size, recvbuf, v, v + comm->size, dt,
                        comm, req);
    even_free(v, local);
    return rc;
}

static weft_result_t start_alltoall_even(const char *fn, const void *sendbuf, void *recvbuf,
                                         size_t count, weft_dtype_t dt, weft_comm_t comm,
                                         weft_request_t *req)
{
    weft_result_t rc = weft__coll_check_call(comm, fn, req);
    size_t esize = weft__dtype_bytes(dt);

    if (rc == WEFT_SUCCESS && esize)
        rc = weft__coll_check_total(fn, "count", count, esize, comm);
    if (rc != WEFT_SUCCESS)
        return rc;
    /* Nothing to move (a valid dtype, so no error to report either). */
    if (count == 0 && esize && weft__coll_skip_empty(comm, req))
        return WEFT_SUCCESS;
    return start_alltoall_layout(fn, sendbuf, recvbuf, count, dt, comm, req);
}

WEFT_API weft_result_t weft_ialltoall(const void *sendbuf, void *recvbuf, size_t count,
                                      weft_dtype_t dt, weft_comm_t comm, weft_request_t *req)
{
    return start_alltoall_even("weft_ialltoall", sendbuf, recvbuf, count, dt, comm, req);
}

WEFT_API weft_result_t weft_alltoall(const void *sendbuf, void *recvbuf, size_t count,
                                     weft_dtype_t dt, weft_comm_t comm)
{
    return start_alltoall_even("weft_alltoall", sendbuf, recvbuf, count, dt, comm,
                               WEFT__COLL_BLOCKING);
}
