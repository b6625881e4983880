/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * request.c: posting sub-operations to transports and reaping them.
 */
#include "config.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "core/coll/coll.h"
#include "core/comm/comm.h"
#include "core/base/error.h"
#include "core/base/log.h"
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

static void request_destroy(struct weft_request *req)
{
    free(req->subs_array);
    free(req);
}

void weft__request_cache_drain(void)
{
    weft__coll_cache_drain();
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

static void collect_detached(weft_comm_t comm);

weft_result_t weft__request_create(weft_comm_t comm, int nsub, struct weft_request **out)
{
    struct weft_request *req;

    /* Two loads on the common path: only this thread links requests into
     * comm->active, so it frees what other threads reaped before linking. */
    if (comm->held || __atomic_load_n(&comm->reaped, __ATOMIC_RELAXED))
        collect_detached(comm);
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
    req->comm = comm;
    req->inst = comm->inst;
    req->nsub = nsub;
    req->result = WEFT_SUCCESS;
    /* Linked into comm->active so abort and destroy can reach it. */
    req->next_active = comm->active;
    if (comm->active)
        comm->active->prev_active = req;
    comm->active = req;
    *out = req;
    return WEFT_SUCCESS;
}

static void pending_remove(weft_comm_t comm, weft__subop_t *sub)
{
    weft__subop_t **link = &comm->pending_head, *prev = NULL;

    while (*link && *link != sub) {
        prev = *link;
        link = &(*link)->next_pending;
    }
    if (!*link)
        return;
    *link = sub->next_pending;
    if (comm->pending_tail == sub)
        comm->pending_tail = prev;
    sub->next_pending = NULL;
}

static void pending_append(weft_comm_t comm, weft__subop_t *sub)
{
    sub->next_pending = NULL;
    if (comm->pending_tail)
        comm->pending_tail->next_pending = sub;
    else
        comm->pending_head = sub;
    comm->pending_tail = sub;
}

static void sub_finish(weft__subop_t *sub, weft_result_t rc)
{
    sub->state = WEFT__SUBOP_DONE;
    sub->result = rc;
}

/* Hands one sub-operation to the transport of its peer, holding that
 * transport's lock: *held is the transport whose lock the caller holds
 * (NULL: none), kept held for the next sub-operation of a batch. */
static weft_result_t sub_post_held(weft_comm_t comm, weft__subop_t *sub, weft__plugin_t **held)
{
    weft__instance_t *inst = comm->inst;
    weft__plugin_t *pl;
    weft_result_t rc;
    int world;

    if (sub->peer == WEFT_ANY_SOURCE) {
        pl = comm->single_plugin;
        world = WEFT_TRANSPORT_ANY_PEER;
    } else {
        world = comm->world_ranks[sub->peer];
        pl = inst->peers[world].plugin;
    }
    sub->plugin = pl;
    if (*held != pl) {
        if (*held)
            pthread_mutex_unlock(&(*held)->lock);
        pthread_mutex_lock(&pl->lock);
        *held = pl;
    }
    if (sub->kind == WEFT_P2P_SEND)
        rc = pl->ops->isend(pl->ctx, world, sub->buf, sub->bytes, sub->tag, NULL, &sub->treq);
    else
        rc = pl->ops->irecv(pl->ctx, world, sub->buf, sub->bytes, sub->tag, sub->ignore, NULL,
                            &sub->treq);
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

static weft_result_t sub_post(weft_comm_t comm, weft__subop_t *sub)
{
    weft__plugin_t *held = NULL;
    weft_result_t rc = sub_post_held(comm, sub, &held);

    pthread_mutex_unlock(&held->lock);
    return rc;
}

/* A receive from any source over several transports: takes the first
 * matching message any of them holds (matched probe), then receives it. */
static void sub_probe(weft_comm_t comm, weft__subop_t *sub)
{
    weft__plugin_set_t *set = &comm->inst->plugins;

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

/* Posts the communicator's queued receives in order; a receive from any
 * source that has not matched yet holds back the ones behind it. */
static void comm_advance_pending(weft_comm_t comm)
{
    while (comm->pending_head) {
        weft__subop_t *sub = comm->pending_head;

        if (sub->state == WEFT__SUBOP_WAITING) {
            if (sub->peer == WEFT_ANY_SOURCE)
                sub->state = WEFT__SUBOP_PROBING;
            else
                sub_post(comm, sub);
        }
        if (sub->state == WEFT__SUBOP_PROBING)
            sub_probe(comm, sub);
        if (sub->state == WEFT__SUBOP_PROBING)
            return;
        pending_remove(comm, sub);
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
        weft_comm_t comm = req->comm;

        sub->source = (comm && c->peer >= 0 && c->peer < comm->inst->size)
                          ? comm->comm_rank_of[c->peer] : -1;
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

    if (req->coll || req->inst->ntransports_used != 1 ||
        (req->comm && req->comm->pending_head))
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
    weft_comm_t comm = req->comm;

    if (req->coll) {
        weft__coll_poll(req->coll, done);
        req->result = req->coll->result;
        return WEFT_SUCCESS;
    }
    /* Finished operations stay finished: nothing to test again (a
     * collective's round is polled once more after its wait). */
    if (req->ndone == req->nsub) {
        *done = 1;
        return WEFT_SUCCESS;
    }
    if (comm && comm->pending_head)
        comm_advance_pending(comm);
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
    if (req->coll) {
        weft__coll_cancel(req->coll, rc);
        return;
    }
    for (int i = 0; i < req->nsub; i++) {
        weft__subop_t *sub = &req->subs[i];

        switch (sub->state) {
        case WEFT__SUBOP_WAITING:
        case WEFT__SUBOP_PROBING:
            if (req->comm)
                pending_remove(req->comm, sub);
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
 * may find one done (reap_detached), but only the communicator's own
 * thread may unlink it from comm->active: that thread links new requests
 * there without a lock, and a lock on every creation and free would tax
 * every blocking call for the sake of this rare one. So the reaper hands
 * a finished request back on comm->reaped, and the communicator's thread
 * frees it at its next request creation (or when the communicator goes).
 * Requests the reaper must not even poll stay on comm->held, polled by
 * the communicator's thread alone: a collective, whose steps post rounds
 * on the communicator, and a receive still in the pending queue, which
 * the communicator's thread may post at any time. */
static int detach_must_hold(const struct weft_request *req)
{
    if (req->coll)
        return 1;
    for (int i = 0; i < req->nsub; i++)
        if (req->subs[i].state == WEFT__SUBOP_WAITING ||
            req->subs[i].state == WEFT__SUBOP_PROBING)
            return 1;
    return 0;
}

void weft__request_detach(struct weft_request *req)
{
    weft_comm_t comm = req->comm;
    weft__instance_t *inst = req->inst;

    if (detach_must_hold(req)) {
        req->detached = WEFT__DETACHED_HELD;
        req->next_detached = comm->held;
        comm->held = req;
        return;
    }
    req->detached = WEFT__DETACHED_SHARED;
    pthread_mutex_lock(&inst->lock);
    req->next_detached = inst->detached;
    /* Atomic: progress peeks at it without the lock. */
    __atomic_store_n(&inst->detached, req, __ATOMIC_RELAXED);
    pthread_mutex_unlock(&inst->lock);
}

/* Frees what other threads reaped and what is done among the held, on
 * the communicator's thread. */
static void collect_detached(weft_comm_t comm)
{
    weft__instance_t *inst = comm->inst;
    struct weft_request *list = comm->held, *req;

    comm->held = NULL;
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
    if (!__atomic_load_n(&comm->reaped, __ATOMIC_RELAXED))
        return;
    pthread_mutex_lock(&inst->lock);
    list = comm->reaped;
    __atomic_store_n(&comm->reaped, NULL, __ATOMIC_RELAXED);
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
 * the communicator's thread (the communicator goes). */
static void detached_unlink(struct weft_request *req)
{
    weft__instance_t *inst = req->inst;
    weft_comm_t comm = req->comm;

    if (req->detached == WEFT__DETACHED_HELD) {
        list_remove(&comm->held, req);
    } else {
        /* A reaper may move it from one list to the other meanwhile. */
        pthread_mutex_lock(&inst->lock);
        if (!list_remove(&inst->detached, req)) {
            struct weft_request *reaped = comm->reaped;

            list_remove(&reaped, req);
            __atomic_store_n(&comm->reaped, reaped, __ATOMIC_RELAXED);
        }
        pthread_mutex_unlock(&inst->lock);
    }
    req->detached = WEFT__ATTACHED;
}

void weft__request_free(struct weft_request *req)
{
    weft_comm_t comm = req->comm;

    if (req->detached)
        detached_unlink(req);

    if (comm) {
        for (int i = 0; i < req->nsub; i++)
            if (req->subs[i].state == WEFT__SUBOP_WAITING ||
                req->subs[i].state == WEFT__SUBOP_PROBING)
                pending_remove(comm, &req->subs[i]);
        if (req->prev_active)
            req->prev_active->next_active = req->next_active;
        else if (comm->active == req)
            comm->active = req->next_active;
        if (req->next_active)
            req->next_active->prev_active = req->prev_active;
    }
    if (req->coll)
        weft__coll_free(req->coll);
    if (!cache_push(req))
        request_destroy(req);
}

void weft__request_start(struct weft_request *req)
{
    weft_comm_t comm = req->comm;
    weft__plugin_t *held = NULL;

    for (int i = 0; i < req->nsub; i++) {
        weft__subop_t *sub = &req->subs[i];

        sub->state = WEFT__SUBOP_WAITING;
        /* Zero-length operations still travel: a zero-length message is a
         * message that must be matched. */
        if (sub->kind == WEFT_P2P_RECV && (comm->single_plugin == NULL || comm->pending_head)) {
            pending_append(comm, sub);
            continue;
        }
        /* A failure is recorded in the sub-operation and reported when
         * the request is waited for, as for any other failure. One hold
         * of the transport's lock for the whole batch. */
        sub_post_held(comm, sub, &held);
    }
    if (held)
        pthread_mutex_unlock(&held->lock);
    if (comm->pending_head)
        comm_advance_pending(comm);
}
