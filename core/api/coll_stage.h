/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * coll_stage.h: collectives on device buffers and on communicators with a
 * CUDA stream (coll_stage.c says how).
 */
#ifndef WEFT_CORE_API_COLL_STAGE_H
#define WEFT_CORE_API_COLL_STAGE_H

#include "core/coll/coll.h"
#include "core/comm/comm.h"

/* Chooses c's algorithm for bytes (weft__tune_choose) and starts it: at
 * once where no device memory or stream is involved, else with its device
 * buffers staged through host memory, or queued on comm's stream. Frees
 * c on failure. */
weft_result_t weft__coll_launch_tuned(weft_comm_t comm, weft__coll_t *c, weft__coll_kind_t kind,
                                      size_t bytes, int even, weft_request_t *req);
/* The same for a c whose algorithm the caller set. */
weft_result_t weft__coll_launch(weft_comm_t comm, weft__coll_t *c, weft__coll_kind_t kind,
                                weft_request_t *req);

#endif /* WEFT_CORE_API_COLL_STAGE_H */
