/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * cudrv_ipc.h: legacy CUDA IPC as the GPU transports share it: the
 * handles a process exports, and the mappings of other processes' memory
 * it keeps (cudrv_ipc.c).
 *
 * Handles are made for a whole allocation (the driver maps allocations,
 * not ranges), so both caches are keyed by the allocation's address and
 * checked against CUDA's buffer id, which the driver never reuses within
 * a process: memory freed and allocated again at the same address gets a
 * new handle at the exporter and a new mapping at the importer, never
 * the old one.
 *
 * A mapping keeps the exporter's memory allocated after the exporter
 * frees it, so an importer keeps a bounded number of them and of mapped
 * bytes, least recently used first out. A mapping in use by an operation
 * in flight holds a reference and is never closed under it; the bounds
 * may be passed while every mapping is in use.
 *
 * A VMM allocation (cuMemCreate) has no legacy handle: its exporter
 * hands over a POSIX file descriptor of it (over a Unix socket, with
 * SCM_RIGHTS), which the importer imports, maps at an address range of
 * its own and makes accessible to its device; closing unmaps it and
 * frees the range.
 *
 * Not thread-safe: each cache belongs to one transport, which calls it
 * under its own lock. Every call that reaches the driver needs a current
 * context on the calling thread (the exporter's device for export, the
 * importing device for open).
 */
#ifndef WEFT_CUDA_COMMON_CUDRV_IPC_H
#define WEFT_CUDA_COMMON_CUDRV_IPC_H

#include <stdint.h>

#include "plugins/cuda-common/cudrv.h"

#define WCU_IPC_EXPORTS 64

struct wcu_ipc_export {
    uintptr_t base;
    unsigned long long buffer_id;       /* 0: unused slot */
    CUipcMemHandle handle;
};

struct wcu_ipc_exports {
    struct wcu_ipc_export slot[WCU_IPC_EXPORTS];
    int next;                           /* the slot a miss replaces */
};

/* One mapping of another process's allocation. */
struct wcu_ipc_map {
    struct wcu_ipc_map *prev, *next;    /* most recently used first */
    uint64_t owner;                     /* whose: the transport's key (a rank, a pid) */
    uint64_t base, size, buffer_id;     /* the allocation, in the exporter */
    CUdeviceptr mapped;                 /* where it is mapped here */
    int vmm;                            /* a VMM allocation imported, not a legacy handle */
    int refs;                           /* operations in flight using it */
    int listed;                         /* in the cache (0: stale, closes at the last put) */
};

struct wcu_ipc_imports {
    struct wcu_ipc_map *head, *tail;
    int n, keep;                        /* mappings, and the most kept unused */
    uint64_t bytes, keep_bytes;         /* mapped bytes, and the most kept */
    unsigned long long opens, hits;     /* mappings made, cache hits */
    unsigned long long vmm_opens;       /* of the mappings made, VMM imports */
};

/* What a miss maps: a legacy handle, or a VMM allocation whose POSIX file
 * descriptor fetch_fd gets from the exporter (only on a miss: it costs a
 * round trip), mapped read-write for device ordinal device. fetch_fd
 * returns the descriptor, which the cache closes, or -1 with *rc. */
struct wcu_ipc_source {
    const CUipcMemHandle *handle;       /* legacy IPC; NULL for VMM */
    int (*fetch_fd)(void *arg, CUresult *rc);
    void *arg;
    int device;
};

/* The handle of allocation (base, buffer_id): from x, or made now with
 * cuIpcGetMemHandle. CUDA_SUCCESS or the driver's error. */
CUresult weft__cudrv_ipc_export(const struct wcu_drv *d, struct wcu_ipc_exports *x,
                                uintptr_t base, unsigned long long buffer_id,
                                CUipcMemHandle *handle);

/* An empty cache keeping at most keep unused mappings and keep_bytes. */
void weft__cudrv_ipc_imports_init(struct wcu_ipc_imports *m, int keep, uint64_t keep_bytes);

/* owner's allocation (base, size, buffer_id), mapped here with one
 * reference taken: from m when the buffer id matches, else mapped from
 * src (a stale mapping of that address is closed first, or, in use, left
 * to its users and forgotten). NULL with *rc on failure. */
struct wcu_ipc_map *weft__cudrv_ipc_get(const struct wcu_drv *d, struct wcu_ipc_imports *m,
                                        uint64_t owner, uint64_t base, uint64_t size,
                                        unsigned long long buffer_id,
                                        const struct wcu_ipc_source *src, CUresult *rc);
/* Gives back get's reference; the bounds apply again. */
void weft__cudrv_ipc_put(const struct wcu_drv *d, struct wcu_ipc_imports *m,
                         struct wcu_ipc_map *e);
/* Closes owner's unused mappings (a peer gone); those in use close at
 * their put. */
void weft__cudrv_ipc_forget(const struct wcu_drv *d, struct wcu_ipc_imports *m,
                            uint64_t owner);
/* Closes every mapping of the cache (the transport is going away, with
 * nothing in flight). */
void weft__cudrv_ipc_close_all(const struct wcu_drv *d, struct wcu_ipc_imports *m);

#endif /* WEFT_CUDA_COMMON_CUDRV_IPC_H */
