/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * kcheck.c: the GPU reductions against the host kernels (kcheck.h says
 * what and why). The inputs are built as raw bits, so that NaN payloads
 * and signalling NaNs reach the kernels as they are, and results are
 * compared as bits.
 */
#include "config.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core/dt/op.h"
#include "core/dt/reduce.h"
#include "plugins/cuda-ipc/cuda_ipc.h"
#include "tests/gpu/kcheck.h"

#define TELL_MAX 5                      /* mismatches told per comparison */

static const size_t esize[WEFT_DTYPE_COUNT] = { 1, 1, 4, 4, 8, 8, 2, 2, 4, 8 };
static const char *const dt_names[WEFT_DTYPE_COUNT] = {
    "INT8", "UINT8", "INT32", "UINT32", "INT64", "UINT64", "FLOAT16", "BFLOAT16",
    "FLOAT32", "FLOAT64",
};
static const char *const op_names[8] = { "SUM", "PROD", "MIN", "MAX", "AVG", "BAND", "BOR",
                                         "BXOR" };

const char *kcheck_dtype_name(weft_dtype_t dt)
{
    return (unsigned)dt < WEFT_DTYPE_COUNT ? dt_names[dt] : "?";
}

static int is_float(weft_dtype_t dt)
{
    return dt >= WEFT_FLOAT16;
}

/* ------------------------------------------------------------ raw bits */

static uint64_t get(const unsigned char *buf, size_t i, weft_dtype_t dt)
{
    uint64_t v = 0;

    /* little-endian hosts and GPUs: the low bytes of v */
    memcpy(&v, buf + i * esize[dt], esize[dt]);
    return v;
}

static void put(unsigned char *buf, size_t i, weft_dtype_t dt, uint64_t v)
{
    memcpy(buf + i * esize[dt], &v, esize[dt]);
}

static uint32_t next(struct kcheck *k)
{
    /* xorshift32: the same inputs on every run and machine */
    uint32_t x = k->rng;

    x ^= x << 13;
    x ^= x >> 17;
    x ^= x << 5;
    return k->rng = x;
}

static uint64_t next64(struct kcheck *k)
{
    return (uint64_t)next(k) << 32 | next(k);
}

/* A floating format: exponent and fraction widths. */
struct fmt {
    int exp_bits, man_bits;
};

static struct fmt fmt_of(weft_dtype_t dt)
{
    switch (dt) {
    case WEFT_FLOAT16: return (struct fmt){ 5, 10 };
    case WEFT_BFLOAT16: return (struct fmt){ 8, 7 };
    case WEFT_FLOAT32: return (struct fmt){ 8, 23 };
    default: return (struct fmt){ 11, 52 };
    }
}

/* A value of a floating format whose rules matter: zeros, infinities,
 * NaNs quiet and signalling with payloads, subnormals, the extremes of
 * the normal range, values near 1 whose sums and products round. */
static uint64_t special_float(struct kcheck *k, weft_dtype_t dt)
{
    struct fmt f = fmt_of(dt);
    uint64_t man_mask = ((uint64_t)1 << f.man_bits) - 1;
    uint64_t exp_all = (((uint64_t)1 << f.exp_bits) - 1) << f.man_bits;
    uint64_t sign = (uint64_t)(next(k) & 1) << (f.exp_bits + f.man_bits);
    uint64_t quiet = (uint64_t)1 << (f.man_bits - 1);
    uint64_t bias_one = (((uint64_t)1 << (f.exp_bits - 1)) - 1) << f.man_bits;
    uint64_t payload = next64(k) & (quiet - 1);

    switch (next(k) % 12) {
    case 0: return sign;                                        /* ±0 */
    case 1: return sign | exp_all;                              /* ±Inf */
    case 2: return sign | exp_all | quiet | payload;            /* quiet NaN */
    case 3: return sign | exp_all | (payload ? payload : 1);    /* signalling NaN */
    case 4: return sign | (next64(k) & man_mask);               /* subnormal (or 0) */
    case 5: return sign | 1;                                    /* least subnormal */
    case 6: return sign | man_mask;                             /* greatest subnormal */
    case 7: return sign | (exp_all - ((uint64_t)1 << f.man_bits)) | man_mask; /* max */
    case 8: return sign | ((uint64_t)1 << f.man_bits);          /* least normal */
    case 9: return sign | bias_one;                             /* ±1 */
    case 10: return sign | bias_one | (next64(k) & man_mask);   /* [1, 2) */
    default: return sign | (bias_one - ((uint64_t)next(k) % 4 << f.man_bits)) |
                    (next64(k) & man_mask);                     /* [1/8, 1) */
    }
}

static uint64_t special_int(struct kcheck *k, weft_dtype_t dt)
{
    int bits = (int)esize[dt] * 8;
    uint64_t all = bits == 64 ? ~(uint64_t)0 : ((uint64_t)1 << bits) - 1;
    uint64_t top = (uint64_t)1 << (bits - 1);

    switch (next(k) % 8) {
    case 0: return 0;
    case 1: return 1;
    case 2: return all;                 /* -1, or the unsigned maximum */
    case 3: return top;                 /* the signed minimum */
    case 4: return top - 1;             /* the signed maximum */
    case 5: return top + 1;
    case 6: return next64(k) % 16;
    default: return (0 - next64(k) % 16) & all;
    }
}

/* Element i of a buffer: a special value one time in four, random bits
 * one in eight, else an ordinary value (floats in [-4, 4), where sums
 * and products are rounded, not saturated). */
static uint64_t element(struct kcheck *k, weft_dtype_t dt)
{
    uint32_t r = next(k) % 8;
    uint64_t mask = esize[dt] == 8 ? ~(uint64_t)0 : ((uint64_t)1 << (esize[dt] * 8)) - 1;

    if (r < 2)
        return is_float(dt) ? special_float(k, dt) : special_int(k, dt);
    if (r == 2 || !is_float(dt))
        return next64(k) & mask;
    struct fmt f = fmt_of(dt);
    uint64_t bias = ((uint64_t)1 << (f.exp_bits - 1)) - 1;
    uint64_t e = bias - 3 + next(k) % 5;    /* 2^-3 .. 2^1 */
    uint64_t sign = (uint64_t)(next(k) & 1) << (f.exp_bits + f.man_bits);

    return sign | e << f.man_bits | (next64(k) & (((uint64_t)1 << f.man_bits) - 1));
}

/* a at random; b at random, or a's value, or a's value negated (equal
 * keys and ±0 for MIN/MAX, x - x and Inf - Inf for SUM). */
static void fill(struct kcheck *k, weft_dtype_t dt, size_t count)
{
    uint64_t sign = (uint64_t)1 << (esize[dt] * 8 - 1);

    for (size_t i = 0; i < count; i++) {
        uint64_t a = element(k, dt), b = element(k, dt);

        switch (next(k) % 16) {
        case 0: b = a; break;
        case 1: b = is_float(dt) ? a ^ sign : (0 - a) & (sign | (sign - 1)); break;
        }
        put(k->ha, i, dt, a);
        put(k->hb, i, dt, b);
    }
}

/* ---------------------------------------------------------- the driver */

static int cu_failed(struct kcheck *k, CUresult rc, const char *call)
{
    char err[160];

    weft__cudrv_err_text(&k->drv, rc, err, sizeof(err));
    fprintf(k->out, "kcheck: %s failed: %s\n", call, err);
    return -1;
}

#define CU(call)                                                                   \
    do {                                                                           \
        CUresult cu_rc_ = (call);                                                  \
        if (cu_rc_ != CUDA_SUCCESS)                                                \
            return cu_failed(k, cu_rc_, #call);                                    \
    } while (0)

static int to_dev(struct kcheck *k, CUdeviceptr d, const void *h, size_t bytes)
{
    CU(k->drv.fn.cuMemcpyHtoD(d, h, bytes));
    return 0;
}

/* Waits for the stream, then copies back. */
static int from_dev(struct kcheck *k, void *h, CUdeviceptr d, size_t bytes)
{
    CU(k->drv.fn.cuStreamSynchronize(k->stream));
    CU(k->drv.fn.cuMemcpyDtoH(h, d, bytes));
    return 0;
}

int kcheck_up(struct kcheck *k, const weft_transport_v1_t *tp,
              const weft_transport_core_t *core, const char *last_error, FILE *out, char *why,
              size_t cap)
{
    size_t bytes = (size_t)KCHECK_MAX_COUNT * 8;
    const struct wcu_fns *f;
    weft_result_t r;
    CUresult rc;

    memset(k, 0, sizeof(*k));
    k->tp = tp;
    k->last_error = last_error;
    k->out = out;
    k->rng = 0x9e3779b9u;
    if ((r = tp->init(core, &k->ctx)) != WEFT_SUCCESS) {
        snprintf(why, cap, "the cuda-ipc plugin's init failed: %s", weft_strerror(r));
        return -1;
    }
    if (weft__cudrv_open(&k->drv, core, "kcheck", why, cap) != WCU_OK)
        goto err_finalize;
    f = &k->drv.fn;
    if ((rc = f->cuDeviceGet(&k->dev, ((const struct cipc_ctx *)k->ctx)->dev.ordinal)) ||
        (rc = f->cuDevicePrimaryCtxRetain(&k->primary, k->dev)) ||
        (rc = f->cuCtxSetCurrent(k->primary)) || (rc = f->cuMemAlloc(&k->da, bytes)) ||
        (rc = f->cuMemAlloc(&k->db, bytes)) || (rc = f->cuMemAlloc(&k->dd, bytes)) ||
        (rc = f->cuStreamCreate(&k->stream, CU_STREAM_NON_BLOCKING))) {
        char err[160];

        weft__cudrv_err_text(&k->drv, rc, err, sizeof(err));
        snprintf(why, cap, "setting up the device buffers: %s", err);
        goto err_close;
    }
    k->ha = malloc(bytes);
    k->hb = malloc(bytes);
    k->got = malloc(bytes);
    k->want = malloc(bytes);
    k->orig = malloc(bytes);
    if (!k->ha || !k->hb || !k->got || !k->want || !k->orig) {
        snprintf(why, cap, "out of host memory");
        goto err_close;
    }
    return 0;

err_close:
    kcheck_down(k);
    return -1;
err_finalize:
    tp->finalize(k->ctx);
    return -1;
}

void kcheck_down(struct kcheck *k)
{
    const struct wcu_fns *f = &k->drv.fn;

    if (k->stream)
        f->cuStreamDestroy(k->stream);
    if (k->da)
        f->cuMemFree(k->da);
    if (k->db)
        f->cuMemFree(k->db);
    if (k->dd)
        f->cuMemFree(k->dd);
    free(k->ha);
    free(k->hb);
    free(k->got);
    free(k->want);
    free(k->orig);
    k->tp->finalize(k->ctx);
    if (k->primary)
        f->cuDevicePrimaryCtxRelease(k->dev);
    weft__cudrv_close(&k->drv);
    k->ha = k->hb = k->got = k->want = k->orig = NULL;
}

/* ------------------------------------------------------- the comparisons */

/* Both NaN, in the format of dt? (the scaling exception) */
static int nan_bits(uint64_t v, weft_dtype_t dt)
{
    struct fmt f = fmt_of(dt);
    uint64_t abs = v & ((((uint64_t)1 << (f.exp_bits + f.man_bits)) - 1));

    return is_float(dt) && abs > ((((uint64_t)1 << f.exp_bits) - 1) << f.man_bits);
}

static uint64_t quieted(uint64_t v, weft_dtype_t dt)
{
    return v | (uint64_t)1 << (fmt_of(dt).man_bits - 1);
}

/* Counts and tells the elements where got and want differ; scalar, for
 * the scaling, allows its exception. */
static long compare(struct kcheck *k, const char *what, weft_dtype_t dt, size_t count,
                    const uint64_t *scalar)
{
    long bad = 0;
    int w = (int)esize[dt] * 2;

    for (size_t i = 0; i < count; i++) {
        uint64_t g = get(k->got, i, dt), want = get(k->want, i, dt);

        if (g == want)
            continue;
        if (scalar && nan_bits(*scalar, dt) && nan_bits(get(k->orig, i, dt), dt) &&
            (g == quieted(*scalar, dt) || g == quieted(get(k->orig, i, dt), dt)) &&
            (want == quieted(*scalar, dt) || want == quieted(get(k->orig, i, dt), dt))) {
            k->exceptions++;
            continue;
        }
        if (bad < TELL_MAX)
            fprintf(k->out, "kcheck: %s: element %zu: a %0*llx b %0*llx: GPU %0*llx, host %0*llx\n",
                    what, i, w, (unsigned long long)get(k->orig, i, dt), w,
                    (unsigned long long)get(k->hb, i, dt), w, (unsigned long long)g, w,
                    (unsigned long long)want);
        bad++;
    }
    if (bad > TELL_MAX)
        fprintf(k->out, "kcheck: %s: %ld elements differ in all\n", what, bad);
    k->checks++;
    k->mismatches += bad;
    return bad;
}

static const struct cipc_ctx *plugin(const struct kcheck *k)
{
    return k->ctx;
}

static long refused(struct kcheck *k, const char *what, weft_result_t r)
{
    fprintf(k->out, "kcheck: %s: the plugin refused: %s: %s\n", what, weft_strerror(r),
            k->last_error ? k->last_error : "");
    return -1;
}

long kcheck_reduce(struct kcheck *k, weft_dtype_t dt, weft_op_t op, size_t count, int in_place)
{
    size_t bytes = count * esize[dt];
    CUdeviceptr dst = in_place ? k->da : k->dd;
    char what[96];
    weft_result_t r;

    snprintf(what, sizeof(what), "%s %s, %zu elements%s", dt_names[dt], op_names[op], count,
             in_place ? ", in place" : "");
    fill(k, dt, count);
    memcpy(k->orig, k->ha, bytes);
    if (to_dev(k, k->da, k->ha, bytes) || to_dev(k, k->db, k->hb, bytes))
        return -1;
    r = weft__cuda_ipc_reduce(plugin(k), k->stream, (void *)(uintptr_t)dst,
                              (void *)(uintptr_t)k->da, (void *)(uintptr_t)k->db, count, dt, op);
    if (r != WEFT_SUCCESS)
        return refused(k, what, r);
    if (from_dev(k, k->got, dst, bytes))
        return -1;
    /* the host in place too, where the GPU was */
    memcpy(k->want, k->ha, bytes);
    weft__reduce(k->want, in_place ? k->want : k->ha, k->hb, count, dt, op);
    return compare(k, what, dt, count, NULL);
}

long kcheck_avg(struct kcheck *k, weft_dtype_t dt, size_t count, int nranks)
{
    size_t bytes = count * esize[dt];
    char what[96];
    weft_result_t r;

    snprintf(what, sizeof(what), "%s AVG's finish over %d ranks, %zu elements", dt_names[dt],
             nranks, count);
    fill(k, dt, count);
    memcpy(k->orig, k->ha, bytes);
    if (to_dev(k, k->da, k->ha, bytes))
        return -1;
    r = weft__cuda_ipc_reduce_avg(plugin(k), k->stream, (void *)(uintptr_t)k->da, count, dt,
                                  nranks);
    if (r != WEFT_SUCCESS)
        return refused(k, what, r);
    if (from_dev(k, k->got, k->da, bytes))
        return -1;
    memcpy(k->want, k->ha, bytes);
    weft__reduce_avg_finish(k->want, count, dt, nranks);
    return compare(k, what, dt, count, NULL);
}

/* which_scalar: 0 one, 1 a half, 2 -3, 3 a NaN with a payload, 4 -Inf,
 * 5 -0 (or 0), 6 a subnormal (or 7), 7 the extreme (max or minimum), 8
 * and up random bits. */
long kcheck_scale(struct kcheck *k, weft_dtype_t dt, size_t count, int which_scalar)
{
    size_t bytes = count * esize[dt];
    unsigned char scalar[8] = { 0 };
    uint64_t s;
    char what[96];
    weft_result_t r;

    if (is_float(dt)) {
        struct fmt f = fmt_of(dt);
        uint64_t one = ((((uint64_t)1 << (f.exp_bits - 1)) - 1)) << f.man_bits;
        uint64_t sign = (uint64_t)1 << (f.exp_bits + f.man_bits);
        uint64_t exp_all = (((uint64_t)1 << f.exp_bits) - 1) << f.man_bits;
        uint64_t quiet = (uint64_t)1 << (f.man_bits - 1);
        uint64_t values[8] = { one, one - ((uint64_t)1 << f.man_bits),
                               sign | (one + ((uint64_t)1 << f.man_bits)) | quiet,
                               exp_all | quiet | 5, sign | exp_all, sign, 3,
                               (exp_all - ((uint64_t)1 << f.man_bits)) | (quiet * 2 - 1) };
        s = which_scalar < 8 ? values[which_scalar] : next64(k);
    } else {
        int bits = (int)esize[dt] * 8;
        uint64_t top = (uint64_t)1 << (bits - 1);
        uint64_t values[8] = { 1, 2, (0 - (uint64_t)3), top - 1, top, 0, 7, top + 1 };
        s = which_scalar < 8 ? values[which_scalar] : next64(k);
    }
    if (esize[dt] < 8)
        s &= ((uint64_t)1 << (esize[dt] * 8)) - 1;
    memcpy(scalar, &s, esize[dt]);
    snprintf(what, sizeof(what), "%s PREMUL_SUM's scaling by %0*llx, %zu elements", dt_names[dt],
             (int)esize[dt] * 2, (unsigned long long)s, count);
    fill(k, dt, count);
    memcpy(k->orig, k->ha, bytes);
    if (to_dev(k, k->da, k->ha, bytes))
        return -1;
    r = weft__cuda_ipc_reduce_scale(plugin(k), k->stream, (void *)(uintptr_t)k->dd,
                                    (void *)(uintptr_t)k->da, count, dt, scalar);
    if (r != WEFT_SUCCESS)
        return refused(k, what, r);
    if (from_dev(k, k->got, k->dd, bytes))
        return -1;
    weft__op_scale(k->want, k->ha, count, dt, scalar);
    return compare(k, what, dt, count, &s);
}

long kcheck_run(struct kcheck *k, unsigned groups)
{
    static const size_t counts[] = { 1, 1000, KCHECK_MAX_COUNT };
    static const int nranks[] = { 1, 2, 3, 7, 200 };
    long bad = 0, r;

#define ADD(call)                                                                  \
    do {                                                                           \
        if ((r = (call)) < 0)                                                      \
            return -1;                                                             \
        bad += r;                                                                  \
    } while (0)

    for (int dt = 0; dt < WEFT_DTYPE_COUNT; dt++) {
        if (groups & KCHECK_REDUCE) {
            for (int op = 0; op <= WEFT_BXOR; op++) {
                if (is_float(dt) && op >= WEFT_BAND)
                    continue;
                for (size_t c = 0; c < sizeof(counts) / sizeof(counts[0]); c++)
                    ADD(kcheck_reduce(k, dt, op, counts[c], 0));
                ADD(kcheck_reduce(k, dt, op, 1000, 1));
            }
        }
        if (groups & KCHECK_AVG) {
            for (size_t n = 0; n < sizeof(nranks) / sizeof(nranks[0]); n++)
                ADD(kcheck_avg(k, dt, 1000, nranks[n]));
            ADD(kcheck_avg(k, dt, KCHECK_MAX_COUNT, 3));
        }
        if (groups & KCHECK_SCALE) {
            for (int s = 0; s < 10; s++)
                ADD(kcheck_scale(k, dt, 1000, s));
            ADD(kcheck_scale(k, dt, KCHECK_MAX_COUNT, 10));
        }
    }
#undef ADD
    return bad;
}
