/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * env.h: reading weft's numeric settings from the environment.
 *
 * Each layer reads the variables it uses (progress WEFT_SPIN_US, the
 * algorithms WEFT_COLL_CHUNK, ...) at weft_init, through this one parser,
 * so that every setting is refused the same way when malformed.
 */
#ifndef WEFT_CORE_ENV_H
#define WEFT_CORE_ENV_H

#include "weft.h"

/* The unsigned number in variable name, from min to max, in *out; *out
 * untouched when the variable is unset. WEFT_ERR_INVALID_ARG naming the
 * variable, its value and the range when it is empty, not a number, or
 * out of range. */
weft_result_t weft__env_ullong(const char *name, unsigned long long min, unsigned long long max,
                               unsigned long long *out);

#endif /* WEFT_CORE_ENV_H */
