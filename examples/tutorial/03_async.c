/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * 03_async.c: nonblocking point-to-point. Rank 0 starts ten sends of the
 * values 0 to 9 to rank 2, which starts ten receives and waits for them
 * all, then sums them (45). Everybody meets at a barrier.
 *
 * torch:  req = dist.isend(tensor, dst=2); req.wait(); dist.barrier()
 */
#include "tutorial.h"

int main(void)
{
    weft_comm_t world;
    weft_request_t reqs[10];
    int32_t values[10], sum = 0;
    int rank;

    CHECK(weft_init(NULL, &world));
    CHECK(weft_comm_rank(world, &rank));
    if (rank == 0) {
        for (int i = 0; i < 10; i++) {
            values[i] = i; /* each buffer belongs to its send until it completes */
            CHECK(weft_isend(&values[i], 1, WEFT_INT32, 2, i, world, &reqs[i]));
        }
        CHECK(weft_waitall(10, reqs, NULL));
        printf("Rank 0 sent 0..9 to rank 2\n");
    } else if (rank == 2) {
        for (int i = 0; i < 10; i++)
            CHECK(weft_irecv(&values[i], 1, WEFT_INT32, 0, i, world, &reqs[i]));
        for (int i = 0; i < 10; i++) {
            CHECK(weft_wait(&reqs[i], NULL));
            sum += values[i];
        }
        show(rank, "received", values, 10);
        printf("Rank 2 sum %d\n", sum);
        if (sum != 45) {
            fprintf(stderr, "rank 2: sum %d, expected 45\n", sum);
            return 1;
        }
    }
    CHECK(weft_barrier(world));
    printf("Rank %d passed the barrier\n", rank);
    CHECK(weft_comm_destroy(world));
    return 0;
}
