/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * stream.c: streams. Each stream is a worker thread that runs its
 * operations one after the other, in the order they were queued, so
 * that the host sees them complete asynchronously, as a GPU's copy
 * engine would: a program that reads a result before synchronising
 * reads it too early here too (WEFT_FAKECUDA_DELAY_US widens the gap).
 *
 * An operation may wait for other streams first (struct fc_dep: until
 * that stream has completed that many operations). Events and
 * cuStreamWaitEvent use this, and so does the legacy NULL stream: an
 * operation queued on it waits for everything already queued on every
 * blocking stream of the context, and an operation queued on a
 * blocking stream waits for everything already queued on the NULL
 * stream. Streams made with CU_STREAM_NON_BLOCKING take no part. That
 * is the legacy default stream's rule as the reference states it; the
 * per-thread default stream (CU_STREAM_PER_THREAD) is not emulated and
 * is refused with CUDA_ERROR_NOT_SUPPORTED.
 *
 * Streams are never freed: cuStreamDestroy returns at once, the thread
 * ends when the queue is drained, and the husk stays so that an event
 * or a dependency that names it stays valid. Synchronous copies are
 * operations on the NULL stream that the caller waits for.
 */
#include "config.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "tests/fakecuda/fakecuda.h"

uint64_t fc_stream_done(struct CUstream_st *s)
{
    pthread_mutex_lock(&s->lock);
    uint64_t d = s->done;
    pthread_mutex_unlock(&s->lock);
    return d;
}

void fc_stream_wait(struct CUstream_st *s, uint64_t seq)
{
    pthread_mutex_lock(&s->lock);
    while (s->done < seq)
        pthread_cond_wait(&s->cond, &s->lock);
    pthread_mutex_unlock(&s->lock);
}

static bool wait_value_met(uint32_t v, uint32_t value, unsigned flags)
{
    switch (flags & 0xf) {
    case CU_STREAM_WAIT_VALUE_GEQ: return (int32_t)(v - value) >= 0;
    case CU_STREAM_WAIT_VALUE_EQ: return v == value;
    case CU_STREAM_WAIT_VALUE_AND: return (v & value) != 0;
    case CU_STREAM_WAIT_VALUE_NOR: return ~(v | value) != 0;
    }
    return true;
}

static void run(struct CUstream_st *s, struct fc_op *op)
{
    for (int i = 0; i < op->ndeps; i++)
        fc_stream_wait(op->deps[i].stream, op->deps[i].seq);
    if (fc.delay_us)
        usleep((useconds_t)(rand_r(&s->seed) % (fc.delay_us + 1)));
    switch (op->kind) {
    case FC_OP_NOP:
        break;
    case FC_OP_COPY:
        memmove(op->dst, op->src, op->n);
        break;
    case FC_OP_SET8:
        memset(op->dst, (int)op->value, op->n);
        break;
    case FC_OP_WRITE32:
        __atomic_store_n((uint32_t *)op->dst, op->value, __ATOMIC_SEQ_CST);
        break;
    case FC_OP_KERNEL:
        fc_kernel_run(op->launch);
        break;
    case FC_OP_WAIT32:
        /* the word may be written by another process or the host: poll */
        while (!wait_value_met(__atomic_load_n((uint32_t *)op->dst, __ATOMIC_ACQUIRE),
                               op->value, op->flags)) {
            struct timespec ts = { 0, 20000 };
            nanosleep(&ts, NULL);
        }
        break;
    }
}

static void *worker(void *arg)
{
    struct CUstream_st *s = arg;
    pthread_mutex_lock(&s->lock);
    s->started = true;
    pthread_cond_broadcast(&s->cond);
    for (;;) {
        while (!s->head && !s->destroyed)
            pthread_cond_wait(&s->cond, &s->lock);
        if (!s->head)
            break;
        struct fc_op *op = s->head;
        pthread_mutex_unlock(&s->lock);
        run(s, op);
        pthread_mutex_lock(&s->lock);
        s->head = op->next;
        if (!s->head)
            s->tail = NULL;
        s->done++;
        pthread_cond_broadcast(&s->cond);
        free(op->deps);
        free(op->launch);
        free(op);
    }
    pthread_mutex_unlock(&s->lock);
    return NULL;
}

static CUresult stream_new(struct CUctx_st *ctx, unsigned flags, bool legacy,
                           struct CUstream_st **out)
{
    struct CUstream_st *s = calloc(1, sizeof(*s));
    if (!s)
        return CUDA_ERROR_OUT_OF_MEMORY;
    s->magic = FC_MAGIC_STREAM;
    s->ctx = ctx;
    s->flags = flags;
    s->legacy = legacy;
    s->seed = (unsigned)(uintptr_t)s ^ (unsigned)time(NULL);
    pthread_mutex_init(&s->lock, NULL);
    pthread_cond_init(&s->cond, NULL);
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
    int e = pthread_create(&s->thread, &attr, worker, s);
    pthread_attr_destroy(&attr);
    if (e) {
        free(s);
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    /* The stream is handed out once its worker runs its own code: a
     * thread still in its start-up (the C library's, a sanitizer
     * runtime's: both allocate) when the program forks would leave the
     * child allocator locks that nobody will release. */
    pthread_mutex_lock(&s->lock);
    while (!s->started)
        pthread_cond_wait(&s->cond, &s->lock);
    pthread_mutex_unlock(&s->lock);
    *out = s;
    return CUDA_SUCCESS;
}

CUresult fc_stream_get(CUstream h, struct CUctx_st *ctx, struct CUstream_st **out)
{
    if (h == CU_STREAM_PER_THREAD)
        return CUDA_ERROR_NOT_SUPPORTED;
    if (h && h != CU_STREAM_LEGACY) {
        if (h->magic != FC_MAGIC_STREAM)
            return CUDA_ERROR_INVALID_HANDLE;
        *out = h;
        return CUDA_SUCCESS;
    }
    CUresult r = CUDA_SUCCESS;
    pthread_mutex_lock(&fc.lock);
    if (!ctx->legacy && !(r = stream_new(ctx, 0, true, &ctx->legacy))) {
        ctx->legacy->next = ctx->streams;
        ctx->streams = ctx->legacy;
    }
    *out = ctx->legacy;
    pthread_mutex_unlock(&fc.lock);
    return r;
}

static bool blocking(const struct CUstream_st *s)
{
    return !s->legacy && !(s->flags & CU_STREAM_NON_BLOCKING);
}

static uint64_t queued(struct CUstream_st *s)
{
    pthread_mutex_lock(&s->lock);
    uint64_t q = s->queued;
    pthread_mutex_unlock(&s->lock);
    return q;
}

CUresult fc_enqueue(struct CUstream_st *s, const struct fc_op *tmpl, uint64_t *seq)
{
    struct fc_op *op = malloc(sizeof(*op));
    if (!op)
        return CUDA_ERROR_OUT_OF_MEMORY;
    *op = *tmpl;
    op->next = NULL;
    /* the legacy stream's implicit dependencies, then the caller's */
    pthread_mutex_lock(&fc.lock);
    int n = 0;
    for (struct CUstream_st *t = s->ctx->streams; t; t = t->next)
        n++;
    op->deps = malloc(sizeof(*op->deps) * (size_t)(n + tmpl->ndeps + 1));
    if (!op->deps) {
        pthread_mutex_unlock(&fc.lock);
        free(op);
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    op->ndeps = 0;
    for (struct CUstream_st *t = s->ctx->streams; t; t = t->next)
        if ((s->legacy && blocking(t)) || (blocking(s) && t->legacy))
            op->deps[op->ndeps++] = (struct fc_dep){ t, queued(t) };
    pthread_mutex_unlock(&fc.lock);
    for (int i = 0; i < tmpl->ndeps; i++)
        op->deps[op->ndeps++] = tmpl->deps[i];

    pthread_mutex_lock(&s->lock);
    if (s->tail)
        s->tail->next = op;
    else
        s->head = op;
    s->tail = op;
    uint64_t q = ++s->queued;
    pthread_cond_broadcast(&s->cond);
    pthread_mutex_unlock(&s->lock);
    if (seq)
        *seq = q;
    return CUDA_SUCCESS;
}

FC_API CUresult cuStreamCreate(CUstream *phStream, unsigned int Flags)
{
    FC_FAULT("cuStreamCreate");
    struct CUctx_st *ctx;
    CUresult r = fc_ctx_ready(&ctx);
    if (r)
        return r;
    if (!phStream || (Flags & ~(unsigned)CU_STREAM_NON_BLOCKING))
        return CUDA_ERROR_INVALID_VALUE;
    struct CUstream_st *s;
    if ((r = stream_new(ctx, Flags, false, &s)))
        return r;
    pthread_mutex_lock(&fc.lock);
    s->next = ctx->streams;
    ctx->streams = s;
    pthread_mutex_unlock(&fc.lock);
    *phStream = s;
    return CUDA_SUCCESS;
}

FC_API CUresult cuStreamDestroy_v2(CUstream hStream)
{
    FC_FAULT("cuStreamDestroy_v2");
    CUresult r = fc_ctx_ready(NULL);
    if (r)
        return r;
    if (!hStream || hStream == CU_STREAM_LEGACY || hStream == CU_STREAM_PER_THREAD ||
        hStream->magic != FC_MAGIC_STREAM)
        return CUDA_ERROR_INVALID_HANDLE;
    pthread_mutex_lock(&hStream->lock);
    hStream->magic = FC_MAGIC_DEAD;
    hStream->destroyed = true;
    pthread_cond_broadcast(&hStream->cond);
    pthread_mutex_unlock(&hStream->lock);
    return CUDA_SUCCESS;
}

/* The NULL stream's own queue may be empty while blocking streams are
 * busy: a synchronisation with it is an operation on it, which waits
 * for them by the rule above. */
FC_API CUresult cuStreamSynchronize(CUstream hStream)
{
    FC_FAULT("cuStreamSynchronize");
    struct CUctx_st *ctx;
    CUresult r = fc_ctx_ready(&ctx);
    struct CUstream_st *s;
    if (r || (r = fc_stream_get(hStream, ctx, &s)))
        return r;
    uint64_t seq;
    if (s->legacy) {
        struct fc_op nop = { .kind = FC_OP_NOP };
        if ((r = fc_enqueue(s, &nop, &seq)))
            return r;
    } else {
        seq = queued(s);
    }
    fc_stream_wait(s, seq);
    return CUDA_SUCCESS;
}

FC_API CUresult cuStreamQuery(CUstream hStream)
{
    FC_FAULT("cuStreamQuery");
    struct CUctx_st *ctx;
    CUresult r = fc_ctx_ready(&ctx);
    struct CUstream_st *s;
    if (r || (r = fc_stream_get(hStream, ctx, &s)))
        return r;
    pthread_mutex_lock(&fc.lock);
    for (struct CUstream_st *t = ctx->streams; t; t = t->next)
        if ((t == s || (s->legacy && blocking(t))) && fc_stream_done(t) < queued(t))
            r = CUDA_ERROR_NOT_READY;
    pthread_mutex_unlock(&fc.lock);
    return r;
}

FC_API CUresult cuStreamGetFlags(CUstream hStream, unsigned int *flags)
{
    FC_FAULT("cuStreamGetFlags");
    struct CUctx_st *ctx;
    CUresult r = fc_ctx_ready(&ctx);
    struct CUstream_st *s;
    if (r || (r = fc_stream_get(hStream, ctx, &s)))
        return r;
    if (!flags)
        return CUDA_ERROR_INVALID_VALUE;
    *flags = s->flags;
    return CUDA_SUCCESS;
}
