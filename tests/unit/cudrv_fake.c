/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * cudrv_fake.c: a fake libcuda for the unit tests of plugins/cuda-common's
 * loader only (test_cudrv_sym.c). It is not a CUDA test double: it runs
 * no kernels and moves no bytes, and most functions it hands out only
 * return CUDA_ERROR_NOT_SUPPORTED. What it does do is what the loader
 * depends on: cuGetProcAddress_v2 picks, per base name, the newest
 * variant introduced at or before the version asked for, answers
 * SYMBOL_NOT_FOUND and VERSION_NOT_SUFFICIENT as the driver's
 * documentation describes, and refuses versions newer than its own; the
 * device queries and cuPointerGetAttributes answer from small tables.
 *
 * Built once per kind of library the loader must take or refuse:
 *   FAKE_NO_OPTIONAL  lacks the VMM group and cuMemGetHandleForAddressRange
 *   FAKE_NO_IPC       lacks cuIpcGetMemHandle, a required function
 *   FAKE_MARKED       exports weft_fakecuda_test_double
 *   FAKE_NO_GPA2      has only the CUDA 11 cuGetProcAddress
 * and at run time by FAKE_CUDA_VERSION (its driver version, 13000),
 * FAKE_CUDA_DEVICES (1) and FAKE_CUDA_INIT (what cuInit returns, 0).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cuda.h>

/* Exported for the tests: the variant last called ("cuCtxGetDevice@2000")
 * and the flags of the last cuGetProcAddress. */
__attribute__((visibility("default"))) const char *fake_cuda_last_call = "";
__attribute__((visibility("default"))) unsigned long long fake_cuda_last_flags;
#ifdef FAKE_MARKED
__attribute__((visibility("default"))) int weft_fakecuda_test_double = 7;
#endif

/* What cuMemAlloc and cuMemAllocHost hand out, and the pointer table
 * reads. */
static char dev_mem[4096], host_mem[4096];

static int env_int(const char *name, int def)
{
    const char *s = getenv(name);

    return s && *s ? atoi(s) : def;
}

static CUresult unimplemented(void)
{
    fake_cuda_last_call = "unimplemented";
    return CUDA_ERROR_NOT_SUPPORTED;
}

static CUresult f_init(unsigned int flags)
{
    (void)flags;
    fake_cuda_last_call = "cuInit@2000";
    return (CUresult)env_int("FAKE_CUDA_INIT", CUDA_SUCCESS);
}

static CUresult f_driver_version(int *v)
{
    *v = env_int("FAKE_CUDA_VERSION", 13000);
    return CUDA_SUCCESS;
}

static CUresult f_error_name(CUresult rc, const char **s)
{
    switch (rc) {
    case CUDA_ERROR_NO_DEVICE: *s = "CUDA_ERROR_NO_DEVICE"; return CUDA_SUCCESS;
    case CUDA_ERROR_INVALID_VALUE: *s = "CUDA_ERROR_INVALID_VALUE"; return CUDA_SUCCESS;
    case CUDA_ERROR_OPERATING_SYSTEM: *s = "CUDA_ERROR_OPERATING_SYSTEM"; return CUDA_SUCCESS;
    default: return CUDA_ERROR_INVALID_VALUE;
    }
}

static CUresult f_error_string(CUresult rc, const char **s)
{
    if (rc != CUDA_ERROR_OPERATING_SYSTEM)
        return CUDA_ERROR_INVALID_VALUE;
    *s = "OS call failed or operation not supported on this OS";
    return CUDA_SUCCESS;
}

static CUresult f_device_count(int *n)
{
    *n = env_int("FAKE_CUDA_DEVICES", 1);
    return CUDA_SUCCESS;
}

static CUresult f_device_get(CUdevice *dev, int ordinal)
{
    if (ordinal < 0 || ordinal >= env_int("FAKE_CUDA_DEVICES", 1))
        return CUDA_ERROR_INVALID_DEVICE;
    *dev = ordinal;
    return CUDA_SUCCESS;
}

static CUresult f_device_name(char *name, int len, CUdevice dev)
{
    snprintf(name, (size_t)len, "Fake GPU %d", (int)dev);
    return CUDA_SUCCESS;
}

/* The v1 UUID is all zeros, so a test sees which variant it got. */
static CUresult f_uuid_v1(CUuuid *u, CUdevice dev)
{
    (void)dev;
    memset(u, 0, sizeof(*u));
    return CUDA_SUCCESS;
}

static CUresult f_uuid_v2(CUuuid *u, CUdevice dev)
{
    for (int i = 0; i < 16; i++)
        u->bytes[i] = (char)(0x10 * (dev + 1) + i);
    return CUDA_SUCCESS;
}

static CUresult f_pci(char *id, int len, CUdevice dev)
{
    snprintf(id, (size_t)len, "0000:%02x:00.0", 0x18 + (int)dev);
    return CUDA_SUCCESS;
}

/* Device 0 has everything the inventory reads; device 1 none of the
 * features, and an attribute the fake does not know reads as an older
 * driver's CUDA_ERROR_INVALID_VALUE. */
static CUresult f_attribute(int *v, CUdevice_attribute a, CUdevice dev)
{
    switch (a) {
    case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR: *v = 9; return CUDA_SUCCESS;
    case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR: *v = 0; return CUDA_SUCCESS;
    case CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED:
    case CU_DEVICE_ATTRIBUTE_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR_SUPPORTED:
    case CU_DEVICE_ATTRIBUTE_DMA_BUF_SUPPORTED:
    case CU_DEVICE_ATTRIBUTE_UNIFIED_ADDRESSING:
    case CU_DEVICE_ATTRIBUTE_GPU_DIRECT_RDMA_SUPPORTED:
        *v = dev == 0;
        return CUDA_SUCCESS;
    default:
        return CUDA_ERROR_INVALID_VALUE;
    }
}

static CUresult f_ctx_get_device_v1(CUdevice *dev)
{
    fake_cuda_last_call = "cuCtxGetDevice@2000";
    *dev = 0;
    return CUDA_SUCCESS;
}

static CUresult f_ctx_get_device_v2(CUdevice *dev, CUcontext ctx)
{
    (void)ctx;
    fake_cuda_last_call = "cuCtxGetDevice@13000";
    *dev = 0;
    return CUDA_SUCCESS;
}

static CUresult f_mem_alloc_v1(unsigned int *p, unsigned int size)
{
    (void)p;
    (void)size;
    fake_cuda_last_call = "cuMemAlloc@2000";
    return CUDA_ERROR_NOT_SUPPORTED;
}

static CUresult f_mem_alloc_v2(CUdeviceptr *p, size_t size)
{
    fake_cuda_last_call = "cuMemAlloc@3020";
    if (size > sizeof(dev_mem))
        return CUDA_ERROR_OUT_OF_MEMORY;
    *p = (CUdeviceptr)(uintptr_t)dev_mem;
    return CUDA_SUCCESS;
}

static CUresult f_mem_alloc_host(void **p, size_t size)
{
    if (size > sizeof(host_mem))
        return CUDA_ERROR_OUT_OF_MEMORY;
    *p = host_mem;
    return CUDA_SUCCESS;
}

static int inside(CUdeviceptr p, const char *base, size_t len)
{
    return p >= (uintptr_t)base && p < (uintptr_t)base + len;
}

/* Device memory on device 0 (buffer 11, IPC-capable), pinned host memory
 * (buffer 12); anything else as the documentation says: CUDA_SUCCESS
 * with the outputs left alone, or CUDA_ERROR_INVALID_CONTEXT under
 * FAKE_CUDA_PTR_CONTEXT_ERROR=1. */
static CUresult f_pointer_attributes(unsigned int n, CUpointer_attribute *attrs, void **data,
                                     CUdeviceptr p)
{
    int dev = inside(p, dev_mem, sizeof(dev_mem));
    int host = inside(p, host_mem, sizeof(host_mem));
    const char *base = dev ? dev_mem : host_mem;

    if (!dev && !host)
        return env_int("FAKE_CUDA_PTR_CONTEXT_ERROR", 0) ? CUDA_ERROR_INVALID_CONTEXT
                                                         : CUDA_SUCCESS;
    for (unsigned int i = 0; i < n; i++) {
        switch (attrs[i]) {
        case CU_POINTER_ATTRIBUTE_MEMORY_TYPE:
            *(unsigned int *)data[i] = dev ? CU_MEMORYTYPE_DEVICE : CU_MEMORYTYPE_HOST;
            break;
        case CU_POINTER_ATTRIBUTE_IS_MANAGED: *(unsigned int *)data[i] = 0; break;
        case CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL: *(int *)data[i] = 0; break;
        case CU_POINTER_ATTRIBUTE_BUFFER_ID:
            *(unsigned long long *)data[i] = dev ? 11 : 12;
            break;
        case CU_POINTER_ATTRIBUTE_IS_LEGACY_CUDA_IPC_CAPABLE:
            *(unsigned int *)data[i] = dev;
            break;
        case CU_POINTER_ATTRIBUTE_ALLOWED_HANDLE_TYPES:
            *(unsigned long long *)data[i] = 0;
            break;
        case CU_POINTER_ATTRIBUTE_RANGE_START_ADDR:
            *(CUdeviceptr *)data[i] = (CUdeviceptr)(uintptr_t)base;
            break;
        case CU_POINTER_ATTRIBUTE_RANGE_SIZE: *(size_t *)data[i] = sizeof(dev_mem); break;
        default: return CUDA_ERROR_INVALID_VALUE;
        }
    }
    return CUDA_SUCCESS;
}

#define U ((void *)unimplemented)

static const struct entry {
    const char *name;
    int since;                          /* CUDA version the variant appeared in */
    void *fn;
} table[] = {
    { "cuInit", 2000, (void *)f_init },
    { "cuDriverGetVersion", 2020, (void *)f_driver_version },
    { "cuGetErrorName", 6000, (void *)f_error_name },
    { "cuGetErrorString", 6000, (void *)f_error_string },
    { "cuDeviceGet", 2000, (void *)f_device_get },
    { "cuDeviceGetCount", 2000, (void *)f_device_count },
    { "cuDeviceGetName", 2000, (void *)f_device_name },
    { "cuDeviceGetUuid", 9020, (void *)f_uuid_v1 },
    { "cuDeviceGetUuid", 11040, (void *)f_uuid_v2 },
    { "cuDeviceGetAttribute", 2000, (void *)f_attribute },
    { "cuDeviceGetPCIBusId", 4010, (void *)f_pci },
    { "cuDevicePrimaryCtxRetain", 7000, U },
    { "cuDevicePrimaryCtxRelease", 7000, U },
    { "cuDevicePrimaryCtxRelease", 11000, U },
    { "cuCtxSetCurrent", 4000, U },
    { "cuCtxGetCurrent", 4000, U },
    { "cuCtxGetDevice", 2000, (void *)f_ctx_get_device_v1 },
    { "cuCtxGetDevice", 13000, (void *)f_ctx_get_device_v2 },
    { "cuMemAlloc", 2000, (void *)f_mem_alloc_v1 },
    { "cuMemAlloc", 3020, (void *)f_mem_alloc_v2 },
    { "cuMemFree", 3020, U },
    { "cuMemAllocHost", 3020, (void *)f_mem_alloc_host },
    { "cuMemFreeHost", 2000, U },
    { "cuMemHostRegister", 6050, U },
    { "cuMemHostUnregister", 4000, U },
    { "cuMemcpy", 4000, U },
    { "cuMemcpyAsync", 4000, U },
    { "cuMemcpyHtoD", 3020, U },
    { "cuMemcpyDtoH", 3020, U },
    { "cuMemsetD8", 3020, U },
    { "cuPointerGetAttribute", 4000, U },
    { "cuPointerGetAttributes", 7000, (void *)f_pointer_attributes },
#ifndef FAKE_NO_IPC
    { "cuIpcGetMemHandle", 4010, U },
#endif
    { "cuIpcOpenMemHandle", 11000, U },
    { "cuIpcCloseMemHandle", 4010, U },
    { "cuStreamCreate", 2000, U },
    { "cuStreamDestroy", 4000, U },
    { "cuStreamSynchronize", 2000, U },
    { "cuStreamQuery", 2000, U },
    { "cuStreamWaitEvent", 3020, U },
    { "cuEventCreate", 2000, U },
    { "cuEventRecord", 2000, U },
    { "cuEventSynchronize", 2000, U },
    { "cuEventQuery", 2000, U },
    { "cuEventDestroy", 4000, U },
    { "cuStreamWriteValue32", 11070, U },
    { "cuStreamWaitValue32", 11070, U },
#ifndef FAKE_NO_OPTIONAL
    { "cuMemGetHandleForAddressRange", 11070, U },
    { "cuMemCreate", 10020, U },
    { "cuMemExportToShareableHandle", 10020, U },
    { "cuMemImportFromShareableHandle", 10020, U },
    { "cuMemMap", 10020, U },
    { "cuMemSetAccess", 10020, U },
    { "cuMemAddressReserve", 10020, U },
    { "cuMemAddressFree", 10020, U },
    { "cuMemUnmap", 10020, U },
    { "cuMemRelease", 10020, U },
    { "cuMemRetainAllocationHandle", 11000, U },
#endif
    { "cuModuleLoadData", 2000, U },
    { "cuModuleUnload", 2000, U },
    { "cuModuleGetFunction", 2000, U },
    { "cuLaunchKernel", 4000, U },
};

static CUresult lookup(const char *symbol, void **pfn, int version, cuuint64_t flags,
                       CUdriverProcAddressQueryResult *status)
{
    const struct entry *best = NULL;
    int known = 0;

    fake_cuda_last_flags = flags;
    *pfn = NULL;
    if (version > env_int("FAKE_CUDA_VERSION", 13000))
        return CUDA_ERROR_INVALID_VALUE;
    for (size_t i = 0; i < sizeof(table) / sizeof(table[0]); i++) {
        if (strcmp(table[i].name, symbol) != 0)
            continue;
        known = 1;
        if (table[i].since <= version && (!best || table[i].since > best->since))
            best = &table[i];
    }
    if (best)
        *pfn = best->fn;
    if (status)
        *status = best ? CU_GET_PROC_ADDRESS_SUCCESS
                       : known ? CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT
                               : CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
    return CUDA_SUCCESS;
}

__attribute__((visibility("default"))) CUresult cuDriverGetVersion(int *v)
{
    return f_driver_version(v);
}

#ifdef FAKE_NO_GPA2
#undef cuGetProcAddress
CUresult cuGetProcAddress(const char *symbol, void **pfn, int version, cuuint64_t flags);

__attribute__((visibility("default"))) CUresult cuGetProcAddress(const char *symbol, void **pfn,
                                                                 int version, cuuint64_t flags)
{
    return lookup(symbol, pfn, version, flags, NULL);
}
#else
__attribute__((visibility("default"))) CUresult cuGetProcAddress_v2(
    const char *symbol, void **pfn, int version, cuuint64_t flags,
    CUdriverProcAddressQueryResult *status)
{
    return lookup(symbol, pfn, version, flags, status);
}
#endif
