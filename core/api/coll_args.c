/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * coll_args.c: the argument checks and the set-up shared by the collective
 * entry points (coll_args.h).
 */
#include "config.h"

#include <stdint.h>
#include <stdlib.h>

#include "weft/transport.h"

#include "core/api/coll_args.h"
#include "core/base/error.h"
#include "core/dt/dtype.h"
#include "core/dt/op.h"
#include "core/dt/reduce.h"
#include "core/transport/plugin.h"

weft_result_t weft__coll_check_call_report(weft_comm_t comm, const char *fn,
                                           const weft_request_t *req)
{
    weft_result_t rc = weft__comm_check(comm, fn);

    if (rc == WEFT_SUCCESS && weft__comm_aborted(comm))
        rc = weft__error(WEFT_ERR_ABORTED, "%s: the communicator was aborted", fn);
    if (rc == WEFT_SUCCESS && !req)
        rc = weft__error(WEFT_ERR_INVALID_ARG, "%s: req is NULL", fn);
    return rc;
}

weft_result_t weft__coll_check_data(const char *fn, const char *name, const void *buf,
                                    size_t count, weft_dtype_t dt, size_t *esize)
{
    size_t bytes;

    *esize = weft__dtype_bytes(dt);
    if (!*esize)
        return weft__error(WEFT_ERR_INVALID_ARG, "%s: dt %d is not a weft_dtype_t", fn, (int)dt);
    if (__builtin_mul_overflow(count, *esize, &bytes))
        return weft__error(WEFT_ERR_INVALID_ARG, "%s: count %zu overflows the size of %s", fn,
                           count, name);
    if (count > 0 && !buf)
        return weft__error(WEFT_ERR_INVALID_ARG, "%s: %s is NULL with count %zu", fn, name,
                           count);
    return WEFT_SUCCESS;
}

weft_result_t weft__coll_total_overflows(const char *fn, const char *name, size_t count,
                                         weft_comm_t comm)
{
    return weft__error(WEFT_ERR_INVALID_ARG, "%s: %s %zu times %d ranks overflows", fn, name,
                       count, comm->size);
}

weft_result_t weft__coll_check_root(const char *fn, int root, weft_comm_t comm)
{
    if (root < 0 || root >= comm->size)
        return weft__error(WEFT_ERR_INVALID_ARG, "%s: root %d is not a rank of the "
                           "communicator (size %d)", fn, root, comm->size);
    return WEFT_SUCCESS;
}

weft_result_t weft__coll_check_vector(const char *fn, const char *counts_name,
                                      const size_t *counts, const char *displs_name,
                                      const size_t *displs, const char *buf_name,
                                      const void *buf, size_t esize, weft_comm_t comm)
{
    size_t limit = SIZE_MAX / esize, total = 0;

    if (!counts)
        return weft__error(WEFT_ERR_INVALID_ARG, "%s: %s is NULL", fn, counts_name);
    if (displs_name && !displs)
        return weft__error(WEFT_ERR_INVALID_ARG, "%s: %s is NULL", fn, displs_name);
    for (int i = 0; i < comm->size; i++) {
        size_t start = displs_name ? displs[i] : total;

        if (counts[i] > limit)
            return weft__error(WEFT_ERR_INVALID_ARG, "%s: block %d (%s[%d] = %zu) overflows "
                               "the buffer size", fn, i, counts_name, i, counts[i]);
        /* Name the displacement: it is the argument the caller got wrong. */
        if (start > limit - counts[i])
            return weft__error(WEFT_ERR_INVALID_ARG, "%s: block %d (%s[%d] = %zu at %s[%d] = "
                               "%zu) overflows the buffer size", fn, i, counts_name, i,
                               counts[i], displs_name ? displs_name : "offset", i, start);
        if (counts[i] && !buf)
            return weft__error(WEFT_ERR_INVALID_ARG, "%s: %s is NULL with %s[%d] = %zu", fn,
                               buf_name, counts_name, i, counts[i]);
        total = start + counts[i];
    }
    return WEFT_SUCCESS;
}

weft_result_t weft__coll_check_op(const char *fn, weft_dtype_t dt, weft_op_t op)
{
    unsigned char scalar[8];
    int premul;

    /* A built-in operator on a type it applies to, the common case,
     * without the PREMUL_SUM lookup; the rest gets its message there. */
    if ((unsigned)op <= WEFT_BXOR && weft__reduce_check(dt, op) == WEFT_SUCCESS)
        return WEFT_SUCCESS;
    return weft__op_check(fn, dt, op, scalar, &premul);
}

weft_result_t weft__coll_apply_op(weft_comm_t comm, weft__coll_t *c, weft_op_t op,
                                  const void *input, size_t count)
{
    weft__plugin_t *dev;
    int type = WEFT_TRANSPORT_MEM_HOST, ordinal;

    if ((unsigned)op <= WEFT_BXOR)
        return WEFT_SUCCESS;
    dev = weft__plugins_device(&comm->inst->wire.plugins);
    if (dev && input && dev->device->mem_query(dev->ctx, input, &type, &ordinal) ==
                            WEFT_SUCCESS && type == WEFT_TRANSPORT_MEM_CUDA)
        return WEFT_SUCCESS; /* scaled once staged */
    return weft__coll_apply_op_host(c, op, input, count);
}

weft_result_t weft__coll_apply_op_host(weft__coll_t *c, weft_op_t op, const void *input,
                                       size_t count)
{
    unsigned char scalar[8];
    int premul;
    weft_result_t rc;

    /* A built-in operator has nothing to apply, and every caller checked
     * it with weft__coll_check_op already. */
    if ((unsigned)op <= WEFT_BXOR)
        return WEFT_SUCCESS;
    rc = weft__op_check("weft collective", c->dt, op, scalar, &premul);
    if (rc == WEFT_SUCCESS && premul) {
        c->premul_input = malloc(count * c->esize + 1);
        if (c->premul_input) {
            weft__op_scale(c->premul_input, input, count, c->dt, scalar);
            c->sendbuf = c->premul_input;
            c->op = WEFT_SUM;
        } else {
            rc = weft__error(WEFT_ERR_NO_MEMORY, "cannot allocate the PREMUL_SUM input");
        }
    }
    if (rc != WEFT_SUCCESS)
        weft__coll_free(c);
    return rc;
}

int weft__coll_skip_empty(weft_comm_t comm, weft_request_t *req)
{
    /* On a stream, even an empty call keeps its place in the order. */
    if (weft__coll_check_enabled() || comm->stream)
        return 0;
    weft__coll_start_empty(comm, req);
    return 1;
}

weft_result_t weft__coll_launch_now(weft_comm_t comm, weft__coll_t *c, weft__coll_kind_t kind,
                                    weft_request_t *req)
{
    if (weft__coll_check_enabled()) {
        /* The check reads the call's communicator and group. */
        c->comm = comm;
        c->kind = (int)kind;
        if (!c->gsize) /* the choice of algorithm may have ordered the ranks */
            weft__coll_set_group(c, comm->size, comm->rank, NULL);
        if (!(c = weft__coll_checked(c, kind)))
            return WEFT_ERR_NO_MEMORY;
    }
    return weft__coll_start(comm, c, kind, req);
}
