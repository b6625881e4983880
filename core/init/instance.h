/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * instance.h: what weft_init does besides weft_init, for tools and tests.
 */
#ifndef WEFT_CORE_INIT_INSTANCE_H
#define WEFT_CORE_INIT_INSTANCE_H

#include "weft.h"

/* Every layer's settings from the environment (WEFT_ALGO, WEFT_COLL_CHUNK,
 * WEFT_ALLTOALL_THROTTLE, WEFT_STREAM_THRESHOLD, WEFT_SPIN_US), as
 * weft_init reads them first: WEFT_ERR_INVALID_ARG naming the first
 * malformed one. */
weft_result_t weft__settings_parse(void);

#endif /* WEFT_CORE_INIT_INSTANCE_H */
