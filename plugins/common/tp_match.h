/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * tp_match.h: tag matching, as weft/transport.h states it. Receives wait
 * in the posted queue in post order, messages without a receive in the
 * unexpected queue in arrival order; a message takes the first posted
 * receive it matches, a receive the first queued message it matches. The
 * plugin hands messages over in the order each peer sent them, which
 * gives per-peer, per-tag ordering. Part of plugins/common (see tp.h).
 *
 * A message is the plugin's from its first byte; the matcher knows it from
 * weft__tp_match_arrive (its tag is known) until it is whole and received,
 * failed, or dropped. Where its bytes wait and how they reach a receive's
 * buffer is the plugin's business, through struct tp_match_ops.
 */
#ifndef WEFT_TP_MATCH_H
#define WEFT_TP_MATCH_H

#include <stddef.h>
#include <stdint.h>

#include "weft/transport.h"
#include "plugins/common/tp_req.h"

struct tp_ctx;

/* The fields every message opens with. The matcher knows a message from
 * weft__tp_match_arrive on; qprev and qnext are the plugin's before. */
#define TP_MSG_FIELDS                                                                 \
    int peer;                                                                        \
    uint64_t tag;                                                                    \
    size_t total;                       /* bytes of the whole message */             \
    size_t got;                         /* bytes arrived so far (the plugin counts) */ \
    unsigned in_unexp : 1;              /* in the unexpected queue */                \
    unsigned claimed : 1;               /* taken by improbe, waiting for imrecv */   \
    unsigned orphan : 1;                /* its receive was cancelled: discard */     \
    unsigned dead : 1;                  /* can never be whole: its sender is gone */ \
    struct tp_req *req;                 /* the receive it is bound to */             \
    struct tp_msg *qprev, *qnext;       /* the unexpected or the claimed queue */

struct tp_msg {
    TP_MSG_FIELDS
};

/* What a plugin's message opens with (as TP_REQ_HEAD). */
#define TP_MSG_HEAD union { struct tp_msg tp; struct { TP_MSG_FIELDS }; }

/* How the plugin keeps a message's bytes; static const in the plugin. */
struct tp_match_ops {
    /* r takes m, which is in no queue now: what arrived of m moves to r's
     * buffer (no further than r->len) and the rest is to go there
     * directly. 1 when m is whole: r then completes and m is freed. */
    int (*bind)(struct tp_ctx *tp, struct tp_msg *m, struct tp_req *r);
    /* m is to wait unexpected: room for its bytes. 0, or -1 when out of
     * memory. */
    int (*hold)(struct tp_ctx *tp, struct tp_msg *m);
    void (*free)(struct tp_ctx *tp, struct tp_msg *m);
};

static inline int tp_tag_match(uint64_t want, uint64_t ignore, uint64_t got)
{
    return (want & ~ignore) == (got & ~ignore);
}

/* The first posted receive that a message from peer with tag matches,
 * taken off the queue, its completion set to peer, tag and total; NULL
 * when none. For a message that arrives whole and is copied at once. */
struct tp_req *weft__tp_match_take(struct tp_ctx *tp, int peer, uint64_t tag, size_t total);
/* m's tag is known (peer, tag and total set, m->got may count bytes that
 * came before): it binds to the first matching posted receive, or waits
 * unexpected. m must not be whole yet. 0, or -1 when it could not be held
 * (out of memory; the plugin still owns m). */
int weft__tp_match_arrive(struct tp_ctx *tp, struct tp_msg *m);
/* Every byte of m arrived: its receive completes (WEFT_ERR_TRUNCATED when
 * longer than the buffer) and m is freed, an orphan is freed, and any
 * other waits whole, unexpected or claimed. */
void weft__tp_match_done(struct tp_ctx *tp, struct tp_msg *m);
/* m can never be whole: its receive completes with status and m is
 * freed, or, claimed, it is marked dead for imrecv to report. */
void weft__tp_match_fail(struct tp_ctx *tp, struct tp_msg *m, weft_result_t status);
/* Posted receives from peer, and from any peer when any_too, complete
 * with status. */
void weft__tp_match_fail_peer(struct tp_ctx *tp, int peer, int any_too, weft_result_t status);
/* Frees every unexpected message from peer. */
void weft__tp_match_drop_peer(struct tp_ctx *tp, int peer);
/* Cancels receive r: off the posted queue, or its message is to be
 * discarded from now on; it completes with WEFT_ERR_ABORTED. */
void weft__tp_match_cancel(struct tp_ctx *tp, struct tp_req *r);
/* Frees the unexpected and claimed messages. */
void weft__tp_match_fini(struct tp_ctx *tp);

/* Entry points, for the plugin's weft_transport_v1 table. */
weft_result_t weft__tp_irecv(void *ctx, int peer, void *buf, size_t len, uint64_t tag,
                             uint64_t ignore, void *mhandle, void **req);
weft_result_t weft__tp_improbe(void *ctx, int peer, uint64_t tag, uint64_t ignore,
                               int *found, void **msg, weft_transport_completion_t *info);
weft_result_t weft__tp_imrecv(void *ctx, void *msg, void *buf, size_t len, void *mhandle,
                              void **req);

#endif /* WEFT_TP_MATCH_H */
