/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * p2p_stage.h: point-to-point operations on device buffers and on
 * communicators with a CUDA stream (p2p_stage.c says how).
 */
#ifndef WEFT_CORE_API_P2P_STAGE_H
#define WEFT_CORE_API_P2P_STAGE_H

#include "core/comm/comm.h"
#include "core/transport/plugin.h"

/* Whether a call on comm may involve device memory or a stream. */
static inline int weft__p2p_maybe_staged(weft_comm_t comm)
{
    return comm->stream || weft__plugins_device(&comm->inst->wire.plugins);
}

/* Posts n checked operations on comm with their device buffers staged,
 * or queues them on comm's stream: *handled then, with the call's result.
 * Not handled (host buffers only, no stream): the caller posts them. */
weft_result_t weft__p2p_stage_post(weft_comm_t comm, int n, const weft_p2p_op_t *ops,
                                   weft_request_t *req, const char *fn, int *handled);

#endif /* WEFT_CORE_API_P2P_STAGE_H */
