/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * memory.c: device memory. Each device's arena is address space reserved
 * PROT_NONE at cuInit and never made accessible, so that a host load or
 * store through a device pointer faults as it would on a GPU. An
 * allocation takes whole pages of it: the most recently freed range
 * that is large enough, else fresh space above the others, as the
 * driver hands a freed address back to the next cuMemAlloc of that size.
 * Its bytes live in a memfd named "fakecuda:BUFFER_ID" (ipc.c checks the
 * name), mapped a second time, readable and writable, where only the
 * double looks (the alias). New memory is filled with 0xa5: the
 * reference says cuMemAlloc does not clear it, and a pattern shows a
 * read of bytes never written. Buffer ids count up from 1 over every
 * kind of allocation and are never reused.
 */
#define _GNU_SOURCE
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "tests/fakecuda/fakecuda.h"

size_t fc_round(size_t n)
{
    size_t page = (size_t)sysconf(_SC_PAGESIZE);
    return (n + page - 1) / page * page;
}

struct fc_alloc *fc_find(uintptr_t addr)
{
    for (struct fc_alloc *a = fc.allocs; a; a = a->next)
        if (addr >= a->base && addr - a->base < a->size)
            return a;
    return NULL;
}

/* A device address that no allocation holds (freed, or never given). */
static bool in_arena(uintptr_t addr)
{
    for (int d = 0; d < fc.ndevices; d++)
        if (addr >= fc.dev[d].arena && addr - fc.dev[d].arena < fc.dev[d].arena_size)
            return true;
    return false;
}

void *fc_resolve(uintptr_t addr, size_t n, enum fc_where where)
{
    pthread_mutex_lock(&fc.lock);
    struct fc_alloc *a = fc_find(addr);
    void *p = NULL;
    if (a) {
        bool on_device = a->kind == FC_DEVICE || a->kind == FC_IPC_IMPORT || a->kind == FC_VMM;
        bool fits = a->size - (addr - a->base) >= n;
        /* a VMM mapping without access granted faults on a GPU */
        if (a->kind == FC_VMM && !a->accessible)
            fits = false;
        if (fits && (where == FC_ANY || where == FC_KNOWN ||
                     (where == FC_ON_DEVICE) == on_device))
            p = a->alias + (addr - a->base);
    } else if (addr && !in_arena(addr) && (where == FC_ANY || where == FC_ON_HOST)) {
        /* pageable host memory: with unified addressing copies take it */
        p = (void *)addr;
    }
    pthread_mutex_unlock(&fc.lock);
    return p;
}

/* Called with fc.lock held. */
CUresult fc_reserve(int dev, size_t span, uintptr_t *addr)
{
    struct fc_device *d = &fc.dev[dev];
    for (struct fc_hole **pp = &d->holes; *pp; pp = &(*pp)->next) {
        struct fc_hole *h = *pp;
        if (h->size < span)
            continue;
        *addr = h->addr;
        h->addr += span;
        h->size -= span;
        if (!h->size) {
            *pp = h->next;
            free(h);
        }
        return CUDA_SUCCESS;
    }
    if (d->arena_size - d->arena_top < span)
        return CUDA_ERROR_OUT_OF_MEMORY;
    *addr = d->arena + d->arena_top;
    d->arena_top += span;
    return CUDA_SUCCESS;
}

/* Called with fc.lock held. The range is pushed first, to be found first. */
void fc_unreserve(int dev, uintptr_t addr, size_t span)
{
    struct fc_hole *h = malloc(sizeof(*h));
    if (!h)
        return;     /* the range is lost to later allocations, nothing worse */
    h->addr = addr;
    h->size = span;
    h->next = fc.dev[dev].holes;
    fc.dev[dev].holes = h;
}

FC_API CUresult cuMemAlloc_v2(CUdeviceptr *dptr, size_t bytesize)
{
    FC_FAULT("cuMemAlloc_v2");
    struct CUctx_st *ctx;
    CUresult r = fc_ctx_ready(&ctx);
    if (r)
        return r;
    if (!dptr || bytesize == 0)
        return CUDA_ERROR_INVALID_VALUE;
    struct fc_alloc *a = calloc(1, sizeof(*a));
    if (!a)
        return CUDA_ERROR_OUT_OF_MEMORY;
    a->kind = FC_DEVICE;
    a->size = bytesize;
    a->span = fc_round(bytesize);
    a->dev = ctx->dev;
    a->ctx = ctx;
    a->ipc_fd = -1;
    pthread_mutex_lock(&fc.lock);
    a->buffer_id = fc.next_buffer_id++;
    char name[48];
    snprintf(name, sizeof(name), "fakecuda:%llu", a->buffer_id);
    a->fd = memfd_create(name, MFD_CLOEXEC);
    if (a->fd < 0) {
        fc_log("memfd_create: %m");
        r = CUDA_ERROR_OUT_OF_MEMORY;
        goto err_free;
    }
    if (ftruncate(a->fd, (off_t)a->span)) {
        fc_log("ftruncate of %zu bytes: %m", a->span);
        r = CUDA_ERROR_OUT_OF_MEMORY;
        goto err_close_fd;
    }
    a->alias = mmap(NULL, a->span, PROT_READ | PROT_WRITE, MAP_SHARED, a->fd, 0);
    if (a->alias == MAP_FAILED) {
        fc_log("mmap of %zu bytes: %m", a->span);
        r = CUDA_ERROR_OUT_OF_MEMORY;
        goto err_close_fd;
    }
    if ((r = fc_reserve(a->dev, a->span, &a->base)))
        goto err_unmap;
    memset(a->alias, 0xa5, a->span);
    a->next = fc.allocs;
    fc.allocs = a;
    pthread_mutex_unlock(&fc.lock);
    *dptr = a->base;
    return CUDA_SUCCESS;

err_unmap:
    munmap(a->alias, a->span);
err_close_fd:
    close(a->fd);
err_free:
    pthread_mutex_unlock(&fc.lock);
    free(a);
    return r;
}

/* Unlinks the allocation of KIND based at ADDR; NULL if there is none. */
static struct fc_alloc *unlink_alloc(uintptr_t addr, enum fc_kind kind)
{
    for (struct fc_alloc **pp = &fc.allocs; *pp; pp = &(*pp)->next) {
        struct fc_alloc *a = *pp;
        if (a->base == addr && a->kind == kind) {
            *pp = a->next;
            return a;
        }
    }
    return NULL;
}

struct fc_alloc *fc_unlink(uintptr_t addr, enum fc_kind kind)
{
    pthread_mutex_lock(&fc.lock);
    struct fc_alloc *a = unlink_alloc(addr, kind);
    pthread_mutex_unlock(&fc.lock);
    return a;
}

/* Frees device memory (own or imported) once it is unlinked. */
void fc_release(struct fc_alloc *a)
{
    munmap(a->alias, a->span);
    if (a->fd >= 0)
        close(a->fd);
    pthread_mutex_lock(&fc.lock);
    fc_unreserve(a->dev, a->base, a->span);
    pthread_mutex_unlock(&fc.lock);
    free(a);
}

FC_API CUresult cuMemFree_v2(CUdeviceptr dptr)
{
    FC_FAULT("cuMemFree_v2");
    CUresult r = fc_ctx_ready(NULL);
    if (r)
        return r;
    pthread_mutex_lock(&fc.lock);
    struct fc_alloc *a = fc_find(dptr);
    bool ok = a && a->base == dptr && a->kind == FC_DEVICE;
    pthread_mutex_unlock(&fc.lock);
    if (!ok)
        return CUDA_ERROR_INVALID_VALUE;
    /* as cudaFree, the free waits for work queued before it, which may
     * still use the memory */
    cuCtxSynchronize();
    a = fc_unlink(dptr, FC_DEVICE);
    if (!a)
        return CUDA_ERROR_INVALID_VALUE;
    fc_release(a);
    return CUDA_SUCCESS;
}

FC_API CUresult cuMemGetAddressRange_v2(CUdeviceptr *pbase, size_t *psize, CUdeviceptr dptr)
{
    FC_FAULT("cuMemGetAddressRange_v2");
    CUresult r = fc_ctx_ready(NULL);
    if (r)
        return r;
    pthread_mutex_lock(&fc.lock);
    struct fc_alloc *a = fc_find(dptr);
    if (a && (a->kind == FC_DEVICE || a->kind == FC_IPC_IMPORT || a->kind == FC_VMM)) {
        if (pbase)
            *pbase = a->base;
        if (psize)
            *psize = a->size;
    } else {
        r = CUDA_ERROR_NOT_FOUND;
    }
    pthread_mutex_unlock(&fc.lock);
    return r;
}

FC_API CUresult cuMemGetInfo_v2(size_t *free_bytes, size_t *total)
{
    FC_FAULT("cuMemGetInfo_v2");
    struct CUctx_st *ctx;
    CUresult r = fc_ctx_ready(&ctx);
    if (r)
        return r;
    if (!free_bytes || !total)
        return CUDA_ERROR_INVALID_VALUE;
    pthread_mutex_lock(&fc.lock);
    size_t used = 0;
    for (struct fc_alloc *a = fc.allocs; a; a = a->next)
        if ((a->kind == FC_DEVICE || a->kind == FC_IPC_IMPORT || a->kind == FC_VMM) &&
            a->dev == ctx->dev)
            used += a->span;
    *total = fc.dev[ctx->dev].arena_size;
    *free_bytes = *total - used;
    pthread_mutex_unlock(&fc.lock);
    return CUDA_SUCCESS;
}
