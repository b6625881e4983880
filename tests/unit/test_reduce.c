/*
 * test_reduce.c: the reduction kernels against a scalar reference, for
 * every dtype x op, odd lengths, unaligned buffers and special values.
 */
#include "config.h"

#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "core/reduce.h"

static const size_t dsize[WEFT_DTYPE_COUNT] = { 1, 1, 4, 4, 8, 8, 2, 2, 4, 8 };

static int is_float(weft_dtype_t dt)
{
    return dt >= WEFT_FLOAT16;
}

/* Reads element i as a double (exact for every integer type used here
 * except the top of the 64-bit range, which the generator avoids). */
static double get(const void *buf, size_t i, weft_dtype_t dt)
{
    const char *p = (const char *)buf + i * dsize[dt];
    union { int8_t i8; uint8_t u8; int32_t i32; uint32_t u32; int64_t i64; uint64_t u64;
            uint16_t h; float f; double d; } v;

    memcpy(&v, p, dsize[dt]);
    switch (dt) {
    case WEFT_INT8: return v.i8;
    case WEFT_UINT8: return v.u8;
    case WEFT_INT32: return v.i32;
    case WEFT_UINT32: return v.u32;
    case WEFT_INT64: return (double)v.i64;
    case WEFT_UINT64: return (double)v.u64;
    case WEFT_FLOAT16: return weft__half_to_float(v.h);
    case WEFT_BFLOAT16: return weft__bf16_to_float(v.h);
    case WEFT_FLOAT32: return v.f;
    case WEFT_FLOAT64: return v.d;
    }
    return 0;
}

static void put(void *buf, size_t i, weft_dtype_t dt, double x)
{
    char *p = (char *)buf + i * dsize[dt];
    int8_t i8 = (int8_t)x; uint8_t u8 = (uint8_t)x; int32_t i32 = (int32_t)x;
    uint32_t u32 = (uint32_t)x; int64_t i64 = (int64_t)x; uint64_t u64 = (uint64_t)x;
    uint16_t h = weft__float_to_half((float)x), b = weft__float_to_bf16((float)x);
    float f = (float)x;

    switch (dt) {
    case WEFT_INT8: memcpy(p, &i8, 1); break;
    case WEFT_UINT8: memcpy(p, &u8, 1); break;
    case WEFT_INT32: memcpy(p, &i32, 4); break;
    case WEFT_UINT32: memcpy(p, &u32, 4); break;
    case WEFT_INT64: memcpy(p, &i64, 8); break;
    case WEFT_UINT64: memcpy(p, &u64, 8); break;
    case WEFT_FLOAT16: memcpy(p, &h, 2); break;
    case WEFT_BFLOAT16: memcpy(p, &b, 2); break;
    case WEFT_FLOAT32: memcpy(p, &f, 4); break;
    case WEFT_FLOAT64: memcpy(p, &x, 8); break;
    }
}

/* Small values keep every integer operation exact and in range, so the
 * reference can compute in double. */
static double sample(weft_dtype_t dt, size_t i, int which)
{
    int v = (int)((i * 7 + (size_t)which * 13) % 11) - (dt == WEFT_UINT8 || dt == WEFT_UINT32 ||
                                                         dt == WEFT_UINT64 ? 0 : 5);

    return is_float(dt) ? v * 0.25 : v;
}

static double reference(double a, double b, weft_op_t op)
{
    switch (op) {
    case WEFT_SUM: case WEFT_AVG: return a + b;
    case WEFT_PROD: return a * b;
    case WEFT_MIN: return a < b ? a : b;
    case WEFT_MAX: return a > b ? a : b;
    case WEFT_BAND: return (double)((int64_t)a & (int64_t)b);
    case WEFT_BOR: return (double)((int64_t)a | (int64_t)b);
    case WEFT_BXOR: return (double)((int64_t)a ^ (int64_t)b);
    }
    return 0;
}

static void run_case(weft_dtype_t dt, weft_op_t op, size_t n, size_t misalign, int in_place)
{
    size_t es = dsize[dt];
    char *ma = malloc(n * es + 16), *mb = malloc(n * es + 16), *md = malloc(n * es + 16);
    char *a = ma + misalign, *b = mb + misalign, *d = in_place ? a : md + misalign;
    double *ra = malloc((n + 1) * sizeof(double)), *rb = malloc((n + 1) * sizeof(double));

    for (size_t i = 0; i < n; i++) {
        put(a, i, dt, sample(dt, i, 0));
        put(b, i, dt, sample(dt, i, 1));
        ra[i] = get(a, i, dt);
        rb[i] = get(b, i, dt);
    }
    weft__reduce(d, a, b, n, dt, op);
    for (size_t i = 0; i < n; i++) {
        double want;
        char tmp[8];

        /* The reference result, rounded to dt the way the kernel must. */
        put(tmp, 0, dt, reference(ra[i], rb[i], op));
        want = get(tmp, 0, dt);
        if (get(d, i, dt) != want) {
            print_error("dt %d op %d n %zu misalign %zu in_place %d: element %zu is %g, "
                        "expected %g\n", dt, op, n, misalign, in_place, i, get(d, i, dt), want);
            fail();
        }
    }
    free(ma); free(mb); free(md); free(ra); free(rb);
}

static void test_every_dtype_op(void **state)
{
    static const size_t lengths[] = { 0, 1, 7, 16, 1031 };

    (void)state;
    for (int dt = 0; dt < WEFT_DTYPE_COUNT; dt++)
        for (int op = 0; op < 8; op++) {
            if (weft__reduce_check((weft_dtype_t)dt, (weft_op_t)op) != WEFT_SUCCESS) {
                assert_true(is_float((weft_dtype_t)dt) && op >= WEFT_BAND);
                continue;
            }
            for (size_t l = 0; l < sizeof(lengths) / sizeof(lengths[0]); l++)
                for (size_t mis = 0; mis < 2; mis++)
                    for (int ip = 0; ip < 2; ip++)
                        run_case((weft_dtype_t)dt, (weft_op_t)op, lengths[l], mis ? 1 : 0, ip);
        }
}

static void test_illegal_pairs(void **state)
{
    (void)state;
    assert_int_equal(weft__reduce_check(WEFT_FLOAT32, WEFT_BAND), WEFT_ERR_INVALID_ARG);
    assert_int_equal(weft__reduce_check(WEFT_BFLOAT16, WEFT_BXOR), WEFT_ERR_INVALID_ARG);
    assert_int_equal(weft__reduce_check(WEFT_FLOAT64, WEFT_BOR), WEFT_ERR_INVALID_ARG);
    assert_int_equal(weft__reduce_check((weft_dtype_t)42, WEFT_SUM), WEFT_ERR_INVALID_ARG);
    assert_int_equal(weft__reduce_check(WEFT_INT32, (weft_op_t)9), WEFT_ERR_INVALID_ARG);
    assert_int_equal(weft__reduce_check(WEFT_INT8, WEFT_BXOR), WEFT_SUCCESS);
}

static void test_integer_wraparound(void **state)
{
    int32_t a = INT32_MAX, b = 1, d;
    uint8_t ua = 250, ub = 10, ud;
    int64_t pa = INT64_MAX, pb = 2, pd;

    (void)state;
    weft__reduce(&d, &a, &b, 1, WEFT_INT32, WEFT_SUM);
    assert_int_equal(d, INT32_MIN);
    weft__reduce(&ud, &ua, &ub, 1, WEFT_UINT8, WEFT_SUM);
    assert_int_equal(ud, 4);
    weft__reduce(&pd, &pa, &pb, 1, WEFT_INT64, WEFT_PROD);
    assert_true(pd == -2);
}

static void test_avg_truncates(void **state)
{
    int32_t v[3] = { 7, -7, 8 };
    float f[2] = { 7.0f, -1.0f };

    (void)state;
    weft__reduce_avg_finish(v, 3, WEFT_INT32, 2);
    assert_int_equal(v[0], 3);
    assert_int_equal(v[1], -3);
    assert_int_equal(v[2], 4);
    weft__reduce_avg_finish(f, 2, WEFT_FLOAT32, 2);
    assert_true(f[0] == 3.5f && f[1] == -0.5f);
}

static void test_nan_inf_signed_zero(void **state)
{
    float a[4] = { NAN, 1.0f, -0.0f, INFINITY }, b[4] = { 1.0f, NAN, 0.0f, -INFINITY }, d[4];
    double da[2] = { -0.0, NAN }, db[2] = { 0.0, -1.0 }, dd[2];

    (void)state;
    weft__reduce(d, a, b, 4, WEFT_FLOAT32, WEFT_MAX);
    assert_true(isnan(d[0]) && isnan(d[1]));
    assert_true(d[2] == 0.0f && !signbit(d[2]));
    assert_true(d[3] == INFINITY);
    weft__reduce(d, a, b, 4, WEFT_FLOAT32, WEFT_MIN);
    assert_true(isnan(d[0]) && isnan(d[1]));
    assert_true(d[2] == 0.0f && signbit(d[2]));
    assert_true(d[3] == -INFINITY);
    weft__reduce(d, a, b, 4, WEFT_FLOAT32, WEFT_SUM);
    assert_true(isnan(d[3])); /* Inf + -Inf */
    weft__reduce(dd, da, db, 2, WEFT_FLOAT64, WEFT_MIN);
    assert_true(signbit(dd[0]) && isnan(dd[1]));
}

static void test_half_rounding(void **state)
{
    (void)state;
    /* 1 + 2^-11 lies halfway between 1 and the next half (1 + 2^-10): ties
     * go to the even mantissa, 1.0. 1 + 3*2^-11 goes up to 1 + 2^-9. */
    assert_int_equal(weft__float_to_half(1.0f + 0x1p-11f), 0x3c00);
    assert_int_equal(weft__float_to_half(1.0f + 3 * 0x1p-11f), 0x3c02);
    assert_int_equal(weft__float_to_half(65504.0f), 0x7bff);
    assert_int_equal(weft__float_to_half(65520.0f), 0x7c00);          /* overflow to Inf */
    assert_int_equal(weft__float_to_half(0x1p-24f), 0x0001);          /* smallest subnormal */
    assert_int_equal(weft__float_to_half(0x1p-25f), 0x0000);          /* tie to even: 0 */
    assert_int_equal(weft__float_to_half(-0.0f), 0x8000);
    assert_true(weft__half_to_float(0x0001) == 0x1p-24f);
    assert_true(isnan(weft__half_to_float(weft__float_to_half(NAN))));
    /* bfloat16: 1 + 2^-8 is a tie between 1 and 1 + 2^-7: even is 1. */
    assert_int_equal(weft__float_to_bf16(1.0f + 0x1p-8f), 0x3f80);
    assert_int_equal(weft__float_to_bf16(1.0f + 3 * 0x1p-8f), 0x3f82);
    assert_true(isnan(weft__bf16_to_float(weft__float_to_bf16(NAN))));
    assert_true(weft__bf16_to_float(0x3f80) == 1.0f);
}

static void test_half_sum_rounds_once(void **state)
{
    /* 2048 + 1 in float16: 2049 is a tie between 2048 and 2050; the sum is
     * formed in float32 and rounded once, to even: 2048. */
    uint16_t a = weft__float_to_half(2048.0f), b = weft__float_to_half(1.0f), d;

    (void)state;
    weft__reduce(&d, &a, &b, 1, WEFT_FLOAT16, WEFT_SUM);
    assert_true(weft__half_to_float(d) == 2048.0f);
    b = weft__float_to_half(3.0f);
    weft__reduce(&d, &a, &b, 1, WEFT_FLOAT16, WEFT_SUM);
    assert_true(weft__half_to_float(d) == 2052.0f); /* 2051 ties to even 2052 */
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_every_dtype_op),
        cmocka_unit_test(test_illegal_pairs),
        cmocka_unit_test(test_integer_wraparound),
        cmocka_unit_test(test_avg_truncates),
        cmocka_unit_test(test_nan_inf_signed_zero),
        cmocka_unit_test(test_half_rounding),
        cmocka_unit_test(test_half_sum_rounds_once),
    };

    return cmocka_run_group_tests_name("reduce", tests, NULL, NULL);
}
