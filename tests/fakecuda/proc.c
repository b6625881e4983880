/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * proc.c: cuGetProcAddress. A caller asks for a base name ("cuMemAlloc")
 * and the CUDA version its code was written against; the driver answers
 * with the newest variant of that name introduced at or before that
 * version (cuMemAlloc at 3020 and later: cuMemAlloc_v2). The versions
 * below are those of cudaTypedefs.h's PFN_<name>_v<version> typedefs.
 * Where the driver also has an older variant the double does not
 * implement (the 32-bit cuMemAlloc of CUDA 2.0, the v1 memops of 8.0),
 * a version below the oldest one here finds the name "found but version
 * not sufficient". As the reference says: a version above the driver's
 * (13000) is CUDA_ERROR_INVALID_VALUE; a name or version with no
 * function is CUDA_SUCCESS with *pfn NULL and the reason in
 * *symbolStatus. The per-thread default stream is not emulated:
 * CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM is CUDA_ERROR_NOT_SUPPORTED.
 */
#include "config.h"

#include <string.h>

#include "tests/fakecuda/fakecuda.h"

/* The old entry points cuda.h renames, declared as the driver has them. */
#undef cuGetProcAddress
#undef cuDeviceGetUuid
#undef cuMemHostRegister
#undef cuIpcOpenMemHandle
#undef cuDevicePrimaryCtxRelease
FC_API CUresult cuGetProcAddress(const char *symbol, void **pfn, int cudaVersion, cuuint64_t flags);
CUresult cuDeviceGetUuid(CUuuid *uuid, CUdevice dev);
CUresult cuMemHostRegister(void *p, size_t bytesize, unsigned int Flags);
CUresult cuIpcOpenMemHandle(CUdeviceptr *pdptr, CUipcMemHandle handle, unsigned int Flags);
CUresult cuDevicePrimaryCtxRelease(CUdevice dev);

#define P(name, version, fn) { #name, version, (void *)fn }

/* Sorted by name, then version. */
static const struct proc {
    const char *name;
    int version;
    void *fn;
} procs[] = {
    P(cuCtxGetCurrent, 4000, cuCtxGetCurrent),
    P(cuCtxGetDevice, 2000, cuCtxGetDevice),
    P(cuCtxGetDevice, 13000, cuCtxGetDevice_v2),
    P(cuCtxSetCurrent, 4000, cuCtxSetCurrent),
    P(cuCtxSynchronize, 2000, cuCtxSynchronize),
    P(cuCtxSynchronize, 13000, cuCtxSynchronize_v2),
    P(cuDeviceGet, 2000, cuDeviceGet),
    P(cuDeviceGetAttribute, 2000, cuDeviceGetAttribute),
    P(cuDeviceGetCount, 2000, cuDeviceGetCount),
    P(cuDeviceGetName, 2000, cuDeviceGetName),
    P(cuDeviceGetPCIBusId, 4010, cuDeviceGetPCIBusId),
    P(cuDeviceGetUuid, 9020, cuDeviceGetUuid),
    P(cuDeviceGetUuid, 11040, cuDeviceGetUuid_v2),
    P(cuDevicePrimaryCtxGetState, 7000, cuDevicePrimaryCtxGetState),
    P(cuDevicePrimaryCtxRelease, 7000, cuDevicePrimaryCtxRelease),
    P(cuDevicePrimaryCtxRelease, 11000, cuDevicePrimaryCtxRelease_v2),
    P(cuDevicePrimaryCtxRetain, 7000, cuDevicePrimaryCtxRetain),
    P(cuDeviceTotalMem, 3020, cuDeviceTotalMem_v2),
    P(cuDriverGetVersion, 2020, cuDriverGetVersion),
    P(cuEventCreate, 2000, cuEventCreate),
    P(cuEventDestroy, 4000, cuEventDestroy_v2),
    P(cuEventQuery, 2000, cuEventQuery),
    P(cuEventRecord, 2000, cuEventRecord),
    P(cuEventSynchronize, 2000, cuEventSynchronize),
    P(cuGetErrorName, 6000, cuGetErrorName),
    P(cuGetErrorString, 6000, cuGetErrorString),
    P(cuGetProcAddress, 11030, cuGetProcAddress),
    P(cuGetProcAddress, 12000, cuGetProcAddress_v2),
    P(cuInit, 2000, cuInit),
    P(cuIpcCloseMemHandle, 4010, cuIpcCloseMemHandle),
    P(cuIpcGetEventHandle, 4010, cuIpcGetEventHandle),
    P(cuIpcGetMemHandle, 4010, cuIpcGetMemHandle),
    P(cuIpcOpenEventHandle, 4010, cuIpcOpenEventHandle),
    P(cuIpcOpenMemHandle, 4010, cuIpcOpenMemHandle),
    P(cuIpcOpenMemHandle, 11000, cuIpcOpenMemHandle_v2),
    P(cuLaunchKernel, 4000, cuLaunchKernel),
    P(cuMemAddressFree, 10020, cuMemAddressFree),
    P(cuMemAddressReserve, 10020, cuMemAddressReserve),
    P(cuMemAlloc, 3020, cuMemAlloc_v2),
    P(cuMemAllocHost, 3020, cuMemAllocHost_v2),
    P(cuMemCreate, 10020, cuMemCreate),
    P(cuMemExportToShareableHandle, 10020, cuMemExportToShareableHandle),
    P(cuMemFree, 3020, cuMemFree_v2),
    P(cuMemFreeHost, 2000, cuMemFreeHost),
    P(cuMemGetAddressRange, 3020, cuMemGetAddressRange_v2),
    P(cuMemGetAllocationGranularity, 10020, cuMemGetAllocationGranularity),
    P(cuMemGetHandleForAddressRange, 11070, cuMemGetHandleForAddressRange),
    P(cuMemGetInfo, 3020, cuMemGetInfo_v2),
    P(cuMemHostGetDevicePointer, 3020, cuMemHostGetDevicePointer_v2),
    P(cuMemHostRegister, 4000, cuMemHostRegister),
    P(cuMemHostRegister, 6050, cuMemHostRegister_v2),
    P(cuMemHostUnregister, 4000, cuMemHostUnregister),
    P(cuMemImportFromShareableHandle, 10020, cuMemImportFromShareableHandle),
    P(cuMemMap, 10020, cuMemMap),
    P(cuMemRelease, 10020, cuMemRelease),
    P(cuMemRetainAllocationHandle, 11000, cuMemRetainAllocationHandle),
    P(cuMemSetAccess, 10020, cuMemSetAccess),
    P(cuMemUnmap, 10020, cuMemUnmap),
    P(cuMemcpy, 4000, cuMemcpy),
    P(cuMemcpyAsync, 4000, cuMemcpyAsync),
    P(cuMemcpyDtoD, 3020, cuMemcpyDtoD_v2),
    P(cuMemcpyDtoDAsync, 3020, cuMemcpyDtoDAsync_v2),
    P(cuMemcpyDtoH, 3020, cuMemcpyDtoH_v2),
    P(cuMemcpyDtoHAsync, 3020, cuMemcpyDtoHAsync_v2),
    P(cuMemcpyHtoD, 3020, cuMemcpyHtoD_v2),
    P(cuMemcpyHtoDAsync, 3020, cuMemcpyHtoDAsync_v2),
    P(cuMemsetD8, 3020, cuMemsetD8_v2),
    P(cuMemsetD8Async, 3020, cuMemsetD8Async),
    P(cuModuleGetFunction, 2000, cuModuleGetFunction),
    P(cuModuleLoadData, 2000, cuModuleLoadData),
    P(cuModuleUnload, 2000, cuModuleUnload),
    P(cuPointerGetAttribute, 4000, cuPointerGetAttribute),
    P(cuPointerGetAttributes, 7000, cuPointerGetAttributes),
    P(cuStreamCreate, 2000, cuStreamCreate),
    P(cuStreamDestroy, 4000, cuStreamDestroy_v2),
    P(cuStreamGetFlags, 5050, cuStreamGetFlags),
    P(cuStreamQuery, 2000, cuStreamQuery),
    P(cuStreamSynchronize, 2000, cuStreamSynchronize),
    P(cuStreamWaitEvent, 3020, cuStreamWaitEvent),
    P(cuStreamWaitValue32, 11070, cuStreamWaitValue32_v2),
    P(cuStreamWriteValue32, 11070, cuStreamWriteValue32_v2),
};

FC_API CUresult cuGetProcAddress_v2(const char *symbol, void **pfn, int cudaVersion, cuuint64_t flags,
                                    CUdriverProcAddressQueryResult *symbolStatus)
{
    FC_FAULT("cuGetProcAddress_v2");
    if (!symbol || !pfn || cudaVersion > FC_DRIVER_VERSION ||
        (flags & ~(cuuint64_t)(CU_GET_PROC_ADDRESS_LEGACY_STREAM |
                               CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM)))
        return CUDA_ERROR_INVALID_VALUE;
    if (flags & CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM)
        return CUDA_ERROR_NOT_SUPPORTED;
    const struct proc *best = NULL;
    bool named = false;
    for (size_t i = 0; i < sizeof(procs) / sizeof(procs[0]); i++) {
        if (strcmp(procs[i].name, symbol))
            continue;
        named = true;
        if (procs[i].version <= cudaVersion)
            best = &procs[i];
    }
    *pfn = best ? best->fn : NULL;
    if (symbolStatus)
        *symbolStatus = best ? CU_GET_PROC_ADDRESS_SUCCESS
                        : named ? CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT
                                : CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
    return CUDA_SUCCESS;
}

FC_API CUresult cuGetProcAddress(const char *symbol, void **pfn, int cudaVersion, cuuint64_t flags)
{
    FC_FAULT("cuGetProcAddress");
    return cuGetProcAddress_v2(symbol, pfn, cudaVersion, flags, NULL);
}
