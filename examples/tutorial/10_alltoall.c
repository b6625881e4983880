/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * 10_alltoall.c: all_to_all (4 ranks). Even: block j of rank r's [4, 2]
 * input, [r*10+j, r*10+j], goes to rank j. By columns: column j of a
 * [5, 4] input goes to rank j. Uneven, as torch's all_to_all_single with
 * split sizes: rank r's input is r*10 + 0, 1, ... and row r of the split
 * table says how many of them go to each rank.
 *
 * torch:  dist.all_to_all(out_list, in_list)
 *         dist.all_to_all_single(out, in, out_splits, in_splits)
 */
#include "tutorial.h"

static const size_t table[4][4] = { { 2, 2, 1, 1 }, { 3, 2, 2, 2 }, { 2, 1, 1, 1 },
                                    { 2, 2, 2, 1 } };

int main(void)
{
    weft_comm_t world;
    const size_t shape[2] = { 5, 4 };
    int32_t in[20], out[20], want[20];
    size_t sc[4], sd[4], rc[4], rd[4], ns = 0, nr = 0;
    int rank, size;

    CHECK(weft_init(NULL, &world));
    CHECK(weft_comm_rank(world, &rank));
    CHECK(weft_comm_size(world, &size));
    if (size != 4) {
        fprintf(stderr, "run with 4 ranks\n");
        return 2;
    }

    for (int j = 0; j < 4; j++)
        in[2 * j] = in[2 * j + 1] = rank * 10 + j;
    CHECK(weft_alltoall(in, out, 2, WEFT_INT32, world));
    show(rank, "all_to_all got", out, 8);
    for (int r = 0; r < 4; r++)
        want[2 * r] = want[2 * r + 1] = r * 10 + rank;
    expect(rank, "even", out, want, 8);

    for (int i = 0; i < 5; i++)
        for (int j = 0; j < 4; j++)
            in[i * 4 + j] = rank * 10 + j;
    CHECK(weft_alltoall_axis(in, out, 2, shape, 1, WEFT_INT32, world));
    show(rank, "all_to_all by columns, first row", out, 4);
    for (int i = 0; i < 5; i++)
        for (int r = 0; r < 4; r++)
            want[i * 4 + r] = r * 10 + rank;
    expect(rank, "by columns", out, want, 20);

    for (int j = 0; j < 4; j++) {
        sc[j] = table[rank][j];
        sd[j] = ns;
        ns += sc[j];
        rc[j] = table[j][rank];
        rd[j] = nr;
        nr += rc[j];
    }
    for (size_t i = 0; i < ns; i++)
        in[i] = rank * 10 + (int32_t)i;
    CHECK(weft_alltoallv(in, sc, sd, out, rc, rd, WEFT_INT32, world));
    show(rank, "uneven all_to_all got", out, nr);
    /* From rank r: its elements after those it sent to lower ranks. */
    for (int r = 0, k = 0; r < 4; r++) {
        size_t first = 0;

        for (int j = 0; j < rank; j++)
            first += table[r][j];
        for (size_t i = 0; i < table[r][rank]; i++)
            want[k++] = r * 10 + (int32_t)(first + i);
    }
    expect(rank, "uneven", out, want, nr);
    CHECK(weft_comm_destroy(world));
    return 0;
}
