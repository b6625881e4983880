/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * 02_sendrecv.c: blocking point-to-point (3 ranks). Rank 0 sends [100,
 * 200] to rank 1, which doubles it and sends it on to rank 2.
 *
 * torch:  dist.send(tensor, dst=1); dist.recv(tensor, src=0)
 */
#include "tutorial.h"

int main(void)
{
    weft_comm_t world;
    int32_t data[2] = { 0, 0 };
    int rank, size;

    CHECK(weft_init(NULL, &world));
    CHECK(weft_comm_rank(world, &rank));
    CHECK(weft_comm_size(world, &size));
    if (size < 3) {
        fprintf(stderr, "run with 3 ranks or more\n");
        return 2;
    }
    if (rank == 0) {
        data[0] = 100;
        data[1] = 200;
        CHECK(weft_send(data, 2, WEFT_INT32, 1, 0, world));
    } else if (rank == 1) {
        CHECK(weft_recv(data, 2, WEFT_INT32, 0, 0, world, NULL));
        data[0] *= 2;
        data[1] *= 2;
        CHECK(weft_send(data, 2, WEFT_INT32, 2, 0, world));
    } else if (rank == 2) {
        CHECK(weft_recv(data, 2, WEFT_INT32, 1, 0, world, NULL));
    }
    show(rank, "has data", data, 2);
    {
        const int32_t want[3][2] = { { 100, 200 }, { 200, 400 }, { 200, 400 } };

        if (rank < 3)
            expect(rank, "send/recv", data, want[rank], 2);
    }
    CHECK(weft_comm_destroy(world));
    return 0;
}
