/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * contract_init.c: the contract test's checks of initialisation and
 * contexts, what weft's GPU plugin does when it loads the driver: the
 * version is known before cuInit (the plugin asks it first), no other
 * call works before cuInit, a thread has no context until one is made
 * current, memory needs one, and the primary context is what it gets.
 * Device attributes that decide which later sections run are printed as
 * information; unified addressing, which weft assumes, is checked.
 */
#include "config.h"

#include "tests/gpu/contract.h"

int ct_check_init(void)
{
    /* CUR starts non-null: a driver that does not write it is no "null" */
    CUcontext ctx = NULL, cur = (CUcontext)&ctx;
    CUdeviceptr d;
    CUdevice dev;
    char name[128];
    int v = 0, count = 0;
    CUresult r;

    r = cu.cuDriverGetVersion(&v);
    ct_check("driver-version", ">=12000", "%s", r ? ct_err(r) : v >= 12000 ? ">=12000" : "<12000");
    ct_info("driver-version-number", "%d", v);
    ct_check("device-count-before-init", "CUDA_ERROR_NOT_INITIALIZED", "%s",
             ct_err(cu.cuDeviceGetCount(&count)));
    r = cu.cuInit(0);
    ct_check("init", "CUDA_SUCCESS", "%s", ct_err(r));
    if (r)
        return -1;
    r = cu.cuDeviceGetCount(&count);
    ct_check("device-count", ">=1", "%s", r ? ct_err(r) : count >= 1 ? ">=1" : "0");
    r = cu.cuDeviceGet(&dev, 0);
    ct_check("device-get", "CUDA_SUCCESS", "%s", ct_err(r));
    if (r)
        return -1;
    if (cu.cuDeviceGetName(name, sizeof(name), dev) == CUDA_SUCCESS)
        ct_info("device-name", "%s", name);
    ct_check("device-unified-addressing", "1", "%d",
             ct_dev_attr(CU_DEVICE_ATTRIBUTE_UNIFIED_ADDRESSING));
    ct_info("device-vmm", "%d", ct_dev_attr(CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED));
    ct_info("device-posix-fd-handles", "%d",
            ct_dev_attr(CU_DEVICE_ATTRIBUTE_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR_SUPPORTED));
    ct_info("device-dma-buf", "%d", ct_dev_attr(CU_DEVICE_ATTRIBUTE_DMA_BUF_SUPPORTED));
    ct_info("device-gpudirect-rdma", "%d",
            ct_dev_attr(CU_DEVICE_ATTRIBUTE_GPU_DIRECT_RDMA_SUPPORTED));
    ct_info("device-ipc-events", "%d", ct_dev_attr(CU_DEVICE_ATTRIBUTE_IPC_EVENT_SUPPORTED));
    ct_info("device-memops-v1", "%d", ct_dev_attr(CU_DEVICE_ATTRIBUTE_CAN_USE_STREAM_MEM_OPS_V1));

    r = cu.cuCtxGetCurrent(&cur);
    ct_check("no-context-current", "null", "%s", r ? ct_err(r) : cur ? "non-null" : "null");
    r = cu.cuMemAlloc(&d, 4096);
    ct_check("no-context-mem-alloc", "CUDA_ERROR_INVALID_CONTEXT", "%s", ct_err(r));
    if (r == CUDA_SUCCESS)
        cu.cuMemFree(d);
    r = cu.cuDevicePrimaryCtxRetain(&ctx, dev);
    ct_check("primary-context-retain", "CUDA_SUCCESS", "%s", ct_err(r));
    if (r)
        return -1;
    r = cu.cuCtxSetCurrent(ctx);
    ct_check("context-set-current", "CUDA_SUCCESS", "%s", ct_err(r));
    if (r)
        return -1;
    r = cu.cuCtxGetCurrent(&cur);
    ct_check("context-current", "primary", "%s",
             r ? ct_err(r) : cur == ctx ? "primary" : "other");
    return 0;
}
