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
 * Interprocess events (CU_EVENT_INTERPROCESS) keep their state in a page
 * other processes map instead (ipc_event.c says how).
 */
#include "config.h"

#include <stdlib.h>
#include <time.h>

#include "tests/fakecuda/fakecuda.h"

static bool valid(CUevent e)
{
    return e && e->magic == FC_MAGIC_EVENT;
}

/* Whether an interprocess event's record number TARGET has completed
 * (the counters wrap: compared as the GEQ memop compares). */
static bool word_reached(const struct fc_event_word *w, uint32_t target)
{
    return (int32_t)(__atomic_load_n(&w->completed, __ATOMIC_ACQUIRE) - target) >= 0;
}

static uint32_t word_recorded(const struct fc_event_word *w)
{
    return __atomic_load_n(&w->recorded, __ATOMIC_ACQUIRE);
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
    e->word_fd = -1;
    if ((Flags & CU_EVENT_INTERPROCESS) && (r = fc_event_word_new(e))) {
        free(e);
        return r;
    }
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
    if (hEvent->word)
        fc_event_word_free(hEvent);
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
    if (hEvent->word) {
        /* the record's number, written when the stream gets there */
        nop.kind = FC_OP_WRITE32;
        nop.dst = &hEvent->word->completed;
        nop.n = 4;
        nop.value = __atomic_add_fetch(&hEvent->word->recorded, 1, __ATOMIC_ACQ_REL);
    }
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
    if (hEvent->word)
        return word_reached(hEvent->word, word_recorded(hEvent->word)) ? CUDA_SUCCESS
                                                                       : CUDA_ERROR_NOT_READY;
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
    if (hEvent->word) {
        /* another process may complete it: poll, as memop waits do */
        uint32_t target = word_recorded(hEvent->word);
        while (!word_reached(hEvent->word, target)) {
            struct timespec ts = { 0, 20000 };
            nanosleep(&ts, NULL);
        }
    } else if (hEvent->stream) {
        fc_stream_wait(hEvent->stream, hEvent->seq);
    }
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
    if (hEvent->word) {
        uint32_t target = word_recorded(hEvent->word);
        if (word_reached(hEvent->word, target))
            return CUDA_SUCCESS;
        struct fc_op wait = { .kind = FC_OP_WAIT32, .dst = &hEvent->word->completed, .n = 4,
                              .value = target, .flags = CU_STREAM_WAIT_VALUE_GEQ };
        return fc_enqueue(s, &wait, NULL);
    }
    if (!hEvent->stream)
        return CUDA_SUCCESS;
    struct fc_dep dep = { hEvent->stream, hEvent->seq };
    struct fc_op nop = { .kind = FC_OP_NOP, .ndeps = 1, .deps = &dep };
    return fc_enqueue(s, &nop, NULL);
}
