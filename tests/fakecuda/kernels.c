/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * kernels.c: the GPU kernels the double "runs": weft's reduction kernels
 * (plugins/cuda-ipc/kernels/reduce.cu), known by name and computed here
 * on the host, element by element, from their documented semantics:
 * core/dt/reduce.h's opening comment, PREMUL_SUM in weft.h, and the NaN
 * choices reduce.cu's header states. Nothing here comes from weft's own
 * kernels, and the double never links libweft: a bug there and here at
 * once would have to be written twice.
 *
 * The kernels, T the element type (FLOAT16 and BFLOAT16 as 16-bit
 * patterns), each a loop over n elements whatever the grid:
 *   weft_reduce_<t>(T *dst, const T *a, const T *b, u64 n, int op)
 *   weft_avg_<t>(T *buf, u64 n, int nranks)
 *   weft_scale_<t>(T *dst, const T *src, u64 n, T k)
 * for t in i8 u8 i32 u32 i64 u64 f16 bf16 f32 f64.
 *
 * Floating point, as the host CPU computes it (the double's floating
 * results come from the host's own arithmetic, with the NaN an invalid
 * operation makes there):
 *  - FLOAT32/FLOAT64 SUM and PROD: a NaN in a wins, quieted, then b's;
 *    FLOAT16/BFLOAT16 SUM and PROD: b's first, then a's; each value
 *    widened to float32 exactly, combined, rounded to nearest-even once
 *    (subnormals kept, overflow to Inf, a NaN keeps the top of its
 *    payload and is quiet).
 *  - MIN and MAX: a NaN wins, quieted, b's when both are; -0 < +0.
 *  - AVG's finish: v / nranks (a NaN v quieted); integers truncate.
 *  - scaling: k * v, v's NaN first, then k's.
 */
#include "config.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "tests/fakecuda/fakecuda.h"

/* weft_op_t values (weft.h); the double does not include weft's headers. */
enum { OP_SUM, OP_PROD, OP_MIN, OP_MAX, OP_AVG, OP_BAND, OP_BOR, OP_BXOR };

enum fc_type { T_I8, T_U8, T_I32, T_U32, T_I64, T_U64, T_F16, T_BF16, T_F32, T_F64, T_COUNT };

static const struct {
    const char *suffix;
    size_t size;
} types[T_COUNT] = {
    [T_I8] = { "i8", 1 },   [T_U8] = { "u8", 1 },     [T_I32] = { "i32", 4 },
    [T_U32] = { "u32", 4 }, [T_I64] = { "i64", 8 },   [T_U64] = { "u64", 8 },
    [T_F16] = { "f16", 2 }, [T_BF16] = { "bf16", 2 }, [T_F32] = { "f32", 4 },
    [T_F64] = { "f64", 8 },
};

/* ------------------------------------------------------- float formats */

static uint32_t bits32(float f)
{
    uint32_t u;
    memcpy(&u, &f, 4);
    return u;
}

static float from32(uint32_t u)
{
    float f;
    memcpy(&f, &u, 4);
    return f;
}

static uint64_t bits64(double d)
{
    uint64_t u;
    memcpy(&u, &d, 8);
    return u;
}

static double from64(uint64_t u)
{
    double d;
    memcpy(&d, &u, 8);
    return d;
}

/* The quieted NaN of a NaN operand. */
static float quiet32(float f)
{
    return from32(bits32(f) | 0x00400000u);
}

static double quiet64(double d)
{
    return from64(bits64(d) | 0x0008000000000000ull);
}

/* IEEE half: 1 sign, 5 exponent (bias 15), 10 fraction bits. */
static float half_to_float(uint16_t h)
{
    int e = (h >> 10) & 0x1f;
    unsigned m = h & 0x3ffu;
    float mag;
    if (e == 0x1f) /* Inf, or NaN: payload to the top of float's, quiet */
        return from32((uint32_t)(h & 0x8000u) << 16 | 0x7f800000u | (uint32_t)m << 13 |
                      (m ? 0x00400000u : 0));
    if (e == 0)
        mag = ldexpf((float)m, -24);
    else
        mag = ldexpf((float)(m | 0x400u), e - 25);
    return (h & 0x8000u) ? -mag : mag;
}

static uint16_t float_to_half(float f)
{
    uint16_t sign = signbit(f) ? 0x8000u : 0;
    float a = fabsf(f);
    if (isnan(f))
        return sign | 0x7e00u | (uint16_t)((bits32(f) >> 13) & 0x3ffu);
    /* 65520 is halfway between the largest half, 65504, and 2^16: it
     * and everything above round to Inf */
    if (a >= 65520.0f)
        return sign | 0x7c00u;
    int e;
    frexpf(a, &e); /* a = frac * 2^e, frac in [0.5, 1) */
    e -= 1;        /* a in [2^e, 2^(e+1)) */
    if (a == 0.0f || e < -14) {
        /* subnormal: a count of 2^-24 units; 1024 of them is the least
         * normal, whose encoding is that count too */
        return sign | (uint16_t)rintf(ldexpf(a, 24));
    }
    float m = rintf(ldexpf(a, 10 - e)); /* 1024..2048 */
    if (m == 2048.0f) {
        m = 1024.0f;
        e++;
    }
    return sign | (uint16_t)((e + 15) << 10) | (uint16_t)((unsigned)m - 1024u);
}

static float bf16_to_float(uint16_t b)
{
    return from32((uint32_t)b << 16);
}

static uint16_t float_to_bf16(float f)
{
    uint32_t u = bits32(f);
    uint16_t hi = (uint16_t)(u >> 16), lo = (uint16_t)u;
    if (isnan(f))
        return hi | 0x40u;
    if (lo > 0x8000u || (lo == 0x8000u && (hi & 1u)))
        hi++; /* a carry into the exponent is right, up to Inf */
    return hi;
}

/* ------------------------------------------------------------ elements */

/* One element of each type, by value; floats as their values. */
union val {
    int64_t i;
    uint64_t u;
    float f;
    double d;
};

static union val load(const void *p, size_t i, enum fc_type t)
{
    const char *q = (const char *)p + i * types[t].size;
    union val v = { 0 };
    int8_t i8;
    uint8_t u8;
    int32_t i32;
    uint32_t u32;
    uint16_t h;
    switch (t) {
    case T_I8: memcpy(&i8, q, 1); v.i = i8; break;
    case T_U8: memcpy(&u8, q, 1); v.u = u8; break;
    case T_I32: memcpy(&i32, q, 4); v.i = i32; break;
    case T_U32: memcpy(&u32, q, 4); v.u = u32; break;
    case T_I64: memcpy(&v.i, q, 8); break;
    case T_U64: memcpy(&v.u, q, 8); break;
    case T_F16: memcpy(&h, q, 2); v.f = half_to_float(h); break;
    case T_BF16: memcpy(&h, q, 2); v.f = bf16_to_float(h); break;
    case T_F32: memcpy(&v.f, q, 4); break;
    case T_F64: memcpy(&v.d, q, 8); break;
    default: break;
    }
    return v;
}

/* Stores v, wrapping integers to the type's width (two's complement). */
static void store(void *p, size_t i, enum fc_type t, union val v)
{
    char *q = (char *)p + i * types[t].size;
    uint8_t u8 = (uint8_t)v.u;
    uint32_t u32 = (uint32_t)v.u;
    uint16_t h;
    switch (t) {
    case T_I8:
    case T_U8: memcpy(q, &u8, 1); break;
    case T_I32:
    case T_U32: memcpy(q, &u32, 4); break;
    case T_I64:
    case T_U64: memcpy(q, &v.u, 8); break;
    case T_F16: h = float_to_half(v.f); memcpy(q, &h, 2); break;
    case T_BF16: h = float_to_bf16(v.f); memcpy(q, &h, 2); break;
    case T_F32: memcpy(q, &v.f, 4); break;
    case T_F64: memcpy(q, &v.d, 8); break;
    default: break;
    }
}

static bool is_signed(enum fc_type t)
{
    return t == T_I8 || t == T_I32 || t == T_I64;
}

static bool is_half(enum fc_type t)
{
    return t == T_F16 || t == T_BF16;
}

/* --------------------------------------------------------- the reductions */

/* NaN rules of SUM and PROD: FIRST's NaN, then SECOND's; else R. */
static float arith32(float first, float second, float r)
{
    if (isnan(first))
        return quiet32(first);
    if (isnan(second))
        return quiet32(second);
    return r;
}

static double arith64(double first, double second, double r)
{
    if (isnan(first))
        return quiet64(first);
    if (isnan(second))
        return quiet64(second);
    return r;
}

/* MIN (want_max false) or MAX with NaN and signed-zero rules. */
static float minmax32(float a, float b, bool want_max)
{
    if (isnan(b))
        return quiet32(b);
    if (isnan(a))
        return quiet32(a);
    if (a == b) /* equal values differ only as -0 and +0 */
        return (!!signbit(a) != want_max) ? a : b;
    return (a < b) != want_max ? a : b;
}

static double minmax64(double a, double b, bool want_max)
{
    if (isnan(b))
        return quiet64(b);
    if (isnan(a))
        return quiet64(a);
    if (a == b)
        return (!!signbit(a) != want_max) ? a : b;
    return (a < b) != want_max ? a : b;
}

static union val reduce_one(enum fc_type t, int op, union val a, union val b)
{
    union val r = { 0 };
    if (t == T_F64) {
        switch (op) {
        case OP_SUM:
        case OP_AVG: r.d = arith64(a.d, b.d, a.d + b.d); break;
        case OP_PROD: r.d = arith64(a.d, b.d, a.d * b.d); break;
        case OP_MIN: r.d = minmax64(a.d, b.d, false); break;
        case OP_MAX: r.d = minmax64(a.d, b.d, true); break;
        }
        return r;
    }
    if (t == T_F32 || is_half(t)) {
        bool half = is_half(t);
        switch (op) {
        case OP_SUM:
        case OP_AVG:
            r.f = half ? arith32(b.f, a.f, a.f + b.f) : arith32(a.f, b.f, a.f + b.f);
            break;
        case OP_PROD:
            r.f = half ? arith32(b.f, a.f, a.f * b.f) : arith32(a.f, b.f, a.f * b.f);
            break;
        case OP_MIN: r.f = minmax32(a.f, b.f, false); break;
        case OP_MAX: r.f = minmax32(a.f, b.f, true); break;
        }
        return r;
    }
    bool lt = is_signed(t) ? a.i < b.i : a.u < b.u;
    switch (op) {
    case OP_SUM:
    case OP_AVG: r.u = a.u + b.u; break;
    case OP_PROD: r.u = a.u * b.u; break;
    case OP_MIN: r = lt ? a : b; break;
    case OP_MAX: r = lt ? b : a; break;
    case OP_BAND: r.u = a.u & b.u; break;
    case OP_BOR: r.u = a.u | b.u; break;
    case OP_BXOR: r.u = a.u ^ b.u; break;
    }
    return r;
}

static bool op_defined(enum fc_type t, int op)
{
    if (op < OP_SUM || op > OP_BXOR)
        return false;
    return op <= OP_AVG || t < T_F16;
}

static union val avg_one(enum fc_type t, union val v, int nranks)
{
    switch (t) {
    case T_F64: v.d = isnan(v.d) ? quiet64(v.d) : v.d / nranks; break;
    case T_F32:
    case T_F16:
    case T_BF16: v.f = isnan(v.f) ? quiet32(v.f) : v.f / (float)nranks; break;
    default:
        /* C division truncates toward zero; a 64-bit quotient holds every
         * narrower one */
        if (is_signed(t))
            v.i = v.i / nranks;
        else
            v.u = v.u / (uint64_t)(unsigned)nranks;
        break;
    }
    return v;
}

static union val scale_one(enum fc_type t, union val k, union val v)
{
    switch (t) {
    case T_F64: v.d = arith64(v.d, k.d, k.d * v.d); break;
    case T_F32:
    case T_F16:
    case T_BF16: v.f = arith32(v.f, k.f, k.f * v.f); break;
    default: v.u = k.u * v.u; break;
    }
    return v;
}

/* ---------------------------------------------------------- the table */

#define KERNEL_ROWS(t) \
    { "weft_reduce_", FC_K_REDUCE, t }, { "weft_avg_", FC_K_AVG, t }, { "weft_scale_", FC_K_SCALE, t }

static const struct {
    const char *prefix;
    enum fc_kernel_kind kind;
    enum fc_type type;
} rows[] = {
    KERNEL_ROWS(T_I8),  KERNEL_ROWS(T_U8),   KERNEL_ROWS(T_I32), KERNEL_ROWS(T_U32),
    KERNEL_ROWS(T_I64), KERNEL_ROWS(T_U64),  KERNEL_ROWS(T_F16), KERNEL_ROWS(T_BF16),
    KERNEL_ROWS(T_F32), KERNEL_ROWS(T_F64),
};

#define NKERNELS (sizeof(rows) / sizeof(rows[0]))

static struct fc_kernel kernels[NKERNELS];
static pthread_once_t kernels_once = PTHREAD_ONCE_INIT;

static void kernels_init(void)
{
    for (size_t i = 0; i < NKERNELS; i++) {
        struct fc_kernel *k = &kernels[i];
        snprintf(k->name, sizeof(k->name), "%s%s", rows[i].prefix, types[rows[i].type].suffix);
        k->kind = rows[i].kind;
        k->type = (int)rows[i].type;
        k->esize = types[rows[i].type].size;
        /* REDUCE (dst, a, b, n, op), AVG (buf, n, nranks), SCALE (dst, src, n, k) */
        switch (k->kind) {
        case FC_K_REDUCE:
            k->nparams = 5;
            k->nptrs = 3;
            k->param_size[3] = 8;
            k->param_size[4] = 4;
            break;
        case FC_K_AVG:
            k->nparams = 3;
            k->nptrs = 1;
            k->param_size[1] = 8;
            k->param_size[2] = 4;
            break;
        case FC_K_SCALE:
            k->nparams = 4;
            k->nptrs = 2;
            k->param_size[2] = 8;
            k->param_size[3] = (unsigned char)k->esize;
            break;
        }
        for (int p = 0; p < k->nptrs; p++)
            k->param_size[p] = sizeof(CUdeviceptr);
    }
}

const struct fc_kernel *fc_kernel_find(const char *name, size_t *index)
{
    pthread_once(&kernels_once, kernels_init);
    for (size_t i = 0; i < NKERNELS; i++) {
        if (!strcmp(kernels[i].name, name)) {
            *index = i;
            return &kernels[i];
        }
    }
    return NULL;
}

size_t fc_kernel_count(void)
{
    return NKERNELS;
}

void fc_kernel_run(const struct fc_launch *l)
{
    const struct fc_kernel *k = l->k;
    enum fc_type t = (enum fc_type)k->type;
    switch (k->kind) {
    case FC_K_REDUCE:
        if (!op_defined(t, l->iarg))
            return; /* reduce.cu leaves dst alone */
        for (uint64_t i = 0; i < l->n; i++)
            store(l->ptr[0], i, t, reduce_one(t, l->iarg, load(l->ptr[1], i, t), load(l->ptr[2], i, t)));
        break;
    case FC_K_AVG:
        for (uint64_t i = 0; i < l->n; i++)
            store(l->ptr[0], i, t, avg_one(t, load(l->ptr[0], i, t), l->iarg));
        break;
    case FC_K_SCALE: {
        union val kv = load(l->scalar, 0, t);
        for (uint64_t i = 0; i < l->n; i++)
            store(l->ptr[0], i, t, scale_one(t, kv, load(l->ptr[1], i, t)));
        break;
    }
    }
}
