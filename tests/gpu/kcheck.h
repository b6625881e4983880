/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * kcheck.h: the cuda-ipc plugin's GPU reductions (weft__cuda_ipc_reduce,
 * _avg, _scale) compared bit for bit with weft's host kernels
 * (weft__reduce, weft__reduce_avg_finish, weft__op_scale) on the same
 * inputs: every dtype x op, counts 1, 1000 and 65537, random data rich in
 * the values whose rules differ between machines (NaN payloads, quiet and
 * signalling, ±0, ±Inf, subnormals, integer extremes, ties of the
 * half-precision roundings), in place and not.
 *
 * Shared by tests/unit/test_cuda_ipc_reduce (on the CUDA test double)
 * and tests/gpu/kernels_check (on a real GPU), so that both run the same
 * comparisons. Single-threaded; one struct kcheck per process.
 *
 * The one exception allowed, and counted apart: PREMUL_SUM's scaling
 * where both the scalar and the element are NaN. op.c computes k * v in
 * C, and which NaN an x86 multiply returns is its first operand's, which
 * the compiler chooses; the GPU returns the element's, so either NaN,
 * quieted, is accepted there. The comparisons run in the default
 * rounding mode, the only one the GPU kernels have (reduce.cu).
 */
#ifndef WEFT_TESTS_GPU_KCHECK_H
#define WEFT_TESTS_GPU_KCHECK_H

#include <stddef.h>
#include <stdio.h>

#include <cuda.h>

#include "plugins/cuda-common/cudrv.h"
#include "weft/transport.h"

#define KCHECK_MAX_COUNT 65537

struct kcheck {
    const weft_transport_v1_t *tp;
    void *ctx;                          /* the plugin's, from tp->init */
    struct wcu_drv drv;                 /* the test's own handle on the driver */
    CUdevice dev;
    CUcontext primary;
    CUstream stream;
    CUdeviceptr da, db, dd;             /* KCHECK_MAX_COUNT elements of 8 bytes each */
    unsigned char *ha, *hb, *got, *want, *orig;
    unsigned rng;
    FILE *out;                          /* where mismatches are told */
    const char *last_error;             /* what the core's set_error wrote */
    long checks, mismatches, exceptions;
};

/* Starts the plugin (tp->init with core, whose set_error writes the text
 * at last_error), opens the driver for the test, makes the primary
 * context current, allocates the buffers and a stream. Mismatches and
 * failures are told on out. 0, or -1 with why. */
int kcheck_up(struct kcheck *k, const weft_transport_v1_t *tp,
              const weft_transport_core_t *core, const char *last_error, FILE *out,
              char *why, size_t cap);
void kcheck_down(struct kcheck *k);

/* Each returns the mismatches it found (also added to k->mismatches),
 * after telling the first few on k->out; -1 when a call failed (told). */
long kcheck_reduce(struct kcheck *k, weft_dtype_t dt, weft_op_t op, size_t count, int in_place);
long kcheck_avg(struct kcheck *k, weft_dtype_t dt, size_t count, int nranks);
long kcheck_scale(struct kcheck *k, weft_dtype_t dt, size_t count, int which_scalar);

/* Groups of the above. */
#define KCHECK_REDUCE 1
#define KCHECK_AVG 2
#define KCHECK_SCALE 4
#define KCHECK_ALL 7
long kcheck_run(struct kcheck *k, unsigned groups);

const char *kcheck_dtype_name(weft_dtype_t dt);

#endif /* WEFT_TESTS_GPU_KCHECK_H */
