/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * request.h: requests, the handles behind weft_request_t.
 *
 * A request is a set of sub-operations (one for weft_isend, n for
 * weft_batch_isend_irecv) on a matching context (mctx.h); it completes
 * when all of them have. Each sub-operation is a transport request once
 * posted. A request may instead be driven by an owner from a layer above
 * (a collective): then its ops table says how to poll, cancel, describe
 * and release it, and the request layer never names that owner.
 */
#ifndef WEFT_CORE_REQUEST_H
#define WEFT_CORE_REQUEST_H

#include <stddef.h>
#include <stdint.h>

#include "weft.h"
#include "core/progress/instance.h"
#include "core/progress/mctx.h"

enum weft__subop_state {
    WEFT__SUBOP_WAITING = 0, /* not handed to a transport yet */
    WEFT__SUBOP_PROBING,     /* receive from any source over several transports */
    WEFT__SUBOP_POSTED,      /* transport request in flight */
    WEFT__SUBOP_DONE
};

typedef struct weft__subop {
    int kind;                     /* WEFT_P2P_SEND / WEFT_P2P_RECV */
    int state;
    void *buf;
    size_t bytes;
    size_t elem_size;
    int peer;                     /* member of the context, or WEFT_ANY_SOURCE */
    int user_tag;                 /* or WEFT_ANY_TAG */
    uint64_t tag, ignore;
    weft__plugin_t *plugin;       /* where treq lives */
    /* The handle plugin's mem_register gave for buf (device memory the
     * transport moves itself), or NULL. */
    void *mhandle;
    void *treq;
    weft_result_t result;
    int source;                   /* member of the context, when done */
    int tag_out;
    size_t len;                   /* bytes received (full length if truncated) */
    struct weft__subop *next_pending; /* ctx->pending_head list */
} weft__subop_t;

/* Where a request the user freed before it completed waits to be freed. */
typedef enum weft__detach {
    WEFT__ATTACHED = 0,           /* the user holds it */
    WEFT__DETACHED_SHARED,        /* inst->detached, then ctx->reaped */
    WEFT__DETACHED_HELD           /* ctx->held */
} weft__detach_t;

struct weft_request;

/* How the owner of a request drives it (such as a collective). */
typedef struct weft__request_ops {
    /* Advances it; *done when finished, with req->result set. */
    void (*poll)(struct weft_request *req, int *done);
    /* Fails it with rc: what is in flight is cancelled. */
    void (*cancel)(struct weft_request *req, weft_result_t rc);
    /* Frees the owner's state when the request is freed. */
    void (*release)(struct weft_request *req);
    /* What it still waits for, for a timeout's message. */
    void (*describe)(const struct weft_request *req, char *buf, size_t cap);
    /* Why it failed, or NULL to let the sub-operations tell. */
    const char *(*why)(const struct weft_request *req);
} weft__request_ops_t;

struct weft_request {
    weft__mctx_t *ctx;
    weft__instance_t *inst;
    int nsub;
    int ndone;
    weft_result_t result;         /* first failure among the sub-operations */
    int detached;                 /* weft__detach_t: freed early by the user */
    struct weft_request *next_active, *prev_active;   /* ctx->active */
    /* inst->detached, ctx->reaped or ctx->held, as detached says */
    struct weft_request *next_detached;
    weft__subop_t *subs;          /* sub_inline or subs_array */
    weft__subop_t sub_inline;     /* storage when nsub == 1 */
    weft__subop_t *subs_array;    /* storage when nsub > 1, kept across reuse */
    int subs_cap;                 /* entries of subs_array */
    /* An owner's request: its ops drive it instead of subs. */
    const weft__request_ops_t *ops;
    void *owner;
};

weft_result_t weft__request_create(weft__mctx_t *ctx, int nsub, struct weft_request **out);
/* A request that is complete already (an empty batch, a call that moves
 * nothing), or that an owner drives once it set ops and owner. */
weft_result_t weft__request_create_complete(weft__mctx_t *ctx, struct weft_request **out);
/* Fills a sub-operation of a request on ctx: bytes at buf (elements of
 * elem_size) to or from member peer with the user's tag (or
 * WEFT_ANY_SOURCE, WEFT_ANY_TAG for receives). */
void weft__subop_fill(weft__subop_t *sub, const weft__mctx_t *ctx, int kind, const void *buf,
                      size_t bytes, size_t elem_size, int peer, int tag);
/* Posts the sub-operations once the caller filled them in. Failures to post
 * are recorded in the sub-operations and reported by the wait. */
void weft__request_start(struct weft_request *req);
/* Hands waiting sub-operations to transports and tests posted ones; sets
 * *done when every sub-operation finished. Never blocks. */
weft_result_t weft__request_poll(struct weft_request *req, int *done);
/* For a request whose operations are all posted to the instance's only
 * transport: one pass of that transport (when progress is set) and a test
 * of the operations under a single hold of its lock, with *done as
 * weft__request_poll sets it; returns 1. Returns 0, having done nothing,
 * for any other request. */
int weft__request_progress_test(struct weft_request *req, int progress, int *done);
/* For reap_detached, on any thread, holding inst->lock: weft__request_poll
 * of a request on inst->detached, which touches nothing of its
 * context (it has no operation left in the pending queue). */
void weft__request_poll_detached(struct weft_request *req, int *done);
/* weft_request_free of a request still in flight: it is freed once done. */
void weft__request_detach(struct weft_request *req);
/* Frees req if it is done, else detaches it to be freed once it is (what
 * weft_request_free does with a request). */
void weft__request_release(struct weft_request *req);
/* Fails every unfinished sub-operation with rc (abort, destroy). */
void weft__request_cancel(struct weft_request *req, weft_result_t rc);
/* weft__request_cancel of every request in flight on ctx (on its thread). */
void weft__request_cancel_all(weft__mctx_t *ctx, weft_result_t rc);
void weft__request_free(struct weft_request *req);
/* weft_batch_isend_irecv without its argument checks, for operations
 * known to be valid (a collective's rounds, communicator creation's
 * exchange): the checks were a tenth of a small collective's time. The
 * caller has checked that ctx was not aborted. */
weft_result_t weft__request_post_batch(weft__mctx_t *ctx, int n, const weft_p2p_op_t *ops,
                                       struct weft_request **req);
/* Frees the calling thread's requests kept for reuse, and runs the
 * drains of the other per-thread caches registered below, as the thread's
 * exit does once armed. */
void weft__request_cache_drain(void);
/* Registers a per-thread cache of another layer (the collective engine's
 * spare collectives) to drain with the requests': at thread exit, at the
 * instance's end, when libweft is unloaded. Registering the same function
 * again does nothing; at most 4. */
void weft__request_cache_add_drain(void (*drain)(void));
/* Makes sure the calling thread's exit drains its caches; 0 when that
 * cannot be arranged (then nothing may be cached). */
int weft__request_cache_arm(void);
/* Status of a completed request (NULL status allowed). */
void weft__request_status(const struct weft_request *req, weft_status_t *status);
/* What req still waits for ("receive from rank 3 with tag 7"), for a
 * timeout's message. */
void weft__request_describe(const struct weft_request *req, char *buf, size_t cap);
/* Why a failed request failed, when its owner knows better than its
 * sub-operations; NULL otherwise. */
const char *weft__request_why(const struct weft_request *req);

#endif /* WEFT_CORE_REQUEST_H */
