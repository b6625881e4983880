/*
 * reduce.c: element-wise reduction kernels for every dtype x op.
 *
 * The loops are plain C over typed pointers so that the compiler's
 * auto-vectoriser turns them into SIMD code (-O2 -ftree-vectorize is on by
 * default at -O3; the file is built with -O3). Buffers that are not aligned
 * to their element size take a memcpy-per-element path, which is slower but
 * defined behaviour.
 */
#include "config.h"

#include <math.h>
#include <string.h>

#include "core/error.h"
#include "core/reduce.h"

/* ------------------------------------------------------- half precision */

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

float weft__half_to_float(uint16_t h)
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

uint16_t weft__float_to_half(float f)
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

float weft__bf16_to_float(uint16_t b)
{
    return u2f((uint32_t)b << 16);
}

uint16_t weft__float_to_bf16(float f)
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
    static void name(void *dst, const void *a, const void *b, size_t n)            \
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

DEFINE_HALF_LOOP(f16_sum, weft__half_to_float, weft__float_to_half, fa + fb)
DEFINE_HALF_LOOP(f16_prod, weft__half_to_float, weft__float_to_half, fa * fb)
DEFINE_HALF_LOOP(f16_min, weft__half_to_float, weft__float_to_half, fminf_nan(fa, fb))
DEFINE_HALF_LOOP(f16_max, weft__half_to_float, weft__float_to_half, fmaxf_nan(fa, fb))
DEFINE_HALF_LOOP(bf16_sum, weft__bf16_to_float, weft__float_to_bf16, fa + fb)
DEFINE_HALF_LOOP(bf16_prod, weft__bf16_to_float, weft__float_to_bf16, fa * fb)
DEFINE_HALF_LOOP(bf16_min, weft__bf16_to_float, weft__float_to_bf16, fminf_nan(fa, fb))
DEFINE_HALF_LOOP(bf16_max, weft__bf16_to_float, weft__float_to_bf16, fmaxf_nan(fa, fb))

typedef void (*reduce_fn)(void *, const void *, const void *, size_t);

#define INT_ROW(tn) \
    { tn##_sum, tn##_prod, tn##_min, tn##_max, tn##_sum, tn##_band, tn##_bor, tn##_bxor }
#define FLT_ROW(tn) \
    { tn##_sum, tn##_prod, tn##_min, tn##_max, tn##_sum, NULL, NULL, NULL }

/* [dtype][op]; AVG reduces as SUM. NULL: not defined for the type. */
static const reduce_fn kernels[WEFT_DTYPE_COUNT][8] = {
    [WEFT_INT8] = INT_ROW(i8),       [WEFT_UINT8] = INT_ROW(u8),
    [WEFT_INT32] = INT_ROW(i32),     [WEFT_UINT32] = INT_ROW(u32),
    [WEFT_INT64] = INT_ROW(i64),     [WEFT_UINT64] = INT_ROW(u64),
    [WEFT_FLOAT16] = FLT_ROW(f16),   [WEFT_BFLOAT16] = FLT_ROW(bf16),
    [WEFT_FLOAT32] = FLT_ROW(f32),   [WEFT_FLOAT64] = FLT_ROW(f64),
};

static const char *const op_names[8] = { "WEFT_SUM", "WEFT_PROD", "WEFT_MIN", "WEFT_MAX",
                                         "WEFT_AVG", "WEFT_BAND", "WEFT_BOR", "WEFT_BXOR" };

weft_result_t weft__reduce_check(weft_dtype_t dt, weft_op_t op)
{
    if ((unsigned)dt >= WEFT_DTYPE_COUNT)
        return weft__error(WEFT_ERR_INVALID_ARG, "dt %d is not a weft_dtype_t", (int)dt);
    if ((unsigned)op >= 8)
        return weft__error(WEFT_ERR_INVALID_ARG, "op %d is not a weft_op_t", (int)op);
    if (!kernels[dt][op])
        return weft__error(WEFT_ERR_INVALID_ARG,
                           "op %s is a bitwise operator and dt is a floating-point type",
                           op_names[op]);
    return WEFT_SUCCESS;
}

void weft__reduce(void *dst, const void *a, const void *b, size_t count, weft_dtype_t dt,
                  weft_op_t op)
{
    if (count)
        kernels[dt][op](dst, a, b, count);
}

#define AVG_LOOP(T, EXPR)                                                          \
    for (size_t i = 0; i < count; i++) {                                           \
        T v;                                                                       \
        memcpy(&v, (char *)buf + i * sizeof(T), sizeof(T));                        \
        v = (EXPR);                                                                \
        memcpy((char *)buf + i * sizeof(T), &v, sizeof(T));                        \
    }

void weft__reduce_avg_finish(void *buf, size_t count, weft_dtype_t dt, int nranks)
{
    switch (dt) {
    case WEFT_INT8: AVG_LOOP(int8_t, (int8_t)(v / nranks)); break;
    case WEFT_UINT8: AVG_LOOP(uint8_t, (uint8_t)(v / (unsigned)nranks)); break;
    case WEFT_INT32: AVG_LOOP(int32_t, v / nranks); break;
    case WEFT_UINT32: AVG_LOOP(uint32_t, v / (uint32_t)nranks); break;
    case WEFT_INT64: AVG_LOOP(int64_t, v / nranks); break;
    case WEFT_UINT64: AVG_LOOP(uint64_t, v / (uint64_t)nranks); break;
    case WEFT_FLOAT16:
        AVG_LOOP(uint16_t, weft__float_to_half(weft__half_to_float(v) / (float)nranks));
        break;
    case WEFT_BFLOAT16:
        AVG_LOOP(uint16_t, weft__float_to_bf16(weft__bf16_to_float(v) / (float)nranks));
        break;
    case WEFT_FLOAT32: AVG_LOOP(float, v / (float)nranks); break;
    case WEFT_FLOAT64: AVG_LOOP(double, v / (double)nranks); break;
    }
}
