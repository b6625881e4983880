/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * cudrv_ptr.c: what kind of memory a buffer is, from one
 * cuPointerGetAttributes call (one trip into the driver per buffer, as
 * the transports ask for every message).
 *
 * Plain host memory: the driver's documentation says cuPointerGetAttributes,
 * unlike cuPointerGetAttribute, does not fail on a pointer that is no
 * CUDA pointer but leaves every attribute at its zero value and returns
 * CUDA_SUCCESS; and that it returns CUDA_ERROR_INVALID_CONTEXT when the
 * pointer is known to no context with unified addressing. Both are read
 * as host memory. Every output starts zeroed, so "no memory type" is 0,
 * and a boolean the driver writes in fewer bytes than an unsigned int
 * still reads right on this little-endian ABI. Anything else (the
 * driver deinitialised, a bad argument) is an error the caller reports.
 *
 * Managed memory reports CU_MEMORYTYPE_DEVICE or _HOST depending on where
 * its pages are, so IS_MANAGED is looked at first.
 */
#include "config.h"

#include <stdio.h>
#include <string.h>

#include "plugins/cuda-common/cudrv.h"

const char *weft__cudrv_ptr_mem_name(enum wcu_mem mem)
{
    switch (mem) {
    case WCU_MEM_HOST: return "host";
    case WCU_MEM_PINNED: return "pinned host";
    case WCU_MEM_DEVICE: return "device";
    case WCU_MEM_MANAGED: return "managed";
    }
    return "?";
}

void weft__cudrv_ptr_decode(const struct wcu_ptr_attrs *a, struct wcu_ptr *out)
{
    memset(out, 0, sizeof(*out));
    out->ordinal = -1;
    if (a->is_managed)
        out->mem = WCU_MEM_MANAGED;
    else if (a->memory_type == CU_MEMORYTYPE_DEVICE)
        out->mem = WCU_MEM_DEVICE;
    else if (a->memory_type == CU_MEMORYTYPE_HOST)
        out->mem = WCU_MEM_PINNED;
    else
        return;                         /* not CUDA's: nothing else applies */
    out->ordinal = a->ordinal;
    out->buffer_id = a->buffer_id;
    out->legacy_ipc = a->legacy_ipc != 0;
    out->handle_types = a->handle_types;
    out->start = (uintptr_t)a->start;
    out->size = a->size;
}

int weft__cudrv_ptr_query(const struct wcu_drv *d, const void *ptr, struct wcu_ptr *out,
                          char *why, size_t cap)
{
    struct wcu_ptr_attrs a;
    CUpointer_attribute attrs[] = {
        CU_POINTER_ATTRIBUTE_MEMORY_TYPE,
        CU_POINTER_ATTRIBUTE_IS_MANAGED,
        CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL,
        CU_POINTER_ATTRIBUTE_BUFFER_ID,
        CU_POINTER_ATTRIBUTE_IS_LEGACY_CUDA_IPC_CAPABLE,
        CU_POINTER_ATTRIBUTE_ALLOWED_HANDLE_TYPES,
        CU_POINTER_ATTRIBUTE_RANGE_START_ADDR,
        CU_POINTER_ATTRIBUTE_RANGE_SIZE,
    };
    void *data[] = {
        &a.memory_type, &a.is_managed, &a.ordinal, &a.buffer_id, &a.legacy_ipc,
        &a.handle_types, &a.start, &a.size,
    };
    char err[160];
    CUresult rc;

    _Static_assert(sizeof(attrs) / sizeof(attrs[0]) == sizeof(data) / sizeof(data[0]),
                   "one output per attribute");
    memset(&a, 0, sizeof(a));
    rc = d->fn.cuPointerGetAttributes((unsigned)(sizeof(attrs) / sizeof(attrs[0])), attrs, data,
                                      (CUdeviceptr)(uintptr_t)ptr);
    if (rc == CUDA_ERROR_INVALID_CONTEXT) {
        memset(&a, 0, sizeof(a));
        rc = CUDA_SUCCESS;
    }
    if (rc != CUDA_SUCCESS) {
        weft__cudrv_err_text(d, rc, err, sizeof(err));
        snprintf(why, cap, "cuPointerGetAttributes(%p) failed: %s", ptr, err);
        return -1;
    }
    weft__cudrv_ptr_decode(&a, out);
    return 0;
}
