/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * mp_coll.c: barrier, broadcast, allreduce, reduce, allgather,
 * reduce_scatter and alltoall against references computed
 * here, independently of weft: every rank regenerates every rank's input
 * from its seed and reduces them serially. Inputs are small integers, so
 * every dtype represents every partial result exactly and floating-point
 * results are compared bit for bit, whatever order the algorithm combines
 * them in. Started by weftrun through tests/mp/run.sh: `mp_coll`.
 */
#include "config.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tests/mp/mptest.h"

static const char *const dt_names[WEFT_DTYPE_COUNT] = {
    "int8", "uint8", "int32", "uint32", "int64", "uint64", "float16", "bfloat16", "float32",
    "float64"
};
static const char *const op_names[8] = { "sum", "prod", "min", "max", "avg", "band", "bor",
                                         "bxor" };

static int is_float(int dt)
{
    return dt >= WEFT_FLOAT16;
}

static uint16_t to_bf16(float f)
{
    uint32_t u;

    memcpy(&u, &f, 4);
    u += 0x7fffu + ((u >> 16) & 1u); /* round to nearest, ties to even */
    return (uint16_t)(u >> 16);
}

/* Stores x, already a value of the type's range, as dt. */
static void store(void *p, int dt, double x)
{
    switch (dt) {
    case WEFT_INT8: { int8_t v = (int8_t)(int64_t)x; memcpy(p, &v, 1); break; }
    case WEFT_UINT8: { uint8_t v = (uint8_t)(int64_t)x; memcpy(p, &v, 1); break; }
    case WEFT_INT32: { int32_t v = (int32_t)x; memcpy(p, &v, 4); break; }
    case WEFT_UINT32: { uint32_t v = (uint32_t)x; memcpy(p, &v, 4); break; }
    case WEFT_INT64: { int64_t v = (int64_t)x; memcpy(p, &v, 8); break; }
    case WEFT_UINT64: { uint64_t v = (uint64_t)x; memcpy(p, &v, 8); break; }
    case WEFT_FLOAT16: { _Float16 v = (_Float16)(float)x; memcpy(p, &v, 2); break; }
    case WEFT_BFLOAT16: { uint16_t v = to_bf16((float)x); memcpy(p, &v, 2); break; }
    case WEFT_FLOAT32: { float v = (float)x; memcpy(p, &v, 4); break; }
    case WEFT_FLOAT64: memcpy(p, &x, 8); break;
    }
}

/* Rank r's element i for op: ranges keep every result exact. */
static int64_t input(int op, int r, size_t i)
{
    switch (op) {
    case WEFT_PROD: return 1 + (int64_t)((r + i) % 2);
    case WEFT_MIN: case WEFT_MAX: return (int64_t)((r * 13 + i * 7) % 11);
    case WEFT_BAND: case WEFT_BOR: case WEFT_BXOR: return (int64_t)((r * 37 + i * 11) & 0x7f);
    default: return (int64_t)((r * 7 + i * 3) % 5);
    }
}

static void expected(void *p, int dt, int op, int n, size_t i)
{
    int64_t acc = input(op, 0, i);

    for (int r = 1; r < n; r++) {
        int64_t v = input(op, r, i);

        switch (op) {
        case WEFT_SUM: case WEFT_AVG: acc += v; break;
        case WEFT_PROD: acc *= v; break;
        case WEFT_MIN: acc = v < acc ? v : acc; break;
        case WEFT_MAX: acc = v > acc ? v : acc; break;
        case WEFT_BAND: acc &= v; break;
        case WEFT_BOR: acc |= v; break;
        case WEFT_BXOR: acc ^= v; break;
        }
    }
    if (op == WEFT_AVG && !is_float(dt)) {
        store(p, dt, (double)(acc / n)); /* truncation toward zero */
    } else if (op == WEFT_AVG) {
        /* The sum is exact in dt; the division rounds once, in float32 for
         * the half types. */
        if (dt == WEFT_FLOAT64)
            store(p, dt, (double)acc / n);
        else
            store(p, dt, (double)((float)acc / (float)n));
    } else {
        store(p, dt, (double)acc);
    }
}

static void check_allreduce(weft_comm_t world, int dt, int op, size_t count, int in_place)
{
    size_t es;
    char *in, *out, *want;

    MP_CHECK(weft_dtype_size((weft_dtype_t)dt, &es));
    in = mp_alloc(count * es + 1);
    out = mp_alloc(count * es + 1);
    want = mp_alloc(es);
    for (size_t i = 0; i < count; i++)
        store(in + i * es, dt, (double)input(op, mp_rank, i));
    if (in_place) {
        memcpy(out, in, count * es);
        MP_CHECK(weft_allreduce(WEFT_IN_PLACE, out, count, (weft_dtype_t)dt, (weft_op_t)op,
                                world));
    } else {
        memset(out, 0xa5, count * es);
        MP_CHECK(weft_allreduce(in, out, count, (weft_dtype_t)dt, (weft_op_t)op, world));
    }
    for (size_t i = 0; i < count; i++) {
        expected(want, dt, op, mp_size, i);
        MP_ASSERT(!memcmp(out + i * es, want, es), "allreduce %s %s count %zu%s: element %zu "
                  "differs from the serial reference", dt_names[dt], op_names[op], count,
                  in_place ? " in place" : "", i);
    }
    free(in);
    free(out);
    free(want);
}

static void sub_allreduce(weft_comm_t world)
{
    static const size_t counts[] = { 0, 1, 7, 1031 };
    int cases = 0;

    for (int dt = 0; dt < WEFT_DTYPE_COUNT; dt++)
        for (int op = 0; op < 8; op++) {
            if (is_float(dt) && op >= WEFT_BAND) {
                char x[8] = { 0 }, y[8];

                MP_ASSERT(weft_allreduce(x, y, 1, (weft_dtype_t)dt, (weft_op_t)op, world) ==
                          WEFT_ERR_INVALID_ARG, "bitwise %s on %s accepted", op_names[op],
                          dt_names[dt]);
                continue;
            }
            for (size_t c = 0; c < sizeof(counts) / sizeof(counts[0]); c++)
                for (int ip = 0; ip < 2; ip++, cases++)
                    check_allreduce(world, dt, op, counts[c], ip);
        }
    /* A large one, in chunks of the ring, and the nonblocking form
     * overlapped with a broadcast. */
    check_allreduce(world, WEFT_FLOAT32, WEFT_SUM, (size_t)1 << 20, 0);
    {
        int64_t a[3] = { mp_rank, 1, -mp_rank }, b[3];
        int v = mp_rank == 0 ? 77 : 0;
        weft_request_t r1 = NULL, r2 = NULL;

        MP_CHECK(weft_iallreduce(a, b, 3, WEFT_INT64, WEFT_SUM, world, &r1));
        MP_CHECK(weft_ibroadcast(&v, 1, WEFT_INT32, 0, world, &r2));
        MP_CHECK(weft_wait(&r2, NULL));
        MP_CHECK(weft_wait(&r1, NULL));
        MP_ASSERT(b[0] == (int64_t)mp_size * (mp_size - 1) / 2 && b[1] == mp_size &&
                  b[2] == -b[0] && v == 77, "overlapped iallreduce/ibroadcast");
    }
    if (mp_rank == 0)
        mp_log("allreduce: %d cases (dtype x op x count x in-place) matched", cases + 2);
}

static void sub_broadcast(weft_comm_t world)
{
    static const size_t counts[] = { 0, 1, 7, 1031, 1u << 20 };

    for (int root = 0; root < mp_size; root++)
        for (size_t c = 0; c < sizeof(counts) / sizeof(counts[0]); c++) {
            size_t bytes = counts[c] * sizeof(double);
            double *buf = mp_alloc(bytes + sizeof(double));

            if (mp_rank == root)
                mp_fill(buf, bytes, (uint64_t)root * 1000 + c);
            else
                memset(buf, 0, bytes);
            MP_CHECK(weft_broadcast(buf, counts[c], WEFT_FLOAT64, root, world));
            MP_CHECK_PATTERN(buf, bytes, (uint64_t)root * 1000 + c, "broadcast");
            free(buf);
        }
    MP_ASSERT(weft_broadcast(NULL, 1, WEFT_INT32, 0, world) == WEFT_ERR_INVALID_ARG,
              "NULL buffer accepted");
    MP_ASSERT(weft_broadcast(&mp_rank, 1, WEFT_INT32, mp_size, world) == WEFT_ERR_INVALID_ARG &&
              mp_contains(weft_last_error(), "root"), "root out of range accepted");
}

static void sub_reduce(weft_comm_t world)
{
    static const struct { int dt, op; } pairs[] = {
        { WEFT_INT32, WEFT_SUM }, { WEFT_FLOAT32, WEFT_MAX }, { WEFT_BFLOAT16, WEFT_AVG },
        { WEFT_UINT8, WEFT_BXOR }, { WEFT_INT64, WEFT_PROD }, { WEFT_FLOAT16, WEFT_SUM },
    };
    static const size_t counts[] = { 0, 1, 7, 1031 };
    int cases = 0;

    for (int root = 0; root < mp_size; root++)
        for (size_t p = 0; p < sizeof(pairs) / sizeof(pairs[0]); p++)
            for (size_t c = 0; c < sizeof(counts) / sizeof(counts[0]); c++)
                for (int ip = 0; ip < 2; ip++, cases++) {
                    int dt = pairs[p].dt, op = pairs[p].op;
                    size_t es, n = counts[c];
                    char *in, *out, *want;

                    MP_CHECK(weft_dtype_size((weft_dtype_t)dt, &es));
                    in = mp_alloc(n * es + 1);
                    out = mp_alloc(n * es + 1);
                    want = mp_alloc(es);
                    for (size_t i = 0; i < n; i++)
                        store(in + i * es, dt, (double)input(op, mp_rank, i));
                    if (ip) {
                        memcpy(out, in, n * es);
                        MP_CHECK(weft_reduce(WEFT_IN_PLACE, out, n, (weft_dtype_t)dt,
                                             (weft_op_t)op, root, world));
                    } else {
                        /* Only the root needs a receive buffer. */
                        MP_CHECK(weft_reduce(in, mp_rank == root ? out : NULL, n,
                                             (weft_dtype_t)dt, (weft_op_t)op, root, world));
                    }
                    for (size_t i = 0; mp_rank == root && i < n; i++) {
                        expected(want, dt, op, mp_size, i);
                        MP_ASSERT(!memcmp(out + i * es, want, es), "reduce %s %s to %d count "
                                  "%zu%s: element %zu differs", dt_names[dt], op_names[op],
                                  root, n, ip ? " in place" : "", i);
                    }
                    free(in);
                    free(out);
                    free(want);
                }
    if (mp_rank == 0)
        mp_log("reduce: %d cases (root x dtype/op x count x in-place) matched", cases);
}

static void sub_allgather(weft_comm_t world)
{
    static const size_t counts[] = { 0, 1, 7, 1031 };

    for (size_t c = 0; c < sizeof(counts) / sizeof(counts[0]); c++)
        for (int mode = 0; mode < 3; mode++) {
            size_t n = counts[c], total = n * (size_t)mp_size;
            int32_t *mine = mp_alloc(n * 4 + 4), *all = mp_alloc(total * 4 + 4);

            for (size_t i = 0; i < n; i++)
                mine[i] = mp_rank * 100000 + (int32_t)i;
            for (size_t i = 0; i < total; i++)
                all[i] = -1;
            if (mode == 0) {
                MP_CHECK(weft_allgather(mine, all, n, WEFT_INT32, world));
            } else {
                /* In place, both spellings: this rank's block is already there. */
                memcpy(all + (size_t)mp_rank * n, mine, n * 4);
                MP_CHECK(weft_allgather(mode == 1 ? WEFT_IN_PLACE : (void *)all, all, n,
                                        WEFT_INT32, world));
            }
            for (int r = 0; r < mp_size; r++)
                for (size_t i = 0; i < n; i++)
                    MP_ASSERT(all[(size_t)r * n + i] == r * 100000 + (int32_t)i,
                              "allgather count %zu mode %d: block %d element %zu is %d", n,
                              mode, r, i, all[(size_t)r * n + i]);
            free(mine);
            free(all);
        }
}

static void check_reduce_scatter(weft_comm_t world, int dt, int op, size_t n, int ip)
{
    size_t es, total = n * (size_t)mp_size;
    char *in, *out, *want;

    MP_CHECK(weft_dtype_size((weft_dtype_t)dt, &es));
    in = mp_alloc(total * es + 1);
    out = mp_alloc(total * es + 1);
    want = mp_alloc(es);
    for (size_t i = 0; i < total; i++)
        store(in + i * es, dt, (double)input(op, mp_rank, i));
    if (ip) {
        memcpy(out, in, total * es);
        MP_CHECK(weft_reduce_scatter(WEFT_IN_PLACE, out, n, (weft_dtype_t)dt, (weft_op_t)op,
                                     world));
    } else {
        MP_CHECK(weft_reduce_scatter(in, out, n, (weft_dtype_t)dt, (weft_op_t)op, world));
    }
    for (size_t i = 0; i < n; i++) {
        expected(want, dt, op, mp_size, (size_t)mp_rank * n + i);
        MP_ASSERT(!memcmp(out + i * es, want, es), "reduce_scatter %s %s count %zu%s: element "
                  "%zu differs", dt_names[dt], op_names[op], n, ip ? " in place" : "", i);
    }
    free(in);
    free(out);
    free(want);
}

/* Each rank's block of the reduction of every rank's whole input; the
 * large count for two types only. */
static void sub_reduce_scatter(weft_comm_t world)
{
    static const size_t counts[] = { 0, 1, 7, 1031, 20000 };
    int cases = 0;

    for (int dt = 0; dt < WEFT_DTYPE_COUNT; dt++)
        for (int op = 0; op < 8; op++) {
            if (is_float(dt) && op >= WEFT_BAND)
                continue;
            for (size_t c = 0; c < sizeof(counts) / sizeof(counts[0]); c++) {
                if (counts[c] > 1031 && dt != WEFT_FLOAT32 && dt != WEFT_INT64)
                    continue;
                for (int ip = 0; ip < 2; ip++, cases++)
                    check_reduce_scatter(world, dt, op, counts[c], ip);
            }
        }
    if (mp_rank == 0)
        mp_log("reduce_scatter: %d cases (dtype x op x count x in-place) matched", cases);
}

/* Inclusive and exclusive prefixes: rank r's result folds ranks 0 .. r
 * (0 .. r - 1), which expected() computes with r + 1 (r) ranks. */
static void sub_scan(weft_comm_t world)
{
    static const size_t counts[] = { 0, 1, 7, 1031 };
    int cases = 0;

    for (int dt = 0; dt < WEFT_DTYPE_COUNT; dt++)
        for (int op = 0; op < 8; op++)
            for (size_t c = 0; c < sizeof(counts) / sizeof(counts[0]); c++)
                for (int ex = 0; ex < 2; ex++) {
                    size_t es, n = counts[c];
                    char *in, *out, *want;

                    if (is_float(dt) && op >= WEFT_BAND)
                        continue;
                    MP_CHECK(weft_dtype_size((weft_dtype_t)dt, &es));
                    in = mp_alloc(n * es + 1);
                    out = mp_alloc(n * es + 1);
                    want = mp_alloc(es);
                    for (size_t i = 0; i < n; i++)
                        store(in + i * es, dt, (double)input(op, mp_rank, i));
                    memset(out, 0x5a, n * es);
                    MP_CHECK((ex ? weft_exscan : weft_scan)(in, out, n, (weft_dtype_t)dt,
                                                            (weft_op_t)op, world));
                    for (size_t i = 0; i < n; i++) {
                        if (ex && mp_rank == 0) {
                            MP_ASSERT((unsigned char)out[i * es] == 0x5a, "exscan wrote rank "
                                      "0's buffer");
                            continue;
                        }
                        expected(want, dt, op, ex ? mp_rank : mp_rank + 1, i);
                        MP_ASSERT(!memcmp(out + i * es, want, es), "%s %s %s count %zu: "
                                  "element %zu differs", ex ? "exscan" : "scan", dt_names[dt],
                                  op_names[op], n, i);
                    }
                    cases++;
                    free(in);
                    free(out);
                    free(want);
                }
    if (mp_rank == 0)
        mp_log("scan, exscan: %d cases (dtype x op x count) matched", cases);
}

/* Block j of rank r goes to rank j: element i is r * 10^6 + j * 10^4 + i. */
static void sub_alltoall(weft_comm_t world)
{
    static const size_t counts[] = { 0, 1, 7, 1031, 9000 };

    for (size_t c = 0; c < sizeof(counts) / sizeof(counts[0]); c++)
        for (int ip = 0; ip < 2; ip++) {
            size_t n = counts[c], total = n * (size_t)mp_size;
            int32_t *in = mp_alloc(total * 4 + 4), *out = mp_alloc(total * 4 + 4);

            for (int j = 0; j < mp_size; j++)
                for (size_t i = 0; i < n; i++)
                    in[(size_t)j * n + i] = mp_rank * 1000000 + j * 10000 + (int32_t)i;
            if (ip) {
                memcpy(out, in, total * 4);
                MP_CHECK(weft_alltoall(WEFT_IN_PLACE, out, n, WEFT_INT32, world));
            } else {
                MP_CHECK(weft_alltoall(in, out, n, WEFT_INT32, world));
            }
            for (int r = 0; r < mp_size; r++)
                for (size_t i = 0; i < n; i++)
                    MP_ASSERT(out[(size_t)r * n + i] == r * 1000000 + mp_rank * 10000 +
                              (int32_t)i, "alltoall count %zu%s: from rank %d element %zu is %d",
                              n, ip ? " in place" : "", r, i, out[(size_t)r * n + i]);
            free(in);
            free(out);
        }
}

/* Nobody leaves the barrier before the last rank entered it. */
static void sub_barrier(weft_comm_t world)
{
    for (int late = 0; late < mp_size && late < 3; late++) {
        double entered = 0, left;

        if (mp_rank == late) {
            mp_sleep_us(200000);
            entered = mp_now();
        }
        MP_CHECK(weft_barrier(world));
        left = mp_now();
        /* Tell everyone when the late rank entered (one clock: one host). */
        MP_CHECK(weft_broadcast(&entered, 1, WEFT_FLOAT64, late, world));
        MP_ASSERT(left >= entered, "rank %d left the barrier %.3f s before rank %d entered it",
                  mp_rank, entered - left, late);
    }
}

static void run_all(weft_comm_t comm, const char *where)
{
    double t0 = mp_now();

    MP_CHECK(weft_comm_rank(comm, &mp_rank));
    MP_CHECK(weft_comm_size(comm, &mp_size));
    sub_barrier(comm);
    sub_broadcast(comm);
    sub_allreduce(comm);
    sub_reduce(comm);
    sub_allgather(comm);
    sub_reduce_scatter(comm);
    sub_scan(comm);
    sub_alltoall(comm);
    if (mp_rank == 0)
        mp_log("mp_coll: barrier, broadcast, allreduce, reduce, allgather, reduce_scatter, "
               "scan, alltoall on %s of %d ranks passed in %.2f s", where, mp_size,
               mp_now() - t0);
}

/* Without arguments the suite runs on the world; with them, on the
 * sub-communicators they name, each member checking the results of its
 * own communicator (non-members of a group skip it):
 *   split   odd and even ranks (weft_comm_split)
 *   group   every other rank, listed from the top (weft_comm_create_group)
 *   nested  the odd/even halves split again in two
 *   mesh    the rows of a 2 x n/2 mesh (weft_mesh_comm_dim), even n only */
int main(int argc, char **argv)
{
    weft_comm_t world = NULL, sub = NULL, half = NULL;
    weft_mesh_t mesh = NULL;
    int rank, size;

    MP_CHECK(weft_init(NULL, &world));
    MP_CHECK(weft_comm_rank(world, &rank));
    MP_CHECK(weft_comm_size(world, &size));
    if (argc < 2)
        run_all(world, "the world");
    for (int a = 1; a < argc; a++) {
        const char *mode = argv[a];

        sub = NULL;
        if (!strcmp(mode, "split")) {
            MP_CHECK(weft_comm_split(world, rank % 2, rank, &sub));
        } else if (!strcmp(mode, "group")) {
            int members[64], k = 0;

            for (int r = size - 1; r >= 0 && k < 64; r -= 2)
                members[k++] = r;
            MP_CHECK(weft_comm_create_group(world, k, members, &sub));
        } else if (!strcmp(mode, "nested")) {
            MP_CHECK(weft_comm_split(world, rank % 2, rank, &half));
            MP_CHECK(weft_comm_split(half, (rank / 2) % 2, -rank, &sub));
        } else if (!strcmp(mode, "mesh")) {
            int shape[2] = { 2, size / 2 };

            if (size % 2) {
                mp_log("mesh: skipped at an odd size");
                continue;
            }
            MP_CHECK(weft_mesh_create(world, 2, shape, NULL, &mesh));
            MP_CHECK(weft_mesh_comm_dim(mesh, 1, &sub));
        } else {
            MP_FAIL("unknown mode %s (split, group, nested, mesh)", mode);
        }
        if (sub)
            run_all(sub, mode);
        if (mesh) {
            MP_CHECK(weft_mesh_destroy(mesh)); /* it owns sub */
            mesh = NULL;
        } else if (sub) {
            MP_CHECK(weft_comm_destroy(sub));
        }
        if (half) {
            MP_CHECK(weft_comm_destroy(half));
            half = NULL;
        }
        MP_CHECK(weft_barrier(world));
    }
    MP_CHECK(weft_comm_destroy(world));
    return 0;
}
