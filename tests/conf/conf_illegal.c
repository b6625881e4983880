/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * conf_illegal.c: arguments the collectives must refuse with
 * WEFT_ERR_INVALID_ARG and a weft_last_error() that names the argument:
 * bitwise operators on floating types (every reducing operation, every
 * floating dtype), PREMUL_SUM operators used with another dtype or after
 * weft_op_free, operator and dtype values out of range, roots outside
 * the communicator, displacements whose block overflows, bad axes and
 * in-place axis calls. Every rank makes the same calls, and none of them
 * may communicate: a wrong answer here would hang or crash.
 */
#include "config.h"

#include <stdint.h>
#include <stdlib.h>

#include "tests/conf/conf.h"

static void expect_invalid(conf_case_t *k, weft_result_t rc, const char *call,
                           const char *names)
{
    const char *err = weft_last_error();

    if (rc != WEFT_ERR_INVALID_ARG)
        conf_fail(k, "%s returned %s, expected WEFT_ERR_INVALID_ARG (%s)", call,
                  mp_rc_name(rc), err);
    if (!mp_contains(err, names))
        conf_fail(k, "%s: weft_last_error() \"%s\" does not name %s", call, err, names);
    conf_cases++;
}

/* Calls each reducing operation (and a nonblocking twin) with dt and op;
 * all must be refused naming what. */
static void refuse_reductions(conf_case_t *k, weft_dtype_t dt, weft_op_t op, const char *what)
{
    weft_comm_t comm = k->cc->comm;
    size_t n = 4, size = (size_t)k->cc->size, shape[1] = { size };
    size_t *counts = mp_alloc(size * sizeof(size_t));
    char *in = mp_alloc(size * n * 8), *out = mp_alloc(size * n * 8);
    weft_request_t req = NULL;

    for (size_t i = 0; i < size; i++)
        counts[i] = n;
    k->dt = dt;
    k->count = n;
    k->func = "allreduce";
    expect_invalid(k, weft_allreduce(in, out, n, dt, op, comm), "weft_allreduce", what);
    expect_invalid(k, weft_iallreduce(in, out, n, dt, op, comm, &req), "weft_iallreduce", what);
    if (req)
        conf_fail(k, "weft_iallreduce failed but set *req");
    k->func = "reduce";
    expect_invalid(k, weft_reduce(in, out, n, dt, op, 0, comm), "weft_reduce", what);
    k->func = "reduce_scatter";
    expect_invalid(k, weft_reduce_scatter(in, out, n, dt, op, comm), "weft_reduce_scatter",
                   what);
    k->func = "reduce_scatterv";
    expect_invalid(k, weft_reduce_scatterv(in, out, counts, dt, op, comm),
                   "weft_reduce_scatterv", what);
    k->func = "scan";
    expect_invalid(k, weft_scan(in, out, n, dt, op, comm), "weft_scan", what);
    k->func = "exscan";
    expect_invalid(k, weft_iexscan(in, out, n, dt, op, comm, &req), "weft_iexscan", what);
    k->func = "reduce_scatter_axis";
    expect_invalid(k, weft_reduce_scatter_axis(in, out, 1, shape, 0, dt, op, comm),
                   "weft_reduce_scatter_axis", what);
    free(counts);
    free(in);
    free(out);
}

void conf_run_illegal(const conf_comm_t *cc)
{
    conf_case_t k = { .cc = cc, .root = CONF_NO_ROOT };
    weft_comm_t comm = cc->comm;
    int size = cc->size;
    size_t n = 4, *counts = mp_alloc((size_t)size * sizeof(size_t));
    size_t *displs = mp_alloc((size_t)size * sizeof(size_t));
    size_t shape[WEFT_MAX_DIMS + 1] = { 2, 2, 2, 1, 1, 1, 1, 1, 1 };
    char *in = mp_alloc((size_t)size * n * 8 + 64), *out = mp_alloc((size_t)size * n * 8 + 64);
    weft_op_t premul, stale;
    float one = 1;

    /* every bitwise operator with every floating type */
    for (int dt = WEFT_FLOAT16; dt <= WEFT_FLOAT64; dt++)
        for (int op = WEFT_BAND; op <= WEFT_BXOR; op++) {
            k.op = op;
            refuse_reductions(&k, (weft_dtype_t)dt, (weft_op_t)op, "op");
        }
    /* a float32 PREMUL_SUM with int32 data, a freed one, a made-up one */
    MP_CHECK(weft_op_create_premul_sum(&one, WEFT_FLOAT32, &premul));
    k.op = CONF_PREMUL;
    refuse_reductions(&k, WEFT_INT32, premul, "op");
    MP_CHECK(weft_op_free(premul));
    stale = premul;
    refuse_reductions(&k, WEFT_FLOAT32, stale, "op");
    k.op = -1;
    refuse_reductions(&k, WEFT_INT32, (weft_op_t)99, "op");
    refuse_reductions(&k, WEFT_INT32, (weft_op_t)-1, "op");

    /* a dtype out of range, in a data-movement operation */
    k.op = -1;
    k.dt = WEFT_UINT8;
    k.func = "allgather";
    expect_invalid(&k, weft_allgather(in, out, n, (weft_dtype_t)WEFT_DTYPE_COUNT, comm),
                   "weft_allgather", "dt");
    /* roots outside the communicator */
    k.func = "broadcast";
    k.root = size;
    expect_invalid(&k, weft_broadcast(out, n, WEFT_UINT8, size, comm), "weft_broadcast",
                   "root");
    k.func = "reduce";
    k.root = -1;
    expect_invalid(&k, weft_reduce(in, out, n, WEFT_INT32, WEFT_SUM, -1, comm), "weft_reduce",
                   "root");
    k.func = "gatherv";
    expect_invalid(&k, weft_gatherv(in, n, out, counts, displs, WEFT_UINT8, size, comm),
                   "weft_gatherv", "root");
    k.root = CONF_NO_ROOT;

    /* a block whose displacement makes it overflow: the error names the
     * displacement array */
    for (int i = 0; i < size; i++) {
        counts[i] = n;
        displs[i] = (size_t)i * n;
    }
    displs[size - 1] = SIZE_MAX - 1;
    k.func = "allgatherv";
    expect_invalid(&k, weft_allgatherv(in, n, out, counts, displs, WEFT_INT32, comm),
                   "weft_allgatherv", "displs");
    k.func = "alltoallv";
    expect_invalid(&k, weft_alltoallv(in, counts, displs, out, counts, counts, WEFT_INT32,
                                      comm), "weft_alltoallv", "sdispls");
    expect_invalid(&k, weft_alltoallv(in, counts, counts, out, counts, displs, WEFT_INT32,
                                      comm), "weft_alltoallv", "rdispls");
    displs[size - 1] = (size_t)(size - 1) * n;

    /* NULL buffers with elements to move */
    k.func = "allreduce";
    expect_invalid(&k, weft_allreduce(NULL, out, n, WEFT_INT32, WEFT_SUM, comm),
                   "weft_allreduce", "sendbuf");
    expect_invalid(&k, weft_allreduce(in, NULL, n, WEFT_INT32, WEFT_SUM, comm),
                   "weft_allreduce", "recvbuf");

    /* axis calls: an axis outside the array, too many dimensions, and in
     * place (a rank's block is not contiguous in general) */
    shape[0] = 2 * (size_t)size;
    k.func = "allgather_axis";
    expect_invalid(&k, weft_allgather_axis(in, out, 3, shape, 3, WEFT_UINT8, comm),
                   "weft_allgather_axis", "axis");
    expect_invalid(&k, weft_allgather_axis(in, out, WEFT_MAX_DIMS + 1, shape, 0, WEFT_UINT8,
                                           comm), "weft_allgather_axis", "ndims");
    k.func = "alltoall_axis";
    k.in_place = 1;
    expect_invalid(&k, weft_alltoall_axis(WEFT_IN_PLACE, out, 3, shape, 0, WEFT_UINT8, comm),
                   "weft_alltoall_axis", "WEFT_IN_PLACE");
    k.in_place = 0;
    if (size > 1) {
        /* shape[axis] must split evenly over the ranks */
        shape[0] = 2 * (size_t)size + 1;
        k.func = "scatter_axis";
        expect_invalid(&k, weft_scatter_axis(in, out, 3, shape, 0, WEFT_UINT8, 0, comm),
                       "weft_scatter_axis", "shape");
    }
    free(counts);
    free(displs);
    free(in);
    free(out);
}
