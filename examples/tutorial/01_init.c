/*
 * 01_init.c: joining the job and asking who we are.
 *
 * torch:  dist.init_process_group("gloo", init_method=..., rank=r, world_size=n)
 *         dist.get_rank(), dist.get_world_size(), int(os.environ["LOCAL_RANK"])
 *
 * Without arguments the start-up comes from the environment (weftrun or
 * torchrun set it: env://). With "METHOD RANK SIZE" it uses that init
 * method, e.g. tcp://127.0.0.1:29500 or file:///tmp/rendezvous, the way
 * a hand-written launcher script would.
 */
#include <string.h>

#include "tutorial.h"

int main(int argc, char **argv)
{
    weft_init_attr_t attr = WEFT_INIT_ATTR_INITIALIZER;
    weft_comm_t world;
    int rank, size, local_rank, local_size;

    if (argc == 4) {
        attr.init_method = argv[1];
        attr.rank = atoi(argv[2]);
        attr.size = atoi(argv[3]);
    } else if (argc != 1) {
        fprintf(stderr, "usage: %s [METHOD RANK SIZE]\n", argv[0]);
        return 2;
    }
    CHECK(weft_init(&attr, &world));
    CHECK(weft_comm_rank(world, &rank));
    CHECK(weft_comm_size(world, &size));
    CHECK(weft_comm_local_rank(world, &local_rank));
    CHECK(weft_comm_local_size(world, &local_size));
    printf("Rank %d of %d, local rank %d of %d\n", rank, size, local_rank, local_size);
    /* One machine: the local rank is the rank. */
    if (argc == 4 && (rank != attr.rank || size != attr.size)) {
        fprintf(stderr, "rank %d of %d, expected %d of %d\n", rank, size, attr.rank, attr.size);
        return 1;
    }
    if (local_rank != rank || local_size != size) {
        fprintf(stderr, "local rank %d of %d on one machine\n", local_rank, local_size);
        return 1;
    }
    CHECK(weft_comm_destroy(world));
    return 0;
}
