/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * mp_shared_comm.c: one communicator shared by 4 threads, as weft.7 allows
 * it: the program serialises its calls on the communicator (one mutex
 * here), and each thread posts nonblocking operations and tests its own
 * requests, letting the lock go between tests so the others' calls come
 * in between. Each thread exchanges with both neighbours on its own tags;
 * thread 0 also runs nonblocking allreduces on the same communicator (only
 * it does, so every rank issues them in the same order). Another thread's
 * test may complete a request it does not own: the owner must still see
 * its data and status. Built with --enable-sanitizers=thread, an unguarded
 * touch of shared state is reported as a data race.
 */
#include "config.h"

#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "tests/mp/mptest.h"

#define NTHREADS 4
#define ROUNDS 2000
#define COUNT 256

static pthread_mutex_t comm_lock = PTHREAD_MUTEX_INITIALIZER;
static weft_comm_t shared;
static int me, nranks;

static int64_t value(int rank, int k, int r, int i)
{
    return ((int64_t)rank << 48) | ((int64_t)k << 40) | ((int64_t)r << 16) | i;
}

/* Tests req under the lock until it completes; the lock is let go between
 * tests so the other threads' calls interleave with this one's. */
static void finish(weft_request_t *req, weft_status_t *st)
{
    for (;;) {
        int done = 0;

        pthread_mutex_lock(&comm_lock);
        weft_result_t rc = weft_test(req, &done, st);
        pthread_mutex_unlock(&comm_lock);
        MP_CHECK(rc);
        if (done)
            return;
        sched_yield();
    }
}

static void *run(void *arg)
{
    int k = (int)(intptr_t)arg;
    int right = (me + 1) % nranks, left = (me + nranks - 1) % nranks;
    int64_t *out = mp_alloc(COUNT * sizeof(int64_t)), *in = mp_alloc(COUNT * sizeof(int64_t));

    for (int r = 0; r < ROUNDS; r++) {
        weft_request_t rreq, sreq, areq = NULL;
        weft_status_t st = { 0 };
        int64_t mine = me + k + r, sum = -1;
        /* Messages of 8 bytes to 2 KiB, so both the eager and larger paths
         * of a transport carry them. */
        int count = 1 + (r * 37 + k * 11) % COUNT;

        for (int i = 0; i < count; i++)
            out[i] = value(me, k, r, i);
        in[0] = -1;
        pthread_mutex_lock(&comm_lock);
        MP_CHECK(weft_irecv(in, (size_t)count, WEFT_INT64, left, k, shared, &rreq));
        MP_CHECK(weft_isend(out, (size_t)count, WEFT_INT64, right, k, shared, &sreq));
        if (k == 0 && r % 10 == 0)
            MP_CHECK(weft_iallreduce(&mine, &sum, 1, WEFT_INT64, WEFT_SUM, shared, &areq));
        pthread_mutex_unlock(&comm_lock);

        finish(&rreq, &st);
        MP_ASSERT(st.source == left && st.tag == k && st.count == (size_t)count,
                  "thread %d round %d: status source %d tag %d count %zu, expected %d %d %d",
                  k, r, st.source, st.tag, st.count, left, k, count);
        for (int i = 0; i < count; i++)
            MP_ASSERT(in[i] == value(left, k, r, i), "thread %d round %d: element %d = %llx",
                      k, r, i, (unsigned long long)in[i]);
        finish(&sreq, NULL);
        if (areq) {
            int64_t want = (int64_t)nranks * (nranks - 1) / 2 + (int64_t)nranks * r;

            finish(&areq, NULL);
            MP_ASSERT(sum == want, "round %d: iallreduce %lld, expected %lld", r,
                      (long long)sum, (long long)want);
        }
    }
    free(out);
    free(in);
    return NULL;
}

int main(void)
{
    pthread_t th[NTHREADS];

    mp_init_world(&shared, &me, &nranks);
    for (int k = 0; k < NTHREADS; k++)
        if (pthread_create(&th[k], NULL, run, (void *)(intptr_t)k) != 0)
            MP_FAIL("pthread_create failed");
    for (int k = 0; k < NTHREADS; k++)
        pthread_join(th[k], NULL);
    mp_barrier(shared);
    MP_CHECK(weft_comm_destroy(shared));
    return 0;
}
