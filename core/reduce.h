/*
 * reduce.h: the local reduction kernels, the inner loop of every reducing
 * collective.
 *
 * Semantics (every rank computes the same bits for the same inputs):
 *  - Integers: SUM and PROD wrap around (two's complement), AVG is the
 *    wrapped sum divided by the rank count, truncated toward zero.
 *  - Floating point: MIN and MAX propagate NaN (as torch.minimum/maximum)
 *    and order -0 below +0. FLOAT16 and BFLOAT16 are widened to float32,
 *    combined, and rounded back to nearest-even once per element per step.
 *  - Bitwise operators are defined on integer types only.
 */
#ifndef WEFT_CORE_REDUCE_H
#define WEFT_CORE_REDUCE_H

#include <stddef.h>
#include <stdint.h>

#include "weft.h"

/* WEFT_SUCCESS if op may reduce dt, else WEFT_ERR_INVALID_ARG with a message. */
weft_result_t weft__reduce_check(weft_dtype_t dt, weft_op_t op);

/* dst[i] = a[i] op b[i] for count elements. dst may alias a or b; the
 * buffers need no particular alignment. AVG combines as SUM (finish with
 * weft__reduce_avg_finish). The pair must have passed weft__reduce_check. */
void weft__reduce(void *dst, const void *a, const void *b, size_t count, weft_dtype_t dt,
                  weft_op_t op);

/* buf[i] /= nranks, after an AVG reduction summed nranks contributions. */
void weft__reduce_avg_finish(void *buf, size_t count, weft_dtype_t dt, int nranks);

/* Half-precision conversions (round to nearest-even). */
float weft__half_to_float(uint16_t h);
uint16_t weft__float_to_half(float f);
float weft__bf16_to_float(uint16_t b);
uint16_t weft__float_to_bf16(float f);

#endif /* WEFT_CORE_REDUCE_H */
