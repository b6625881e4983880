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

#include "core/instance.h"
#include "core/request.h"

/* One non-blocking pass over every transport, plus detached requests. */
void weft__progress(weft__instance_t *inst);
/* Sleeps until a transport has something to do or timeout_ms passes. */
void weft__progress_sleep(weft__instance_t *inst, int timeout_ms);
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

#endif /* WEFT_CORE_PROGRESS_H */
