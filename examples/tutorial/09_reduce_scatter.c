/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * 09_reduce_scatter.c: reduce_scatter by rows and by columns (4 ranks).
 * By rows: each rank's input is [4, 5] with row i equal to rank * 10 + i;
 * rank r gets row r summed over the ranks, 60 + 4 r everywhere. By
 * columns: input [5, 4] with column j equal to rank * 10 + j; rank r gets
 * column r summed, the same values.
 *
 * torch:  dist.reduce_scatter(out, list(t.chunk(4, dim=0)), op=SUM)
 */
#include "tutorial.h"

int main(void)
{
    weft_comm_t world;
    const size_t rows_shape[2] = { 4, 5 }, cols_shape[2] = { 5, 4 };
    int32_t in[20], out[5], want[5];
    int rank, size;

    CHECK(weft_init(NULL, &world));
    CHECK(weft_comm_rank(world, &rank));
    CHECK(weft_comm_size(world, &size));
    if (size != 4) {
        fprintf(stderr, "run with 4 ranks\n");
        return 2;
    }
    for (int j = 0; j < 5; j++)
        want[j] = 10 * (0 + 1 + 2 + 3) + 4 * rank;

    for (int i = 0; i < 4; i++)
        for (int j = 0; j < 5; j++)
            in[i * 5 + j] = rank * 10 + i;
    CHECK(weft_reduce_scatter_axis(in, out, 2, rows_shape, 0, WEFT_INT32, WEFT_SUM, world));
    show(rank, "reduce_scatter row", out, 5);
    expect(rank, "by rows", out, want, 5);

    for (int i = 0; i < 5; i++)
        for (int j = 0; j < 4; j++)
            in[i * 4 + j] = rank * 10 + j;
    CHECK(weft_reduce_scatter_axis(in, out, 2, cols_shape, 1, WEFT_INT32, WEFT_SUM, world));
    show(rank, "reduce_scatter column", out, 5);
    expect(rank, "by columns", out, want, 5);
    CHECK(weft_comm_destroy(world));
    return 0;
}
