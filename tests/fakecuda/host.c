/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * host.c: page-locked host memory: cuMemAllocHost, cuMemFreeHost,
 * cuMemHostRegister, cuMemHostUnregister, cuMemHostGetDevicePointer.
 * Nothing is locked in RAM (a test needs no RLIMIT_MEMLOCK); the double
 * only records the ranges, which is what pointer attributes, copies and
 * memops look at. With unified addressing the device pointer of host
 * memory is its host address.
 */
#include "config.h"

#include <stdlib.h>
#include <sys/mman.h>

#include "tests/fakecuda/fakecuda.h"

static CUresult record(enum fc_kind kind, void *p, size_t size, struct CUctx_st *ctx)
{
    struct fc_alloc *a = calloc(1, sizeof(*a));
    if (!a)
        return CUDA_ERROR_OUT_OF_MEMORY;
    a->kind = kind;
    a->base = (uintptr_t)p;
    a->size = size;
    a->span = size;
    a->alias = p;
    a->fd = -1;
    a->ipc_fd = -1;
    a->dev = ctx->dev;
    a->ctx = ctx;
    CUresult r = CUDA_SUCCESS;
    pthread_mutex_lock(&fc.lock);
    /* ranges of one process do not overlap: a registration that touches
     * a known one is refused, as the reference says */
    for (struct fc_alloc *o = fc.allocs; o; o = o->next)
        if (o->base < a->base + size && a->base < o->base + o->size)
            r = CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED;
    if (!r) {
        a->buffer_id = fc.next_buffer_id++;
        a->next = fc.allocs;
        fc.allocs = a;
    }
    pthread_mutex_unlock(&fc.lock);
    if (r)
        free(a);
    return r;
}

FC_API CUresult cuMemAllocHost_v2(void **pp, size_t bytesize)
{
    FC_FAULT("cuMemAllocHost_v2");
    struct CUctx_st *ctx;
    CUresult r = fc_ctx_ready(&ctx);
    if (r)
        return r;
    if (!pp || bytesize == 0)
        return CUDA_ERROR_INVALID_VALUE;
    void *p = mmap(NULL, fc_round(bytesize), PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED)
        return CUDA_ERROR_OUT_OF_MEMORY;
    if ((r = record(FC_HOST_ALLOC, p, bytesize, ctx))) {
        munmap(p, fc_round(bytesize));
        return r;
    }
    *pp = p;
    return CUDA_SUCCESS;
}

FC_API CUresult cuMemFreeHost(void *p)
{
    FC_FAULT("cuMemFreeHost");
    CUresult r = fc_ctx_ready(NULL);
    if (r)
        return r;
    struct fc_alloc *a = fc_unlink((uintptr_t)p, FC_HOST_ALLOC);
    if (!a)
        return CUDA_ERROR_INVALID_VALUE;
    munmap(p, fc_round(a->size));
    free(a);
    return CUDA_SUCCESS;
}

FC_API CUresult cuMemHostRegister_v2(void *p, size_t bytesize, unsigned int Flags)
{
    FC_FAULT("cuMemHostRegister_v2");
    struct CUctx_st *ctx;
    CUresult r = fc_ctx_ready(&ctx);
    if (r)
        return r;
    unsigned known = CU_MEMHOSTREGISTER_PORTABLE | CU_MEMHOSTREGISTER_DEVICEMAP |
                     CU_MEMHOSTREGISTER_IOMEMORY | CU_MEMHOSTREGISTER_READ_ONLY;
    if (!p || bytesize == 0 || (Flags & ~known))
        return CUDA_ERROR_INVALID_VALUE;
    return record(FC_HOST_REGISTERED, p, bytesize, ctx);
}

/* The CUDA 4.0 entry point, which cuda.h hides behind the _v2 name. */
#undef cuMemHostRegister
FC_API CUresult cuMemHostRegister(void *p, size_t bytesize, unsigned int Flags);
FC_API CUresult cuMemHostRegister(void *p, size_t bytesize, unsigned int Flags)
{
    FC_FAULT("cuMemHostRegister");
    return cuMemHostRegister_v2(p, bytesize, Flags);
}

FC_API CUresult cuMemHostUnregister(void *p)
{
    FC_FAULT("cuMemHostUnregister");
    CUresult r = fc_ctx_ready(NULL);
    if (r)
        return r;
    if (!p)
        return CUDA_ERROR_INVALID_VALUE;
    struct fc_alloc *a = fc_unlink((uintptr_t)p, FC_HOST_REGISTERED);
    if (!a)
        return CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED;
    free(a);
    return CUDA_SUCCESS;
}

FC_API CUresult cuMemHostGetDevicePointer_v2(CUdeviceptr *pdptr, void *p, unsigned int Flags)
{
    FC_FAULT("cuMemHostGetDevicePointer_v2");
    CUresult r = fc_ctx_ready(NULL);
    if (r)
        return r;
    if (!pdptr || !p || Flags != 0)
        return CUDA_ERROR_INVALID_VALUE;
    pthread_mutex_lock(&fc.lock);
    struct fc_alloc *a = fc_find((uintptr_t)p);
    if (a && (a->kind == FC_HOST_ALLOC || a->kind == FC_HOST_REGISTERED))
        *pdptr = (CUdeviceptr)(uintptr_t)p;
    else
        r = CUDA_ERROR_INVALID_VALUE;
    pthread_mutex_unlock(&fc.lock);
    return r;
}
