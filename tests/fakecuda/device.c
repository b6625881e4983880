/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * device.c: the devices: count, name, UUID, PCI address, memory size and
 * attributes. They describe a Hopper-class part (compute capability 9.0)
 * with unified addressing, page-locked host memory that devices can
 * map, legacy IPC, stream memory operations, VMM and dma-buf, less what
 * WEFT_FAKECUDA_FAULTS takes away. An attribute the list below does not
 * name is 0; one outside the enum is CUDA_ERROR_INVALID_VALUE.
 */
#include "config.h"

#include <stdio.h>
#include <string.h>

#include "tests/fakecuda/fakecuda.h"

static CUresult check_dev(CUdevice dev)
{
    CUresult r = fc_ready();
    if (r)
        return r;
    return dev >= 0 && dev < fc.ndevices ? CUDA_SUCCESS : CUDA_ERROR_INVALID_DEVICE;
}

FC_API CUresult cuDeviceGet(CUdevice *device, int ordinal)
{
    FC_FAULT("cuDeviceGet");
    CUresult r = fc_ready();
    if (r)
        return r;
    if (!device)
        return CUDA_ERROR_INVALID_VALUE;
    if (ordinal < 0 || ordinal >= fc.ndevices)
        return CUDA_ERROR_INVALID_DEVICE;
    *device = ordinal;
    return CUDA_SUCCESS;
}

FC_API CUresult cuDeviceGetCount(int *count)
{
    FC_FAULT("cuDeviceGetCount");
    CUresult r = fc_ready();
    if (r)
        return r;
    if (!count)
        return CUDA_ERROR_INVALID_VALUE;
    *count = fc.ndevices;
    return CUDA_SUCCESS;
}

FC_API CUresult cuDeviceGetName(char *name, int len, CUdevice dev)
{
    FC_FAULT("cuDeviceGetName");
    CUresult r = check_dev(dev);
    if (r)
        return r;
    if (!name || len <= 0)
        return CUDA_ERROR_INVALID_VALUE;
    snprintf(name, (size_t)len, "fakecuda test double %d", dev);
    return CUDA_SUCCESS;
}

/* Stable across processes, so that two processes agree on a device. */
static void uuid_of(CUdevice dev, CUuuid *uuid)
{
    static const char tag[] = "fakecuda-dev";
    memcpy(uuid->bytes, tag, 12);
    uuid->bytes[12] = 0;
    uuid->bytes[13] = 0;
    uuid->bytes[14] = 0;
    uuid->bytes[15] = (char)dev;
}

FC_API CUresult cuDeviceGetUuid_v2(CUuuid *uuid, CUdevice dev)
{
    FC_FAULT("cuDeviceGetUuid_v2");
    CUresult r = check_dev(dev);
    if (r)
        return r;
    if (!uuid)
        return CUDA_ERROR_INVALID_VALUE;
    uuid_of(dev, uuid);
    return CUDA_SUCCESS;
}

/* The CUDA 9.2 entry point, which cuda.h hides behind the _v2 name. */
#undef cuDeviceGetUuid
FC_API CUresult cuDeviceGetUuid(CUuuid *uuid, CUdevice dev);
FC_API CUresult cuDeviceGetUuid(CUuuid *uuid, CUdevice dev)
{
    FC_FAULT("cuDeviceGetUuid");
    return cuDeviceGetUuid_v2(uuid, dev);
}

/* Bus 0x10 + ordinal of domain 0: "0000:10:00.0", the form
 * [domain]:[bus]:[device].[function] in the 13 characters (with the
 * terminating NUL) the reference says a buffer needs. */
static int bus_of(CUdevice dev)
{
    return 0x10 + dev;
}

FC_API CUresult cuDeviceGetPCIBusId(char *pciBusId, int len, CUdevice dev)
{
    FC_FAULT("cuDeviceGetPCIBusId");
    CUresult r = check_dev(dev);
    if (r)
        return r;
    if (!pciBusId || len <= 0)
        return CUDA_ERROR_INVALID_VALUE;
    snprintf(pciBusId, (size_t)len, "%04x:%02x:00.0", 0, bus_of(dev));
    return CUDA_SUCCESS;
}

FC_API CUresult cuDeviceTotalMem_v2(size_t *bytes, CUdevice dev)
{
    FC_FAULT("cuDeviceTotalMem_v2");
    CUresult r = check_dev(dev);
    if (r)
        return r;
    if (!bytes)
        return CUDA_ERROR_INVALID_VALUE;
    *bytes = fc.dev[dev].arena_size;
    return CUDA_SUCCESS;
}

FC_API CUresult cuDeviceGetAttribute(int *pi, CUdevice_attribute attrib, CUdevice dev)
{
    FC_FAULT("cuDeviceGetAttribute");
    CUresult r = check_dev(dev);
    if (r)
        return r;
    if (!pi || (int)attrib <= 0 || attrib >= CU_DEVICE_ATTRIBUTE_MAX)
        return CUDA_ERROR_INVALID_VALUE;
    int v = 0;
    switch (attrib) {
    case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR: v = 9; break;
    case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR: v = 0; break;
    case CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT: v = 132; break;
    case CU_DEVICE_ATTRIBUTE_WARP_SIZE: v = 32; break;
    case CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK: v = 1024; break;
    /* the limits cuLaunchKernel checks (module.c) */
    case CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_X: v = 1024; break;
    case CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Y: v = 1024; break;
    case CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Z: v = 64; break;
    case CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X: v = 2147483647; break;
    case CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Y: v = 65535; break;
    case CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Z: v = 65535; break;
    case CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK: v = 49152; break;
    case CU_DEVICE_ATTRIBUTE_PCI_DOMAIN_ID: v = 0; break;
    case CU_DEVICE_ATTRIBUTE_PCI_BUS_ID: v = bus_of(dev); break;
    case CU_DEVICE_ATTRIBUTE_PCI_DEVICE_ID: v = 0; break;
    case CU_DEVICE_ATTRIBUTE_UNIFIED_ADDRESSING:
    case CU_DEVICE_ATTRIBUTE_CAN_MAP_HOST_MEMORY:
    case CU_DEVICE_ATTRIBUTE_HOST_REGISTER_SUPPORTED:
    case CU_DEVICE_ATTRIBUTE_CONCURRENT_KERNELS:
    case CU_DEVICE_ATTRIBUTE_GPU_DIRECT_RDMA_SUPPORTED:
    case CU_DEVICE_ATTRIBUTE_DMA_BUF_SUPPORTED:
        v = 1;
        break;
    case CU_DEVICE_ATTRIBUTE_ASYNC_ENGINE_COUNT: v = 2; break;
    case CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED:
    case CU_DEVICE_ATTRIBUTE_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR_SUPPORTED:
        v = !fc.no_vmm;
        break;
    case CU_DEVICE_ATTRIBUTE_CAN_USE_STREAM_MEM_OPS_V1:
    case CU_DEVICE_ATTRIBUTE_CAN_USE_64_BIT_STREAM_MEM_OPS:
    case CU_DEVICE_ATTRIBUTE_CAN_USE_STREAM_WAIT_VALUE_NOR:
        v = !fc.no_memops;
        break;
    case CU_DEVICE_ATTRIBUTE_IPC_EVENT_SUPPORTED: v = !fc.no_ipc; break;
    default: v = 0; break;
    }
    *pi = v;
    return CUDA_SUCCESS;
}
