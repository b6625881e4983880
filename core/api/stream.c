/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * stream.c: operations ordered on a CUDA stream; stream.h says how.
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "weft/transport.h"

#include "core/api/stream.h"
#include "core/base/error.h"
#include "core/base/log.h"
#include "core/transport/plugin.h"

/* The flags the stream and the stream thread hand operations over with,
 * each on a cache line of its own in page-locked memory. */
enum { FLAG_READY = 0, FLAG_DONE = 16, FLAG_FREED = 32, FLAG_WORDS = 48 };

#define STAGING_MAX 4

typedef struct stream_item {
    struct stream_item *next;
    uint32_t seq;
    weft__stream_job_t job;
    char fn[48];                    /* job.fn, which may go with job.arg */
    weft_result_t failed;           /* queuing it on the stream failed */
    int freed_queued;               /* "write seq to FREED" is on the stream */
    void *staging[STAGING_MAX];
    int nstaging;
} stream_item_t;

struct weft__stream {
    weft_comm_t comm;
    weft__plugin_t *dev;            /* the plugin whose device services are used */
    void *stream;
    int memops;                     /* 0: the blocking fallback */
    uint32_t *flags;                /* FLAG_WORDS words, page-locked */
    uint32_t issued;                /* numbers given to operations */
    pthread_t thread;
    int thread_up;
    pthread_mutex_t lock;
    pthread_cond_t cond;            /* queue changed, or the thread went idle */
    stream_item_t *head, *tail;     /* queued, not run yet */
    stream_item_t *retired;         /* run, staging held until FREED passes */
    int running, stop;
    weft_result_t error;            /* the first failure, kept */
    char why[400];
};

static const weft_transport_device_t *dops(const struct weft__stream *st)
{
    return st->dev->device;
}

/* 1 when a flag the stream writes reached seq (wrapping numbers). */
static int reached(const uint32_t *flag, uint32_t seq)
{
    return (int32_t)(__atomic_load_n(flag, __ATOMIC_ACQUIRE) - seq) >= 0;
}

static void sleep_us(long us)
{
    struct timespec ts = { .tv_sec = 0, .tv_nsec = us * 1000 };

    nanosleep(&ts, NULL);
}

static double now_ms(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

/* Waits until the stream wrote seq to READY: a short spin, then sleeps
 * growing to 200 us, so that a rank waiting on a busy GPU does not hold a
 * core (ranks share cores). WEFT_ERR_TIMEOUT after timeout_ms. */
static weft_result_t wait_ready(struct weft__stream *st, uint32_t seq)
{
    int timeout_ms = st->comm->inst->timeout_ms;
    double deadline = now_ms() + timeout_ms;
    long nap = 1;

    for (int spin = 0; spin < 2000; spin++)
        if (reached(&st->flags[FLAG_READY], seq))
            return WEFT_SUCCESS;
    while (!reached(&st->flags[FLAG_READY], seq)) {
        if (now_ms() > deadline)
            return weft__error(WEFT_ERR_TIMEOUT, "the stream did not reach operation %u "
                               "within WEFT_TIMEOUT (%d s): the work queued before it on "
                               "the stream has not finished", seq, timeout_ms / 1000);
        sleep_us(nap);
        if (nap < 200)
            nap *= 2;
    }
    return WEFT_SUCCESS;
}

static void item_release_staging(struct weft__stream *st, stream_item_t *it)
{
    for (int i = 0; i < it->nstaging; i++)
        if (dops(st)->host_free(st->dev->ctx, it->staging[i]) != WEFT_SUCCESS)
            WEFT_WARN(COLL, "stream: cannot free staging memory: %s", weft__get_error());
    it->nstaging = 0;
}

/* Frees the retired items the stream is past. Called without st->lock
 * by the stream thread, the only one touching retired while it runs. */
static void collect_retired(struct weft__stream *st)
{
    stream_item_t **pp = &st->retired;

    while (*pp) {
        stream_item_t *it = *pp;

        if (!it->freed_queued || !reached(&st->flags[FLAG_FREED], it->seq)) {
            pp = &it->next;
            continue;
        }
        *pp = it->next;
        item_release_staging(st, it);
        free(it);
    }
}

/* Keeps the first failure (its message names the call) for later calls. */
static void keep_error(struct weft__stream *st, weft_result_t rc)
{
    pthread_mutex_lock(&st->lock);
    if (st->error == WEFT_SUCCESS) {
        st->error = rc;
        snprintf(st->why, sizeof(st->why), "on the stream: %s", weft__get_error());
        WEFT_WARN(COLL, "%s", st->why);
    }
    pthread_mutex_unlock(&st->lock);
}

/* Runs one operation the stream reached; always lets the stream go on. */
static void run_item(struct weft__stream *st, stream_item_t *it)
{
    weft_result_t rc = it->failed;
    int skip;

    pthread_mutex_lock(&st->lock);
    skip = st->error != WEFT_SUCCESS;
    pthread_mutex_unlock(&st->lock);
    if (rc == WEFT_SUCCESS && !skip)
        rc = wait_ready(st, it->seq);
    /* The thread is the communicator's own: it applies abort notices. */
    if (rc == WEFT_SUCCESS && !skip && weft__mctx_aborted(&st->comm->ctx))
        rc = weft__error(WEFT_ERR_ABORTED, "%s: the communicator was aborted", it->fn);
    if (rc == WEFT_SUCCESS && !skip)
        rc = it->job.run(st->comm, it->job.arg);
    /* Kept before the stream goes on, so that a call made once the
     * stream passed the operation sees the failure. After a failure the
     * outputs' staging still holds what the stream copied in, so the
     * copies back leave the user's buffers as they were: nothing is
     * silently wrong, and later calls report it. */
    if (rc != WEFT_SUCCESS && !skip)
        keep_error(st, rc);
    __atomic_store_n(&st->flags[FLAG_DONE], it->seq, __ATOMIC_RELEASE);
    if (it->job.release)
        it->job.release(it->job.arg);
    it->job.release = NULL;
}

static void *stream_thread(void *arg)
{
    struct weft__stream *st = arg;

    pthread_mutex_lock(&st->lock);
    for (;;) {
        stream_item_t *it = st->head;

        if (!it) {
            if (st->stop)
                break;
            if (st->retired) {
                struct timespec ts;

                clock_gettime(CLOCK_REALTIME, &ts);
                ts.tv_nsec += 1000000;
                if (ts.tv_nsec >= 1000000000) {
                    ts.tv_sec++;
                    ts.tv_nsec -= 1000000000;
                }
                pthread_cond_timedwait(&st->cond, &st->lock, &ts);
            } else {
                pthread_cond_wait(&st->cond, &st->lock);
            }
            pthread_mutex_unlock(&st->lock);
            collect_retired(st);
            pthread_mutex_lock(&st->lock);
            continue;
        }
        st->head = it->next;
        if (!st->head)
            st->tail = NULL;
        st->running = 1;
        pthread_mutex_unlock(&st->lock);
        /* Given up (stop): the stream must still be let through. */
        if (st->stop)
            it->failed = it->failed ? it->failed : WEFT_ERR_ABORTED;
        run_item(st, it);
        it->next = st->retired;
        st->retired = it;
        collect_retired(st);
        pthread_mutex_lock(&st->lock);
        st->running = 0;
        pthread_cond_broadcast(&st->cond);
    }
    pthread_mutex_unlock(&st->lock);
    return NULL;
}

/* Waits until the stream thread ran everything queued. */
static weft_result_t stream_quiesce(weft_comm_t comm, const char *fn)
{
    struct weft__stream *st = comm->stream;
    double deadline = now_ms() + comm->inst->timeout_ms;
    weft_result_t rc = WEFT_SUCCESS;

    if (!st || !st->thread_up)
        return WEFT_SUCCESS;
    pthread_mutex_lock(&st->lock);
    while ((st->head || st->running) && rc == WEFT_SUCCESS) {
        struct timespec ts;

        clock_gettime(CLOCK_REALTIME, &ts);
        ts.tv_nsec += 20 * 1000000;
        if (ts.tv_nsec >= 1000000000) {
            ts.tv_sec++;
            ts.tv_nsec -= 1000000000;
        }
        pthread_cond_timedwait(&st->cond, &st->lock, &ts);
        if ((st->head || st->running) && now_ms() > deadline)
            rc = weft__error(WEFT_ERR_TIMEOUT, "%s: the operations queued on the "
                             "communicator's stream did not finish within WEFT_TIMEOUT (%d s)",
                             fn, comm->inst->timeout_ms / 1000);
    }
    pthread_mutex_unlock(&st->lock);
    return rc;
}

/* Stops the thread and frees st. Staging the stream may still copy from
 * (it never got past FREED) is left allocated, with a warning: freeing it
 * could let the GPU read freed memory. */
static void stream_free(struct weft__stream *st)
{
    int leaked = 0;

    if (st->thread_up) {
        pthread_mutex_lock(&st->lock);
        st->stop = 1;
        pthread_cond_broadcast(&st->cond);
        pthread_mutex_unlock(&st->lock);
        pthread_join(st->thread, NULL);
    }
    collect_retired(st);
    while (st->retired) {
        stream_item_t *it = st->retired;

        st->retired = it->next;
        leaked += it->nstaging;
        free(it);
    }
    if (leaked)
        WEFT_WARN(COLL, "stream: the stream has not reached the end of every operation; "
                  "%d staging buffers it may still copy from are left allocated", leaked);
    else if (st->flags)
        dops(st)->host_free(st->dev->ctx, st->flags);
    pthread_cond_destroy(&st->cond);
    pthread_mutex_destroy(&st->lock);
    free(st);
}

static void stream_dtor(weft_comm_t comm, void *arg)
{
    (void)arg;
    if (comm->stream) {
        stream_free(comm->stream);
        comm->stream = NULL;
        comm->quiesce = NULL;
    }
}

/* Whether stream_dtor is registered on comm already (a stream set
 * before, maybe cleared since). */
static int has_dtor(weft_comm_t comm)
{
    for (int i = 0; i < comm->ndtors; i++)
        if (comm->dtors[i].fn == stream_dtor)
            return 1;
    return 0;
}

weft_result_t weft__stream_set(weft_comm_t comm, void *stream, const char *fn)
{
    weft__plugin_t *dev = weft__plugins_device(&comm->inst->wire.plugins);
    struct weft__stream *st;
    weft_result_t rc;
    int memops = 0;

    if (!stream) {
        if ((rc = weft__comm_quiesce(comm, fn)) != WEFT_SUCCESS)
            return rc;
        stream_dtor(comm, NULL);
        return WEFT_SUCCESS;
    }
    if (!dev)
        return weft__error(WEFT_ERR_UNSUPPORTED, "%s: cuda_stream: no transport of this "
                           "process offers device memory services (is the cuda-ipc plugin "
                           "loaded? weft-info says why not)", fn);
    weft__clear_error();
    if ((rc = dev->device->stream_check(dev->ctx, stream, &memops)) != WEFT_SUCCESS)
        return weft__error(rc, "%s: cuda_stream %p: %s", fn, stream, weft__get_error());
    if (comm->stream) {
        if (comm->stream->stream == stream)
            return WEFT_SUCCESS;
        if ((rc = weft__comm_quiesce(comm, fn)) != WEFT_SUCCESS)
            return rc;
        stream_dtor(comm, NULL);
    }
    if (!(st = calloc(1, sizeof(*st))))
        return weft__error(WEFT_ERR_NO_MEMORY, "%s: out of memory", fn);
    st->comm = comm;
    st->dev = dev;
    st->stream = stream;
    st->memops = memops;
    pthread_mutex_init(&st->lock, NULL);
    pthread_cond_init(&st->cond, NULL);
    if (memops) {
        void *flags = NULL;

        rc = dev->device->host_alloc(dev->ctx, FLAG_WORDS * sizeof(uint32_t), &flags);
        if (rc != WEFT_SUCCESS) {
            weft__error(rc, "%s: cannot allocate the stream's flags: %s", fn, weft__get_error());
            stream_free(st);
            return rc;
        }
        st->flags = flags;
        memset(st->flags, 0, FLAG_WORDS * sizeof(uint32_t));
        if (pthread_create(&st->thread, NULL, stream_thread, st) != 0) {
            stream_free(st);
            return weft__error(WEFT_ERR_NO_MEMORY, "%s: cannot start the stream thread", fn);
        }
        st->thread_up = 1;
    } else {
        WEFT_INFO(COLL, "%s: the device has no stream memory operations (or WEFT_CUDA_MEMOPS=0): "
                  "operations on this stream synchronise it and run before the call returns",
                  fn);
    }
    if (!has_dtor(comm) && (rc = weft__comm_add_destructor(comm, stream_dtor, NULL)) !=
        WEFT_SUCCESS) {
        stream_free(st);
        return rc;
    }
    comm->stream = st;
    comm->quiesce = stream_quiesce;
    return WEFT_SUCCESS;
}

void *weft__stream_host_alloc(weft_comm_t comm, size_t len)
{
    struct weft__stream *st = comm->stream;
    void *p = NULL;
    weft_result_t rc;

    weft__clear_error();
    rc = dops(st)->host_alloc(st->dev->ctx, len ? len : 1, &p);
    if (rc != WEFT_SUCCESS) {
        weft__error(rc, "cannot allocate %zu bytes of staging: %s", len, weft__get_error());
        return NULL;
    }
    return p;
}

void weft__stream_host_free(weft_comm_t comm, void *p)
{
    struct weft__stream *st = comm->stream;

    if (p)
        dops(st)->host_free(st->dev->ctx, p);
}

weft_result_t weft__stream_error(weft_comm_t comm, const char *fn)
{
    struct weft__stream *st = comm->stream;
    weft_result_t rc;

    pthread_mutex_lock(&st->lock);
    rc = st->error;
    if (rc != WEFT_SUCCESS)
        weft__error(rc, "%s: an earlier operation failed, and the communicator is unusable: "
                    "%s", fn, st->why);
    pthread_mutex_unlock(&st->lock);
    return rc;
}

/* The blocking fallback: the stream's earlier work first, then the
 * operation on this thread, then the results back. */
static weft_result_t submit_blocking(struct weft__stream *st, const weft__stream_copy_t *in,
                                     int nin, const weft__stream_copy_t *out, int nout,
                                     const weft__stream_job_t *job)
{
    const weft_transport_device_t *d = dops(st);
    weft_result_t rc;

    weft__clear_error();
    rc = d->stream_sync(st->dev->ctx, st->stream);
    for (int i = 0; i < nin && rc == WEFT_SUCCESS; i++)
        rc = d->copy(st->dev->ctx, in[i].dst, in[i].src, in[i].len);
    if (rc != WEFT_SUCCESS)
        rc = weft__error(rc, "%s: the stream or its copies failed: %s", job->fn,
                         weft__get_error());
    if (rc == WEFT_SUCCESS && weft__mctx_aborted(&st->comm->ctx))
        rc = weft__error(WEFT_ERR_ABORTED, "%s: the communicator was aborted", job->fn);
    if (rc == WEFT_SUCCESS)
        rc = job->run(st->comm, job->arg);
    for (int i = 0; i < nout && rc == WEFT_SUCCESS; i++)
        if ((rc = d->copy(st->dev->ctx, out[i].dst, out[i].src, out[i].len)) != WEFT_SUCCESS)
            rc = weft__error(rc, "%s: copying the result back failed: %s", job->fn,
                             weft__get_error());
    return rc;
}

/* Queues the stream's side of one operation; the first failure in it. */
static weft_result_t queue_on_stream(struct weft__stream *st, stream_item_t *it,
                                     const weft__stream_copy_t *in, int nin,
                                     const weft__stream_copy_t *out, int nout)
{
    const weft_transport_device_t *d = dops(st);
    void *ctx = st->dev->ctx;
    weft_result_t rc = WEFT_SUCCESS;

    for (int i = 0; i < nin && rc == WEFT_SUCCESS; i++)
        rc = d->stream_copy(ctx, st->stream, in[i].dst, in[i].src, in[i].len);
    if (rc == WEFT_SUCCESS)
        rc = d->stream_write(ctx, st->stream, &st->flags[FLAG_READY], it->seq);
    if (rc == WEFT_SUCCESS)
        rc = d->stream_wait(ctx, st->stream, &st->flags[FLAG_DONE], it->seq);
    for (int i = 0; i < nout && rc == WEFT_SUCCESS; i++)
        rc = d->stream_copy(ctx, st->stream, out[i].dst, out[i].src, out[i].len);
    if (rc == WEFT_SUCCESS)
        rc = d->stream_write(ctx, st->stream, &st->flags[FLAG_FREED], it->seq);
    it->freed_queued = rc == WEFT_SUCCESS;
    return rc;
}

weft_result_t weft__stream_submit(weft_comm_t comm, const weft__stream_copy_t *in, int nin,
                                  const weft__stream_copy_t *out, int nout,
                                  const weft__stream_job_t *job, void **staging, int nstaging)
{
    struct weft__stream *st = comm->stream;
    stream_item_t *it;
    weft_result_t rc = weft__stream_error(comm, job->fn);

    /* The fallback returns its failure to the caller itself. */
    if (rc == WEFT_SUCCESS && !st->memops)
        rc = submit_blocking(st, in, nin, out, nout, job);
    if (rc != WEFT_SUCCESS || !st->memops || !(it = calloc(1, sizeof(*it)))) {
        if (rc == WEFT_SUCCESS && st->memops)
            rc = weft__error(WEFT_ERR_NO_MEMORY, "%s: out of memory", job->fn);
        for (int i = 0; i < nstaging; i++)
            dops(st)->host_free(st->dev->ctx, staging[i]);
        if (job->release)
            job->release(job->arg);
        return rc;
    }
    it->seq = ++st->issued;
    it->job = *job;
    snprintf(it->fn, sizeof(it->fn), "%s", job->fn);
    for (int i = 0; i < nstaging && i < STAGING_MAX; i++)
        it->staging[it->nstaging++] = staging[i];
    weft__clear_error();
    if ((rc = queue_on_stream(st, it, in, nin, out, nout)) != WEFT_SUCCESS) {
        /* What is queued may wait on DONE: the item still goes to the
         * thread, which lets the stream through without running it. */
        rc = weft__error(rc, "%s: queuing on the stream failed: %s", job->fn, weft__get_error());
        it->failed = rc;
        keep_error(st, rc);
    }
    pthread_mutex_lock(&st->lock);
    if (st->tail)
        st->tail->next = it;
    else
        st->head = it;
    st->tail = it;
    pthread_cond_broadcast(&st->cond);
    pthread_mutex_unlock(&st->lock);
    return rc;
}
