/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * mp_overlap.c: nonblocking collectives in flight on several communicators
 * at once, completed in an order that differs between ranks. A rank
 * waiting on one collective must keep advancing the others it started,
 * or two ranks each waiting on a different one would wait for each other
 * forever.
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>

#include "tests/mp/mptest.h"

#define NCOMMS 3
#define COUNT (1u << 16) /* several rounds, several chunks */

int main(void)
{
    weft_comm_t world, comms[NCOMMS];
    weft_request_t reqs[2 * NCOMMS];
    float *in[NCOMMS], *out[NCOMMS];
    int64_t *gathered[NCOMMS], mine[NCOMMS]; /* buffers stay untouched until done */
    int me, n;

    mp_init_world(&world, &me, &n);
    comms[0] = world;
    for (int k = 1; k < NCOMMS; k++)
        MP_CHECK(weft_comm_dup(world, &comms[k]));
    for (int round = 0; round < 2; round++) {
        /* An allreduce and an allgather on every communicator. */
        for (int k = 0; k < NCOMMS; k++) {
            in[k] = mp_alloc(COUNT * sizeof(float));
            out[k] = mp_alloc(COUNT * sizeof(float));
            gathered[k] = mp_alloc((size_t)n * sizeof(int64_t));
            for (size_t i = 0; i < COUNT; i++)
                in[k][i] = (float)(k + 1) * (float)(me + 1);
            mine[k] = 100 * k + me;
            MP_CHECK(weft_iallreduce(in[k], out[k], COUNT, WEFT_FLOAT32, WEFT_SUM, comms[k],
                                     &reqs[2 * k]));
            MP_CHECK(weft_iallgather(&mine[k], gathered[k], 1, WEFT_INT64, comms[k],
                                     &reqs[2 * k + 1]));
        }
        if (round == 0) {
            /* Each rank waits in its own order: rank r starts with
             * request r mod 2*NCOMMS, then goes backwards. */
            for (int j = 0; j < 2 * NCOMMS; j++) {
                int i = ((me - j) % (2 * NCOMMS) + 2 * NCOMMS) % (2 * NCOMMS);

                MP_CHECK(weft_wait(&reqs[i], NULL));
            }
        } else {
            MP_CHECK(weft_waitall(2 * NCOMMS, reqs, NULL));
        }
        for (int k = 0; k < NCOMMS; k++) {
            float want = (float)(k + 1) * (float)n * (float)(n + 1) / 2;

            for (size_t i = 0; i < COUNT; i++)
                MP_ASSERT(out[k][i] == want, "round %d comm %d: allreduce[%zu] = %g, want %g",
                          round, k, i, out[k][i], want);
            for (int r = 0; r < n; r++)
                MP_ASSERT(gathered[k][r] == 100 * k + r, "round %d comm %d: allgather[%d] = "
                          "%lld", round, k, r, (long long)gathered[k][r]);
            free(in[k]);
            free(out[k]);
            free(gathered[k]);
        }
    }
    if (me == 0)
        printf("overlapped collectives on %d communicators: passed at %d ranks\n", NCOMMS, n);
    for (int k = 1; k < NCOMMS; k++)
        MP_CHECK(weft_comm_destroy(comms[k]));
    MP_CHECK(weft_comm_destroy(world));
    return 0;
}
