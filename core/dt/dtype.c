/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * dtype.c: element sizes and names of weft's data types and operators.
 */
#include "config.h"

#include "core/base/error.h"
#include "core/dt/dtype.h"

const size_t weft__dtype_sizes[WEFT_DTYPE_COUNT] = {
    [WEFT_INT8] = 1,    [WEFT_UINT8] = 1,    [WEFT_INT32] = 4,   [WEFT_UINT32] = 4,
    [WEFT_INT64] = 8,   [WEFT_UINT64] = 8,   [WEFT_FLOAT16] = 2, [WEFT_BFLOAT16] = 2,
    [WEFT_FLOAT32] = 4, [WEFT_FLOAT64] = 8,
};

static const char *const dtype_names[WEFT_DTYPE_COUNT] = {
    [WEFT_INT8] = "WEFT_INT8",       [WEFT_UINT8] = "WEFT_UINT8",
    [WEFT_INT32] = "WEFT_INT32",     [WEFT_UINT32] = "WEFT_UINT32",
    [WEFT_INT64] = "WEFT_INT64",     [WEFT_UINT64] = "WEFT_UINT64",
    [WEFT_FLOAT16] = "WEFT_FLOAT16", [WEFT_BFLOAT16] = "WEFT_BFLOAT16",
    [WEFT_FLOAT32] = "WEFT_FLOAT32", [WEFT_FLOAT64] = "WEFT_FLOAT64",
};

static const char *const op_names[] = {
    [WEFT_SUM] = "WEFT_SUM", [WEFT_PROD] = "WEFT_PROD", [WEFT_MIN] = "WEFT_MIN",
    [WEFT_MAX] = "WEFT_MAX", [WEFT_AVG] = "WEFT_AVG",   [WEFT_BAND] = "WEFT_BAND",
    [WEFT_BOR] = "WEFT_BOR", [WEFT_BXOR] = "WEFT_BXOR",
};

const char *weft__dtype_name(int dt)
{
    return (unsigned)dt < WEFT_DTYPE_COUNT ? dtype_names[dt] : NULL;
}

const char *weft__op_name(int op)
{
    return (unsigned)op < sizeof(op_names) / sizeof(op_names[0]) ? op_names[op] : NULL;
}

WEFT_API weft_result_t weft_dtype_size(weft_dtype_t dt, size_t *bytes)
{
    if ((unsigned)dt >= WEFT_DTYPE_COUNT)
        return weft__error(WEFT_ERR_INVALID_ARG, "dt: %d is not a weft_dtype_t", (int)dt);
    if (!bytes)
        return weft__error(WEFT_ERR_INVALID_ARG, "bytes: NULL");
    *bytes = weft__dtype_sizes[dt];
    return WEFT_SUCCESS;
}
