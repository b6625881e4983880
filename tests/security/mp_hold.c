/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * mp_hold.c: a job that holds its shared files and its store open while
 * somebody else tries them (tests/security/users.sh). Every rank runs an
 * allreduce large enough to create the node's shared segments; rank 0
 * writes the store's port to $WEFT_TEST_DIR/port; then every rank waits
 * for $WEFT_TEST_DIR/done (at most 60 s), runs another allreduce, checks
 * both results and leaves.
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "tests/mp/mptest.h"

#define COUNT (256 * 1024)

static void allreduce_checked(weft_comm_t w, int me, int n, int round)
{
    int32_t *in = mp_alloc(COUNT * sizeof(int32_t)), *out = mp_alloc(COUNT * sizeof(int32_t));

    for (int i = 0; i < COUNT; i++)
        in[i] = me + round + i % 5;
    MP_CHECK(weft_allreduce(in, out, COUNT, WEFT_INT32, WEFT_SUM, w));
    for (int i = 0; i < COUNT; i++)
        MP_ASSERT(out[i] == n * (n - 1) / 2 + n * (round + i % 5),
                  "round %d: element %d is %d", round, i, (int)out[i]);
    free(in);
    free(out);
}

int main(void)
{
    /* weftrun gives weft's store as WEFT_MASTER_PORT; MASTER_PORT is left
     * to a framework of the program's. */
    const char *dir = getenv("WEFT_TEST_DIR"), *port = getenv("WEFT_MASTER_PORT");
    char path[4096];
    weft_comm_t world;
    int me, n;

    if (!dir)
        MP_FAIL("WEFT_TEST_DIR is not set");
    mp_init_world(&world, &me, &n);
    allreduce_checked(world, me, n, 0);
    if (me == 0) {
        FILE *f;

        snprintf(path, sizeof(path), "%s/port.tmp", dir);
        if (!port || !(f = fopen(path, "w")))
            MP_FAIL("cannot write the store's port (WEFT_MASTER_PORT %s)",
                    port ? port : "unset");
        fprintf(f, "%s\n", port);
        fclose(f);
        char final[4096];

        snprintf(final, sizeof(final), "%s/port", dir);
        if (rename(path, final) != 0)
            MP_FAIL("rename %s", path);
    }
    snprintf(path, sizeof(path), "%s/done", dir);
    for (int waited = 0; access(path, F_OK) != 0; waited++) {
        if (waited > 1200)
            MP_FAIL("%s did not appear within 60 s", path);
        usleep(50 * 1000);
    }
    allreduce_checked(world, me, n, 1);
    mp_barrier(world);
    MP_CHECK(weft_comm_destroy(world));
    return 0;
}
