/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * vmm_phys.c: the physical side of virtual memory management:
 * cuMemGetAllocationGranularity, cuMemCreate, cuMemRelease,
 * cuMemExportToShareableHandle, cuMemImportFromShareableHandle and
 * cuMemRetainAllocationHandle (vmm_map.c maps what these make).
 *
 * A physical allocation is a memfd named "fakecuda-vmm:DEV", DEV the
 * device it lives on, so that an importer, which gets nothing but the
 * descriptor, learns the device from the name and the size from fstat.
 * Exporting as CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR gives a new
 * descriptor of that memfd: a real file descriptor, which another
 * process receives over a Unix socket (SCM_RIGHTS) as the reference
 * intends; the caller owns and closes it. Other handle types (fabric,
 * Win32) are CUDA_ERROR_NOT_SUPPORTED; exporting a type that cuMemCreate
 * was not asked for in requestedHandleTypes is CUDA_ERROR_INVALID_VALUE.
 *
 * Sizes must be multiples of the granularity, 2 MiB for both the minimum
 * and the recommended one, as the driver reports on current GPUs: a
 * smaller page would let a program that rounds wrongly pass here and
 * fail on hardware. New memory holds 0xa5 bytes, as cuMemAlloc's does
 * (the reference does not say cuMemCreate clears it). The handle is the
 * struct's address, checked against the list before use, so a released
 * or made-up handle is CUDA_ERROR_INVALID_VALUE, not a crash.
 * WEFT_FAKECUDA_FAULTS=novmm makes every call CUDA_ERROR_NOT_SUPPORTED.
 * None needs a current context: VMM allocations belong to no context.
 */
#define _GNU_SOURCE
#include "config.h"

#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tests/fakecuda/fakecuda.h"

static const char vmm_prefix[] = "fakecuda-vmm:";

static CUresult vmm_ready(void)
{
    CUresult r = fc_ready();
    if (r)
        return r;
    return fc.no_vmm ? CUDA_ERROR_NOT_SUPPORTED : CUDA_SUCCESS;
}

struct fc_phys *fc_phys_find(CUmemGenericAllocationHandle h)
{
    for (struct fc_phys *p = fc.phys; p; p = p->next)
        if ((CUmemGenericAllocationHandle)(uintptr_t)p == h && p->handles > 0)
            return p;
    return NULL;
}

void fc_phys_put(struct fc_phys *p)
{
    if (p->handles > 0 || p->maps > 0)
        return;
    for (struct fc_phys **pp = &fc.phys; *pp; pp = &(*pp)->next)
        if (*pp == p) {
            *pp = p->next;
            break;
        }
    close(p->fd);
    free(p);
}

/* Pinned device memory on a device that exists, with handle types the
 * double can make; what the reference asks of the property struct. */
static CUresult check_prop(const CUmemAllocationProp *prop)
{
    if (!prop || prop->type != CU_MEM_ALLOCATION_TYPE_PINNED ||
        prop->location.type != CU_MEM_LOCATION_TYPE_DEVICE || prop->location.id < 0 ||
        prop->location.id >= fc.ndevices)
        return CUDA_ERROR_INVALID_VALUE;
    if (prop->requestedHandleTypes & ~(unsigned)CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR)
        return CUDA_ERROR_NOT_SUPPORTED;
    return CUDA_SUCCESS;
}

FC_API CUresult cuMemGetAllocationGranularity(size_t *granularity, const CUmemAllocationProp *prop,
                                              CUmemAllocationGranularity_flags option)
{
    FC_FAULT("cuMemGetAllocationGranularity");
    CUresult r = vmm_ready();
    if (r)
        return r;
    if (!granularity || (option != CU_MEM_ALLOC_GRANULARITY_MINIMUM &&
                         option != CU_MEM_ALLOC_GRANULARITY_RECOMMENDED))
        return CUDA_ERROR_INVALID_VALUE;
    if ((r = check_prop(prop)))
        return r;
    *granularity = FC_VMM_GRANULARITY;
    return CUDA_SUCCESS;
}

static CUresult phys_add(int fd, size_t size, int dev, unsigned long long types,
                         CUmemGenericAllocationHandle *handle)
{
    struct fc_phys *p = calloc(1, sizeof(*p));
    if (!p)
        return CUDA_ERROR_OUT_OF_MEMORY;
    p->fd = fd;
    p->size = size;
    p->dev = dev;
    p->types = types;
    p->handles = 1;
    pthread_mutex_lock(&fc.lock);
    p->next = fc.phys;
    fc.phys = p;
    pthread_mutex_unlock(&fc.lock);
    *handle = (CUmemGenericAllocationHandle)(uintptr_t)p;
    return CUDA_SUCCESS;
}

FC_API CUresult cuMemCreate(CUmemGenericAllocationHandle *handle, size_t size,
                            const CUmemAllocationProp *prop, unsigned long long flags)
{
    FC_FAULT("cuMemCreate");
    CUresult r = vmm_ready();
    if (r)
        return r;
    if (!handle || flags || size == 0 || size % FC_VMM_GRANULARITY)
        return CUDA_ERROR_INVALID_VALUE;
    if ((r = check_prop(prop)))
        return r;
    char name[48];
    snprintf(name, sizeof(name), "%s%d", vmm_prefix, prop->location.id);
    int fd = memfd_create(name, MFD_CLOEXEC);
    if (fd < 0) {
        fc_log("memfd_create: %m");
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    if (ftruncate(fd, (off_t)size)) {
        fc_log("ftruncate of %zu bytes: %m", size);
        r = CUDA_ERROR_OUT_OF_MEMORY;
        goto err_close_fd;
    }
    void *m = mmap(NULL, size, PROT_WRITE, MAP_SHARED, fd, 0);
    if (m == MAP_FAILED) {
        fc_log("mmap of %zu bytes: %m", size);
        r = CUDA_ERROR_OUT_OF_MEMORY;
        goto err_close_fd;
    }
    memset(m, 0xa5, size);
    munmap(m, size);
    if ((r = phys_add(fd, size, prop->location.id, prop->requestedHandleTypes, handle)))
        goto err_close_fd;
    return CUDA_SUCCESS;

err_close_fd:
    close(fd);
    return r;
}

FC_API CUresult cuMemRelease(CUmemGenericAllocationHandle handle)
{
    FC_FAULT("cuMemRelease");
    CUresult r = vmm_ready();
    if (r)
        return r;
    pthread_mutex_lock(&fc.lock);
    struct fc_phys *p = fc_phys_find(handle);
    if (p) {
        p->handles--;
        fc_phys_put(p);     /* the memory stays while it is mapped */
    }
    else
        r = CUDA_ERROR_INVALID_VALUE;
    pthread_mutex_unlock(&fc.lock);
    return r;
}

FC_API CUresult cuMemExportToShareableHandle(void *shareableHandle,
                                             CUmemGenericAllocationHandle handle,
                                             CUmemAllocationHandleType handleType,
                                             unsigned long long flags)
{
    FC_FAULT("cuMemExportToShareableHandle");
    CUresult r = vmm_ready();
    if (r)
        return r;
    if (!shareableHandle || flags)
        return CUDA_ERROR_INVALID_VALUE;
    if (handleType != CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR)
        return CUDA_ERROR_NOT_SUPPORTED;
    pthread_mutex_lock(&fc.lock);
    struct fc_phys *p = fc_phys_find(handle);
    int fd = -1;
    if (!p || !(p->types & handleType))
        r = CUDA_ERROR_INVALID_VALUE;
    else if ((fd = fcntl(p->fd, F_DUPFD_CLOEXEC, 0)) < 0)
        r = CUDA_ERROR_OUT_OF_MEMORY;
    pthread_mutex_unlock(&fc.lock);
    if (r)
        return r;
    *(int *)shareableHandle = fd;
    return CUDA_SUCCESS;
}

/* The device of a descriptor that names a physical allocation of the
 * double, -1 if it names anything else. */
static int vmm_fd_device(int fd)
{
    char path[64], link[PATH_MAX];
    snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
    ssize_t n = readlink(path, link, sizeof(link) - 1);
    if (n < 0)
        return -1;
    link[n] = '\0';
    char want[32];
    snprintf(want, sizeof(want), "/memfd:%s", vmm_prefix);
    if (strncmp(link, want, strlen(want)))
        return -1;
    int dev = atoi(link + strlen(want));
    return dev < fc.ndevices ? dev : -1;
}

FC_API CUresult cuMemImportFromShareableHandle(CUmemGenericAllocationHandle *handle, void *osHandle,
                                               CUmemAllocationHandleType shHandleType)
{
    FC_FAULT("cuMemImportFromShareableHandle");
    CUresult r = vmm_ready();
    if (r)
        return r;
    if (!handle)
        return CUDA_ERROR_INVALID_VALUE;
    if (shHandleType != CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR)
        return CUDA_ERROR_NOT_SUPPORTED;
    /* the reference passes a POSIX descriptor as (void *)(uintptr_t)fd */
    int given = (int)(uintptr_t)osHandle;
    struct stat st;
    int dev = vmm_fd_device(given);
    if (dev < 0 || fstat(given, &st) || st.st_size <= 0)
        return CUDA_ERROR_INVALID_VALUE;
    /* the caller keeps its descriptor and may close it at once */
    int fd = fcntl(given, F_DUPFD_CLOEXEC, 0);
    if (fd < 0)
        return CUDA_ERROR_OUT_OF_MEMORY;
    if ((r = phys_add(fd, (size_t)st.st_size, dev, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR,
                      handle)))
        close(fd);
    return r;
}

FC_API CUresult cuMemRetainAllocationHandle(CUmemGenericAllocationHandle *handle, void *addr)
{
    FC_FAULT("cuMemRetainAllocationHandle");
    CUresult r = vmm_ready();
    if (r)
        return r;
    if (!handle)
        return CUDA_ERROR_INVALID_VALUE;
    pthread_mutex_lock(&fc.lock);
    struct fc_alloc *a = fc_find((uintptr_t)addr);
    if (a && a->kind == FC_VMM) {
        a->phys->handles++;
        *handle = (CUmemGenericAllocationHandle)(uintptr_t)a->phys;
    } else {
        r = CUDA_ERROR_INVALID_VALUE;
    }
    pthread_mutex_unlock(&fc.lock);
    return r;
}
