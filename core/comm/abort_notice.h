/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * abort_notice.h: telling the other members of a communicator that this
 * rank aborted it, so that their operations on it fail instead of hanging.
 *
 * The world communicator's abort drops every connection (the job is over
 * for this rank). A smaller communicator's abort must leave the others
 * working, so the aborting rank sends each member a notice naming the
 * communicator's context, on a context no communicator uses; every rank
 * keeps one receive for notices posted on each transport and polls it from
 * the progress engine (a background hook).
 */
#ifndef WEFT_CORE_ABORT_NOTICE_H
#define WEFT_CORE_ABORT_NOTICE_H

#include "core/progress/instance.h"

struct weft_comm;

/* Posts the notice receives (after the transports are connected) and
 * registers their polling with the progress engine's background work. */
weft_result_t weft__abort_listen(weft__instance_t *inst);
/* Sends comm's notice to its other members; completes in the background. */
void weft__abort_notify(struct weft_comm *comm);
/* Frees the notice state before the transports finalise. */
void weft__abort_finalize(weft__instance_t *inst);

#endif /* WEFT_CORE_ABORT_NOTICE_H */
