/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * memop.c: stream memory operations, cuStreamWriteValue32 and
 * cuStreamWaitValue32 (the _v2 entry points cuda.h maps them to). The address must be memory the
 * double knows: device memory, its own or imported, or page-locked host
 * memory by its device pointer; anything else, or a misaligned word, is
 * CUDA_ERROR_INVALID_VALUE. A wait polls the word, which another
 * process may write through an IPC mapping of the same memfd.
 * WEFT_FAKECUDA_FAULTS=nomemops makes both CUDA_ERROR_NOT_SUPPORTED.
 */
#include "config.h"

#include "tests/fakecuda/fakecuda.h"

static CUresult memop(enum fc_op_kind kind, CUstream hStream, CUdeviceptr addr,
                      cuuint32_t value, unsigned int flags)
{
    struct CUctx_st *ctx;
    CUresult r = fc_ctx_ready(&ctx);
    if (r)
        return r;
    if (fc.no_memops)
        return CUDA_ERROR_NOT_SUPPORTED;
    if (addr % 4)
        return CUDA_ERROR_INVALID_VALUE;
    if (kind == FC_OP_WRITE32 && (flags & ~(unsigned)CU_STREAM_WRITE_VALUE_NO_MEMORY_BARRIER))
        return CUDA_ERROR_INVALID_VALUE;
    if (kind == FC_OP_WAIT32 &&
        ((flags & 0xf) > CU_STREAM_WAIT_VALUE_NOR || (flags & ~(0xfu | CU_STREAM_WAIT_VALUE_FLUSH))))
        return CUDA_ERROR_INVALID_VALUE;
    struct fc_op op = { .kind = kind, .n = 4, .value = value, .flags = flags };
    if (!(op.dst = fc_resolve(addr, 4, FC_KNOWN)))
        return CUDA_ERROR_INVALID_VALUE;
    struct CUstream_st *s;
    if ((r = fc_stream_get(hStream, ctx, &s)))
        return r;
    return fc_enqueue(s, &op, NULL);
}

FC_API CUresult cuStreamWriteValue32_v2(CUstream stream, CUdeviceptr addr, cuuint32_t value,
                                        unsigned int flags)
{
    FC_FAULT("cuStreamWriteValue32_v2");
    return memop(FC_OP_WRITE32, stream, addr, value, flags);
}

FC_API CUresult cuStreamWaitValue32_v2(CUstream stream, CUdeviceptr addr, cuuint32_t value,
                                       unsigned int flags)
{
    FC_FAULT("cuStreamWaitValue32_v2");
    return memop(FC_OP_WAIT32, stream, addr, value, flags);
}
