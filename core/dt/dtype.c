/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * dtype.c: element sizes of weft's data types.
 */
#include "config.h"

#include "core/base/error.h"
#include "core/dt/dtype.h"

const size_t weft__dtype_sizes[WEFT_DTYPE_COUNT] = {
    [WEFT_INT8] = 1,    [WEFT_UINT8] = 1,    [WEFT_INT32] = 4,   [WEFT_UINT32] = 4,
    [WEFT_INT64] = 8,   [WEFT_UINT64] = 8,   [WEFT_FLOAT16] = 2, [WEFT_BFLOAT16] = 2,
    [WEFT_FLOAT32] = 4, [WEFT_FLOAT64] = 8,
};

WEFT_API weft_result_t weft_dtype_size(weft_dtype_t dt, size_t *bytes)
{
    if ((unsigned)dt >= WEFT_DTYPE_COUNT)
        return weft__error(WEFT_ERR_INVALID_ARG, "dt: %d is not a weft_dtype_t", (int)dt);
    if (!bytes)
        return weft__error(WEFT_ERR_INVALID_ARG, "bytes: NULL");
    *bytes = weft__dtype_sizes[dt];
    return WEFT_SUCCESS;
}
