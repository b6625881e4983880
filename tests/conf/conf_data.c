/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * conf_data.c: the conformance suite's inputs. Every value is a function
 * of (seed, rank, index), so that any rank can regenerate any other
 * rank's input; the half-precision conversions are the suite's own, so
 * that the expected values owe nothing to weft's code.
 */
#include "config.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "tests/conf/conf.h"

const char *const conf_dt_names[WEFT_DTYPE_COUNT] = {
    "int8", "uint8", "int32", "uint32", "int64", "uint64", "float16", "bfloat16",
    "float32", "float64"
};
const char *const conf_op_names[CONF_NOPS] = {
    "sum", "prod", "min", "max", "avg", "band", "bor", "bxor", "premul_sum"
};
const char *const conf_func_names[CONF_NFUNCS] = {
    "barrier", "broadcast", "reduce", "allreduce", "gather", "gatherv", "scatter",
    "scatterv", "allgather", "allgatherv", "reduce_scatter", "reduce_scatterv", "alltoall",
    "alltoallv", "scan", "exscan", "axis", "bytes"
};

uint64_t conf_cases;
const char *conf_algo = "auto";

size_t conf_esize(weft_dtype_t dt)
{
    static const size_t sizes[WEFT_DTYPE_COUNT] = { 1, 1, 4, 4, 8, 8, 2, 2, 4, 8 };

    return sizes[dt];
}

int conf_is_float(weft_dtype_t dt)
{
    return dt >= WEFT_FLOAT16;
}

int conf_legal(weft_dtype_t dt, int op)
{
    return !(conf_is_float(dt) && (op == WEFT_BAND || op == WEFT_BOR || op == WEFT_BXOR));
}

/* splitmix64's finaliser: every input bit changes every output bit. */
uint64_t conf_hash(uint64_t x)
{
    x += 0x9e3779b97f4a7c15ull;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
    return x ^ (x >> 31);
}

uint64_t conf_seed(const conf_case_t *k, int salt)
{
    uint64_t h = conf_hash(k->cc->salt ^ (uint64_t)salt);

    for (const char *s = k->func; *s; s++)
        h = conf_hash(h ^ (unsigned char)*s);
    h = conf_hash(h ^ ((uint64_t)k->dt << 8) ^ ((uint64_t)(k->op + 1) << 16) ^
                  ((uint64_t)(k->root + 1) << 24) ^ ((uint64_t)k->in_place << 40));
    return conf_hash(h ^ k->count);
}

static uint64_t element_bits(uint64_t seed, int r, size_t i)
{
    /* one finaliser is enough: rank and index occupy different bits */
    return conf_hash(seed ^ ((uint64_t)(unsigned)r << 44) ^ i);
}

/* ---------------------------------------------- half precision, by hand */

static float half_to_float(uint16_t h)
{
    int sign = h >> 15, exp = (h >> 10) & 0x1f, man = h & 0x3ff;
    float v;

    if (exp == 0)
        v = ldexpf((float)man, -24);
    else if (exp == 31)
        v = man ? NAN : INFINITY;
    else
        v = ldexpf((float)(man | 0x400), exp - 25);
    return sign ? -v : v;
}

/* Round to nearest, ties to even, through the exact float value. */
static uint16_t float_to_half(float f)
{
    uint16_t sign = signbit(f) ? 0x8000 : 0;
    float a = fabsf(f);
    int e;

    if (isnan(f))
        return 0x7e00;
    if (a >= 65520.0f)
        return sign | 0x7c00;
    if (a < ldexpf(1.0f, -14)) /* subnormal: units of 2^-24 */
        return sign | (uint16_t)nearbyintf(ldexpf(a, 24));
    frexpf(a, &e); /* a = m * 2^e, 0.5 <= m < 1 */
    {
        float units = nearbyintf(ldexpf(a, 11 - e)); /* 1024..2048 */
        int exp = e - 1 + 15;

        if (units >= 2048.0f) {
            units /= 2;
            exp++;
        }
        if (exp >= 31)
            return sign | 0x7c00;
        return sign | (uint16_t)(exp << 10) | (uint16_t)((int)units - 1024);
    }
}

static float bf16_to_float(uint16_t b)
{
    uint32_t u = (uint32_t)b << 16;
    float f;

    memcpy(&f, &u, sizeof(f));
    return f;
}

static uint16_t float_to_bf16(float f)
{
    uint32_t u;

    memcpy(&u, &f, sizeof(u));
    if (isnan(f))
        return 0x7fc0;
    u += 0x7fff + ((u >> 16) & 1);
    return (uint16_t)(u >> 16);
}

/* ----------------------------------------------------------- load, store */

void conf_store(void *buf, size_t i, weft_dtype_t dt, double v)
{
    char *p = (char *)buf + i * conf_esize(dt);

    switch (dt) {
    case WEFT_INT8: { int8_t x = (int8_t)(int64_t)v; memcpy(p, &x, 1); break; }
    case WEFT_UINT8: { uint8_t x = (uint8_t)(uint64_t)v; memcpy(p, &x, 1); break; }
    case WEFT_INT32: { int32_t x = (int32_t)(int64_t)v; memcpy(p, &x, 4); break; }
    case WEFT_UINT32: { uint32_t x = (uint32_t)(uint64_t)v; memcpy(p, &x, 4); break; }
    case WEFT_INT64: { int64_t x = (int64_t)v; memcpy(p, &x, 8); break; }
    case WEFT_UINT64: { uint64_t x = (uint64_t)v; memcpy(p, &x, 8); break; }
    case WEFT_FLOAT16: { uint16_t x = float_to_half((float)v); memcpy(p, &x, 2); break; }
    case WEFT_BFLOAT16: { uint16_t x = float_to_bf16((float)v); memcpy(p, &x, 2); break; }
    case WEFT_FLOAT32: { float x = (float)v; memcpy(p, &x, 4); break; }
    case WEFT_FLOAT64: memcpy(p, &v, 8); break;
    }
}

double conf_load(const void *buf, size_t i, weft_dtype_t dt)
{
    const char *p = (const char *)buf + i * conf_esize(dt);
    union { int8_t i8; uint8_t u8; int32_t i32; uint32_t u32; int64_t i64; uint64_t u64;
            uint16_t h; float f; double d; } x;

    memcpy(&x, p, conf_esize(dt));
    switch (dt) {
    case WEFT_INT8: return x.i8;
    case WEFT_UINT8: return x.u8;
    case WEFT_INT32: return x.i32;
    case WEFT_UINT32: return x.u32;
    case WEFT_INT64: return (double)x.i64;
    case WEFT_UINT64: return (double)x.u64;
    case WEFT_FLOAT16: return half_to_float(x.h);
    case WEFT_BFLOAT16: return bf16_to_float(x.h);
    case WEFT_FLOAT32: return x.f;
    case WEFT_FLOAT64: return x.d;
    }
    return 0;
}

/* ------------------------------------------------------------------ inputs */

/* Integers: small enough that a sum or average over 8 ranks never wraps
 * (the reference still wraps where weft must: PREMUL_SUM); products of
 * +-1 and +-2 with at most 6 twos fit int8. Bitwise operators and MIN/MAX
 * get all bits. Floats: [-1, 1] rounded to the type; products use
 * magnitudes in [0.5, 2] so that nothing underflows. */
double conf_input(const conf_case_t *k, uint64_t seed, int r, size_t i)
{
    uint64_t h = element_bits(seed, r, i);
    weft_dtype_t dt = k->dt;
    int is_signed = dt == WEFT_INT8 || dt == WEFT_INT32 || dt == WEFT_INT64;

    if (conf_is_float(dt)) {
        double u = (double)(h >> 11) / 9007199254740992.0; /* [0, 1) */
        double v;

        if (k->op == WEFT_PROD)
            v = (0.5 + 1.5 * u) * ((h & 1) ? -1 : 1);
        else
            v = 2 * u - 1;
        /* the value the buffer will hold */
        {
            char tmp[8];

            conf_store(tmp, 0, dt, v);
            return conf_load(tmp, 0, dt);
        }
    }
    switch (k->op) {
    case WEFT_PROD: {
        int two = r < 6 && (h % 3) == 0;
        int neg = is_signed && ((h >> 8) & 1);

        return (two ? 2 : 1) * (neg ? -1 : 1);
    }
    case WEFT_MIN: case WEFT_MAX: case WEFT_BAND: case WEFT_BOR: case WEFT_BXOR:
        /* exact in a double: 53 bits at most */
        switch (dt) {
        case WEFT_INT8: return (int8_t)h;
        case WEFT_UINT8: return (uint8_t)h;
        case WEFT_INT32: return (int32_t)h;
        case WEFT_UINT32: return (uint32_t)h;
        case WEFT_INT64: return (double)((int64_t)(h << 11) >> 11);
        default: return (double)(h >> 11);
        }
    default: {
        /* SUM, AVG, PREMUL_SUM: 8 ranks' sum stays inside the type */
        uint64_t range = dt == WEFT_INT8 ? 15 : dt == WEFT_UINT8 ? 31
                       : dt == WEFT_INT32 || dt == WEFT_UINT32 ? (1u << 27) : (1ull << 48);
        int64_t v = (int64_t)(h % (range + 1));

        if (is_signed && ((h >> 60) & 1))
            v = -v;
        return (double)v;
    }
    }
}

void conf_fill_input(const conf_case_t *k, uint64_t seed, int r, void *buf, size_t count)
{
    for (size_t i = 0; i < count; i++)
        conf_store(buf, i, k->dt, conf_input(k, seed, r, i));
}

void conf_fill_bytes(void *buf, size_t nbytes, uint64_t seed, int r, size_t first)
{
    unsigned char *p = buf;
    size_t b = 0;

    /* one hash per 8 bytes of the stream; byte pos is byte pos % 8 of word pos / 8 */
    while (b < nbytes) {
        size_t pos = first + b, word = pos / 8;
        uint64_t bits = element_bits(seed, r, word);

        for (unsigned k = (unsigned)(pos % 8); k < 8 && b < nbytes; k++, b++)
            p[b] = (unsigned char)(bits >> (8 * k));
    }
}

/* -------------------------------------------------------------- operators */

double conf_premul_scalar(weft_dtype_t dt)
{
    return conf_is_float(dt) ? 0.75 : 3;
}

static weft_op_t premul_ops[WEFT_DTYPE_COUNT];
static int premul_made[WEFT_DTYPE_COUNT];

weft_op_t conf_weft_op(weft_dtype_t dt, int op)
{
    char scalar[8];

    if (op != CONF_PREMUL)
        return (weft_op_t)op;
    if (!premul_made[dt]) {
        conf_store(scalar, 0, dt, conf_premul_scalar(dt));
        MP_CHECK(weft_op_create_premul_sum(scalar, dt, &premul_ops[dt]));
        premul_made[dt] = 1;
    }
    return premul_ops[dt];
}

void conf_free_ops(void)
{
    for (int dt = 0; dt < WEFT_DTYPE_COUNT; dt++)
        if (premul_made[dt]) {
            MP_CHECK(weft_op_free(premul_ops[dt]));
            premul_made[dt] = 0;
        }
}
