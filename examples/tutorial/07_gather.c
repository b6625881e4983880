/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * 07_gather.c: gather and all_gather of rows and of columns (4 ranks).
 * Rows: each rank holds a [1, 5] row; joined along axis 0 they make
 * [4, 5]. Columns: each rank holds [5, 2] with values rank * 10 + col;
 * joined along axis 1 they make [5, 8].
 *
 * torch:  dist.gather(t, gather_list, dst=0); torch.cat(gather_list, dim=0)
 *         dist.all_gather(tensor_list, t);    torch.cat(tensor_list, dim=1)
 */
#include <string.h>

#include "tutorial.h"

int main(void)
{
    weft_comm_t world;
    const size_t row_shape[2] = { 1, 5 }, col_shape[2] = { 5, 2 };
    int32_t row[5], rows[4 * 5], want_rows[4 * 5], col[5 * 2], cols[5 * 8], want_cols[5 * 8];
    int rank, size;

    CHECK(weft_init(NULL, &world));
    CHECK(weft_comm_rank(world, &rank));
    CHECK(weft_comm_size(world, &size));
    if (size != 4) {
        fprintf(stderr, "run with 4 ranks\n");
        return 2;
    }
    for (int j = 0; j < 5; j++)
        row[j] = rank * 10 + j;
    for (int i = 0; i < 5; i++)
        for (int j = 0; j < 2; j++)
            col[i * 2 + j] = rank * 10 + j;
    for (int r = 0; r < 4; r++)
        for (int j = 0; j < 5; j++)
            want_rows[r * 5 + j] = r * 10 + j;
    for (int i = 0; i < 5; i++)
        for (int c = 0; c < 8; c++)
            want_cols[i * 8 + c] = (c / 2) * 10 + c % 2;

    memset(rows, 0, sizeof(rows));
    CHECK(weft_gather_axis(row, rows, 2, row_shape, 0, WEFT_INT32, 0, world));
    if (rank == 0) {
        for (int r = 0; r < 4; r++)
            show(rank, "gathered row", rows + r * 5, 5);
        expect(rank, "gather rows", rows, want_rows, 20);
    }
    CHECK(weft_allgather_axis(row, rows, 2, row_shape, 0, WEFT_INT32, world));
    show(rank, "all_gather rows, last row", rows + 15, 5);
    expect(rank, "all_gather rows", rows, want_rows, 20);

    memset(cols, 0, sizeof(cols));
    CHECK(weft_gather_axis(col, cols, 2, col_shape, 1, WEFT_INT32, 0, world));
    if (rank == 0) {
        show(rank, "gathered columns, first row", cols, 8);
        expect(rank, "gather columns", cols, want_cols, 40);
    }
    CHECK(weft_allgather_axis(col, cols, 2, col_shape, 1, WEFT_INT32, world));
    show(rank, "all_gather columns, first row", cols, 8);
    expect(rank, "all_gather columns", cols, want_cols, 40);
    CHECK(weft_comm_destroy(world));
    return 0;
}
