/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * instance.h: the state one weft_init creates, shared by every
 * communicator derived from its world communicator.
 *
 * The progress layer owns this struct; the layers below it are handed
 * only their part (the wireup, the plugins). Each layer above keeps its
 * own state behind a pointer to a type of its own, declared here and
 * defined in that layer, and plugs into the progress engine through hooks
 * registered at weft_init: the progress layer never names the code above
 * it.
 */
#ifndef WEFT_CORE_INSTANCE_H
#define WEFT_CORE_INSTANCE_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#include "weft.h"
#include "core/transport/wireup.h"

struct weft_request;
struct weft__instance;

/* Work an upper layer does on the progress engine's passes: the
 * collective engine advances the collectives in flight, abort notices are
 * polled. arg is what the layer registered. */
typedef void (*weft__progress_hook_fn)(struct weft__instance *inst, void *arg);

typedef struct weft__progress_hook {
    weft__progress_hook_fn fn;
    void *arg;
} weft__progress_hook_t;

#define WEFT__PROGRESS_HOOKS_MAX 4

typedef struct weft__instance {
    /* The job's ranks and the transport of each (transport/wireup.h). */
    weft__wireup_t wire;
    int timeout_ms;                  /* the deadline of every wait (WEFT_TIMEOUT) */
    char name[64];

    /* Guards the fields below: communicators used from different threads
     * share them. */
    pthread_mutex_t lock;
    int refs;                        /* communicators and memory registrations alive */
    /* Called by the last weft__instance_unref (set by weft_init). */
    void (*finalize)(struct weft__instance *inst);
    struct weft_request *detached;   /* freed by the user, still in flight */

    /* Hooks of the upper layers, registered at weft_init before the
     * instance is shared, and read without a lock after: run on every
     * pass of the progress engine, and on its background look for rare
     * events (every 32 passes, and after each sleep). */
    weft__progress_hook_t pass_hooks[WEFT__PROGRESS_HOOKS_MAX];
    weft__progress_hook_t background_hooks[WEFT__PROGRESS_HOOKS_MAX];
    int npass_hooks, nbackground_hooks;

    int oversubscribed;              /* 0 unknown, 1 competes for its cores, -1 not */
    /* Doorbells (doorbell.c): this rank's FIFO, -1 until opened, and the
     * peers' opened for ringing (by world rank, under lock). */
    int bell_fd;
    int *bell_peers;
    /* Operations in flight that nothing rings awake for (atomic): the
     * nonblocking shared collectives. While there are any, a sleep lasts
     * at most 1 ms. */
    int unrung_inflight;
    /* Steps of multi-step operations done (atomic): a wait whose spin
     * budget ran out starts it over when this moved, so that an
     * operation that advances a step at a time (a pipelined shared
     * collective) is not put to sleep between its steps. */
    unsigned moves;

    /* The state of the layers above, each theirs to create and free. */
    uint32_t next_context;           /* comm: next free matching context id (under lock) */
    struct weft_comm *comms;         /* comm: every live communicator (under lock) */
    struct weft__abort_notices *notices; /* comm: abort notices (abort_notice.c) */
    struct weft__coll_engine *coll;  /* coll: collectives in flight (coll.c) */
    struct weft__tune_job *tune;     /* tune: the job's parameters (tune.h) */
} weft__instance_t;

/* Bytes of one of this node's last-level caches, 0 if unknown. */
static inline unsigned long long weft__instance_llc_bytes(const weft__instance_t *inst)
{
    return inst->wire.topo ? (unsigned long long)inst->wire.topo->llc_size : 0;
}

/* A new instance: zeroed, its locks initialised, no doorbell; freed by
 * weft__instance_free. */
weft_result_t weft__instance_new(weft__instance_t **out);
void weft__instance_free(weft__instance_t *inst);
/* Drops one of the references communicators and registrations hold
 * (inst->refs, taken under inst->lock when each is created); the last
 * calls inst->finalize. */
void weft__instance_unref(weft__instance_t *inst);

#endif /* WEFT_CORE_INSTANCE_H */
