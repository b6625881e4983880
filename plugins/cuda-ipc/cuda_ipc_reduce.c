/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * cuda_ipc_reduce.c: reductions on device buffers with weft's GPU kernels
 * (kernels/reduce.cu, embedded as a fatbin: kernels/cuda_ipc_fatbin.h).
 *
 * Loading. The module goes into the primary context, the one every
 * buffer and stream the plugin serves belongs to. Every way it can fail
 * (no fatbin built, a driver without cuModuleLoadData, no code for this
 * GPU's architecture, a kernel missing from the fatbin) leaves the
 * kernels off with one INFO line; the plugin works on without them.
 *
 * Launching. One kernel per dtype takes the op as an argument. Blocks of
 * 256 threads, as many as the elements need up to 4096: each thread
 * loops over the elements a grid's width apart, and 4096 x 256 threads
 * are more than any GPU holds at once (an H100 keeps 132 x 2048), so more
 * blocks would add only scheduling. Launches go on the caller's stream
 * and are not waited for, in order with the copies and memops the core
 * queues there.
 */
#include "config.h"

#include <stdio.h>
#include <string.h>

#include "plugins/cuda-ipc/cuda_ipc.h"
#include "plugins/cuda-ipc/kernels/cuda_ipc_fatbin.h"

#define BLOCK_THREADS 256u
#define MAX_BLOCKS 4096u

/* reduce.cu's name suffixes and element sizes, by weft_dtype_t. */
static const struct {
    const char *suffix;
    size_t size;
    int floating;
} types[WEFT_DTYPE_COUNT] = {
    [WEFT_INT8] = { "i8", 1, 0 },       [WEFT_UINT8] = { "u8", 1, 0 },
    [WEFT_INT32] = { "i32", 4, 0 },     [WEFT_UINT32] = { "u32", 4, 0 },
    [WEFT_INT64] = { "i64", 8, 0 },     [WEFT_UINT64] = { "u64", 8, 0 },
    [WEFT_FLOAT16] = { "f16", 2, 1 },   [WEFT_BFLOAT16] = { "bf16", 2, 1 },
    [WEFT_FLOAT32] = { "f32", 4, 1 },   [WEFT_FLOAT64] = { "f64", 8, 1 },
};

static const char *const kinds[3] = { "weft_reduce_", "weft_avg_", "weft_scale_" };

static CUfunction *slot(struct cipc_kernels *k, int kind, int dt)
{
    return kind == 0 ? &k->reduce[dt] : kind == 1 ? &k->avg[dt] : &k->scale[dt];
}

/* Fills c->kern with primary current; its why on failure. */
static int load_module(struct cipc_ctx *c)
{
    const struct wcu_fns *f = &c->drv.fn;
    struct cipc_kernels *k = &c->kern;
    char err[160], name[32];
    CUresult rc;

    rc = f->cuModuleLoadData(&k->module, weft__cuda_ipc_fatbin);
    if (rc != CUDA_SUCCESS) {
        weft__cudrv_err_text(&c->drv, rc, err, sizeof(err));
        snprintf(k->why, sizeof(k->why), "cuModuleLoadData failed: %s (the fatbin holds %s; "
                 "this GPU is sm_%d%d)", err, weft__cuda_ipc_fatbin_info, c->dev.cc_major,
                 c->dev.cc_minor);
        k->module = NULL;
        return -1;
    }
    for (int kind = 0; kind < 3; kind++) {
        for (int dt = 0; dt < WEFT_DTYPE_COUNT; dt++) {
            snprintf(name, sizeof(name), "%s%s", kinds[kind], types[dt].suffix);
            rc = f->cuModuleGetFunction(slot(k, kind, dt), k->module, name);
            if (rc == CUDA_SUCCESS)
                continue;
            weft__cudrv_err_text(&c->drv, rc, err, sizeof(err));
            snprintf(k->why, sizeof(k->why), "cuModuleGetFunction(%s) failed: %s", name, err);
            f->cuModuleUnload(k->module);
            memset(k, 0, offsetof(struct cipc_kernels, why));
            return -1;
        }
    }
    return 0;
}

void weft__cuda_ipc_reduce_load(struct cipc_ctx *c)
{
    const struct wcu_fns *f = &c->drv.fn;
    struct cipc_kernels *k = &c->kern;
    CUcontext prev = NULL;
    char err[160];
    CUresult rc;

    memset(k, 0, sizeof(*k));
    if (!weft__cuda_ipc_fatbin_size) {
        snprintf(k->why, sizeof(k->why), "weft was built without them (%s)",
                 weft__cuda_ipc_fatbin_info);
    } else if (!(c->drv.features & (1u << WCU_FEAT_LAUNCH))) {
        snprintf(k->why, sizeof(k->why), "%s", c->drv.feature_why[WCU_FEAT_LAUNCH]);
    } else if ((rc = f->cuCtxGetCurrent(&prev)) != CUDA_SUCCESS ||
               (rc = f->cuCtxSetCurrent(c->primary)) != CUDA_SUCCESS) {
        weft__cudrv_err_text(&c->drv, rc, err, sizeof(err));
        snprintf(k->why, sizeof(k->why), "cannot make the primary context current: %s", err);
    } else {
        load_module(c);
        /* The thread that called weft_init gets its own context back. */
        f->cuCtxSetCurrent(prev);
    }
    if (k->module)
        c->core->log(WEFT_TRANSPORT_LOG_INFO, CIPC_NAME, "kernels: %d loaded for sm_%d%d "
                     "(the fatbin holds %s)", 3 * WEFT_DTYPE_COUNT, c->dev.cc_major,
                     c->dev.cc_minor, weft__cuda_ipc_fatbin_info);
    else
        c->core->log(WEFT_TRANSPORT_LOG_INFO, CIPC_NAME, "kernels off: %s; device reductions "
                     "stage through host memory", k->why);
}

void weft__cuda_ipc_reduce_unload(struct cipc_ctx *c)
{
    const struct wcu_fns *f = &c->drv.fn;
    CUcontext prev = NULL;
    CUresult rc;

    if (!c->kern.module)
        return;
    /* the module belongs to the primary context: unload it there */
    if (f->cuCtxGetCurrent(&prev) == CUDA_SUCCESS &&
        f->cuCtxSetCurrent(c->primary) == CUDA_SUCCESS) {
        rc = f->cuModuleUnload(c->kern.module);
        if (rc != CUDA_SUCCESS) {
            char err[160];

            weft__cudrv_err_text(&c->drv, rc, err, sizeof(err));
            c->core->log(WEFT_TRANSPORT_LOG_WARN, CIPC_NAME, "cuModuleUnload failed: %s", err);
        }
        f->cuCtxSetCurrent(prev);
    }
    memset(&c->kern, 0, sizeof(c->kern));
}

/* The checks every entry point makes; WEFT_SUCCESS or the error set. */
static weft_result_t check(const struct cipc_ctx *c, const char *fn, weft_dtype_t dt,
                           const void *p, const void *q, const void *r)
{
    const void *ptrs[3] = { p, q, r };

    if (!c->kern.module) {
        c->core->set_error("%s: no GPU kernels: %s", fn, c->kern.why);
        return WEFT_ERR_UNSUPPORTED;
    }
    if ((unsigned)dt >= WEFT_DTYPE_COUNT) {
        c->core->set_error("%s: dt %d is not a weft_dtype_t", fn, (int)dt);
        return WEFT_ERR_INVALID_ARG;
    }
    /* a GPU faults on a misaligned load, where the host kernels do not */
    for (int i = 0; i < 3; i++) {
        if ((uintptr_t)ptrs[i] % types[dt].size) {
            c->core->set_error("%s: %p is not aligned to the %zu bytes of an element", fn,
                               ptrs[i], types[dt].size);
            return WEFT_ERR_INVALID_ARG;
        }
    }
    return WEFT_SUCCESS;
}

static weft_result_t launch(const struct cipc_ctx *c, CUstream s, CUfunction fn,
                            const char *kind, weft_dtype_t dt, size_t count, void **params)
{
    size_t blocks = (count + BLOCK_THREADS - 1) / BLOCK_THREADS;
    weft_result_t r;
    CUresult rc;
    char call[64];

    if ((r = weft__cuda_ipc_device_ready(c)) != WEFT_SUCCESS)
        return r;
    if (blocks > MAX_BLOCKS)
        blocks = MAX_BLOCKS;
    rc = c->drv.fn.cuLaunchKernel(fn, (unsigned)blocks, 1, 1, BLOCK_THREADS, 1, 1, 0, s,
                                  params, NULL);
    if (rc != CUDA_SUCCESS) {
        snprintf(call, sizeof(call), "cuLaunchKernel(%s%s)", kind, types[dt].suffix);
        return weft__cuda_ipc_err_report(c, rc, call);
    }
    return WEFT_SUCCESS;
}

weft_result_t weft__cuda_ipc_reduce(const struct cipc_ctx *c, CUstream s, void *dst,
                                    const void *a, const void *b, size_t count,
                                    weft_dtype_t dt, weft_op_t op)
{
    unsigned long long n = count;
    int iop = (int)op;
    CUdeviceptr d = (uintptr_t)dst, x = (uintptr_t)a, y = (uintptr_t)b;
    void *params[] = { &d, &x, &y, &n, &iop };
    weft_result_t r;

    if ((r = check(c, "weft__cuda_ipc_reduce", dt, dst, a, b)) != WEFT_SUCCESS)
        return r;
    if ((unsigned)op > WEFT_BXOR || (types[dt].floating && op >= WEFT_BAND)) {
        c->core->set_error("weft__cuda_ipc_reduce: op %d is not a built-in operator of "
                           "dt %d", (int)op, (int)dt);
        return WEFT_ERR_INVALID_ARG;
    }
    if (!count)
        return WEFT_SUCCESS;
    return launch(c, s, c->kern.reduce[dt], kinds[0], dt, count, params);
}

weft_result_t weft__cuda_ipc_reduce_avg(const struct cipc_ctx *c, CUstream s, void *buf,
                                        size_t count, weft_dtype_t dt, int nranks)
{
    unsigned long long n = count;
    CUdeviceptr p = (uintptr_t)buf;
    void *params[] = { &p, &n, &nranks };
    weft_result_t r;

    if ((r = check(c, "weft__cuda_ipc_reduce_avg", dt, buf, NULL, NULL)) != WEFT_SUCCESS)
        return r;
    if (nranks <= 0) {
        c->core->set_error("weft__cuda_ipc_reduce_avg: nranks %d is not positive", nranks);
        return WEFT_ERR_INVALID_ARG;
    }
    if (!count)
        return WEFT_SUCCESS;
    return launch(c, s, c->kern.avg[dt], kinds[1], dt, count, params);
}

/* The kernel's last parameter is one element of dt: the driver copies
 * that many bytes from where params[3] points, the scalar as op.c keeps
 * it. */
weft_result_t weft__cuda_ipc_reduce_scale(const struct cipc_ctx *c, CUstream s, void *dst,
                                          const void *src, size_t count, weft_dtype_t dt,
                                          const unsigned char scalar[8])
{
    unsigned long long n = count;
    CUdeviceptr d = (uintptr_t)dst, x = (uintptr_t)src;
    void *params[] = { &d, &x, &n, (void *)scalar };
    weft_result_t r;

    if ((r = check(c, "weft__cuda_ipc_reduce_scale", dt, dst, src, NULL)) != WEFT_SUCCESS)
        return r;
    if (!count)
        return WEFT_SUCCESS;
    return launch(c, s, c->kern.scale[dt], kinds[2], dt, count, params);
}
