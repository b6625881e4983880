/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * vmm_map.c: the virtual side of virtual memory management:
 * cuMemAddressReserve, cuMemAddressFree, cuMemMap, cuMemUnmap and
 * cuMemSetAccess.
 *
 * A reservation is address space of device 0's arena (VMM addresses
 * belong to the process, not to a device; any arena keeps them out of
 * reach of the host), aligned to the granularity or the alignment asked
 * for. cuMemMap maps a physical allocation (vmm_phys.c) there: the
 * mapping becomes an allocation of kind FC_VMM, with the memfd mapped a
 * second time where only the double looks, exactly as cuMemAlloc's
 * memory is, so the host still faults on the device address. As the
 * reference says, a new mapping has no access until cuMemSetAccess
 * grants it: copies into it fail until then. Each mapping gets a buffer
 * id of its own, so a range unmapped and mapped again is seen as new.
 *
 * Errors, all CUDA_ERROR_INVALID_VALUE: addresses or sizes not multiples
 * of the granularity, a mapping outside one reservation or over a range
 * already mapped, an offset other than 0 (the reference: it must be
 * zero for now), cuMemUnmap or cuMemSetAccess of a range that cuts a
 * mapping (the reference forbids unmapping a sub-range; the double asks
 * the same of cuMemSetAccess, a restriction of its own), and freeing a
 * reservation that differs from the one made or is still mapped.
 * Read-only access is granted as read-write: nothing checks writes.
 */
#include "config.h"

#include <stdlib.h>
#include <sys/mman.h>

#include "tests/fakecuda/fakecuda.h"

static CUresult vmm_ready(void)
{
    CUresult r = fc_ready();
    if (r)
        return r;
    return fc.no_vmm ? CUDA_ERROR_NOT_SUPPORTED : CUDA_SUCCESS;
}

static bool overlaps(uintptr_t a, size_t an, uintptr_t b, size_t bn)
{
    return a < b + bn && b < a + an;
}

FC_API CUresult cuMemAddressReserve(CUdeviceptr *ptr, size_t size, size_t alignment,
                                    CUdeviceptr addr, unsigned long long flags)
{
    FC_FAULT("cuMemAddressReserve");
    (void)addr;     /* a hint the reference lets the driver ignore */
    CUresult r = vmm_ready();
    if (r)
        return r;
    if (alignment == 0)
        alignment = FC_VMM_GRANULARITY;
    if (!ptr || flags || size == 0 || size % FC_VMM_GRANULARITY ||
        (alignment & (alignment - 1)) || alignment < FC_VMM_GRANULARITY)
        return CUDA_ERROR_INVALID_VALUE;
    struct fc_resv *v = calloc(1, sizeof(*v));
    if (!v)
        return CUDA_ERROR_OUT_OF_MEMORY;
    pthread_mutex_lock(&fc.lock);
    /* take ALIGNMENT more than needed and give back both ends */
    uintptr_t got;
    if ((r = fc_reserve(0, size + alignment, &got))) {
        pthread_mutex_unlock(&fc.lock);
        free(v);
        return r;
    }
    v->base = (got + alignment - 1) & ~(uintptr_t)(alignment - 1);
    v->size = size;
    if (v->base > got)
        fc_unreserve(0, got, v->base - got);
    if (got + alignment > v->base)
        fc_unreserve(0, v->base + size, got + alignment - v->base);
    v->next = fc.resvs;
    fc.resvs = v;
    pthread_mutex_unlock(&fc.lock);
    *ptr = v->base;
    return CUDA_SUCCESS;
}

/* The first mapping that overlaps [ADDR, ADDR+SIZE); fc.lock held. */
static struct fc_alloc *mapped_in(uintptr_t addr, size_t size)
{
    for (struct fc_alloc *a = fc.allocs; a; a = a->next)
        if (a->kind == FC_VMM && overlaps(a->base, a->size, addr, size))
            return a;
    return NULL;
}

/* Whether [ADDR, ADDR+SIZE) is made of whole mappings and nothing else;
 * fc.lock held. */
static bool whole_mappings(uintptr_t addr, size_t size)
{
    size_t covered = 0;
    for (struct fc_alloc *a = fc.allocs; a; a = a->next) {
        if (a->kind != FC_VMM || !overlaps(a->base, a->size, addr, size))
            continue;
        if (a->base < addr || a->base + a->size > addr + size)
            return false;
        covered += a->size;
    }
    return size && covered == size;
}

FC_API CUresult cuMemAddressFree(CUdeviceptr ptr, size_t size)
{
    FC_FAULT("cuMemAddressFree");
    CUresult r = vmm_ready();
    if (r)
        return r;
    pthread_mutex_lock(&fc.lock);
    struct fc_resv **pp = &fc.resvs;
    while (*pp && !((*pp)->base == ptr && (*pp)->size == size))
        pp = &(*pp)->next;
    struct fc_resv *v = *pp;
    if (!v || mapped_in(ptr, size)) {
        r = CUDA_ERROR_INVALID_VALUE;
    } else {
        *pp = v->next;
        fc_unreserve(0, v->base, v->size);
        free(v);
    }
    pthread_mutex_unlock(&fc.lock);
    return r;
}

FC_API CUresult cuMemMap(CUdeviceptr ptr, size_t size, size_t offset,
                         CUmemGenericAllocationHandle handle, unsigned long long flags)
{
    FC_FAULT("cuMemMap");
    CUresult r = vmm_ready();
    if (r)
        return r;
    if (flags || offset || size == 0 || size % FC_VMM_GRANULARITY || ptr % FC_VMM_GRANULARITY)
        return CUDA_ERROR_INVALID_VALUE;
    struct fc_alloc *a = calloc(1, sizeof(*a));
    if (!a)
        return CUDA_ERROR_OUT_OF_MEMORY;
    pthread_mutex_lock(&fc.lock);
    struct fc_phys *p = fc_phys_find(handle);
    bool inside = false;
    for (struct fc_resv *v = fc.resvs; v && !inside; v = v->next)
        inside = ptr >= v->base && ptr + size <= v->base + v->size;
    if (!p || size > p->size || !inside || mapped_in(ptr, size)) {
        r = CUDA_ERROR_INVALID_VALUE;
        goto err_unlock;
    }
    a->alias = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, p->fd, 0);
    if (a->alias == MAP_FAILED) {
        fc_log("mmap of a %zu-byte mapping: %m", size);
        r = CUDA_ERROR_OUT_OF_MEMORY;
        goto err_unlock;
    }
    a->kind = FC_VMM;
    a->base = ptr;
    a->size = a->span = size;
    a->fd = -1;
    a->ipc_fd = -1;
    a->dev = p->dev;
    a->phys = p;
    a->buffer_id = fc.next_buffer_id++;
    p->maps++;
    a->next = fc.allocs;
    fc.allocs = a;
    pthread_mutex_unlock(&fc.lock);
    return CUDA_SUCCESS;

err_unlock:
    pthread_mutex_unlock(&fc.lock);
    free(a);
    return r;
}

/* Waits for the work queued on every context's streams, which may still
 * read or write a mapping about to go. */
static void wait_all_streams(void)
{
    for (int d = 0; d < fc.ndevices; d++) {
        pthread_mutex_lock(&fc.lock);
        struct CUstream_st *first = fc.dev[d].primary.streams;
        pthread_mutex_unlock(&fc.lock);
        /* streams are never freed and are pushed at the head */
        for (struct CUstream_st *s = first; s; s = s->next) {
            pthread_mutex_lock(&s->lock);
            uint64_t seq = s->queued;
            pthread_mutex_unlock(&s->lock);
            fc_stream_wait(s, seq);
        }
    }
}

FC_API CUresult cuMemUnmap(CUdeviceptr ptr, size_t size)
{
    FC_FAULT("cuMemUnmap");
    CUresult r = vmm_ready();
    if (r)
        return r;
    pthread_mutex_lock(&fc.lock);
    bool ok = whole_mappings(ptr, size);
    pthread_mutex_unlock(&fc.lock);
    if (!ok)
        return CUDA_ERROR_INVALID_VALUE;
    wait_all_streams();
    pthread_mutex_lock(&fc.lock);
    for (struct fc_alloc **pp = &fc.allocs; *pp;) {
        struct fc_alloc *a = *pp;
        if (a->kind != FC_VMM || !overlaps(a->base, a->size, ptr, size)) {
            pp = &a->next;
            continue;
        }
        *pp = a->next;
        munmap(a->alias, a->span);
        a->phys->maps--;
        fc_phys_put(a->phys);
        free(a);
    }
    pthread_mutex_unlock(&fc.lock);
    return CUDA_SUCCESS;
}

FC_API CUresult cuMemSetAccess(CUdeviceptr ptr, size_t size, const CUmemAccessDesc *desc,
                               size_t count)
{
    FC_FAULT("cuMemSetAccess");
    CUresult r = vmm_ready();
    if (r)
        return r;
    if (!desc || count == 0)
        return CUDA_ERROR_INVALID_VALUE;
    bool any = false;
    for (size_t i = 0; i < count; i++) {
        if (desc[i].location.type != CU_MEM_LOCATION_TYPE_DEVICE || desc[i].location.id < 0 ||
            desc[i].location.id >= fc.ndevices ||
            (desc[i].flags != CU_MEM_ACCESS_FLAGS_PROT_NONE &&
             desc[i].flags != CU_MEM_ACCESS_FLAGS_PROT_READ &&
             desc[i].flags != CU_MEM_ACCESS_FLAGS_PROT_READWRITE))
            return CUDA_ERROR_INVALID_VALUE;
        any |= desc[i].flags != CU_MEM_ACCESS_FLAGS_PROT_NONE;
    }
    pthread_mutex_lock(&fc.lock);
    if (whole_mappings(ptr, size)) {
        for (struct fc_alloc *a = fc.allocs; a; a = a->next)
            if (a->kind == FC_VMM && overlaps(a->base, a->size, ptr, size))
                a->accessible = any;
    } else {
        r = CUDA_ERROR_INVALID_VALUE;
    }
    pthread_mutex_unlock(&fc.lock);
    return r;
}
