/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * progress.h: driving transports and waiting.
 *
 * Waiting spins on progress for a short while (cheap when the answer is
 * microseconds away), then sleeps in poll() on the transports' wait
 * descriptors, so a rank blocked on a slow peer uses no CPU (8 ranks on 2
 * cores must make progress). Every wait has a deadline.
 */
#ifndef WEFT_CORE_PROGRESS_H
#define WEFT_CORE_PROGRESS_H

#include <stdint.h>

#include "weft.h"
#include "core/progress/instance.h"
#include "core/progress/mctx.h"
#include "core/progress/request.h"

/* One non-blocking pass over every transport and the pass hooks, plus
 * (every 32 passes) the background hooks and detached requests. */
void weft__progress(weft__instance_t *inst);
/* Registers fn(inst, arg) to run on every pass of the progress engine
 * (the collective engine advances its collectives there), or with its
 * rare background look (abort notices). At weft_init, before the
 * instance is shared; WEFT_ERR_INTERNAL past WEFT__PROGRESS_HOOKS_MAX. */
weft_result_t weft__progress_hook_add(weft__instance_t *inst, weft__progress_hook_fn fn,
                                      void *arg);
weft_result_t weft__progress_background_add(weft__instance_t *inst, weft__progress_hook_fn fn,
                                            void *arg);
/* Reads WEFT_SPIN_US (at weft_init); a malformed value is
 * WEFT_ERR_INVALID_ARG naming the variable. Until then, and where unset,
 * waits choose their spin by how crowded the node's cores are. */
weft_result_t weft__progress_settings_parse(void);
/* Microseconds a wait spins before it sleeps (WEFT_SPIN_US), -1 where
 * unset. */
long long weft__progress_spin_us(void);
/* Sleeps until a transport has something to do, this rank's doorbell
 * rings (doorbell.h) or timeout_ms passes; at most 1 ms while more than
 * `rung` operations nothing rings for are in flight (instance.h). */
void weft__progress_sleep(weft__instance_t *inst, int timeout_ms, int rung);
/* Monotonic milliseconds. */
int64_t weft__now_ms(void);
/* Waits for req until it completes or timeout_ms passes (WEFT_ERR_TIMEOUT,
 * request left pending). */
weft_result_t weft__request_wait(struct weft_request *req, int timeout_ms);
/* The same against *deadline_ms, a monotonic time that 0 leaves to be set
 * to now + timeout_ms once the wait outlasts its spin: the rounds of one
 * collective share it, and a round that ends while spinning reads no
 * clock. */
weft_result_t weft__request_wait_until(struct weft_request *req, int timeout_ms,
                                       int64_t *deadline_ms);

/* Something a wait waits for that no transport completes (a shared
 * collective's counters in node-shared memory). */
typedef struct weft__wait_target {
    int (*poll)(void *arg);                /* one look: nonzero when done */
    void (*sleeping)(void *arg, int on);   /* before a sleep (1) and after (0) */
    void *arg;
    weft__mctx_t *ctx;                     /* whose abort ends the wait */
} weft__wait_target_t;

/* Polls t, progressing everything else meanwhile, spinning then sleeping
 * as weft__request_wait_until does, until t->poll says done, the
 * deadline passes (WEFT_ERR_TIMEOUT) or t->ctx is aborted
 * (WEFT_ERR_ABORTED). t must ring this rank's doorbell when what it
 * waits for happens while it is marked asleep. */
weft_result_t weft__progress_wait_for(weft__instance_t *inst, const weft__wait_target_t *t,
                                      int timeout_ms, int64_t *deadline_ms);

#endif /* WEFT_CORE_PROGRESS_H */
