/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * example.c: the smallest complete weft transport, written to be copied.
 *
 * "example" reaches exactly one rank: its own. A message a rank sends to
 * itself never leaves the process: isend matches it against the receives
 * already posted, or parks a copy in the unexpected queue for a later
 * irecv. There is no network code, so what remains is what every
 * transport must get right whatever its wire: the lifecycle, tag/ignore
 * matching in post order, the unexpected queue, truncation, completion
 * through test(), cancel, matched probe and a wait descriptor. Read it
 * beside include/weft/transport.h, which states the rules.
 *
 * To start a real transport from this file: rename it (the name below, the
 * file weft-<name>.so and the WEFT_TRANSPORTS token must agree), make
 * get_address/reach/connect describe real endpoints, and replace deliver()
 * by sending bytes; progress() then receives them and calls match_arrival().
 *
 * Build it as a libtool module (-module -avoid-version -shared) with
 * -fvisibility=hidden, so that weft_transport_v1 at the bottom is the only
 * symbol it exports. It needs only <weft/transport.h> (config.h is read
 * only inside weft's own build, which defines HAVE_CONFIG_H).
 *
 * Set WEFT_EXAMPLE_DISABLE=1 to see how a transport declines to run.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#include <weft/transport.h>

#define EX_NAME "example"
#define EX_ADDR_MAGIC "wftexmp1"

/* Intrusive doubly linked list with a sentinel head: O(1) removal from
 * the middle, which cancel() and improbe() need. */
struct ex_link {
    struct ex_link *prev, *next;
};

static void list_init(struct ex_link *head)
{
    head->prev = head->next = head;
}

static void list_append(struct ex_link *head, struct ex_link *e)
{
    e->prev = head->prev;
    e->next = head;
    head->prev->next = e;
    head->prev = e;
}

static void list_remove(struct ex_link *e)
{
    e->prev->next = e->next;
    e->next->prev = e->prev;
    e->prev = e->next = e;
}

/* A request handed to the core. It lives until test() reports it done and
 * frees it; finalize() frees the ones the core never tested again. */
struct ex_req {
    struct ex_link link;            /* first: a link pointer is a request pointer */
    int is_recv;
    int done;
    weft_transport_completion_t c;  /* valid once done */
    /* A receive still waiting for its message: */
    int peer;                       /* WEFT_TRANSPORT_ANY_PEER or a rank */
    uint64_t tag, ignore;
    void *buf;
    size_t cap;
};

/* A message that arrived before a matching receive was posted. The data
 * is copied: the sender's buffer is free again once isend completes. */
struct ex_msg {
    struct ex_link link;            /* first, as above */
    int peer;
    uint64_t tag;
    size_t len;
    unsigned char data[];
};

/* What get_address publishes. Rank and a random nonce make it unique to
 * this process, so reach() can tell its own address from every other. */
struct ex_addr {
    char magic[8];
    int32_t rank;
    uint32_t pid;
    uint64_t nonce;
};

struct ex_ctx {
    const weft_transport_core_t *core;  /* valid until finalize (ABI promise) */
    int rank;
    int connected;                      /* connect(rank) seen, no disconnect since */
    /* Readable while a receive completed outside the core's own call:
     * the core sleeps in poll() on it and must wake for that. */
    int efd;
    struct ex_addr addr;
    /* Every live request, in post order. Posted receives are the ones
     * with is_recv && !done; scanning in this order is what makes
     * receives match in the order they were posted. A transport with
     * many requests would keep posted receives in a list of their own. */
    struct ex_link reqs;
    struct ex_link unexpected;          /* struct ex_msg, in arrival order */
};

static int tag_matches(uint64_t msg_tag, uint64_t want, uint64_t ignore)
{
    return (msg_tag & ~ignore) == (want & ~ignore);
}

/* ---------------------------------------------------------------- lifecycle */

/*
 * 1. init: called once per process. Check what the core offers, decide
 * whether this transport applies here (return WEFT_ERR_UNSUPPORTED with a
 * reason if not: the core then skips it quietly), and set up local state.
 * Nothing here may depend on other ranks: they are met from connect() on.
 */
static weft_result_t ex_init(const weft_transport_core_t *core, void **ctxp)
{
    const char *disable;
    struct ex_ctx *ctx;
    uint64_t nonce;

    /* weft_transport_core_t may grow; a core older than this header would
     * lack fields used below. */
    if (!core || core->struct_size < sizeof(*core))
        return WEFT_ERR_INVALID_ARG;
    disable = core->get_param("WEFT_EXAMPLE_DISABLE");
    if (disable && *disable && strcmp(disable, "0") != 0) {
        core->set_error("disabled by WEFT_EXAMPLE_DISABLE=%s", disable);
        return WEFT_ERR_UNSUPPORTED;
    }

    ctx = calloc(1, sizeof(*ctx));
    if (!ctx) {
        core->set_error("cannot allocate %zu bytes of state", sizeof(*ctx));
        return WEFT_ERR_NO_MEMORY;
    }
    ctx->core = core;
    ctx->rank = core->rank;
    list_init(&ctx->reqs);
    list_init(&ctx->unexpected);
    ctx->efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    if (ctx->efd < 0) {
        core->set_error("eventfd: %s", strerror(errno));
        goto err_free;
    }

    /* Randomness only has to make two processes differ; a clock will do
     * where getrandom is unavailable. */
    if (getrandom(&nonce, sizeof(nonce), GRND_NONBLOCK) != (ssize_t)sizeof(nonce)) {
        struct timespec ts;

        clock_gettime(CLOCK_MONOTONIC, &ts);
        nonce = ((uint64_t)ts.tv_sec << 32) ^ (uint64_t)ts.tv_nsec ^ (uintptr_t)ctx;
    }
    memcpy(ctx->addr.magic, EX_ADDR_MAGIC, sizeof(ctx->addr.magic));
    ctx->addr.rank = ctx->rank;
    ctx->addr.pid = (uint32_t)getpid();
    ctx->addr.nonce = nonce;

    core->log(WEFT_TRANSPORT_LOG_INFO, EX_NAME, "rank %d of %d: loopback transport ready",
              ctx->rank, core->size);
    *ctxp = ctx;
    return WEFT_SUCCESS;

err_free:
    free(ctx);
    return WEFT_ERR_SYSTEM;
}

/* 2. query: what the transport can do. The caps struct may come from a
 * core built against an older or newer header: fill a full local copy and
 * hand over only as many bytes as the core's struct_size says it has. */
static weft_result_t ex_query(void *ctxp, weft_transport_caps_t *caps)
{
    weft_transport_caps_t mine;
    size_t n;

    memset(&mine, 0, sizeof(mine));
    mine.flags = WEFT_TRANSPORT_CAP_SELF | WEFT_TRANSPORT_CAP_MPROBE;
    mine.mem_types = 1u << WEFT_TRANSPORT_MEM_HOST;
    mine.max_msg_size = SIZE_MAX;
    mine.latency_us = 0.1;       /* one memcpy and some list walking */
    mine.bandwidth_gbps = 80.0;  /* roughly memcpy speed */
    n = caps->struct_size < sizeof(mine) ? caps->struct_size : sizeof(mine);
    mine.struct_size = caps->struct_size;
    memcpy(caps, &mine, n);
    return WEFT_SUCCESS;
}

/* 3. get_address: *len is the room in addr on entry, the length used on
 * return. The core publishes the blob; peers get it in reach/connect. */
static weft_result_t ex_get_address(void *ctxp, void *addr, size_t *len)
{
    struct ex_ctx *ctx = ctxp;

    if (*len < sizeof(ctx->addr)) {
        ctx->core->set_error("address needs %zu bytes, %zu given", sizeof(ctx->addr), *len);
        return WEFT_ERR_INVALID_ARG;
    }
    memcpy(addr, &ctx->addr, sizeof(ctx->addr));
    *len = sizeof(ctx->addr);
    return WEFT_SUCCESS;
}

/* 4. reach: called with every rank's blob, this rank's own included. Only
 * the own blob is reachable: same process, so "node" is the closest class.
 * Blobs of other transports' layout or versions must be rejected safely. */
static weft_result_t ex_reach(void *ctxp, const void *peer_addr, size_t len,
                              weft_transport_reach_t *reach)
{
    struct ex_ctx *ctx = ctxp;

    *reach = len == sizeof(ctx->addr) && !memcmp(peer_addr, &ctx->addr, sizeof(ctx->addr))
                 ? WEFT_TRANSPORT_REACH_NODE
                 : WEFT_TRANSPORT_REACH_NONE;
    return WEFT_SUCCESS;
}

/* 5. connect: the core routes peer through this transport. A network
 * transport would start connection set-up here (or lazily in progress). */
static weft_result_t ex_connect(void *ctxp, int peer, const void *peer_addr, size_t len)
{
    struct ex_ctx *ctx = ctxp;
    weft_transport_reach_t reach;

    ex_reach(ctx, peer_addr, len, &reach);
    if (peer != ctx->rank || reach == WEFT_TRANSPORT_REACH_NONE) {
        ctx->core->set_error("rank %d: the example transport reaches only its own rank %d",
                             peer, ctx->rank);
        return WEFT_ERR_UNSUPPORTED;
    }
    ctx->connected = 1;
    return WEFT_SUCCESS;
}

/* Finishes a request; test() reports it from now on. */
static void complete(struct ex_ctx *ctx, struct ex_req *req, weft_result_t status, int peer,
                     uint64_t tag, size_t len, int wake)
{
    req->done = 1;
    req->c.status = status;
    req->c.peer = peer;
    req->c.tag = tag;
    req->c.len = len;
    /* A receive posted earlier may have a thread asleep on the wait fd. */
    if (wake) {
        uint64_t one = 1;

        if (write(ctx->efd, &one, sizeof(one)) < 0 && errno != EAGAIN)
            ctx->core->log(WEFT_TRANSPORT_LOG_WARN, EX_NAME, "eventfd write: %s",
                           strerror(errno));
    }
}

/* Copies a message into a receive: truncation keeps what fits and reports
 * the full length, as the ABI asks. */
static void fill(struct ex_ctx *ctx, struct ex_req *recv, const void *data, size_t len,
                 int peer, uint64_t tag, int wake)
{
    size_t n = len < recv->cap ? len : recv->cap;

    if (n)
        memcpy(recv->buf, data, n);
    complete(ctx, recv, len > recv->cap ? WEFT_ERR_TRUNCATED : WEFT_SUCCESS, peer, tag, len,
             wake);
}

/* 7. disconnect: operations with peer end with WEFT_ERR_ABORTED, and what
 * it sent but nobody received is dropped with the connection. Receives
 * from any peer stay: another peer may still satisfy them. */
static weft_result_t ex_disconnect(void *ctxp, int peer)
{
    struct ex_ctx *ctx = ctxp;
    struct ex_link *l, *next;

    if (peer != ctx->rank || !ctx->connected)
        return WEFT_SUCCESS;
    ctx->connected = 0;
    for (l = ctx->reqs.next; l != &ctx->reqs; l = l->next) {
        struct ex_req *req = (struct ex_req *)l;

        if (req->is_recv && !req->done && req->peer == peer)
            complete(ctx, req, WEFT_ERR_ABORTED, peer, req->tag, 0, 1);
    }
    for (l = ctx->unexpected.next; l != &ctx->unexpected; l = next) {
        next = l->next;
        list_remove(l);
        free(l);
    }
    return WEFT_SUCCESS;
}

/* 8. finalize: drop whatever is pending and free everything, including
 * requests the core will never test again. */
static weft_result_t ex_finalize(void *ctxp)
{
    struct ex_ctx *ctx = ctxp;
    struct ex_link *l, *next;
    int nreqs = 0, nmsgs = 0;

    for (l = ctx->reqs.next; l != &ctx->reqs; l = next, nreqs++) {
        next = l->next;
        free(l);
    }
    for (l = ctx->unexpected.next; l != &ctx->unexpected; l = next, nmsgs++) {
        next = l->next;
        free(l);
    }
    ctx->core->log(WEFT_TRANSPORT_LOG_INFO, EX_NAME, "finalized: %d requests and %d "
                   "unreceived messages dropped", nreqs, nmsgs);
    close(ctx->efd);
    free(ctx);
    return WEFT_SUCCESS;
}

/* ------------------------------------------------------------------ memory */

/* Copying transports need no registration: a NULL handle is the answer.
 * Memory types not announced in caps are refused. */
static weft_result_t ex_mem_register(void *ctxp, void *buf, size_t len, int mem_type,
                                     void **mhandle)
{
    struct ex_ctx *ctx = ctxp;

    if (mem_type != WEFT_TRANSPORT_MEM_HOST) {
        ctx->core->set_error("memory type %d is not supported, only host memory", mem_type);
        return WEFT_ERR_UNSUPPORTED;
    }
    *mhandle = NULL;
    return WEFT_SUCCESS;
}

static weft_result_t ex_mem_deregister(void *ctxp, void *mhandle)
{
    return WEFT_SUCCESS;
}

/* ------------------------------------------------------------ data movement */

static struct ex_req *req_new(struct ex_ctx *ctx, int is_recv)
{
    struct ex_req *req = calloc(1, sizeof(*req));

    if (!req) {
        ctx->core->set_error("cannot allocate a request");
        return NULL;
    }
    req->is_recv = is_recv;
    list_append(&ctx->reqs, &req->link);
    return req;
}

/* Operations name world ranks; only the own rank, once connected, is
 * valid here. */
static weft_result_t check_peer(struct ex_ctx *ctx, int peer, int any_ok)
{
    if (any_ok && peer == WEFT_TRANSPORT_ANY_PEER)
        return WEFT_SUCCESS;
    if (peer != ctx->rank || !ctx->connected) {
        ctx->core->set_error("rank %d is not connected through the example transport", peer);
        return WEFT_ERR_INVALID_ARG;
    }
    return WEFT_SUCCESS;
}

/* A message arrived (here: was sent to ourselves). The first posted
 * receive that matches takes it; otherwise it joins the unexpected queue.
 * A network transport calls this from progress() for each message. */
static weft_result_t match_arrival(struct ex_ctx *ctx, int peer, const void *data, size_t len,
                                   uint64_t tag)
{
    struct ex_msg *msg;

    for (struct ex_link *l = ctx->reqs.next; l != &ctx->reqs; l = l->next) {
        struct ex_req *req = (struct ex_req *)l;

        if (!req->is_recv || req->done ||
            (req->peer != WEFT_TRANSPORT_ANY_PEER && req->peer != peer) ||
            !tag_matches(tag, req->tag, req->ignore))
            continue;
        fill(ctx, req, data, len, peer, tag, 1);
        return WEFT_SUCCESS;
    }
    msg = malloc(sizeof(*msg) + len);
    if (!msg) {
        ctx->core->set_error("cannot hold an unexpected message of %zu bytes", len);
        return WEFT_ERR_NO_MEMORY;
    }
    msg->peer = peer;
    msg->tag = tag;
    msg->len = len;
    if (len)
        memcpy(msg->data, data, len);
    list_append(&ctx->unexpected, &msg->link);
    return WEFT_SUCCESS;
}

/* The "wire" of this transport. A real one would queue the bytes for the
 * peer and let progress() finish the send. */
static weft_result_t deliver(struct ex_ctx *ctx, int peer, const void *buf, size_t len,
                             uint64_t tag)
{
    (void)peer;
    return match_arrival(ctx, ctx->rank, buf, len, tag);
}

static weft_result_t ex_isend(void *ctxp, int peer, const void *buf, size_t len, uint64_t tag,
                              void *mhandle, void **reqp)
{
    struct ex_ctx *ctx = ctxp;
    struct ex_req *req;
    weft_result_t rc = check_peer(ctx, peer, 0);

    if (rc != WEFT_SUCCESS)
        return rc;
    req = req_new(ctx, 0);
    if (!req)
        return WEFT_ERR_NO_MEMORY;
    rc = deliver(ctx, peer, buf, len, tag);
    if (rc != WEFT_SUCCESS) {
        list_remove(&req->link);
        free(req);
        return rc;
    }
    /* The data is copied, so the send is done at once: its buffer may be
     * reused as soon as the core sees test() report it. */
    complete(ctx, req, WEFT_SUCCESS, peer, tag, len, 0);
    *reqp = req;
    return WEFT_SUCCESS;
}

/* Takes msg out of the unexpected queue into recv. */
static void take_unexpected(struct ex_ctx *ctx, struct ex_req *recv, struct ex_msg *msg)
{
    list_remove(&msg->link);
    fill(ctx, recv, msg->data, msg->len, msg->peer, msg->tag, 0);
    free(msg);
}

static weft_result_t ex_irecv(void *ctxp, int peer, void *buf, size_t len, uint64_t tag,
                              uint64_t ignore, void *mhandle, void **reqp)
{
    struct ex_ctx *ctx = ctxp;
    struct ex_req *req;
    weft_result_t rc = check_peer(ctx, peer, 1);

    if (rc != WEFT_SUCCESS)
        return rc;
    req = req_new(ctx, 1);
    if (!req)
        return WEFT_ERR_NO_MEMORY;
    req->peer = peer;
    req->tag = tag;
    req->ignore = ignore;
    req->buf = buf;
    req->cap = len;
    /* Messages that came first are matched first, in arrival order. */
    for (struct ex_link *l = ctx->unexpected.next; l != &ctx->unexpected; l = l->next) {
        struct ex_msg *msg = (struct ex_msg *)l;

        if ((peer == WEFT_TRANSPORT_ANY_PEER || msg->peer == peer) &&
            tag_matches(msg->tag, tag, ignore)) {
            take_unexpected(ctx, req, msg);
            break;
        }
    }
    *reqp = req;
    return WEFT_SUCCESS;
}

static weft_result_t ex_test(void *ctxp, void *reqp, int *done, weft_transport_completion_t *c)
{
    struct ex_req *req = reqp;

    if (!req)
        return WEFT_ERR_INVALID_ARG;
    if (!req->done) {
        *done = 0;
        return WEFT_SUCCESS;
    }
    *c = req->c;
    *done = 1;
    /* Done means freed: the core drops its handle now. */
    list_remove(&req->link);
    free(req);
    return WEFT_SUCCESS;
}

/* Only a receive still waiting can be cancelled; anything else is done
 * already and completes normally. */
static weft_result_t ex_cancel(void *ctxp, void *reqp)
{
    struct ex_ctx *ctx = ctxp;
    struct ex_req *req = reqp;

    if (!req)
        return WEFT_ERR_INVALID_ARG;
    if (!req->done)
        complete(ctx, req, WEFT_ERR_ABORTED, req->peer, req->tag, 0, 1);
    return WEFT_SUCCESS;
}

/* Everything happens when posted, so progress only has to clear the wait
 * descriptor. A network transport reads its sockets or completion queues
 * here, never blocking. */
static weft_result_t ex_progress(void *ctxp)
{
    struct ex_ctx *ctx = ctxp;
    uint64_t count;

    while (read(ctx->efd, &count, sizeof(count)) == (ssize_t)sizeof(count))
        ;
    return WEFT_SUCCESS;
}

static weft_result_t ex_get_wait_fd(void *ctxp, int *fd)
{
    struct ex_ctx *ctx = ctxp;

    *fd = ctx->efd;
    return WEFT_SUCCESS;
}

/* Matched probe: the core uses it for receives from any source when
 * several transports are active, to take a message from exactly one. */
static weft_result_t ex_improbe(void *ctxp, int peer, uint64_t tag, uint64_t ignore, int *found,
                                void **msgp, weft_transport_completion_t *info)
{
    struct ex_ctx *ctx = ctxp;

    *found = 0;
    for (struct ex_link *l = ctx->unexpected.next; l != &ctx->unexpected; l = l->next) {
        struct ex_msg *msg = (struct ex_msg *)l;

        if ((peer == WEFT_TRANSPORT_ANY_PEER || msg->peer == peer) &&
            tag_matches(msg->tag, tag, ignore)) {
            /* Out of the queue now: no other receive can match it. */
            list_remove(&msg->link);
            info->status = WEFT_SUCCESS;
            info->peer = msg->peer;
            info->tag = msg->tag;
            info->len = msg->len;
            *msgp = msg;
            *found = 1;
            break;
        }
    }
    return WEFT_SUCCESS;
}

static weft_result_t ex_imrecv(void *ctxp, void *msgp, void *buf, size_t len, void *mhandle,
                               void **reqp)
{
    struct ex_ctx *ctx = ctxp;
    struct ex_msg *msg = msgp;
    struct ex_req *req;

    if (!msg)
        return WEFT_ERR_INVALID_ARG;
    req = req_new(ctx, 1);
    if (!req)
        return WEFT_ERR_NO_MEMORY;
    req->buf = buf;
    req->cap = len;
    fill(ctx, req, msg->data, msg->len, msg->peer, msg->tag, 0);
    free(msg);
    *reqp = req;
    return WEFT_SUCCESS;
}

/*
 * The one exported symbol. The core finds it by name, checks abi_version,
 * struct_size and name (which must match the file weft-example.so), and
 * that every required function is set. mem_export and put are optional
 * and left NULL: this transport announces no WEFT_TRANSPORT_CAP_PUT.
 * Default visibility because the module is built with -fvisibility=hidden.
 */
__attribute__((visibility("default")))
const weft_transport_v1_t weft_transport_v1 = {
    .abi_version = WEFT_TRANSPORT_ABI_VERSION,
    .struct_size = sizeof(weft_transport_v1_t),
    .name = EX_NAME,
    .description = "loopback to the own rank only; a template for transport authors",
    .init = ex_init,
    .query = ex_query,
    .get_address = ex_get_address,
    .reach = ex_reach,
    .connect = ex_connect,
    .disconnect = ex_disconnect,
    .finalize = ex_finalize,
    .mem_register = ex_mem_register,
    .mem_deregister = ex_mem_deregister,
    .isend = ex_isend,
    .irecv = ex_irecv,
    .test = ex_test,
    .cancel = ex_cancel,
    .progress = ex_progress,
    .get_wait_fd = ex_get_wait_fd,
    .improbe = ex_improbe,
    .imrecv = ex_imrecv,
    .mem_export = NULL,
    .put = NULL,
    /* Reaches only its own rank, which every job has. */
    .needs = WEFT_TRANSPORT_NEEDS_NONE,
};
