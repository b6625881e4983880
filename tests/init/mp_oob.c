/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * mp_oob.c: the out-of-band exchange the core gives transport plugins
 * (weft_transport_core_t's oob_put and oob_get), under whatever bootstrap
 * started the job: weft's store under weftrun, PMIx's publish and lookup
 * under mpirun, the caller's key-value store (mp_oob kvs: the values then
 * go through it, which the test checks). Every rank publishes a key and reads its right
 * neighbour's; a key nobody publishes times out within its deadline,
 * naming the key; a buffer too small for the value is
 * WEFT_ERR_TRUNCATED. A white-box test: it reaches the services through
 * the world communicator's instance, as a plugin holds them.
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/comm/comm.h"
#include "tests/init/kvs_dir.h"
#include "tests/mp/mptest.h"

int main(int argc, char **argv)
{
    const weft_transport_core_t *core;
    weft_comm_t world;
    char key[64], want[64], got[64];
    size_t len = 0;
    double t0, t1;
    weft_result_t rc;
    weft_init_attr_t attr = WEFT_INIT_ATTR_INITIALIZER;
    kvs_dir_t d;
    weft_kvs_t kvs;
    unsigned sets;

    if (argc > 1 && !strcmp(argv[1], "kvs")) {
        /* Joined through the caller's store (a folder: kvs_dir.c). */
        const char *markers = getenv("WEFT_TEST_MARKER_DIR"), *size = getenv("WORLD_SIZE");
        char path[600];

        if (!markers || !getenv("RANK") || !size)
            MP_FAIL("mp_oob kvs: run it through tests/mp/run.sh under weftrun");
        snprintf(path, sizeof(path), "%s/oob-kvs-%s", markers, size);
        kvs_dir_open(&d, path);
        kvs = kvs_dir_kvs(&d);
        attr.rank = atoi(getenv("RANK"));
        attr.size = atoi(size);
        attr.kvs = &kvs;
    } else if (argc > 1) {
        MP_FAIL("usage: mp_oob [kvs]");
    }
    MP_CHECK(weft_init(attr.kvs ? &attr : NULL, &world));
    MP_CHECK(weft_comm_rank(world, &mp_rank));
    MP_CHECK(weft_comm_size(world, &mp_size));
    core = &world->inst->wire.core;

    snprintf(key, sizeof(key), "test.oob.%d", mp_rank);
    snprintf(want, sizeof(want), "rank %d of %d", mp_rank, mp_size);
    sets = attr.kvs ? d.sets : 0;
    MP_CHECK(core->oob_put(core->core_ctx, key, want, strlen(want) + 1));
    MP_ASSERT(!attr.kvs || d.sets == sets + 1, "the out-of-band value did not go through the "
              "caller's store (%u values before, %u after)", sets, d.sets);

    snprintf(key, sizeof(key), "test.oob.%d", (mp_rank + 1) % mp_size);
    snprintf(want, sizeof(want), "rank %d of %d", (mp_rank + 1) % mp_size, mp_size);
    MP_CHECK(core->oob_get(core->core_ctx, key, got, sizeof(got), &len, 20000));
    MP_ASSERT(len == strlen(want) + 1 && !memcmp(got, want, len),
              "%s holds '%.*s' (%zu bytes), not '%s'", key, (int)len, got, len, want);

    rc = core->oob_get(core->core_ctx, key, got, 4, &len, 20000);
    MP_ASSERT(rc == WEFT_ERR_TRUNCATED, "a 4-byte buffer for %s gave %s", key, mp_rc_name(rc));

    t0 = mp_now();
    rc = core->oob_get(core->core_ctx, "test.oob.nobody", got, sizeof(got), &len, 300);
    t1 = mp_now();
    MP_ASSERT(rc == WEFT_ERR_TIMEOUT, "a key nobody publishes gave %s", mp_rc_name(rc));
    /* The deadline is kept in whole milliseconds: it may end up to one
     * early by this clock (0.299 s was seen). */
    MP_ASSERT(t1 - t0 >= 0.298 && t1 - t0 < 10, "the 300 ms wait took %.3f s", t1 - t0);
    MP_ASSERT(strstr(weft_last_error(), "test.oob.nobody") != NULL,
              "the timeout does not name the key: %s", weft_last_error());

    mp_log("out-of-band exchange with rank %d passed", (mp_rank + 1) % mp_size);
    MP_CHECK(weft_comm_destroy(world));
    return 0;
}
