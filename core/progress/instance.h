/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * instance.h: the library state one weft_init creates, shared by every
 * communicator derived from its world communicator.
 */
#ifndef WEFT_CORE_INSTANCE_H
#define WEFT_CORE_INSTANCE_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#include "weft.h"
#include "weft/transport.h"
#include "core/boot/bootstrap.h"
#include "core/transport/plugin.h"
#include "core/boot/store.h"
#include "core/tune/tune.h"
#include "topo/topo.h"

struct weft_request;

/* What this rank knows of another rank of the job. */
typedef struct weft__peer {
    weft__plugin_t *plugin;          /* the transport that reaches it */
    int local_rank;                  /* among the ranks of its node */
    char host_id[WEFT__HOSTID_MAX];
    weft__topo_summary_t topo;       /* where it runs: NUMA node, GPU, NIC */
    unsigned pid;                    /* its process, on its node */
} weft__peer_t;

typedef struct weft__instance {
    int rank, size;
    int local_rank, local_size;
    int timeout_ms;
    char name[64];

    weft__bootstrap_t *boot;
    weft__topo_t *topo;              /* this node, as hwloc or WEFT_TOPO_FILE shows it */
    weft__plugin_set_t plugins;
    /* Given to every plugin's init; must outlive them. job_id is filled in
     * once the rendezvous gave it, before the first connect(). */
    weft_transport_core_t core;
    char job_id[WEFT__JOB_ID_MAX];
    weft__peer_t *peers;             /* size entries, indexed by world rank */
    int ntransports_used;            /* distinct plugins among peers */

    /* Guards the fields below: communicators used from different threads
     * share them. */
    pthread_mutex_t lock;
    int refs;                        /* communicators alive */
    uint32_t next_context;           /* next free matching context id */
    struct weft_request *detached;   /* freed by the user, still in flight */

    /* Collectives in flight, advanced by every wait (progress.c): a rank
     * waiting on one collective must keep the others it started moving,
     * or two ranks waiting on different ones would wait for each other.
     * coll_lock guards the list and is held while it is walked. */
    pthread_mutex_t coll_lock;
    struct weft__coll *colls;

    /* The tuner's parameters, identical on every rank (weft__tune_agree),
     * set once at init before any communicator runs a collective. */
    weft__tune_params_t tune;
    weft__tune_source_t tune_source;
    double tune_probe_ms;            /* the probe's time at init, 0 if none ran */

    struct weft_comm *comms;         /* every live communicator (under lock) */
    struct notice_state *notices;    /* abort notices (abort_notice.c) */
    int oversubscribed;              /* 0 unknown, 1 more local ranks than cores, -1 not */
    /* Doorbells (doorbell.c): this rank's FIFO, -1 until opened, and the
     * peers' opened for ringing (by world rank, under lock). */
    int bell_fd;
    int *bell_peers;
    /* Shared collectives in flight (atomic): a nonblocking one is not
     * rung awake, so waits sleep at most 1 ms while there are any. */
    int shared_inflight;
    /* Steps of pipelined shared collectives done (atomic): a wait whose
     * spin budget ran out starts it over when this moved, so that a
     * collective that advances a step at a time is not put to sleep
     * between its steps. */
    unsigned shared_moves;
} weft__instance_t;

/* Element size of dt, 0 for an invalid type. */
extern const size_t weft__dtype_sizes[WEFT_DTYPE_COUNT];

static inline size_t weft__dtype_bytes(weft_dtype_t dt)
{
    return (unsigned)dt < WEFT_DTYPE_COUNT ? weft__dtype_sizes[dt] : 0;
}

/* Bytes of one of this node's last-level caches, 0 if unknown. */
static inline unsigned long long weft__instance_llc_bytes(const weft__instance_t *inst)
{
    return inst->topo ? (unsigned long long)inst->topo->llc_size : 0;
}

void weft__instance_release(weft__instance_t *inst);

/* transport/wireup_topo.c. After the rendezvous (peers[].host_id filled):
 * finalises the transports that need another rank on this node when
 * there is none, unless WEFT_TRANSPORTS forced them. */
void weft__instance_drop_unneeded(weft__instance_t *inst);
/* After the transports are chosen: every rank publishes which transport
 * carries each of its pairs; with WEFT_DEBUG=INFO and TOPO or TRANSPORT
 * on, rank 0 logs the topology, each rank's place in it and the rank x
 * rank transport matrix. */
void weft__instance_topo_report(weft__instance_t *inst);

#endif /* WEFT_CORE_INSTANCE_H */
