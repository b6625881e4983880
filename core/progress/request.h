/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * request.h: requests, the handles behind weft_request_t.
 *
 * A request is a set of sub-operations (one for weft_isend, n for
 * weft_batch_isend_irecv); it completes when all of them have. Each
 * sub-operation is a transport request once posted. Later request kinds
 * (collective schedules) plug in through the same progress entry point.
 */
#ifndef WEFT_CORE_REQUEST_H
#define WEFT_CORE_REQUEST_H

#include <stddef.h>
#include <stdint.h>

#include "weft.h"
#include "core/progress/instance.h"

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
    int peer;                     /* comm rank or WEFT_ANY_SOURCE */
    int user_tag;                 /* or WEFT_ANY_TAG */
    uint64_t tag, ignore;
    weft__plugin_t *plugin;       /* where treq lives */
    void *treq;
    weft_result_t result;
    int source;                   /* comm rank, when done */
    int tag_out;
    size_t len;                   /* bytes received (full length if truncated) */
    struct weft__subop *next_pending; /* comm->pending_head list */
} weft__subop_t;

/* Where a request the user freed before it completed waits to be freed. */
typedef enum weft__detach {
    WEFT__ATTACHED = 0,           /* the user holds it */
    WEFT__DETACHED_SHARED,        /* inst->detached, then comm->reaped */
    WEFT__DETACHED_HELD           /* comm->held */
} weft__detach_t;

struct weft_request {
    weft_comm_t comm;
    weft__instance_t *inst;
    int nsub;
    int ndone;
    weft_result_t result;         /* first failure among the sub-operations */
    int detached;                 /* weft__detach_t: freed early by the user */
    struct weft_request *next_active, *prev_active;   /* comm->active */
    /* inst->detached, comm->reaped or comm->held, as detached says */
    struct weft_request *next_detached;
    weft__subop_t *subs;          /* sub_inline or subs_array */
    weft__subop_t sub_inline;     /* storage when nsub == 1 */
    weft__subop_t *subs_array;    /* storage when nsub > 1, kept across reuse */
    int subs_cap;                 /* entries of subs_array */
    struct weft__coll *coll;      /* a collective: its progress instead of subs */
};

weft_result_t weft__request_create(weft_comm_t comm, int nsub, struct weft_request **out);
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
 * communicator (it has no operation left in the pending queue). */
void weft__request_poll_detached(struct weft_request *req, int *done);
/* weft_request_free of a request still in flight: it is freed once done. */
void weft__request_detach(struct weft_request *req);
/* Fails every unfinished sub-operation with rc (abort, destroy). */
void weft__request_cancel(struct weft_request *req, weft_result_t rc);
void weft__request_free(struct weft_request *req);
/* weft_batch_isend_irecv without its argument checks, for operations
 * known to be valid (a collective's rounds): the checks were a tenth of
 * a small collective's time. */
weft_result_t weft__request_post_batch(weft_comm_t comm, int n, const weft_p2p_op_t *ops,
                                       struct weft_request **req);
/* Frees the calling thread's requests and collectives kept for reuse
 * (request.c, coll.c), as the thread's exit does once armed. */
void weft__request_cache_drain(void);
/* Makes sure the calling thread's exit drains its caches; 0 when that
 * cannot be arranged (then nothing may be cached). */
int weft__request_cache_arm(void);
/* Status of a completed request (NULL status allowed). */
void weft__request_status(const struct weft_request *req, weft_status_t *status);

#endif /* WEFT_CORE_REQUEST_H */
