/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * shared.h: the node-shared collectives as the layers above see them.
 *
 * coll/shared is a second engine beside the rounds of coll/coll.c: for a
 * communicator that lives on one node, its collectives move their data
 * through a segment of shared memory that every member maps
 * (segment.h, which only coll/shared includes). The small ones
 * (small.c) publish a payload of up to WEFT__SHARED_SLOT bytes in one
 * step; the pipelined ones (pipelined.c) move any size in steps of a
 * chunk slot. Each sets c->step and c->waits on a collective, as the
 * algorithms of coll/algo do.
 */
#ifndef WEFT_CORE_SHARED_H
#define WEFT_CORE_SHARED_H

#include <stddef.h>

#include "weft.h"
#include "core/coll/coll.h"

/* Payload bytes one rank may publish per generation (the whole vector of
 * an allreduce or a reduce-scatter, the whole send buffer of an
 * all-to-all): large enough for the latency-bound sizes, small enough
 * that a segment of 64 ranks is 1 MiB. */
#define WEFT__SHARED_SLOT 8192
/* A chunk slot is WEFT__SHARED_CHUNK bytes, or less where the ranks are
 * so many that the slots of one parity would pass WEFT__SHARED_PIPE_ROOM
 * (a segment of 2 x 8 MiB per communicator that runs pipelined
 * collectives, whatever its size). Large, because a step's data crosses
 * between cores faster once it left the writer's private cache: two
 * ranks trading 1 MiB in lockstep steps of 64 KiB took 185 us on the
 * development machine (1 MiB of L2 per core), in steps of 1 MiB 45 us. */
#define WEFT__SHARED_CHUNK (1024 * 1024)
#define WEFT__SHARED_PIPE_ROOM (8 * 1024 * 1024)
/* The most ranks a pipelined collective runs on: a chunk slot of 64 KiB,
 * so that each rank's part of a step is at least 512 bytes. */
#define WEFT__SHARED_PIPE_RANKS 128

/* Bytes of a chunk slot on a communicator of n ranks (the same on all). */
static inline size_t weft__shared_chunk_bytes(int n)
{
    size_t b = WEFT__SHARED_PIPE_ROOM / (size_t)n;

    b = b < WEFT__SHARED_CHUNK ? b : WEFT__SHARED_CHUNK;
    return b - b % 64;
}

/* Whether comm's collectives may use a shared segment: two ranks or more,
 * all on this node, every pair carried by a node-local transport (a user
 * who forced a network transport on one node gets no shared memory). The
 * same answer on every rank. */
int weft__shared_usable(const struct weft_comm *comm);

/* small.c: payloads up to WEFT__SHARED_SLOT, on communicators that
 * weft__shared_usable accepts. */
void weft__barrier_shared(weft__coll_t *c);
void weft__bcast_shared(weft__coll_t *c);
void weft__reduce_shared(weft__coll_t *c);
void weft__allreduce_shared(weft__coll_t *c);
void weft__reduce_scatter_shared(weft__coll_t *c);
void weft__allgather_shared(weft__coll_t *c);             /* even counts */
void weft__alltoall_shared(weft__coll_t *c);              /* even counts */
/* pipelined.c: the same segment, any size, in steps. */
void weft__allreduce_shared_pipelined(weft__coll_t *c);
void weft__reduce_scatter_shared_pipelined(weft__coll_t *c);
void weft__allgather_shared_pipelined(weft__coll_t *c);   /* even counts */
void weft__alltoall_shared_pipelined(weft__coll_t *c);    /* even counts */
void weft__bcast_shared_pipelined(weft__coll_t *c);
/* A shared collective that will not run (its WEFT_CHECK comparison
 * failed) hands its generation back, if no later one was given out. Does
 * nothing to a collective that is not a shared one. */
void weft__coll_shared_withdraw(weft__coll_t *c);
/* For a collective whose algorithm is chosen after it started (the
 * tuner's calibration, tune/adapt.c): reserve takes its generation now,
 * in call order, so that a shared algorithm set on it later runs in that
 * generation on every rank; unreserve gives it up (every rank does, when
 * the choice is not a shared algorithm), so that the next ones can run.
 * c->comm must be set. */
void weft__coll_shared_reserve(weft__coll_t *c);
void weft__coll_shared_unreserve(weft__coll_t *c);

/* settings.c. Reads WEFT_STREAM_THRESHOLD (at weft_init); a malformed
 * value is WEFT_ERR_INVALID_ARG naming the variable. */
weft_result_t weft__shared_settings_parse(void);
/* Bytes of output, over the ranks of a node together, above which the
 * pipelined collectives write their output with streaming stores
 * (WEFT_STREAM_THRESHOLD; unset: llc_size, the node's last-level cache,
 * or 32 MiB when that is unknown). */
unsigned long long weft__shared_stream_threshold(unsigned long long llc_size);
/* The same without WEFT_STREAM_THRESHOLD: what the tuner assumes, so that
 * ranks that set the variable differently still choose alike. */
unsigned long long weft__shared_stream_default(unsigned long long llc_size);

#endif /* WEFT_CORE_SHARED_H */
