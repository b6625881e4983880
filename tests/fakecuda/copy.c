/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * copy.c: cuMemcpy*, cuMemsetD8 and their Async forms. Each is an
 * operation on a stream (stream.c); the synchronous ones go on the NULL
 * stream and wait for it, so they are ordered with the work of blocking
 * streams as the legacy default stream is. Addresses are checked when
 * the call is made: a device side that is not inside one allocation, or
 * a host side that is device memory, is CUDA_ERROR_INVALID_VALUE. The
 * generic cuMemcpy takes either kind on either side (unified
 * addressing). Asynchronous copies from pageable host memory are as
 * asynchronous as any other here, which is stricter than the driver.
 */
#include "config.h"

#include <stdlib.h>

#include "tests/fakecuda/fakecuda.h"

/* Queues the op on HSTREAM; SYNC waits for it. */
static CUresult submit(struct fc_op *op, CUstream hStream, bool sync)
{
    struct CUctx_st *ctx;
    struct CUstream_st *s;
    CUresult r = fc_ctx_ready(&ctx);
    if (r || (r = fc_stream_get(sync ? NULL : hStream, ctx, &s)))
        return r;
    uint64_t seq;
    if ((r = fc_enqueue(s, op, &seq)))
        return r;
    if (sync)
        fc_stream_wait(s, seq);
    return CUDA_SUCCESS;
}

static CUresult copy(CUdeviceptr dst, enum fc_where dw, CUdeviceptr src, enum fc_where sw,
                     size_t n, CUstream hStream, bool sync)
{
    CUresult r = fc_ctx_ready(NULL);
    if (r)
        return r;
    if (n == 0)
        return CUDA_SUCCESS;
    struct fc_op op = { .kind = FC_OP_COPY, .n = n };
    op.dst = fc_resolve(dst, n, dw);
    op.src = fc_resolve(src, n, sw);
    if (!op.dst || !op.src)
        return CUDA_ERROR_INVALID_VALUE;
    return submit(&op, hStream, sync);
}

FC_API CUresult cuMemcpy(CUdeviceptr dst, CUdeviceptr src, size_t ByteCount)
{
    FC_FAULT("cuMemcpy");
    return copy(dst, FC_ANY, src, FC_ANY, ByteCount, NULL, true);
}

FC_API CUresult cuMemcpyHtoD_v2(CUdeviceptr dstDevice, const void *srcHost, size_t ByteCount)
{
    FC_FAULT("cuMemcpyHtoD_v2");
    return copy(dstDevice, FC_ON_DEVICE, (uintptr_t)srcHost, FC_ON_HOST, ByteCount, NULL, true);
}

FC_API CUresult cuMemcpyDtoH_v2(void *dstHost, CUdeviceptr srcDevice, size_t ByteCount)
{
    FC_FAULT("cuMemcpyDtoH_v2");
    return copy((uintptr_t)dstHost, FC_ON_HOST, srcDevice, FC_ON_DEVICE, ByteCount, NULL, true);
}

FC_API CUresult cuMemcpyDtoD_v2(CUdeviceptr dstDevice, CUdeviceptr srcDevice, size_t ByteCount)
{
    FC_FAULT("cuMemcpyDtoD_v2");
    return copy(dstDevice, FC_ON_DEVICE, srcDevice, FC_ON_DEVICE, ByteCount, NULL, true);
}

FC_API CUresult cuMemcpyAsync(CUdeviceptr dst, CUdeviceptr src, size_t ByteCount, CUstream hStream)
{
    FC_FAULT("cuMemcpyAsync");
    return copy(dst, FC_ANY, src, FC_ANY, ByteCount, hStream, false);
}

FC_API CUresult cuMemcpyHtoDAsync_v2(CUdeviceptr dstDevice, const void *srcHost, size_t ByteCount,
                                     CUstream hStream)
{
    FC_FAULT("cuMemcpyHtoDAsync_v2");
    return copy(dstDevice, FC_ON_DEVICE, (uintptr_t)srcHost, FC_ON_HOST, ByteCount, hStream, false);
}

FC_API CUresult cuMemcpyDtoHAsync_v2(void *dstHost, CUdeviceptr srcDevice, size_t ByteCount,
                                     CUstream hStream)
{
    FC_FAULT("cuMemcpyDtoHAsync_v2");
    return copy((uintptr_t)dstHost, FC_ON_HOST, srcDevice, FC_ON_DEVICE, ByteCount, hStream, false);
}

FC_API CUresult cuMemcpyDtoDAsync_v2(CUdeviceptr dstDevice, CUdeviceptr srcDevice, size_t ByteCount,
                                     CUstream hStream)
{
    FC_FAULT("cuMemcpyDtoDAsync_v2");
    return copy(dstDevice, FC_ON_DEVICE, srcDevice, FC_ON_DEVICE, ByteCount, hStream, false);
}

/* cuMemsetD8 takes device memory and, with unified addressing, the
 * device pointer of page-locked host memory. */
static CUresult set8(CUdeviceptr dst, unsigned char uc, size_t n, CUstream hStream, bool sync)
{
    CUresult r = fc_ctx_ready(NULL);
    if (r)
        return r;
    if (n == 0)
        return CUDA_SUCCESS;
    struct fc_op op = { .kind = FC_OP_SET8, .n = n, .value = uc };
    if (!(op.dst = fc_resolve(dst, n, FC_KNOWN)))
        return CUDA_ERROR_INVALID_VALUE;
    return submit(&op, hStream, sync);
}

FC_API CUresult cuMemsetD8_v2(CUdeviceptr dstDevice, unsigned char uc, size_t N)
{
    FC_FAULT("cuMemsetD8_v2");
    return set8(dstDevice, uc, N, NULL, true);
}

FC_API CUresult cuMemsetD8Async(CUdeviceptr dstDevice, unsigned char uc, size_t N, CUstream hStream)
{
    FC_FAULT("cuMemsetD8Async");
    return set8(dstDevice, uc, N, hStream, false);
}
