/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * contract_vmm.c: the contract test's checks of virtual memory management
 * with POSIX descriptor handles (how a buffer made by cuMemCreate is
 * shared: the exporter's descriptor, passed to another process, is
 * imported and mapped there) and of dma-buf descriptors of device memory
 * (what a NIC registers for GPUDirect RDMA).
 *
 * Both are features a device may lack: where the device attribute says
 * so, the section prints "info vmm-supported: 0" (or dmabuf-supported)
 * and nothing else, and tests/gpu/run.sh leaves the section out of its
 * comparison with the double, which has both.
 *
 * The physical allocation is mapped in the upper half of a reservation
 * twice its size. Where the reference says RANGE_START_ADDR is the
 * reservation's start, not the mapping's, drivers and the double have
 * differed: informational. Checked: a mapping is DEVICE memory, not
 * legacy-IPC capable (only cuMemAlloc memory is), and allows the POSIX
 * descriptor handle type it was created with.
 */
#include "config.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tests/gpu/contract.h"

static void vmm_prop(CUmemAllocationProp *prop)
{
    memset(prop, 0, sizeof(*prop));
    prop->type = CU_MEM_ALLOCATION_TYPE_PINNED;
    prop->location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    prop->location.id = 0;
    prop->requestedHandleTypes = CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR;
}

/* Reserves twice SIZE, maps H in the upper half with read-write access
 * for device 0; the mapping's address in *VA. The checks name PREFIX. */
static CUresult map_rw(CUmemGenericAllocationHandle h, size_t size, CUdeviceptr *resv,
                       CUdeviceptr *va, const char *prefix)
{
    CUmemAccessDesc acc;
    char name[64];
    CUresult r;

    r = cu.cuMemAddressReserve(resv, 2 * size, 0, 0, 0);
    snprintf(name, sizeof(name), "%s-reserve", prefix);
    ct_check(name, "CUDA_SUCCESS", "%s", ct_err(r));
    if (r)
        return r;
    *va = *resv + size;
    r = cu.cuMemMap(*va, size, 0, h, 0);
    snprintf(name, sizeof(name), "%s-map", prefix);
    ct_check(name, "CUDA_SUCCESS", "%s", ct_err(r));
    if (r) {
        cu.cuMemAddressFree(*resv, 2 * size);
        return r;
    }
    memset(&acc, 0, sizeof(acc));
    acc.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    acc.location.id = 0;
    acc.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
    r = cu.cuMemSetAccess(*va, size, &acc, 1);
    snprintf(name, sizeof(name), "%s-set-access", prefix);
    ct_check(name, "CUDA_SUCCESS", "%s", ct_err(r));
    if (r) {
        cu.cuMemUnmap(*va, size);
        cu.cuMemAddressFree(*resv, 2 * size);
    }
    return r;
}

static void unmap(CUdeviceptr resv, CUdeviceptr va, size_t size, const char *prefix)
{
    char name[64];

    snprintf(name, sizeof(name), "%s-unmap", prefix);
    ct_check(name, "CUDA_SUCCESS", "%s", ct_err(cu.cuMemUnmap(va, size)));
    snprintf(name, sizeof(name), "%s-address-free", prefix);
    ct_check(name, "CUDA_SUCCESS", "%s", ct_err(cu.cuMemAddressFree(resv, 2 * size)));
}

/* Writes SEED's pattern in the N bytes at VA, and waits until it is
 * there. */
static void write_pattern(CUdeviceptr va, size_t n, unsigned seed, const char *name)
{
    unsigned char *buf = malloc(n);
    CUresult r;

    if (!buf) {
        ct_fail(name, "out of host memory");
        return;
    }
    ct_pattern(buf, n, seed);
    if ((r = cu.cuMemcpyHtoD(va, buf, n)) || (r = cu.cuStreamSynchronize(NULL)))
        ct_fail(name, ct_err(r));
    free(buf);
}

/* The check NAME: whether the N bytes at VA hold SEED's pattern. */
static void check_pattern(CUdeviceptr va, size_t n, unsigned seed, const char *name)
{
    unsigned char *buf = calloc(1, n);
    long bad;
    CUresult r;

    if (!buf) {
        ct_fail(name, "out of host memory");
        return;
    }
    r = cu.cuMemcpyDtoH(buf, va, n);
    bad = r ? -1 : ct_pattern_bad(buf, n, seed);
    if (r)
        ct_check(name, "ok", "%s", ct_err(r));
    else if (bad >= 0)
        ct_check(name, "ok", "mismatch at %ld", bad);
    else
        ct_check(name, "ok", "ok");
    free(buf);
}

static void mapping_attributes(CUdeviceptr resv, CUdeviceptr va)
{
    struct ct_ptr a;
    CUresult r = ct_ptr_query(va + 64, &a);

    ct_check("vmm-pattr", "CUDA_SUCCESS", "%s", ct_err(r));
    ct_check("vmm-pattr-memory-type", "DEVICE", "%s", ct_memory_type(a.memory_type));
    ct_check("vmm-pattr-legacy-ipc", "0", "%u", a.legacy_ipc);
    ct_check("vmm-pattr-handle-types", "posix_fd", "%s",
             a.handle_types & CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR ? "posix_fd" : "none");
    ct_info("vmm-pattr-range-start", "%s",
            a.start == resv ? "reservation" : a.start == va ? "mapping" : "other");
}

void ct_check_vmm(void)
{
    int vmm = ct_dev_attr(CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED);
    int fds = ct_dev_attr(CU_DEVICE_ATTRIBUTE_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR_SUPPORTED);
    char fdarg[16], sizearg[32];
    const char *args[] = { "--vmm-child", fdarg, sizearg, NULL };
    CUmemGenericAllocationHandle h;
    CUmemAllocationProp prop;
    CUdeviceptr resv, va;
    size_t g = 0;
    int fd = -1, inherit;
    CUresult r;

    ct_info("vmm-supported", "%d", vmm == 1 && fds == 1);
    if (vmm != 1 || fds != 1)
        return;
    vmm_prop(&prop);
    r = cu.cuMemGetAllocationGranularity(&g, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM);
    ct_check("vmm-granularity", "CUDA_SUCCESS", "%s", ct_err(r));
    if (r || !g)
        return;
    r = cu.cuMemCreate(&h, g, &prop, 0);
    ct_check("vmm-create", "CUDA_SUCCESS", "%s", ct_err(r));
    if (r)
        return;
    if (map_rw(h, g, &resv, &va, "vmm"))
        goto out_release;
    write_pattern(va, g, 11, "vmm-copy");
    check_pattern(va, g, 11, "vmm-copy");
    mapping_attributes(resv, va);

    r = cu.cuMemExportToShareableHandle(&fd, h, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0);
    ct_check("vmm-export-fd", "ok", "%s", r ? ct_err(r) : fd >= 0 ? "ok" : "negative-fd");
    if (r || fd < 0)
        goto out_unmap;
    /* a descriptor without FD_CLOEXEC, for the child to inherit */
    inherit = fcntl(fd, F_DUPFD, 3);
    if (inherit < 0) {
        ct_fail("vmm-child", "cannot duplicate the exported descriptor");
        goto out_close;
    }
    snprintf(fdarg, sizeof(fdarg), "%d", inherit);
    snprintf(sizearg, sizeof(sizearg), "%zu", g);
    ct_check("vmm-child-exit", "0", "%d", ct_spawn_child(args, "vmm-child"));
    close(inherit);
    check_pattern(va, g, 12, "vmm-child-write-seen");
out_close:
    close(fd);
out_unmap:
    unmap(resv, va, g, "vmm");
out_release:
    ct_check("vmm-release", "CUDA_SUCCESS", "%s", ct_err(cu.cuMemRelease(h)));
}

/* --vmm-child FD SIZE: imports the descriptor, maps it, reads the
 * parent's bytes, writes its own. */
int ct_vmm_child(int argc, char **argv)
{
    CUmemGenericAllocationHandle h;
    CUdeviceptr resv, va;
    size_t n;
    int fd;
    CUresult r;

    if (argc != 2 || (fd = atoi(argv[0])) < 0 || !(n = strtoul(argv[1], NULL, 10))) {
        fprintf(stderr, "contract: --vmm-child wants FD SIZE\n");
        return 2;
    }
    if (ct_child_init())
        return 1;
    r = cu.cuMemImportFromShareableHandle(&h, (void *)(uintptr_t)fd,
                                          CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR);
    ct_check("vmm-child-import", "CUDA_SUCCESS", "%s", ct_err(r));
    if (r)
        return 1;
    close(fd);
    if (map_rw(h, n, &resv, &va, "vmm-child") == CUDA_SUCCESS) {
        check_pattern(va, n, 11, "vmm-child-data");
        write_pattern(va, n, 12, "vmm-child-write");
        unmap(resv, va, n, "vmm-child");
    }
    ct_check("vmm-child-release", "CUDA_SUCCESS", "%s", ct_err(cu.cuMemRelease(h)));
    return ct_failed() ? 1 : 0;
}

/* A dma-buf descriptor of a whole cuMemAlloc buffer, page-aligned. */
void ct_check_dmabuf(void)
{
    int supported = ct_dev_attr(CU_DEVICE_ATTRIBUTE_DMA_BUF_SUPPORTED);
    size_t n = (size_t)2 << 20;
    CUdeviceptr d;
    int fd = -1;
    CUresult r;

    ct_info("dmabuf-supported", "%d", supported == 1);
    if (supported != 1)
        return;
    if ((r = cu.cuMemAlloc(&d, n))) {
        ct_check("dmabuf-fd", "ok", "cuMemAlloc %s", ct_err(r));
        return;
    }
    if (d % (CUdeviceptr)sysconf(_SC_PAGESIZE)) {
        ct_fail("dmabuf-fd", "cuMemAlloc gave an address that is not page-aligned");
    } else {
        r = cu.cuMemGetHandleForAddressRange(&fd, d, n, CU_MEM_RANGE_HANDLE_TYPE_DMA_BUF_FD, 0);
        ct_check("dmabuf-fd", "ok", "%s", r ? ct_err(r) : fd >= 0 ? "ok" : "negative-fd");
        if (!r && fd >= 0)
            close(fd);
    }
    cu.cuMemFree(d);
}
