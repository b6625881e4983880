/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * comm.h: communicators.
 *
 * A communicator is a group of world ranks plus a matching context: every
 * message it sends carries its context id in the upper half of the 64-bit
 * transport tag, so operations on different communicators never match.
 * User point-to-point traffic uses context_id, internal (collective)
 * traffic context_id + 1, so user tags never mix with weft's own.
 */
#ifndef WEFT_CORE_COMM_H
#define WEFT_CORE_COMM_H

#include <stdint.h>

#include "core/comm/comm_nodes.h"
#include "core/progress/instance.h"

struct weft__subop;

#define WEFT__COMM_MAGIC 0x7765667463u /* "weftc": catches stale handles */

struct weft_comm {
    uint64_t magic;
    weft__instance_t *inst;
    int rank, size;
    int local_rank, local_size;
    int *world_ranks;                /* size entries: comm rank -> world rank */
    int *comm_rank_of;               /* inst->size entries: world rank -> comm rank or -1 */
    uint32_t context_id;             /* even; context_id + 1 is internal */
    int aborted;                     /* only this communicator's thread sets it */
    /* An abort notice from another member, found by whichever thread's
     * progress polled the notices: that thread only sets this (release,
     * under inst->lock, here and on internal), and this communicator's
     * thread applies the abort when it next enters weft for it
     * (weft__comm_aborted), since only it may walk the request lists. */
    int abort_pending;
    int is_world;
    /* The one transport every member is reached through, or NULL when
     * several are used: then receives go through the pending queue below. */
    weft__plugin_t *single_plugin;
    /* Receives not yet handed to a transport, in post order: in a
     * communicator spanning several transports, a receive from any source
     * is matched by probing each transport, and later receives wait behind
     * it so that matching stays in post order (see request.c). */
    struct weft__subop *pending_head, *pending_tail;
    /* Requests with operations in flight, so abort/destroy can fail them.
     * Only the communicator's thread links and unlinks them: a request the
     * user freed early is reaped by any thread, which hands it back here
     * through reaped instead of unlinking it (request.c). */
    struct weft_request *active;
    /* Detached requests another thread's progress found done, for this
     * communicator's thread to free: under inst->lock, peeked at without
     * it (atomic) by every request creation. */
    struct weft_request *reaped;
    /* Detached requests no other thread may advance (collectives, and
     * receives still in the pending queue): this communicator's thread
     * polls them when it creates a request. */
    struct weft_request *held;
    /* The same group on the internal context (context_id + 1), through
     * which collectives and communicator creation talk; it shares the rank
     * tables and is freed with this communicator. NULL on itself. */
    struct weft_comm *internal;
    struct weft_comm *parent;        /* on internal: the user's communicator; else NULL */
    uint32_t coll_seq;               /* collectives started on this comm */
    weft__node_map_t nodes;          /* its ranks by node (node-aware collectives) */
    struct weft__tune_cache *tune;   /* the tuner's choices (tune/table.c), or NULL */
    struct weft__shared *shared;     /* its node-shared segment, once mapped */
    uint32_t shared_gen;             /* shared collectives chosen on it so far */
    /* inst->comms, so that an abort notice finds its communicator. */
    struct weft_comm *next_comm, *prev_comm;
};

/* Tag encoding of the transport ABI. */
static inline uint64_t weft__tag(uint32_t context, int user_tag)
{
    return ((uint64_t)context << 32) | (uint32_t)user_tag;
}
#define WEFT__TAG_IGNORE_USER 0xffffffffull

/* Checks that comm is a live communicator (WEFT_ERR_INVALID_ARG otherwise). */
weft_result_t weft__comm_check(weft_comm_t comm, const char *fn);

/* A new communicator over inst with the given world ranks (copied). */
weft_result_t weft__comm_create(weft__instance_t *inst, int n, const int *world_ranks,
                                uint32_t context_id, weft_comm_t *out);
void weft__comm_free(weft_comm_t comm);
/* Marks comm aborted here and fails what is pending on it with
 * WEFT_ERR_ABORTED (weft_comm_abort, or a notice from another member).
 * On comm's own thread only: it walks comm's request lists. */
void weft__comm_abort_local(weft_comm_t comm);
/* Applies the abort a notice left pending on comm (or on the communicator
 * whose internal comm is), on comm's own thread. */
void weft__comm_abort_pending(weft_comm_t comm);

/* Whether comm was aborted, after applying an abort a notice left
 * pending. On comm's own thread only, as every entry into weft for comm
 * and every wait on one of its requests is. One relaxed load when no
 * notice came: this runs on every operation and every pass of a wait. */
static inline int weft__comm_aborted(weft_comm_t comm)
{
    if (__builtin_expect(__atomic_load_n(&comm->abort_pending, __ATOMIC_RELAXED), 0))
        weft__comm_abort_pending(comm);
    return comm->aborted;
}

#endif /* WEFT_CORE_COMM_H */
