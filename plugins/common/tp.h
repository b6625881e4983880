/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * tp.h: what weft's own transports share, compiled into each of them from
 * plugins/common, a static convenience library that is never installed
 * (third parties start from plugins/example instead): the head of a
 * context, logging and errors that name the plugin, and checks of what
 * the core hands in. tp_req.h adds requests, tp_match.h tag matching and
 * tp_mem.h host-only memory.
 *
 * A plugin's context opens with TP_CTX_HEAD, its requests with
 * TP_REQ_HEAD and its messages with TP_MSG_HEAD: a union of the common
 * struct (tp_ctx, tp_req, tp_msg), which is what the code here sees, and
 * the same fields unnamed, which the plugin's code and its white-box tests
 * name directly (ctx->rank, r->done). As the head comes first, the common
 * entry points (weft__tp_irecv, weft__tp_test, ...) stand in the plugin's
 * weft_transport_v1 table as they are. The plugin keeps the wire: how
 * bytes travel and where they wait. This code calls it back through
 * struct tp_ops and never touches a message's bytes.
 *
 * Nothing here locks: the core serialises calls into a context
 * (weft/transport.h), and no state is global.
 */
#ifndef WEFT_TP_H
#define WEFT_TP_H

#include <stddef.h>
#include <stdint.h>

#include "weft/transport.h"
#include "plugins/common/tp_match.h"
#include "plugins/common/tp_mem.h"
#include "plugins/common/tp_req.h"

/* What a plugin's peer allows a request of one kind (TP_SEND, TP_RECV):
 * nothing, as connect() was not called (misuse); nothing more, as the
 * peer is gone (the request completes with WEFT_ERR_PEER_LOST); or it
 * may go on. */
enum { TP_PEER_UNKNOWN = 0, TP_PEER_GONE, TP_PEER_UP };

/* The plugin's side of the common code; static const in the plugin. */
struct tp_ops {
    size_t req_size;                    /* of its request, which opens with a tp_req */
    /* TP_PEER_* for a request of kind with peer, a rank of the job. */
    int (*peer)(struct tp_ctx *tp, int peer, int kind);
    /* Asks a send that is not done to finish early, as cancel() does:
     * it completes with WEFT_ERR_ABORTED now, or reports the cancel when
     * it finishes (weft__tp_req_complete). */
    void (*send_cancel)(struct tp_ctx *tp, struct tp_req *r);
    const struct tp_match_ops *match;
};

/* The fields every context opens with. */
#define TP_CTX_FIELDS                                                                 \
    const weft_transport_core_t *core;                                               \
    const char *name;                   /* the plugin's, in logs and errors */       \
    int rank, size;                     /* this rank, ranks in the job */            \
    const struct tp_ops *ops;                                                        \
    weft_transport_caps_t caps;         /* what query() reports */                   \
    const void *addr;                   /* what get_address() hands out */           \
    size_t addr_len;                                                                 \
    struct tp_req_pool pool;                                                         \
    /* tag matching (tp_match.c) */                                                  \
    struct tp_req_queue posted;         /* receives, in post order */                \
    struct tp_msg *unexp_head, *unexp_tail; /* messages, in arrival order */         \
    struct tp_msg *claimed, *claimed_tail;  /* improbe's, in claim order */

struct tp_ctx {
    TP_CTX_FIELDS
};

/* What a plugin's context opens with (as TP_REQ_HEAD): ctx->rank, and
 * &ctx->tp for the common code. */
#define TP_CTX_HEAD union { struct tp_ctx tp; struct { TP_CTX_FIELDS }; }

/* Logging that names the plugin; ctx is a struct tp_ctx or a plugin's
 * context. The core's log tests the level before formatting. */
#define TP_LOG(ctx, level, ...) (ctx)->core->log((level), (ctx)->name, __VA_ARGS__)
#define TP_WARN(ctx, ...) TP_LOG(ctx, WEFT_TRANSPORT_LOG_WARN, __VA_ARGS__)
#define TP_INFO(ctx, ...) TP_LOG(ctx, WEFT_TRANSPORT_LOG_INFO, __VA_ARGS__)
#define TP_TRACE(ctx, ...) TP_LOG(ctx, WEFT_TRANSPORT_LOG_TRACE, __VA_ARGS__)

static inline size_t tp_min(size_t a, size_t b)
{
    return a < b ? a : b;
}

/* init()'s common part: checks core and out, then allocates a zeroed
 * context of ctx_size bytes that opens with a tp_ctx, set up for the
 * plugin name. NULL with *rc set (and the reason with core->set_error)
 * when that fails. Free it with weft__tp_ctx_fini, then free(). */
void *weft__tp_ctx_new(const weft_transport_core_t *core, void **out, const char *name,
                       size_t ctx_size, const struct tp_ops *ops, weft_result_t *rc);
/* finalize()'s common part: frees the requests the core never tested and
 * the messages that no receive took (unexpected and claimed ones). The
 * plugin frees the messages it still had arriving before. */
void weft__tp_ctx_fini(struct tp_ctx *tp);

/* core->set_error, with the plugin's name in front. */
void weft__tp_error(const struct tp_ctx *tp, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
/* 0 when peer is a rank of the job; otherwise -1 and the error says
 * "<what> rank <peer>, not in 0..<size - 1>" (what: "connect to", ...). */
int weft__tp_check_rank(const struct tp_ctx *tp, const char *what, int peer);
/* The checks of an isend or irecv (what: "isend to", "irecv from"): out
 * given, buf too unless len is 0, and peer a connected rank, or ANY_PEER
 * for a receive. The peer's TP_PEER_UP or TP_PEER_GONE (TP_PEER_UP for
 * ANY_PEER), or -1 with the error set. */
int weft__tp_check_op(struct tp_ctx *tp, const char *what, int kind, int peer,
                      const void *buf, size_t len, void **out);
/* Reads the integer parameter name within [lo, hi]: 0 with *out set (def
 * when unset or empty), or -1 with the error set. */
int weft__tp_param_long(const struct tp_ctx *tp, const char *name, long lo, long hi,
                        long def, long *out);
/* What query() and get_address() report from now on: the flags
 * (WEFT_TRANSPORT_CAP_*) and figures for the tuner, with host memory only
 * and messages of any size; and the len bytes at addr, the plugin's, which
 * stay valid until finalize. */
void weft__tp_describe(struct tp_ctx *tp, uint64_t flags, double latency_us,
                       double bandwidth_gbps, const void *addr, size_t len);

/* Entry points, for the plugin's weft_transport_v1 table. */
weft_result_t weft__tp_query(void *ctx, weft_transport_caps_t *caps);
weft_result_t weft__tp_get_address(void *ctx, void *addr, size_t *len);

/* The one symbol a transport built on plugins/common exports: its table,
 * with its name, one-line description and needs (WEFT_TRANSPORT_NEED_*),
 * the entry points of plugins/common, and its own given as designated
 * initializers: .init, .reach, .connect, .disconnect, .finalize, .isend,
 * .progress and .get_wait_fd. */
#define TP_TRANSPORT_V1(name_, description_, needs_, ...)                                 \
    __attribute__((visibility("default"))) const weft_transport_v1_t weft_transport_v1 = { \
        .abi_version = WEFT_TRANSPORT_ABI_VERSION,                                       \
        .struct_size = sizeof(weft_transport_v1_t),                                      \
        .name = (name_),                                                                 \
        .description = (description_),                                                   \
        .needs = (needs_),                                                               \
        .query = weft__tp_query,                                                         \
        .get_address = weft__tp_get_address,                                             \
        .mem_register = weft__tp_mem_register,                                           \
        .mem_deregister = weft__tp_mem_deregister,                                       \
        .irecv = weft__tp_irecv,                                                         \
        .test = weft__tp_test,                                                           \
        .cancel = weft__tp_cancel,                                                       \
        .improbe = weft__tp_improbe,                                                     \
        .imrecv = weft__tp_imrecv,                                                       \
        __VA_ARGS__                                                                      \
    }

#endif /* WEFT_TP_H */
