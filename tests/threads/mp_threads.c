/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * mp_threads.c: communicators used from several threads at once, as
 * weft.h allows (one thread per communicator). Each thread owns a
 * duplicate of the world: blocking sends and receives to a neighbour,
 * batches and allreduces, with results checked, then it exits; a second
 * wave of threads does the same on the same communicators, so requests
 * kept for reuse by threads that are gone must not be touched again.
 */
#include "config.h"

#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "tests/mp/mptest.h"

#define NTHREADS 3
#define ROUNDS 300
#define COUNT 1024

typedef struct job {
    weft_comm_t comm;
    int k;                       /* thread index: tags and values differ */
    int me, n;
} job_t;

static void *run(void *arg)
{
    job_t *j = arg;
    int right = (j->me + 1) % j->n, left = (j->me + j->n - 1) % j->n;
    float *in = mp_alloc(COUNT * sizeof(float)), *out = mp_alloc(COUNT * sizeof(float));

    for (int r = 0; r < ROUNDS; r++) {
        int64_t send = ((int64_t)j->k << 40) | ((int64_t)j->me << 20) | r, got = -1;
        weft_request_t req;
        weft_status_t st;
        weft_p2p_op_t ops[2] = {
            { .kind = WEFT_P2P_SEND, .buf = &send, .count = 1, .dt = WEFT_INT64,
              .peer = right, .tag = 7 },
            { .kind = WEFT_P2P_RECV, .buf = &got, .count = 1, .dt = WEFT_INT64,
              .peer = left, .tag = 7 },
        };

        /* A ring of blocking exchanges, one tag per thread. */
        MP_CHECK(weft_isend(&send, 1, WEFT_INT64, right, j->k, j->comm, &req));
        MP_CHECK(weft_recv(&got, 1, WEFT_INT64, left, j->k, j->comm, &st));
        MP_CHECK(weft_wait(&req, NULL));
        MP_ASSERT(got == (((int64_t)j->k << 40) | ((int64_t)left << 20) | r),
                  "thread %d round %d: got %lld from rank %d", j->k, r, (long long)got, left);
        MP_ASSERT(st.source == left && st.tag == j->k, "thread %d: status %d/%d", j->k,
                  st.source, st.tag);
        got = -1;
        MP_CHECK(weft_batch_isend_irecv(2, ops, j->comm, &req));
        MP_CHECK(weft_wait(&req, NULL));
        MP_ASSERT(got == (((int64_t)j->k << 40) | ((int64_t)left << 20) | r),
                  "thread %d round %d: batch got %lld", j->k, r, (long long)got);
        if (r % 30 == 0) {
            for (int i = 0; i < COUNT; i++)
                in[i] = (float)(j->me + j->k + i % 7);
            MP_CHECK(weft_allreduce(in, out, COUNT, WEFT_FLOAT32, WEFT_SUM, j->comm));
            for (int i = 0; i < COUNT; i++) {
                float want = (float)(j->n * (j->n - 1) / 2 + j->n * (j->k + i % 7));

                MP_ASSERT(out[i] == want, "thread %d: allreduce[%d] = %g, expected %g", j->k,
                          i, (double)out[i], (double)want);
            }
        }
    }
    free(in);
    free(out);
    return NULL;
}

int main(void)
{
    weft_comm_t world;
    job_t jobs[NTHREADS];
    pthread_t th[NTHREADS];
    int me, n;

    mp_init_world(&world, &me, &n);
    for (int k = 0; k < NTHREADS; k++) {
        jobs[k] = (job_t){ .k = k, .me = me, .n = n };
        MP_CHECK(weft_comm_dup(world, &jobs[k].comm));
    }
    for (int wave = 0; wave < 2; wave++) {
        for (int k = 0; k < NTHREADS; k++)
            if (pthread_create(&th[k], NULL, run, &jobs[k]) != 0)
                MP_FAIL("pthread_create failed");
        for (int k = 0; k < NTHREADS; k++)
            pthread_join(th[k], NULL);
    }
    for (int k = 0; k < NTHREADS; k++)
        MP_CHECK(weft_comm_destroy(jobs[k].comm));
    mp_barrier(world);
    MP_CHECK(weft_comm_destroy(world));
    return 0;
}
