/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * 04_broadcast.c: broadcast from rank 0, from rank 1, and inside the group
 * {0, 1} from rank 1 (4 ranks). Each rank starts with [rank].
 *
 * torch:  dist.broadcast(tensor, src=0)
 *         group = dist.new_group([0, 1]); dist.broadcast(tensor, src=1, group=group)
 */
#include "tutorial.h"

int main(void)
{
    weft_comm_t world, pair;
    const int members[2] = { 0, 1 };
    int32_t t;
    int rank;

    CHECK(weft_init(NULL, &world));
    CHECK(weft_comm_rank(world, &rank));

    t = rank;
    CHECK(weft_broadcast(&t, 1, WEFT_INT32, 0, world));
    show(rank, "after broadcast from 0 has", &t, 1);
    expect(rank, "broadcast from 0", &t, &(int32_t){ 0 }, 1);

    t = rank;
    CHECK(weft_broadcast(&t, 1, WEFT_INT32, 1, world));
    show(rank, "after broadcast from 1 has", &t, 1);
    expect(rank, "broadcast from 1", &t, &(int32_t){ 1 }, 1);

    /* Every rank takes part in making the group; the others get NULL. */
    t = rank;
    CHECK(weft_comm_create_group(world, 2, members, &pair));
    if (pair) {
        /* Rank 1 of the world is rank 1 of the group too. */
        CHECK(weft_broadcast(&t, 1, WEFT_INT32, 1, pair));
        CHECK(weft_comm_destroy(pair));
    }
    show(rank, "after broadcast in group {0,1} has", &t, 1);
    expect(rank, "group broadcast", &t, &(int32_t){ rank < 2 ? 1 : rank }, 1);

    CHECK(weft_comm_destroy(world));
    return 0;
}
