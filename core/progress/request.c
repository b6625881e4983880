/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * request.c: posting sub-operations to transports and reaping them.
 */
#include "config.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/base/error.h"
#include "core/base/log.h"
#include "core/dt/dtype.h"
#include "core/progress/request.h"

/* Finished requests are kept for reuse in a short list per thread, with
 * their arrays of sub-operations: a blocking send or receive otherwise
 * spends a calloc and a free on its request, as much as the transport
 * spends on a small message, and every round of a collective a calloc
 * more. Per thread, so no lock. A thread's list is freed when the thread
 * exits (the key's destructor) or when the last communicator of an
 * instance goes. */
#define WEFT_REQUEST_CACHE_MAX 8

static __thread struct weft_request *cache_head;
static __thread int cache_len;
static __thread int cache_armed;     /* this thread's destructor will run */
static pthread_key_t cache_key;
static pthread_once_t cache_key_once = PTHREAD_ONCE_INIT;
static int cache_key_created;

/* The other layers' per-thread caches, drained with this one. */
#define CACHE_DRAINS_MAX 4
static void (*cache_drains[CACHE_DRAINS_MAX])(void);
static int ncache_drains;                 /* atomic: drains read it unlocked */
static pthread_mutex_t cache_drains_lock = PTHREAD_MUTEX_INITIALIZER;

static void request_destroy(struct weft_request *req)
{
    free(req->subs_array);
    free(req);
}

void weft__request_cache_add_drain(void (*drain)(void))
{
    int n;

    pthread_mutex_lock(&cache_drains_lock);
    n = ncache_drains;
    for (int i = 0; i < n; i++)
        if (cache_drains[i] == drain)
            goto out_unlock;
    if (n < CACHE_DRAINS_MAX) {
        cache_drains[n] = drain;
        /* Release: a drain that sees the count sees the function. */
        __atomic_store_n(&ncache_drains, n + 1, __ATOMIC_RELEASE);
    }
out_unlock:
    pthread_mutex_unlock(&cache_drains_lock);
}

void weft__request_cache_drain(void)
{
    int n = __atomic_load_n(&ncache_drains, __ATOMIC_ACQUIRE);

    for (int i = 0; i < n; i++)
        cache_drains[i]();
    while (cache_head) {
        struct weft_request *req = cache_head;

        cache_head = req->next_active;
        request_destroy(req);
    }
    cache_len = 0;
}

static void cache_thread_exit(void *unused)
{
    (void)unused;
    weft__request_cache_drain();
}

static void cache_key_create(void)
{
    if (pthread_key_create(&cache_key, cache_thread_exit) != 0)
        cache_key = (pthread_key_t)-1;
    else
        cache_key_created = 1;
}

/* When libweft is unloaded (dlclose by a plugin host, or Python's ctypes)
 * while threads that used it live on, their exit would call
 * cache_thread_exit, whose code is gone by then: a crash. Deleting the key
 * here means no destructor runs after the unload; the caches of those
 * threads are leaked instead, a few requests each, the lesser evil since
 * their memory cannot be reached from here. The unloading thread frees
 * its own. This also runs at process exit, where it changes nothing. */
__attribute__((destructor)) static void cache_key_delete(void)
{
    weft__request_cache_drain();
    if (cache_key_created)
        pthread_key_delete(cache_key);
}

int weft__request_cache_arm(void)
{
    if (!cache_armed) {
        /* A non-NULL value is what makes the destructor run. */
        pthread_once(&cache_key_once, cache_key_create);
        if (cache_key == (pthread_key_t)-1 || pthread_setspecific(cache_key, &cache_head) != 0)
            return 0;
        cache_armed = 1;
    }
    return 1;
}

static int cache_push(struct weft_request *req)
{
    if (cache_len >= WEFT_REQUEST_CACHE_MAX || !weft__request_cache_arm())
        return 0;
    req->next_active = cache_head;
    cache_head = req;
    cache_len++;
    return 1;
}

/* A cleared request from the cache, keeping its array of sub-operations
 * when one was allocated; NULL when the cache is empty. */
static struct weft_request *cache_pop(void)
{
    struct weft_request *req = cache_head;
    weft__subop_t *array;
    int cap;

    if (!req)
        return NULL;
    cache_head = req->next_active;
    cache_len--;
    array = req->subs_array;
    cap = req->subs_cap;
    memset(req, 0, sizeof(*req));
    req->subs_array = array;
    req->subs_cap = cap;
    return req;
}

static void collect_detached(weft__mctx_t *ctx);

weft_result_t weft__request_create(weft__mctx_t *ctx, int nsub, struct weft_request **out)
{
    struct weft_request *req;

    /* Two loads on the common path: only this thread links requests into
     * ctx->active, so it frees what other threads reaped before linking. */
    if (ctx->held || __atomic_load_n(&ctx->reaped, __ATOMIC_RELAXED))
        collect_detached(ctx);
    req = cache_pop();

    if (!req)
        req = calloc(1, sizeof(*req));
    if (!req)
        return weft__error(WEFT_ERR_NO_MEMORY, "cannot allocate a request");
    if (nsub > 1) {
        if (req->subs_cap < nsub) {
            free(req->subs_array);
            req->subs_cap = 0;
            req->subs_array = malloc((size_t)nsub * sizeof(*req->subs_array));
            if (!req->subs_array) {
                free(req);
                return weft__error(WEFT_ERR_NO_MEMORY, "cannot allocate %d operations", nsub);
            }
            req->subs_cap = nsub;
        }
        memset(req->subs_array, 0, (size_t)nsub * sizeof(*req->subs_array));
        req->subs = req->subs_array;
    } else {
        req->subs = &req->sub_inline;
    }
    req->ctx = ctx;
    req->inst = ctx->inst;
    req->nsub = nsub;
    req->result = WEFT_SUCCESS;
    /* Linked into ctx->active so abort and destroy can reach it. */
    req->next_active = ctx->active;
    if (ctx->active)
        ctx->active->prev_active = req;
    ctx->active = req;
    *out = req;
    return WEFT_SUCCESS;
}

weft_result_t weft__request_create_complete(weft__mctx_t *ctx, struct weft_request **out)
{
    weft_result_t rc = weft__request_create(ctx, 1, out);

    if (rc == WEFT_SUCCESS)
        (*out)->subs[0].state = WEFT__SUBOP_DONE;
    return rc;
}

void weft__subop_fill(weft__subop_t *sub, const weft__mctx_t *ctx, int kind, const void *buf,
                      size_t bytes, size_t elem_size, int peer, int tag)
{
    sub->kind = kind;
    sub->buf = (void *)buf;
    sub->mhandle = NULL;
    sub->bytes = bytes;
    sub->elem_size = elem_size;
    sub->peer = peer;
    sub->user_tag = tag;
    sub->source = -1;
    sub->tag_out = -1;
    if (tag == WEFT_ANY_TAG) {
        sub->tag = weft__tag(ctx->context_id, 0);
        sub->ignore = WEFT__TAG_IGNORE_USER;
    } else {
        sub->tag = weft__tag(ctx->context_id, tag);
        sub->ignore = 0;
    }
}

static void pending_remove(weft__mctx_t *ctx, weft__subop_t *sub)
{
    weft__subop_t **link = &ctx->pending_head, *prev = NULL;

    while (*link && *link != sub) {
        prev = *link;
        link = &(*link)->next_pending;
    }
    if (!*link)
        return;
    *link = sub->next_pending;
    if (ctx->pending_tail == sub)
        ctx->pending_tail = prev;
    sub->next_pending = NULL;
}

static void pending_append(weft__mctx_t *ctx, weft__subop_t *sub)
{
    sub->next_pending = NULL;
    if (ctx->pending_tail)
        ctx->pending_tail->next_pending = sub;
    else
        ctx->pending_head = sub;
    ctx->pending_tail = sub;
}

static void sub_finish(weft__subop_t *sub, weft_result_t rc)
{
    sub->state = WEFT__SUBOP_DONE;
    sub->result = rc;
}

/* Hands one sub-operation to the transport of its peer, holding that
 * transport's lock: *held is the transport whose lock the caller holds
 * (NULL: none), kept held for the next sub-operation of a batch. */
static weft_result_t sub_post_held(weft__mctx_t *ctx, weft__subop_t *sub, weft__plugin_t **held)
{
    weft__instance_t *inst = ctx->inst;
    weft__plugin_t *pl;
    weft_result_t rc;
    int world;

    if (sub->peer == WEFT_ANY_SOURCE) {
        pl = ctx->single_plugin;
        world = WEFT_TRANSPORT_ANY_PEER;
    } else {
        world = ctx->world_ranks[sub->peer];
        pl = inst->wire.peers[world].plugin;
    }
    sub->plugin = pl;
    if (*held != pl) {
        if (*held)
            pthread_mutex_unlock(&(*held)->lock);
        pthread_mutex_lock(&pl->lock);
        *held = pl;
    }
    if (sub->kind == WEFT_P2P_SEND)
        rc = pl->ops->isend(pl->ctx, world, sub->buf, sub->bytes, sub->tag, sub->mhandle,
                            &sub->treq);
    else
        rc = pl->ops->irecv(pl->ctx, world, sub->buf, sub->bytes, sub->tag, sub->ignore,
                            sub->mhandle, &sub->treq);
    if (rc != WEFT_SUCCESS) {
        WEFT_WARN(TRANSPORT, "%s %s to world rank %d failed: %s (%s)", pl->name,
                  sub->kind == WEFT_P2P_SEND ? "isend" : "irecv", world, weft_strerror(rc),
                  weft__get_error());
        sub_finish(sub, rc);
        return rc;
    }
    sub->state = WEFT__SUBOP_POSTED;
    return WEFT_SUCCESS;
}

static weft_result_t sub_post(weft__mctx_t *ctx, weft__subop_t *sub)
{
    weft__plugin_t *held = NULL;
    weft_result_t rc = sub_post_held(ctx, sub, &held);

    pthread_mutex_unlock(&held->lock);
    return rc;
}

/* A receive from any source over several transports: takes the first
 * matching message any of them holds (matched probe), then receives it. */
static void sub_probe(weft__mctx_t *ctx, weft__subop_t *sub)
{
    weft__plugin_set_t *set = &ctx->inst->wire.plugins;

    for (int i = 0; i < set->n; i++) {
        weft__plugin_t *pl = &set->plugins[i];
        weft_transport_completion_t info;
        void *msg = NULL;
        int found = 0;
        weft_result_t rc;

        if (!pl->ops->improbe)
            continue;
        pthread_mutex_lock(&pl->lock);
        pl->ops->progress(pl->ctx);
        rc = pl->ops->improbe(pl->ctx, WEFT_TRANSPORT_ANY_PEER, sub->tag, sub->ignore, &found,
                              &msg, &info);
        if (rc == WEFT_SUCCESS && found)
            rc = pl->ops->imrecv(pl->ctx, msg, sub->buf, sub->bytes, NULL, &sub->treq);
        pthread_mutex_unlock(&pl->lock);
        if (rc != WEFT_SUCCESS) {
            sub_finish(sub, rc);
            return;
        }
        if (found) {
            sub->plugin = pl;
            sub->state = WEFT__SUBOP_POSTED;
            return;
        }
    }
}

/* Posts the context's queued receives in order; a receive from any
 * source that has not matched yet holds back the ones behind it. */
static void advance_pending(weft__mctx_t *ctx)
{
    while (ctx->pending_head) {
        weft__subop_t *sub = ctx->pending_head;

        if (sub->state == WEFT__SUBOP_WAITING) {
            if (sub->peer == WEFT_ANY_SOURCE)
                sub->state = WEFT__SUBOP_PROBING;
            else
                sub_post(ctx, sub);
        }
        if (sub->state == WEFT__SUBOP_PROBING)
            sub_probe(ctx, sub);
        if (sub->state == WEFT__SUBOP_PROBING)
            return;
        pending_remove(ctx, sub);
    }
}

/* Records what the transport's test said of a posted sub-operation. */
static void sub_tested(struct weft_request *req, weft__subop_t *sub, weft_result_t rc, int done,
                       const weft_transport_completion_t *c)
{
    weft__plugin_t *pl = sub->plugin;

    if (rc != WEFT_SUCCESS) {
        WEFT_WARN(TRANSPORT, "%s test failed: %s (%s)", pl->name, weft_strerror(rc),
                  weft__get_error());
        sub->treq = NULL;
        sub_finish(sub, rc);
        return;
    }
    if (!done)
        return;
    sub->treq = NULL;
    sub->len = c->len;
    if (sub->kind == WEFT_P2P_RECV) {
        const weft__mctx_t *ctx = req->ctx;

        sub->source = (c->peer >= 0 && c->peer < ctx->inst->wire.size)
                          ? ctx->member_of[c->peer] : -1;
        sub->tag_out = (int)(uint32_t)(c->tag & WEFT__TAG_IGNORE_USER);
    }
    /* A cancelled operation reports what the cancel said, whatever the
     * transport managed before it saw the cancel. */
    sub_finish(sub, sub->result != WEFT_SUCCESS ? sub->result : c->status);
}

static void sub_test(struct weft_request *req, weft__subop_t *sub)
{
    weft__plugin_t *pl = sub->plugin;
    weft_transport_completion_t c;
    weft_result_t rc;
    int done = 0;

    pthread_mutex_lock(&pl->lock);
    rc = pl->ops->test(pl->ctx, sub->treq, &done, &c);
    pthread_mutex_unlock(&pl->lock);
    sub_tested(req, sub, rc, done, &c);
}

int weft__request_progress_test(struct weft_request *req, int progress, int *done)
{
    weft__plugin_t *pl = NULL;
    int ndone = 0;

    if (req->ops || req->inst->wire.ntransports_used != 1 || req->ctx->pending_head)
        return 0;
    /* Every operation posted (or done), all to the one transport. */
    for (int i = 0; i < req->nsub; i++) {
        weft__subop_t *sub = &req->subs[i];

        if (sub->state == WEFT__SUBOP_POSTED)
            pl = sub->plugin;
        else if (sub->state != WEFT__SUBOP_DONE)
            return 0;
    }
    if (!pl)
        return 0;
    pthread_mutex_lock(&pl->lock);
    if (progress)
        pl->ops->progress(pl->ctx);
    req->result = WEFT_SUCCESS;
    for (int i = 0; i < req->nsub; i++) {
        weft__subop_t *sub = &req->subs[i];
        weft_transport_completion_t c;

        if (sub->state == WEFT__SUBOP_POSTED) {
            int tdone = 0;
            weft_result_t rc = pl->ops->test(pl->ctx, sub->treq, &tdone, &c);

            sub_tested(req, sub, rc, tdone, &c);
        }
        if (sub->state != WEFT__SUBOP_DONE)
            continue;
        ndone++;
        if (sub->result != WEFT_SUCCESS && req->result == WEFT_SUCCESS)
            req->result = sub->result;
    }
    pthread_mutex_unlock(&pl->lock);
    req->ndone = ndone;
    *done = ndone == req->nsub;
    return 1;
}

/* Tests the posted sub-operations; touches nothing but req. */
static void poll_subs(struct weft_request *req, int *done)
{
    int ndone = 0;

    req->result = WEFT_SUCCESS;
    for (int i = 0; i < req->nsub; i++) {
        weft__subop_t *sub = &req->subs[i];

        if (sub->state == WEFT__SUBOP_POSTED)
            sub_test(req, sub);
        if (sub->state != WEFT__SUBOP_DONE)
            continue;
        ndone++;
        if (sub->result != WEFT_SUCCESS && req->result == WEFT_SUCCESS)
            req->result = sub->result;
    }
    req->ndone = ndone;
    *done = ndone == req->nsub;
}

weft_result_t weft__request_poll(struct weft_request *req, int *done)
{
    weft__mctx_t *ctx = req->ctx;

    if (req->ops) {
        req->ops->poll(req, done);
        return WEFT_SUCCESS;
    }
    /* Finished operations stay finished: nothing to test again (a
     * collective's round is polled once more after its wait). */
    if (req->ndone == req->nsub) {
        *done = 1;
        return WEFT_SUCCESS;
    }
    if (ctx->pending_head)
        advance_pending(ctx);
    poll_subs(req, done);
    return WEFT_SUCCESS;
}

void weft__request_poll_detached(struct weft_request *req, int *done)
{
    if (req->ndone == req->nsub)
        *done = 1;
    else
        poll_subs(req, done);
}

void weft__request_cancel(struct weft_request *req, weft_result_t rc)
{
    if (req->ops) {
        req->ops->cancel(req, rc);
        return;
    }
    for (int i = 0; i < req->nsub; i++) {
        weft__subop_t *sub = &req->subs[i];

        switch (sub->state) {
        case WEFT__SUBOP_WAITING:
        case WEFT__SUBOP_PROBING:
            pending_remove(req->ctx, sub);
            sub_finish(sub, rc);
            break;
        case WEFT__SUBOP_POSTED:
            /* The transport finishes it; sub_test keeps this result. */
            sub->result = rc;
            pthread_mutex_lock(&sub->plugin->lock);
            sub->plugin->ops->cancel(sub->plugin->ctx, sub->treq);
            pthread_mutex_unlock(&sub->plugin->lock);
            break;
        default:
            break;
        }
    }
}

void weft__request_cancel_all(weft__mctx_t *ctx, weft_result_t rc)
{
    for (struct weft_request *req = ctx->active; req; req = req->next_active)
        weft__request_cancel(req, rc);
}

void weft__request_status(const struct weft_request *req, weft_status_t *status)
{
    if (!status)
        return;
    memset(status, 0, sizeof(*status));
    status->source = -1;
    status->tag = -1;
    status->error = req->result;
    if (req->nsub == 1) {
        const weft__subop_t *sub = &req->subs[0];

        if (sub->kind == WEFT_P2P_RECV) {
            size_t got = sub->len < sub->bytes ? sub->len : sub->bytes;

            status->source = sub->source;
            status->tag = sub->tag_out;
            status->count = sub->elem_size ? got / sub->elem_size : 0;
        } else {
            status->source = sub->peer;
            status->tag = sub->user_tag;
            status->count = sub->elem_size ? sub->bytes / sub->elem_size : 0;
        }
    }
}

/* Requests the user freed before they completed. Any thread's progress
 * may find one done (reap_detached), but only the context's own thread
 * may unlink it from ctx->active: that thread links new requests there
 * without a lock, and a lock on every creation and free would tax every
 * blocking call for the sake of this rare one. So the reaper hands a
 * finished request back on ctx->reaped, and the context's thread frees it
 * at its next request creation (or when the context goes). Requests the
 * reaper must not even poll stay on ctx->held, polled by the context's
 * thread alone: an owner's (a collective, whose steps post rounds on the
 * communicator), and a receive still in the pending queue, which the
 * context's thread may post at any time. */
static int detach_must_hold(const struct weft_request *req)
{
    if (req->ops)
        return 1;
    for (int i = 0; i < req->nsub; i++)
        if (req->subs[i].state == WEFT__SUBOP_WAITING ||
            req->subs[i].state == WEFT__SUBOP_PROBING)
            return 1;
    return 0;
}

void weft__request_detach(struct weft_request *req)
{
    weft__mctx_t *ctx = req->ctx;
    weft__instance_t *inst = req->inst;

    if (detach_must_hold(req)) {
        req->detached = WEFT__DETACHED_HELD;
        req->next_detached = ctx->held;
        ctx->held = req;
        return;
    }
    req->detached = WEFT__DETACHED_SHARED;
    pthread_mutex_lock(&inst->lock);
    req->next_detached = inst->detached;
    /* Atomic: progress peeks at it without the lock. */
    __atomic_store_n(&inst->detached, req, __ATOMIC_RELAXED);
    pthread_mutex_unlock(&inst->lock);
}

void weft__request_release(struct weft_request *req)
{
    int done = 0;

    weft__request_poll(req, &done);
    if (done)
        weft__request_free(req);
    else
        weft__request_detach(req);
}

/* Frees what other threads reaped and what is done among the held, on
 * the context's thread. */
static void collect_detached(weft__mctx_t *ctx)
{
    weft__instance_t *inst = ctx->inst;
    struct weft_request *list = ctx->held, *req;

    ctx->held = NULL;
    while ((req = list)) {
        int done = 0;

        list = req->next_detached;
        weft__request_poll(req, &done);
        if (done) {
            req->detached = WEFT__ATTACHED;
            weft__request_free(req);
        } else {
            weft__request_detach(req);
        }
    }
    if (!__atomic_load_n(&ctx->reaped, __ATOMIC_RELAXED))
        return;
    pthread_mutex_lock(&inst->lock);
    list = ctx->reaped;
    __atomic_store_n(&ctx->reaped, NULL, __ATOMIC_RELAXED);
    pthread_mutex_unlock(&inst->lock);
    while ((req = list)) {
        list = req->next_detached;
        req->detached = WEFT__ATTACHED;
        weft__request_free(req);
    }
}

static int list_remove(struct weft_request **head, struct weft_request *req)
{
    for (struct weft_request **link = head; *link; link = &(*link)->next_detached)
        if (*link == req) {
            /* Atomic: head may be inst->detached, which progress peeks at. */
            __atomic_store_n(link, req->next_detached, __ATOMIC_RELAXED);
            return 1;
        }
    return 0;
}

/* Takes a detached request off whichever list it waits on, for a free on
 * the context's thread (the context goes). */
static void detached_unlink(struct weft_request *req)
{
    weft__instance_t *inst = req->inst;
    weft__mctx_t *ctx = req->ctx;

    if (req->detached == WEFT__DETACHED_HELD) {
        list_remove(&ctx->held, req);
    } else {
        /* A reaper may move it from one list to the other meanwhile. */
        pthread_mutex_lock(&inst->lock);
        if (!list_remove(&inst->detached, req)) {
            struct weft_request *reaped = ctx->reaped;

            list_remove(&reaped, req);
            __atomic_store_n(&ctx->reaped, reaped, __ATOMIC_RELAXED);
        }
        pthread_mutex_unlock(&inst->lock);
    }
    req->detached = WEFT__ATTACHED;
}

void weft__request_free(struct weft_request *req)
{
    weft__mctx_t *ctx = req->ctx;

    if (req->detached)
        detached_unlink(req);

    for (int i = 0; i < req->nsub; i++)
        if (req->subs[i].state == WEFT__SUBOP_WAITING ||
            req->subs[i].state == WEFT__SUBOP_PROBING)
            pending_remove(ctx, &req->subs[i]);
    if (req->prev_active)
        req->prev_active->next_active = req->next_active;
    else if (ctx->active == req)
        ctx->active = req->next_active;
    if (req->next_active)
        req->next_active->prev_active = req->prev_active;
    if (req->ops)
        req->ops->release(req);
    if (!cache_push(req))
        request_destroy(req);
}

void weft__request_start(struct weft_request *req)
{
    weft__mctx_t *ctx = req->ctx;
    weft__plugin_t *held = NULL;

    for (int i = 0; i < req->nsub; i++) {
        weft__subop_t *sub = &req->subs[i];

        sub->state = WEFT__SUBOP_WAITING;
        /* Zero-length operations still travel: a zero-length message is a
         * message that must be matched. */
        if (sub->kind == WEFT_P2P_RECV && (ctx->single_plugin == NULL || ctx->pending_head)) {
            pending_append(ctx, sub);
            continue;
        }
        /* A failure is recorded in the sub-operation and reported when
         * the request is waited for, as for any other failure. One hold
         * of the transport's lock for the whole batch. */
        sub_post_held(ctx, sub, &held);
    }
    if (held)
        pthread_mutex_unlock(&held->lock);
    if (ctx->pending_head)
        advance_pending(ctx);
}

weft_result_t weft__request_post_batch(weft__mctx_t *ctx, int n, const weft_p2p_op_t *ops,
                                       struct weft_request **req)
{
    struct weft_request *r;
    weft_result_t rc;

    /* An empty batch is complete at once. */
    if (n == 0)
        return weft__request_create_complete(ctx, req);
    rc = weft__request_create(ctx, n, &r);
    if (rc != WEFT_SUCCESS)
        return rc;
    for (int i = 0; i < n; i++) {
        size_t elem = weft__dtype_bytes(ops[i].dt);

        weft__subop_fill(&r->subs[i], ctx, ops[i].kind, ops[i].buf, ops[i].count * elem, elem,
                         ops[i].peer, ops[i].tag);
    }
    weft__request_start(r);
    *req = r;
    return WEFT_SUCCESS;
}

void weft__request_describe(const struct weft_request *req, char *buf, size_t cap)
{
    if (req->ops) {
        req->ops->describe(req, buf, cap);
        return;
    }
    for (int i = 0; i < req->nsub; i++) {
        const weft__subop_t *sub = &req->subs[i];

        if (sub->state == WEFT__SUBOP_DONE)
            continue;
        if (sub->peer == WEFT_ANY_SOURCE)
            snprintf(buf, cap, "receive from any rank");
        else
            snprintf(buf, cap, "%s rank %d", sub->kind == WEFT_P2P_SEND ? "send to" :
                     "receive from", sub->peer);
        if (sub->user_tag == WEFT_ANY_TAG)
            snprintf(buf + strlen(buf), cap - strlen(buf), " with any tag");
        else
            snprintf(buf + strlen(buf), cap - strlen(buf), " with tag %d", sub->user_tag);
        return;
    }
    snprintf(buf, cap, "operation");
}

const char *weft__request_why(const struct weft_request *req)
{
    return req->ops ? req->ops->why(req) : NULL;
}
