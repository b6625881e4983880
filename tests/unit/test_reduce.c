/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_reduce.c: the reduction kernels against a scalar reference written
 * here (it calls none of reduce.c's helpers), for every dtype x op, odd
 * lengths, unaligned and aliased buffers and special values. The whole
 * group runs once per kernel set the CPU can run ("generic", "avx2").
 */
#include "config.h"

#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "core/dt/reduce.h"

static const size_t dsize[WEFT_DTYPE_COUNT] = { 1, 1, 4, 4, 8, 8, 2, 2, 4, 8 };
static const char *const dt_names[WEFT_DTYPE_COUNT] = { "INT8",  "UINT8",   "INT32",   "UINT32",
                                                        "INT64", "UINT64",  "FLOAT16", "BFLOAT16",
                                                        "FLOAT32", "FLOAT64" };
static const char *const op_names[8] = { "SUM", "PROD", "MIN", "MAX", "AVG", "BAND", "BOR", "BXOR" };

static int is_float(weft_dtype_t dt)
{
    return dt >= WEFT_FLOAT16;
}

/* ------------------------------------------------ elements as raw bits */

static uint64_t get_bits(const void *buf, size_t i, weft_dtype_t dt)
{
    const char *p = (const char *)buf + i * dsize[dt];
    uint8_t b8;
    uint16_t b16;
    uint32_t b32;
    uint64_t b64;

    switch (dsize[dt]) {
    case 1: memcpy(&b8, p, 1); return b8;
    case 2: memcpy(&b16, p, 2); return b16;
    case 4: memcpy(&b32, p, 4); return b32;
    default: memcpy(&b64, p, 8); return b64;
    }
}

static void put_bits(void *buf, size_t i, weft_dtype_t dt, uint64_t v)
{
    char *p = (char *)buf + i * dsize[dt];
    uint8_t b8 = (uint8_t)v;
    uint16_t b16 = (uint16_t)v;
    uint32_t b32 = (uint32_t)v;

    switch (dsize[dt]) {
    case 1: memcpy(p, &b8, 1); break;
    case 2: memcpy(p, &b16, 2); break;
    case 4: memcpy(p, &b32, 4); break;
    default: memcpy(p, &v, 8); break;
    }
}

static float f32_of(uint32_t u)
{
    float f;

    memcpy(&f, &u, 4);
    return f;
}

static uint32_t bits_f32(float f)
{
    uint32_t u;

    memcpy(&u, &f, 4);
    return u;
}

static double f64_of(uint64_t u)
{
    double d;

    memcpy(&d, &u, 8);
    return d;
}

static uint64_t bits_f64(double d)
{
    uint64_t u;

    memcpy(&u, &d, 8);
    return u;
}

/* --------------------------------------- reference 16-bit float formats */

/* IEEE binary16 to float, from the definition (value = m * 2^(e - 25)). */
static float ref_half_to_float(uint16_t h)
{
    int e = (h >> 10) & 0x1f, m = h & 0x3ff;
    float s = (h & 0x8000) ? -1.0f : 1.0f;

    if (e == 0x1f) {
        if (!m)
            return s * INFINITY;
        /* NaN: payload kept in the top mantissa bits, quieted */
        return f32_of(((uint32_t)(h & 0x8000) << 16) | 0x7fc00000u | ((uint32_t)m << 13));
    }
    if (e == 0)
        return s * ldexpf((float)m, -24);
    return s * ldexpf((float)(1024 + m), e - 25);
}

static float ref_bf16_to_float(uint16_t b)
{
    return f32_of((uint32_t)b << 16);
}

/* Rounds the float f to a format with `mbits` stored mantissa bits and
 * exponent bias `bias` (binary16: 10, 15; bfloat16: 7, 127), to nearest
 * with ties to even, subnormals kept, overflow to Inf. NaN: quieted, the
 * top mantissa bits kept. Works in double, where every step is exact. */
static uint16_t ref_round(float f, int mbits, int bias)
{
    uint32_t u = bits_f32(f);
    uint16_t sign = (uint16_t)((u >> 16) & 0x8000);
    uint32_t inf = (uint32_t)(2 * bias + 1) << mbits, quiet = 1u << (mbits - 1);
    double x = fabs((double)f), q, r;
    uint32_t bits;
    int e;

    if (isnan(f))
        return (uint16_t)(sign | inf | quiet | ((u & 0x7fffffu) >> (23 - mbits)));
    if (isinf(f))
        return (uint16_t)(sign | inf);
    if (x == 0)
        return sign;
    frexp(x, &e);
    e -= 1; /* x = 1.m * 2^e */
    if (e < 1 - bias)
        e = 1 - bias; /* subnormal: the smallest normal exponent, no implicit 1 */
    q = ldexp(x, mbits - e); /* x in units of the result's last place */
    r = floor(q);
    if (q - r > 0.5 || (q - r == 0.5 && ((uint64_t)r & 1)))
        r += 1;
    /* the biased exponent times 2^mbits plus the mantissa; a mantissa that
     * rounded up to 2^(mbits+1) carries into the exponent */
    bits = ((uint32_t)(e + bias) << mbits) + (uint32_t)r - (1u << mbits);
    if (bits >= inf)
        bits = inf;
    return (uint16_t)(sign | bits);
}

static uint16_t ref_float_to_half(float f)
{
    return ref_round(f, 10, 15);
}

static uint16_t ref_float_to_bf16(float f)
{
    return ref_round(f, 7, 127);
}

/* ------------------------------------------------------- the reference */

static int nan_bits(uint64_t v, weft_dtype_t dt)
{
    switch (dt) {
    case WEFT_FLOAT16: return (v & 0x7fff) > 0x7c00;
    case WEFT_BFLOAT16: return (v & 0x7fff) > 0x7f80;
    case WEFT_FLOAT32: return (v & 0x7fffffff) > 0x7f800000;
    case WEFT_FLOAT64: return (v & ~(UINT64_C(1) << 63)) > UINT64_C(0x7ff0000000000000);
    default: return 0;
    }
}

static uint64_t quiet(uint64_t v, weft_dtype_t dt)
{
    switch (dt) {
    case WEFT_FLOAT16: return v | 0x200;
    case WEFT_BFLOAT16: return v | 0x40;
    case WEFT_FLOAT32: return v | 0x400000;
    default: return v | UINT64_C(0x0008000000000000);
    }
}

/* A float as a double, and a double rounded back to dt's bits (the
 * half formats through float32, as the kernels round once from float). */
static double fval(uint64_t v, weft_dtype_t dt)
{
    switch (dt) {
    case WEFT_FLOAT16: return ref_half_to_float((uint16_t)v);
    case WEFT_BFLOAT16: return ref_bf16_to_float((uint16_t)v);
    case WEFT_FLOAT32: return f32_of((uint32_t)v);
    default: return f64_of(v);
    }
}

static int64_t sval(uint64_t v, weft_dtype_t dt)
{
    switch (dt) {
    case WEFT_INT8: return (int8_t)v;
    case WEFT_INT32: return (int32_t)v;
    case WEFT_INT64: return (int64_t)v;
    default: return 0;
    }
}

static uint64_t mask_of(weft_dtype_t dt)
{
    return dsize[dt] == 8 ? ~UINT64_C(0) : (UINT64_C(1) << (8 * dsize[dt])) - 1;
}

/* Floating SUM/PROD in the type's arithmetic; halves in float32. */
static uint64_t farith(uint64_t a, uint64_t b, weft_dtype_t dt, int prod)
{
    if (dt == WEFT_FLOAT64) {
        double x = f64_of(a), y = f64_of(b);

        return bits_f64(prod ? x * y : x + y);
    } else {
        float x = (float)fval(a, dt), y = (float)fval(b, dt), r = prod ? x * y : x + y;

        switch (dt) {
        case WEFT_FLOAT16: return ref_float_to_half(r);
        case WEFT_BFLOAT16: return ref_float_to_bf16(r);
        default: return bits_f32(r);
        }
    }
}

/* The documented result of a op b, as dt's bits. */
static uint64_t reference(uint64_t a, uint64_t b, weft_dtype_t dt, weft_op_t op)
{
    uint64_t m = mask_of(dt);

    if (!is_float(dt)) {
        int is_signed = dt == WEFT_INT8 || dt == WEFT_INT32 || dt == WEFT_INT64;
        int a_lt_b = is_signed ? sval(a, dt) < sval(b, dt) : a < b;

        switch (op) {
        case WEFT_SUM: case WEFT_AVG: return (a + b) & m;
        case WEFT_PROD: return (a * b) & m;
        case WEFT_MIN: return a_lt_b ? a : b;
        case WEFT_MAX: return a_lt_b ? b : a;
        case WEFT_BAND: return a & b;
        case WEFT_BOR: return a | b;
        case WEFT_BXOR: return a ^ b;
        }
        return 0;
    }
    if (op == WEFT_MIN || op == WEFT_MAX) {
        double x = fval(a, dt), y = fval(b, dt);

        /* NaN wins, quieted; b's if both are */
        if (nan_bits(b, dt))
            return quiet(b, dt);
        if (nan_bits(a, dt))
            return quiet(a, dt);
        if (x != y)
            return (op == WEFT_MIN) == (x < y) ? a : b;
        /* equal: -0 orders below +0 */
        return (op == WEFT_MIN) == !!signbit(x) ? a : b;
    }
    /* SUM, PROD, AVG: a NaN operand comes back quieted; if both are NaN,
     * a's for FLOAT32 and FLOAT64, b's for the half formats */
    if (dt >= WEFT_FLOAT32 ? nan_bits(a, dt) : nan_bits(a, dt) && !nan_bits(b, dt))
        return quiet(a, dt);
    if (nan_bits(b, dt))
        return quiet(b, dt);
    return farith(a, b, dt, op == WEFT_PROD);
}

/* ---------------------------------------------------------------- data */

static uint64_t rng = 0x2545f4914f6cdd1du;

static uint64_t next(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return rng;
}

/* Values worth meeting, per float type: zeros, Inf, quiet and signalling
 * NaNs with payloads, subnormals, the largest finite, 1, -1. */
static const uint64_t specials16[] = { 0x0000, 0x8000, 0x7c00, 0xfc00, 0x7e00, 0xfe01, 0x7c01,
                                       0x7d55, 0x0001, 0x8001, 0x03ff, 0x0400, 0x7bff, 0xfbff,
                                       0x3c00, 0xbc00, 0x3c01, 0x0200 };
static const uint64_t specialsbf[] = { 0x0000, 0x8000, 0x7f80, 0xff80, 0x7fc0, 0xffc1, 0x7f81,
                                       0x7fa5, 0x0001, 0x8001, 0x007f, 0x0080, 0x7f7f, 0xff7f,
                                       0x3f80, 0xbf80, 0x3f81, 0x0040 };
static const uint64_t specials32[] = { 0x00000000, 0x80000000, 0x7f800000, 0xff800000,
                                       0x7fc00000, 0xffc00001, 0x7f800001, 0x7fa55555,
                                       0x00000001, 0x80000001, 0x007fffff, 0x00800000,
                                       0x7f7fffff, 0xff7fffff, 0x3f800000, 0xbf800000 };
static const uint64_t specials64[] = {
    0, UINT64_C(1) << 63, UINT64_C(0x7ff0000000000000), UINT64_C(0xfff0000000000000),
    UINT64_C(0x7ff8000000000000), UINT64_C(0xfff8000000000001), UINT64_C(0x7ff0000000000001),
    UINT64_C(0x7ff5555555555555), 1, UINT64_C(0x8000000000000001), UINT64_C(0x000fffffffffffff),
    UINT64_C(0x0010000000000000), UINT64_C(0x7fefffffffffffff), UINT64_C(0xffefffffffffffff),
    UINT64_C(0x3ff0000000000000), UINT64_C(0xbff0000000000000)
};

/* Integers: random bits, with extremes mixed in. Floats: one in four a
 * special value, one in eight random bits (any NaN, Inf, subnormal), the
 * rest a random value of moderate size, so that sums and products round. */
static uint64_t sample(weft_dtype_t dt)
{
    uint64_t r = next(), pick = next() % 8;
    const uint64_t *sp;
    size_t nsp;

    switch (dt) {
    case WEFT_FLOAT16: sp = specials16; nsp = sizeof(specials16) / 8; break;
    case WEFT_BFLOAT16: sp = specialsbf; nsp = sizeof(specialsbf) / 8; break;
    case WEFT_FLOAT32: sp = specials32; nsp = sizeof(specials32) / 8; break;
    case WEFT_FLOAT64: sp = specials64; nsp = sizeof(specials64) / 8; break;
    default: {
        static const uint64_t ext[] = { 0, 1, ~UINT64_C(0), UINT64_C(1) << 63,
                                        ~UINT64_C(0) >> 1, 0x80, 0x7f, 0x80000000, 0x7fffffff };
        return (pick == 0 ? ext[r % 9] : r) & mask_of(dt);
    }
    }
    if (pick < 2)
        return sp[r % nsp];
    if (pick == 2)
        return r & mask_of(dt);
    /* a value in [-8, 8) with a random sign of its exponent's offset */
    {
        double x = ((double)(r >> 11) * 0x1p-53 - 0.5) * 16;

        if (pick == 3)
            x = ldexp(x, (int)(next() % 40) - 20);
        switch (dt) {
        case WEFT_FLOAT16: return ref_float_to_half((float)x);
        case WEFT_BFLOAT16: return ref_float_to_bf16((float)x);
        case WEFT_FLOAT32: return bits_f32((float)x);
        default: return bits_f64(x);
        }
    }
}

/* ---------------------------------------------------------------- cases */

enum alias { APART, DST_IS_A, DST_IS_B, A_IS_B, ALL_SAME };
static const char *const alias_names[] = { "apart", "dst==a", "dst==b", "a==b", "dst==a==b" };

/* Reduces n elements at byte offsets oa, ob, od (0 or 1) with the given
 * aliasing, checks every result bit for bit and that no byte of dst's
 * allocation outside the results changed. */
static void run_case(weft_dtype_t dt, weft_op_t op, size_t n, size_t oa, size_t ob, size_t od,
                     enum alias al)
{
    enum { GUARD = 40 };
    size_t es = dsize[dt], bytes = n * es + 2 * GUARD;
    unsigned char *ma = malloc(bytes), *mb = malloc(bytes), *md = malloc(bytes);
    unsigned char *a = ma + GUARD + oa, *b = mb + GUARD + ob, *d = md + GUARD + od;
    unsigned char *before = malloc(bytes), *dbase;
    uint64_t *ra = malloc((n + 1) * 8), *rb = malloc((n + 1) * 8);

    memset(ma, 0xa5, bytes);
    memset(mb, 0x5a, bytes);
    memset(md, 0xc3, bytes);
    for (size_t i = 0; i < n; i++) {
        put_bits(a, i, dt, sample(dt));
        put_bits(b, i, dt, sample(dt));
    }
    switch (al) {
    case APART: break;
    case DST_IS_A: d = a; break;
    case DST_IS_B: d = b; break;
    case A_IS_B: b = a; break;
    case ALL_SAME: b = d = a; break;
    }
    for (size_t i = 0; i < n; i++) {
        ra[i] = get_bits(a, i, dt);
        rb[i] = get_bits(b, i, dt);
    }
    dbase = d == a ? ma : d == b ? mb : md;
    memcpy(before, dbase, bytes);
    weft__reduce(d, a, b, n, dt, op);
    for (size_t i = 0; i < n; i++) {
        uint64_t want = reference(ra[i], rb[i], dt, op), got = get_bits(d, i, dt);

        if (got != want) {
            print_error("%s %s %s: n %zu offsets a%zu b%zu d%zu %s: element %zu: "
                        "%#llx op %#llx gave %#llx, expected %#llx\n",
                        weft__reduce_isa(), dt_names[dt], op_names[op], n, oa, ob, od,
                        alias_names[al], i, (unsigned long long)ra[i],
                        (unsigned long long)rb[i], (unsigned long long)got,
                        (unsigned long long)want);
            fail();
        }
    }
    for (size_t i = 0; i < bytes; i++) {
        if (dbase + i >= d && dbase + i < d + n * es)
            continue;
        if (dbase[i] != before[i]) {
            print_error("%s %s %s n %zu %s: byte %td from dst changed\n", weft__reduce_isa(),
                        dt_names[dt], op_names[op], n, alias_names[al], (dbase + i) - d);
            fail();
        }
    }
    free(ma); free(mb); free(md); free(before); free(ra); free(rb);
}

static void for_each_pair(void (*fn)(weft_dtype_t, weft_op_t))
{
    for (int dt = 0; dt < WEFT_DTYPE_COUNT; dt++)
        for (int op = 0; op < 8; op++)
            if (weft__reduce_check((weft_dtype_t)dt, (weft_op_t)op) == WEFT_SUCCESS)
                fn((weft_dtype_t)dt, (weft_op_t)op);
}

/* Lengths around every vector width used (16 and 32 bytes, two vectors
 * per iteration), so that each remainder path runs. */
static const size_t lengths[] = { 0, 1, 2, 3, 7, 8, 15, 16, 17, 31, 33, 63, 65, 1031 };

static void every_length_offset(weft_dtype_t dt, weft_op_t op)
{
    for (size_t l = 0; l < sizeof(lengths) / sizeof(lengths[0]); l++)
        for (int off = 0; off < 8; off++)
            run_case(dt, op, lengths[l], off & 1, (off >> 1) & 1, (off >> 2) & 1, APART);
}

static void every_alias(weft_dtype_t dt, weft_op_t op)
{
    static const size_t alias_lengths[] = { 1, 3, 17, 33, 1031 };

    for (size_t l = 0; l < sizeof(alias_lengths) / sizeof(alias_lengths[0]); l++)
        for (int al = DST_IS_A; al <= ALL_SAME; al++)
            for (size_t off = 0; off < 2; off++)
                run_case(dt, op, alias_lengths[l], off, off, off, (enum alias)al);
}

static void test_every_dtype_op(void **state)
{
    (void)state;
    for_each_pair(every_length_offset);
}

static void test_aliasing(void **state)
{
    (void)state;
    for_each_pair(every_alias);
}

/* Every pair of special values, each way round, for the float types. */
static void special_pairs(weft_dtype_t dt, const uint64_t *sp, size_t nsp)
{
    size_t n = nsp * nsp;
    unsigned char *a = malloc(n * dsize[dt]), *b = malloc(n * dsize[dt]),
                  *d = malloc(n * dsize[dt]);

    for (size_t i = 0; i < n; i++) {
        put_bits(a, i, dt, sp[i / nsp]);
        put_bits(b, i, dt, sp[i % nsp]);
    }
    for (int op = WEFT_SUM; op <= WEFT_MAX; op++) {
        weft__reduce(d, a, b, n, dt, (weft_op_t)op);
        for (size_t i = 0; i < n; i++) {
            uint64_t want = reference(sp[i / nsp], sp[i % nsp], dt, (weft_op_t)op);

            if (get_bits(d, i, dt) != want) {
                print_error("%s %s %s: %#llx op %#llx gave %#llx, expected %#llx\n",
                            weft__reduce_isa(), dt_names[dt], op_names[op],
                            (unsigned long long)sp[i / nsp], (unsigned long long)sp[i % nsp],
                            (unsigned long long)get_bits(d, i, dt), (unsigned long long)want);
                fail();
            }
        }
    }
    free(a); free(b); free(d);
}

static void test_special_pairs(void **state)
{
    (void)state;
    special_pairs(WEFT_FLOAT16, specials16, sizeof(specials16) / 8);
    special_pairs(WEFT_BFLOAT16, specialsbf, sizeof(specialsbf) / 8);
    special_pairs(WEFT_FLOAT32, specials32, sizeof(specials32) / 8);
    special_pairs(WEFT_FLOAT64, specials64, sizeof(specials64) / 8);
}

/* One element of dt: d = a op b, as bits. */
static uint64_t one(weft_dtype_t dt, weft_op_t op, uint64_t a, uint64_t b)
{
    unsigned char x[8], y[8], z[8];

    put_bits(x, 0, dt, a);
    put_bits(y, 0, dt, b);
    weft__reduce(z, x, y, 1, dt, op);
    return get_bits(z, 0, dt);
}

/* The same rules spelled out case by case, without the reference. */
static void test_nan_inf_signed_zero(void **state)
{
    static const struct {
        weft_dtype_t dt;
        uint64_t qnan, snan, quieted_snan, inf, one, neg_zero;
    } t[] = {
        { WEFT_FLOAT16, 0x7e05, 0x7c05, 0x7e05, 0x7c00, 0x3c00, 0x8000 },
        { WEFT_BFLOAT16, 0x7fc5, 0x7f85, 0x7fc5, 0x7f80, 0x3f80, 0x8000 },
        { WEFT_FLOAT32, 0x7fc00005, 0x7f800005, 0x7fc00005, 0x7f800000, 0x3f800000,
          0x80000000 },
        { WEFT_FLOAT64, UINT64_C(0x7ff8000000000005), UINT64_C(0x7ff0000000000005),
          UINT64_C(0x7ff8000000000005), UINT64_C(0x7ff0000000000000),
          UINT64_C(0x3ff0000000000000), UINT64_C(1) << 63 },
    };

    (void)state;
    for (size_t k = 0; k < sizeof(t) / sizeof(t[0]); k++) {
        weft_dtype_t dt = t[k].dt;
        uint64_t sign = t[k].neg_zero, ninf = t[k].inf | sign, other_nan = t[k].qnan + 1;
        int half = dt < WEFT_FLOAT32;

        for (int op = WEFT_SUM; op <= WEFT_MAX; op++) {
            /* a NaN on either side wins, quieted, payload kept */
            assert_true(one(dt, op, t[k].qnan, t[k].one) == t[k].qnan);
            assert_true(one(dt, op, t[k].one, t[k].qnan) == t[k].qnan);
            assert_true(one(dt, op, t[k].snan, t[k].one) == t[k].quieted_snan);
            assert_true(one(dt, op, t[k].one, t[k].snan) == t[k].quieted_snan);
            assert_true(one(dt, op, t[k].snan | sign, ninf) == (t[k].quieted_snan | sign));
            /* both NaN: b's, except FLOAT32/FLOAT64 SUM and PROD: a's */
            assert_true(one(dt, op, other_nan, t[k].snan) ==
                        (!half && op <= WEFT_PROD ? other_nan : t[k].quieted_snan));
        }
        /* -0 orders below +0, either way round */
        assert_true(one(dt, WEFT_MIN, sign, 0) == sign);
        assert_true(one(dt, WEFT_MIN, 0, sign) == sign);
        assert_true(one(dt, WEFT_MAX, sign, 0) == 0);
        assert_true(one(dt, WEFT_MAX, 0, sign) == 0);
        assert_true(one(dt, WEFT_MIN, sign, sign) == sign);
        assert_true(one(dt, WEFT_SUM, sign, sign) == sign);
        assert_true(one(dt, WEFT_SUM, sign, 0) == 0);
        assert_true(one(dt, WEFT_PROD, sign, t[k].one) == sign);
        /* Inf */
        assert_true(one(dt, WEFT_MAX, ninf, t[k].inf) == t[k].inf);
        assert_true(one(dt, WEFT_MIN, ninf, t[k].inf) == ninf);
        assert_true(one(dt, WEFT_MIN, t[k].one, t[k].inf) == t[k].one);
        assert_true(one(dt, WEFT_SUM, t[k].inf, t[k].one) == t[k].inf);
        assert_true(nan_bits(one(dt, WEFT_SUM, t[k].inf, ninf), dt));  /* Inf - Inf */
        assert_true(nan_bits(one(dt, WEFT_PROD, t[k].inf, 0), dt));    /* Inf * 0 */
        assert_true(one(dt, WEFT_PROD, ninf, ninf) == t[k].inf);
    }
}

static void test_half_conversions(void **state)
{
    (void)state;
    /* The scalar helpers against the independent reference: every half
     * and bfloat16 value, and floats around every rounding boundary. */
    for (uint32_t h = 0; h < 65536; h++) {
        float f = ref_half_to_float((uint16_t)h), g = ref_bf16_to_float((uint16_t)h);

        assert_true(bits_f32(weft__half_to_float((uint16_t)h)) == bits_f32(f));
        assert_true(bits_f32(weft__bf16_to_float((uint16_t)h)) == bits_f32(g));
        for (int delta = -2; delta <= 2; delta++) {
            uint32_t u = bits_f32(f) + (uint32_t)delta * 0x1000u; /* half-ulp steps */
            uint32_t v = bits_f32(g) + (uint32_t)delta * 0x8000u;

            assert_int_equal(weft__float_to_half(f32_of(u)), ref_float_to_half(f32_of(u)));
            assert_int_equal(weft__float_to_bf16(f32_of(v)), ref_float_to_bf16(f32_of(v)));
        }
    }
}

static void test_half_rounding(void **state)
{
    (void)state;
    /* 1 + 2^-11 lies halfway between 1 and the next half (1 + 2^-10): ties
     * go to the even mantissa, 1.0. 1 + 3*2^-11 goes up to 1 + 2^-9. */
    assert_int_equal(weft__float_to_half(1.0f + 0x1p-11f), 0x3c00);
    assert_int_equal(weft__float_to_half(1.0f + 3 * 0x1p-11f), 0x3c02);
    assert_int_equal(weft__float_to_half(65504.0f), 0x7bff);          /* largest finite */
    assert_int_equal(weft__float_to_half(65519.996f), 0x7bff);
    assert_int_equal(weft__float_to_half(65520.0f), 0x7c00);          /* overflow to Inf */
    assert_int_equal(weft__float_to_half(-1e10f), 0xfc00);
    assert_int_equal(weft__float_to_half(0x1p-24f), 0x0001);          /* smallest subnormal */
    assert_int_equal(weft__float_to_half(0x1p-25f), 0x0000);          /* tie to even: 0 */
    assert_int_equal(weft__float_to_half(0x1.8p-24f), 0x0002);        /* tie to even: 2 */
    assert_int_equal(weft__float_to_half(0x1.0p-25f * 1.0001f), 0x0001);
    assert_int_equal(weft__float_to_half(0x1.ffcp-15f), 0x0400);      /* tie, up to normal */
    assert_int_equal(weft__float_to_half(0x1.ff8p-15f), 0x03ff);      /* largest subnormal */
    assert_int_equal(weft__float_to_half(-0.0f), 0x8000);
    assert_true(weft__half_to_float(0x0001) == 0x1p-24f);
    assert_true(isnan(weft__half_to_float(weft__float_to_half(NAN))));
    /* bfloat16: 1 + 2^-8 is a tie between 1 and 1 + 2^-7: even is 1. */
    assert_int_equal(weft__float_to_bf16(1.0f + 0x1p-8f), 0x3f80);
    assert_int_equal(weft__float_to_bf16(1.0f + 3 * 0x1p-8f), 0x3f82);
    assert_int_equal(weft__float_to_bf16(f32_of(0x7f7fffff)), 0x7f80); /* overflow to Inf */
    assert_int_equal(weft__float_to_bf16(f32_of(0x7f7f7fff)), 0x7f7f); /* largest finite */
    assert_int_equal(weft__float_to_bf16(f32_of(0x00008000)), 0x0000); /* subnormal tie: even */
    assert_int_equal(weft__float_to_bf16(f32_of(0x00018000)), 0x0002);
    assert_int_equal(weft__float_to_bf16(f32_of(0x7f800001)), 0x7fc0); /* NaN stays NaN */
    assert_true(isnan(weft__bf16_to_float(weft__float_to_bf16(NAN))));
    assert_true(weft__bf16_to_float(0x3f80) == 1.0f);
}

/* SUM and PROD round the float32 result once, in the kernels. */
static void test_half_kernel_rounding(void **state)
{
    static const struct {
        weft_dtype_t dt;
        weft_op_t op;
        uint16_t a, b, want;
    } t[] = {
        /* 2048 + 1 = 2049, a tie between 2048 and 2050: even, 2048 */
        { WEFT_FLOAT16, WEFT_SUM, 0x6800, 0x3c00, 0x6800 },
        /* 2048 + 3 = 2051, a tie between 2050 and 2052: even, 2052 */
        { WEFT_FLOAT16, WEFT_SUM, 0x6800, 0x4200, 0x6802 },
        /* 65504 + 8 rounds back to 65504; 65504 + 16 = 65520 overflows */
        { WEFT_FLOAT16, WEFT_SUM, 0x7bff, 0x4800, 0x7bff },
        { WEFT_FLOAT16, WEFT_SUM, 0x7bff, 0x4c00, 0x7c00 },
        { WEFT_FLOAT16, WEFT_SUM, 0xfbff, 0xcc00, 0xfc00 },
        /* 256 * 256 = 65536: Inf */
        { WEFT_FLOAT16, WEFT_PROD, 0x5c00, 0x5c00, 0x7c00 },
        /* subnormals: 2^-24 + 2^-24, 2^-24 * 0.5 (tie: 0), 3*2^-24 * 0.5
         * (tie: 2), 2^-14 * 0.5 (exact subnormal) */
        { WEFT_FLOAT16, WEFT_SUM, 0x0001, 0x0001, 0x0002 },
        { WEFT_FLOAT16, WEFT_PROD, 0x0001, 0x3800, 0x0000 },
        { WEFT_FLOAT16, WEFT_PROD, 0x8001, 0x3800, 0x8000 },
        { WEFT_FLOAT16, WEFT_PROD, 0x0003, 0x3800, 0x0002 },
        { WEFT_FLOAT16, WEFT_PROD, 0x0400, 0x3800, 0x0200 },
        /* largest subnormal + smallest subnormal = smallest normal */
        { WEFT_FLOAT16, WEFT_SUM, 0x03ff, 0x0001, 0x0400 },
        /* bfloat16: 256 + 1 = 257, a tie between 256 and 258: 256 */
        { WEFT_BFLOAT16, WEFT_SUM, 0x4380, 0x3f80, 0x4380 },
        { WEFT_BFLOAT16, WEFT_SUM, 0x4380, 0x4040, 0x4382 },
        /* largest finite * 2: Inf; subnormal * 0.5 rounds to even */
        { WEFT_BFLOAT16, WEFT_PROD, 0x7f7f, 0x4000, 0x7f80 },
        { WEFT_BFLOAT16, WEFT_PROD, 0x0001, 0x3f00, 0x0000 },
        { WEFT_BFLOAT16, WEFT_PROD, 0x0003, 0x3f00, 0x0002 },
    };

    (void)state;
    for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
        uint64_t got = one(t[i].dt, t[i].op, t[i].a, t[i].b);

        if (got != t[i].want) {
            print_error("%s %s %s %#x %#x: %#llx, expected %#x\n", weft__reduce_isa(),
                        dt_names[t[i].dt], op_names[t[i].op], t[i].a, t[i].b,
                        (unsigned long long)got, t[i].want);
            fail();
        }
        assert_true(got == reference(t[i].a, t[i].b, t[i].dt, t[i].op));
    }
}

/* Every FLOAT16 and BFLOAT16 value through the kernels' conversions (x +
 * -0 is x, a NaN quieted), and many random pairs through SUM and PROD. */
static void test_half_kernels_wide(void **state)
{
    enum { N = 1 << 16 };
    uint16_t *a = malloc(N * 2), *b = malloc(N * 2), *d = malloc(N * 2);

    (void)state;
    for (int dt = WEFT_FLOAT16; dt <= WEFT_BFLOAT16; dt++) {
        for (uint32_t i = 0; i < N; i++) {
            a[i] = (uint16_t)i;
            b[i] = 0x8000;
        }
        weft__reduce(d, a, b, N, (weft_dtype_t)dt, WEFT_SUM);
        for (uint32_t i = 0; i < N; i++)
            assert_true(d[i] == (nan_bits(i, (weft_dtype_t)dt) ? quiet(i, (weft_dtype_t)dt) : i));
        for (int rep = 0; rep < 16; rep++) {
            for (uint32_t i = 0; i < N; i++) {
                uint64_t r = next();

                a[i] = (uint16_t)r;
                b[i] = (uint16_t)(r >> 16);
            }
            for (int op = WEFT_SUM; op <= WEFT_PROD; op++) {
                weft__reduce(d, a, b, N, (weft_dtype_t)dt, (weft_op_t)op);
                for (uint32_t i = 0; i < N; i++) {
                    uint64_t want = reference(a[i], b[i], (weft_dtype_t)dt, (weft_op_t)op);

                    if (d[i] != want) {
                        print_error("%s %s %s %#x %#x: %#x, expected %#llx\n", weft__reduce_isa(),
                                    dt_names[dt], op_names[op], a[i], b[i], d[i],
                                    (unsigned long long)want);
                        fail();
                    }
                }
            }
        }
    }
    free(a); free(b); free(d);
}

static void test_illegal_pairs(void **state)
{
    (void)state;
    for (int dt = WEFT_FLOAT16; dt <= WEFT_FLOAT64; dt++)
        for (int op = WEFT_BAND; op <= WEFT_BXOR; op++)
            assert_int_equal(weft__reduce_check((weft_dtype_t)dt, (weft_op_t)op),
                             WEFT_ERR_INVALID_ARG);
    for (int dt = 0; dt < WEFT_DTYPE_COUNT; dt++)
        for (int op = 0; op < 8; op++)
            if (!is_float((weft_dtype_t)dt) || op < WEFT_BAND)
                assert_int_equal(weft__reduce_check((weft_dtype_t)dt, (weft_op_t)op),
                                 WEFT_SUCCESS);
    assert_int_equal(weft__reduce_check((weft_dtype_t)WEFT_DTYPE_COUNT, WEFT_SUM),
                     WEFT_ERR_INVALID_ARG);
    assert_int_equal(weft__reduce_check((weft_dtype_t)42, WEFT_SUM), WEFT_ERR_INVALID_ARG);
    assert_int_equal(weft__reduce_check((weft_dtype_t)-1, WEFT_SUM), WEFT_ERR_INVALID_ARG);
    assert_int_equal(weft__reduce_check(WEFT_INT32, (weft_op_t)8), WEFT_ERR_INVALID_ARG);
    assert_int_equal(weft__reduce_check(WEFT_INT32, (weft_op_t)9), WEFT_ERR_INVALID_ARG);
    assert_int_equal(weft__reduce_check(WEFT_INT32, (weft_op_t)-1), WEFT_ERR_INVALID_ARG);
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
    assert_true(one(WEFT_INT8, WEFT_SUM, 0x7f, 0x01) == 0x80);          /* 127 + 1 = -128 */
    assert_true(one(WEFT_INT8, WEFT_PROD, 0x80, 0xff) == 0x80);         /* -128 * -1 = -128 */
    assert_true(one(WEFT_INT8, WEFT_PROD, 0x10, 0x10) == 0x00);         /* 256 wraps to 0 */
    assert_true(one(WEFT_UINT8, WEFT_PROD, 0xff, 0xff) == 0x01);
    assert_true(one(WEFT_UINT32, WEFT_SUM, 0xffffffff, 2) == 1);
    assert_true(one(WEFT_INT32, WEFT_PROD, 0x10000, 0x10000) == 0);
    assert_true(one(WEFT_INT64, WEFT_SUM, UINT64_C(1) << 63, ~UINT64_C(0)) ==
                (~UINT64_C(0) >> 1)); /* INT64_MIN - 1 = INT64_MAX */
    assert_true(one(WEFT_UINT64, WEFT_SUM, ~UINT64_C(0), 1) == 0);
    assert_true(one(WEFT_UINT64, WEFT_PROD, UINT64_C(1) << 32, UINT64_C(1) << 32) == 0);
    /* MIN/MAX compare signed and unsigned types as such */
    assert_true(one(WEFT_INT8, WEFT_MIN, 0x80, 0x7f) == 0x80);
    assert_true(one(WEFT_UINT8, WEFT_MIN, 0x80, 0x7f) == 0x7f);
    assert_true(one(WEFT_INT64, WEFT_MAX, UINT64_C(1) << 63, 1) == 1);
    assert_true(one(WEFT_UINT64, WEFT_MAX, UINT64_C(1) << 63, 1) == UINT64_C(1) << 63);
    assert_true(one(WEFT_INT64, WEFT_MIN, ~UINT64_C(0) >> 1, UINT64_C(1) << 63) ==
                UINT64_C(1) << 63);
}

static void test_avg_truncates(void **state)
{
    int32_t v[3] = { 7, -7, 8 };
    int8_t v8[4] = { 7, -7, -128, 127 };
    uint8_t u8[2] = { 255, 7 };
    int64_t v64[2] = { -9, INT64_MIN };
    uint64_t u64[1] = { UINT64_MAX };
    float f[2] = { 7.0f, -1.0f };
    double g[2] = { 1.0, -0.0 };

    (void)state;
    weft__reduce_avg_finish(v, 3, WEFT_INT32, 2);
    assert_int_equal(v[0], 3);
    assert_int_equal(v[1], -3);
    assert_int_equal(v[2], 4);
    weft__reduce_avg_finish(v8, 4, WEFT_INT8, 2);
    assert_true(v8[0] == 3 && v8[1] == -3 && v8[2] == -64 && v8[3] == 63);
    weft__reduce_avg_finish(u8, 2, WEFT_UINT8, 2);
    assert_true(u8[0] == 127 && u8[1] == 3);
    weft__reduce_avg_finish(v64, 2, WEFT_INT64, 4);
    assert_true(v64[0] == -2 && v64[1] == INT64_MIN / 4);
    weft__reduce_avg_finish(u64, 1, WEFT_UINT64, 3);
    assert_true(u64[0] == UINT64_MAX / 3);
    weft__reduce_avg_finish(f, 2, WEFT_FLOAT32, 2);
    assert_true(f[0] == 3.5f && f[1] == -0.5f);
    weft__reduce_avg_finish(g, 2, WEFT_FLOAT64, 3);
    assert_true(g[0] == 1.0 / 3 && g[1] == 0 && signbit(g[1]));
}

/* AVG's division on the float types, every length path, against the
 * reference: one rounding from float32 for the half formats. */
static void test_avg_floats(void **state)
{
    static const int nranks[] = { 1, 2, 3, 7, 10, 1000, 65535, 16777217 };

    (void)state;
    for (int dt = WEFT_FLOAT16; dt <= WEFT_FLOAT64; dt++) {
        for (size_t l = 0; l < sizeof(lengths) / sizeof(lengths[0]); l++) {
            for (size_t k = 0; k < sizeof(nranks) / sizeof(nranks[0]); k++) {
                size_t n = lengths[l], es = dsize[dt];
                unsigned char *m = malloc(n * es + 9), *buf = m + 1 + (k & 1);
                uint64_t *in = malloc((n + 1) * 8);

                memset(m, 0x77, n * es + 9);
                for (size_t i = 0; i < n; i++)
                    put_bits(buf, i, (weft_dtype_t)dt, in[i] = sample((weft_dtype_t)dt));
                weft__reduce_avg_finish(buf, n, (weft_dtype_t)dt, nranks[k]);
                for (size_t i = 0; i < n; i++) {
                    uint64_t want, got = get_bits(buf, i, (weft_dtype_t)dt);

                    if (nan_bits(in[i], (weft_dtype_t)dt))
                        want = quiet(in[i], (weft_dtype_t)dt);
                    else if (dt == WEFT_FLOAT64)
                        want = bits_f64(f64_of(in[i]) / (double)nranks[k]);
                    else {
                        float q = (float)fval(in[i], (weft_dtype_t)dt) / (float)nranks[k];

                        want = dt == WEFT_FLOAT16    ? ref_float_to_half(q)
                               : dt == WEFT_BFLOAT16 ? ref_float_to_bf16(q)
                                                     : bits_f32(q);
                    }
                    if (got != want) {
                        print_error("%s %s avg /%d: %#llx gave %#llx, expected %#llx\n",
                                    weft__reduce_isa(), dt_names[dt], nranks[k],
                                    (unsigned long long)in[i], (unsigned long long)got,
                                    (unsigned long long)want);
                        fail();
                    }
                }
                assert_int_equal(m[0], 0x77);
                assert_int_equal(buf[n * es], 0x77);
                free(m);
                free(in);
            }
        }
    }
}

static void test_kernel_sets(void **state)
{
    (void)state;
    assert_int_equal(weft__reduce_set_isa("no-such-set"), WEFT_ERR_INVALID_ARG);
    assert_int_equal(weft__reduce_set_isa("generic"), WEFT_SUCCESS);
    assert_string_equal(weft__reduce_isa(), "generic");
}

static const char *set_name;

static int select_set(void **state)
{
    (void)state;
    return weft__reduce_set_isa(set_name) == WEFT_SUCCESS ? 0 : -1;
}

int main(void)
{
    static const char *const sets[] = { "generic", "avx2" };
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_every_dtype_op),
        cmocka_unit_test(test_aliasing),
        cmocka_unit_test(test_special_pairs),
        cmocka_unit_test(test_nan_inf_signed_zero),
        cmocka_unit_test(test_half_conversions),
        cmocka_unit_test(test_half_rounding),
        cmocka_unit_test(test_half_kernel_rounding),
        cmocka_unit_test(test_half_kernels_wide),
        cmocka_unit_test(test_illegal_pairs),
        cmocka_unit_test(test_integer_wraparound),
        cmocka_unit_test(test_avg_truncates),
        cmocka_unit_test(test_avg_floats),
    };
    const struct CMUnitTest set_tests[] = {
        cmocka_unit_test(test_kernel_sets),
    };
    const char *dflt = weft__reduce_isa();
    int failed = 0;
    char name[32];

    for (size_t s = 0; s < sizeof(sets) / sizeof(sets[0]); s++) {
        if (weft__reduce_set_isa(sets[s]) != WEFT_SUCCESS) {
            printf("# kernel set %s: not available on this CPU or target, skipped\n", sets[s]);
            continue;
        }
        set_name = sets[s];
        snprintf(name, sizeof(name), "reduce/%s%s", sets[s],
                 strcmp(sets[s], dflt) ? "" : " (default)");
        failed += cmocka_run_group_tests_name(name, tests, select_set, NULL);
    }
    failed += cmocka_run_group_tests_name("reduce/sets", set_tests, NULL, NULL);
    return failed;
}
