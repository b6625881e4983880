/*
 * mp_p2p_abort.c: weft_comm_abort on the world communicator. Rank 0's own
 * pending and later operations fail with WEFT_ERR_ABORTED; the other
 * ranks, blocked in receives from rank 0, fail promptly with
 * WEFT_ERR_PEER_LOST or WEFT_ERR_ABORTED instead of waiting for the
 * timeout.
 */
#include "config.h"

#include "tests/mp/mptest.h"
#include "tests/mp/p2p.h"

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
