/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * wireup.h: the job's ranks and the transport that reaches each of them.
 *
 * At weft_init every rank publishes an address record (who it is, where it
 * runs, and each loaded transport's address) through the bootstrap; each
 * rank then reads every record, drops the transports that need a
 * node-local peer where there is none, and asks each transport both ranks
 * loaded how closely it reaches the peer (its reach()): the closest wins,
 * ties broken by name, so that both ends of a pair choose alike.
 */
#ifndef WEFT_CORE_WIREUP_H
#define WEFT_CORE_WIREUP_H

#include <stddef.h>

#include "weft.h"
#include "weft/transport.h"
#include "core/boot/bootstrap.h"
#include "core/transport/plugin.h"
#include "topo/topo.h"

/* What this rank knows of another rank of the job. */
typedef struct weft__peer {
    weft__plugin_t *plugin;          /* the transport that reaches it */
    int local_rank;                  /* among the ranks of its node */
    char host_id[WEFT__HOSTID_MAX];
    weft__topo_summary_t topo;       /* where it runs: NUMA node, GPU, NIC */
    unsigned pid;                    /* its process, on its node */
    /* It loaded the transport whose device services this rank uses
     * (plugins.device): its record has an address of that name. */
    int device_services;
} weft__peer_t;

typedef struct weft__wireup {
    int rank, size;                  /* this rank in the job */
    int local_rank, local_size;      /* among the ranks of its node, in world order */
    weft__topo_t *topo;              /* this node, as hwloc or WEFT_TOPO_FILE shows it */
    weft__plugin_set_t plugins;
    /* Given to every plugin's init; must outlive them. job_id is filled in
     * once the rendezvous gave it, before the first connect(). */
    weft_transport_core_t core;
    char job_id[WEFT__JOB_ID_MAX];
    weft__bootstrap_t *boot;
    weft__peer_t *peers;             /* size entries, indexed by world rank */
    int ntransports_used;            /* distinct plugins among peers */
    /* Other ranks of the job compete for this rank's cores, whichever
     * node each calls itself (wireup_topo.c): waiters yield. */
    int cores_shared;
} weft__wireup_t;

/* Sets up wire for rank of size before the plugins load: the services the
 * core gives them (wire->core), the out-of-band exchange through the
 * bootstrap's store among them. master_addr: the rendezvous host, or
 * NULL. */
void weft__wireup_init(weft__wireup_t *wire, int rank, int size, const char *master_addr);
/* This rank's address record for the bootstrap (malloc'd into *out):
 * host_id, the topology summary and every loaded plugin's address. */
weft_result_t weft__wireup_record(weft__wireup_t *w, const char *host_id, unsigned char **out,
                                  size_t *out_len);
/* After the bootstrap (w->boot holds every rank's record): fills
 * w->peers, drops transports no pair needs, connects every peer through
 * the transport that reaches it best, and sets local_rank and local_size. */
weft_result_t weft__wireup_connect(weft__wireup_t *w);
/* wireup_topo.c. After the rendezvous (peers[].host_id filled): finalises
 * the transports that need another rank on this node when there is none,
 * unless WEFT_TRANSPORTS forced them. */
void weft__wireup_drop_unneeded(weft__wireup_t *w);
/* Sets w->cores_shared from the ranks' summaries (weft__topo_cores_shared). */
weft_result_t weft__wireup_cores(weft__wireup_t *w);
/* After the transports are chosen: every rank publishes which transport
 * carries each of its pairs; with WEFT_DEBUG=INFO and TOPO or TRANSPORT
 * on, rank 0 logs the topology, each rank's place in it and the rank x
 * rank transport matrix, reading the other ranks' rows from the store
 * within timeout_ms. */
void weft__wireup_report(weft__wireup_t *w, int timeout_ms);
/* Frees what the wireup holds: the peers, the plugins, the bootstrap and
 * the topology, in the order that lets each finish with the others. */
void weft__wireup_fini(weft__wireup_t *w);

#endif /* WEFT_CORE_WIREUP_H */
