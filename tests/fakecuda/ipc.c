/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * ipc.c: legacy CUDA IPC: cuIpcGetMemHandle, cuIpcOpenMemHandle,
 * cuIpcCloseMemHandle.
 *
 * The handle. Device memory is a memfd in the exporting process; the
 * 64-byte CUipcMemHandle carries "fakecuda", the exporter's pid, the
 * memfd's descriptor number there, the buffer id and the size. The
 * importer opens /proc/PID/fd/FD (a process may, for another of its
 * user: no descriptor passing, no name in /dev/shm to clean up) and
 * then checks that what it opened is the memfd named "fakecuda:ID": a
 * freed buffer's descriptor number may since name another file. The
 * memory is mapped in the importer's own device arena, at an address
 * of its own, as the reference allows.
 *
 * Errors, from the reference's lists: a handle of this process's own
 * memory is CUDA_ERROR_INVALID_CONTEXT (the driver will not map memory
 * into the context it came from); a handle that is not one, or whose
 * memory was freed or whose process is gone, CUDA_ERROR_INVALID_HANDLE;
 * flags other than CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS, which the
 * reference says must be given, CUDA_ERROR_INVALID_VALUE. Opening a
 * handle that this process has open already returns the same address
 * and counts a reference ("If the memory handle has already been opened
 * by the current context, the reference count on the handle is
 * incremented by 1 and the existing device pointer is returned");
 * cuIpcCloseMemHandle unmaps on the last. WEFT_FAKECUDA_FAULTS=noipc
 * makes cuIpcGetMemHandle CUDA_ERROR_NOT_SUPPORTED.
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

struct fc_ipc {
    char magic[8];
    int32_t pid;
    int32_t fd;
    uint64_t buffer_id;
    uint64_t size;
};

_Static_assert(sizeof(struct fc_ipc) <= CU_IPC_HANDLE_SIZE, "IPC handle too large");

static const char ipc_magic[8] = "fakecuda";

FC_API CUresult cuIpcGetMemHandle(CUipcMemHandle *pHandle, CUdeviceptr dptr)
{
    FC_FAULT("cuIpcGetMemHandle");
    CUresult r = fc_ctx_ready(NULL);
    if (r)
        return r;
    if (fc.no_ipc)
        return CUDA_ERROR_NOT_SUPPORTED;
    if (!pHandle)
        return CUDA_ERROR_INVALID_VALUE;
    struct fc_ipc h = { 0 };
    memcpy(h.magic, ipc_magic, sizeof(h.magic));
    pthread_mutex_lock(&fc.lock);
    struct fc_alloc *a = fc_find(dptr);
    /* the handle names the whole allocation that holds DPTR */
    if (a && a->kind == FC_DEVICE) {
        h.pid = (int32_t)getpid();
        h.fd = a->fd;
        h.buffer_id = a->buffer_id;
        h.size = a->size;
    } else {
        r = CUDA_ERROR_INVALID_VALUE;
    }
    pthread_mutex_unlock(&fc.lock);
    if (r)
        return r;
    memset(pHandle, 0, sizeof(*pHandle));
    memcpy(pHandle->reserved, &h, sizeof(h));
    return CUDA_SUCCESS;
}

int fc_ipc_open_memfd(pid_t pid, int fd, const char *name)
{
    char path[64], link[PATH_MAX], want[80];
    snprintf(path, sizeof(path), "/proc/%d/fd/%d", (int)pid, fd);
    int mine = open(path, O_RDWR | O_CLOEXEC);
    if (mine < 0)
        return -1;
    snprintf(path, sizeof(path), "/proc/self/fd/%d", mine);
    ssize_t n = readlink(path, link, sizeof(link) - 1);
    snprintf(want, sizeof(want), "/memfd:%s", name);
    if (n < 0 || (link[n] = '\0', strncmp(link, want, strlen(want)))) {
        close(mine);
        return -1;
    }
    return mine;
}

/* Opens the exporter's memfd and checks it is the buffer the handle
 * names; -1 if not. */
static int open_exported(const struct fc_ipc *h)
{
    char name[48];
    snprintf(name, sizeof(name), "fakecuda:%llu ", (unsigned long long)h->buffer_id);
    int fd = fc_ipc_open_memfd(h->pid, h->fd, name);
    struct stat st;
    if (fd >= 0 && (fstat(fd, &st) || (uint64_t)st.st_size < h->size)) {
        close(fd);
        return -1;
    }
    return fd;
}

FC_API CUresult cuIpcOpenMemHandle_v2(CUdeviceptr *pdptr, CUipcMemHandle handle, unsigned int Flags)
{
    FC_FAULT("cuIpcOpenMemHandle_v2");
    struct CUctx_st *ctx;
    CUresult r = fc_ctx_ready(&ctx);
    if (r)
        return r;
    if (!pdptr || Flags != CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS)
        return CUDA_ERROR_INVALID_VALUE;
    struct fc_ipc h;
    memcpy(&h, handle.reserved, sizeof(h));
    if (memcmp(h.magic, ipc_magic, sizeof(h.magic)) || h.size == 0)
        return CUDA_ERROR_INVALID_HANDLE;
    if (h.pid == (int32_t)getpid())
        return CUDA_ERROR_INVALID_CONTEXT;

    pthread_mutex_lock(&fc.lock);
    for (struct fc_alloc *o = fc.allocs; o; o = o->next)
        if (o->kind == FC_IPC_IMPORT && o->ipc_pid == h.pid && o->ipc_buffer_id == h.buffer_id) {
            o->ipc_refs++;
            *pdptr = o->base;
            pthread_mutex_unlock(&fc.lock);
            return CUDA_SUCCESS;
        }
    pthread_mutex_unlock(&fc.lock);

    struct fc_alloc *a = calloc(1, sizeof(*a));
    if (!a)
        return CUDA_ERROR_OUT_OF_MEMORY;
    a->kind = FC_IPC_IMPORT;
    a->size = h.size;
    a->span = fc_round(h.size);
    a->dev = ctx->dev;
    a->ctx = ctx;
    a->ipc_pid = h.pid;
    a->ipc_fd = h.fd;
    a->ipc_buffer_id = h.buffer_id;
    a->ipc_refs = 1;
    if ((a->fd = open_exported(&h)) < 0) {
        r = CUDA_ERROR_INVALID_HANDLE;
        goto err_free;
    }
    a->alias = mmap(NULL, a->span, PROT_READ | PROT_WRITE, MAP_SHARED, a->fd, 0);
    if (a->alias == MAP_FAILED) {
        fc_log("mmap of an IPC handle's %zu bytes: %m", a->span);
        r = CUDA_ERROR_MAP_FAILED;
        goto err_close_fd;
    }
    pthread_mutex_lock(&fc.lock);
    if ((r = fc_reserve(a->dev, a->span, &a->base))) {
        pthread_mutex_unlock(&fc.lock);
        goto err_unmap;
    }
    a->buffer_id = fc.next_buffer_id++;
    a->next = fc.allocs;
    fc.allocs = a;
    pthread_mutex_unlock(&fc.lock);
    *pdptr = a->base;
    return CUDA_SUCCESS;

err_unmap:
    munmap(a->alias, a->span);
err_close_fd:
    close(a->fd);
err_free:
    free(a);
    return r;
}

FC_API CUresult cuIpcCloseMemHandle(CUdeviceptr dptr)
{
    FC_FAULT("cuIpcCloseMemHandle");
    CUresult r = fc_ctx_ready(NULL);
    if (r)
        return r;
    pthread_mutex_lock(&fc.lock);
    struct fc_alloc *a = fc_find(dptr);
    bool last = false;
    if (a && a->base == dptr && a->kind == FC_IPC_IMPORT)
        last = --a->ipc_refs == 0;
    else
        r = CUDA_ERROR_INVALID_VALUE;
    pthread_mutex_unlock(&fc.lock);
    if (r || !last)
        return r;
    /* work queued on the mapping may still run: wait for it first */
    cuCtxSynchronize();
    if ((a = fc_unlink(dptr, FC_IPC_IMPORT)))
        fc_release(a);
    return CUDA_SUCCESS;
}

/* The CUDA 4.1 entry point, which cuda.h hides behind the _v2 name. */
#undef cuIpcOpenMemHandle
FC_API CUresult cuIpcOpenMemHandle(CUdeviceptr *pdptr, CUipcMemHandle handle, unsigned int Flags);
FC_API CUresult cuIpcOpenMemHandle(CUdeviceptr *pdptr, CUipcMemHandle handle, unsigned int Flags)
{
    FC_FAULT("cuIpcOpenMemHandle");
    return cuIpcOpenMemHandle_v2(pdptr, handle, Flags);
}
