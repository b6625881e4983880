/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * op.h: reduction operators beyond the built-in ones: PREMUL_SUM handles.
 *
 * A PREMUL_SUM operator is a weft_op_t value outside the built-in range
 * naming a slot of a process-wide table (scalar and dtype), with a
 * generation number so that a freed handle is recognised as such even
 * after its slot is reused.
 */
#ifndef WEFT_CORE_OP_H
#define WEFT_CORE_OP_H

#include <stddef.h>

#include "weft.h"

/* Checks that op may reduce dt. For a PREMUL_SUM handle *scalar receives
 * its scalar (one element of dt) and *is_premul is set; otherwise the pair
 * must pass weft__reduce_check. Errors name fn. */
weft_result_t weft__op_check(const char *fn, weft_dtype_t dt, weft_op_t op,
                             unsigned char scalar[8], int *is_premul);

/* dst[i] = scalar * src[i] (wrapping for integers; float32 arithmetic
 * rounded once for FLOAT16/BFLOAT16). dst may equal src. */
void weft__op_scale(void *dst, const void *src, size_t count, weft_dtype_t dt,
                    const unsigned char scalar[8]);

#endif /* WEFT_CORE_OP_H */
