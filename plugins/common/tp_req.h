/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * tp_req.h: the requests a transport hands to the core, from isend or
 * irecv until test() reports them done: their common head, the pool they
 * come from, their queues, completion, and the test and cancel entry
 * points. Part of plugins/common (see tp.h).
 */
#ifndef WEFT_TP_REQ_H
#define WEFT_TP_REQ_H

#include <stddef.h>
#include <stdint.h>

#include "weft/transport.h"

struct tp_ctx;
struct tp_msg;

enum { TP_SEND = 1, TP_RECV = 2 };

/* The fields every request opens with. */
#define TP_REQ_FIELDS                                                                 \
    struct tp_req *prev, *next;         /* the pool's live list, or its spares */    \
    int kind;                           /* TP_SEND or TP_RECV */                     \
    int done;                                                                        \
    int cancelled;                      /* cancel() asked: report WEFT_ERR_ABORTED */ \
    weft_result_t status;                                                            \
    int peer;                           /* destination, or source / ANY_PEER */      \
    uint64_t tag, ignore;                                                            \
    unsigned char *buf;                                                              \
    size_t len;                         /* send length, or receive capacity */       \
    void *mhandle;                      /* the plugin's mem_register handle, or NULL */ \
    /* what test() reports: src, mtag, and total as the completion's len */          \
    int src;                                                                         \
    uint64_t mtag;                                                                   \
    size_t total;                                                                    \
    /* a send in one of its peer's queues, or a receive in the posted one */         \
    struct tp_req *qprev, *qnext;                                                    \
    int queued;                                                                      \
    struct tp_msg *msg;                 /* a receive's message while it arrives */

struct tp_req {
    TP_REQ_FIELDS
};

/* What a plugin's request opens with: the common code sees a struct
 * tp_req (&r->tp), the plugin's code names the fields (r->len). */
#define TP_REQ_HEAD union { struct tp_req tp; struct { TP_REQ_FIELDS }; }

/* A queue of requests in order; a request is in at most one at a time. */
struct tp_req_queue {
    struct tp_req *head, *tail;
};

/* Where a context's requests come from. Every live request is on live, so
 * that finalize frees the ones the core never tested; freed ones are
 * kept for reuse. */
struct tp_req_pool {
    size_t size;                        /* bytes of the plugin's request */
    struct tp_req *live;
    struct tp_req *spare;               /* linked by next */
    int nspare;
};

/* Freed requests a pool keeps for reuse: a small message costs a
 * transport a few hundred cycles, as much as a calloc and a free. */
#define TP_REQ_SPARE_MAX 16

/* A cleared request of kind for peer, on the live list, src and mtag set
 * to peer and tag, total 0; NULL with the error set when out of memory. */
struct tp_req *weft__tp_req_new(struct tp_ctx *tp, int kind, int peer, void *buf,
                                size_t len, uint64_t tag, uint64_t ignore);
/* The first result sticks; a cancelled request that finishes anyway
 * reports the cancel. */
void weft__tp_req_complete(struct tp_req *r, weft_result_t status);
/* Off the live list, and kept for reuse while the pool has room. */
void weft__tp_req_free(struct tp_ctx *tp, struct tp_req *r);
/* Frees the live requests and the spares. */
void weft__tp_req_pool_fini(struct tp_req_pool *pool);

/* isend()'s common part: checks the arguments (peer connected, buf and
 * out given) and makes the request, which *out hands to the core. NULL
 * with the error to return in *rc when that fails. When the peer is gone
 * the request has completed already (done, WEFT_ERR_PEER_LOST) and is
 * not to be queued. */
struct tp_req *weft__tp_isend_new(struct tp_ctx *tp, int peer, const void *buf, size_t len,
                                  uint64_t tag, void **out, weft_result_t *rc);

void weft__tp_queue_append(struct tp_req_queue *q, struct tp_req *r);
/* Does nothing when r is in no queue. */
void weft__tp_queue_remove(struct tp_req_queue *q, struct tp_req *r);

/* Entry points, for the plugin's weft_transport_v1 table. */
weft_result_t weft__tp_test(void *ctx, void *req, int *done, weft_transport_completion_t *c);
weft_result_t weft__tp_cancel(void *ctx, void *req);

#endif /* WEFT_TP_REQ_H */
