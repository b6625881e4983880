/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * mp_threads.c: communicators used from several threads at once, as
 * weft.h allows (one thread per communicator). Each of 4 threads owns a
 * duplicate of the world and drives p2p and collectives on it at the same
 * time as the others: blocking sends and receives to a neighbour, batches,
 * and every few rounds an allreduce, a broadcast from a moving root, an
 * allgather, a reduce-scatter, an all-to-all, a barrier and a nonblocking
 * allreduce overlapped with p2p, each result checked. Then the threads
 * exit; a second wave does the same on the same communicators, so
 * requests kept for reuse by threads that are gone must not be touched
 * again.
 */
#include "config.h"

#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "tests/mp/mptest.h"

#define NTHREADS 4
#define ROUNDS 1000
#define COUNT 1024

typedef struct job {
    weft_comm_t comm;
    int k;                       /* thread index: tags and values differ */
    int me, n;
} job_t;

#define MAXRANKS 8                /* the test runs at up to 8 ranks */

/* Every collective kind a thread might use, its results checked; values
 * depend on the thread, the rank and the round, so a message crossing to
 * another thread's communicator shows. */
static void collectives(const job_t *j, int r, float *in, float *out)
{
    int n = j->n, me = j->me, root = r % n;
    size_t blk = COUNT / MAXRANKS;
    weft_request_t req;

    for (int i = 0; i < COUNT; i++)
        in[i] = (float)(me + j->k + i % 7);
    MP_CHECK(weft_allreduce(in, out, COUNT, WEFT_FLOAT32, WEFT_SUM, j->comm));
    for (int i = 0; i < COUNT; i++) {
        float want = (float)(n * (n - 1) / 2 + n * (j->k + i % 7));

        MP_ASSERT(out[i] == want, "thread %d: allreduce[%d] = %g, expected %g", j->k, i,
                  (double)out[i], (double)want);
    }

    for (int i = 0; i < COUNT; i++)
        out[i] = me == root ? (float)(j->k * 1000 + r + i) : -1.0f;
    MP_CHECK(weft_broadcast(out, COUNT, WEFT_FLOAT32, root, j->comm));
    for (int i = 0; i < COUNT; i++)
        MP_ASSERT(out[i] == (float)(j->k * 1000 + r + i), "thread %d: broadcast[%d] = %g",
                  j->k, i, (double)out[i]);

    for (size_t i = 0; i < blk; i++)
        in[i] = (float)(j->k * 100 + me * 10 + (int)i % 5);
    MP_CHECK(weft_allgather(in, out, blk, WEFT_FLOAT32, j->comm));
    for (int q = 0; q < n; q++)
        for (size_t i = 0; i < blk; i++)
            MP_ASSERT(out[q * blk + i] == (float)(j->k * 100 + q * 10 + (int)i % 5),
                      "thread %d: allgather block %d[%zu] = %g", j->k, q, i,
                      (double)out[q * blk + i]);

    /* reduce-scatter: block q of every rank's input is q + k + me. */
    for (int q = 0; q < n; q++)
        for (size_t i = 0; i < blk; i++)
            in[q * blk + i] = (float)(q + j->k + me);
    MP_CHECK(weft_reduce_scatter(in, out, blk, WEFT_FLOAT32, WEFT_SUM, j->comm));
    for (size_t i = 0; i < blk; i++)
        MP_ASSERT(out[i] == (float)(n * (me + j->k) + n * (n - 1) / 2),
                  "thread %d: reduce_scatter[%zu] = %g", j->k, i, (double)out[i]);

    /* all-to-all: block q sent to rank q says who sent it. */
    for (int q = 0; q < n; q++)
        for (size_t i = 0; i < blk; i++)
            in[q * blk + i] = (float)(j->k * 10000 + me * 100 + q);
    MP_CHECK(weft_alltoall(in, out, blk, WEFT_FLOAT32, j->comm));
    for (int q = 0; q < n; q++)
        for (size_t i = 0; i < blk; i++)
            MP_ASSERT(out[q * blk + i] == (float)(j->k * 10000 + q * 100 + me),
                      "thread %d: alltoall block %d = %g", j->k, q, (double)out[q * blk + i]);

    MP_CHECK(weft_barrier(j->comm));

    /* A nonblocking allreduce with p2p to the neighbours under it. */
    {
        int64_t a = me + j->k, sum = -1, send = r, got = -1;
        int right = (me + 1) % n, left = (me + n - 1) % n;
        weft_request_t s, g;

        MP_CHECK(weft_iallreduce(&a, &sum, 1, WEFT_INT64, WEFT_SUM, j->comm, &req));
        MP_CHECK(weft_irecv(&got, 1, WEFT_INT64, left, 99, j->comm, &g));
        MP_CHECK(weft_isend(&send, 1, WEFT_INT64, right, 99, j->comm, &s));
        MP_CHECK(weft_wait(&g, NULL));
        MP_CHECK(weft_wait(&s, NULL));
        MP_CHECK(weft_wait(&req, NULL));
        MP_ASSERT(sum == (int64_t)n * (n - 1) / 2 + (int64_t)n * j->k,
                  "thread %d: iallreduce %lld", j->k, (long long)sum);
        MP_ASSERT(got == r, "thread %d: p2p under iallreduce got %lld", j->k, (long long)got);
    }
}

static void *run(void *arg)
{
    job_t *j = arg;
    int right = (j->me + 1) % j->n, left = (j->me + j->n - 1) % j->n;
    float *in = mp_alloc(COUNT * sizeof(float) * MAXRANKS),
          *out = mp_alloc(COUNT * sizeof(float) * MAXRANKS);

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
        if (r % 30 == 0)
            collectives(j, r, in, out);
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
    if (n > MAXRANKS)
        mp_skip("mp_threads runs at up to %d ranks", MAXRANKS);
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
