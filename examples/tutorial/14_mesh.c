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
#include "tutorial.h"

int main(void)
{
    const int shape[2] = { 2, 3 };
    const char *const names[2] = { "dp", "tp" };
    weft_comm_t world, tp, dp;
    weft_mesh_t mesh;
    int32_t row[3], col[2], want_row[3], want_col[2], t;
    int rank, size, coords[2];

    CHECK(weft_init(NULL, &world));
    CHECK(weft_comm_rank(world, &rank));
    CHECK(weft_comm_size(world, &size));
    if (size != 6) {
        fprintf(stderr, "run with 6 ranks\n");
        return 2;
    }
    CHECK(weft_mesh_create(world, 2, shape, names, &mesh));
    CHECK(weft_mesh_coords(mesh, coords));
    CHECK(weft_mesh_comm(mesh, "tp", &tp));
    CHECK(weft_mesh_comm(mesh, "dp", &dp));
    CHECK(weft_comm_world_ranks(tp, (int *)row));
    CHECK(weft_comm_world_ranks(dp, (int *)col));
    printf("Rank %d at (%d, %d): tp group {%d, %d, %d}, dp group {%d, %d}\n", rank, coords[0],
           coords[1], row[0], row[1], row[2], col[0], col[1]);
    for (int j = 0; j < 3; j++)
        want_row[j] = rank / 3 * 3 + j;
    want_col[0] = rank % 3;
    want_col[1] = rank % 3 + 3;
    if (coords[0] != rank / 3 || coords[1] != rank % 3) {
        fprintf(stderr, "rank %d: coordinates (%d, %d)\n", rank, coords[0], coords[1]);
        return 1;
    }
    expect(rank, "tp group", row, want_row, 3);
    expect(rank, "dp group", col, want_col, 2);

    t = rank;
    CHECK(weft_allreduce(WEFT_IN_PLACE, &t, 1, WEFT_INT32, WEFT_SUM, tp));
    show(rank, "sum along tp", &t, 1);
    expect(rank, "tp sum", &t, &(int32_t){ want_row[0] + want_row[1] + want_row[2] }, 1);
    t = rank;
    CHECK(weft_allreduce(WEFT_IN_PLACE, &t, 1, WEFT_INT32, WEFT_SUM, dp));
    show(rank, "sum along dp", &t, 1);
    expect(rank, "dp sum", &t, &(int32_t){ want_col[0] + want_col[1] }, 1);

    /* The mesh owns tp and dp. */
    CHECK(weft_mesh_destroy(mesh));
    CHECK(weft_comm_destroy(world));
    return 0;
}
