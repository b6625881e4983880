/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * 14_mesh.c: a 2 x 3 device mesh of 6 ranks with dimensions "dp" and
 * "tp". Rank r sits at (r / 3, r % 3); its "tp" group is its row
 * ({0,1,2} or {3,4,5}), its "dp" group its column ({0,3}, {1,4}, {2,5}),
 * exactly as torch's init_device_mesh("cpu", (2, 3), mesh_dim_names=
 * ("dp", "tp")). An all_reduce of the rank along each dimension sums the
 * row or the column.
 *
 * torch:  mesh = init_device_mesh("cpu", (2, 3), mesh_dim_names=("dp", "tp"))
 *         dist.all_reduce(t, group=mesh.get_group("tp"))
 */
#include <string.h>

#include "tutorial.h"

int main(void)
{
    const int shape[2] = { 2, 3 };
    const char *const names[2] = { "dp", "tp" };
    weft_comm_t world, tp, dp;
    weft_mesh_t mesh;
    int rank, size, coords[2], row[3], col[2], want_row[3], want_col[2];
    int32_t t, want;

    CHECK(weft_init(NULL, &world));
    CHECK(weft_comm_rank(world, &rank));
    CHECK(weft_comm_size(world, &size));
    if (size != 6) {
        fprintf(stderr, "run with 6 ranks\n");
        return 2;
    }
    /* Rank r sits at (r / 3, r % 3): its row and its column of the mesh. */
    for (int j = 0; j < 3; j++)
        want_row[j] = rank / 3 * 3 + j;
    want_col[0] = rank % 3;
    want_col[1] = rank % 3 + 3;

    CHECK(weft_mesh_create(world, 2, shape, names, &mesh));
    CHECK(weft_mesh_coords(mesh, coords));
    CHECK(weft_mesh_comm(mesh, "tp", &tp));
    CHECK(weft_mesh_comm(mesh, "dp", &dp));
    CHECK(weft_comm_world_ranks(tp, row));
    CHECK(weft_comm_world_ranks(dp, col));
    printf("Rank %d at (%d, %d): tp group {%d, %d, %d}, dp group {%d, %d}\n", rank, coords[0],
           coords[1], row[0], row[1], row[2], col[0], col[1]);
    if (coords[0] != rank / 3 || coords[1] != rank % 3 ||
        memcmp(row, want_row, sizeof(row)) || memcmp(col, want_col, sizeof(col))) {
        fprintf(stderr, "rank %d: expected (%d, %d), tp {%d, %d, %d}, dp {%d, %d}\n", rank,
                rank / 3, rank % 3, want_row[0], want_row[1], want_row[2], want_col[0],
                want_col[1]);
        return 1;
    }

    t = rank;
    CHECK(weft_allreduce(WEFT_IN_PLACE, &t, 1, WEFT_INT32, WEFT_SUM, tp));
    show(rank, "sum along tp", &t, 1);
    want = want_row[0] + want_row[1] + want_row[2];
    expect(rank, "tp sum", &t, &want, 1);
    t = rank;
    CHECK(weft_allreduce(WEFT_IN_PLACE, &t, 1, WEFT_INT32, WEFT_SUM, dp));
    show(rank, "sum along dp", &t, 1);
    want = want_col[0] + want_col[1];
    expect(rank, "dp sum", &t, &want, 1);

    /* The mesh owns tp and dp. */
    CHECK(weft_mesh_destroy(mesh));
    CHECK(weft_comm_destroy(world));
    return 0;
}
