/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * reduce_cu_host.cc: the cuda-ipc plugin's GPU kernels
 * (plugins/cuda-ipc/kernels/reduce.cu) compiled for the host, for
 * test_reduce_cu: CUDA's qualifiers are dropped, its bit-cast intrinsics
 * are memcpy, and the thread's place in the grid is a pair of globals the
 * test sets before each call, one call per thread of the grid it plays.
 * nvcc -x c++ builds it (no C++ compiler is asked of configure: nvcc
 * brings its host compiler). It checks reduce.cu's logic, not the GPU's
 * arithmetic, which only tests/gpu/kernels_check sees.
 */
#include <stdint.h>
#include <string.h>

#define __global__
#define __device__

struct cuhost_dim {
    unsigned x, y, z;
};

static cuhost_dim blockIdx, threadIdx, blockDim, gridDim;

static inline unsigned __float_as_uint(float f)
{
    unsigned u;

    memcpy(&u, &f, 4);
    return u;
}

static inline int __float_as_int(float f)
{
    int u;

    memcpy(&u, &f, 4);
    return u;
}

static inline float __uint_as_float(unsigned u)
{
    float f;

    memcpy(&f, &u, 4);
    return f;
}

static inline float __int_as_float(int u)
{
    float f;

    memcpy(&f, &u, 4);
    return f;
}

static inline long long __double_as_longlong(double d)
{
    long long u;

    memcpy(&u, &d, 8);
    return u;
}

static inline double __longlong_as_double(long long u)
{
    double d;

    memcpy(&d, &u, 8);
    return d;
}

#include "plugins/cuda-ipc/kernels/reduce.cu"

/* The next call runs as thread (block, thread) of a grid of grid blocks
 * of block threads each. */
extern "C" void cuhost_place(unsigned block, unsigned thread, unsigned grid, unsigned threads)
{
    blockIdx.x = block;
    threadIdx.x = thread;
    gridDim.x = grid;
    blockDim.x = threads;
}
