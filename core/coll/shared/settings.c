/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * settings.c: the setting the shared collectives read (shared.h).
 */
#include "config.h"

#include <limits.h>

#include "core/base/env.h"
#include "core/coll/shared/shared.h"

/* Streaming output stores: from the last-level cache's size unless set. */
#define STREAM_UNSET ULLONG_MAX
#define STREAM_NO_LLC (32ull << 20)

/* Set once by weft__shared_settings_parse; atomic, since threads of other
 * instances may read it meanwhile (all read the same value). */
static unsigned long long stream = STREAM_UNSET;

weft_result_t weft__shared_settings_parse(void)
{
    unsigned long long v = STREAM_UNSET;
    weft_result_t rc = weft__env_ullong("WEFT_STREAM_THRESHOLD", 0, STREAM_UNSET - 1, &v);

    if (rc != WEFT_SUCCESS)
        return rc;
    __atomic_store_n(&stream, v, __ATOMIC_RELAXED);
    return WEFT_SUCCESS;
}

unsigned long long weft__shared_stream_default(unsigned long long llc_size)
{
    return llc_size ? llc_size : STREAM_NO_LLC;
}

unsigned long long weft__shared_stream_threshold(unsigned long long llc_size)
{
    unsigned long long set = __atomic_load_n(&stream, __ATOMIC_RELAXED);

    return set != STREAM_UNSET ? set : weft__shared_stream_default(llc_size);
}
