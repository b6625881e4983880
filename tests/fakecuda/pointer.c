/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * pointer.c: cuPointerGetAttribute and cuPointerGetAttributes for the
 * attributes a transport asks about. As the reference says, the single
 * query fails with CUDA_ERROR_INVALID_VALUE for memory CUDA does not
 * know, while cuPointerGetAttributes succeeds and leaves every attribute
 * at its null value (zero: memory type 0, context NULL, ...). Legacy
 * allocations (cuMemAlloc) cannot be exported with
 * cuMemExportToShareableHandle, so ALLOWED_HANDLE_TYPES is 0 for them;
 * for a VMM mapping it is the requestedHandleTypes of its cuMemCreate.
 * A VMM mapping was allocated in no context (CONTEXT is NULL) and is not
 * legacy-IPC capable; its range is the mapping's.
 * An attribute the double does not emulate is CUDA_ERROR_NOT_SUPPORTED.
 */
#include "config.h"

#include <string.h>

#include "tests/fakecuda/fakecuda.h"

/* Writes attribute ATTR of A (NULL: unknown memory) at DATA; MANY for
 * cuPointerGetAttributes, which gives null values rather than errors.
 * Called with fc.lock held. */
static CUresult attribute(struct fc_alloc *a, CUpointer_attribute attr, void *data, uintptr_t ptr,
                          bool many)
{
    bool dev = a && (a->kind == FC_DEVICE || a->kind == FC_IPC_IMPORT || a->kind == FC_VMM);
    switch (attr) {
    case CU_POINTER_ATTRIBUTE_CONTEXT:
        *(CUcontext *)data = a ? a->ctx : NULL;
        break;
    case CU_POINTER_ATTRIBUTE_MEMORY_TYPE:
        *(unsigned int *)data = !a ? 0 : dev ? CU_MEMORYTYPE_DEVICE : CU_MEMORYTYPE_HOST;
        break;
    case CU_POINTER_ATTRIBUTE_DEVICE_POINTER:
        *(CUdeviceptr *)data = a ? ptr : 0;
        break;
    case CU_POINTER_ATTRIBUTE_HOST_POINTER:
        /* device memory has no host address */
        if (a && dev && !many)
            return CUDA_ERROR_INVALID_VALUE;
        *(void **)data = a && !dev ? (void *)ptr : NULL;
        break;
    case CU_POINTER_ATTRIBUTE_BUFFER_ID:
        *(unsigned long long *)data = a ? a->buffer_id : 0;
        break;
    case CU_POINTER_ATTRIBUTE_IS_MANAGED:
    case CU_POINTER_ATTRIBUTE_SYNC_MEMOPS:
        *(unsigned int *)data = 0;
        break;
    case CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL:
        *(int *)data = a ? a->dev : 0;
        break;
    case CU_POINTER_ATTRIBUTE_IS_LEGACY_CUDA_IPC_CAPABLE:
        *(unsigned int *)data = a && a->kind == FC_DEVICE && !fc.no_ipc;
        break;
    case CU_POINTER_ATTRIBUTE_RANGE_START_ADDR:
        *(CUdeviceptr *)data = a ? a->base : 0;
        break;
    case CU_POINTER_ATTRIBUTE_RANGE_SIZE:
        *(size_t *)data = a ? a->size : 0;
        break;
    case CU_POINTER_ATTRIBUTE_MAPPED:
        *(unsigned int *)data = a != NULL;
        break;
    case CU_POINTER_ATTRIBUTE_ALLOWED_HANDLE_TYPES:
        *(unsigned long long *)data = a && a->kind == FC_VMM ? a->phys->types : 0;
        break;
    default:
        return CUDA_ERROR_NOT_SUPPORTED;
    }
    return CUDA_SUCCESS;
}

FC_API CUresult cuPointerGetAttribute(void *data, CUpointer_attribute attribute_, CUdeviceptr ptr)
{
    FC_FAULT("cuPointerGetAttribute");
    CUresult r = fc_ready();
    if (r)
        return r;
    if (!data)
        return CUDA_ERROR_INVALID_VALUE;
    pthread_mutex_lock(&fc.lock);
    struct fc_alloc *a = fc_find(ptr);
    r = a ? attribute(a, attribute_, data, ptr, false) : CUDA_ERROR_INVALID_VALUE;
    pthread_mutex_unlock(&fc.lock);
    return r;
}

FC_API CUresult cuPointerGetAttributes(unsigned int numAttributes, CUpointer_attribute *attributes,
                                       void **data, CUdeviceptr ptr)
{
    FC_FAULT("cuPointerGetAttributes");
    CUresult r = fc_ready();
    if (r)
        return r;
    if (!numAttributes || !attributes || !data)
        return CUDA_ERROR_INVALID_VALUE;
    pthread_mutex_lock(&fc.lock);
    struct fc_alloc *a = fc_find(ptr);
    for (unsigned i = 0; i < numAttributes && !r; i++) {
        if (!data[i])
            r = CUDA_ERROR_INVALID_VALUE;
        else
            r = attribute(a, attributes[i], data[i], ptr, true);
    }
    pthread_mutex_unlock(&fc.lock);
    return r;
}
