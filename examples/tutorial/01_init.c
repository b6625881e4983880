/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * 01_init.c: joining the job and asking who we are.
 *
 * torch:  dist.init_process_group("gloo", init_method=..., rank=r, world_size=n)
 *         dist.get_rank(), dist.get_world_size(), int(os.environ["LOCAL_RANK"])
 *
 * Without arguments weft finds how it was started in the environment
 * (weftrun and torchrun set RANK, WORLD_SIZE, MASTER_ADDR, ...). "env://"
 * names that method outright. "METHOD RANK SIZE" gives all three, e.g.
 * tcp://127.0.0.1:29500 0 4 or file:///tmp/rendezvous 0 4, the way a
 * hand-written launcher script would.
 */
#include "tutorial.h"

int main(int argc, char **argv)
{
    weft_init_attr_t attr = WEFT_INIT_ATTR_INITIALIZER;
    weft_comm_t world;
    const char *want_rank, *want_size;
    int rank, size, local_rank, local_size;

    if (argc != 1 && argc != 2 && argc != 4) {
        fprintf(stderr, "usage: %s [METHOD [RANK SIZE]]\n", argv[0]);
        return 2;
    }
    if (argc >= 2)
        attr.init_method = argv[1];
    if (argc == 4) {
        attr.rank = atoi(argv[2]);
        attr.size = atoi(argv[3]);
    }
    CHECK(weft_init(&attr, &world));
    CHECK(weft_comm_rank(world, &rank));
    CHECK(weft_comm_size(world, &size));
    CHECK(weft_comm_local_rank(world, &local_rank));
    CHECK(weft_comm_local_size(world, &local_size));
    printf("Rank %d of %d, local rank %d of %d\n", rank, size, local_rank, local_size);
    /* The launcher's word: the command line, or RANK and WORLD_SIZE. */
    want_rank = argc == 4 ? argv[2] : getenv("RANK");
    want_size = argc == 4 ? argv[3] : getenv("WORLD_SIZE");
    if (want_rank && want_size && (rank != atoi(want_rank) || size != atoi(want_size))) {
        fprintf(stderr, "rank %d of %d, expected %s of %s\n", rank, size, want_rank, want_size);
        return 1;
    }
    /* One machine: the local rank is the rank. */
    if (local_rank != rank || local_size != size) {
        fprintf(stderr, "rank %d: local rank %d of %d on one machine\n", rank, local_rank,
                local_size);
        return 1;
    }
    CHECK(weft_comm_destroy(world));
    return 0;
}
