/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * conf_gpu_dev.c: the device memory of conf_gpu's shim. Opens the CUDA
 * driver that weft's cuda-ipc plugin opens (WEFT_CUDA_DRIVER, the test
 * double in make check, else libcuda.so.1), mirrors a call's host buffers
 * into device memory and copies results back. It counts the calls that
 * ran on device buffers and prints the count at exit; a run that exits 0
 * with none fails, since the suite would then have tested host memory
 * only.
 */
#include "config.h"

#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cuda.h>

#include "tests/gpu/conf_gpu.h"
#include "tests/mp/mptest.h"

static struct {
    CUresult (*Init)(unsigned int);
    CUresult (*DeviceGet)(CUdevice *, int);
    CUresult (*PrimaryCtxRetain)(CUcontext *, CUdevice);
    CUresult (*CtxSetCurrent)(CUcontext);
    CUresult (*MemAlloc)(CUdeviceptr *, size_t);
    CUresult (*MemFree)(CUdeviceptr);
    CUresult (*MemcpyHtoD)(CUdeviceptr, const void *, size_t);
    CUresult (*MemcpyDtoH)(void *, CUdeviceptr, size_t);
} cu;

static int opened, send_host, recv_host;
static unsigned long long on_device, on_host;

#define CU(call)                                                                        \
    do {                                                                                \
        CUresult cu_rc_ = (call);                                                       \
        MP_ASSERT(cu_rc_ == CUDA_SUCCESS, "conf_gpu: %s: CUDA error %d", #call,         \
                  (int)cu_rc_);                                                         \
    } while (0)

static void *sym(void *dl, const char *name)
{
    void *p = dlsym(dl, name);

    MP_ASSERT(p, "conf_gpu: the CUDA driver has no %s", name);
    return p;
}

/* Opened at the first buffer to mirror rather than at start-up, so that
 * the suite's own failures before any call are reported as they are. */
static void open_driver(void)
{
    const char *path = getenv("WEFT_CUDA_DRIVER");
    void *dl;
    CUdevice dev;
    CUcontext ctx;

    if (opened)
        return;
    dl = dlopen(path && *path ? path : "libcuda.so.1", RTLD_NOW | RTLD_GLOBAL);
    if (!dl)
        mp_skip("conf_gpu: no CUDA driver: %s", dlerror());
    *(void **)&cu.Init = sym(dl, "cuInit");
    *(void **)&cu.DeviceGet = sym(dl, "cuDeviceGet");
    *(void **)&cu.PrimaryCtxRetain = sym(dl, "cuDevicePrimaryCtxRetain");
    *(void **)&cu.CtxSetCurrent = sym(dl, "cuCtxSetCurrent");
    *(void **)&cu.MemAlloc = sym(dl, "cuMemAlloc_v2");
    *(void **)&cu.MemFree = sym(dl, "cuMemFree_v2");
    *(void **)&cu.MemcpyHtoD = sym(dl, "cuMemcpyHtoD_v2");
    *(void **)&cu.MemcpyDtoH = sym(dl, "cuMemcpyDtoH_v2");
    CU(cu.Init(0));
    CU(cu.DeviceGet(&dev, 0));
    CU(cu.PrimaryCtxRetain(&ctx, dev));
    CU(cu.CtxSetCurrent(ctx));
    opened = 1;
}

static void report(int status, void *arg)
{
    printf("conf_gpu: %llu calls on device buffers, %llu on host buffers only\n", on_device,
           on_host);
    fflush(stdout);
    if (status == 0 && on_device == 0) {
        fprintf(stderr, "conf_gpu: FAIL: no call ran on device buffers\n");
        _exit(MP_EXIT_FAIL);
    }
}

static int flag(const char *name)
{
    const char *v = getenv(name);

    return v && !strcmp(v, "1");
}

__attribute__((constructor)) static void setup(void)
{
    send_host = flag("CONF_GPU_SEND_HOST");
    recv_host = flag("CONF_GPU_RECV_HOST");
    if (send_host && recv_host) {
        fprintf(stderr, "conf_gpu: CONF_GPU_SEND_HOST and CONF_GPU_RECV_HOST together "
                "leave nothing on the device\n");
        exit(MP_EXIT_FAIL);
    }
    on_exit(report, NULL);
}

/* Device memory holding the bytes of host. */
static void *copy_in(const void *host, size_t bytes)
{
    CUdeviceptr d;

    CU(cu.MemAlloc(&d, bytes));
    CU(cu.MemcpyHtoD(d, host, bytes));
    return (void *)(uintptr_t)d;
}

static int bad(const void *p, size_t bytes)
{
    return bytes && (!p || p == WEFT_IN_PLACE);
}

int cg_dev_mirror(cg_call_t *c, const char *fn, const void *send, size_t sbytes, void *recv,
                  size_t rbytes)
{
    uintptr_t s = (uintptr_t)send, r = (uintptr_t)recv, lo, hi;

    memset(c, 0, sizeof(*c));
    c->fn = fn;
    c->send = c->dsend = send;
    c->recv = c->drecv = recv;
    if (bad(send, sbytes) || bad(recv, rbytes)) {
        on_host++;
        return 0;
    }
    if (sbytes && rbytes && s < r + rbytes && r < s + sbytes) {
        /* sendbuf in recvbuf: one allocation keeps the two pointers in
         * the relation the caller gave them (the in-place spelling with
         * equal pointers), on recvbuf's side */
        if (recv_host) {
            on_host++;
            return 0;
        }
        open_driver();
        lo = s < r ? s : r;
        hi = s + sbytes > r + rbytes ? s + sbytes : r + rbytes;
        c->mem[0] = copy_in((const void *)lo, hi - lo);
        c->dsend = (char *)c->mem[0] + (s - lo);
        c->drecv = (char *)c->mem[0] + (r - lo);
        c->sbytes = sbytes;
        c->rbytes = rbytes;
        return 1;
    }
    if (send_host)
        sbytes = 0;
    if (recv_host)
        rbytes = 0;
    if (!sbytes && !rbytes) {
        on_host++;
        return 0;
    }
    open_driver();
    if (sbytes) {
        c->dsend = c->mem[0] = copy_in(send, sbytes);
        c->sbytes = sbytes;
        c->send_alone = 1;
    }
    if (rbytes) {
        c->drecv = c->mem[1] = copy_in(recv, rbytes);
        c->rbytes = rbytes;
    }
    return 1;
}

/* weft reads sendbuf and must leave it as it was: its device copy is
 * compared with the host bytes it was made from (the suite compares the
 * host buffer, which the shim never writes). */
static void check_send(const cg_call_t *c)
{
    unsigned char *now = mp_alloc(c->sbytes);

    CU(cu.MemcpyDtoH(now, (CUdeviceptr)(uintptr_t)c->dsend, c->sbytes));
    for (size_t i = 0; i < c->sbytes; i++)
        MP_ASSERT(now[i] == ((const unsigned char *)c->send)[i],
                  "conf_gpu: %s changed byte %zu of sendbuf's device copy (%zu bytes) "
                  "from 0x%02x to 0x%02x", c->fn, i, c->sbytes,
                  ((const unsigned char *)c->send)[i], now[i]);
    free(now);
}

void cg_dev_drop(cg_call_t *c)
{
    for (int i = 0; i < 2; i++)
        if (c->mem[i])
            CU(cu.MemFree((CUdeviceptr)(uintptr_t)c->mem[i]));
    c->mem[0] = c->mem[1] = NULL;
}

void cg_dev_finish(cg_call_t *c, weft_result_t rc)
{
    if (rc == WEFT_SUCCESS) {
        if (c->rbytes)
            CU(cu.MemcpyDtoH(c->recv, (CUdeviceptr)(uintptr_t)c->drecv, c->rbytes));
        if (c->send_alone)
            check_send(c);
        on_device++;
    }
    cg_dev_drop(c);
}

weft_result_t cg_dev_blocking(cg_call_t *c, weft_result_t rc)
{
    cg_dev_finish(c, rc);
    return rc;
}
