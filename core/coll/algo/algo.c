/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * algo.c: the settings the algorithms read (algo.h).
 */
#include "config.h"

#include <limits.h>
#include <stdint.h>

#include "core/base/env.h"
#include "core/coll/algo/algo.h"

/* Below 4 KiB a chunk's per-message cost dominates. The default lets a
 * 1 MiB block arrive in a few pieces; measured at 4 ranks, 32 MiB, a ring
 * allreduce took 12-16 ms with 64 KiB pieces, 7.6-9.2 ms with 256 KiB and
 * 9.3-9.9 ms with 1 MiB. */
#define CHUNK_MIN 4096
#define CHUNK_DEFAULT (256 * 1024)
/* Unthrottled, a rank of a large job would post 2 (n - 1) operations at
 * once and every peer's messages would land together, unexpected, at each
 * receiver. */
#define A2A_WINDOW_DEFAULT 32

/* Set once by weft__algo_settings_parse; atomic, since threads of other
 * instances may read them meanwhile (all read the same values). */
static size_t chunk = CHUNK_DEFAULT;
static int a2a_window = A2A_WINDOW_DEFAULT;

weft_result_t weft__algo_settings_parse(void)
{
    unsigned long long c = CHUNK_DEFAULT, window = A2A_WINDOW_DEFAULT;
    weft_result_t rc = weft__env_ullong("WEFT_COLL_CHUNK", CHUNK_MIN, SIZE_MAX / 2, &c);

    if (rc == WEFT_SUCCESS)
        rc = weft__env_ullong("WEFT_ALLTOALL_THROTTLE", 0, INT_MAX, &window);
    if (rc != WEFT_SUCCESS)
        return rc;
    __atomic_store_n(&chunk, (size_t)c, __ATOMIC_RELAXED);
    __atomic_store_n(&a2a_window, (int)window, __ATOMIC_RELAXED);
    return WEFT_SUCCESS;
}

size_t weft__algo_chunk_bytes(void)
{
    return __atomic_load_n(&chunk, __ATOMIC_RELAXED);
}

int weft__algo_alltoall_window(void)
{
    return __atomic_load_n(&a2a_window, __ATOMIC_RELAXED);
}
