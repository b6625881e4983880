/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * 06_manual_allreduce.c: an all_reduce made of point-to-point messages:
 * every rank sends its vector to rank 0, which sums and broadcasts the
 * result. Simple, and slow at scale (everything goes through rank 0),
 * which is why weft_allreduce does not work this way; checked against it.
 *
 * torch:  the "all_reduce by hand" of the point-to-point tutorial
 */
#include "tutorial.h"

#define N 4

int main(void)
{
    weft_comm_t world;
    int32_t mine[N], sum[N], other[N], want[N];
    int rank, size;

    CHECK(weft_init(NULL, &world));
    CHECK(weft_comm_rank(world, &rank));
    CHECK(weft_comm_size(world, &size));
    for (int i = 0; i < N; i++)
        mine[i] = rank * 10 + i;

    if (rank == 0) {
        for (int i = 0; i < N; i++)
            sum[i] = mine[i];
        for (int r = 1; r < size; r++) {
            CHECK(weft_recv(other, N, WEFT_INT32, r, 7, world, NULL));
            for (int i = 0; i < N; i++)
                sum[i] += other[i];
        }
    } else {
        CHECK(weft_send(mine, N, WEFT_INT32, 0, 7, world));
    }
    CHECK(weft_broadcast(sum, N, WEFT_INT32, 0, world));
    show(rank, "hand-made all_reduce:", sum, N);

    CHECK(weft_allreduce(mine, want, N, WEFT_INT32, WEFT_SUM, world));
    expect(rank, "hand-made against weft_allreduce", sum, want, N);
    CHECK(weft_comm_destroy(world));
    return 0;
}
