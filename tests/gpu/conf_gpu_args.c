/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * conf_gpu_args.c: sizes of the buffers a call names, from its arguments,
 * for conf_gpu's wrappers. Every product and sum is checked for overflow:
 * the suite's illegal-argument cases include displacements near SIZE_MAX,
 * and such a call must reach weft as it was made.
 */
#include "config.h"

#include "tests/gpu/conf_gpu.h"

int cg_args_comm(weft_comm_t comm, int *rank, int *size)
{
    if (!comm || weft_comm_rank(comm, rank) != WEFT_SUCCESS ||
        weft_comm_size(comm, size) != WEFT_SUCCESS)
        return -1;
    return 0;
}

int cg_args_root(weft_comm_t comm, int root, int *rank, int *size)
{
    if (cg_args_comm(comm, rank, size) || root < 0 || root >= *size)
        return -1;
    return 0;
}

int cg_args_bytes(weft_dtype_t dt, size_t n, size_t *bytes)
{
    size_t es;

    if (weft_dtype_size(dt, &es) != WEFT_SUCCESS || __builtin_mul_overflow(n, es, bytes))
        return -1;
    return 0;
}

int cg_args_times(size_t bytes, int k, size_t *out)
{
    return k < 0 || __builtin_mul_overflow(bytes, (size_t)k, out) ? -1 : 0;
}

int cg_args_span(const size_t *counts, const size_t *displs, int n, weft_dtype_t dt,
                 size_t *bytes)
{
    size_t end = 0, e;

    if (!counts || !displs)
        return -1;
    for (int i = 0; i < n; i++) {
        if (!counts[i])
            continue;
        if (__builtin_add_overflow(displs[i], counts[i], &e))
            return -1;
        if (e > end)
            end = e;
    }
    return cg_args_bytes(dt, end, bytes);
}

int cg_args_sum(const size_t *counts, int n, weft_dtype_t dt, size_t *bytes)
{
    size_t sum = 0;

    if (!counts)
        return -1;
    for (int i = 0; i < n; i++)
        if (__builtin_add_overflow(sum, counts[i], &sum))
            return -1;
    return cg_args_bytes(dt, sum, bytes);
}

int cg_args_array(int ndims, const size_t *shape, int axis, weft_dtype_t dt, int size,
                  int split, size_t *bytes)
{
    size_t elems = 1;

    if (ndims < 1 || ndims > WEFT_MAX_DIMS || !shape || axis < 0 || axis >= ndims || size < 1)
        return -1;
    if (split && shape[axis] % (size_t)size)
        return -1;
    for (int d = 0; d < ndims; d++)
        if (__builtin_mul_overflow(elems, shape[d], &elems))
            return -1;
    return cg_args_bytes(dt, elems, bytes);
}
