/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * env.c: numeric settings from the environment (env.h).
 */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "core/base/env.h"
#include "core/base/error.h"

weft_result_t weft__env_ullong(const char *name, unsigned long long min, unsigned long long max,
                               unsigned long long *out)
{
    const char *env = getenv(name);
    unsigned long long v;
    char *end;

    if (!env)
        return WEFT_SUCCESS;
    /* strtoull takes a sign after blanks, wrapping "-1" round to the
     * largest value, and saturates on overflow: neither is the number
     * written. */
    errno = 0;
    v = strtoull(env, &end, 0);
    if (!*env || *end || strchr(env, '-') || errno == ERANGE || v < min || v > max)
        return weft__error(WEFT_ERR_INVALID_ARG, "%s=\"%s\" is not a number from %llu to %llu",
                           name, env, min, max);
    *out = v;
    return WEFT_SUCCESS;
}
