/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * comm.h: communicators.
 *
 * A communicator is a group of world ranks with two matching contexts
 * (mctx.h): its users' point-to-point traffic on an even context id, and
 * weft's own (collectives, communicator creation) on the odd one after
 * it, so user tags never mix with weft's. Layers above attach their own
 * state to it (the tuner's choices, the node-shared segment) and register
 * a destructor that frees it with the communicator.
 */
#ifndef WEFT_CORE_COMM_H
#define WEFT_CORE_COMM_H

#include <stdint.h>

#include "core/comm/comm_nodes.h"
#include "core/progress/instance.h"
#include "core/progress/mctx.h"

#define WEFT__COMM_MAGIC 0x7765667463u /* "weftc": catches stale handles */

/* Frees what a layer above attached to comm (its arg). */
typedef void (*weft__comm_dtor_fn)(struct weft_comm *comm, void *arg);
#define WEFT__COMM_DTORS_MAX 4

struct weft_comm {
    uint64_t magic;
    weft__instance_t *inst;
    int rank, size;
    int local_rank, local_size;
    int *world_ranks;                /* size entries: comm rank -> world rank */
    int *comm_rank_of;               /* world size entries: world rank -> comm rank or -1 */
    weft__mctx_t ctx;                /* the users' traffic */
    weft__mctx_t internal;           /* weft's own: ctx.context_id + 1 */
    int is_world;
    uint32_t coll_seq;               /* collectives started on this comm */
    weft__node_map_t nodes;          /* its ranks by node (node-aware collectives) */
    /* What layers above attached, freed in reverse order of attachment
     * when the communicator goes. */
    struct {
        weft__comm_dtor_fn fn;
        void *arg;
    } dtors[WEFT__COMM_DTORS_MAX];
    int ndtors;
    struct weft__tune_cache *tune;   /* tune: its choices (tune/table.c), or NULL */
    struct weft__shared *shared;     /* coll/shared: its node-shared segment, once mapped */
    uint32_t shared_gen;             /* coll/shared: shared collectives chosen on it so far */
    /* The CUDA stream its operations are ordered on (api/stream.c), or
     * NULL. Once set, a thread of that layer runs the communicator's
     * operations and is its own thread; the caller's thread must wait for
     * it (quiesce) before anything else uses the communicator. */
    struct weft__stream *stream;
    /* api/coll_device.c: its GPU-to-GPU collectives' state, made at
     * first use (atomic), or NULL. */
    struct weft__coll_device *device_coll;
    weft_result_t (*quiesce)(struct weft_comm *comm, const char *fn);
    /* inst->comms, so that an abort notice finds its communicator. */
    struct weft_comm *next_comm, *prev_comm;
};

/* Checks that comm is a live communicator (WEFT_ERR_INVALID_ARG otherwise). */
weft_result_t weft__comm_check(weft_comm_t comm, const char *fn);

/* A new communicator over inst with the given world ranks (copied). */
weft_result_t weft__comm_create(weft__instance_t *inst, int n, const int *world_ranks,
                                uint32_t context_id, weft_comm_t *out);
void weft__comm_free(weft_comm_t comm);
/* Registers fn(comm, arg) to run when comm is freed, before its ranks
 * and node map go. WEFT_ERR_INTERNAL past WEFT__COMM_DTORS_MAX. */
weft_result_t weft__comm_add_destructor(weft_comm_t comm, weft__comm_dtor_fn fn, void *arg);

/* Whether comm was aborted, after applying an abort a notice left
 * pending (weft__mctx_aborted). On comm's own thread only. */
static inline int weft__comm_aborted(weft_comm_t comm)
{
    /* A communicator on a stream belongs to the stream's thread: the
     * caller's only looks. */
    if (__builtin_expect(comm->stream != NULL, 0))
        return __atomic_load_n(&comm->ctx.aborted, __ATOMIC_ACQUIRE) ||
               __atomic_load_n(&comm->ctx.abort_pending, __ATOMIC_ACQUIRE);
    return weft__mctx_aborted(&comm->ctx);
}

/* Waits until nothing runs on comm but the calling thread: a
 * communicator on a stream first finishes what the stream queued
 * (comm->quiesce). fn names the caller for errors. */
static inline weft_result_t weft__comm_quiesce(weft_comm_t comm, const char *fn)
{
    return comm->quiesce ? comm->quiesce(comm, fn) : WEFT_SUCCESS;
}

#endif /* WEFT_CORE_COMM_H */
