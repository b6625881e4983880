/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * mp_shared.c: the shared-segment collectives (WEFT_ALGO=...:shared) in
 * the situations the conformance suite does not build: a late rank the
 * others must sleep for, more nonblocking collectives in flight than the
 * segment has cells, waits in reverse order, ranks mixing the blocking
 * and nonblocking forms, a point-to-point transfer that only moves
 * while a rank waits inside a shared collective, and large (pipelined)
 * collectives in flight among small ones.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

#include "tests/mp/mptest.h"

/* More than the segment's 16 cells, so that ranks run ahead and wait for
 * cells to come free. */
#define INFLIGHT 40

static double cpu_seconds(void)
{
    struct rusage ru;

    getrusage(RUSAGE_SELF, &ru);
    return (double)ru.ru_utime.tv_sec + ru.ru_utime.tv_usec * 1e-6 +
           (double)ru.ru_stime.tv_sec + ru.ru_stime.tv_usec * 1e-6;
}

/* Rank 0 comes 300 ms late to a blocking and then to a nonblocking
 * allreduce; the others must sleep rather than spin meanwhile. */
static void late_rank(weft_comm_t world, int me, int n)
{
    for (int form = 0; form < 2; form++) {
        int64_t in = me + 1, out = 0;
        double t0 = mp_now(), c0 = cpu_seconds(), wall, cpu;

        if (me == 0)
            mp_sleep_us(300000);
        if (form == 0) {
            MP_CHECK(weft_allreduce(&in, &out, 1, WEFT_INT64, WEFT_SUM, world));
        } else {
            weft_request_t req = NULL;

            MP_CHECK(weft_iallreduce(&in, &out, 1, WEFT_INT64, WEFT_SUM, world, &req));
            MP_CHECK(weft_wait(&req, NULL));
        }
        wall = mp_now() - t0;
        cpu = cpu_seconds() - c0;
        MP_ASSERT(out == (int64_t)n * (n + 1) / 2, "%s allreduce gave %lld, not %d",
                  form ? "nonblocking" : "blocking", (long long)out, n * (n + 1) / 2);
        /* Sleeping: well under the wait in CPU time. A spinning waiter
         * would use most of it (or all of a core's share). */
        if (me != 0)
            MP_ASSERT(cpu < 0.5 * wall, "%s allreduce waited %.0f ms for a late rank and "
                      "used %.0f ms of CPU", form ? "nonblocking" : "blocking", wall * 1e3,
                      cpu * 1e3);
    }
}

/* INFLIGHT nonblocking allreduces and broadcasts of different sizes
 * (inline and slot payloads), waited for newest first. */
static void many_in_flight(weft_comm_t world, int me, int n)
{
    static int32_t in[INFLIGHT][64], out[INFLIGHT][64];
    weft_request_t reqs[INFLIGHT];

    for (int i = 0; i < INFLIGHT; i++) {
        size_t count = i % 3 == 0 ? 64 : 1 + (size_t)(i % 5);

        for (size_t e = 0; e < count; e++)
            in[i][e] = out[i][e] = (int32_t)(i * 1000 + (int)e + me);
        if (i % 2)
            MP_CHECK(weft_iallreduce(in[i], out[i], count, WEFT_INT32, WEFT_SUM, world,
                                     &reqs[i]));
        else
            MP_CHECK(weft_ibroadcast(out[i], count, WEFT_INT32, i % n, world, &reqs[i]));
    }
    for (int i = INFLIGHT - 1; i >= 0; i--)
        MP_CHECK(weft_wait(&reqs[i], NULL));
    for (int i = 0; i < INFLIGHT; i++) {
        size_t count = i % 3 == 0 ? 64 : 1 + (size_t)(i % 5);

        for (size_t e = 0; e < count; e++) {
            int32_t base = (int32_t)(i * 1000 + (int)e);
            int32_t want = i % 2 ? n * base + n * (n - 1) / 2 : base + i % n;

            MP_ASSERT(out[i][e] == want, "collective %d element %zu: %d, not %d", i, e,
                      out[i][e], want);
        }
    }
}

/* Even ranks call the blocking forms, odd ranks the nonblocking ones. */
static void mixed_forms(weft_comm_t world, int me, int n)
{
    int64_t block[2], all[2 * 64];

    MP_ASSERT(n <= 64, "at most 64 ranks");
    for (int round = 0; round < 50; round++) {
        block[0] = me * 100 + round;
        block[1] = -block[0];
        if (me % 2 == 0) {
            MP_CHECK(weft_allgather(block, all, 2, WEFT_INT64, world));
            MP_CHECK(weft_barrier(world));
        } else {
            weft_request_t reqs[2] = { NULL, NULL };

            MP_CHECK(weft_iallgather(block, all, 2, WEFT_INT64, world, &reqs[0]));
            MP_CHECK(weft_ibarrier(world, &reqs[1]));
            MP_CHECK(weft_waitall(2, reqs, NULL));
        }
        for (int r = 0; r < n; r++)
            MP_ASSERT(all[2 * r] == r * 100 + round && all[2 * r + 1] == -(r * 100 + round),
                      "round %d: rank %d's block is %lld, %lld", round, r,
                      (long long)all[2 * r], (long long)all[2 * r + 1]);
    }
}

/* Rank 0 starts a large send to rank 1, then enters a shared allreduce;
 * rank 1 first receives, so rank 0's waiting inside the allreduce must
 * keep the send moving. */
static void p2p_during_wait(weft_comm_t world, int me)
{
    size_t bytes = 8u << 20;
    unsigned char *buf = mp_alloc(bytes);
    weft_request_t req = NULL;
    int64_t one = 1, sum = 0;

    if (me == 0) {
        mp_fill(buf, bytes, 77);
        MP_CHECK(weft_isend(buf, bytes, WEFT_UINT8, 1, 5, world, &req));
    } else if (me == 1) {
        MP_CHECK(weft_recv(buf, bytes, WEFT_UINT8, 0, 5, world, NULL));
        MP_CHECK_PATTERN(buf, bytes, 77, "the large message");
    }
    MP_CHECK(weft_allreduce(&one, &sum, 1, WEFT_INT64, WEFT_SUM, world));
    if (me == 0)
        MP_CHECK(weft_wait(&req, NULL));
    MP_ASSERT(sum == mp_size, "allreduce gave %lld", (long long)sum);
    free(buf);
}

/* Elements of a large collective's block: several steps of a pipeline
 * at any rank count up to 8 (a chunk slot holds 256 Ki int32 at most),
 * the last one ragged. */
#define PIPE_BLOCK 300007
#define PIPE_INFLIGHT 10

/* What rank r contributes at element e of collective i. */
static int32_t pipe_value(int i, int r, size_t e)
{
    return (int32_t)(e % 977) + 7 * r + i;
}

/* PIPE_INFLIGHT nonblocking collectives started at once and waited for
 * newest first: large allreduces, allgathers, reduce_scatters and
 * all-to-alls (the
 * tuner's pipelined choice, or forced) among small allreduces (the
 * segment's small path, or forced pipelined too), so that pipelines
 * wait for the generations before theirs and reuse each other's chunk
 * slots. */
static void pipelined_in_flight(weft_comm_t world, int me, int n)
{
    int32_t *in[PIPE_INFLIGHT], *out[PIPE_INFLIGHT];
    size_t cin[PIPE_INFLIGHT], cout[PIPE_INFLIGHT];
    weft_request_t reqs[PIPE_INFLIGHT];

    for (int i = 0; i < PIPE_INFLIGHT; i++) {
        int kind = i % 5;

        /* 0: allreduce, 1: small allreduce, 2: allgather, 3: reduce_scatter,
         * 4: all-to-all (block r of the input goes to rank r) */
        cin[i] = kind == 1 ? 3 : kind == 2 ? PIPE_BLOCK : (size_t)n * PIPE_BLOCK;
        cout[i] = kind == 2 ? (size_t)n * PIPE_BLOCK : kind == 3 ? PIPE_BLOCK : cin[i];
        in[i] = mp_alloc(cin[i] * sizeof(int32_t));
        out[i] = mp_alloc(cout[i] * sizeof(int32_t));
        for (size_t e = 0; e < cin[i]; e++)
            in[i][e] = pipe_value(i, me, kind == 2 ? (size_t)me * PIPE_BLOCK + e : e);
        if (kind <= 1)
            MP_CHECK(weft_iallreduce(in[i], out[i], cin[i], WEFT_INT32, WEFT_SUM, world,
                                     &reqs[i]));
        else if (kind == 2)
            MP_CHECK(weft_iallgather(in[i], out[i], PIPE_BLOCK, WEFT_INT32, world, &reqs[i]));
        else if (kind == 4)
            MP_CHECK(weft_ialltoall(in[i], out[i], PIPE_BLOCK, WEFT_INT32, world, &reqs[i]));
        else
            MP_CHECK(weft_ireduce_scatter(in[i], out[i], PIPE_BLOCK, WEFT_INT32, WEFT_SUM,
                                          world, &reqs[i]));
    }
    for (int i = PIPE_INFLIGHT - 1; i >= 0; i--)
        MP_CHECK(weft_wait(&reqs[i], NULL));
    for (int i = 0; i < PIPE_INFLIGHT; i++) {
        int kind = i % 5;

        for (size_t e = 0; e < cout[i]; e++) {
            size_t at = kind == 3 ? (size_t)me * PIPE_BLOCK + e : e;
            int32_t want = 0;

            if (kind == 2)
                want = pipe_value(i, (int)(e / PIPE_BLOCK), e);
            else if (kind == 4)
                want = pipe_value(i, (int)(e / PIPE_BLOCK),
                                  (size_t)me * PIPE_BLOCK + e % PIPE_BLOCK);
            else
                for (int r = 0; r < n; r++)
                    want += pipe_value(i, r, at);
            MP_ASSERT(out[i][e] == want, "collective %d (kind %d) element %zu: %d, not %d", i,
                      kind, e, out[i][e], want);
        }
        free(in[i]);
        free(out[i]);
    }
}

int main(void)
{
    weft_comm_t world;
    int me, n;

    mp_init_world(&world, &me, &n);
    if (n < 2)
        mp_skip("needs 2 ranks or more");
    late_rank(world, me, n);
    many_in_flight(world, me, n);
    mixed_forms(world, me, n);
    p2p_during_wait(world, me);
    pipelined_in_flight(world, me, n);
    MP_CHECK(weft_comm_destroy(world));
    return 0;
}
