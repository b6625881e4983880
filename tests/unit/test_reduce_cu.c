/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_reduce_cu.c: the GPU kernels' source (plugins/cuda-ipc/kernels/
 * reduce.cu), compiled for the host by reduce_cu_host.cc, against weft's
 * host kernels, bit for bit: every dtype x op, AVG's finish, PREMUL_SUM's
 * scaling, on special values (NaN payloads, signalling NaNs, ±0, ±Inf,
 * subnormals, integer extremes, half-precision ties), each kernel played
 * as a grid of 3 blocks of 7 threads, in place and not.
 *
 * Why: no machine that builds weft has a GPU, and the CUDA test double
 * computes the kernels' documented semantics with code of its own. This
 * runs reduce.cu's own logic (its NaN rules, conversions, integer
 * semantics, op dispatch, grid-stride loop) everywhere nvcc is. The GPU's
 * arithmetic itself (canonical NaNs, which the kernels undo) is seen only
 * by tests/gpu/kernels_check on a GPU.
 */
#include "config.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "core/dt/op.h"
#include "core/dt/reduce.h"

typedef unsigned long long u64;

#define DECLARE(tn, T)                                                             \
    void weft_reduce_##tn(T *d, const T *a, const T *b, u64 n, int op);             \
    void weft_avg_##tn(T *buf, u64 n, int nranks);                                 \
    void weft_scale_##tn(T *d, const T *s, u64 n, T k);
DECLARE(i8, int8_t)
DECLARE(u8, uint8_t)
DECLARE(i32, int32_t)
DECLARE(u32, uint32_t)
DECLARE(i64, int64_t)
DECLARE(u64, u64)
DECLARE(f16, uint16_t)
DECLARE(bf16, uint16_t)
DECLARE(f32, float)
DECLARE(f64, double)
void cuhost_place(unsigned block, unsigned thread, unsigned grid, unsigned threads);

enum { GRID = 3, THREADS = 7, MAXN = 4099 };

static const size_t esize[WEFT_DTYPE_COUNT] = { 1, 1, 4, 4, 8, 8, 2, 2, 4, 8 };

/* Every thread of the grid, one after the other. */
#define PLAY(call)                                                                 \
    do {                                                                           \
        for (unsigned b_ = 0; b_ < GRID; b_++)                                     \
            for (unsigned t_ = 0; t_ < THREADS; t_++) {                            \
                cuhost_place(b_, t_, GRID, THREADS);                               \
                call;                                                              \
            }                                                                      \
    } while (0)

#define DISPATCH(dt, MACRO)                                                        \
    switch (dt) {                                                                  \
    case WEFT_INT8: MACRO(i8, int8_t); break;                                      \
    case WEFT_UINT8: MACRO(u8, uint8_t); break;                                    \
    case WEFT_INT32: MACRO(i32, int32_t); break;                                   \
    case WEFT_UINT32: MACRO(u32, uint32_t); break;                                 \
    case WEFT_INT64: MACRO(i64, int64_t); break;                                   \
    case WEFT_UINT64: MACRO(u64, u64); break;                                      \
    case WEFT_FLOAT16: MACRO(f16, uint16_t); break;                                \
    case WEFT_BFLOAT16: MACRO(bf16, uint16_t); break;                              \
    case WEFT_FLOAT32: MACRO(f32, float); break;                                   \
    case WEFT_FLOAT64: MACRO(f64, double); break;                                  \
    }

static void gpu_reduce(void *d, const void *a, const void *b, size_t n, weft_dtype_t dt, int op)
{
#define R(tn, T) PLAY(weft_reduce_##tn((T *)d, (const T *)a, (const T *)b, n, op))
    DISPATCH(dt, R)
#undef R
}

static void gpu_avg(void *buf, size_t n, weft_dtype_t dt, int nranks)
{
#define A(tn, T) PLAY(weft_avg_##tn((T *)buf, n, nranks))
    DISPATCH(dt, A)
#undef A
}

static void gpu_scale(void *d, const void *s, size_t n, weft_dtype_t dt,
                      const unsigned char scalar[8])
{
#define S(tn, T)                                                                   \
    do {                                                                           \
        T k_;                                                                      \
        memcpy(&k_, scalar, sizeof(k_));                                           \
        PLAY(weft_scale_##tn((T *)d, (const T *)s, n, k_));                        \
    } while (0)
    DISPATCH(dt, S)
#undef S
}

/* ------------------------------------------------------------ inputs */

static uint32_t rng = 0x2545f491u;

static uint32_t next(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 17;
    rng ^= rng << 5;
    return rng;
}

static uint64_t next64(void)
{
    return (uint64_t)next() << 32 | next();
}

/* Special values by dtype, as bits. */
static const uint64_t specials_f16[] = { 0x0000, 0x8000, 0x7c00, 0xfc00, 0x7c01, 0x7e05, 0xfd00,
                                         0x0001, 0x83ff, 0x0400, 0x3c00, 0xbc00, 0x7bff, 0x3c01,
                                         0x1000, 0x1400 };
static const uint64_t specials_bf16[] = { 0x0000, 0x8000, 0x7f80, 0xff80, 0x7f81, 0x7fc5, 0xffa0,
                                          0x0001, 0x807f, 0x0080, 0x3f80, 0xbf80, 0x7f7f, 0x3f81,
                                          0x3b80, 0x3c00 };
static const uint64_t specials_f32[] = { 0, 0x80000000u, 0x7f800000u, 0xff800000u, 0x7f800001u,
                                         0x7fc00123u, 0xffa00005u, 1, 0x807fffffu, 0x00800000u,
                                         0x3f800000u, 0xbf800000u, 0x7f7fffffu, 0x33800000u,
                                         0x3f800001u, 0x34000000u };
static const uint64_t specials_f64[] = { 0, 1ull << 63, 0x7ff0000000000000ull,
                                         0xfff0000000000000ull, 0x7ff0000000000001ull,
                                         0x7ff8000000000123ull, 0xfff4000000000005ull, 1,
                                         0x800fffffffffffffull, 0x0010000000000000ull,
                                         0x3ff0000000000000ull, 0xbff0000000000000ull,
                                         0x7fefffffffffffffull, 0x3ca0000000000000ull,
                                         0x3ff0000000000001ull, 0x3cb0000000000000ull };
static const uint64_t specials_int[] = { 0, 1, ~0ull, 0x80, 0x7f, 0x81, 0x80000000ull,
                                         0x7fffffffull, 0x80000001ull, 1ull << 63,
                                         (1ull << 63) - 1, (1ull << 63) + 1, 2, 3, 200, 0xff };

static uint64_t element(weft_dtype_t dt)
{
    const uint64_t *sp = dt == WEFT_FLOAT16    ? specials_f16
                         : dt == WEFT_BFLOAT16 ? specials_bf16
                         : dt == WEFT_FLOAT32  ? specials_f32
                         : dt == WEFT_FLOAT64  ? specials_f64
                                               : specials_int;
    uint32_t r = next() % 4;

    if (r == 0)
        return sp[next() % 16];
    if (r == 1 && dt >= WEFT_FLOAT16) {
        /* moderate values, whose sums and products round */
        switch (dt) {
        case WEFT_FLOAT16: return 0x3000 + next() % 0x1000 + (uint64_t)(next() & 1) * 0x8000;
        case WEFT_BFLOAT16: return 0x3e00 + next() % 0x0200 + (uint64_t)(next() & 1) * 0x8000;
        case WEFT_FLOAT32: return 0x3e000000u + next() % 0x01800000u + (uint64_t)(next() & 1) * 0x80000000u;
        default: return 0x3fc0000000000000ull + next64() % 0x0030000000000000ull + (uint64_t)(next() & 1) * (1ull << 63);
        }
    }
    return next64();
}

static unsigned char a[MAXN * 8], b[MAXN * 8], got[MAXN * 8], want[MAXN * 8];

static void fill(weft_dtype_t dt, size_t n)
{
    size_t s = esize[dt];
    uint64_t sign = 1ull << (s * 8 - 1);

    for (size_t i = 0; i < n; i++) {
        uint64_t x = element(dt), y = element(dt);

        if (next() % 16 == 0)
            y = x;
        else if (next() % 16 == 0)
            y = x ^ sign;
        memcpy(a + i * s, &x, s);
        memcpy(b + i * s, &y, s);
    }
}

/* The quieted NaN of a value of dt, or 0 if it is no NaN. */
static uint64_t quiet_nan(weft_dtype_t dt, uint64_t v)
{
    static const int man_bits[WEFT_DTYPE_COUNT] = { [WEFT_FLOAT16] = 10, [WEFT_BFLOAT16] = 7,
                                                    [WEFT_FLOAT32] = 23, [WEFT_FLOAT64] = 52 };
    int m = man_bits[dt], bits = (int)esize[dt] * 8;
    uint64_t abs = v & ((bits == 64 ? 0 : 1ull << (bits - 1)) - 1 + (bits == 64 ? 1ull << 63 : 0));
    uint64_t inf = ((1ull << (bits - 1 - m)) - 1) << m;

    return m && abs > inf ? v | 1ull << (m - 1) : 0;
}

/* scalar, for the scaling: where it and the element are both NaN, op.c's
 * k * v returns whichever NaN its compiler's operand order makes the
 * CPU's (gcc 12 -O2: the element's), so either, quieted, is accepted. */
static void expect_same_scaled(const char *what, weft_dtype_t dt, int arg, size_t n,
                               const uint64_t *scalar)
{
    size_t s = esize[dt];

    for (size_t i = 0; i < n; i++) {
        uint64_t g = 0, w = 0, x = 0, y = 0;

        if (!memcmp(got + i * s, want + i * s, s))
            continue;
        memcpy(&g, got + i * s, s);
        memcpy(&w, want + i * s, s);
        memcpy(&x, a + i * s, s);
        memcpy(&y, b + i * s, s);
        if (scalar && quiet_nan(dt, *scalar) && quiet_nan(dt, x) &&
            (g == quiet_nan(dt, *scalar) || g == quiet_nan(dt, x)) &&
            (w == quiet_nan(dt, *scalar) || w == quiet_nan(dt, x)))
            continue;
        fail_msg("%s dt %d (op/nranks/scalar %d), %zu elements: element %zu: a %llx b %llx: "
                 "reduce.cu %llx, host %llx", what, (int)dt, arg, n, i, (unsigned long long)x,
                 (unsigned long long)y, (unsigned long long)g, (unsigned long long)w);
    }
}

static void expect_same(const char *what, weft_dtype_t dt, int arg, size_t n)
{
    expect_same_scaled(what, dt, arg, n, NULL);
}

static const size_t counts[] = { 1, 1000, MAXN };

static void test_reduce(void **state)
{
    for (int dt = 0; dt < WEFT_DTYPE_COUNT; dt++) {
        for (int op = 0; op <= WEFT_BXOR; op++) {
            if (dt >= WEFT_FLOAT16 && op >= WEFT_BAND)
                continue;
            for (size_t c = 0; c < sizeof(counts) / sizeof(counts[0]); c++) {
                size_t n = counts[c];

                fill(dt, n);
                gpu_reduce(got, a, b, n, dt, op);
                weft__reduce(want, a, b, n, dt, op);
                expect_same("reduce", dt, op, n);
                /* in place: each element read once, before it is written */
                memcpy(got, a, n * esize[dt]);
                gpu_reduce(got, got, b, n, dt, op);
                expect_same("reduce in place", dt, op, n);
            }
        }
    }
}

/* An operator a dtype does not have leaves dst alone. */
static void test_undefined_op(void **state)
{
    fill(WEFT_FLOAT32, 100);
    memset(got, 0x5a, 400);
    memset(want, 0x5a, 400);
    gpu_reduce(got, a, b, 100, WEFT_FLOAT32, WEFT_BXOR);
    gpu_reduce(got, a, b, 100, WEFT_INT32, 99);
    expect_same("undefined op", WEFT_FLOAT32, WEFT_BXOR, 100);
}

static void test_avg(void **state)
{
    static const int nranks[] = { 1, 2, 3, 7, 128, 200, 1000 };

    for (int dt = 0; dt < WEFT_DTYPE_COUNT; dt++) {
        for (size_t r = 0; r < sizeof(nranks) / sizeof(nranks[0]); r++) {
            fill(dt, 1000);
            memcpy(got, a, 1000 * esize[dt]);
            memcpy(want, a, 1000 * esize[dt]);
            gpu_avg(got, 1000, dt, nranks[r]);
            weft__reduce_avg_finish(want, 1000, dt, nranks[r]);
            expect_same("avg", dt, nranks[r], 1000);
        }
    }
}

static void test_scale(void **state)
{
    for (int dt = 0; dt < WEFT_DTYPE_COUNT; dt++) {
        for (int k = 0; k < 24; k++) {
            unsigned char scalar[8] = { 0 };
            uint64_t s = element(dt);

            memcpy(scalar, &s, esize[dt]);
            fill(dt, 1000);
            gpu_scale(got, a, 1000, dt, scalar);
            weft__op_scale(want, a, 1000, dt, scalar);
            expect_same_scaled("scale", dt, k, 1000, &s);
        }
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_reduce),
        cmocka_unit_test(test_undefined_op),
        cmocka_unit_test(test_avg),
        cmocka_unit_test(test_scale),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
