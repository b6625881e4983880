/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * mp_detached.c: requests freed before they complete (weft_request_free)
 * are reaped by whichever thread's progress finds them done. Within the
 * rule of one thread per communicator: thread 0 owns comm A and posts
 * receives it frees at once, so they finish in the background, while it
 * keeps creating and freeing requests on A; thread 1 owns comm B and runs
 * blocking operations there, so its progress reaps A's requests while
 * thread 0 is busy on A. Built with --enable-sanitizers=thread, any
 * unguarded touch of A's state by thread 1 is reported as a data race.
 */
#include "config.h"

#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "tests/mp/mptest.h"

#define ROUNDS 2000
#define COUNT 64

typedef struct job {
    weft_comm_t comm;
    int me, n;
    int64_t *bufs;               /* ROUNDS * COUNT: the detached receives' buffers */
} job_t;

static int64_t value(int rank, int round, int i)
{
    return ((int64_t)rank << 40) | ((int64_t)round << 16) | i;
}

/* Thread 0: every receive is let go of before its message came. */
static void *detach_on_a(void *arg)
{
    job_t *j = arg;
    int peer = (j->me + 1) % j->n, from = (j->me + j->n - 1) % j->n;
    int64_t out[COUNT];

    for (int r = 0; r < ROUNDS; r++) {
        weft_request_t rreq, sreq;

        MP_CHECK(weft_irecv(j->bufs + (size_t)r * COUNT, COUNT, WEFT_INT64, from, r % 1000,
                            j->comm, &rreq));
        MP_CHECK(weft_request_free(&rreq));
        for (int i = 0; i < COUNT; i++)
            out[i] = value(j->me, r, i);
        MP_CHECK(weft_isend(out, COUNT, WEFT_INT64, peer, r % 1000, j->comm, &sreq));
        MP_CHECK(weft_wait(&sreq, NULL));
    }
    /* Messages of a pair arrive in order: once the barrier's are in, every
     * detached receive before them has its data. */
    mp_barrier(j->comm);
    for (int r = 0; r < ROUNDS; r++)
        for (int i = 0; i < COUNT; i++)
            MP_ASSERT(j->bufs[(size_t)r * COUNT + i] == value(from, r, i),
                      "round %d element %d: got %llx", r, i,
                      (unsigned long long)j->bufs[(size_t)r * COUNT + i]);
    return NULL;
}

/* Thread 1: blocking traffic on B, whose waits run the progress that
 * reaps detached requests, A's included. */
static void *block_on_b(void *arg)
{
    job_t *j = arg;
    int peer = (j->me + 1) % j->n, from = (j->me + j->n - 1) % j->n;

    for (int r = 0; r < ROUNDS; r++) {
        int64_t send = value(j->me, r, 0), got = -1, sum = 0;

        mp_sendrecv(&send, 1, WEFT_INT64, peer, 1, &got, 1, from, 1, j->comm, NULL);
        MP_ASSERT(got == value(from, r, 0), "B round %d: got %llx", r,
                  (unsigned long long)got);
        if (r % 50 == 0) {
            MP_CHECK(weft_allreduce(&send, &sum, 1, WEFT_INT64, WEFT_SUM, j->comm));
            MP_ASSERT(sum != 0, "B round %d: allreduce gave 0", r);
        }
    }
    return NULL;
}

int main(void)
{
    weft_comm_t world;
    job_t a, b;
    pthread_t ta, tb;
    int me, n;

    mp_init_world(&world, &me, &n);
    if (n < 2)
        mp_skip("needs two ranks or more");
    a = (job_t){ .me = me, .n = n, .bufs = mp_alloc((size_t)ROUNDS * COUNT * sizeof(int64_t)) };
    b = (job_t){ .me = me, .n = n };
    MP_CHECK(weft_comm_dup(world, &a.comm));
    MP_CHECK(weft_comm_dup(world, &b.comm));
    if (pthread_create(&ta, NULL, detach_on_a, &a) != 0 ||
        pthread_create(&tb, NULL, block_on_b, &b) != 0)
        MP_FAIL("pthread_create failed");
    pthread_join(ta, NULL);
    pthread_join(tb, NULL);
    MP_CHECK(weft_comm_destroy(a.comm));
    MP_CHECK(weft_comm_destroy(b.comm));
    mp_barrier(world);
    MP_CHECK(weft_comm_destroy(world));
    free(a.bufs);
    return 0;
}
