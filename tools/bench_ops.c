/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * bench_ops.c: what each benchmarked operation moves, how it is called,
 * and what its result must be.
 *
 * Inputs are small integers (1 to 5, or 1 to 2 for PROD) so that every
 * type represents every partial result exactly: the check compares exact
 * values, except AVG on floating types, which divides.
 */
#include "config.h"

#include <math.h>
#include <stdint.h>
#include <string.h>

#include "tools/bench.h"

static const char *const names[BENCH_NKINDS] = {
    "allreduce", "reduce", "broadcast", "allgather", "reduce_scatter", "alltoall", "gather",
    "scatter", "pingpong", "bw"
};

const char *bench_kind_name(bench_kind_t k)
{
    return names[k];
}

int bench_kind_from_name(const char *name)
{
    for (int k = 0; k < BENCH_NKINDS; k++)
        if (!strcmp(names[k], name))
            return k;
    return -1;
}

int bench_reduces(bench_kind_t k)
{
    return k == BENCH_ALLREDUCE || k == BENCH_REDUCE || k == BENCH_REDUCE_SCATTER;
}

int bench_rooted(bench_kind_t k)
{
    return k == BENCH_REDUCE || k == BENCH_BROADCAST || k == BENCH_GATHER || k == BENCH_SCATTER;
}

/* nccl-tests' sizes: the whole gathered or scattered buffer for the
 * operations that split one. */
static int splits(bench_kind_t k)
{
    return k == BENCH_ALLGATHER || k == BENCH_REDUCE_SCATTER || k == BENCH_ALLTOALL ||
           k == BENCH_GATHER || k == BENCH_SCATTER;
}

size_t bench_count(bench_kind_t k, size_t bytes, size_t esize, int n)
{
    return splits(k) ? bytes / esize / (size_t)n : bytes / esize;
}

size_t bench_size(bench_kind_t k, size_t count, size_t esize, int n)
{
    return splits(k) ? count * esize * (size_t)n : count * esize;
}

double bench_busbw_factor(bench_kind_t k, int n)
{
    switch (k) {
    case BENCH_ALLREDUCE:
        return 2.0 * (n - 1) / n;
    case BENCH_ALLGATHER:
    case BENCH_REDUCE_SCATTER:
    case BENCH_ALLTOALL:
    case BENCH_GATHER:
    case BENCH_SCATTER:
        return (double)(n - 1) / n;
    default:
        return 1.0;
    }
}

void bench_buffers(bench_kind_t k, size_t count, int n, size_t *send, size_t *recv)
{
    *send = *recv = count;
    if (k == BENCH_ALLGATHER)
        *recv = count * (size_t)n;
    if (k == BENCH_REDUCE_SCATTER)
        *send = *recv = count * (size_t)n; /* in place needs the whole input in recvbuf */
    /* Gather and scatter in place keep the root's whole buffer in recvbuf. */
    if (k == BENCH_ALLTOALL || k == BENCH_GATHER || k == BENCH_SCATTER)
        *send = *recv = count * (size_t)n;
}

/* One round trip between ranks 0 and 1 (rank 0 and itself alone); the
 * others wait. The report halves its time: one way. */
static weft_result_t pingpong(const void *sb, void *rb, size_t count, const bench_opts_t *o,
                              weft_comm_t comm)
{
    weft_status_t st;
    weft_result_t rc;
    int rank = 0, n = 1;

    weft_comm_rank(comm, &rank);
    weft_comm_size(comm, &n);
    if (rank == 0) {
        rc = weft_send(sb, count, o->dt, n > 1 ? 1 : 0, 1, comm);
        if (rc == WEFT_SUCCESS)
            rc = weft_recv(rb, count, o->dt, n > 1 ? 1 : 0, 1, comm, &st);
        return rc;
    }
    if (rank == 1) {
        rc = weft_recv(rb, count, o->dt, 0, 1, comm, &st);
        if (rc == WEFT_SUCCESS)
            rc = weft_send(rb, count, o->dt, 0, 1, comm);
        return rc;
    }
    return WEFT_SUCCESS;
}

/* A window of BENCH_BW_WINDOW messages from rank 0 to rank 1 (rank 0
 * and itself alone), nonblocking on both sides, which rank 1 closes with
 * an empty message back; the others wait. The report divides its time
 * by the window: one message's share of a stream. */
static weft_result_t bw(const void *sb, void *rb, size_t count, const bench_opts_t *o,
                        weft_comm_t comm)
{
    weft_request_t reqs[2 * BENCH_BW_WINDOW];
    int rank = 0, n = 1, to, nreq = 0;
    char none = 0;
    weft_status_t st;
    weft_result_t rc = WEFT_SUCCESS;

    weft_comm_rank(comm, &rank);
    weft_comm_size(comm, &n);
    to = n > 1 ? 1 : 0;
    if (rank > 1)
        return WEFT_SUCCESS;
    if (rank == to)
        for (int i = 0; i < BENCH_BW_WINDOW && rc == WEFT_SUCCESS; i++)
            rc = weft_irecv(rb, count, o->dt, 0, 2, comm, &reqs[nreq++]);
    if (rank == 0)
        for (int i = 0; i < BENCH_BW_WINDOW && rc == WEFT_SUCCESS; i++)
            rc = weft_isend(sb, count, o->dt, to, 2, comm, &reqs[nreq++]);
    if (rc == WEFT_SUCCESS)
        rc = weft_waitall(nreq, reqs, NULL);
    if (rc != WEFT_SUCCESS || n == 1)
        return rc;
    if (rank == 1)
        return weft_send(&none, 0, WEFT_INT8, 0, 3, comm);
    return weft_recv(&none, 0, WEFT_INT8, 1, 3, comm, &st);
}

weft_result_t bench_run(bench_kind_t k, void *sb, void *rb, size_t count,
                        const bench_opts_t *o, int in_place, weft_comm_t comm)
{
    size_t esize = 0;
    int rank = 0;

    /* Only the forms that place a block by rank look these up: the loop
     * times this function, and its own costs count against weft. */
    if (in_place && (k == BENCH_ALLGATHER || k == BENCH_GATHER || k == BENCH_SCATTER)) {
        weft_dtype_size(o->dt, &esize);
        weft_comm_rank(comm, &rank);
    }
    switch (k) {
    case BENCH_ALLREDUCE:
        return weft_allreduce(in_place ? rb : sb, rb, count, o->dt, o->redop, comm);
    case BENCH_REDUCE:
        return weft_reduce(in_place ? rb : sb, rb, count, o->dt, o->redop, o->root, comm);
    case BENCH_BROADCAST:
        return weft_broadcast(rb, count, o->dt, o->root, comm);
    case BENCH_ALLGATHER:
        return weft_allgather(in_place ? (char *)rb + (size_t)rank * count * esize : sb, rb,
                              count, o->dt, comm);
    case BENCH_REDUCE_SCATTER:
        return weft_reduce_scatter(in_place ? WEFT_IN_PLACE : sb, rb, count, o->dt, o->redop,
                                   comm);
    case BENCH_ALLTOALL:
        return weft_alltoall(in_place ? WEFT_IN_PLACE : sb, rb, count, o->dt, comm);
    case BENCH_GATHER:
        /* In place: the root's block is already at its place in recvbuf. */
        if (in_place)
            return weft_gather(rank == o->root ? WEFT_IN_PLACE
                                               : (char *)rb + (size_t)rank * count * esize,
                               rb, count, o->dt, o->root, comm);
        return weft_gather(sb, rb, count, o->dt, o->root, comm);
    case BENCH_SCATTER:
        /* In place: the root's block stays where it is in the buffer. */
        if (in_place)
            return weft_scatter(rb, rank == o->root ? WEFT_IN_PLACE : rb, count, o->dt, o->root,
                                comm);
        return weft_scatter(sb, rb, count, o->dt, o->root, comm);
    case BENCH_PINGPONG:
        return pingpong(in_place ? rb : sb, rb, count, o, comm);
    case BENCH_BW:
        return bw(in_place ? rb : sb, rb, count, o, comm);
    default:
        return WEFT_ERR_INVALID_ARG;
    }
}

/* Rank r's input element i. */
static double input(const bench_opts_t *o, int r, size_t i)
{
    return o->redop == WEFT_PROD ? (double)(1 + (r + i) % 2) : (double)(1 + (r + i) % 5);
}

static void store(void *buf, size_t i, weft_dtype_t dt, double v)
{
    switch (dt) {
    case WEFT_INT8: ((int8_t *)buf)[i] = (int8_t)(int64_t)v; break;
    case WEFT_UINT8: ((uint8_t *)buf)[i] = (uint8_t)(int64_t)v; break;
    case WEFT_INT32: ((int32_t *)buf)[i] = (int32_t)v; break;
    case WEFT_UINT32: ((uint32_t *)buf)[i] = (uint32_t)v; break;
    case WEFT_INT64: ((int64_t *)buf)[i] = (int64_t)v; break;
    case WEFT_UINT64: ((uint64_t *)buf)[i] = (uint64_t)v; break;
    case WEFT_FLOAT16: ((_Float16 *)buf)[i] = (_Float16)v; break;
    case WEFT_BFLOAT16: { /* small integers: the float's upper half is exact */
        float f = (float)v;
        uint32_t u;

        memcpy(&u, &f, 4);
        ((uint16_t *)buf)[i] = (uint16_t)(u >> 16);
        break;
    }
    case WEFT_FLOAT32: ((float *)buf)[i] = (float)v; break;
    case WEFT_FLOAT64: ((double *)buf)[i] = v; break;
    }
}

static double load(const void *buf, size_t i, weft_dtype_t dt)
{
    switch (dt) {
    case WEFT_INT8: return ((const int8_t *)buf)[i];
    case WEFT_UINT8: return ((const uint8_t *)buf)[i];
    case WEFT_INT32: return ((const int32_t *)buf)[i];
    case WEFT_UINT32: return ((const uint32_t *)buf)[i];
    case WEFT_INT64: return (double)((const int64_t *)buf)[i];
    case WEFT_UINT64: return (double)((const uint64_t *)buf)[i];
    case WEFT_FLOAT16: return ((const _Float16 *)buf)[i];
    case WEFT_BFLOAT16: {
        uint32_t u = (uint32_t)((const uint16_t *)buf)[i] << 16;
        float f;

        memcpy(&f, &u, 4);
        return f;
    }
    case WEFT_FLOAT32: return ((const float *)buf)[i];
    case WEFT_FLOAT64: return ((const double *)buf)[i];
    }
    return NAN;
}

void bench_fill(bench_kind_t k, void *sb, void *rb, size_t count, const bench_opts_t *o,
                int rank, int n, int in_place)
{
    size_t send, recv, esize = 0;

    weft_dtype_size(o->dt, &esize);
    bench_buffers(k, count, n, &send, &recv);
    memset(rb, 0, recv * esize);
    if (k == BENCH_BROADCAST) {
        for (size_t i = 0; i < count; i++)
            store(rb, i, o->dt, rank == o->root ? input(o, rank, i) : 0);
        return;
    }
    if ((k == BENCH_ALLGATHER || k == BENCH_GATHER) && in_place) {
        for (size_t i = 0; i < count; i++)
            store(rb, (size_t)rank * count + i, o->dt, input(o, rank, i));
        return;
    }
    if (k == BENCH_SCATTER) { /* block r of the root's buffer is rank r's */
        for (size_t j = 0; rank == o->root && j < send; j++)
            store(in_place ? rb : sb, j, o->dt, input(o, (int)(j / count), j % count));
        return;
    }
    if (k == BENCH_GATHER) {
        for (size_t i = 0; i < count; i++)
            store(sb, i, o->dt, input(o, rank, i));
        return;
    }
    for (size_t i = 0; i < send; i++)
        store(in_place ? rb : sb, i, o->dt, input(o, rank, i));
}

/* op folded over every rank's element i, as the library defines it. */
static double folded(const bench_opts_t *o, int n, size_t i)
{
    double acc = input(o, 0, i);

    for (int r = 1; r < n; r++) {
        double v = input(o, r, i);

        switch (o->redop) {
        case WEFT_PROD: acc *= v; break;
        case WEFT_MIN: acc = v < acc ? v : acc; break;
        case WEFT_MAX: acc = v > acc ? v : acc; break;
        default: acc += v; break;
        }
    }
    if (o->redop == WEFT_AVG)
        acc = o->dt < WEFT_FLOAT16 ? trunc(acc / n) : acc / n;
    return acc;
}

size_t bench_wrong(bench_kind_t k, const void *rb, size_t count, const bench_opts_t *o,
                   int rank, int n, int in_place)
{
    double tol = o->redop == WEFT_AVG && o->dt >= WEFT_FLOAT16 ? 1e-2 : 0;
    size_t wrong = 0, esize = 0;
    unsigned char want[8];

    weft_dtype_size(o->dt, &esize);
    /* bw: rank 1 alone receives (rank 0, when it is not alone) */
    if (((k == BENCH_REDUCE || k == BENCH_GATHER) && rank != o->root) ||
        (k == BENCH_PINGPONG && rank > 1) ||
        (k == BENCH_BW && (rank > 1 || (rank == 0 && n > 1))))
        return 0;
    if (k == BENCH_SCATTER && in_place && rank == o->root)
        rb = (const char *)rb + (size_t)rank * count * esize; /* its block stayed there */
    for (size_t j = 0, total = k == BENCH_ALLGATHER || k == BENCH_ALLTOALL || k == BENCH_GATHER
                                  ? count * (size_t)n : count; j < total; j++) {
        double expect;

        switch (k) {
        case BENCH_BROADCAST: expect = input(o, o->root, j); break;
        case BENCH_ALLGATHER:
        case BENCH_GATHER: expect = input(o, (int)(j / count), j % count); break;
        case BENCH_SCATTER: expect = input(o, rank, j); break;
        case BENCH_ALLTOALL:
            expect = input(o, (int)(j / count), (size_t)rank * count + j % count);
            break;
        case BENCH_REDUCE_SCATTER: expect = folded(o, n, (size_t)rank * count + j); break;
        case BENCH_PINGPONG:
        case BENCH_BW: expect = input(o, 0, j); break;
        default: expect = folded(o, n, j); break;
        }
        /* Round the expectation through the type, as the result was. */
        store(want, 0, o->dt, expect);
        expect = load(want, 0, o->dt);
        if (fabs(load(rb, j, o->dt) - expect) > tol * fabs(expect))
            wrong++;
    }
    return wrong;
}
