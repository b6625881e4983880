/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * event.c: events. Recording an event queues an empty operation on the
 * stream and remembers (stream, its sequence number): the event has
 * completed when the stream has run that far, so it captures all work
 * queued before it (on the NULL stream, by the legacy rule, the blocking
 * streams' work too). An event never recorded counts as completed.
 * cuStreamWaitEvent makes a stream's next operation wait for that point.
 * Re-recording moves the event; waits already queued keep the old point,
 * as the reference says. No timing (cuEventElapsedTime is absent).
 */
#include "config.h"

#include <stdlib.h>

#include "tests/fakecuda/fakecuda.h"

static bool valid(CUevent e)
{
    return e && e->magic == FC_MAGIC_EVENT;
}

FC_API CUresult cuEventCreate(CUevent *phEvent, unsigned int Flags)
{
    FC_FAULT("cuEventCreate");
    CUresult r = fc_ctx_ready(NULL);
    if (r)
        return r;
    unsigned known = CU_EVENT_BLOCKING_SYNC | CU_EVENT_DISABLE_TIMING | CU_EVENT_INTERPROCESS;
    if (!phEvent || (Flags & ~known))
        return CUDA_ERROR_INVALID_VALUE;
    /* an interprocess event must also disable timing */
    if ((Flags & CU_EVENT_INTERPROCESS) && !(Flags & CU_EVENT_DISABLE_TIMING))
        return CUDA_ERROR_INVALID_VALUE;
    struct CUevent_st *e = calloc(1, sizeof(*e));
    if (!e)
        return CUDA_ERROR_OUT_OF_MEMORY;
    e->magic = FC_MAGIC_EVENT;
    e->flags = Flags;
    *phEvent = e;
    return CUDA_SUCCESS;
}

FC_API CUresult cuEventDestroy_v2(CUevent hEvent)
{
    FC_FAULT("cuEventDestroy_v2");
    CUresult r = fc_ctx_ready(NULL);
    if (r)
        return r;
    if (!valid(hEvent))
        return CUDA_ERROR_INVALID_HANDLE;
    hEvent->magic = FC_MAGIC_DEAD;
    free(hEvent);
    return CUDA_SUCCESS;
}

FC_API CUresult cuEventRecord(CUevent hEvent, CUstream hStream)
{
    FC_FAULT("cuEventRecord");
    struct CUctx_st *ctx;
    CUresult r = fc_ctx_ready(&ctx);
    if (r)
        return r;
    if (!valid(hEvent))
        return CUDA_ERROR_INVALID_HANDLE;
    struct CUstream_st *s;
    if ((r = fc_stream_get(hStream, ctx, &s)))
        return r;
    struct fc_op nop = { .kind = FC_OP_NOP };
    uint64_t seq;
    if ((r = fc_enqueue(s, &nop, &seq)))
        return r;
    hEvent->stream = s;
    hEvent->seq = seq;
    return CUDA_SUCCESS;
}

FC_API CUresult cuEventQuery(CUevent hEvent)
{
    FC_FAULT("cuEventQuery");
    CUresult r = fc_ctx_ready(NULL);
    if (r)
        return r;
    if (!valid(hEvent))
        return CUDA_ERROR_INVALID_HANDLE;
    if (hEvent->stream && fc_stream_done(hEvent->stream) < hEvent->seq)
        return CUDA_ERROR_NOT_READY;
    return CUDA_SUCCESS;
}

FC_API CUresult cuEventSynchronize(CUevent hEvent)
{
    FC_FAULT("cuEventSynchronize");
    CUresult r = fc_ctx_ready(NULL);
    if (r)
        return r;
    if (!valid(hEvent))
        return CUDA_ERROR_INVALID_HANDLE;
    if (hEvent->stream)
        fc_stream_wait(hEvent->stream, hEvent->seq);
    return CUDA_SUCCESS;
}

FC_API CUresult cuStreamWaitEvent(CUstream hStream, CUevent hEvent, unsigned int Flags)
{
    FC_FAULT("cuStreamWaitEvent");
    struct CUctx_st *ctx;
    CUresult r = fc_ctx_ready(&ctx);
    if (r)
        return r;
    if (!valid(hEvent))
        return CUDA_ERROR_INVALID_HANDLE;
    if (Flags & ~(unsigned)CU_EVENT_WAIT_EXTERNAL)
        return CUDA_ERROR_INVALID_VALUE;
    struct CUstream_st *s;
    if ((r = fc_stream_get(hStream, ctx, &s)))
        return r;
    if (!hEvent->stream)
        return CUDA_SUCCESS;
    struct fc_dep dep = { hEvent->stream, hEvent->seq };
    struct fc_op nop = { .kind = FC_OP_NOP, .ndeps = 1, .deps = &dep };
    return fc_enqueue(s, &nop, NULL);
}
