/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * mp_abort_threads.c: an abort notice picked up by another thread's
 * progress. Rank 0 aborts a duplicate of the world, X, while on every
 * other rank the main thread, X's owner, is blocked in a receive on X and
 * a second thread keeps making progress on its own communicator Y, so
 * that the notice is most often found by Y's thread. X's requests may
 * only be touched by X's thread: built with --enable-sanitizers=thread,
 * the other thread failing them is reported as a data race. The blocked
 * receive must still fail with WEFT_ERR_ABORTED promptly.
 */
#include "config.h"

#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "tests/mp/mptest.h"

#define ITERATIONS 8
/* Far below the WEFT_TIMEOUT of the test (abort-threads-3-sockets.mp). */
#define PROMPT_S 5.0

typedef struct job {
    weft_comm_t comm;
    int me, n;
    int done;                    /* set by the main thread (atomic) */
} job_t;

/* Y's thread: a ring exchange and an allreduce per round, until every
 * rank's main thread is done with X. */
static void *progress_on_y(void *arg)
{
    job_t *j = arg;
    int right = (j->me + 1) % j->n, left = (j->me + j->n - 1) % j->n;

    for (int r = 0;; r++) {
        int64_t send = ((int64_t)j->me << 32) | r, got = -1;
        int64_t mine = __atomic_load_n(&j->done, __ATOMIC_ACQUIRE), all = 0;

        mp_sendrecv(&send, 1, WEFT_INT64, right, 3, &got, 1, left, 3, j->comm, NULL);
        MP_ASSERT(got == (((int64_t)left << 32) | r), "Y round %d: got %llx", r,
                  (unsigned long long)got);
        MP_CHECK(weft_allreduce(&mine, &all, 1, WEFT_INT64, WEFT_SUM, j->comm));
        if (all == j->n)
            break;
    }
    return NULL;
}

static void abort_once(weft_comm_t world, int me, int it)
{
    weft_comm_t x;
    int v = me, got = -1;
    weft_result_t rc;
    double t0, took;

    MP_CHECK(weft_comm_dup(world, &x));
    mp_barrier(world);
    if (me == 0) {
        mp_sleep_us(200000); /* let the others block first */
        MP_CHECK(weft_comm_abort(x));
        rc = weft_send(&v, 1, WEFT_INT32, 1, 6, x);
        MP_ASSERT(rc == WEFT_ERR_ABORTED, "iteration %d: send after abort: %s", it,
                  weft_strerror(rc));
    } else {
        t0 = mp_now();
        rc = weft_recv(&got, 1, WEFT_INT32, 0, 6, x, NULL);
        took = mp_now() - t0;
        MP_ASSERT(rc == WEFT_ERR_ABORTED, "iteration %d: receive on the aborted "
                  "communicator: %s (%s), expected WEFT_ERR_ABORTED", it, weft_strerror(rc),
                  weft_last_error());
        MP_ASSERT(took < PROMPT_S, "iteration %d: the receive took %.1f s to fail", it, took);
        rc = weft_send(&v, 1, WEFT_INT32, 0, 6, x);
        MP_ASSERT(rc == WEFT_ERR_ABORTED, "iteration %d: send after the notice: %s", it,
                  weft_strerror(rc));
    }
    MP_CHECK(weft_comm_destroy(x));
    mp_barrier(world);
}

int main(void)
{
    weft_comm_t world;
    job_t y;
    pthread_t ty;
    int me, n;

    mp_init_world(&world, &me, &n);
    if (n < 2)
        mp_skip("needs two ranks or more");
    y = (job_t){ .me = me, .n = n };
    MP_CHECK(weft_comm_dup(world, &y.comm));
    if (pthread_create(&ty, NULL, progress_on_y, &y) != 0)
        MP_FAIL("pthread_create failed");
    for (int it = 0; it < ITERATIONS; it++)
        abort_once(world, me, it);
    __atomic_store_n(&y.done, 1, __ATOMIC_RELEASE);
    pthread_join(ty, NULL);
    MP_CHECK(weft_comm_destroy(y.comm));
    mp_barrier(world);
    MP_CHECK(weft_comm_destroy(world));
    return 0;
}
