/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * abort_notice.c: abort notices for communicators other than the world
 * (abort_notice.h).
 */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "core/base/error.h"
#include "core/base/log.h"
#include "core/comm/abort_notice.h"
#include "core/comm/comm.h"
#include "core/progress/progress.h"

/* No communicator gets this context: they are allocated upwards from 0 in
 * steps of two. The notice's tag carries nothing else. */
#define NOTICE_CONTEXT 0xfffffffeu
#define NOTICE_TAG weft__tag(NOTICE_CONTEXT, 0)

typedef struct notice_send {
    struct notice_send *next;
    weft__plugin_t *plugin;
    void *treq;
    uint32_t context;            /* the payload: the aborted communicator */
} notice_send_t;

typedef struct weft__abort_notices {
    pthread_mutex_t lock;
    int nplugins;
    void *rx[WEFT__PLUGIN_MAX];  /* one posted receive per transport */
    uint32_t rx_context[WEFT__PLUGIN_MAX];
    notice_send_t *sends;
} notice_state_t;

static void abort_poll(weft__instance_t *inst, void *arg);

static weft_result_t post_receive(weft__instance_t *inst, notice_state_t *st, int i)
{
    weft__plugin_t *pl = &inst->wire.plugins.plugins[i];
    weft_result_t rc;

    pthread_mutex_lock(&pl->lock);
    rc = pl->ops->irecv(pl->ctx, WEFT_TRANSPORT_ANY_PEER, &st->rx_context[i],
                        sizeof(st->rx_context[i]), NOTICE_TAG, 0, NULL, &st->rx[i]);
    pthread_mutex_unlock(&pl->lock);
    if (rc != WEFT_SUCCESS) {
        st->rx[i] = NULL;
        WEFT_WARN(TRANSPORT, "%s: cannot post the receive of abort notices: %s", pl->name,
                  weft__get_error());
    }
    return rc;
}

weft_result_t weft__abort_listen(weft__instance_t *inst)
{
    notice_state_t *st = calloc(1, sizeof(*st));

    if (!st)
        return weft__error(WEFT_ERR_NO_MEMORY, "cannot allocate the abort notice state");
    pthread_mutex_init(&st->lock, NULL);
    st->nplugins = inst->wire.plugins.n;
    /* A transport that reaches no peer (cuda-ipc where it only offers
     * device memory services) carries no notice. */
    for (int i = 0; i < st->nplugins; i++)
        if (inst->wire.plugins.plugins[i].used)
            post_receive(inst, st, i);
    inst->notices = st;
    /* A notice is a rare event: looked for with the progress engine's
     * background work, not on every pass. */
    return weft__progress_background_add(inst, abort_poll, st);
}

void weft__abort_notify(weft_comm_t comm)
{
    weft__instance_t *inst = comm->inst;
    notice_state_t *st = inst->notices;

    if (!st)
        return;
    pthread_mutex_lock(&st->lock);
    for (int r = 0; r < comm->size; r++) {
        int w = comm->world_ranks[r];
        weft__plugin_t *pl = inst->wire.peers[w].plugin;
        notice_send_t *s;
        weft_result_t rc;

        if (r == comm->rank || !(s = calloc(1, sizeof(*s))))
            continue;
        s->plugin = pl;
        s->context = comm->ctx.context_id;
        pthread_mutex_lock(&pl->lock);
        rc = pl->ops->isend(pl->ctx, w, &s->context, sizeof(s->context), NOTICE_TAG, NULL,
                            &s->treq);
        pthread_mutex_unlock(&pl->lock);
        if (rc != WEFT_SUCCESS) {
            WEFT_WARN(TRANSPORT, "cannot tell world rank %d of an abort: %s", w,
                      weft__get_error());
            free(s);
            continue;
        }
        s->next = st->sends;
        st->sends = s;
    }
    pthread_mutex_unlock(&st->lock);
}

/* Marks the communicator of this context, if it is still alive here, for
 * its own thread to abort (mctx.h, abort_pending): this may be any
 * thread's progress, which must not touch that communicator's requests.
 * Under inst->lock, so that the communicator cannot be freed meanwhile
 * (weft__comm_free takes it out of inst->comms first). */
static void mark_aborted(weft__instance_t *inst, uint32_t context)
{
    pthread_mutex_lock(&inst->lock);
    for (weft_comm_t c = inst->comms; c; c = c->next_comm)
        if (c->ctx.context_id == context) {
            WEFT_INFO(TRANSPORT, "communicator %u was aborted by another member", context);
            weft__mctx_mark_aborted(&c->ctx);
            break;
        }
    pthread_mutex_unlock(&inst->lock);
}

/* Completes notices sent and acts on those received (a background hook
 * of the progress engine). Never blocks. */
static void abort_poll(weft__instance_t *inst, void *arg)
{
    notice_state_t *st = arg;
    uint32_t aborted[WEFT__PLUGIN_MAX];
    int naborted = 0;

    /* Another thread (or an enclosing call) is at it: nothing is lost. */
    if (pthread_mutex_trylock(&st->lock))
        return;
    for (notice_send_t **link = &st->sends; *link;) {
        notice_send_t *s = *link;
        weft_transport_completion_t c;
        int done = 0;

        pthread_mutex_lock(&s->plugin->lock);
        s->plugin->ops->test(s->plugin->ctx, s->treq, &done, &c);
        pthread_mutex_unlock(&s->plugin->lock);
        if (done) {
            *link = s->next;
            free(s);
        } else {
            link = &s->next;
        }
    }
    for (int i = 0; i < st->nplugins; i++) {
        weft__plugin_t *pl = &inst->wire.plugins.plugins[i];
        weft_transport_completion_t c;
        int done = 0;

        if (!st->rx[i])
            continue;
        pthread_mutex_lock(&pl->lock);
        pl->ops->test(pl->ctx, st->rx[i], &done, &c);
        pthread_mutex_unlock(&pl->lock);
        if (!done)
            continue;
        /* A lost peer also completes receives from any peer: post again. */
        if (c.status == WEFT_SUCCESS && c.len == sizeof(uint32_t))
            aborted[naborted++] = st->rx_context[i];
        post_receive(inst, st, i);
    }
    pthread_mutex_unlock(&st->lock);
    for (int i = 0; i < naborted; i++)
        mark_aborted(inst, aborted[i]);
}

void weft__abort_finalize(weft__instance_t *inst)
{
    notice_state_t *st = inst->notices;

    if (!st)
        return;
    /* The transports drop what is still pending when they finalise. */
    while (st->sends) {
        notice_send_t *s = st->sends;

        st->sends = s->next;
        free(s);
    }
    pthread_mutex_destroy(&st->lock);
    free(st);
    inst->notices = NULL;
}
