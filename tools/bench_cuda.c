/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * bench_cuda.c: weft-bench --memory cuda: the buffers in CUDA device
 * memory, as nccl-tests measures. The driver is the one weft's cuda-ipc
 * plugin opens (WEFT_CUDA_DRIVER, else libcuda.so.1), taken with dlopen
 * so that weft-bench links no CUDA library and builds without the
 * toolkit; the few types it needs are the driver ABI's (CUresult an int,
 * CUdeviceptr 64 bits, CUdevice an int, CUcontext a pointer).
 */
#include "config.h"

#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "tools/bench.h"

static struct {
    int (*init)(unsigned int);
    int (*device_get)(int *, int);
    int (*ctx_retain)(void **, int);
    int (*ctx_set)(void *);
    int (*alloc)(unsigned long long *, size_t);
    int (*free)(unsigned long long);
    int (*htod)(unsigned long long, const void *, size_t);
    int (*dtoh)(void *, unsigned long long, size_t);
} cu;

static void cuda_check(int rc, const char *call)
{
    if (rc != 0) {
        fprintf(stderr, "weft-bench: --memory cuda: %s failed with CUDA error %d\n", call, rc);
        exit(1);
    }
}

static int take(void *dl, void *fn, const char *name)
{
    void *p = dlsym(dl, name);

    *(void **)fn = p;
    return p != NULL;
}

void bench_cuda_open(void)
{
    const char *path = getenv("WEFT_CUDA_DRIVER");
    void *dl = dlopen(path && *path ? path : "libcuda.so.1", RTLD_NOW | RTLD_GLOBAL);
    void *ctx;
    int dev;

    if (!dl) {
        fprintf(stderr, "weft-bench: --memory cuda: no CUDA driver: %s\n", dlerror());
        exit(1);
    }
    if (!take(dl, &cu.init, "cuInit") || !take(dl, &cu.device_get, "cuDeviceGet") ||
        !take(dl, &cu.ctx_retain, "cuDevicePrimaryCtxRetain") ||
        !take(dl, &cu.ctx_set, "cuCtxSetCurrent") || !take(dl, &cu.alloc, "cuMemAlloc_v2") ||
        !take(dl, &cu.free, "cuMemFree_v2") || !take(dl, &cu.htod, "cuMemcpyHtoD_v2") ||
        !take(dl, &cu.dtoh, "cuMemcpyDtoH_v2")) {
        fprintf(stderr, "weft-bench: --memory cuda: the CUDA driver lacks a function\n");
        exit(1);
    }
    cuda_check(cu.init(0), "cuInit");
    cuda_check(cu.device_get(&dev, 0), "cuDeviceGet");
    cuda_check(cu.ctx_retain(&ctx, dev), "cuDevicePrimaryCtxRetain");
    cuda_check(cu.ctx_set(ctx), "cuCtxSetCurrent");
}

void *bench_cuda_alloc(size_t bytes)
{
    unsigned long long d;

    cuda_check(cu.alloc(&d, bytes ? bytes : 1), "cuMemAlloc");
    return (void *)(uintptr_t)d;
}

void bench_cuda_free(void *dev)
{
    cuda_check(cu.free((unsigned long long)(uintptr_t)dev), "cuMemFree");
}

void bench_cuda_to(void *dev, const void *host, size_t bytes)
{
    cuda_check(cu.htod((unsigned long long)(uintptr_t)dev, host, bytes), "cuMemcpyHtoD");
}

void bench_cuda_from(void *host, const void *dev, size_t bytes)
{
    cuda_check(cu.dtoh(host, (unsigned long long)(uintptr_t)dev, bytes), "cuMemcpyDtoH");
}
