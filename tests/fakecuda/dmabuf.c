/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * dmabuf.c: cuMemGetHandleForAddressRange with
 * CU_MEM_RANGE_HANDLE_TYPE_DMA_BUF_FD, the handle a NIC registers device
 * memory through (ibv_reg_dmabuf_mr).
 *
 * A real dma-buf needs a kernel exporter; the double has none, so the
 * descriptor it gives is a new open file of the allocation's memfd: a
 * real descriptor, mmap-able, whose offset 0 is the range's first byte
 * and whose pages are the very ones the device address means. That
 * holds only for a range that starts where its allocation (or VMM
 * mapping) starts, so any other start is CUDA_ERROR_NOT_SUPPORTED, said
 * on stderr. It is no dma-buf to the kernel: tests/swrdma takes it
 * because it knows the double's memfds (its README says so); a real NIC
 * driver would not.
 *
 * Errors from the reference: the address and size must be aligned to
 * the host page size and lie in one allocation, the handle type must be
 * the dma-buf one, and flags other than 0 and
 * CU_MEM_RANGE_FLAG_DMA_BUF_MAPPING_TYPE_PCIE are CUDA_ERROR_INVALID_VALUE.
 * The caller owns the descriptor and closes it.
 */
#include "config.h"

#include <fcntl.h>
#include <stdio.h>
#include <unistd.h>

#include "tests/fakecuda/fakecuda.h"

FC_API CUresult cuMemGetHandleForAddressRange(void *handle, CUdeviceptr dptr, size_t size,
                                              CUmemRangeHandleType handleType,
                                              unsigned long long flags)
{
    FC_FAULT("cuMemGetHandleForAddressRange");
    CUresult r = fc_ready();
    if (r)
        return r;
    size_t page = (size_t)sysconf(_SC_PAGESIZE);
    if (!handle || handleType != CU_MEM_RANGE_HANDLE_TYPE_DMA_BUF_FD ||
        (flags & ~(unsigned long long)CU_MEM_RANGE_FLAG_DMA_BUF_MAPPING_TYPE_PCIE) ||
        size == 0 || dptr % page || size % page)
        return CUDA_ERROR_INVALID_VALUE;
    pthread_mutex_lock(&fc.lock);
    struct fc_alloc *a = fc_find(dptr);
    int memfd = -1;
    if (!a || (a->kind != FC_DEVICE && a->kind != FC_VMM) || a->span - (dptr - a->base) < size)
        r = CUDA_ERROR_INVALID_VALUE;
    else if (dptr != a->base)
        r = CUDA_ERROR_NOT_SUPPORTED;
    else
        memfd = a->kind == FC_VMM ? a->phys->fd : a->fd;
    char path[64];
    snprintf(path, sizeof(path), "/proc/self/fd/%d", memfd);
    /* opened under the lock: a concurrent free would close MEMFD */
    int fd = r ? -1 : open(path, O_RDWR | O_CLOEXEC);
    pthread_mutex_unlock(&fc.lock);
    if (r == CUDA_ERROR_NOT_SUPPORTED)
        fc_log("cuMemGetHandleForAddressRange: the double exports only ranges that start "
               "where their allocation does");
    if (r)
        return r;
    if (fd < 0) {
        fc_log("cannot reopen %s: %m", path);
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    *(int *)handle = fd;
    return CUDA_SUCCESS;
}
