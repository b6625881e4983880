/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * comm.c: communicator objects, their queries, destroy and abort.
 */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "core/comm/abort_notice.h"
#include "core/comm/comm.h"
#include "core/base/error.h"
#include "core/base/log.h"
#include "core/progress/progress.h"
#include "core/progress/request.h"
#include "core/coll/shared/segment.h"

/* How long destroy and abort wait for transports to confirm cancels. */
#define WEFT_CANCEL_WAIT_MS 1000

weft_result_t weft__comm_check(weft_comm_t comm, const char *fn)
{
    if (!comm)
        return weft__error(WEFT_ERR_INVALID_ARG, "%s: comm is NULL", fn);
    if (comm->magic != WEFT__COMM_MAGIC)
        return weft__error(WEFT_ERR_INVALID_ARG,
                           "%s: comm is not a live communicator (destroyed or corrupted)", fn);
    return WEFT_SUCCESS;
}

weft_result_t weft__comm_create(weft__instance_t *inst, int n, const int *world_ranks,
                                uint32_t context_id, weft_comm_t *out)
{
    weft_comm_t comm = calloc(1, sizeof(*comm));

    if (!comm)
        goto err_nomem;
    comm->world_ranks = malloc((size_t)n * sizeof(int));
    comm->comm_rank_of = malloc((size_t)inst->size * sizeof(int));
    if (!comm->world_ranks || !comm->comm_rank_of)
        goto err_free;
    memcpy(comm->world_ranks, world_ranks, (size_t)n * sizeof(int));
    for (int w = 0; w < inst->size; w++)
        comm->comm_rank_of[w] = -1;
    comm->inst = inst;
    comm->size = n;
    comm->rank = -1;
    comm->context_id = context_id;
    comm->single_plugin = inst->peers[world_ranks[0]].plugin;
    for (int r = 0; r < n; r++) {
        int w = world_ranks[r];
        const weft__peer_t *p = &inst->peers[w];

        comm->comm_rank_of[w] = r;
        if (w == inst->rank)
            comm->rank = r;
        if (p->plugin != comm->single_plugin)
            comm->single_plugin = NULL;
        /* Members on this rank's node, in comm rank order. */
        if (!strcmp(p->host_id, inst->peers[inst->rank].host_id)) {
            if (w == inst->rank)
                comm->local_rank = comm->local_size;
            comm->local_size++;
        }
    }
    comm->magic = WEFT__COMM_MAGIC;
    if (weft__comm_nodes_build(comm) != WEFT_SUCCESS)
        goto err_free;
    comm->internal = malloc(sizeof(*comm->internal));
    if (!comm->internal) {
        weft__comm_nodes_free(&comm->nodes);
        goto err_free;
    }
    *comm->internal = *comm;
    comm->internal->context_id = context_id + 1;
    comm->internal->internal = NULL;
    comm->internal->parent = comm;
    pthread_mutex_lock(&inst->lock);
    inst->refs++;
    comm->next_comm = inst->comms;
    if (inst->comms)
        inst->comms->prev_comm = comm;
    inst->comms = comm;
    pthread_mutex_unlock(&inst->lock);
    *out = comm;
    return WEFT_SUCCESS;

err_free:
    free(comm->world_ranks);
    free(comm->comm_rank_of);
    free(comm);
err_nomem:
    return weft__error(WEFT_ERR_NO_MEMORY, "cannot allocate a communicator of %d ranks", n);
}

/* Cancels req with rc (done NULL) or polls it. A detached request on
 * inst->detached may be polled by any thread's reaper at the same time:
 * inst->lock keeps them apart. */
static void cancel_or_poll(struct weft_request *req, weft_result_t rc, int *done)
{
    weft__instance_t *inst = req->inst;
    int shared = req->detached == WEFT__DETACHED_SHARED;

    if (shared)
        pthread_mutex_lock(&inst->lock);
    if (!done)
        weft__request_cancel(req, rc);
    else if (shared)
        weft__request_poll_detached(req, done);
    else
        weft__request_poll(req, done);
    if (shared)
        pthread_mutex_unlock(&inst->lock);
}

/* Fails every request still in flight on comm with rc and waits (briefly)
 * for the transports to let go of the buffers. */
static void comm_fail_active(weft_comm_t comm, weft_result_t rc)
{
    int64_t deadline = weft__now_ms() + WEFT_CANCEL_WAIT_MS;
    int busy;

    for (struct weft_request *req = comm->active; req; req = req->next_active)
        cancel_or_poll(req, rc, NULL);
    do {
        busy = 0;
        weft__progress(comm->inst);
        for (struct weft_request *req = comm->active; req; req = req->next_active) {
            int done = 0;

            cancel_or_poll(req, WEFT_SUCCESS, &done);
            busy |= !done;
        }
    } while (busy && weft__now_ms() < deadline);
    if (busy)
        WEFT_WARN(TRANSPORT, "some operations of a destroyed or aborted communicator did "
                  "not confirm their cancellation within %d ms", WEFT_CANCEL_WAIT_MS);
}

void weft__comm_free(weft_comm_t comm)
{
    weft__instance_t *inst = comm->inst;
    weft_comm_t internal = comm->internal;


    /* First out of inst->comms: an abort notice polled meanwhile marks
     * the communicator and its internal one under inst->lock. */
    pthread_mutex_lock(&inst->lock);
    if (comm->prev_comm)
        comm->prev_comm->next_comm = comm->next_comm;
    else
        inst->comms = comm->next_comm;
    if (comm->next_comm)
        comm->next_comm->prev_comm = comm->prev_comm;
    pthread_mutex_unlock(&inst->lock);
    /* Requests the user still holds become invalid with the communicator;
     * those not complete were cancelled by the caller. */
    while (comm->active) {
        struct weft_request *req = comm->active;

        weft__request_free(req);
    }
    /* Collectives freed their rounds above; what is left on the internal
     * context belongs to nobody else. */
    if (internal) {
        while (internal->active)
            weft__request_free(internal->active);
        internal->magic = 0;
        free(internal);
    }
    comm->magic = 0;
    weft__tune_comm_free(comm);
    weft__shared_detach(comm);
    weft__comm_nodes_free(&comm->nodes);
    free(comm->world_ranks);
    free(comm->comm_rank_of);
    free(comm);
    weft__instance_release(inst);
}

WEFT_API weft_result_t weft_comm_destroy(weft_comm_t comm)
{
    weft_result_t rc = weft__comm_check(comm, "weft_comm_destroy");

    if (rc != WEFT_SUCCESS)
        return rc;
    if (comm->active)
        comm_fail_active(comm, WEFT_ERR_ABORTED);
    if (comm->internal && comm->internal->active)
        comm_fail_active(comm->internal, WEFT_ERR_ABORTED);
    weft__comm_free(comm);
    return WEFT_SUCCESS;
}

void weft__comm_abort_local(weft_comm_t comm)
{
    comm->aborted = 1;
    for (struct weft_request *req = comm->active; req; req = req->next_active)
        weft__request_cancel(req, WEFT_ERR_ABORTED);
    if (comm->internal) {
        comm->internal->aborted = 1;
        for (struct weft_request *req = comm->internal->active; req; req = req->next_active)
            weft__request_cancel(req, WEFT_ERR_ABORTED);
    }
}

void weft__comm_abort_pending(weft_comm_t comm)
{
    weft_comm_t user = comm->parent ? comm->parent : comm;

    /* Acquire: pairs with the release of the thread that read the notice.
     * Cleared first: a second notice (another member aborting too) that
     * sets it again finds the communicator aborted and changes nothing. */
    if (!__atomic_load_n(&comm->abort_pending, __ATOMIC_ACQUIRE))
        return;
    __atomic_store_n(&user->abort_pending, 0, __ATOMIC_RELAXED);
    if (user->internal)
        __atomic_store_n(&user->internal->abort_pending, 0, __ATOMIC_RELAXED);
    if (!user->aborted)
        weft__comm_abort_local(user);
}

WEFT_API weft_result_t weft_comm_abort(weft_comm_t comm)
{
    weft_result_t rc = weft__comm_check(comm, "weft_comm_abort");

    if (rc != WEFT_SUCCESS)
        return rc;
    WEFT_INFO(INIT, "communicator %u aborted by the application", comm->context_id);
    weft__comm_abort_local(comm);
    /* On the world communicator the job is over for this rank: peers learn
     * of it when their connections to it drop. Elsewhere the members get a
     * notice and the connections stay. */
    if (comm->is_world) {
        weft__instance_t *inst = comm->inst;

        for (int w = 0; w < inst->size; w++) {
            weft__plugin_t *pl = inst->peers[w].plugin;

            pthread_mutex_lock(&pl->lock);
            pl->ops->disconnect(pl->ctx, w);
            pthread_mutex_unlock(&pl->lock);
        }
    } else {
        weft__abort_notify(comm);
    }
    return WEFT_SUCCESS;
}

#define COMM_QUERY(fn, out, expr)                                                  \
    WEFT_API weft_result_t fn(weft_comm_t comm, int *out)                          \
    {                                                                              \
        weft_result_t rc = weft__comm_check(comm, #fn);                            \
                                                                                   \
        if (rc != WEFT_SUCCESS)                                                    \
            return rc;                                                             \
        if (!(out))                                                                \
            return weft__error(WEFT_ERR_INVALID_ARG, #fn ": " #out " is NULL");    \
        *(out) = (expr);                                                           \
        return WEFT_SUCCESS;                                                       \
    }

COMM_QUERY(weft_comm_rank, rank, comm->rank)
COMM_QUERY(weft_comm_size, size, comm->size)
COMM_QUERY(weft_comm_local_rank, rank, comm->local_rank)
COMM_QUERY(weft_comm_local_size, size, comm->local_size)

WEFT_API weft_result_t weft_comm_world_ranks(weft_comm_t comm, int *ranks)
{
    weft_result_t rc = weft__comm_check(comm, "weft_comm_world_ranks");

    if (rc != WEFT_SUCCESS)
        return rc;
    if (!ranks)
        return weft__error(WEFT_ERR_INVALID_ARG, "weft_comm_world_ranks: ranks is NULL");
    memcpy(ranks, comm->world_ranks, (size_t)comm->size * sizeof(int));
    return WEFT_SUCCESS;
}
