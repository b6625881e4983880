/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * mp_p2p_abort.c: weft_comm_abort on the world communicator. Rank 0's own
 * pending and later operations fail with WEFT_ERR_ABORTED; the other
 * ranks, blocked in receives from rank 0, fail promptly with
 * WEFT_ERR_PEER_LOST or WEFT_ERR_ABORTED instead of waiting for the
 * timeout.
 */
#include "config.h"

#include "tests/mp/mptest.h"
#include "tests/p2p/p2p.h"

/* Far below the WEFT_TIMEOUT of the test (see p2p-abort-*.mp). */
#define PROMPT_S 10.0

void mp_p2p_abort(weft_comm_t world, int rank, int size)
{
    int v = rank, got = -1;
    weft_request_t req = NULL;
    weft_status_t st;
    weft_result_t rc;
    double t0;

    /* Connections both ways between rank 0 and every rank. */
    for (int k = 1; k < size; k++) {
        if (rank == 0) {
            MP_CHECK(weft_send(&v, 1, WEFT_INT32, k, 1, world));
            MP_CHECK(weft_recv(&got, 1, WEFT_INT32, k, 2, world, &st));
            MP_ASSERT(got == k, "rank 0 got %d from rank %d", got, k);
        } else if (rank == k) {
            MP_CHECK(weft_recv(&got, 1, WEFT_INT32, 0, 1, world, &st));
            MP_CHECK(weft_send(&v, 1, WEFT_INT32, 0, 2, world));
        }
    }
    mp_barrier(world);

    if (rank == 0) {
        MP_CHECK(weft_irecv(&got, 1, WEFT_INT32, 1, 5, world, &req));
        MP_CHECK(weft_comm_abort(world));
        rc = weft_wait(&req, &st);
        MP_ASSERT(rc == WEFT_ERR_ABORTED, "pending receive after abort: %s, expected "
                  "WEFT_ERR_ABORTED", weft_strerror(rc));
        rc = weft_send(&v, 1, WEFT_INT32, 1, 6, world);
        MP_ASSERT(rc == WEFT_ERR_ABORTED, "send after abort: %s, expected WEFT_ERR_ABORTED",
                  weft_strerror(rc));
        MP_ASSERT(mp_contains(weft_last_error(), "abort"),
                  "weft_last_error() does not say the communicator was aborted: %s",
                  weft_last_error());
        return;
    }
    t0 = mp_now();
    rc = weft_recv(&got, 1, WEFT_INT32, 0, 6, world, &st);
    MP_ASSERT(rc == WEFT_ERR_PEER_LOST || rc == WEFT_ERR_ABORTED,
              "receive from the aborting rank 0: %s, expected WEFT_ERR_PEER_LOST or "
              "WEFT_ERR_ABORTED", weft_strerror(rc));
    MP_ASSERT(mp_now() - t0 < PROMPT_S, "the receive took %.1f s to fail", mp_now() - t0);
}

/* weft_comm_abort on a duplicate of the world: the other members' pending
 * receive and collective on it fail promptly with WEFT_ERR_ABORTED, later
 * operations on it fail at once, and the world communicator still works. */
void mp_p2p_subabort(weft_comm_t world, int rank, int size)
{
    weft_comm_t sub;
    int v = rank, got = -1;
    int64_t x = rank, sum = 0;
    weft_result_t rc;
    double t0;

    MP_CHECK(weft_comm_dup(world, &sub));
    /* Rank 1 waits on a receive from rank 0, the others in an allreduce
     * that rank 0 never joins. */
    mp_barrier(world);
    if (rank == 0) {
        mp_sleep_us(200000); /* let the others block first */
        MP_CHECK(weft_comm_abort(sub));
        rc = weft_send(&v, 1, WEFT_INT32, 1, 6, sub);
        MP_ASSERT(rc == WEFT_ERR_ABORTED, "send after abort: %s", weft_strerror(rc));
    } else {
        t0 = mp_now();
        if (rank == 1)
            rc = weft_recv(&got, 1, WEFT_INT32, 0, 6, sub, NULL);
        else
            rc = weft_allreduce(&x, &sum, 1, WEFT_INT64, WEFT_SUM, sub);
        MP_ASSERT(rc == WEFT_ERR_ABORTED, "%s on the aborted communicator: %s (%s), expected "
                  "WEFT_ERR_ABORTED", rank == 1 ? "receive" : "allreduce", weft_strerror(rc),
                  weft_last_error());
        MP_ASSERT(mp_now() - t0 < PROMPT_S, "it took %.1f s to fail", mp_now() - t0);
        rc = weft_barrier(sub);
        MP_ASSERT(rc == WEFT_ERR_ABORTED, "barrier after the notice: %s", weft_strerror(rc));
    }
    /* The world is untouched. */
    MP_CHECK(weft_allreduce(&x, &sum, 1, WEFT_INT64, WEFT_SUM, world));
    MP_ASSERT(sum == (int64_t)size * (size - 1) / 2, "world allreduce after the abort: %lld",
              (long long)sum);
    MP_CHECK(weft_comm_destroy(sub));
}
