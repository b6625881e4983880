/*
 * request.c: posting sub-operations to transports and reaping them.
 */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "core/coll.h"
#include "core/comm.h"
#include "core/error.h"
#include "core/log.h"
#include "core/request.h"

/* Requests of one operation are recycled through a short list on their
 * communicator: a blocking send or receive otherwise spends a calloc and
 * a free on its request, as much as the transport spends on the message.
 * The list needs no lock: a communicator is used by one thread at a time,
 * and only that thread's calls recycle into it (weft__request_recycle). */
#define WEFT_REQUEST_CACHE_MAX 8

static struct weft_request *cache_pop(weft_comm_t comm)
{
    struct weft_request *req = comm->req_cache;

    if (!req)
        return NULL;
    comm->req_cache = req->next_active;
    comm->req_cache_len--;
    memset(req, 0, sizeof(*req));
    return req;
}

void weft__request_cache_drain(weft_comm_t comm)
{
    while (comm->req_cache) {
        struct weft_request *req = comm->req_cache;

        comm->req_cache = req->next_active;
        free(req);
    }
    comm->req_cache_len = 0;
}

weft_result_t weft__request_create(weft_comm_t comm, int nsub, struct weft_request **out)
{
    struct weft_request *req = nsub <= 1 ? cache_pop(comm) : NULL;

    if (!req)
        req = calloc(1, sizeof(*req));
    if (!req)
        return weft__error(WEFT_ERR_NO_MEMORY, "cannot allocate a request");
    if (nsub > 1) {
        req->subs = calloc((size_t)nsub, sizeof(*req->subs));
        if (!req->subs) {
            free(req);
            return weft__error(WEFT_ERR_NO_MEMORY, "cannot allocate %d operations", nsub);
        }
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

/* Hands one sub-operation to the transport of its peer. */
static weft_result_t sub_post(weft_comm_t comm, weft__subop_t *sub)
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
    pthread_mutex_lock(&pl->lock);
    if (sub->kind == WEFT_P2P_SEND)
        rc = pl->ops->isend(pl->ctx, world, sub->buf, sub->bytes, sub->tag, NULL, &sub->treq);
    else
        rc = pl->ops->irecv(pl->ctx, world, sub->buf, sub->bytes, sub->tag, sub->ignore, NULL,
                            &sub->treq);
    pthread_mutex_unlock(&pl->lock);
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

static void sub_test(struct weft_request *req, weft__subop_t *sub)
{
    weft__plugin_t *pl = sub->plugin;
    weft_transport_completion_t c;
    weft_result_t rc;
    int done = 0;

    pthread_mutex_lock(&pl->lock);
    rc = pl->ops->test(pl->ctx, sub->treq, &done, &c);
    pthread_mutex_unlock(&pl->lock);
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
    sub->len = c.len;
    if (sub->kind == WEFT_P2P_RECV) {
        weft_comm_t comm = req->comm;

        sub->source = (comm && c.peer >= 0 && c.peer < comm->inst->size)
                          ? comm->comm_rank_of[c.peer] : -1;
        sub->tag_out = (int)(uint32_t)(c.tag & WEFT__TAG_IGNORE_USER);
    }
    /* A cancelled operation reports what the cancel said, whatever the
     * transport managed before it saw the cancel. */
    sub_finish(sub, sub->result != WEFT_SUCCESS ? sub->result : c.status);
}

weft_result_t weft__request_poll(struct weft_request *req, int *done)
{
    weft_comm_t comm = req->comm;
    int ndone = 0;

    if (req->coll) {
        weft__coll_poll(req->coll, done);
        req->result = req->coll->result;
        return WEFT_SUCCESS;
    }
    if (comm && comm->pending_head)
        comm_advance_pending(comm);
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
    return WEFT_SUCCESS;
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

/* Takes a request the user freed early off the instance's list. */
static void detached_unlink(struct weft_request *req)
{
    weft__instance_t *inst = req->inst;
    struct weft_request **link;

    pthread_mutex_lock(&inst->lock);
    for (link = &inst->detached; *link; link = &(*link)->next_detached)
        if (*link == req) {
            *link = req->next_detached;
            break;
        }
    pthread_mutex_unlock(&inst->lock);
    req->detached = 0;
}

/* Unlinks req from everything that refers to it and frees what it owns,
 * leaving the request itself. */
static void request_release(struct weft_request *req)
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
    if (req->subs != &req->sub_inline)
        free(req->subs);
}

void weft__request_free(struct weft_request *req)
{
    request_release(req);
    free(req);
}

void weft__request_recycle(struct weft_request *req)
{
    weft_comm_t comm = req->comm;

    request_release(req);
    if (!comm || comm->req_cache_len >= WEFT_REQUEST_CACHE_MAX) {
        free(req);
        return;
    }
    req->next_active = comm->req_cache;
    comm->req_cache = req;
    comm->req_cache_len++;
}

void weft__request_start(struct weft_request *req)
{
    weft_comm_t comm = req->comm;

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
         * the request is waited for, as for any other failure. */
        sub_post(comm, sub);
    }
    if (comm->pending_head)
        comm_advance_pending(comm);
}
