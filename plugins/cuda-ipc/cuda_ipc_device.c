/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * cuda_ipc_device.c: the device memory services (weft_transport_device_t)
 * the core uses to stage device buffers through host memory and to order
 * its work on the user's stream.
 *
 * Any thread calls these, concurrently and without the transport's lock
 * (weft/transport.h). Nothing here needs one: the context is read-only
 * after init, and the driver's calls are thread-safe. What a thread does
 * need is a current context, which is per thread in the driver: one
 * without (a thread of the core's, or a program's thread that never
 * touched CUDA) gets the retained primary context made current, and keeps
 * it, so later calls on that thread cost one cuCtxGetCurrent. A thread
 * with a context current keeps its own: under unified addressing copies
 * and pointer queries work from any context, and a stream carries its
 * context with it.
 *
 * Pointers and flags go to the driver as CUdeviceptr of the same value:
 * with unified addressing (init requires it) device and page-locked
 * host memory have one address in every context of the process.
 */
#include "config.h"

#include <stdio.h>

#include "plugins/cuda-ipc/cuda_ipc.h"

weft_result_t weft__cuda_ipc_device_ready(const struct cipc_ctx *c)
{
    CUcontext cur = NULL;
    CUresult rc;

    rc = c->drv.fn.cuCtxGetCurrent(&cur);
    if (rc != CUDA_SUCCESS)
        return weft__cuda_ipc_err_report(c, rc, "cuCtxGetCurrent");
    if (cur)
        return WEFT_SUCCESS;
    rc = c->drv.fn.cuCtxSetCurrent(c->primary);
    if (rc != CUDA_SUCCESS)
        return weft__cuda_ipc_err_report(c, rc, "cuCtxSetCurrent(primary context)");
    return WEFT_SUCCESS;
}

/* rc as weft's result, the driver's failure reported as call's. */
static weft_result_t result_of(const struct cipc_ctx *c, CUresult rc, const char *call)
{
    return rc == CUDA_SUCCESS ? WEFT_SUCCESS : weft__cuda_ipc_err_report(c, rc, call);
}

static CUdeviceptr dptr(const void *p)
{
    return (CUdeviceptr)(uintptr_t)p;
}

static weft_result_t cipc_mem_query(void *ctx, const void *ptr, int *mem_type, int *device)
{
    const struct cipc_ctx *c = ctx;
    char why[WCU_WHY_MAX];
    struct wcu_ptr p;
    weft_result_t r;

    if ((r = weft__cuda_ipc_device_ready(c)) != WEFT_SUCCESS)
        return r;
    if (weft__cudrv_ptr_query(&c->drv, ptr, &p, why, sizeof(why)) != 0) {
        c->core->set_error("%s", why);
        return WEFT_ERR_SYSTEM;
    }
    /* Page-locked and managed memory is host-readable: the core may copy
     * it with memcpy and hand it to any transport as host memory. */
    if (p.mem == WCU_MEM_DEVICE) {
        *mem_type = WEFT_TRANSPORT_MEM_CUDA;
        *device = p.ordinal;
    } else {
        *mem_type = WEFT_TRANSPORT_MEM_HOST;
        *device = -1;
    }
    return WEFT_SUCCESS;
}

/* A zero-length message is legal and needs no copy; the driver is not
 * asked, as it may reject a range of no bytes at an arbitrary address. */
static weft_result_t cipc_copy(void *ctx, void *dst, const void *src, size_t len)
{
    const struct cipc_ctx *c = ctx;
    weft_result_t r;
    CUresult rc;

    if (!len)
        return WEFT_SUCCESS;
    if ((r = weft__cuda_ipc_device_ready(c)) != WEFT_SUCCESS)
        return r;
    rc = c->drv.fn.cuMemcpy(dptr(dst), dptr(src), len);
    return result_of(c, rc, "cuMemcpy");
}

/* cuMemAllocHost memory is portable and mapped: every context may use
 * it, at its host address. */
static weft_result_t cipc_host_alloc(void *ctx, size_t len, void **ptr)
{
    const struct cipc_ctx *c = ctx;
    weft_result_t r;
    void *p;
    CUresult rc;

    if ((r = weft__cuda_ipc_device_ready(c)) != WEFT_SUCCESS)
        return r;
    rc = c->drv.fn.cuMemAllocHost(&p, len);
    if (rc != CUDA_SUCCESS)
        return weft__cuda_ipc_err_report(c, rc, "cuMemAllocHost");
    *ptr = p;
    return WEFT_SUCCESS;
}

static weft_result_t cipc_host_free(void *ctx, void *ptr)
{
    const struct cipc_ctx *c = ctx;
    weft_result_t r;
    CUresult rc;

    if (!ptr)
        return WEFT_SUCCESS;
    if ((r = weft__cuda_ipc_device_ready(c)) != WEFT_SUCCESS)
        return r;
    rc = c->drv.fn.cuMemFreeHost(ptr);
    return result_of(c, rc, "cuMemFreeHost");
}

/* cuStreamQuery is the cheapest call that validates a stream without
 * waiting for it: CUDA_ERROR_NOT_READY only says it has work queued. The
 * error names the user's argument (weft_comm_set_stream's cuda_stream),
 * since that is where a wrong stream comes from. */
static weft_result_t cipc_stream_check(void *ctx, void *stream, int *memops)
{
    const struct cipc_ctx *c = ctx;
    char err[160];
    weft_result_t r;
    CUresult rc;

    if ((r = weft__cuda_ipc_device_ready(c)) != WEFT_SUCCESS)
        return r;
    rc = c->drv.fn.cuStreamQuery((CUstream)stream);
    if (rc != CUDA_SUCCESS && rc != CUDA_ERROR_NOT_READY) {
        weft__cudrv_err_text(&c->drv, rc, err, sizeof(err));
        c->core->set_error("cuda_stream: %p is no stream this thread may use: cuStreamQuery "
                           "failed: %s", stream, err);
        return WEFT_ERR_INVALID_ARG;
    }
    *memops = c->memops;
    return WEFT_SUCCESS;
}

static weft_result_t cipc_stream_copy(void *ctx, void *stream, void *dst, const void *src,
                                      size_t len)
{
    const struct cipc_ctx *c = ctx;
    weft_result_t r;
    CUresult rc;

    if (!len)
        return WEFT_SUCCESS;
    if ((r = weft__cuda_ipc_device_ready(c)) != WEFT_SUCCESS)
        return r;
    rc = c->drv.fn.cuMemcpyAsync(dptr(dst), dptr(src), len, (CUstream)stream);
    return result_of(c, rc, "cuMemcpyAsync");
}

/* The default flags keep the write's memory barrier: whoever sees the
 * flag sees the stream's earlier copies done. */
static weft_result_t cipc_stream_write(void *ctx, void *stream, uint32_t *flag, uint32_t value)
{
    const struct cipc_ctx *c = ctx;
    weft_result_t r;
    CUresult rc;

    if ((r = weft__cuda_ipc_device_ready(c)) != WEFT_SUCCESS)
        return r;
    rc = c->drv.fn.cuStreamWriteValue32((CUstream)stream, dptr(flag), value,
                                        CU_STREAM_WRITE_VALUE_DEFAULT);
    return result_of(c, rc, "cuStreamWriteValue32");
}

/* GEQ is the driver's cyclic comparison, (int32_t)(*flag - value) >= 0,
 * the very one the ABI promises: a counter that wraps still compares
 * right. */
static weft_result_t cipc_stream_wait(void *ctx, void *stream, uint32_t *flag, uint32_t value)
{
    const struct cipc_ctx *c = ctx;
    weft_result_t r;
    CUresult rc;

    if ((r = weft__cuda_ipc_device_ready(c)) != WEFT_SUCCESS)
        return r;
    rc = c->drv.fn.cuStreamWaitValue32((CUstream)stream, dptr(flag), value,
                                       CU_STREAM_WAIT_VALUE_GEQ);
    return result_of(c, rc, "cuStreamWaitValue32");
}

static weft_result_t cipc_stream_sync(void *ctx, void *stream)
{
    const struct cipc_ctx *c = ctx;
    weft_result_t r;
    CUresult rc;

    if ((r = weft__cuda_ipc_device_ready(c)) != WEFT_SUCCESS)
        return r;
    rc = c->drv.fn.cuStreamSynchronize((CUstream)stream);
    return result_of(c, rc, "cuStreamSynchronize");
}

const weft_transport_device_t weft__cuda_ipc_device = {
    .struct_size = sizeof(weft_transport_device_t),
    .mem_query = cipc_mem_query,
    .copy = cipc_copy,
    .host_alloc = cipc_host_alloc,
    .host_free = cipc_host_free,
    .stream_check = cipc_stream_check,
    .stream_copy = cipc_stream_copy,
    .stream_write = cipc_stream_write,
    .stream_wait = cipc_stream_wait,
    .stream_sync = cipc_stream_sync,
    .features = weft__cuda_ipc_share_features,
    .ipc_export = weft__cuda_ipc_share_ipc_export,
    .ipc_open = weft__cuda_ipc_share_ipc_open,
    .ipc_close = weft__cuda_ipc_share_ipc_close,
    .stream_create = weft__cuda_ipc_share_stream_create,
    .stream_destroy = weft__cuda_ipc_share_stream_destroy,
    .stream_reduce = weft__cuda_ipc_share_stream_reduce,
    .stream_avg = weft__cuda_ipc_share_stream_avg,
};
