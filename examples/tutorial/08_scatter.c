/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * 08_scatter.c: scatter the rows of a [4, 5] array from rank 0 (4 ranks):
 * rank r gets row r.
 *
 * torch:  dist.scatter(t, scatter_list=list(full.chunk(4, dim=0)), src=0)
 */
#include "tutorial.h"

int main(void)
{
    weft_comm_t world;
    const size_t shape[2] = { 4, 5 };
    int32_t full[4 * 5], row[5], want[5];
    int rank, size;

    CHECK(weft_init(NULL, &world));
    CHECK(weft_comm_rank(world, &rank));
    CHECK(weft_comm_size(world, &size));
    if (size != 4) {
        fprintf(stderr, "run with 4 ranks\n");
        return 2;
    }
    for (int i = 0; i < 20; i++)
        full[i] = rank == 0 ? (i / 5) * 10 + i % 5 : -1; /* only the root's matters */
    CHECK(weft_scatter_axis(full, row, 2, shape, 0, WEFT_INT32, 0, world));
    show(rank, "got row", row, 5);
    for (int j = 0; j < 5; j++)
        want[j] = rank * 10 + j;
    expect(rank, "scatter rows", row, want, 5);
    CHECK(weft_comm_destroy(world));
    return 0;
}
