/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * comm.c: communicator objects, their queries, destroy and abort.
 */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "core/base/error.h"
#include "core/base/log.h"
#include "core/comm/abort_notice.h"
#include "core/comm/comm.h"
#include "core/progress/progress.h"
#include "core/progress/request.h"

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
    const weft__wireup_t *wire = &inst->wire;
    weft_comm_t comm = calloc(1, sizeof(*comm));

    if (!comm)
        goto err_nomem;
    comm->world_ranks = malloc((size_t)n * sizeof(int));
    comm->comm_rank_of = malloc((size_t)wire->size * sizeof(int));
    if (!comm->world_ranks || !comm->comm_rank_of)
        goto err_free;
    memcpy(comm->world_ranks, world_ranks, (size_t)n * sizeof(int));
    for (int w = 0; w < wire->size; w++)
        comm->comm_rank_of[w] = -1;
    comm->inst = inst;
    comm->size = n;
    comm->rank = -1;
    for (int r = 0; r < n; r++) {
        int w = world_ranks[r];

        comm->comm_rank_of[w] = r;
        if (w == wire->rank)
            comm->rank = r;
        /* Members on this rank's node, in comm rank order. */
        if (!strcmp(wire->peers[w].host_id, wire->peers[wire->rank].host_id)) {
            if (w == wire->rank)
                comm->local_rank = comm->local_size;
            comm->local_size++;
        }
    }
    weft__mctx_init(&comm->ctx, inst, context_id, n, comm->world_ranks, comm->comm_rank_of);
    weft__mctx_init(&comm->internal, inst, context_id + 1, n, comm->world_ranks,
                    comm->comm_rank_of);
    comm->ctx.sibling = &comm->internal;
    comm->internal.sibling = &comm->ctx;
    comm->magic = WEFT__COMM_MAGIC;
    if (weft__comm_nodes_build(comm) != WEFT_SUCCESS)
        goto err_free;
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

weft_result_t weft__comm_add_destructor(weft_comm_t comm, weft__comm_dtor_fn fn, void *arg)
{
    if (comm->ndtors == WEFT__COMM_DTORS_MAX)
        return weft__error(WEFT_ERR_INTERNAL, "more than %d destructors on a communicator",
                           WEFT__COMM_DTORS_MAX);
    comm->dtors[comm->ndtors].fn = fn;
    comm->dtors[comm->ndtors].arg = arg;
    comm->ndtors++;
    return WEFT_SUCCESS;
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

/* Fails every request still in flight on ctx with rc and waits (briefly)
 * for the transports to let go of the buffers. */
static void fail_active(weft__mctx_t *ctx, weft_result_t rc)
{
    int64_t deadline = weft__now_ms() + WEFT_CANCEL_WAIT_MS;
    int busy;

    if (!ctx->active)
        return;
    for (struct weft_request *req = ctx->active; req; req = req->next_active)
        cancel_or_poll(req, rc, NULL);
    do {
        busy = 0;
        weft__progress(ctx->inst);
        for (struct weft_request *req = ctx->active; req; req = req->next_active) {
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

    /* First out of inst->comms: an abort notice polled meanwhile marks
     * the communicator's contexts under inst->lock. */
    pthread_mutex_lock(&inst->lock);
    if (comm->prev_comm)
        comm->prev_comm->next_comm = comm->next_comm;
    else
        inst->comms = comm->next_comm;
    if (comm->next_comm)
        comm->next_comm->prev_comm = comm->prev_comm;
    pthread_mutex_unlock(&inst->lock);
    /* Requests the user still holds become invalid with the communicator;
     * those not complete were cancelled by the caller. Collectives free
     * their rounds with them; what is left on the internal context
     * belongs to nobody else. */
    while (comm->ctx.active)
        weft__request_free(comm->ctx.active);
    while (comm->internal.active)
        weft__request_free(comm->internal.active);
    comm->magic = 0;
    while (comm->ndtors > 0) {
        comm->ndtors--;
        comm->dtors[comm->ndtors].fn(comm, comm->dtors[comm->ndtors].arg);
    }
    weft__comm_nodes_free(&comm->nodes);
    free(comm->world_ranks);
    free(comm->comm_rank_of);
    free(comm);
    weft__instance_unref(inst);
}

WEFT_API weft_result_t weft_comm_destroy(weft_comm_t comm)
{
    weft_result_t rc = weft__comm_check(comm, "weft_comm_destroy");

    if (rc != WEFT_SUCCESS)
        return rc;
    /* What a stream still holds runs first (or gives up at the timeout):
     * its thread must be gone before the lists are walked. */
    if (weft__comm_quiesce(comm, "weft_comm_destroy") != WEFT_SUCCESS)
        WEFT_WARN(INIT, "weft_comm_destroy: %s; destroying the communicator anyway",
                  weft__get_error());
    fail_active(&comm->ctx, WEFT_ERR_ABORTED);
    fail_active(&comm->internal, WEFT_ERR_ABORTED);
    weft__comm_free(comm);
    return WEFT_SUCCESS;
}

WEFT_API weft_result_t weft_comm_abort(weft_comm_t comm)
{
    weft_result_t rc = weft__comm_check(comm, "weft_comm_abort");

    if (rc != WEFT_SUCCESS)
        return rc;
    WEFT_INFO(INIT, "communicator %u aborted by the application", comm->ctx.context_id);
    weft__mctx_abort(&comm->ctx);
    /* On the world communicator the job is over for this rank: peers learn
     * of it when their connections to it drop. Elsewhere the members get a
     * notice and the connections stay. */
    if (comm->is_world) {
        weft__instance_t *inst = comm->inst;

        for (int w = 0; w < inst->wire.size; w++) {
            weft__plugin_t *pl = inst->wire.peers[w].plugin;

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
