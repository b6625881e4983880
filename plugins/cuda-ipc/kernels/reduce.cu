/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * reduce.cu: weft's reduction kernels for the GPU, built by nvcc into a
 * fatbin that the cuda-ipc plugin embeds and loads with cuModuleLoadData
 * (cuda_ipc_reduce.c launches them).
 *
 * The semantics are core/dt/reduce.h's and core/dt/op.c's, bit for bit:
 * a rank whose buffers live on the GPU must compute what a rank reducing
 * in host memory computes. The GPU's own float arithmetic differs from
 * the CPU's in one way only, which the code below undoes: a NaN result
 * is always the canonical NaN 0x7fffffff (payload and sign lost). So
 * every floating kernel tests its operands first and returns
 * the NaN the CPU would: an operand's, quieted, payload kept, and for an
 * invalid operation (Inf - Inf, 0 * Inf) the host CPU's default NaN. The
 * build (Makefile.include) turns off FMA contraction and flush-to-zero
 * and keeps IEEE division, so that every other result is the correctly
 * rounded one the CPU gives too.
 *
 * One difference cannot be undone: the host's FLOAT32 and FLOAT64
 * arithmetic rounds in the calling thread's rounding mode, which a GPU
 * kernel cannot see; these round to nearest-even, the default mode. A
 * program that changes the mode (fesetround) gets other bits on the GPU.
 *
 * Kernels, one per dtype (suffix i8 u8 i32 u32 i64 u64 f16 bf16 f32 f64),
 * with C names so that cuModuleGetFunction finds them:
 *   weft_reduce_<t>(T *dst, const T *a, const T *b, u64 n, int op)
 *       dst[i] = a[i] op b[i], op a weft_op_t (AVG sums; BAND, BOR, BXOR
 *       on integer types only; any other value leaves dst alone)
 *   weft_avg_<t>(T *buf, u64 n, int nranks)
 *       buf[i] /= nranks: AVG's last step; integers truncate toward zero
 *   weft_scale_<t>(T *dst, const T *src, u64 n, T k)
 *       dst[i] = k * src[i]: PREMUL_SUM's scaling (op.c), integers
 *       wrapping, FLOAT16/BFLOAT16 in float32 rounded once
 * T is the element type; FLOAT16 and BFLOAT16 are their 16-bit patterns.
 * Each is a grid-stride loop over n, any grid; each element is read
 * before it is written, so dst may be a or b (or src).
 *
 * Tested three ways: tests/unit/test_reduce_cu compiles this file for the
 * host and compares it with the host kernels; the plugin's unit test
 * launches it on the CUDA test double, which computes the same semantics
 * with code of its own; tests/gpu/kernels_check runs it on a GPU.
 *
 * The op is an argument rather than a kernel per (dtype, op) pair: 30
 * entry points instead of 78 for nvcc to build seven times over, and
 * the switch, outside the loop, costs one uniform branch per thread.
 */
#include <stdint.h>

#include "weft.h"

typedef unsigned long long u64;

/* The NaN an x86-64 CPU makes for an invalid operation has its sign set;
 * aarch64's has not. nvcc's device passes see the host's architecture
 * macros, so the fatbin matches the CPU it is built for. */
#if defined(__x86_64__) || defined(__i386__)
#define GEN_NAN32 0xffc00000u
#define GEN_NAN64 0xfff8000000000000ull
#else
#define GEN_NAN32 0x7fc00000u
#define GEN_NAN64 0x7ff8000000000000ull
#endif
#define QUIET32 0x00400000u
#define QUIET64 0x0008000000000000ull

/* ------------------------------------------------------------ the loop */

#define EACH(i, n)                                                                 \
    for (u64 i = blockIdx.x * (u64)blockDim.x + threadIdx.x; i < (n);              \
         i += (u64)gridDim.x * blockDim.x)

template <class T, class F>
__device__ static void each2(T *d, const T *a, const T *b, u64 n, F f)
{
    EACH(i, n)
    {
        T x = a[i], y = b[i];

        d[i] = f(x, y);
    }
}

template <class T, class F> __device__ static void each1(T *d, const T *s, u64 n, F f)
{
    EACH(i, n)
    d[i] = f(s[i]);
}

/* ------------------------------------------------------------ NaN rules */

__device__ static bool nan32(uint32_t u)
{
    return (u & 0x7fffffffu) > 0x7f800000u;
}

__device__ static bool nan64(u64 u)
{
    return (u & 0x7fffffffffffffffull) > 0x7ff0000000000000ull;
}

/* r = a op b computed by the GPU; first and second are the operands in
 * the order their NaNs win (reduce.c: FLOAT32/FLOAT64 SUM and PROD a's,
 * FLOAT16/BFLOAT16 arithmetic b's). */
__device__ static float fix32(float first, float second, float r)
{
    uint32_t x = __float_as_uint(first), y = __float_as_uint(second);

    if (nan32(x))
        return __uint_as_float(x | QUIET32);
    if (nan32(y))
        return __uint_as_float(y | QUIET32);
    if (nan32(__float_as_uint(r)))
        return __uint_as_float(GEN_NAN32);
    return r;
}

__device__ static double fix64(double first, double second, double r)
{
    u64 x = __double_as_longlong(first), y = __double_as_longlong(second);

    if (nan64(x))
        return __longlong_as_double(x | QUIET64);
    if (nan64(y))
        return __longlong_as_double(y | QUIET64);
    if (nan64(__double_as_longlong(r)))
        return __longlong_as_double(GEN_NAN64);
    return r;
}

/* ------------------------------------------------------ half precision */

/* FLOAT16 to float32, exactly; a NaN keeps its payload and is quieted. */
__device__ static float f16_wide(uint16_t h)
{
    uint32_t sign = (uint32_t)(h & 0x8000u) << 16, exp = (h >> 10) & 0x1fu, man = h & 0x3ffu;

    if (exp == 0x1f)
        return __uint_as_float(sign | 0x7f800000u | man << 13 | (man ? QUIET32 : 0));
    if (exp == 0) /* zero or subnormal: man units of 2^-24, exact in float */
        return __uint_as_float(sign | __float_as_uint((float)man * 0x1p-24f));
    return __uint_as_float(sign | (exp + 112) << 23 | man << 13);
}

/* float32 to FLOAT16, nearest-even; overflow is Inf, a NaN keeps the top
 * of its payload and is quiet. */
__device__ static uint16_t f16_narrow(float f)
{
    uint32_t u = __float_as_uint(f), sign = (u >> 16) & 0x8000u, abs = u & 0x7fffffffu;

    if (abs > 0x7f800000u)
        return (uint16_t)(sign | 0x7e00u | ((abs >> 13) & 0x3ffu));
    if (abs >= 0x477ff000u) /* 65520 and above round to Inf */
        return (uint16_t)(sign | 0x7c00u);
    if (abs < 0x38800000u) {
        /* subnormal or zero: a count of 2^-24 units, rounded to even;
         * the scaling and the remainder are exact */
        float scaled = __uint_as_float(abs) * 0x1p24f;
        uint32_t q = (uint32_t)scaled;
        float rem = scaled - (float)q;

        q += rem > 0.5f || (rem == 0.5f && (q & 1u));
        return (uint16_t)(sign | q);
    }
    abs += 0xfffu + ((abs >> 13) & 1u);
    return (uint16_t)(sign | (abs - 0x38000000u) >> 13);
}

__device__ static float bf16_wide(uint16_t b)
{
    return __uint_as_float((uint32_t)b << 16);
}

__device__ static uint16_t bf16_narrow(float f)
{
    uint32_t u = __float_as_uint(f);

    if (nan32(u))
        return (uint16_t)(u >> 16 | 0x40u);
    return (uint16_t)((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
}

/* Floating MIN/MAX on bit patterns (reduce.c): a key that orders as the
 * values do, -0 below +0; a NaN wins, quieted, b's when both are. I is
 * the signed integer type of the format's width. */
template <class I> struct fmt;
template <> struct fmt<int16_t> {
    static constexpr int16_t mag = 0x7fff;
};
template <> struct fmt<int32_t> {
    static constexpr int32_t mag = 0x7fffffff;
};
template <> struct fmt<int64_t> {
    static constexpr int64_t mag = 0x7fffffffffffffffll;
};

template <class I> __device__ static I fkey(I x)
{
    return x ^ ((x >> (sizeof(I) * 8 - 1)) & fmt<I>::mag);
}

template <class I>
__device__ static I fminmax(I x, I y, bool want_max, I inf, I quiet)
{
    bool y_first = want_max ? fkey(x) < fkey(y) : fkey(y) < fkey(x);
    I r = y_first ? y : x;

    if ((I)(x & fmt<I>::mag) > inf)
        r = x | quiet;
    if ((I)(y & fmt<I>::mag) > inf)
        r = y | quiet;
    return r;
}

/* ------------------------------------------------------------- kernels */

/* Integers: SUM, PROD and scaling wrap (in U, T's unsigned type). */
template <class T, class U> __device__ static void reduce_int(T *d, const T *a, const T *b,
                                                              u64 n, int op)
{
    switch (op) {
    case WEFT_SUM:
    case WEFT_AVG: each2(d, a, b, n, [](T x, T y) { return (T)(U)((U)x + (U)y); }); break;
    case WEFT_PROD: each2(d, a, b, n, [](T x, T y) { return (T)(U)((U)x * (U)y); }); break;
    case WEFT_MIN: each2(d, a, b, n, [](T x, T y) { return y < x ? y : x; }); break;
    case WEFT_MAX: each2(d, a, b, n, [](T x, T y) { return y > x ? y : x; }); break;
    case WEFT_BAND: each2(d, a, b, n, [](T x, T y) { return (T)(x & y); }); break;
    case WEFT_BOR: each2(d, a, b, n, [](T x, T y) { return (T)(x | y); }); break;
    case WEFT_BXOR: each2(d, a, b, n, [](T x, T y) { return (T)(x ^ y); }); break;
    }
}

/* D is the type the host divides in: int for INT8, where a divisor of
 * 128 ranks or more must not be truncated to T. */
template <class T, class D> __device__ static void avg_int(T *buf, u64 n, int nranks)
{
    D k = (D)nranks;

    each1(buf, buf, n, [k](T v) { return (T)(v / k); });
}

template <class T, class U> __device__ static void scale_int(T *d, const T *s, u64 n, T k)
{
    each1(d, s, n, [k](T v) { return (T)(U)((U)k * (U)v); });
}

#define INT_KERNELS(tn, T, U, D)                                                      \
    extern "C" __global__ void weft_reduce_##tn(T *d, const T *a, const T *b, u64 n, \
                                                int op)                            \
    {                                                                              \
        reduce_int<T, U>(d, a, b, n, op);                                          \
    }                                                                              \
    extern "C" __global__ void weft_avg_##tn(T *buf, u64 n, int nranks)            \
    {                                                                              \
        avg_int<T, D>(buf, n, nranks);                                                \
    }                                                                              \
    extern "C" __global__ void weft_scale_##tn(T *d, const T *s, u64 n, T k)       \
    {                                                                              \
        scale_int<T, U>(d, s, n, k);                                               \
    }

INT_KERNELS(i8, int8_t, uint8_t, int)
INT_KERNELS(u8, uint8_t, uint8_t, unsigned)
INT_KERNELS(i32, int32_t, uint32_t, int32_t)
INT_KERNELS(u32, uint32_t, uint32_t, uint32_t)
INT_KERNELS(i64, int64_t, u64, int64_t)
INT_KERNELS(u64, u64, u64, u64)

/* FLOAT32 and FLOAT64: a's NaN wins SUM and PROD. */
extern "C" __global__ void weft_reduce_f32(float *d, const float *a, const float *b, u64 n,
                                           int op)
{
    typedef int32_t I;

    switch (op) {
    case WEFT_SUM:
    case WEFT_AVG: each2(d, a, b, n, [](float x, float y) { return fix32(x, y, x + y); }); break;
    case WEFT_PROD: each2(d, a, b, n, [](float x, float y) { return fix32(x, y, x * y); }); break;
    case WEFT_MIN:
    case WEFT_MAX: {
        bool want_max = op == WEFT_MAX;

        each2(d, a, b, n, [want_max](float x, float y) {
            return __int_as_float(fminmax<I>(__float_as_int(x), __float_as_int(y), want_max,
                                             0x7f800000, QUIET32));
        });
        break;
    }
    }
}

extern "C" __global__ void weft_reduce_f64(double *d, const double *a, const double *b, u64 n,
                                           int op)
{
    typedef int64_t I;

    switch (op) {
    case WEFT_SUM:
    case WEFT_AVG: each2(d, a, b, n, [](double x, double y) { return fix64(x, y, x + y); }); break;
    case WEFT_PROD: each2(d, a, b, n, [](double x, double y) { return fix64(x, y, x * y); }); break;
    case WEFT_MIN:
    case WEFT_MAX: {
        bool want_max = op == WEFT_MAX;

        each2(d, a, b, n, [want_max](double x, double y) {
            return __longlong_as_double(fminmax<I>(__double_as_longlong(x),
                                                   __double_as_longlong(y), want_max,
                                                   0x7ff0000000000000ll, (I)QUIET64));
        });
        break;
    }
    }
}

/* A NaN operand comes back quieted (a's for FLOAT32/FLOAT64 SUM/PROD). */
extern "C" __global__ void weft_avg_f32(float *buf, u64 n, int nranks)
{
    float k = (float)nranks;

    each1(buf, buf, n, [k](float v) { return fix32(v, k, v / k); });
}

extern "C" __global__ void weft_avg_f64(double *buf, u64 n, int nranks)
{
    double k = (double)nranks;

    each1(buf, buf, n, [k](double v) { return fix64(v, k, v / k); });
}

/* k * v as op.c writes it: when both are NaN the host's result depends
 * on the operand order its compiler chose (gcc 12 at -O2 makes v's win),
 * and so v's wins here. */
extern "C" __global__ void weft_scale_f32(float *d, const float *s, u64 n, float k)
{
    each1(d, s, n, [k](float v) { return fix32(v, k, k * v); });
}

extern "C" __global__ void weft_scale_f64(double *d, const double *s, u64 n, double k)
{
    each1(d, s, n, [k](double v) { return fix64(v, k, k * v); });
}

/* FLOAT16 and BFLOAT16: widen, combine in float32 (b's NaN first), round
 * once. MIN and MAX work on the 16-bit patterns. */
#define HALF_KERNELS(tn, WIDE, NARROW, INF, QUIET)                                 \
    extern "C" __global__ void weft_reduce_##tn(uint16_t *d, const uint16_t *a,    \
                                                const uint16_t *b, u64 n, int op)  \
    {                                                                              \
        switch (op) {                                                              \
        case WEFT_SUM:                                                             \
        case WEFT_AVG:                                                             \
            each2(d, a, b, n, [](uint16_t p, uint16_t q) {                         \
                float x = WIDE(p), y = WIDE(q);                                    \
                return NARROW(fix32(y, x, x + y));                                 \
            });                                                                    \
            break;                                                                 \
        case WEFT_PROD:                                                            \
            each2(d, a, b, n, [](uint16_t p, uint16_t q) {                         \
                float x = WIDE(p), y = WIDE(q);                                    \
                return NARROW(fix32(y, x, x * y));                                 \
            });                                                                    \
            break;                                                                 \
        case WEFT_MIN:                                                             \
        case WEFT_MAX: {                                                           \
            bool want_max = op == WEFT_MAX;                                        \
                                                                                   \
            each2(d, a, b, n, [want_max](uint16_t p, uint16_t q) {                 \
                return (uint16_t)fminmax<int16_t>((int16_t)p, (int16_t)q, want_max, \
                                                  INF, QUIET);                     \
            });                                                                    \
            break;                                                                 \
        }                                                                          \
        }                                                                          \
    }                                                                              \
    extern "C" __global__ void weft_avg_##tn(uint16_t *buf, u64 n, int nranks)     \
    {                                                                              \
        float k = (float)nranks;                                                   \
                                                                                   \
        each1(buf, buf, n, [k](uint16_t p) {                                       \
            float x = WIDE(p);                                                     \
            return NARROW(fix32(x, k, x / k));                                     \
        });                                                                        \
    }                                                                              \
    extern "C" __global__ void weft_scale_##tn(uint16_t *d, const uint16_t *s, u64 n, \
                                               uint16_t k)                         \
    {                                                                              \
        float y = WIDE(k);                                                         \
                                                                                   \
        each1(d, s, n, [y](uint16_t p) {                                           \
            float x = WIDE(p);                                                     \
            return NARROW(fix32(x, y, y * x));                                     \
        });                                                                        \
    }

HALF_KERNELS(f16, f16_wide, f16_narrow, 0x7c00, 0x200)
HALF_KERNELS(bf16, bf16_wide, bf16_narrow, 0x7f80, 0x40)
