/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * mp_coll_timeout.c: a blocking collective that a rank is late for gives
 * up after WEFT_TIMEOUT with WEFT_ERR_TIMEOUT and a message naming the
 * collective and the peer it waited for, not before; the communicator
 * stays usable once the ranks are in step again. Run at 3 ranks with
 * WEFT_TIMEOUT=1 (seconds) and WEFT_ALGO=allreduce:rd (see coll-timeout-3.mp).
 *
 * Recursive doubling at 3 ranks: rank 0 hands its input to rank 1 and
 * waits for the result; rank 1 exchanges with rank 2. Rank 2 comes late:
 * ranks 0 and 1 time out, and rank 2 then finds rank 1's message waiting
 * and completes with the full sum.
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include "tests/mp/mptest.h"

static double now_ms(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

int main(void)
{
    const char *env = getenv("WEFT_TIMEOUT");
    int timeout = env ? atoi(env) * 1000 : 0; /* ms */
    int64_t x, sum = 0;
    weft_comm_t w;
    weft_result_t rc;
    double t0;
    int me, n;

    if (timeout <= 0 || timeout > 5000)
        mp_skip("run with WEFT_TIMEOUT=1 (seconds)");
    mp_init_world(&w, &me, &n);
    if (n != 3)
        mp_skip("needs 3 ranks");
    x = me + 1;
    if (me == 2)
        usleep(3 * (useconds_t)timeout * 1000 / 2); /* half a timeout past the others' */
    t0 = now_ms();
    rc = weft_allreduce(&x, &sum, 1, WEFT_INT64, WEFT_SUM, w);
    if (me < 2) {
        char peer[32];

        snprintf(peer, sizeof(peer), "rank %d", me + 1);
        MP_ASSERT(rc == WEFT_ERR_TIMEOUT, "late peer: got %s, want WEFT_ERR_TIMEOUT (%s)",
                  mp_rc_name(rc), weft_last_error());
        MP_ASSERT(now_ms() - t0 >= 0.9 * timeout,
                  "gave up after %.0f ms, before WEFT_TIMEOUT (%d ms)", now_ms() - t0, timeout);
        MP_ASSERT(mp_contains(weft_last_error(), "weft_allreduce") &&
                  mp_contains(weft_last_error(), peer) &&
                  mp_contains(weft_last_error(), "WEFT_TIMEOUT"),
                  "the message '%s' should name weft_allreduce, %s and WEFT_TIMEOUT",
                  weft_last_error(), peer);
    } else {
        MP_CHECK(rc);
        MP_ASSERT(sum == 6, "the late rank's allreduce gave %lld, want 6", (long long)sum);
    }
    /* In step again (the others wait half a timeout here for the late
     * rank): the communicator works. */
    MP_CHECK(weft_barrier(w));
    sum = 0;
    MP_CHECK(weft_allreduce(&x, &sum, 1, WEFT_INT64, WEFT_SUM, w));
    MP_ASSERT(sum == 6, "allreduce after the timeout gave %lld, want 6", (long long)sum);
    if (me == 0)
        printf("blocking collective timeout: passed\n");
    MP_CHECK(weft_comm_destroy(w));
    return 0;
}
