/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * dtype.h: element sizes of weft's data types.
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

#endif /* WEFT_CORE_DTYPE_H */
