/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * 11_ring_allreduce.c: the ring all-reduce written by hand with send and
 * recv, in its two phases: a reduce-scatter (after n - 1 steps, rank r
 * holds chunk r + 1 summed over every rank) and an all-gather (n - 1 more
 * steps pass the finished chunks around). Even ranks send first and odd
 * ones receive first, so the blocking calls never all wait at once.
 * Checked against weft_allreduce.
 *
 * torch:  the "Ring-AllReduce" of the distributed tutorial
 */
#include <string.h>

#include "tutorial.h"

#define CHUNK 3

/* Sends out to the right neighbour and receives in from the left. */
static void shift(weft_comm_t world, int rank, int size, const int32_t *out, int32_t *in)
{
    int right = (rank + 1) % size, left = (rank - 1 + size) % size;

    if (rank % 2 == 0) {
        CHECK(weft_send(out, CHUNK, WEFT_INT32, right, 0, world));
        CHECK(weft_recv(in, CHUNK, WEFT_INT32, left, 0, world, NULL));
    } else {
        CHECK(weft_recv(in, CHUNK, WEFT_INT32, left, 0, world, NULL));
        CHECK(weft_send(out, CHUNK, WEFT_INT32, right, 0, world));
    }
}

int main(void)
{
    weft_comm_t world;
    int32_t data[64 * CHUNK], want[64 * CHUNK], in[CHUNK];
    int rank, size;

    CHECK(weft_init(NULL, &world));
    CHECK(weft_comm_rank(world, &rank));
    CHECK(weft_comm_size(world, &size));
    if (size > 64) {
        fprintf(stderr, "at most 64 ranks\n");
        return 2;
    }
    for (int i = 0; i < size * CHUNK; i++)
        data[i] = rank * 100 + i;
    CHECK(weft_allreduce(data, want, (size_t)(size * CHUNK), WEFT_INT32, WEFT_SUM, world));

    /* Reduce-scatter: in step s pass chunk rank - s, add the one arriving. */
    for (int s = 0; s < size - 1; s++) {
        int send_c = (rank - s + size) % size, recv_c = (rank - s - 1 + size) % size;

        shift(world, rank, size, data + send_c * CHUNK, in);
        for (int i = 0; i < CHUNK; i++)
            data[recv_c * CHUNK + i] += in[i];
    }
    /* All-gather: pass on the finished chunks, starting with rank + 1. */
    for (int s = 0; s < size - 1; s++) {
        int send_c = (rank + 1 - s + size) % size, recv_c = (rank - s + size) % size;

        shift(world, rank, size, data + send_c * CHUNK, in);
        memcpy(data + recv_c * CHUNK, in, sizeof(in));
    }
    show(rank, "ring all_reduce:", data, (size_t)(size * CHUNK));
    expect(rank, "hand-made ring against weft_allreduce", data, want, (size_t)(size * CHUNK));
    CHECK(weft_comm_destroy(world));
    return 0;
}
