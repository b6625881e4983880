/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * fakecuda.c: the CUDA driver test double, a stand-in for libcuda.so.1.
 *
 * What it is. No machine that builds or tests weft has a GPU, so
 * tests/fakecuda/ builds a shared library that answers the part of the
 * CUDA driver API weft's GPU plugins use, with the semantics NVIDIA's
 * driver API reference gives them: entry points by cuGetProcAddress at
 * the versions the driver has them, devices, primary contexts, device
 * memory the host cannot read, pointer attributes, legacy IPC between
 * processes, virtual memory management and its POSIX fd handles, dma-buf
 * descriptors, streams, events (interprocess ones too), stream memory
 * operations, and modules whose kernels are weft's reductions, computed
 * on the host. It is never
 * installed and nothing links it but its own tests: a program gets it by
 * asking, WEFT_CUDA_DRIVER=$builddir/tests/fakecuda/.libs/libfakecuda.so,
 * and weft refuses it unless WEFT_CUDA_ALLOW_TEST_DRIVER=1: the library
 * exports the int weft_fakecuda_test_double and says on stderr, when it
 * is loaded, that it is no driver.
 *
 * Devices. WEFT_FAKECUDA_DEVICES=N (default 1, at most 16; 0 makes cuInit
 * fail with CUDA_ERROR_NO_DEVICE) devices of compute capability 9.0 with
 * unified addressing (device.c). Each has a primary context (context.c).
 *
 * Memory. Each device reserves a range of address space that is never
 * readable or writable (PROT_NONE), as GPU memory is not from the host:
 * a host load of a device pointer faults. cuMemAlloc carves device
 * addresses from it, reusing the last freed range first, and backs each
 * allocation by a memfd that the double maps a second time, readable,
 * for its own copies (memory.c). Page-locked host memory is ordinary
 * memory the double records (host.c). Copies and sets (copy.c) resolve
 * device addresses to that second mapping.
 *
 * IPC. A CUipcMemHandle names the exporter's pid, the memfd's descriptor
 * and the buffer id; the importer opens /proc/PID/fd/FD and checks that
 * the link still names that buffer's memfd (ipc.c). Interprocess events
 * keep their state in a memfd page every process maps, named the same
 * way (ipc_event.c).
 *
 * VMM. cuMemCreate makes a memfd with no address (vmm_phys.c); an
 * address reservation is arena space, and cuMemMap maps the memfd there
 * as cuMemAlloc maps its own, inaccessible until cuMemSetAccess
 * (vmm_map.c). A POSIX fd export is a new descriptor of the memfd, which
 * a process passes to another over a Unix socket.
 *
 * dma-buf. cuMemGetHandleForAddressRange gives a new descriptor of the
 * allocation's memfd, for a range that starts at the allocation; the
 * software RDMA device (tests/swrdma) registers it (dmabuf.c).
 *
 * Streams. Each stream is a worker thread that runs its operations in
 * order (stream.c); events mark a point in a stream (event.c); memops
 * write and wait on 32-bit words (memop.c). WEFT_FAKECUDA_DELAY_US=N
 * sleeps a random 0..N microseconds before each operation.
 *
 * Kernels. cuModuleLoadData checks that an image is a fatbin, cubin or
 * PTX the device could run; its functions are weft's reduction kernels,
 * found by name and computed on a stream's worker from their documented
 * semantics (module.c, kernels.c).
 *
 * Faults. WEFT_FAKECUDA_FAULTS (fault.c): fail=NAME@N[:ERROR] makes the
 * Nth call of NAME fail; novmm, nomemops, noipc and nolaunch take those
 * features away.
 *
 * What it is not: no kernels but weft's, no graphs, managed memory, memory
 * pools or peer access; per-thread default streams are refused. A forked child must exec
 * before it uses the double (as with the real driver).
 *
 * This file: the library's state, its banner, cuInit and the version.
 */
#include "config.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "tests/fakecuda/fakecuda.h"

/* weft's loader looks for this to refuse the double unless asked. */
FC_API int weft_fakecuda_test_double = 1;

struct fc_state fc = {
    .lock = PTHREAD_MUTEX_INITIALIZER,
    .next_buffer_id = 1,
};

/* Device address space per device: large, and reserved without backing. */
#define FC_ARENA_SIZE ((size_t)64 << 30)

void fc_log(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fputs("fakecuda: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
}

/* Said once per process, on load, so that no log of a run with the double
 * can be taken for a GPU result. */
__attribute__((constructor)) static void fc_banner(void)
{
    fc_log("*** THIS IS A CUDA TEST DOUBLE, NOT A GPU DRIVER: no GPU is used ***");
}

static unsigned env_uint(const char *name, unsigned dflt, unsigned max)
{
    const char *s = getenv(name);
    if (!s || !*s)
        return dflt;
    char *end;
    errno = 0;
    unsigned long v = strtoul(s, &end, 10);
    if (errno || *end || v > max) {
        fc_log("%s=%s is not a number 0..%u; using %u", name, s, max, dflt);
        return dflt;
    }
    return (unsigned)v;
}

CUresult fc_ready(void)
{
    return fc.initialized ? CUDA_SUCCESS : CUDA_ERROR_NOT_INITIALIZED;
}

CUresult fc_ctx_ready(struct CUctx_st **ctx)
{
    if (!fc.initialized)
        return CUDA_ERROR_NOT_INITIALIZED;
    struct CUctx_st *c = fc_current();
    if (!c)
        return CUDA_ERROR_INVALID_CONTEXT;
    /* a primary context made current, then released: cuda.h's
     * CUDA_ERROR_CONTEXT_IS_DESTROYED is for that case */
    if (c->retained <= 0)
        return CUDA_ERROR_CONTEXT_IS_DESTROYED;
    if (ctx)
        *ctx = c;
    return CUDA_SUCCESS;
}

FC_API CUresult cuInit(unsigned int Flags)
{
    CUresult r = CUDA_SUCCESS;
    if (Flags != 0)
        return CUDA_ERROR_INVALID_VALUE;
    pthread_mutex_lock(&fc.lock);
    if (fc.initialized)
        goto out_unlock;
    fc_fault_setup();
    if ((r = fc_fault("cuInit")))
        goto out_unlock;
    int n = (int)env_uint("WEFT_FAKECUDA_DEVICES", 1, FC_MAX_DEVICES);
    if (n == 0) {
        r = CUDA_ERROR_NO_DEVICE;
        goto out_unlock;
    }
    fc.delay_us = env_uint("WEFT_FAKECUDA_DELAY_US", 0, 10000000);
    for (int d = 0; d < n; d++) {
        void *a = mmap(NULL, FC_ARENA_SIZE, PROT_NONE,
                       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
        if (a == MAP_FAILED) {
            fc_log("cannot reserve device %d's address space: %m", d);
            for (int e = 0; e < d; e++)
                munmap((void *)fc.dev[e].arena, FC_ARENA_SIZE);
            r = CUDA_ERROR_OUT_OF_MEMORY;
            goto out_unlock;
        }
        fc.dev[d].arena = (uintptr_t)a;
        fc.dev[d].arena_size = FC_ARENA_SIZE;
        fc.dev[d].primary.magic = FC_MAGIC_CTX;
        fc.dev[d].primary.dev = d;
    }
    fc.ndevices = n;
    fc.initialized = true;
out_unlock:
    pthread_mutex_unlock(&fc.lock);
    return r;
}

FC_API CUresult cuDriverGetVersion(int *driverVersion)
{
    if (!driverVersion)
        return CUDA_ERROR_INVALID_VALUE;
    *driverVersion = FC_DRIVER_VERSION;
    return CUDA_SUCCESS;
}
