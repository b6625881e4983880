/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * 12_groups.c: two groups, the first and the second half of the ranks,
 * each all_reduce their ranks + 1; then a MAX all_reduce over the world
 * of [first half's sum, second half's sum], where each rank fills in its
 * own half only, tells every rank both sums (4 ranks: [3, 7]).
 *
 * torch:  g = dist.new_group(ranks); dist.all_reduce(t, group=g)
 */
#include "tutorial.h"

int main(void)
{
    weft_comm_t world, half;
    int32_t t, both[2] = { 0, 0 }, want[2] = { 0, 0 };
    int rank, size, mine;

    CHECK(weft_init(NULL, &world));
    CHECK(weft_comm_rank(world, &rank));
    CHECK(weft_comm_size(world, &size));
    mine = rank < size / 2 ? 0 : 1;
    for (int r = 0; r < size; r++)
        want[r < size / 2 ? 0 : 1] += r + 1;

    /* The split by color is the same as two new_group calls. */
    CHECK(weft_comm_split(world, mine, rank, &half));
    t = rank + 1;
    CHECK(weft_allreduce(WEFT_IN_PLACE, &t, 1, WEFT_INT32, WEFT_SUM, half));
    show(rank, mine ? "second half's sum" : "first half's sum", &t, 1);
    expect(rank, "group sum", &t, &want[mine], 1);

    both[mine] = t;
    CHECK(weft_allreduce(WEFT_IN_PLACE, both, 2, WEFT_INT32, WEFT_MAX, world));
    show(rank, "knows both sums", both, 2);
    expect(rank, "both sums", both, want, 2);
    CHECK(weft_comm_destroy(half));
    CHECK(weft_comm_destroy(world));
    return 0;
}
