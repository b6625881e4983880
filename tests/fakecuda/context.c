/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * context.c: primary contexts and the calling thread's current context.
 * Only primary contexts exist (no cuCtxCreate). A primary context is
 * usable while retained; made current and then released to zero, it
 * gives CUDA_ERROR_CONTEXT_IS_DESTROYED. Its memory and streams are
 * kept when it is released (the driver frees them; a program that uses
 * them after the last release is wrong either way).
 */
#include "config.h"

#include <stddef.h>

#include "tests/fakecuda/fakecuda.h"

/* The current context is a per-thread setting, as in the driver. */
static __thread struct CUctx_st *current;

struct CUctx_st *fc_current(void)
{
    return current;
}

FC_API CUresult cuDevicePrimaryCtxRetain(CUcontext *pctx, CUdevice dev)
{
    FC_FAULT("cuDevicePrimaryCtxRetain");
    CUresult r = fc_ready();
    if (r)
        return r;
    if (!pctx)
        return CUDA_ERROR_INVALID_VALUE;
    if (dev < 0 || dev >= fc.ndevices)
        return CUDA_ERROR_INVALID_DEVICE;
    pthread_mutex_lock(&fc.lock);
    fc.dev[dev].primary.retained++;
    pthread_mutex_unlock(&fc.lock);
    *pctx = &fc.dev[dev].primary;
    return CUDA_SUCCESS;
}

FC_API CUresult cuDevicePrimaryCtxRelease_v2(CUdevice dev)
{
    FC_FAULT("cuDevicePrimaryCtxRelease_v2");
    CUresult r = fc_ready();
    if (r)
        return r;
    if (dev < 0 || dev >= fc.ndevices)
        return CUDA_ERROR_INVALID_DEVICE;
    pthread_mutex_lock(&fc.lock);
    if (fc.dev[dev].primary.retained > 0)
        fc.dev[dev].primary.retained--;
    else
        r = CUDA_ERROR_INVALID_CONTEXT;
    pthread_mutex_unlock(&fc.lock);
    return r;
}

FC_API CUresult cuDevicePrimaryCtxGetState(CUdevice dev, unsigned int *flags, int *active)
{
    FC_FAULT("cuDevicePrimaryCtxGetState");
    CUresult r = fc_ready();
    if (r)
        return r;
    if (!flags || !active)
        return CUDA_ERROR_INVALID_VALUE;
    if (dev < 0 || dev >= fc.ndevices)
        return CUDA_ERROR_INVALID_DEVICE;
    pthread_mutex_lock(&fc.lock);
    *flags = 0;
    *active = fc.dev[dev].primary.retained > 0;
    pthread_mutex_unlock(&fc.lock);
    return CUDA_SUCCESS;
}

FC_API CUresult cuCtxSetCurrent(CUcontext ctx)
{
    FC_FAULT("cuCtxSetCurrent");
    CUresult r = fc_ready();
    if (r)
        return r;
    if (ctx && ctx->magic != FC_MAGIC_CTX)
        return CUDA_ERROR_INVALID_CONTEXT;
    current = ctx;
    return CUDA_SUCCESS;
}

FC_API CUresult cuCtxGetCurrent(CUcontext *pctx)
{
    FC_FAULT("cuCtxGetCurrent");
    CUresult r = fc_ready();
    if (r)
        return r;
    if (!pctx)
        return CUDA_ERROR_INVALID_VALUE;
    *pctx = current;
    return CUDA_SUCCESS;
}

FC_API CUresult cuCtxGetDevice(CUdevice *device)
{
    FC_FAULT("cuCtxGetDevice");
    struct CUctx_st *c;
    CUresult r = fc_ctx_ready(&c);
    if (r)
        return r;
    if (!device)
        return CUDA_ERROR_INVALID_VALUE;
    *device = c->dev;
    return CUDA_SUCCESS;
}

/* Waits for every stream of the current context, the NULL stream too. */
FC_API CUresult cuCtxSynchronize(void)
{
    FC_FAULT("cuCtxSynchronize");
    struct CUctx_st *c;
    CUresult r = fc_ctx_ready(&c);
    if (r)
        return r;
    pthread_mutex_lock(&fc.lock);
    struct CUstream_st *first = c->streams;
    pthread_mutex_unlock(&fc.lock);
    /* streams are never freed and are pushed at the head: the list from
     * FIRST on stays valid without the lock */
    for (struct CUstream_st *s = first; s; s = s->next) {
        pthread_mutex_lock(&s->lock);
        uint64_t seq = s->queued;
        pthread_mutex_unlock(&s->lock);
        fc_stream_wait(s, seq);
    }
    return CUDA_SUCCESS;
}

/* The CUDA 13.0 forms take the context; NULL means the current one. */
FC_API CUresult cuCtxGetDevice_v2(CUdevice *device, CUcontext ctx)
{
    FC_FAULT("cuCtxGetDevice_v2");
    if (!ctx)
        return cuCtxGetDevice(device);
    CUresult r = fc_ready();
    if (r)
        return r;
    if (ctx->magic != FC_MAGIC_CTX)
        return CUDA_ERROR_INVALID_CONTEXT;
    if (!device)
        return CUDA_ERROR_INVALID_VALUE;
    *device = ctx->dev;
    return CUDA_SUCCESS;
}

FC_API CUresult cuCtxSynchronize_v2(CUcontext ctx)
{
    FC_FAULT("cuCtxSynchronize_v2");
    if (ctx && ctx != current) {
        CUresult r = fc_ready();
        if (r)
            return r;
        if (ctx->magic != FC_MAGIC_CTX)
            return CUDA_ERROR_INVALID_CONTEXT;
        struct CUctx_st *saved = current;
        current = ctx;
        r = cuCtxSynchronize();
        current = saved;
        return r;
    }
    return cuCtxSynchronize();
}

/* The CUDA 7.0 entry point, which cuda.h hides behind the _v2 name. */
#undef cuDevicePrimaryCtxRelease
FC_API CUresult cuDevicePrimaryCtxRelease(CUdevice dev);
FC_API CUresult cuDevicePrimaryCtxRelease(CUdevice dev)
{
    FC_FAULT("cuDevicePrimaryCtxRelease");
    return cuDevicePrimaryCtxRelease_v2(dev);
}
