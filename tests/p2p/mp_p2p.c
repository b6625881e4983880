/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * mp_p2p.c: the point-to-point test program, started by weftrun through
 * tests/mp/run.sh: `mp_p2p SUBCOMMAND`. Every rank joins with
 * weft_init(NULL) (weftrun's variables), runs the subcommand, and leaves;
 * rank 0 prints one summary line. Exit 0: passed, 1: failed, 77: this rank
 * count does not suit the subcommand.
 */
#include "config.h"

#include <stdio.h>
#include <string.h>

#include "tests/mp/mptest.h"
#include "tests/p2p/p2p.h"

struct subcommand {
    const char *name;
    int min_ranks;
    void (*prepare)(void); /* before weft_init, or NULL */
    void (*run)(weft_comm_t world, int rank, int size);
    const char *what;
};

static const struct subcommand subcommands[] = {
    { "pingpong", 2, NULL, mp_p2p_pingpong, "round trips between rank 0 and every rank" },
    { "ring", 2, NULL, mp_p2p_ring, "a token around the ring" },
    { "anysource", 2, NULL, mp_p2p_anysource, "wildcard source and tag at rank 0" },
    { "ordering", 2, NULL, mp_p2p_ordering, "same-tag order, out-of-tag-order receives" },
    { "selfsend", 1, NULL, mp_p2p_selfsend, "messages to this rank itself" },
    { "truncation", 1, NULL, mp_p2p_truncation, "receive buffers too small" },
    { "zerolen", 1, NULL, mp_p2p_zerolen, "messages of no elements" },
    { "big", 2, NULL, mp_p2p_big, "one 256 MiB message" },
    { "args", 1, NULL, mp_p2p_args, "invalid arguments" },
    { "batch", 2, NULL, mp_p2p_batch, "weft_batch_isend_irecv with both neighbours" },
    { "nonblocking", 2, NULL, mp_p2p_nonblocking, "many requests, test, waitall, free" },
    { "abort", 2, NULL, mp_p2p_abort, "rank 0 aborts the world communicator" },
    { "subabort", 2, NULL, mp_p2p_subabort, "rank 0 aborts a duplicate of the world" },
    { "peerlost", 2, mp_p2p_peerlost_prepare, mp_p2p_peerlost,
      "the last rank dies in the middle of a transfer" },
};

#define NSUB (sizeof(subcommands) / sizeof(subcommands[0]))

static void usage(FILE *f)
{
    fputs("usage: mp_p2p SUBCOMMAND   (run under weftrun)\n", f);
    for (size_t i = 0; i < NSUB; i++)
        fprintf(f, "  %-12s %s (at least %d rank%s)\n", subcommands[i].name,
                subcommands[i].what, subcommands[i].min_ranks,
                subcommands[i].min_ranks > 1 ? "s" : "");
}

int main(int argc, char **argv)
{
    const struct subcommand *sub = NULL;
    weft_comm_t world = NULL;
    double t0;

    if (argc != 2) {
        usage(stderr);
        return 2;
    }
    for (size_t i = 0; i < NSUB; i++)
        if (strcmp(argv[1], subcommands[i].name) == 0)
            sub = &subcommands[i];
    if (!sub) {
        fprintf(stderr, "mp_p2p: unknown subcommand '%s'\n", argv[1]);
        usage(stderr);
        return 2;
    }
    if (sub->prepare)
        sub->prepare();

    MP_CHECK(weft_init(NULL, &world));
    MP_ASSERT(world != NULL, "weft_init succeeded but left world NULL");
    MP_CHECK(weft_comm_rank(world, &mp_rank));
    MP_CHECK(weft_comm_size(world, &mp_size));
    MP_ASSERT(mp_size >= 1 && mp_rank >= 0 && mp_rank < mp_size,
              "weft_comm_rank/size gave rank %d of %d", mp_rank, mp_size);
    if (mp_size < sub->min_ranks) {
        MP_CHECK(weft_comm_destroy(world));
        if (mp_rank == 0)
            mp_skip("mp_p2p %s needs at least %d ranks, the job has %d", sub->name,
                    sub->min_ranks, mp_size);
        return MP_EXIT_SKIP;
    }

    t0 = mp_now();
    sub->run(world, mp_rank, mp_size);
    MP_CHECK(weft_comm_destroy(world));
    if (mp_rank == 0)
        mp_log("mp_p2p %s: %d rank%s passed in %.2f s", sub->name, mp_size,
               mp_size > 1 ? "s" : "", mp_now() - t0);
    return 0;
}
