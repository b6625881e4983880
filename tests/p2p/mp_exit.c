/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * mp_exit.c: ranks leave as soon as their part of a collective is done.
 * A rank whose sends are complete may finalise while a peer has not yet
 * accepted the connection that carries its data; the peer must still
 * receive it (the goodbye says how many messages and streams to wait for)
 * instead of failing with WEFT_ERR_PEER_LOST.
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>

#include "tests/mp/mptest.h"

#define BLOCK 1000

int main(void)
{
    weft_comm_t world;
    int32_t *in, *out;
    int me, n;

    mp_init_world(&world, &me, &n);
    in = mp_alloc((size_t)n * BLOCK * sizeof(int32_t));
    out = mp_alloc((size_t)n * BLOCK * sizeof(int32_t));
    for (int j = 0; j < n; j++)
        for (int i = 0; i < BLOCK; i++)
            in[j * BLOCK + i] = me * 100000 + j * 1000 + i % 1000;
    /* The first message between most pairs: connections open now. */
    MP_CHECK(weft_alltoall(in, out, BLOCK, WEFT_INT32, world));
    for (int j = 0; j < n; j++)
        for (int i = 0; i < BLOCK; i++)
            MP_ASSERT(out[j * BLOCK + i] == j * 100000 + me * 1000 + i % 1000,
                      "block from rank %d, element %d: %d", j, i, out[j * BLOCK + i]);
    if (me == 0)
        printf("alltoall then leave at once: %d ranks passed\n", n);
    free(in);
    free(out);
    MP_CHECK(weft_comm_destroy(world));
    return 0;
}
