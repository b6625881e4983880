/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * cudrv_ipc.c: the export and import caches of legacy CUDA IPC
 * (cudrv_ipc.h says what they keep and why).
 */
#include "config.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "plugins/cuda-common/cudrv_ipc.h"

CUresult weft__cudrv_ipc_export(const struct wcu_drv *d, struct wcu_ipc_exports *x,
                                uintptr_t base, unsigned long long buffer_id,
                                CUipcMemHandle *handle)
{
    struct wcu_ipc_export *e;
    CUresult rc;

    for (int i = 0; i < WCU_IPC_EXPORTS; i++) {
        e = &x->slot[i];
        if (e->buffer_id == buffer_id && e->base == base) {
            *handle = e->handle;
            return CUDA_SUCCESS;
        }
    }
    rc = d->fn.cuIpcGetMemHandle(handle, (CUdeviceptr)base);
    if (rc != CUDA_SUCCESS)
        return rc;
    e = &x->slot[x->next];
    x->next = (x->next + 1) % WCU_IPC_EXPORTS;
    e->base = base;
    e->buffer_id = buffer_id;
    e->handle = *handle;
    return CUDA_SUCCESS;
}

void weft__cudrv_ipc_imports_init(struct wcu_ipc_imports *m, int keep, uint64_t keep_bytes)
{
    memset(m, 0, sizeof(*m));
    m->keep = keep;
    m->keep_bytes = keep_bytes;
}

static void unlink_map(struct wcu_ipc_imports *m, struct wcu_ipc_map *e)
{
    if (e->prev)
        e->prev->next = e->next;
    else
        m->head = e->next;
    if (e->next)
        e->next->prev = e->prev;
    else
        m->tail = e->prev;
    e->prev = e->next = NULL;
    e->listed = 0;
    m->n--;
    m->bytes -= e->size;
}

static void push_map(struct wcu_ipc_imports *m, struct wcu_ipc_map *e)
{
    e->prev = NULL;
    e->next = m->head;
    if (m->head)
        m->head->prev = e;
    else
        m->tail = e;
    m->head = e;
    e->listed = 1;
    m->n++;
    m->bytes += e->size;
}

static void close_map(const struct wcu_drv *d, struct wcu_ipc_imports *m,
                      struct wcu_ipc_map *e)
{
    if (e->listed)
        unlink_map(m, e);
    if (e->vmm) {
        d->fn.cuMemUnmap(e->mapped, e->size);
        d->fn.cuMemAddressFree(e->mapped, e->size);
    } else {
        d->fn.cuIpcCloseMemHandle(e->mapped);
    }
    free(e);
}

/* Maps a VMM allocation of size bytes from its exporter's descriptor:
 * imported, mapped at a range reserved here, read-write for device. The
 * allocation handle goes once mapped (the mapping keeps the memory). */
static CUresult map_vmm(const struct wcu_drv *d, const struct wcu_ipc_source *src,
                        uint64_t size, CUdeviceptr *mapped)
{
    CUmemGenericAllocationHandle h;
    CUmemAccessDesc access;
    CUdeviceptr va = 0;
    CUresult rc;
    int fd;

    if (!(d->features & (1u << WCU_FEAT_VMM)))
        return CUDA_ERROR_NOT_SUPPORTED;
    if ((fd = src->fetch_fd(src->arg, &rc)) < 0)
        return rc;
    rc = d->fn.cuMemImportFromShareableHandle(&h, (void *)(intptr_t)fd,
                                              CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR);
    close(fd);
    if (rc != CUDA_SUCCESS)
        return rc;
    rc = d->fn.cuMemAddressReserve(&va, size, 0, 0, 0);
    if (rc == CUDA_SUCCESS && (rc = d->fn.cuMemMap(va, size, 0, h, 0)) != CUDA_SUCCESS) {
        d->fn.cuMemAddressFree(va, size);
        va = 0;
    }
    d->fn.cuMemRelease(h);
    if (rc != CUDA_SUCCESS)
        return rc;
    memset(&access, 0, sizeof(access));
    access.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    access.location.id = src->device;
    access.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
    if ((rc = d->fn.cuMemSetAccess(va, size, &access, 1)) != CUDA_SUCCESS) {
        d->fn.cuMemUnmap(va, size);
        d->fn.cuMemAddressFree(va, size);
        return rc;
    }
    *mapped = va;
    return CUDA_SUCCESS;
}

/* Takes e out of the cache: closed now if unused, else at its last put. */
static void drop_map(const struct wcu_drv *d, struct wcu_ipc_imports *m,
                     struct wcu_ipc_map *e)
{
    if (e->refs)
        unlink_map(m, e);
    else
        close_map(d, m, e);
}

/* Closes unused mappings from the least recently used end while the
 * cache holds more than its bounds. */
static void trim(const struct wcu_drv *d, struct wcu_ipc_imports *m)
{
    struct wcu_ipc_map *e = m->tail, *prev;

    for (; e && (m->n > m->keep || m->bytes > m->keep_bytes); e = prev) {
        prev = e->prev;
        if (!e->refs)
            close_map(d, m, e);
    }
}

struct wcu_ipc_map *weft__cudrv_ipc_get(const struct wcu_drv *d, struct wcu_ipc_imports *m,
                                        uint64_t owner, uint64_t base, uint64_t size,
                                        unsigned long long buffer_id,
                                        const struct wcu_ipc_source *src, CUresult *rc)
{
    struct wcu_ipc_map *e;

    for (e = m->head; e; e = e->next)
        if (e->owner == owner && e->base == base)
            break;
    if (e && e->buffer_id == buffer_id && e->size == size) {
        m->hits++;
        unlink_map(m, e);
        push_map(m, e);
        e->refs++;
        return e;
    }
    if (e)
        drop_map(d, m, e);
    e = calloc(1, sizeof(*e));
    if (!e) {
        *rc = CUDA_ERROR_OUT_OF_MEMORY;
        return NULL;
    }
    if (src->handle)
        *rc = d->fn.cuIpcOpenMemHandle(&e->mapped, *src->handle,
                                       CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS);
    else
        *rc = map_vmm(d, src, size, &e->mapped);
    if (*rc != CUDA_SUCCESS) {
        free(e);
        return NULL;
    }
    e->vmm = !src->handle;
    m->opens++;
    m->vmm_opens += (unsigned long long)e->vmm;
    e->owner = owner;
    e->base = base;
    e->size = size;
    e->buffer_id = buffer_id;
    e->refs = 1;
    push_map(m, e);
    trim(d, m);
    return e;
}

void weft__cudrv_ipc_put(const struct wcu_drv *d, struct wcu_ipc_imports *m,
                         struct wcu_ipc_map *e)
{
    if (--e->refs > 0)
        return;
    if (!e->listed)
        close_map(d, m, e);
    else
        trim(d, m);
}

void weft__cudrv_ipc_forget(const struct wcu_drv *d, struct wcu_ipc_imports *m,
                            uint64_t owner)
{
    for (struct wcu_ipc_map *e = m->head, *next; e; e = next) {
        next = e->next;
        if (e->owner == owner)
            drop_map(d, m, e);
    }
}

void weft__cudrv_ipc_close_all(const struct wcu_drv *d, struct wcu_ipc_imports *m)
{
    while (m->head)
        close_map(d, m, m->head);
}
