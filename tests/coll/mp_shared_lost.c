/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * mp_shared_lost.c: the last rank is killed (SIGKILL) between two
 * collectives that run over the node-shared segment; the survivors' next
 * collective must fail with WEFT_ERR_PEER_LOST naming it, long before
 * WEFT_TIMEOUT. No transport carries the segment's traffic, so only the
 * segment's own look at its ranks' processes can tell.
 *
 *   mp_shared_lost small|pipelined
 *
 * small: an allreduce of 64 doubles (WEFT_ALGO=allreduce:shared);
 * pipelined: of 1 Mi doubles (allreduce:shared_pipelined). Each survivor
 * leaves $WEFT_TEST_MARKER_DIR/peerlost.<rank> with its error
 * (run.sh's expect=peerlost).
 */
#include "config.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/mp/mptest.h"

int main(int argc, char **argv)
{
    const char *markers = getenv("WEFT_TEST_MARKER_DIR"), *tmo = getenv("WEFT_TIMEOUT");
    weft_comm_t world;
    int me, n;
    size_t count;
    double *in, *out, t0, took, limit;
    weft_result_t rc;
    char path[512];
    FILE *f;

    if (argc != 2 || (strcmp(argv[1], "small") && strcmp(argv[1], "pipelined")))
        MP_FAIL("usage: mp_shared_lost small|pipelined");
    if (!markers || !markers[0] || !tmo)
        MP_FAIL("WEFT_TEST_MARKER_DIR and WEFT_TIMEOUT must be set (run through tests/mp/run.sh)");
    /* weftrun stops the job with SIGTERM once a rank died: live on to see
     * the loss. */
    signal(SIGTERM, SIG_IGN);
    count = strcmp(argv[1], "small") ? (size_t)1 << 20 : 64;
    limit = atof(tmo) / 4;
    mp_init_world(&world, &me, &n);
    in = mp_alloc(count * sizeof(double));
    out = mp_alloc(count * sizeof(double));
    for (size_t i = 0; i < count; i++)
        in[i] = me + 1;

    /* Every rank attached to the segment and ran one call through it. */
    MP_CHECK(weft_allreduce(in, out, count, WEFT_FLOAT64, WEFT_SUM, world));
    MP_ASSERT(out[count - 1] == n * (n + 1) / 2.0, "allreduce before the kill: %g", out[0]);
    MP_CHECK(weft_barrier(world));
    if (me == n - 1)
        raise(SIGKILL);

    t0 = mp_now();
    rc = weft_allreduce(in, out, count, WEFT_FLOAT64, WEFT_SUM, world);
    took = mp_now() - t0;
    MP_ASSERT(rc == WEFT_ERR_PEER_LOST, "allreduce after rank %d died returned %s after %.2f s, "
              "not WEFT_ERR_PEER_LOST: %s", n - 1, mp_rc_name(rc), took, weft_last_error());
    MP_ASSERT(took < limit, "the loss took %.2f s to see (WEFT_TIMEOUT %s s)", took, tmo);
    snprintf(path, sizeof(path), "rank %d", n - 1);
    MP_ASSERT(mp_contains(weft_last_error(), path), "the error does not name rank %d: %s",
              n - 1, weft_last_error());

    snprintf(path, sizeof(path), "%s/peerlost.%d", markers, me);
    if (!(f = fopen(path, "w")))
        MP_FAIL("cannot write %s", path);
    fprintf(f, "rank %d: %s after %.3f s: %s\n", me, mp_rc_name(rc), took, weft_last_error());
    fclose(f);
    free(in);
    free(out);
    /* Destroying the world communicator still works (and finalises). */
    MP_CHECK(weft_comm_destroy(world));
    return 0;
}
