/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * reduce_bench.c: throughput of the reduction kernels in GB/s for every
 * dtype x op, for each kernel set this CPU can run ("generic", "avx2"),
 * next to the scalar kernels they replaced (kept below as the reference),
 * and a bit-for-bit comparison of every set with them.
 *
 * Usage: reduce_bench [-i] [-t SECONDS] [-d DTYPE] [-o OP] [SIZE ...]
 *   SIZE    bytes per buffer, with a k or m suffix (default 1m 32m)
 *   -i      reduce in place (dst == a) instead of into a third buffer
 *   -t      seconds spent on each measurement (default 0.2; best run kept)
 *   -d, -o  only this dtype (int8 ... fp64) or operator (sum ... bxor)
 * GB/s counts three streams (a and b read, dst written): 3 * size / time.
 * Exits 1 if any set's bits differ from the reference. Not run by make
 * check; the unit test checks the same properties.
 */
#include "config.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "core/dt/reduce.h"

/* ---------------------------------------- the scalar kernels, as they were */

static inline uint32_t f2u(float f)
{
    uint32_t u;

    memcpy(&u, &f, sizeof(u));
    return u;
}

static inline float u2f(uint32_t u)
{
    float f;

    memcpy(&f, &u, sizeof(f));
    return f;
}

static float ref_half_to_float(uint16_t h)
{
    uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
    uint32_t exp = (h >> 10) & 0x1fu;
    uint32_t man = h & 0x3ffu;

    if (exp == 0x1f) /* Inf or NaN: keep the payload, quiet */
        return u2f(sign | 0x7f800000u | (man << 13) | (man ? 0x400000u : 0));
    if (exp == 0) {
        if (man == 0)
            return u2f(sign);
        /* Subnormal half: man units of 2^-24, exact in float. */
        return sign ? -(float)man * 0x1p-24f : (float)man * 0x1p-24f;
    }
    return u2f(sign | ((exp + 112) << 23) | (man << 13));
}

static uint16_t ref_float_to_half(float f)
{
    uint32_t u = f2u(f);
    uint16_t sign = (uint16_t)((u >> 16) & 0x8000u);
    uint32_t abs = u & 0x7fffffffu;

    if (abs >= 0x7f800000u) /* Inf, or NaN kept quiet */
        return sign | 0x7c00u | (abs > 0x7f800000u ? (uint16_t)(0x200u | ((abs >> 13) & 0x3ffu)) : 0);
    if (abs >= 0x477ff000u) /* rounds to >= 65520: overflow to Inf */
        return sign | 0x7c00u;
    if (abs < 0x38800000u) {
        /* Result is subnormal or zero: scale so that rounding the float
         * to an integer count of 2^-24 units is round-to-nearest-even. */
        float scaled = u2f(abs) * 0x1p24f;
        uint32_t q = (uint32_t)scaled;
        float rem = scaled - (float)q;

        if (rem > 0.5f || (rem == 0.5f && (q & 1u)))
            q++;
        return sign | (uint16_t)q;
    }
    /* Normal: drop 13 mantissa bits with round-to-nearest-even; a carry
     * into the exponent is the correct result. */
    abs += 0xfffu + ((abs >> 13) & 1u);
    return sign | (uint16_t)((abs - 0x38000000u) >> 13);
}

static float ref_bf16_to_float(uint16_t b)
{
    return u2f((uint32_t)b << 16);
}

static uint16_t ref_float_to_bf16(float f)
{
    uint32_t u = f2u(f);

    if ((u & 0x7fffffffu) > 0x7f800000u) /* NaN: keep it a quiet NaN */
        return (uint16_t)((u >> 16) | 0x40u);
    u += 0x7fffu + ((u >> 16) & 1u);
    return (uint16_t)(u >> 16);
}

/* ------------------------------------------------------------- operators */

/* Integer operators work in the unsigned type so that overflow wraps
 * instead of being undefined. */
#define I_SUM(U, a, b) ((U)((U)(a) + (U)(b)))
#define I_PROD(U, a, b) ((U)((U)(a) * (U)(b)))
#define MIN2(a, b) ((b) < (a) ? (b) : (a))
#define MAX2(a, b) ((b) > (a) ? (b) : (a))

/* Floating MIN/MAX: NaN wins, -0 orders below +0. */
#define DEFINE_FMINMAX(T, min_name, max_name)                                      \
    static inline T min_name(T a, T b)                                             \
    {                                                                              \
        if (isnan(a) || isnan(b))                                                  \
            return a + b;                                                          \
        if (a == b)                                                                \
            return signbit(a) ? a : b;                                             \
        return a < b ? a : b;                                                      \
    }                                                                              \
    static inline T max_name(T a, T b)                                             \
    {                                                                              \
        if (isnan(a) || isnan(b))                                                  \
            return a + b;                                                          \
        if (a == b)                                                                \
            return signbit(a) ? b : a;                                             \
        return a > b ? a : b;                                                      \
    }

DEFINE_FMINMAX(double, fmin_nan, fmax_nan)
DEFINE_FMINMAX(float, fminf_nan, fmaxf_nan)

/* One loop per (type, operator): the aligned version over typed pointers,
 * the unaligned one through memcpy. */
#define DEFINE_LOOP(name, T, EXPR)                                                 \
    static void ref_##name(void *dst, const void *a, const void *b, size_t n)            \
    {                                                                              \
        if (((uintptr_t)dst | (uintptr_t)a | (uintptr_t)b) % _Alignof(T) == 0) {   \
            T *d = dst;                                                            \
            const T *x = a, *y = b;                                                \
            for (size_t i = 0; i < n; i++) {                                       \
                T va = x[i], vb = y[i];                                            \
                d[i] = (EXPR);                                                     \
            }                                                                      \
        } else {                                                                   \
            for (size_t i = 0; i < n; i++) {                                       \
                T va, vb, r;                                                       \
                memcpy(&va, (const char *)a + i * sizeof(T), sizeof(T));           \
                memcpy(&vb, (const char *)b + i * sizeof(T), sizeof(T));           \
                r = (EXPR);                                                        \
                memcpy((char *)dst + i * sizeof(T), &r, sizeof(T));                \
            }                                                                      \
        }                                                                          \
    }

#define DEFINE_INT_LOOPS(tn, T, U)                                                 \
    DEFINE_LOOP(tn##_sum, T, (T)I_SUM(U, va, vb))                                  \
    DEFINE_LOOP(tn##_prod, T, (T)I_PROD(U, va, vb))                                \
    DEFINE_LOOP(tn##_min, T, MIN2(va, vb))                                         \
    DEFINE_LOOP(tn##_max, T, MAX2(va, vb))                                         \
    DEFINE_LOOP(tn##_band, T, (T)(va & vb))                                        \
    DEFINE_LOOP(tn##_bor, T, (T)(va | vb))                                         \
    DEFINE_LOOP(tn##_bxor, T, (T)(va ^ vb))

DEFINE_INT_LOOPS(i8, int8_t, uint8_t)
DEFINE_INT_LOOPS(u8, uint8_t, uint8_t)
DEFINE_INT_LOOPS(i32, int32_t, uint32_t)
DEFINE_INT_LOOPS(u32, uint32_t, uint32_t)
DEFINE_INT_LOOPS(i64, int64_t, uint64_t)
DEFINE_INT_LOOPS(u64, uint64_t, uint64_t)

DEFINE_LOOP(f32_sum, float, va + vb)
DEFINE_LOOP(f32_prod, float, va * vb)
DEFINE_LOOP(f32_min, float, fminf_nan(va, vb))
DEFINE_LOOP(f32_max, float, fmaxf_nan(va, vb))
DEFINE_LOOP(f64_sum, double, va + vb)
DEFINE_LOOP(f64_prod, double, va * vb)
DEFINE_LOOP(f64_min, double, fmin_nan(va, vb))
DEFINE_LOOP(f64_max, double, fmax_nan(va, vb))

#define DEFINE_HALF_LOOP(name, TO_F, FROM_F, EXPR)                                 \
    DEFINE_LOOP(name, uint16_t,                                                    \
                FROM_F(({ float fa = TO_F(va), fb = TO_F(vb); (EXPR); })))

DEFINE_HALF_LOOP(f16_sum, ref_half_to_float, ref_float_to_half, fa + fb)
DEFINE_HALF_LOOP(f16_prod, ref_half_to_float, ref_float_to_half, fa * fb)
DEFINE_HALF_LOOP(f16_min, ref_half_to_float, ref_float_to_half, fminf_nan(fa, fb))
DEFINE_HALF_LOOP(f16_max, ref_half_to_float, ref_float_to_half, fmaxf_nan(fa, fb))
DEFINE_HALF_LOOP(bf16_sum, ref_bf16_to_float, ref_float_to_bf16, fa + fb)
DEFINE_HALF_LOOP(bf16_prod, ref_bf16_to_float, ref_float_to_bf16, fa * fb)
DEFINE_HALF_LOOP(bf16_min, ref_bf16_to_float, ref_float_to_bf16, fminf_nan(fa, fb))
DEFINE_HALF_LOOP(bf16_max, ref_bf16_to_float, ref_float_to_bf16, fmaxf_nan(fa, fb))

typedef void (*reduce_fn)(void *, const void *, const void *, size_t);

typedef void (*ref_fn)(void *, const void *, const void *, size_t);

#define REF_INT_ROW(tn)                                                            \
    { ref_##tn##_sum, ref_##tn##_prod, ref_##tn##_min, ref_##tn##_max, ref_##tn##_sum, \
      ref_##tn##_band, ref_##tn##_bor, ref_##tn##_bxor }
#define REF_FLT_ROW(tn)                                                            \
    { ref_##tn##_sum, ref_##tn##_prod, ref_##tn##_min, ref_##tn##_max, ref_##tn##_sum, \
      NULL, NULL, NULL }

static const ref_fn ref_kernels[WEFT_DTYPE_COUNT][8] = {
    [WEFT_INT8] = REF_INT_ROW(i8),     [WEFT_UINT8] = REF_INT_ROW(u8),
    [WEFT_INT32] = REF_INT_ROW(i32),   [WEFT_UINT32] = REF_INT_ROW(u32),
    [WEFT_INT64] = REF_INT_ROW(i64),   [WEFT_UINT64] = REF_INT_ROW(u64),
    [WEFT_FLOAT16] = REF_FLT_ROW(f16), [WEFT_BFLOAT16] = REF_FLT_ROW(bf16),
    [WEFT_FLOAT32] = REF_FLT_ROW(f32), [WEFT_FLOAT64] = REF_FLT_ROW(f64),
};

/* ---------------------------------------------------------------- harness */

static const char *const dt_names[WEFT_DTYPE_COUNT] = { "int8",  "uint8",  "int32", "uint32",
                                                        "int64", "uint64", "fp16",  "bf16",
                                                        "fp32",  "fp64" };
static const size_t dt_size[WEFT_DTYPE_COUNT] = { 1, 1, 4, 4, 8, 8, 2, 2, 4, 8 };
static const char *const op_names[8] = { "sum", "prod", "min", "max", "avg", "band", "bor", "bxor" };
static const char *const set_names[] = { "generic", "avx2" };

static uint64_t rng = 0x9e3779b97f4a7c15u;

static uint64_t next(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return rng;
}

/* Random bits, with a quarter of the floating-point elements given an
 * all-ones exponent (NaN or Inf), an eighth an all-zero one (subnormal or
 * zero) and an eighth made +-Inf, so that NaN pairs, Inf and rounding
 * edges are common. */
static void fill_bits(void *buf, size_t n, weft_dtype_t dt)
{
    static const uint64_t expmask[WEFT_DTYPE_COUNT] = {
        [WEFT_FLOAT16] = 0x7c00, [WEFT_BFLOAT16] = 0x7f80,
        [WEFT_FLOAT32] = 0x7f800000, [WEFT_FLOAT64] = 0x7ff0000000000000u,
    };
    size_t es = dt_size[dt];

    for (size_t i = 0; i < n; i++) {
        uint64_t v = next(), pick = next() & 7;

        if (expmask[dt] && pick < 2)
            v |= expmask[dt];
        else if (expmask[dt] && pick == 2)
            v &= ~expmask[dt];
        else if (expmask[dt] && pick == 3) /* Inf, keeping v's sign bit */
            v = (v & (expmask[dt] << 1) & ~expmask[dt]) | expmask[dt];
        memcpy((char *)buf + i * es, &v, es);
    }
}

/* Values a reduction sees in practice: finite, around 1. */
static void fill_values(void *buf, size_t n, weft_dtype_t dt)
{
    for (size_t i = 0; i < n; i++) {
        double x = ((double)(next() >> 11) * 0x1p-53 - 0.5) * 4;
        char *p = (char *)buf + i * dt_size[dt];
        float f = (float)x;
        uint64_t bits = next();
        uint16_t h;

        switch (dt) {
        case WEFT_FLOAT16: h = weft__float_to_half(f); memcpy(p, &h, 2); break;
        case WEFT_BFLOAT16: h = weft__float_to_bf16(f); memcpy(p, &h, 2); break;
        case WEFT_FLOAT32: memcpy(p, &f, 4); break;
        case WEFT_FLOAT64: memcpy(p, &x, 8); break;
        default: memcpy(p, &bits, dt_size[dt]); break;
        }
    }
}

/* Page-aligned, at offsets 0, 1/3 and 2/3 of a page: where malloc puts
 * the buffers would otherwise decide whether stores to dst stall loads
 * from a or b (4K aliasing) and make the figures jump between runs. */
static void *buffer(size_t bytes, int which)
{
    void *p;

    if (posix_memalign(&p, 4096, bytes + 4096))
        abort();
    return (char *)p + which * 1344;
}

static void buffer_free(void *p, int which)
{
    free((char *)p - which * 1344);
}

static double now(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* Best GB/s over repetitions filling about min_time seconds; the library's
 * kernels when use_ref is 0 (in the set selected), else the reference. */
static double measure(int use_ref, weft_dtype_t dt, weft_op_t op, void *d, const void *a,
                      const void *b, size_t n, double min_time)
{
    double best = 1e30, start = now();
    int reps = 0;

    do {
        double t0 = now();

        if (use_ref)
            ref_kernels[dt][op](d, a, b, n);
        else
            weft__reduce(d, a, b, n, dt, op);
        t0 = now() - t0;
        if (t0 < best)
            best = t0;
        reps++;
    } while (reps < 3 || now() - start < min_time);
    return 3.0 * (double)(n * dt_size[dt]) / best * 1e-9;
}

/* Where both operands are NaN, which payload the reference keeps depends on
 * the operand order gcc picked for this copy of it (the library pins the
 * rule; the unit test checks it): give such pairs the same NaN. */
static void same_nans(const char *a, char *b, size_t n, weft_dtype_t dt)
{
    for (size_t i = 0; i < n; i++) {
        uint64_t x = 0, y = 0;
        int nan_x, nan_y;
        size_t es = dt_size[dt];

        memcpy(&x, a + i * es, es);
        memcpy(&y, b + i * es, es);
        switch (dt) {
        case WEFT_FLOAT16:
            nan_x = (x & 0x7fff) > 0x7c00, nan_y = (y & 0x7fff) > 0x7c00;
            break;
        case WEFT_BFLOAT16:
            nan_x = (x & 0x7fff) > 0x7f80, nan_y = (y & 0x7fff) > 0x7f80;
            break;
        case WEFT_FLOAT32:
            nan_x = (x & 0x7fffffff) > 0x7f800000, nan_y = (y & 0x7fffffff) > 0x7f800000;
            break;
        case WEFT_FLOAT64:
            nan_x = (x & ~(UINT64_C(1) << 63)) > UINT64_C(0x7ff0000000000000);
            nan_y = (y & ~(UINT64_C(1) << 63)) > UINT64_C(0x7ff0000000000000);
            break;
        default: return;
        }
        if (nan_x && nan_y)
            memcpy(b + i * es, &x, es);
    }
}

/* The selected set against the reference on random bits: lengths up to
 * 67 and one long run, offsets 0 and 1, dst apart and aliasing a and b. */
static int compare(weft_dtype_t dt, weft_op_t op)
{
    enum { N = 4099 };
    size_t es = dt_size[dt], bytes = N * es + 1;
    char *a = malloc(bytes), *b = malloc(bytes), *d1 = malloc(bytes), *d2 = malloc(bytes);
    char *a2 = malloc(bytes), *b2 = malloc(bytes);
    int bad = 0;

    for (size_t rep = 0; rep < 64 && !bad; rep++) {
        size_t n = rep < 56 ? (size_t)(next() % 68) : N - 1, off = rep & 1;

        fill_bits(a, N, dt);
        fill_bits(b, N, dt);
        same_nans(a + off, b + off, N - 1, dt);
        ref_kernels[dt][op](d1 + off, a + off, b + off, n);
        weft__reduce(d2 + off, a + off, b + off, n, dt, op);
        bad |= memcmp(d1 + off, d2 + off, n * es) != 0;
        memcpy(a2, a, bytes);
        memcpy(b2, b, bytes);
        weft__reduce(a2 + off, a2 + off, b + off, n, dt, op); /* dst == a */
        weft__reduce(b2 + off, a + off, b2 + off, n, dt, op); /* dst == b */
        bad |= memcmp(d1 + off, a2 + off, n * es) != 0;
        bad |= memcmp(d1 + off, b2 + off, n * es) != 0;
    }
    free(a); free(b); free(d1); free(d2); free(a2); free(b2);
    return bad;
}

int main(int argc, char **argv)
{
    double min_time = 0.2;
    int in_place = 0, opt, mismatches = 0, have[2];
    const char *only_dt = NULL, *only_op = NULL, *dflt;
    size_t sizes[8] = { 1 << 20, 32 << 20 }, nsizes = 2;

    while ((opt = getopt(argc, argv, "it:d:o:")) != -1) {
        switch (opt) {
        case 'i': in_place = 1; break;
        case 't': min_time = atof(optarg); break;
        case 'd': only_dt = optarg; break;
        case 'o': only_op = optarg; break;
        default:
            fprintf(stderr, "usage: %s [-i] [-t SECONDS] [-d DTYPE] [-o OP] [SIZE[k|m] ...]\n",
                    argv[0]);
            return 2;
        }
    }
    if (optind < argc) {
        nsizes = 0;
        for (int i = optind; i < argc && nsizes < 8; i++) {
            char *end;
            size_t v = strtoul(argv[i], &end, 0);

            sizes[nsizes++] = v << (*end == 'k' || *end == 'K' ? 10 : *end ? 20 : 0);
        }
    }

    dflt = weft__reduce_isa();
    for (int k = 0; k < 2; k++)
        have[k] = weft__reduce_set_isa(set_names[k]) == WEFT_SUCCESS;
    weft__reduce_set_isa(dflt);
    printf("# default kernel set: %s; GB/s = 3 x buffer size / best time; %s\n", dflt,
           in_place ? "dst == a" : "dst apart");
    printf("%-6s %-4s", "dtype", "op");
    for (size_t s = 0; s < nsizes; s++) {
        char label[24];

        if (sizes[s] >= 1 << 20)
            snprintf(label, sizeof(label), "%zuM", sizes[s] >> 20);
        else
            snprintf(label, sizeof(label), "%zuK", sizes[s] >> 10);
        printf(" | %5s scalar", label);
        for (int k = 0; k < 2; k++)
            if (have[k])
                printf(" %7s  (x)", set_names[k]);
    }
    printf(" | same bits\n");

    for (int dt = 0; dt < WEFT_DTYPE_COUNT; dt++) {
        for (int op = 0; op < 8; op++) {
            if (op == WEFT_AVG || !ref_kernels[dt][op])
                continue;
            if ((only_dt && strcmp(only_dt, dt_names[dt])) ||
                (only_op && strcmp(only_op, op_names[op])))
                continue;
            printf("%-6s %-4s", dt_names[dt], op_names[op]);
            for (size_t s = 0; s < nsizes; s++) {
                size_t n = sizes[s] / dt_size[dt], bytes = n * dt_size[dt];
                char *a = buffer(bytes, 0), *b = buffer(bytes, 1), *d = buffer(bytes, 2);
                double ref_gbs;

                fill_values(a, n, (weft_dtype_t)dt);
                fill_values(b, n, (weft_dtype_t)dt);
                memset(d, 0, bytes);
                /* In place, PROD of values below 1 drifts to 0 and
                 * subnormals: refresh a before each kernel's turn. */
                ref_gbs = measure(1, (weft_dtype_t)dt, (weft_op_t)op, in_place ? a : d, a, b, n,
                                  min_time);
                printf(" | %12.2f", ref_gbs);
                for (int k = 0; k < 2; k++) {
                    double gbs;

                    if (!have[k])
                        continue;
                    weft__reduce_set_isa(set_names[k]);
                    fill_values(a, n, (weft_dtype_t)dt);
                    gbs = measure(0, (weft_dtype_t)dt, (weft_op_t)op, in_place ? a : d, a, b, n,
                                  min_time);
                    printf(" %7.2f %4.1f", gbs, gbs / ref_gbs);
                }
                buffer_free(a, 0);
                buffer_free(b, 1);
                buffer_free(d, 2);
            }
            printf(" |");
            for (int k = 0; k < 2; k++) {
                int bad;

                if (!have[k])
                    continue;
                weft__reduce_set_isa(set_names[k]);
                bad = compare((weft_dtype_t)dt, (weft_op_t)op);
                mismatches += bad;
                printf(" %s", bad ? "NO" : "yes");
            }
            printf("\n");
            fflush(stdout);
            weft__reduce_set_isa(dflt);
        }
    }
    return mismatches ? 1 : 0;
}
