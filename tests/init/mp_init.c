/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * mp_init.c: joins a job through weft_init and reports how it went, for the
 * start-up tests (the .sh tests of tests/init start it by hand, the .mp
 * specs under weftrun).
 *
 *   mp_init [--method URL] [--rank R] [--size S] [--timeout-ms MS]
 *           [--name NAME] [--expect RESULT]
 *
 * Prints "mp_init: result=<RESULT NAME> ... error=<weft_last_error()>". When
 * weft_init succeeds it also prints rank, size, local rank and local size,
 * checks them (world ranks are the identity, every rank of these tests runs
 * on this node, LOCAL_RANK/LOCAL_WORLD_SIZE agree when set) and sends a
 * message around the ring. Exit 0 when weft_init returned the expected
 * result (default WEFT_SUCCESS) and every check passed, 1 otherwise, 2 on a
 * bad command line.
 */
#include "config.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/mp/mptest.h"

#define INIT_TAG 1

static int parse_int(const char *s, const char *what, int *out)
{
    char *end;
    long v;

    errno = 0;
    v = strtol(s, &end, 10);
    if (errno || end == s || *end || v < INT_MIN || v > INT_MAX) {
        fprintf(stderr, "mp_init: %s '%s' is not a number\n", what, s);
        return -1;
    }
    *out = (int)v;
    return 0;
}

static void usage(void)
{
    fputs("usage: mp_init [--method URL] [--rank R] [--size S] [--timeout-ms MS]\n"
          "               [--name NAME] [--expect RESULT]\n", stderr);
}

/* A variable of the environment as a number, or fallback. */
static int env_int(const char *name, int fallback)
{
    const char *s = getenv(name);
    int v;

    if (!s || !*s || parse_int(s, name, &v) != 0)
        return fallback;
    return v;
}

static void check_world(weft_comm_t world)
{
    int rank, size, lrank, lsize, *ranks;

    MP_CHECK(weft_comm_rank(world, &rank));
    MP_CHECK(weft_comm_size(world, &size));
    MP_CHECK(weft_comm_local_rank(world, &lrank));
    MP_CHECK(weft_comm_local_size(world, &lsize));
    mp_rank = rank;
    mp_size = size;
    printf("mp_init: rank=%d size=%d local_rank=%d local_size=%d\n", rank, size, lrank, lsize);
    fflush(stdout);

    MP_ASSERT(size >= 1 && rank >= 0 && rank < size, "rank %d of %d", rank, size);
    ranks = mp_alloc(sizeof(int) * (size_t)size);
    MP_CHECK(weft_comm_world_ranks(world, ranks));
    for (int i = 0; i < size; i++)
        MP_ASSERT(ranks[i] == i, "weft_comm_world_ranks: entry %d is %d", i, ranks[i]);
    free(ranks);

    /* Every rank of these tests runs on this machine. */
    MP_ASSERT(lsize == size && lrank == rank,
              "local rank %d of %d on a node holding all %d ranks (expected %d of %d)", lrank,
              lsize, size, rank, size);
    MP_ASSERT(env_int("LOCAL_RANK", lrank) == lrank, "local rank %d, LOCAL_RANK=%s", lrank,
              getenv("LOCAL_RANK"));
    MP_ASSERT(env_int("LOCAL_WORLD_SIZE", lsize) == lsize, "local size %d, LOCAL_WORLD_SIZE=%s",
              lsize, getenv("LOCAL_WORLD_SIZE"));

    /* The communicator carries messages: one lap around the ring. */
    {
        int right = (rank + 1) % size, left = (rank + size - 1) % size;
        int32_t out = 1000 + rank, in = -1;
        weft_status_t st;

        mp_sendrecv(&out, 1, WEFT_INT32, right, INIT_TAG, &in, 1, left, INIT_TAG, world, &st);
        MP_ASSERT(in == 1000 + left && st.source == left,
                  "ring: got %d from rank %d, expected %d from rank %d", (int)in, st.source,
                  1000 + left, left);
    }
    mp_barrier(world);
}

int main(int argc, char **argv)
{
    weft_init_attr_t attr = WEFT_INIT_ATTR_INITIALIZER;
    weft_comm_t world = NULL;
    weft_result_t rc;
    int expect = WEFT_SUCCESS;
    double t0;

    for (int i = 1; i < argc; i++) {
        const char *opt = argv[i], *val = i + 1 < argc ? argv[i + 1] : NULL;

        if (!val) {
            usage();
            return 2;
        }
        i++;
        if (strcmp(opt, "--method") == 0) {
            attr.init_method = val;
        } else if (strcmp(opt, "--rank") == 0) {
            if (parse_int(val, opt, &attr.rank))
                return 2;
        } else if (strcmp(opt, "--size") == 0) {
            if (parse_int(val, opt, &attr.size))
                return 2;
        } else if (strcmp(opt, "--timeout-ms") == 0) {
            if (parse_int(val, opt, &attr.timeout_ms))
                return 2;
        } else if (strcmp(opt, "--name") == 0) {
            attr.name = val;
        } else if (strcmp(opt, "--expect") == 0) {
            expect = mp_rc_from_name(val);
            if (expect < 0) {
                fprintf(stderr, "mp_init: --expect %s is not a weft_result_t name\n", val);
                return 2;
            }
        } else {
            usage();
            return 2;
        }
    }

    t0 = mp_now();
    rc = weft_init(&attr, &world);
    {
        char err[1024];

        snprintf(err, sizeof(err), "%s", weft_last_error());
        printf("mp_init: result=%s elapsed=%.2f error=%s\n", mp_rc_name(rc), mp_now() - t0,
               rc == WEFT_SUCCESS ? "" : err);
        fflush(stdout);
        if (rc != (weft_result_t)expect) {
            fprintf(stderr, "mp_init: weft_init returned %s, expected %s: %s\n",
                    mp_rc_name(rc), mp_rc_name((weft_result_t)expect), err);
            if (rc == WEFT_SUCCESS)
                weft_comm_destroy(world);
            return 1;
        }
        if (rc != WEFT_SUCCESS) {
            MP_ASSERT(err[0] != '\0', "weft_init failed with %s but weft_last_error() is empty",
                      mp_rc_name(rc));
            return 0;
        }
    }

    MP_ASSERT(world != NULL, "weft_init succeeded but left world NULL");
    check_world(world);
    MP_CHECK(weft_comm_destroy(world));
    printf("mp_init: rank %d of %d ok\n", mp_rank, mp_size);
    return 0;
}
