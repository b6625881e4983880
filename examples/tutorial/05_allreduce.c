/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * 05_allreduce.c: all_reduce with SUM and MAX of 2 * rank, and reduce to
 * rank 0 (4 ranks: inputs 0, 2, 4, 6).
 *
 * torch:  dist.all_reduce(t, op=dist.ReduceOp.SUM); dist.reduce(t, dst=0)
 */
#include "tutorial.h"

int main(void)
{
    weft_comm_t world;
    int32_t t, sum = 0, max = 0;
    int rank, size;

    CHECK(weft_init(NULL, &world));
    CHECK(weft_comm_rank(world, &rank));
    CHECK(weft_comm_size(world, &size));
    for (int r = 0; r < size; r++) {
        sum += 2 * r;
        max = 2 * r > max ? 2 * r : max;
    }

    t = 2 * rank;
    CHECK(weft_allreduce(WEFT_IN_PLACE, &t, 1, WEFT_INT32, WEFT_SUM, world));
    show(rank, "all_reduce SUM:", &t, 1);
    expect(rank, "SUM", &t, &sum, 1);

    t = 2 * rank;
    CHECK(weft_allreduce(WEFT_IN_PLACE, &t, 1, WEFT_INT32, WEFT_MAX, world));
    show(rank, "all_reduce MAX:", &t, 1);
    expect(rank, "MAX", &t, &max, 1);

    t = 2 * rank;
    CHECK(weft_reduce(WEFT_IN_PLACE, &t, 1, WEFT_INT32, WEFT_SUM, 0, world));
    if (rank == 0) {
        show(rank, "reduce SUM to 0:", &t, 1);
        expect(rank, "reduce", &t, &sum, 1);
    }
    CHECK(weft_comm_destroy(world));
    return 0;
}
