/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * mctx.h: matching contexts.
 *
 * A matching context is what the request layer knows of a communicator:
 * its members, its context id (every message it sends carries the id in
 * the upper half of the 64-bit transport tag, so operations on different
 * contexts never match), the requests in flight on it, the receives not
 * yet handed to a transport, and whether it was aborted. A communicator
 * has two: its users' traffic on an even context id, and weft's own
 * (collectives, communicator creation) on the odd one after it, so that
 * user tags never mix with weft's. The two are siblings: an abort of one
 * is an abort of both.
 *
 * Threading: a context is used by one thread at a time (its
 * communicator's), which alone links and unlinks its requests. Other
 * threads touch only abort_pending and reaped, as said below.
 */
#ifndef WEFT_CORE_MCTX_H
#define WEFT_CORE_MCTX_H

#include <stdint.h>

#include "weft.h"
#include "core/progress/instance.h"

struct weft__subop;

typedef struct weft__mctx {
    weft__instance_t *inst;
    uint32_t context_id;
    int size;                        /* members */
    const int *world_ranks;          /* member -> world rank (the owner's array) */
    const int *member_of;            /* world rank -> member or -1 (the owner's array) */
    /* The one transport every member is reached through, or NULL when
     * several are used: then receives go through the pending queue below. */
    weft__plugin_t *single_plugin;
    int aborted;                     /* only the context's thread sets it */
    /* An abort notice from another member, found by whichever thread's
     * progress polled the notices: that thread only sets this (release,
     * under inst->lock), and the context's thread applies the abort when
     * it next enters weft for it (weft__mctx_aborted), since only it may
     * walk the request lists. */
    int abort_pending;
    /* Receives not yet handed to a transport, in post order: where several
     * transports are used, a receive from any source is matched by
     * probing each transport, and later receives wait behind it so that
     * matching stays in post order (see request.c). */
    struct weft__subop *pending_head, *pending_tail;
    /* Requests with operations in flight, so abort and destroy can fail
     * them. Only the context's thread links and unlinks them: a request
     * the user freed early is reaped by any thread, which hands it back
     * here through reaped instead of unlinking it (request.c). */
    struct weft_request *active;
    /* Detached requests another thread's progress found done, for this
     * context's thread to free: under inst->lock, peeked at without it
     * (atomic) by every request creation. */
    struct weft_request *reaped;
    /* Detached requests no other thread may advance (those with an owner,
     * such as collectives, and receives still in the pending queue): the
     * context's thread polls them when it creates a request. */
    struct weft_request *held;
    struct weft__mctx *sibling;      /* the communicator's other context, or NULL */
} weft__mctx_t;

/* Tag encoding of the transport ABI. */
static inline uint64_t weft__tag(uint32_t context, int user_tag)
{
    return ((uint64_t)context << 32) | (uint32_t)user_tag;
}
#define WEFT__TAG_IGNORE_USER 0xffffffffull

/* Sets up ctx for the n members whose world ranks and reverse map the
 * caller keeps alive as long as ctx. */
void weft__mctx_init(weft__mctx_t *ctx, weft__instance_t *inst, uint32_t context_id, int n,
                     const int *world_ranks, const int *member_of);
/* Marks ctx and its sibling aborted and fails what is pending on them
 * with WEFT_ERR_ABORTED. On the context's own thread only. */
void weft__mctx_abort(weft__mctx_t *ctx);
/* Applies the abort a notice left pending on ctx, on its own thread. */
void weft__mctx_abort_pending(weft__mctx_t *ctx);
/* For an abort notice, on any thread, under inst->lock: leaves the abort
 * pending on ctx and its sibling for their thread to apply. */
void weft__mctx_mark_aborted(weft__mctx_t *ctx);

/* Whether ctx was aborted, after applying an abort a notice left pending.
 * On ctx's own thread only, as every entry into weft for it and every
 * wait on one of its requests is. One relaxed load when no notice came:
 * this runs on every operation and every pass of a wait. */
static inline int weft__mctx_aborted(weft__mctx_t *ctx)
{
    if (__builtin_expect(__atomic_load_n(&ctx->abort_pending, __ATOMIC_RELAXED), 0))
        weft__mctx_abort_pending(ctx);
    return ctx->aborted;
}

#endif /* WEFT_CORE_MCTX_H */
