/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * coll_args.h: what every collective entry point checks and does before
 * and after its algorithm runs (coll_args.c).
 */
#ifndef WEFT_CORE_COLL_ARGS_H
#define WEFT_CORE_COLL_ARGS_H

#include "core/coll/algo/algo.h"
#include "core/coll/coll.h"
#include "core/comm/comm.h"
#include "core/dt/dtype.h"
#include "core/tune/tune.h"

/* The checks of weft__coll_check_call, with the error it reports. */
weft_result_t weft__coll_check_call_report(weft_comm_t comm, const char *fn,
                                           const weft_request_t *req);

/* A live, not aborted communicator and a request pointer. Inline, and
 * out of line only to report an error: a call that moves nothing (count
 * 0) costs little more than its checks, and each call made for them cost
 * a stack frame (a 0-count reduce_scatter: 175 instructions). */
static inline weft_result_t weft__coll_check_call(weft_comm_t comm, const char *fn,
                                                  const weft_request_t *req)
{
    if (__builtin_expect(comm && comm->magic == WEFT__COMM_MAGIC && req &&
                         !weft__comm_aborted(comm), 1))
        return WEFT_SUCCESS;
    return weft__coll_check_call_report(comm, fn, req);
}
/* A known dtype (its size in *esize), a count whose bytes fit in size_t,
 * and a buffer wherever count > 0; name is the argument's name. */
weft_result_t weft__coll_check_data(const char *fn, const char *name, const void *buf,
                                    size_t count, weft_dtype_t dt, size_t *esize);
/* The error of weft__coll_check_total. */
weft_result_t weft__coll_total_overflows(const char *fn, const char *name, size_t count,
                                         weft_comm_t comm);

/* count elements times the communicator's size still fit in size_t.
 * Multiplications that report overflow, not divisions, which cost tens
 * of cycles on every call. */
static inline weft_result_t weft__coll_check_total(const char *fn, const char *name,
                                                   size_t count, size_t esize, weft_comm_t comm)
{
    size_t bytes;

    if (__builtin_expect(!__builtin_mul_overflow(count, esize, &bytes) &&
                         !__builtin_mul_overflow(bytes, (size_t)comm->size, &bytes), 1))
        return WEFT_SUCCESS;
    return weft__coll_total_overflows(fn, name, count, comm);
}
weft_result_t weft__coll_check_root(const char *fn, int root, weft_comm_t comm);
/* A counts array of comm's size (and its displacements, when displs_name
 * is not NULL) whose blocks all fit in size_t bytes; buf must be non-NULL
 * when a count is nonzero. */
weft_result_t weft__coll_check_vector(const char *fn, const char *counts_name,
                                      const size_t *counts, const char *displs_name,
                                      const size_t *displs, const char *buf_name,
                                      const void *buf, size_t esize, weft_comm_t comm);
/* A reduction operator for dt, built-in or PREMUL_SUM. */
weft_result_t weft__coll_check_op(const char *fn, weft_dtype_t dt, weft_op_t op);

/* For a PREMUL_SUM op, replaces c's input (count elements at input) by
 * a scaled copy and makes the reduction a plain sum; frees c on failure.
 * op must have passed weft__coll_check_op. An input in device memory is
 * left as it is, c->op the PREMUL_SUM, for the staging to scale once it
 * is on the host (coll_stage.c). */
weft_result_t weft__coll_apply_op(weft_comm_t comm, weft__coll_t *c, weft_op_t op,
                                  const void *input, size_t count);
/* The scaling itself, of an input the host can read. */
weft_result_t weft__coll_apply_op_host(weft__coll_t *c, weft_op_t op, const void *input,
                                       size_t count);

/* Starts c (weft__coll_start) on this thread, with WEFT_CHECK=1 behind the
 * comparison of the ranks' arguments (coll_check.c). Frees c on failure. */
weft_result_t weft__coll_launch_now(weft_comm_t comm, weft__coll_t *c, weft__coll_kind_t kind,
                                    weft_request_t *req);
/* coll_check.c. Whether WEFT_CHECK=1; if so, wraps c in the check that
 * runs first and returns the wrapper (NULL: out of memory, c freed). */
int weft__coll_check_enabled(void);
weft__coll_t *weft__coll_checked(weft__coll_t *c, weft__coll_kind_t kind);

/* For a call whose valid arguments say it moves nothing on any rank: 1
 * when it is done at once (not under WEFT_CHECK, whose ranks compare their
 * arguments even then), with *req a complete request unless blocking.
 * Blocking and nonblocking calls skip alike, since ranks may mix the two
 * forms of one collective; the call counts in the communicator's sequence
 * of collectives as if it ran. */
int weft__coll_skip_empty(weft_comm_t comm, weft_request_t *req);

#endif /* WEFT_CORE_COLL_ARGS_H */
