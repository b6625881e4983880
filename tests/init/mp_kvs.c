/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * mp_kvs.c: weft_init through the caller's key-value store
 * (weft_init_attr_t.kvs), here a folder shared by the ranks
 * (kvs_dir.c), as torch.distributed hands weft its c10d store.
 *
 * Before joining, rank 0 checks the refusals: a kvs without get, a kvs
 * without rank and size, a kvs beside an init method; and a job of two
 * whose rank 1 never comes, which must time out naming rank 1's record.
 * Then every rank joins through the store with the environment's
 * rendezvous made useless (WEFT_INIT_METHOD points at an address that
 * answers nobody): the job must not touch it. The last rank loads fewer
 * transports, so that records of different lengths cross the store. The world then runs an
 * allreduce and a ring of messages, and the store holds the job id and
 * every rank's record under weft's keys.
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/init/kvs_dir.h"
#include "tests/mp/mptest.h"

static int env_int(const char *name)
{
    const char *v = getenv(name);

    if (!v || !*v)
        MP_FAIL("%s is not set: run this under weftrun (tests/mp/run.sh)", name);
    return atoi(v);
}

static void expect_refused(const weft_init_attr_t *attr, const char *word, const char *what)
{
    weft_comm_t world = NULL;
    weft_result_t rc = weft_init(attr, &world);

    MP_ASSERT(rc == WEFT_ERR_INVALID_ARG, "%s: weft_init returned %s", what, mp_rc_name(rc));
    MP_ASSERT(mp_contains(weft_last_error(), word), "%s: the message does not name %s: %s",
              what, word, weft_last_error());
    mp_log("ok: %s refused: %s", what, weft_last_error());
}

static void refusals(const char *dir)
{
    char path[600];
    kvs_dir_t d;
    weft_kvs_t kvs, half;
    weft_init_attr_t attr = WEFT_INIT_ATTR_INITIALIZER;
    weft_comm_t world = NULL;
    weft_result_t rc;
    double t0;

    snprintf(path, sizeof(path), "%s/refusals-%s", dir, getenv("WORLD_SIZE"));
    kvs_dir_open(&d, path);
    kvs = kvs_dir_kvs(&d);
    half = kvs;
    half.get = NULL;
    attr.rank = 0;
    attr.size = 1;
    attr.kvs = &half;
    expect_refused(&attr, "attr->kvs->get", "a store without get");
    attr.kvs = &kvs;
    attr.rank = -1;
    expect_refused(&attr, "attr->rank", "a store without a rank");
    attr.rank = 0;
    attr.init_method = "tcp://127.0.0.1:1";
    expect_refused(&attr, "attr->init_method", "a store beside an init method");
    MP_ASSERT(d.sets == 0 && d.gets == 0, "a refused weft_init used the store (%u sets, %u gets)",
              d.sets, d.gets);

    /* A job of two whose rank 1 never joins. */
    snprintf(path, sizeof(path), "%s/alone-%s", dir, getenv("WORLD_SIZE"));
    kvs_dir_open(&d, path);
    kvs = kvs_dir_kvs(&d);
    attr.init_method = NULL;
    attr.size = 2;
    attr.timeout_ms = 500;
    t0 = mp_now();
    rc = weft_init(&attr, &world);
    MP_ASSERT(rc == WEFT_ERR_TIMEOUT, "rank 1 never joined: weft_init returned %s",
              mp_rc_name(rc));
    MP_ASSERT(mp_contains(weft_last_error(), "rank 1"), "the timeout does not name rank 1: %s",
              weft_last_error());
    MP_ASSERT(mp_now() - t0 < 5, "the timeout of 500 ms took %.1f s", mp_now() - t0);
    mp_log("ok: a rank that never joins: %s", weft_last_error());
}

int main(void)
{
    const char *markers = getenv("WEFT_TEST_MARKER_DIR");
    int rank = env_int("RANK"), size = env_int("WORLD_SIZE"), me, n, right, left;
    char path[600], key[128], job[64];
    kvs_dir_t d;
    weft_kvs_t kvs;
    weft_init_attr_t attr = WEFT_INIT_ATTR_INITIALIZER;
    weft_comm_t world;
    uint64_t sum = 0, mine, got = 0;

    if (!markers || !*markers)
        MP_FAIL("WEFT_TEST_MARKER_DIR is not set: run this through tests/mp/run.sh");
    mp_rank = rank;
    if (rank == 0)
        refusals(markers);

    /* The environment's rendezvous leads nowhere: only the store works. */
    setenv("WEFT_INIT_METHOD", "tcp://192.0.2.1:9", 1);
    /* The last rank loads sockets alone: its record is shorter than the
     * others', which it reads with its own length as first guess, so weft
     * must read them again whole. */
    if (size > 1 && rank == size - 1)
        setenv("WEFT_TRANSPORTS", "sockets", 1);
    /* A store of this job's own: run.sh keeps one marker folder for all
     * its rank counts, and a store that served an earlier weft_init would
     * hand the ranks that job's id. */
    snprintf(path, sizeof(path), "%s/job-%d", markers, size);
    kvs_dir_open(&d, path);
    kvs = kvs_dir_kvs(&d);
    attr.rank = rank;
    attr.size = size;
    attr.kvs = &kvs;
    attr.timeout_ms = 30000;
    MP_CHECK(weft_init(&attr, &world));
    MP_CHECK(weft_comm_rank(world, &me));
    MP_CHECK(weft_comm_size(world, &n));
    MP_ASSERT(me == rank && n == size, "world says rank %d of %d, attr %d of %d", me, n, rank,
              size);
    MP_ASSERT(d.sets >= 1 && d.gets >= (unsigned)size - (rank == 0),
              "the store was barely used: %u sets, %u gets", d.sets, d.gets);
    MP_ASSERT(!(size > 1 && rank == size - 1) || d.truncated > 0,
              "the last rank read every longer record at its own record's length");

    mine = (uint64_t)me + 1;
    MP_CHECK(weft_allreduce(&mine, &sum, 1, WEFT_UINT64, WEFT_SUM, world));
    MP_ASSERT(sum == (uint64_t)n * (n + 1) / 2, "allreduce: %llu", (unsigned long long)sum);
    right = (me + 1) % n;
    left = (me + n - 1) % n;
    mp_sendrecv(&mine, 1, WEFT_UINT64, right, 7, &got, 1, left, 7, world, NULL);
    MP_ASSERT(got == (uint64_t)left + 1, "ring: got %llu from rank %d",
              (unsigned long long)got, left);

    /* weft's keys: the job id, then every rank's record under it. */
    {
        size_t len = 0;
        weft_result_t rc = kvs.get(kvs.ctx, "weft/job", job, sizeof(job) - 1, &len, 0);

        MP_ASSERT(rc == WEFT_SUCCESS, "weft/job: %s", mp_rc_name(rc));
        job[len] = '\0';
    }
    for (int r = 0; r < n; r++) {
        snprintf(key, sizeof(key), "weft/%s/addr/%d", job, r);
        MP_ASSERT(kvs_dir_has(&d, key), "no %s in the store", key);
    }
    if (me == 0)
        mp_log("ok: %d ranks joined through the store (job %s)", n, job);
    MP_CHECK(weft_comm_destroy(world));
    return 0;
}
