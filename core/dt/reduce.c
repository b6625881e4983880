/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * reduce.c: element-wise reduction kernels for every dtype x op.
 *
 * The kernels use the compiler's generic vector types (gcc and clang)
 * rather than the auto-vectoriser: libweft is built at -O2, where gcc 12
 * vectorises no loop whose trip count it does not know, and the NaN-aware
 * MIN/MAX and the half-precision conversions did not vectorise even at
 * -O3. A 16-byte vector becomes SSE2 on the x86-64 baseline, NEON on
 * aarch64, and scalar code on a target without SIMD: that set ("generic")
 * is the portable one. On x86-64 the same text is built a second time with
 * 32-byte vectors for AVX2, with F16C for FLOAT16, and chosen at run time
 * when the CPU has both ("avx2"). The two sets give the same bits.
 *
 * Every element, those of a last partial vector included, goes through the
 * same vector code, so a result depends neither on an element's position
 * nor on the buffers' alignment. Loads and stores are memcpy (unaligned
 * moves). Each vector is loaded before its result is stored, which makes
 * dst == a and dst == b safe; a partial overlap is not (see reduce.h).
 */
#include "config.h"

#include <string.h>

#include "core/base/error.h"
#include "core/dt/dtype.h"
#include "core/dt/reduce.h"

#if defined(__x86_64__) && (defined(__clang__) || __GNUC__ >= 9)
#define WEFT_REDUCE_AVX2 1
#include <cpuid.h>
#include <immintrin.h>
#else
#define WEFT_REDUCE_AVX2 0
#endif

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

/* ------------------------------------------------------------- vectors */

#define DEFINE_VECTOR_TYPES(S, W)                                                  \
    typedef int8_t vi8##S __attribute__((vector_size(W)));                         \
    typedef uint8_t vu8##S __attribute__((vector_size(W)));                        \
    typedef int16_t vi16##S __attribute__((vector_size(W)));                       \
    typedef uint16_t vu16##S __attribute__((vector_size(W)));                      \
    typedef int32_t vi32##S __attribute__((vector_size(W)));                       \
    typedef uint32_t vu32##S __attribute__((vector_size(W)));                      \
    typedef int64_t vi64##S __attribute__((vector_size(W)));                       \
    typedef uint64_t vu64##S __attribute__((vector_size(W)));                      \
    typedef float vf32##S __attribute__((vector_size(W)));                         \
    typedef double vf64##S __attribute__((vector_size(W)));

#define VLOAD(V, p)                                                                \
    ({                                                                             \
        V v_;                                                                      \
        memcpy(&v_, (p), sizeof(v_));                                              \
        v_;                                                                        \
    })

/* m holds all-ones or all-zero lanes (a vector comparison's result). */
#define VSEL(V, m, x, y) ((((V)(m)) & (x)) | (~((V)(m)) & (y)))

/* x < y on signed 64-bit lanes. SSE2 has no 64-bit compare, and gcc turns
 * one into scalar code; LT64_SUB takes the sign of x - y, corrected for
 * overflow, with 64-bit subtract, xor, and, and shift, all in SSE2. */
#define LT64_CMP(VI, VU, x, y) ((VI)((x) < (y)))
#define LT64_SUB(VI, VU, x, y)                                                     \
    ({                                                                             \
        VU x_ = (VU)(x), y_ = (VU)(y), d_ = x_ - y_;                               \
        (VI)((VU){ 0 } - ((d_ ^ ((x_ ^ y_) & (x_ ^ d_))) >> 63));                  \
    })

/*
 * Half precision <-> float32, bit for bit the scalar functions above, on
 * the 16-bit values held in the low half of each 32-bit lane. A vector of
 * uint16_t seen as one of uint32_t holds two elements per lane; the kernels
 * convert the low and the high ones in turn and put them back where they
 * were, which needs no shuffles and is right for either byte order.
 */
#define DEFINE_F16_CONVERSIONS(S, ATTR)                                            \
    ATTR static inline vf32##S vhalf_to_float##S(vu32##S h)                        \
    {                                                                              \
        vu32##S sign = (h & 0x8000u) << 16;                                        \
        vi32##S em = (vi32##S)(h & 0x7fffu);                                       \
        vu32##S norm = ((vu32##S)em << 13) + 0x38000000u;                          \
        vu32##S special = ((vu32##S)em << 13) | 0x7f800000u |                      \
                          ((vu32##S)(em > 0x7c00) & 0x400000u);                    \
        /* subnormal: em units of 2^-24, exact in float */                         \
        vf32##S sub = __builtin_convertvector(em, vf32##S) * 0x1p-24f;             \
        vu32##S r = VSEL(vu32##S, em < 0x400, (vu32##S)sub, norm);                 \
                                                                                   \
        r = VSEL(vu32##S, em >= 0x7c00, special, r);                               \
        return (vf32##S)(r | sign);                                                \
    }                                                                              \
    /* Subnormal or zero results round abs * 2^24 to an integer, ties to     */    \
    /* even, by truncation and remainder as the scalar code does, so that     */   \
    /* the rounding mode does not matter; other lanes scale zero and so raise */   \
    /* no floating-point exception. Unsigned arithmetic wraps harmlessly in   */   \
    /* the lanes that the selects then discard.                               */   \
    ATTR static inline vu32##S vfloat_to_half##S(vf32##S f)                        \
    {                                                                              \
        vu32##S u = (vu32##S)f;                                                    \
        vu32##S sign = (u >> 16) & 0x8000u;                                        \
        vu32##S abs = u & 0x7fffffffu;                                             \
        vi32##S sabs = (vi32##S)abs; /* below 2^31: signed compares are exact */   \
        vi32##S is_sub = sabs < 0x38800000;                                        \
        vf32##S scaled = (vf32##S)(abs & (vu32##S)is_sub) * 0x1p24f;               \
        vi32##S q = __builtin_convertvector(scaled, vi32##S);                      \
        vf32##S rem = scaled - __builtin_convertvector(q, vf32##S);                \
        vu32##S norm = (abs + 0xfffu + ((abs >> 13) & 1u) - 0x38000000u) >> 13;    \
        vu32##S r;                                                                 \
                                                                                   \
        q -= (rem > 0.5f) | ((rem == 0.5f) & ((q & 1) != 0)); /* true is -1 */     \
        r = VSEL(vu32##S, is_sub, (vu32##S)q, norm);                               \
        r = VSEL(vu32##S, sabs >= 0x477ff000, 0x7c00u, r);                         \
        r = VSEL(vu32##S, sabs > 0x7f800000, 0x7e00u | ((abs >> 13) & 0x3ffu), r); \
        return r | sign;                                                           \
    }

#define DEFINE_BF16_CONVERSIONS(S, ATTR)                                           \
    ATTR static inline vf32##S vbf16_to_float##S(vu32##S h)                        \
    {                                                                              \
        return (vf32##S)(h << 16);                                                 \
    }                                                                              \
    ATTR static inline vu32##S vfloat_to_bf16##S(vf32##S f)                        \
    {                                                                              \
        vu32##S u = (vu32##S)f;                                                    \
        vu32##S r = (u + 0x7fffu + ((u >> 16) & 1u)) >> 16;                        \
        vi32##S nan = (vi32##S)(u & 0x7fffffffu) > 0x7f800000;                     \
                                                                                   \
        return VSEL(vu32##S, nan, (u >> 16) | 0x40u, r);                           \
    }

/*
 * When both operands are NaN, which payload survives must not be left to
 * the instruction's operand order, which the compiler picks: FLOAT32 and
 * FLOAT64 SUM and PROD return a's, the other operators b's, as the scalar
 * kernels built by gcc did (on aligned buffers; bf16 differed on unaligned
 * ones). NAN_WINS(VI, n, q, r) is r, or q where n is a NaN.
 */
#define NAN_WINS(VI, n, q, r) ((__typeof__(r))VSEL(VI, (n) != (n), (VI)(q), (VI)(r)))

/* FLOAT16 and BFLOAT16 arithmetic: widen, combine in float32, round once;
 * the low and the high element of each 32-bit lane in turn. EXPR combines
 * the float32 vectors x and y (and k, in scope at the call). Converting
 * back quiets a NaN. */
#define HALF_LANES(S, TO_F, FROM_F, a, b, EXPR)                                    \
    ({                                                                             \
        vu32##S a_ = (vu32##S)(a), b_ = (vu32##S)(b), lo_, hi_;                    \
        vf32##S x = TO_F(a_ & 0xffffu), y = TO_F(b_ & 0xffffu);                    \
                                                                                   \
        lo_ = FROM_F(EXPR);                                                        \
        x = TO_F(a_ >> 16);                                                        \
        y = TO_F(b_ >> 16);                                                        \
        hi_ = FROM_F(EXPR);                                                        \
        (void)y;                                                                   \
        (vu16##S)(lo_ | hi_ << 16);                                                \
    })

#define DEFINE_HALF_ARITH(tn, S, TO_F, FROM_F, ATTR)                               \
    ATTR static inline vu16##S vsum_##tn##S(vu16##S a, vu16##S b)                  \
    {                                                                              \
        return HALF_LANES(S, TO_F##S, FROM_F##S, a, b, NAN_WINS(vi32##S, y, y, x + y)); \
    }                                                                              \
    ATTR static inline vu16##S vprod_##tn##S(vu16##S a, vu16##S b)                 \
    {                                                                              \
        return HALF_LANES(S, TO_F##S, FROM_F##S, a, b, NAN_WINS(vi32##S, y, y, x * y)); \
    }                                                                              \
    ATTR static inline vu16##S vdiv_##tn##S(vu16##S a, vf32##S k)                  \
    {                                                                              \
        return HALF_LANES(S, TO_F##S, FROM_F##S, a, a, x / k);                     \
    }

/*
 * Floating MIN/MAX on the bit patterns; SI is a signed integer vector as
 * wide as the float. FKEY flips the magnitude bits of negative values so
 * that keys order as the values do, -0 (key -1) below +0 (key 0), and equal
 * keys are equal bits. A NaN wins, quieted; b's when both are. No compare
 * here signals on a quiet NaN, and none depends on MXCSR's
 * denormals-are-zero. ISNAN is NAN_FP (a != a: one instruction, and SSE2
 * has no 64-bit integer compare) or, for the 16-bit formats, NAN_BITS.
 */
#define FKEY(x, SHIFT, MAG) ((x) ^ (((x) >> (SHIFT)) & (MAG)))
#define NAN_FP(SI, SU, LT, INF, MAG, v, x) ((SI)((v) != (v)))
#define NAN_BITS(SI, SU, LT, INF, MAG, v, x) LT(SI, SU, (SI){ 0 } + (INF), (x) & (MAG))
#define DEFINE_FMINMAX(tn, S, V, SI, SU, SHIFT, MAG, INF, QUIET, LT, ISNAN, ATTR)  \
    ATTR static inline V tn##_nan##S(V a, V b, SI r)                               \
    {                                                                              \
        SI x = (SI)a, y = (SI)b;                                                   \
                                                                                   \
        r = VSEL(SI, ISNAN(SI, SU, LT, INF, MAG, a, x), x | (QUIET), r);           \
        return (V)VSEL(SI, ISNAN(SI, SU, LT, INF, MAG, b, y), y | (QUIET), r);     \
    }                                                                              \
    ATTR static inline V vmin_##tn##S(V a, V b)                                    \
    {                                                                              \
        SI x = (SI)a, y = (SI)b;                                                   \
        SI m = LT(SI, SU, FKEY(y, SHIFT, MAG), FKEY(x, SHIFT, MAG));               \
                                                                                   \
        return tn##_nan##S(a, b, VSEL(SI, m, y, x));                               \
    }                                                                              \
    ATTR static inline V vmax_##tn##S(V a, V b)                                    \
    {                                                                              \
        SI x = (SI)a, y = (SI)b;                                                   \
        SI m = LT(SI, SU, FKEY(x, SHIFT, MAG), FKEY(y, SHIFT, MAG));               \
                                                                                   \
        return tn##_nan##S(a, b, VSEL(SI, m, y, x));                               \
    }

#define LT_CMP(VI, VU, x, y) ((VI)((x) < (y)))

/* Integer MIN/MAX. 64-bit lanes go through LT64; unsigned ones are biased
 * by the sign bit to compare as signed. */
#define V_MIN(a, b) VSEL(__typeof__(a), (b) < (a), (b), (a))
#define V_MAX(a, b) VSEL(__typeof__(a), (b) > (a), (b), (a))
#define DEFINE_MINMAX64(S, LT64, ATTR)                                             \
    ATTR static inline vi64##S vmin_i64##S(vi64##S a, vi64##S b)                   \
    {                                                                              \
        return VSEL(vi64##S, LT64(vi64##S, vu64##S, b, a), b, a);                  \
    }                                                                              \
    ATTR static inline vi64##S vmax_i64##S(vi64##S a, vi64##S b)                   \
    {                                                                              \
        return VSEL(vi64##S, LT64(vi64##S, vu64##S, a, b), b, a);                  \
    }                                                                              \
    ATTR static inline vu64##S vmin_u64##S(vu64##S a, vu64##S b)                   \
    {                                                                              \
        vi64##S m = LT64(vi64##S, vu64##S, (vi64##S)(b ^ (UINT64_C(1) << 63)),     \
                         (vi64##S)(a ^ (UINT64_C(1) << 63)));                      \
                                                                                   \
        return VSEL(vu64##S, m, b, a);                                             \
    }                                                                              \
    ATTR static inline vu64##S vmax_u64##S(vu64##S a, vu64##S b)                   \
    {                                                                              \
        vi64##S m = LT64(vi64##S, vu64##S, (vi64##S)(a ^ (UINT64_C(1) << 63)),     \
                         (vi64##S)(b ^ (UINT64_C(1) << 63)));                      \
                                                                                   \
        return VSEL(vu64##S, m, b, a);                                             \
    }

/* FLOAT32 and FLOAT64 SUM and PROD: a's NaN, quieted, wins. */
#define DEFINE_FARITH(tn, S, V, SI, QUIET, ATTR)                                   \
    ATTR static inline V vsum_##tn##S(V a, V b)                                    \
    {                                                                              \
        return NAN_WINS(SI, a, (SI)a | (QUIET), a + b);                            \
    }                                                                              \
    ATTR static inline V vprod_##tn##S(V a, V b)                                   \
    {                                                                              \
        return NAN_WINS(SI, a, (SI)a | (QUIET), a * b);                            \
    }

#define V_SUM(a, b) ((a) + (b))
#define V_PROD(a, b) ((a) * (b))
#define V_BAND(a, b) ((a) & (b))
#define V_BOR(a, b) ((a) | (b))
#define V_BXOR(a, b) ((a) ^ (b))

/* One kernel per (type, operator). Two vectors per iteration; the last
 * elements are padded with zeros into one more vector. */
#define DEFINE_KERNEL(name, T, V, OP, ATTR)                                        \
    ATTR static void name(void *dst, const void *a, const void *b, size_t n)       \
    {                                                                              \
        enum { L = sizeof(V) / sizeof(T) };                                        \
        char *d = dst;                                                             \
        const char *x = a, *y = b;                                                 \
                                                                                   \
        for (; n >= 2 * L; n -= 2 * L) {                                           \
            V a0 = VLOAD(V, x), a1 = VLOAD(V, x + sizeof(V));                      \
            V b0 = VLOAD(V, y), b1 = VLOAD(V, y + sizeof(V));                      \
            V r0 = OP(a0, b0), r1 = OP(a1, b1);                                    \
                                                                                   \
            memcpy(d, &r0, sizeof(V));                                             \
            memcpy(d + sizeof(V), &r1, sizeof(V));                                 \
            d += 2 * sizeof(V);                                                    \
            x += 2 * sizeof(V);                                                    \
            y += 2 * sizeof(V);                                                    \
        }                                                                          \
        while (n) {                                                                \
            size_t k = n < L ? n : L;                                              \
            V va = { 0 }, vb = { 0 }, r;                                           \
                                                                                   \
            memcpy(&va, x, k * sizeof(T));                                         \
            memcpy(&vb, y, k * sizeof(T));                                         \
            r = OP(va, vb);                                                        \
            memcpy(d, &r, k * sizeof(T));                                          \
            n -= k;                                                                \
            d += k * sizeof(T);                                                    \
            x += k * sizeof(T);                                                    \
            y += k * sizeof(T);                                                    \
        }                                                                          \
    }

/* AVG's last step: buf[i] = OP(buf[i], k), k the rank count in KV, a
 * vector of V's floating-point type KF. */
#define DEFINE_AVG(name, T, V, KF, KV, OP, ATTR)                                   \
    ATTR static void name(void *buf, size_t n, int nranks)                         \
    {                                                                              \
        enum { L = sizeof(V) / sizeof(T) };                                        \
        KV k = (KV){ 0 } + (KF)nranks;                                             \
        char *p = buf;                                                             \
                                                                                   \
        for (; n >= L; n -= L, p += sizeof(V)) {                                   \
            V v = OP(VLOAD(V, p), k);                                              \
                                                                                   \
            memcpy(p, &v, sizeof(V));                                              \
        }                                                                          \
        if (n) {                                                                   \
            V v = { 0 };                                                           \
                                                                                   \
            memcpy(&v, p, n * sizeof(T));                                          \
            v = OP(v, k);                                                          \
            memcpy(p, &v, n * sizeof(T));                                          \
        }                                                                          \
    }
#define V_DIV(a, k) ((a) / (k))

/* Signed integers add and multiply in unsigned lanes (wrap-around) and
 * compare in signed ones. */
#define DEFINE_INT_KERNELS(tn, S, T, VU, VS, MIN, MAX, ATTR)                       \
    DEFINE_KERNEL(tn##_sum##S, T, VU, V_SUM, ATTR)                                 \
    DEFINE_KERNEL(tn##_prod##S, T, VU, V_PROD, ATTR)                               \
    DEFINE_KERNEL(tn##_min##S, T, VS, MIN, ATTR)                                   \
    DEFINE_KERNEL(tn##_max##S, T, VS, MAX, ATTR)                                   \
    DEFINE_KERNEL(tn##_band##S, T, VU, V_BAND, ATTR)                               \
    DEFINE_KERNEL(tn##_bor##S, T, VU, V_BOR, ATTR)                                 \
    DEFINE_KERNEL(tn##_bxor##S, T, VU, V_BXOR, ATTR)

typedef void (*reduce_fn)(void *, const void *, const void *, size_t);
typedef void (*avg_fn)(void *, size_t, int);

struct kernel_set {
    const char *name;
    reduce_fn fn[WEFT_DTYPE_COUNT][8]; /* AVG reduces as SUM; NULL: undefined */
    avg_fn avg[WEFT_DTYPE_COUNT];      /* NULL: the scalar integer division */
};

#define INT_ROW(tn, S)                                                             \
    { tn##_sum##S, tn##_prod##S, tn##_min##S, tn##_max##S, tn##_sum##S,            \
      tn##_band##S, tn##_bor##S, tn##_bxor##S }
#define FLT_ROW(tn, S)                                                             \
    { tn##_sum##S, tn##_prod##S, tn##_min##S, tn##_max##S, tn##_sum##S, NULL, NULL, NULL }

/*
 * A whole kernel set over the vector types of suffix S. F16 is the suffix
 * of the FLOAT16 SUM/PROD/AVG helpers (vsum_f16<F16> ...), defined before:
 * _gen's convert with integer code, _f16c's with the F16C instructions.
 */
#define DEFINE_KERNEL_SET(S, NAME, LT64, F16, ATTR)                                \
    DEFINE_BF16_CONVERSIONS(S, ATTR)                                               \
    DEFINE_HALF_ARITH(bf16, S, vbf16_to_float, vfloat_to_bf16, ATTR)               \
    DEFINE_FMINMAX(f64, S, vf64##S, vi64##S, vu64##S, 63, INT64_C(0x7fffffffffffffff), \
                   INT64_C(0x7ff0000000000000), INT64_C(0x0008000000000000), LT64, NAN_FP, ATTR) \
    DEFINE_FMINMAX(f32, S, vf32##S, vi32##S, vu32##S, 31, 0x7fffffff, 0x7f800000,  \
                   0x400000, LT_CMP, NAN_FP, ATTR)                                 \
    DEFINE_FMINMAX(f16, S, vu16##S, vi16##S, vu16##S, 15, 0x7fff, 0x7c00, 0x200,   \
                   LT_CMP, NAN_BITS, ATTR)                                         \
    DEFINE_FMINMAX(bf16, S, vu16##S, vi16##S, vu16##S, 15, 0x7fff, 0x7f80, 0x40,   \
                   LT_CMP, NAN_BITS, ATTR)                                         \
    DEFINE_MINMAX64(S, LT64, ATTR)                                                 \
    DEFINE_FARITH(f64, S, vf64##S, vi64##S, INT64_C(0x0008000000000000), ATTR)     \
    DEFINE_FARITH(f32, S, vf32##S, vi32##S, 0x400000, ATTR)                        \
    DEFINE_INT_KERNELS(i8, S, int8_t, vu8##S, vi8##S, V_MIN, V_MAX, ATTR)          \
    DEFINE_INT_KERNELS(u8, S, uint8_t, vu8##S, vu8##S, V_MIN, V_MAX, ATTR)         \
    DEFINE_INT_KERNELS(i32, S, int32_t, vu32##S, vi32##S, V_MIN, V_MAX, ATTR)      \
    DEFINE_INT_KERNELS(u32, S, uint32_t, vu32##S, vu32##S, V_MIN, V_MAX, ATTR)     \
    DEFINE_INT_KERNELS(i64, S, int64_t, vu64##S, vi64##S, vmin_i64##S, vmax_i64##S, ATTR) \
    DEFINE_INT_KERNELS(u64, S, uint64_t, vu64##S, vu64##S, vmin_u64##S, vmax_u64##S, ATTR) \
    DEFINE_KERNEL(f32_sum##S, float, vf32##S, vsum_f32##S, ATTR)                   \
    DEFINE_KERNEL(f32_prod##S, float, vf32##S, vprod_f32##S, ATTR)                 \
    DEFINE_KERNEL(f32_min##S, float, vf32##S, vmin_f32##S, ATTR)                   \
    DEFINE_KERNEL(f32_max##S, float, vf32##S, vmax_f32##S, ATTR)                   \
    DEFINE_KERNEL(f64_sum##S, double, vf64##S, vsum_f64##S, ATTR)                  \
    DEFINE_KERNEL(f64_prod##S, double, vf64##S, vprod_f64##S, ATTR)                \
    DEFINE_KERNEL(f64_min##S, double, vf64##S, vmin_f64##S, ATTR)                  \
    DEFINE_KERNEL(f64_max##S, double, vf64##S, vmax_f64##S, ATTR)                  \
    DEFINE_KERNEL(f16_sum##S, uint16_t, vu16##S, vsum_f16##F16, ATTR)              \
    DEFINE_KERNEL(f16_prod##S, uint16_t, vu16##S, vprod_f16##F16, ATTR)            \
    DEFINE_KERNEL(f16_min##S, uint16_t, vu16##S, vmin_f16##S, ATTR)                \
    DEFINE_KERNEL(f16_max##S, uint16_t, vu16##S, vmax_f16##S, ATTR)                \
    DEFINE_KERNEL(bf16_sum##S, uint16_t, vu16##S, vsum_bf16##S, ATTR)              \
    DEFINE_KERNEL(bf16_prod##S, uint16_t, vu16##S, vprod_bf16##S, ATTR)            \
    DEFINE_KERNEL(bf16_min##S, uint16_t, vu16##S, vmin_bf16##S, ATTR)              \
    DEFINE_KERNEL(bf16_max##S, uint16_t, vu16##S, vmax_bf16##S, ATTR)              \
    DEFINE_AVG(f32_avg##S, float, vf32##S, float, vf32##S, V_DIV, ATTR)            \
    DEFINE_AVG(f64_avg##S, double, vf64##S, double, vf64##S, V_DIV, ATTR)          \
    DEFINE_AVG(f16_avg##S, uint16_t, vu16##S, float, vf32##S, vdiv_f16##F16, ATTR) \
    DEFINE_AVG(bf16_avg##S, uint16_t, vu16##S, float, vf32##S, vdiv_bf16##S, ATTR) \
                                                                                   \
    static const struct kernel_set kernels##S = {                                  \
        .name = NAME,                                                              \
        .fn = {                                                                    \
            [WEFT_INT8] = INT_ROW(i8, S),       [WEFT_UINT8] = INT_ROW(u8, S),     \
            [WEFT_INT32] = INT_ROW(i32, S),     [WEFT_UINT32] = INT_ROW(u32, S),   \
            [WEFT_INT64] = INT_ROW(i64, S),     [WEFT_UINT64] = INT_ROW(u64, S),   \
            [WEFT_FLOAT16] = FLT_ROW(f16, S),   [WEFT_BFLOAT16] = FLT_ROW(bf16, S), \
            [WEFT_FLOAT32] = FLT_ROW(f32, S),   [WEFT_FLOAT64] = FLT_ROW(f64, S),  \
        },                                                                         \
        .avg = {                                                                   \
            [WEFT_FLOAT16] = f16_avg##S,   [WEFT_BFLOAT16] = bf16_avg##S,          \
            [WEFT_FLOAT32] = f32_avg##S,   [WEFT_FLOAT64] = f64_avg##S,            \
        },                                                                         \
    };

/* -------------------------------------------------------- the kernel sets */

DEFINE_VECTOR_TYPES(_gen, 16)
DEFINE_F16_CONVERSIONS(_gen, )
DEFINE_HALF_ARITH(f16, _gen, vhalf_to_float, vfloat_to_half, )
/* SSE2 lacks a 64-bit compare (SSE4.2 has it); NEON and others have one. */
#if defined(__x86_64__) && !defined(__SSE4_2__)
#define LT64_GEN LT64_SUB
#else
#define LT64_GEN LT64_CMP
#endif
DEFINE_KERNEL_SET(_gen, "generic", LT64_GEN, _gen, )

#if WEFT_REDUCE_AVX2
#define WEFT_AVX2 __attribute__((target("avx2,f16c")))

DEFINE_VECTOR_TYPES(_avx2, 32)

/* FLOAT16 through F16C: VCVTPH2PS widens exactly and quiets a signalling
 * NaN keeping its payload; VCVTPS2PH with immediate 0 rounds to nearest
 * even whatever MXCSR says, keeps NaN payloads' top bits and sets the quiet
 * bit, overflows to Inf and rounds into subnormals (MXCSR.FTZ does not
 * apply). That is the scalar conversion, bit for bit. */
#define F16C_LANES(a, b, EXPR)                                                     \
    ({                                                                             \
        __m256i a_ = (__m256i)(a), b_ = (__m256i)(b);                              \
        __m256 x = _mm256_cvtph_ps(_mm256_castsi256_si128(a_));                    \
        __m256 y = _mm256_cvtph_ps(_mm256_castsi256_si128(b_));                    \
        __m128i lo_ = _mm256_cvtps_ph(EXPR, 0), hi_;                               \
                                                                                   \
        x = _mm256_cvtph_ps(_mm256_extracti128_si256(a_, 1));                      \
        y = _mm256_cvtph_ps(_mm256_extracti128_si256(b_, 1));                      \
        hi_ = _mm256_cvtps_ph(EXPR, 0);                                            \
        (void)y;                                                                   \
        (vu16_avx2) _mm256_inserti128_si256(_mm256_castsi128_si256(lo_), hi_, 1);  \
    })

WEFT_AVX2 static inline vu16_avx2 vsum_f16_f16c(vu16_avx2 a, vu16_avx2 b)
{
    return F16C_LANES(a, b, NAN_WINS(vi32_avx2, y, y, x + y));
}

WEFT_AVX2 static inline vu16_avx2 vprod_f16_f16c(vu16_avx2 a, vu16_avx2 b)
{
    return F16C_LANES(a, b, NAN_WINS(vi32_avx2, y, y, x * y));
}

WEFT_AVX2 static inline vu16_avx2 vdiv_f16_f16c(vu16_avx2 a, vf32_avx2 k)
{
    return F16C_LANES(a, a, x / (__m256)k);
}

DEFINE_KERNEL_SET(_avx2, "avx2", LT64_CMP, _f16c, WEFT_AVX2)

static int have_avx2_f16c(void)
{
    unsigned int eax, ebx, ecx, edx;

    __builtin_cpu_init();
    /* __builtin_cpu_supports("avx2") also checks that the OS saves the
     * YMM registers; F16C is CPUID leaf 1, ECX bit 29. */
    return __builtin_cpu_supports("avx2") && __get_cpuid(1, &eax, &ebx, &ecx, &edx) &&
           (ecx & bit_F16C);
}
#endif

static const struct kernel_set *const kernel_sets[] = {
    &kernels_gen,
#if WEFT_REDUCE_AVX2
    &kernels_avx2,
#endif
};

/* Chosen on first use; racing threads choose the same set. */
static const struct kernel_set *active;

static const struct kernel_set *kernels(void)
{
    const struct kernel_set *k = __atomic_load_n(&active, __ATOMIC_RELAXED);

    if (!k) {
        k = &kernels_gen;
#if WEFT_REDUCE_AVX2
        if (have_avx2_f16c())
            k = &kernels_avx2;
#endif
        __atomic_store_n(&active, k, __ATOMIC_RELAXED);
    }
    return k;
}

const char *weft__reduce_isa(void)
{
    return kernels()->name;
}

weft_result_t weft__reduce_set_isa(const char *name)
{
    for (size_t i = 0; i < sizeof(kernel_sets) / sizeof(kernel_sets[0]); i++) {
        if (strcmp(kernel_sets[i]->name, name))
            continue;
#if WEFT_REDUCE_AVX2
        if (kernel_sets[i] == &kernels_avx2 && !have_avx2_f16c())
            return weft__error(WEFT_ERR_UNSUPPORTED, "this CPU lacks AVX2 or F16C");
#endif
        __atomic_store_n(&active, kernel_sets[i], __ATOMIC_RELAXED);
        return WEFT_SUCCESS;
    }
    return weft__error(WEFT_ERR_INVALID_ARG, "no reduction kernel set is named %s", name);
}

weft_result_t weft__reduce_check(weft_dtype_t dt, weft_op_t op)
{
    if ((unsigned)dt >= WEFT_DTYPE_COUNT)
        return weft__error(WEFT_ERR_INVALID_ARG, "dt %d is not a weft_dtype_t", (int)dt);
    if ((unsigned)op >= 8)
        return weft__error(WEFT_ERR_INVALID_ARG, "op %d is not a weft_op_t", (int)op);
    if (!kernels_gen.fn[dt][op])
        return weft__error(WEFT_ERR_INVALID_ARG,
                           "op %s is a bitwise operator and dt is a floating-point type",
                           weft__op_name(op));
    return WEFT_SUCCESS;
}

void weft__reduce(void *dst, const void *a, const void *b, size_t count, weft_dtype_t dt,
                  weft_op_t op)
{
    if (count)
        kernels()->fn[dt][op](dst, a, b, count);
}

/* Integer division has no SIMD instruction in SSE2 or AVX2, and AVG's
 * division runs once per collective rather than once per step. */
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
    case WEFT_BFLOAT16:
    case WEFT_FLOAT32:
    case WEFT_FLOAT64:
        if (count)
            kernels()->avg[dt](buf, count, nranks);
        break;
    }
}
