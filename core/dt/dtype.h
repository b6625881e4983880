/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * dtype.h: element sizes and names of weft's data types and operators.
 */
#ifndef WEFT_CORE_DTYPE_H
#define WEFT_CORE_DTYPE_H

#include <stddef.h>

#include "weft.h"

/* Element size of dt, 0 for an invalid type. */
extern const size_t weft__dtype_sizes[WEFT_DTYPE_COUNT];

static inline size_t weft__dtype_bytes(weft_dtype_t dt)
{
    return (unsigned)dt < WEFT_DTYPE_COUNT ? weft__dtype_sizes[dt] : 0;
}

/* "WEFT_INT32", as the header spells it, for messages; NULL for a value
 * that is no type. */
const char *weft__dtype_name(int dt);
/* "WEFT_SUM" ... "WEFT_BXOR" for the built-in operators, NULL otherwise
 * (a PREMUL_SUM handle is a number of its own process). */
const char *weft__op_name(int op);

#endif /* WEFT_CORE_DTYPE_H */
