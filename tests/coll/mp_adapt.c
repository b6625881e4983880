/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * mp_adapt.c: collectives whose algorithm the tuner keeps timing
 * (core/tune/adapt.c), across many calibrations: blocking calls, batches
 * of nonblocking ones in flight across a calibration (the calls after it
 * wait for its verdict), waited for in an order that differs between
 * ranks, with collectives of another communicator in between. Every
 * result is checked exactly: ranks that disagreed on an algorithm would
 * hang or compute garbage. adapt.sh runs it and compares the ranks'
 * verdicts.
 */
#include "config.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "tests/mp/mptest.h"

#define BIG 32768    /* int32 elements: 128 KiB, where pipeline and ring are close */
#define BATCH 40     /* nonblocking calls in flight at once */
#define BCAST 256    /* int32 elements */
#define DEEP 1400    /* nonblocking calls in flight before the first wait */
#define DEEP_COUNT 4096 /* int32 elements: 16 KiB, where pipeline and messages are close */

static void check_sum(const int32_t *out, size_t count, int n, int salt, const char *what)
{
    for (size_t j = 0; j < count; j++) {
        int32_t want = (int32_t)(n * (salt + (int)(j % 1000)) + n * (n - 1) / 2);

        MP_ASSERT(out[j] == want, "%s: [%zu] = %d, want %d", what, j, out[j], want);
    }
}

static void fill(int32_t *in, size_t count, int me, int salt)
{
    for (size_t j = 0; j < count; j++)
        in[j] = me + salt + (int32_t)(j % 1000);
}

int main(void)
{
    weft_comm_t world, other;
    weft_request_t reqs[BATCH], small_reqs[BATCH];
    int32_t *in[BATCH], *out[BATCH], small_in[BATCH], small_out[BATCH];
    char what[64];
    int me, n, salt = 0;

    mp_init_world(&world, &me, &n);
    MP_CHECK(weft_comm_dup(world, &other));
    for (int k = 0; k < BATCH; k++) {
        in[k] = mp_alloc(BIG * sizeof(int32_t));
        out[k] = mp_alloc(BIG * sizeof(int32_t));
    }

    /* Blocking calls. The entry's first cycle is 64 calls long and ends
     * with 4 calls of the model's pick (a shared algorithm here), 4 of
     * the other, then a calibration (call 63; weft.7, WEFT_TUNE_ADAPT).
     * Rank 0 arrives 20 ms late at the pick's timed calls, which the
     * other ranks wait for in the call: its times grow far beyond what a
     * busy machine does to the other's, and the verdict must be the
     * other algorithm (adapt.sh reads it). The next cycle is 256 calls
     * long, or 1024 when the verdict was clear, which it should be:
     * either way its calibration (call 319 or 1087) and the timed calls
     * before it fall in the nonblocking batches below. */
    for (int i = 0; i < 200; i++, salt++) {
        if (me == 0 && i >= 55 && i < 59)
            mp_sleep_us(20000);
        fill(in[0], BIG, me, salt);
        MP_CHECK(weft_allreduce(in[0], out[0], BIG, WEFT_INT32, WEFT_SUM, world));
        snprintf(what, sizeof(what), "blocking allreduce %d", i);
        check_sum(out[0], BIG, n, salt, what);
    }

    /* Batches of nonblocking calls, each with a small allreduce of the
     * other communicator in between, waited for in a rank's own order,
     * and a blocking call between batches (calls 240, 281, ...). Batch 2
     * or 21 holds the second calibration and the timed calls before it:
     * untimed, as they are nonblocking, it keeps the verdict; the calls
     * after it wait for the verdict, holding the generations of the
     * shared segment they took in call order, which they give up as the
     * verdict is the other algorithm. */
    for (int b = 0; b < 22; b++) {
        int first = salt;

        for (int k = 0; k < BATCH; k++) {
            fill(in[k], BIG, me, salt + k);
            MP_CHECK(weft_iallreduce(in[k], out[k], BIG, WEFT_INT32, WEFT_SUM, world, &reqs[k]));
            small_in[k] = me + k;
            MP_CHECK(weft_iallreduce(&small_in[k], &small_out[k], 1, WEFT_INT32, WEFT_SUM, other,
                                     &small_reqs[k]));
        }
        for (int j = 0; j < BATCH; j++) {
            int k = (j * (me + 1) + b) % BATCH;

            /* Some ranks first finish calls that others leave for last. */
            if (me % 2)
                k = BATCH - 1 - j;
            MP_CHECK(weft_wait(&reqs[k], NULL));
        }
        MP_CHECK(weft_waitall(BATCH, small_reqs, NULL));
        for (int k = 0; k < BATCH; k++) {
            snprintf(what, sizeof(what), "batch %d nonblocking allreduce %d", b, k);
            check_sum(out[k], BIG, n, first + k, what);
            MP_ASSERT(small_out[k] == n * k + n * (n - 1) / 2, "batch %d: small allreduce %d = "
                      "%d", b, k, small_out[k]);
        }
        salt += BATCH;
        fill(in[0], BIG, me, salt);
        MP_CHECK(weft_allreduce(in[0], out[0], BIG, WEFT_INT32, WEFT_SUM, world));
        snprintf(what, sizeof(what), "blocking allreduce after batch %d", b);
        check_sum(out[0], BIG, n, salt, what);
        salt++;
    }

    /* 1400 nonblocking calls of a fresh communicator: nothing is timed,
     * so each cycle is 4 times the last, and on ranks but 0 the calls
     * after the first calibration (call 63) wait for it; as it rules, one
     * of them turns out to be the second (call 319), and the calls after
     * that wait for it, one of them the third (call 1343). */
    {
        weft_comm_t deep;
        weft_request_t *dreqs = mp_alloc(DEEP * sizeof(*dreqs));
        int32_t *din = mp_alloc(DEEP * DEEP_COUNT * sizeof(int32_t));
        int32_t *dout = mp_alloc(DEEP * DEEP_COUNT * sizeof(int32_t));

        MP_CHECK(weft_comm_dup(world, &deep));
        for (int i = 0; i < DEEP; i++) {
            fill(din + (size_t)i * DEEP_COUNT, DEEP_COUNT, me, i);
            MP_CHECK(weft_iallreduce(din + (size_t)i * DEEP_COUNT,
                                     dout + (size_t)i * DEEP_COUNT, DEEP_COUNT, WEFT_INT32,
                                     WEFT_SUM, deep, &dreqs[i]));
            /* Rank 0 alone waits for the first calibration before it goes
             * on: its next calls know their algorithm as they start, where
             * the other ranks' wait for the verdict, and the segment's
             * generations must still come out the same on every rank. */
            if (me == 0 && i == 63)
                MP_CHECK(weft_wait(&dreqs[i], NULL));
        }
        MP_CHECK(weft_waitall(DEEP, dreqs, NULL));
        for (int i = 0; i < DEEP; i++) {
            snprintf(what, sizeof(what), "deep nonblocking allreduce %d", i);
            check_sum(dout + (size_t)i * DEEP_COUNT, DEEP_COUNT, n, i, what);
        }
        MP_CHECK(weft_comm_destroy(deep));
        free(dreqs);
        free(din);
        free(dout);
    }

    /* Broadcasts from every root in turn, blocking then nonblocking. */
    for (int i = 0; i < 400; i++) {
        int root = i % n;
        int32_t *buf = out[i % BATCH];

        if (i < 200) {
            if (me == root)
                fill(buf, BCAST, root, i);
            MP_CHECK(weft_broadcast(buf, BCAST, WEFT_INT32, root, world));
            snprintf(what, sizeof(what), "broadcast %d", i);
            for (int j = 0; j < BCAST; j++)
                MP_ASSERT(buf[j] == root + i + j, "%s: [%d] = %d", what, j, buf[j]);
            continue;
        }
        if (me == root)
            fill(buf, BCAST, root, i);
        MP_CHECK(weft_ibroadcast(buf, BCAST, WEFT_INT32, root, world, &reqs[i % BATCH]));
        if (i % BATCH == BATCH - 1 || i == 399) {
            MP_CHECK(weft_waitall(i % BATCH + 1, reqs, NULL));
            for (int k = 0; k <= i % BATCH; k++) {
                int call = i - i % BATCH + k;

                for (int j = 0; j < BCAST; j++)
                    MP_ASSERT(out[k][j] == call % n + call + j, "ibroadcast %d: [%d] = %d",
                              call, j, out[k][j]);
            }
        }
    }

    /* Small blocking allreduces: the shared cells against the messages. */
    for (int i = 0; i < 300; i++) {
        int32_t v = me + i, sum;

        MP_CHECK(weft_allreduce(&v, &sum, 1, WEFT_INT32, WEFT_SUM, world));
        MP_ASSERT(sum == n * i + n * (n - 1) / 2, "small allreduce %d = %d", i, sum);
    }

    MP_CHECK(weft_comm_destroy(other));
    for (int k = 0; k < BATCH; k++) {
        free(in[k]);
        free(out[k]);
    }
    MP_CHECK(weft_comm_destroy(world));
    return 0;
}
