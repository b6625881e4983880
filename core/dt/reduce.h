/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * reduce.h: the local reduction kernels, the inner loop of every reducing
 * collective.
 *
 * Semantics (every rank computes the same bits for the same inputs):
 *  - Integers: SUM and PROD wrap around (two's complement), AVG is the
 *    wrapped sum divided by the rank count, truncated toward zero.
 *  - Floating point: MIN and MAX propagate NaN (as torch.minimum/maximum)
 *    and order -0 below +0; the NaN comes back quieted with its payload,
 *    b's when both are NaN. SUM, PROD and AVG give the hardware's IEEE
 *    result in the caller's rounding mode (on x86-64 and aarch64 a NaN
 *    operand's payload, quieted). FLOAT16 and BFLOAT16 are widened to
 *    float32, combined, and rounded back to nearest-even once per element
 *    per step (FLOAT16 whatever the rounding mode), subnormals kept and
 *    overflow going to Inf.
 *  - Bitwise operators are defined on integer types only.
 *  - The kernels are vectorised; every CPU computes the same bits, whichever
 *    of the kernel sets below it runs, and wherever an element lies in the
 *    buffer.
 */
#ifndef WEFT_CORE_REDUCE_H
#define WEFT_CORE_REDUCE_H

#include <stddef.h>
#include <stdint.h>

#include "weft.h"

/* WEFT_SUCCESS if op may reduce dt, else WEFT_ERR_INVALID_ARG with a message. */
weft_result_t weft__reduce_check(weft_dtype_t dt, weft_op_t op);

/* dst[i] = a[i] op b[i] for count elements. dst may be a or b (or both)
 * exactly, but must not partly overlap either; a and b may overlap in any
 * way. The buffers need no particular alignment. AVG combines as SUM
 * (finish with weft__reduce_avg_finish). The pair must have passed
 * weft__reduce_check. Thread safe. */
void weft__reduce(void *dst, const void *a, const void *b, size_t count, weft_dtype_t dt,
                  weft_op_t op);

/* buf[i] /= nranks, after an AVG reduction summed nranks contributions. */
void weft__reduce_avg_finish(void *buf, size_t count, weft_dtype_t dt, int nranks);

/* The kernel set weft__reduce uses: "generic" (any target; SSE2 on x86-64)
 * or, on x86-64 CPUs with AVX2 and F16C, "avx2", chosen on first use. */
const char *weft__reduce_isa(void);

/* For tests and benchmarks: use the named set from now on. Not thread safe
 * against concurrent reductions. WEFT_ERR_INVALID_ARG if no set has that
 * name, WEFT_ERR_UNSUPPORTED if this CPU cannot run it. */
weft_result_t weft__reduce_set_isa(const char *name);

/* Half-precision conversions (round to nearest-even), one element. */
float weft__half_to_float(uint16_t h);
uint16_t weft__float_to_half(float f);
float weft__bf16_to_float(uint16_t b);
uint16_t weft__float_to_bf16(float f);

#endif /* WEFT_CORE_REDUCE_H */
