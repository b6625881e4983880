/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * contract_ptr.c: the contract test's checks of pointer attributes, the
 * one cuPointerGetAttributes call by which weft tells device memory from
 * page-locked and plain host memory, and by whose buffer id it keeps
 * registrations apart (plugins/cuda-common/cudrv_ptr.c).
 *
 * What the reference promises, and is checked: device memory is DEVICE
 * of ordinal 0, not managed, legacy-IPC capable when made by cuMemAlloc;
 * the range of any pointer into an allocation starts at the allocation
 * (its size at least what was asked); a buffer id is unique in the
 * process over its lifetime, even for an address reused after a free;
 * cuMemAllocHost and cuMemHostRegister memory is HOST; and memory CUDA
 * does not know gives CUDA_SUCCESS with every attribute at its null
 * value from cuPointerGetAttributes but CUDA_ERROR_INVALID_VALUE from
 * cuPointerGetAttribute. weft also reads CUDA_ERROR_INVALID_CONTEXT as
 * "not CUDA's", so either answer passes as "not-cuda". What it leaves
 * open (the ordinal and IPC capability of host memory, a freed pointer)
 * is informational. Whether a freed address was reused is the
 * allocator's business and is never printed.
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/gpu/contract.h"

#define CT_PTR_BYTES ((size_t)65536 + 12)

CUresult ct_ptr_query(CUdeviceptr p, struct ct_ptr *a)
{
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
        &a->memory_type, &a->is_managed, &a->ordinal, &a->buffer_id, &a->legacy_ipc,
        &a->handle_types, &a->start, &a->size,
    };

    memset(a, 0, sizeof(*a));
    return cu.cuPointerGetAttributes((unsigned)(sizeof(attrs) / sizeof(attrs[0])), attrs, data, p);
}

const char *ct_memory_type(unsigned int t)
{
    static char buf[16];

    switch (t) {
    case CU_MEMORYTYPE_HOST: return "HOST";
    case CU_MEMORYTYPE_DEVICE: return "DEVICE";
    case CU_MEMORYTYPE_ARRAY: return "ARRAY";
    case CU_MEMORYTYPE_UNIFIED: return "UNIFIED";
    }
    snprintf(buf, sizeof(buf), "%u", t);
    return buf;
}

static const char *range_start(const struct ct_ptr *a, CUdeviceptr base)
{
    return a->start == base ? "base" : a->start ? "other" : "zero";
}

static const char *id_diff(unsigned long long id, unsigned long long a, unsigned long long b)
{
    return id == a || id == b ? "same_id" : "new_id";
}

/* cuMemAlloc memory, a pointer into it, and buffer ids across a free. */
static void device_memory(void)
{
    size_t n = CT_PTR_BYTES;
    CUdeviceptr d, d2, d3;
    struct ct_ptr a, in, a2, a3;
    CUresult r;

    if ((r = cu.cuMemAlloc(&d, n))) {
        ct_check("pattr-device", "CUDA_SUCCESS", "cuMemAlloc %s", ct_err(r));
        return;
    }
    r = ct_ptr_query(d, &a);
    ct_check("pattr-device", "CUDA_SUCCESS", "%s", ct_err(r));
    ct_check("pattr-device-memory-type", "DEVICE", "%s", ct_memory_type(a.memory_type));
    ct_check("pattr-device-managed", "0", "%u", a.is_managed);
    ct_check("pattr-device-ordinal", "0", "%d", a.ordinal);
    ct_check("pattr-device-legacy-ipc", "1", "%u", a.legacy_ipc);
    ct_check("pattr-device-range-start", "base", "%s", range_start(&a, d));
    ct_check("pattr-device-range-size", ">=requested", "%s",
             a.size >= n ? ">=requested" : "<requested");
    ct_info("pattr-device-handle-types", "%llu", a.handle_types);

    r = ct_ptr_query(d + 4099, &in);
    ct_check("pattr-interior", "CUDA_SUCCESS", "%s", ct_err(r));
    ct_check("pattr-interior-memory-type", "DEVICE", "%s", ct_memory_type(in.memory_type));
    ct_check("pattr-interior-buffer-id", "same", "%s",
             in.buffer_id == a.buffer_id ? "same" : "different");
    ct_check("pattr-interior-range-start", "base", "%s", range_start(&in, d));

    if ((r = cu.cuMemAlloc(&d2, n))) {
        ct_check("pattr-buffer-id-second", "new_id", "cuMemAlloc %s", ct_err(r));
        goto out_free;
    }
    ct_ptr_query(d2, &a2);
    ct_check("pattr-buffer-id-second", "new_id", "%s", id_diff(a2.buffer_id, a.buffer_id, 0));
    /* the next allocation of this size may well get d2's address back */
    cu.cuMemFree(d2);
    if ((r = cu.cuMemAlloc(&d3, n))) {
        ct_check("pattr-buffer-id-realloc", "new_id", "cuMemAlloc %s", ct_err(r));
        goto out_free;
    }
    ct_ptr_query(d3, &a3);
    ct_check("pattr-buffer-id-realloc", "new_id", "%s",
             id_diff(a3.buffer_id, a.buffer_id, a2.buffer_id));
    cu.cuMemFree(d3);
    r = ct_ptr_query(d3, &a3);
    ct_info("pattr-after-free", "%s memory_type=%s", ct_err(r), ct_memory_type(a3.memory_type));
out_free:
    cu.cuMemFree(d);
}

/* Memory CUDA never saw: what weft must read as plain host memory. */
static void plain_memory(void)
{
    unsigned char *p = malloc(CT_PTR_BYTES);
    unsigned int type = 0;
    struct ct_ptr a;
    CUresult r;

    if (!p) {
        ct_fail("pattr-malloc", "out of host memory");
        return;
    }
    memset(p, 1, CT_PTR_BYTES);
    r = ct_ptr_query((CUdeviceptr)(uintptr_t)p, &a);
    ct_check("pattr-malloc", "not-cuda", "%s",
             (r == CUDA_SUCCESS && a.memory_type == 0 && !a.is_managed) ||
                     r == CUDA_ERROR_INVALID_CONTEXT
                 ? "not-cuda"
             : r ? ct_err(r)
                 : ct_memory_type(a.memory_type));
    ct_info("pattr-malloc-result", "%s memory_type=%s ordinal=%d", ct_err(r),
            ct_memory_type(a.memory_type), a.ordinal);
    r = cu.cuPointerGetAttribute(&type, CU_POINTER_ATTRIBUTE_MEMORY_TYPE,
                                 (CUdeviceptr)(uintptr_t)p);
    ct_check("pattr-malloc-single", "CUDA_ERROR_INVALID_VALUE", "%s", ct_err(r));
    free(p);
}

/* Page-locked host memory, allocated by the driver and registered. */
static void host_memory(void)
{
    size_t n = 1 << 16;
    void *h, *p = NULL;
    struct ct_ptr a;
    CUresult r;

    if ((r = cu.cuMemAllocHost(&h, CT_PTR_BYTES))) {
        ct_check("pattr-host-alloc", "CUDA_SUCCESS", "cuMemAllocHost %s", ct_err(r));
    } else {
        r = ct_ptr_query((CUdeviceptr)(uintptr_t)h + 100, &a);
        ct_check("pattr-host-alloc", "CUDA_SUCCESS", "%s", ct_err(r));
        ct_check("pattr-host-alloc-memory-type", "HOST", "%s", ct_memory_type(a.memory_type));
        ct_check("pattr-host-alloc-managed", "0", "%u", a.is_managed);
        ct_info("pattr-host-alloc-ordinal", "%d", a.ordinal);
        ct_info("pattr-host-alloc-legacy-ipc", "%u", a.legacy_ipc);
        ct_info("pattr-host-alloc-range-start", "%s", range_start(&a, (uintptr_t)h));
        cu.cuMemFreeHost(h);
    }

    if (posix_memalign(&p, 4096, n)) {
        ct_fail("pattr-host-registered", "posix_memalign failed");
        return;
    }
    memset(p, 0, n);
    if ((r = cu.cuMemHostRegister(p, n, 0))) {
        ct_check("pattr-host-registered", "CUDA_SUCCESS", "cuMemHostRegister %s", ct_err(r));
    } else {
        r = ct_ptr_query((CUdeviceptr)(uintptr_t)p + 100, &a);
        ct_check("pattr-host-registered", "CUDA_SUCCESS", "%s", ct_err(r));
        ct_check("pattr-host-registered-memory-type", "HOST", "%s",
                 ct_memory_type(a.memory_type));
        ct_info("pattr-host-registered-ordinal", "%d", a.ordinal);
        ct_info("pattr-host-registered-range-start", "%s", range_start(&a, (uintptr_t)p));
        cu.cuMemHostUnregister(p);
    }
    free(p);
}

void ct_check_pointers(void)
{
    device_memory();
    plain_memory();
    host_memory();
}
