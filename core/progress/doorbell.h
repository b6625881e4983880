/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * doorbell.h: waking a rank of this node that sleeps in the progress
 * engine's poll.
 *
 * A rank's doorbell is a FIFO in /dev/shm named after the job, its world
 * rank and its pid, which it opens for reading (and writing, so that the
 * FIFO never reports a hang-up) at weft_init when other ranks share its
 * node; weft__progress_sleep polls it with the transports' descriptors.
 * Ringing writes one byte.
 */
#ifndef WEFT_CORE_DOORBELL_H
#define WEFT_CORE_DOORBELL_H

#include "weft.h"

struct weft__instance;

/* Creates and opens this rank's doorbell, once. */
weft_result_t weft__doorbell_open(struct weft__instance *inst);
/* Wakes world rank `rank` of this node; a ring that cannot be delivered
 * is dropped (the sleeper looks again within one bounded sleep). */
void weft__doorbell_ring(struct weft__instance *inst, int rank);
/* Empties this rank's doorbell after a wake-up. */
void weft__doorbell_drain(struct weft__instance *inst);
/* Closes the doorbells and removes this rank's (instance released). */
void weft__doorbell_close(struct weft__instance *inst);

#endif /* WEFT_CORE_DOORBELL_H */
