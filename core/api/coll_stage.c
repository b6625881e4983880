/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * coll_stage.c: collectives on device buffers, and collectives on a
 * communicator with a CUDA stream.
 *
 * The engine and its algorithms touch buffers with the CPU (local
 * copies, reductions, the node-shared segment), and device memory cannot
 * be read that way. Until a transport moves device memory directly, a
 * collective whose buffers are device memory runs on host staging: the
 * inputs are copied to host memory, the collective runs there, and the
 * output is copied back. The receive buffer is staged whole, inputs
 * included, so that in-place inputs and the gaps of v-layouts come back
 * as they were.
 *
 * Without a stream, a blocking call copies in, runs and copies back
 * before it returns (as CUDA-aware MPI does); a nonblocking one copies in
 * at the call and back when the request completes. With a stream, the
 * copies are queued on the stream and the collective runs on the
 * communicator's stream thread, chosen and started there (stream.h); the
 * nonblocking forms then give a request that is complete at once, since
 * the stream carries the operation.
 *
 * A PREMUL_SUM operator scales its input, which can be done only once the
 * input is on the host: weft__coll_apply_op leaves a device input
 * unscaled, and the staging applies the operator to the staged copy.
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/api/coll_args.h"
#include "core/api/coll_device.h"
#include "core/api/coll_stage.h"
#include "core/api/stream.h"
#include "core/base/error.h"
#include "core/transport/plugin.h"

/* Bytes of the caller's send and receive buffers a collective of kind
 * reads or writes on this rank. */
typedef struct extent {
    size_t sbytes, rbytes;
} extent_t;

/* The end of the furthest block of a v-layout, in elements. */
static size_t layout_end(const size_t *counts, const size_t *displs, int n)
{
    size_t end = 0, off = 0;

    if (!counts)
        return 0;
    for (int i = 0; i < n; i++) {
        size_t start = displs ? displs[i] : off;

        if (counts[i] && start + counts[i] > end)
            end = start + counts[i];
        off += counts[i];
    }
    return end;
}

/* 0, or -1 for a kind that is not staged (its buffers must be host). */
static int extent_of(const weft__coll_t *c, weft__coll_kind_t kind, weft_comm_t comm,
                     extent_t *x)
{
    size_t block = c->count * c->esize;
    int in_place = c->sendbuf == WEFT_IN_PLACE;
    int n = comm->size;

    x->sbytes = x->rbytes = 0;
    switch (kind) {
    case WEFT__COLL_BARRIER:
        return 0;
    case WEFT__COLL_BCAST:
        x->rbytes = block;
        return 0;
    case WEFT__COLL_ALLREDUCE:
    case WEFT__COLL_SCAN:
    case WEFT__COLL_EXSCAN:
        x->sbytes = in_place ? 0 : block;
        x->rbytes = block;
        return 0;
    case WEFT__COLL_REDUCE:
        /* sendbuf is the input, recvbuf itself where in place */
        x->sbytes = block;
        x->rbytes = comm->rank == c->root || c->recvbuf == c->sendbuf ? block : 0;
        return 0;
    case WEFT__COLL_REDUCE_SCATTER:
        /* count is the total of the blocks */
        in_place = in_place || c->sendbuf == c->recvbuf;
        x->sbytes = in_place ? 0 : block;
        x->rbytes = in_place ? block : c->rcounts[comm->rank] * c->esize;
        return 0;
    case WEFT__COLL_GATHER:
        x->sbytes = in_place ? 0 : block;
        x->rbytes = layout_end(c->rcounts, c->rdispls, n) * c->esize;
        return 0;
    case WEFT__COLL_SCATTER:
        x->sbytes = layout_end(c->scounts, c->sdispls, n) * c->esize;
        x->rbytes = c->recvbuf == WEFT_IN_PLACE ? 0 : block;
        return 0;
    case WEFT__COLL_ALLGATHER:
        x->sbytes = in_place ? 0 : block;
        x->rbytes = layout_end(c->rcounts, c->rdispls, n) * c->esize;
        return 0;
    case WEFT__COLL_ALLTOALL:
        x->sbytes = in_place ? 0 : layout_end(c->scounts, c->sdispls, n) * c->esize;
        x->rbytes = layout_end(c->rcounts, c->rdispls, n) * c->esize;
        return 0;
    /* Along an axis (coll_axis.c): count is one rank's block, the arrays
     * are n blocks where joined, never in place. */
    case WEFT__COLL_GATHER_AXIS:
        x->sbytes = block;
        x->rbytes = comm->rank == c->root ? block * (size_t)n : 0;
        return 0;
    case WEFT__COLL_ALLGATHER_AXIS:
        x->sbytes = block;
        x->rbytes = block * (size_t)n;
        return 0;
    case WEFT__COLL_SCATTER_AXIS:
        x->sbytes = comm->rank == c->root ? block * (size_t)n : 0;
        x->rbytes = block;
        return 0;
    case WEFT__COLL_REDUCE_SCATTER_AXIS:
        x->sbytes = block * (size_t)n;
        x->rbytes = block;
        return 0;
    case WEFT__COLL_ALLTOALL_AXIS:
        x->sbytes = x->rbytes = block * (size_t)n;
        return 0;
    default:
        return -1; /* the byte-string ones: buffers weft allocates, on the host */
    }
}

/* 1 when p is device memory, 0 when the host may read it, -1 with *err
 * set on error. */
static int on_device(weft__plugin_t *dev, const void *p, weft__coll_kind_t kind,
                     const char *name, weft_result_t *err)
{
    int type = WEFT_TRANSPORT_MEM_HOST, ordinal = -1;
    weft_result_t rc;

    if (!dev || !p || p == WEFT_IN_PLACE)
        return 0;
    weft__clear_error();
    rc = dev->device->mem_query(dev->ctx, p, &type, &ordinal);
    if (rc != WEFT_SUCCESS) {
        *err = weft__error(rc, "weft_%s: %s %p: cannot tell host from device memory: %s",
                           weft__coll_kind_names[kind], name, p, weft__get_error());
        return -1;
    }
    return type == WEFT_TRANSPORT_MEM_CUDA;
}

/* What one staged collective holds. */
typedef struct stage {
    weft__plugin_t *dev;
    weft_comm_t comm;
    weft__coll_t *c;               /* the collective (c->sendbuf etc. staged) */
    weft__coll_kind_t kind;
    size_t tune_bytes;
    int even, tuned;
    int on_stream;                 /* staging is the stream's (page-locked) */
    void *host[2];                 /* staging: send, receive (NULL: not staged) */
    void *dev_recv;                /* where the result goes back */
    size_t rbytes;
    char fn[48];                   /* "weft_allreduce", for messages */
} stage_t;

static void stage_free_staging(stage_t *s)
{
    for (int i = 0; i < 2; i++) {
        if (s->on_stream)
            weft__stream_host_free(s->comm, s->host[i]);
        else
            free(s->host[i]);
        s->host[i] = NULL;
    }
}

/* The deferred PREMUL_SUM, on the staged input: count elements, but
 * along an axis count is one rank's block and the input all n of them
 * (extent_of). */
static weft_result_t apply_deferred(stage_t *s)
{
    weft__coll_t *c = s->c;
    weft_op_t op = c->op;
    size_t count = c->count;

    if ((unsigned)op <= WEFT_BXOR || c->premul_input)
        return WEFT_SUCCESS;
    if (s->kind == WEFT__COLL_REDUCE_SCATTER_AXIS)
        count *= (size_t)s->comm->size;
    return weft__coll_apply_op_host(c, op, c->sendbuf == WEFT_IN_PLACE ? c->recvbuf : c->sendbuf,
                                    count);
}

/* Chooses the algorithm (where the caller left it to launch) and starts
 * the collective; c is freed on failure. */
static weft_result_t start(stage_t *s, weft__coll_t *c, weft_request_t *req)
{
    if (!s->tuned)
        weft__tune_choose(c, s->comm, s->kind, s->tune_bytes, s->even);
    s->tuned = 1;
    return weft__coll_launch_now(s->comm, c, s->kind, req);
}

/* ------------------------------------------------ without a stream */

/* The nonblocking form's wrapper: runs the collective, then copies its
 * result back to device memory. */
static weft_result_t wrapper_step(weft__coll_t *w, int *done)
{
    stage_t *s = w->ctx;
    weft_result_t rc;

    switch (w->phase++) {
    case 0:
        w->child = NULL;
        rc = weft__coll_run_child(w, s->c);
        s->c = NULL; /* the engine frees it as w's child */
        return rc;
    default:
        if (s->dev_recv) {
            weft__clear_error();
            rc = s->dev->device->copy(s->dev->ctx, s->dev_recv, s->host[1], s->rbytes);
            if (rc != WEFT_SUCCESS)
                return weft__error(rc, "%s: copying the result back to device memory failed: "
                                   "%s", s->fn, weft__get_error());
        }
        *done = 1;
        return WEFT_SUCCESS;
    }
}

static void stage_free(void *p)
{
    stage_t *s = p;

    if (s->c)
        weft__coll_free(s->c);
    stage_free_staging(s);
    free(s);
}

/* ------------------------------------------------ on a stream */

static weft_result_t stream_run(weft_comm_t comm, void *arg)
{
    stage_t *s = arg;
    weft__coll_t *c = s->c;
    weft_result_t rc;

    (void)comm;
    if ((rc = apply_deferred(s)) != WEFT_SUCCESS) {
        s->c = NULL; /* apply_op freed it */
        return rc;
    }
    s->c = NULL;
    return start(s, c, WEFT__COLL_BLOCKING);
}

/* The stream owns the staging now: only the rest goes. */
static void stream_release(void *arg)
{
    stage_t *s = arg;

    if (s->c)
        weft__coll_free(s->c);
    free(s);
}

/* ------------------------------------------------ the entry */

/* Allocates and fills the staging of s's collective and points it there.
 * in/out: the copies to make (at most 2 and 1). */
static weft_result_t stage_buffers(stage_t *s, const extent_t *x, int sdev, int rdev,
                                   weft__stream_copy_t *in, int *nin, weft__stream_copy_t *out,
                                   int *nout)
{
    weft__coll_t *c = s->c;
    size_t len[2] = { x->sbytes, x->rbytes };
    int want[2] = { sdev, rdev };
    /* sendbuf equal to recvbuf is the in-place form: the input is in the
     * output, one staging. sdev cannot decide it: where extent_of gives
     * sendbuf no bytes (reduce_scatter in place) nobody asked whether it
     * is device memory, and it would stay the device pointer for the host
     * algorithm to read. */
    int alias = rdev && c->sendbuf == c->recvbuf;

    if (alias)
        want[0] = 0;
    for (int i = 0; i < 2; i++) {
        if (!want[i])
            continue;
        s->host[i] = s->on_stream ? weft__stream_host_alloc(s->comm, len[i])
                                  : malloc(len[i] ? len[i] : 1);
        if (!s->host[i])
            return s->on_stream ? WEFT_ERR_NO_MEMORY
                                : weft__error(WEFT_ERR_NO_MEMORY, "%s: cannot allocate %zu "
                                              "bytes of staging", s->fn, len[i]);
    }
    *nin = *nout = 0;
    if (want[0])
        in[(*nin)++] = (weft__stream_copy_t){ s->host[0], c->sendbuf, len[0] };
    if (want[1]) {
        in[(*nin)++] = (weft__stream_copy_t){ s->host[1], c->recvbuf, len[1] };
        out[(*nout)++] = (weft__stream_copy_t){ c->recvbuf, s->host[1], len[1] };
        s->dev_recv = c->recvbuf;
        s->rbytes = len[1];
    }
    if (want[0])
        c->sendbuf = s->host[0];
    if (want[1])
        c->recvbuf = s->host[1];
    if (alias)
        c->sendbuf = c->recvbuf;
    return WEFT_SUCCESS;
}

static weft_result_t copy_all(stage_t *s, const weft__stream_copy_t *cp, int n)
{
    weft_result_t rc = WEFT_SUCCESS;

    weft__clear_error();
    for (int i = 0; i < n && rc == WEFT_SUCCESS; i++)
        rc = s->dev->device->copy(s->dev->ctx, cp[i].dst, cp[i].src, cp[i].len);
    if (rc != WEFT_SUCCESS)
        rc = weft__error(rc, "%s: copying between device and host memory failed: %s", s->fn,
                         weft__get_error());
    return rc;
}

/* The collective that runs s's (its inputs copied in already), chooses
 * its algorithm and copies the result back: NULL (s freed) without
 * memory. */
static weft__coll_t *staged_wrapper(stage_t *s)
{
    weft__coll_t *w;

    if (!s->tuned)
        weft__tune_choose(s->c, s->comm, s->kind, s->tune_bytes, s->even);
    s->tuned = 1;
    if (!(w = weft__coll_new(NULL, NULL, 0, 1, WEFT_UINT8, WEFT_SUM, 0))) {
        stage_free(s);
        return NULL;
    }
    w->ctx = s;
    w->ctx_free = stage_free;
    w->step = wrapper_step;
    return w;
}

/* Runs s's collective now, on this thread (no stream). */
static weft_result_t run_staged(stage_t *s, const weft__stream_copy_t *in, int nin,
                                weft_request_t *req)
{
    weft__coll_t *c = s->c, *w;
    weft_result_t rc = copy_all(s, in, nin);

    if (rc == WEFT_SUCCESS && (rc = apply_deferred(s)) != WEFT_SUCCESS)
        s->c = NULL; /* apply_op freed it */
    if (rc != WEFT_SUCCESS) {
        stage_free(s);
        return rc;
    }
    if (req == WEFT__COLL_BLOCKING) {
        s->c = NULL;
        rc = start(s, c, WEFT__COLL_BLOCKING);
        if (rc == WEFT_SUCCESS && s->dev_recv) {
            weft__stream_copy_t back = { s->dev_recv, s->host[1], s->rbytes };

            rc = copy_all(s, &back, 1);
        }
        stage_free(s);
        return rc;
    }
    /* Nonblocking: the algorithm is chosen for c, then the wrapper runs
     * it and copies back. */
    if (!(w = staged_wrapper(s)))
        return WEFT_ERR_NO_MEMORY;
    /* WEFT_CHECK compares the arguments of c itself, inside the wrapper. */
    if (weft__coll_check_enabled()) {
        c->comm = s->comm;
        c->kind = (int)s->kind;
        if (!c->gsize)
            weft__coll_set_group(c, s->comm->size, s->comm->rank, NULL);
        if (!(s->c = weft__coll_checked(c, s->kind))) {
            weft__coll_free(w); /* frees s */
            return WEFT_ERR_NO_MEMORY;
        }
    }
    return weft__coll_start(s->comm, w, s->kind, req);
}

/* The device engine's collective for c, on comm's stream thread: arg
 * holds it until run takes it; release frees what run did not take. */
static weft_result_t device_stream_run(weft_comm_t comm, void *arg)
{
    weft__coll_t **held = arg, *w = *held;

    *held = NULL;
    return weft__coll_launch_now(comm, w, (weft__coll_kind_t)w->kind, WEFT__COLL_BLOCKING);
}

static void device_stream_release(void *arg)
{
    weft__coll_t **held = arg;

    if (*held)
        weft__coll_free(*held);
    free(held);
}

/* The device engine's fallback (weft__coll_stage_fn, coll_device.h):
 * the collective, not yet started, that runs c with its device buffers
 * staged through host memory, the inputs copied in before it returns. */
static weft_result_t stage_child(weft_comm_t comm, weft__coll_t *c, weft__coll_kind_t kind,
                                 size_t tune_bytes, int even, int tuned, int sdev, int rdev,
                                 weft__coll_t **child)
{
    weft__plugin_t *dev = weft__plugins_device(&comm->inst->wire.plugins);
    weft__stream_copy_t in[2], out[1];
    int nin = 0, nout = 0;
    weft_result_t rc = WEFT_SUCCESS;
    extent_t x;
    stage_t *s;

    /* every kind the engine takes is one extent_of knows */
    if (extent_of(c, kind, comm, &x) != 0)
        sdev = rdev = 0;
    if (!sdev && !rdev) {
        if (!tuned)
            weft__tune_choose(c, comm, kind, tune_bytes, even);
        *child = c;
        return WEFT_SUCCESS;
    }
    if (!(s = calloc(1, sizeof(*s)))) {
        weft__coll_free(c);
        return weft__error(WEFT_ERR_NO_MEMORY, "weft_%s: out of memory",
                           weft__coll_kind_names[kind]);
    }
    *s = (stage_t){ .dev = dev, .comm = comm, .c = c, .kind = kind, .tune_bytes = tune_bytes,
                    .even = even, .tuned = tuned };
    snprintf(s->fn, sizeof(s->fn), "weft_%s", weft__coll_kind_names[kind]);
    if ((rc = stage_buffers(s, &x, sdev > 0, rdev > 0, in, &nin, out, &nout)) != WEFT_SUCCESS ||
        (rc = copy_all(s, in, nin)) != WEFT_SUCCESS) {
        stage_free(s);
        return rc;
    }
    if ((rc = apply_deferred(s)) != WEFT_SUCCESS) {
        s->c = NULL; /* apply_op freed it */
        stage_free(s);
        return rc;
    }
    if (!(*child = staged_wrapper(s)))
        return WEFT_ERR_NO_MEMORY;
    return WEFT_SUCCESS;
}

static weft_result_t device_launch(weft_comm_t comm, weft__coll_t *c, weft__coll_kind_t kind,
                                   size_t tune_bytes, int even, int tuned, int sdev, int rdev,
                                   weft_request_t *req)
{
    char fn[48];
    weft__coll_t *w;
    weft_result_t rc;

    snprintf(fn, sizeof(fn), "weft_%s", weft__coll_kind_names[kind]);
    if (comm->stream && (rc = weft__stream_error(comm, fn)) != WEFT_SUCCESS) {
        weft__coll_free(c);
        return rc;
    }
    if ((rc = weft__coll_device_new(comm, c, kind, tune_bytes, even, tuned, sdev, rdev,
                                    stage_child, &w)) != WEFT_SUCCESS)
        return rc;
    if (!comm->stream)
        return weft__coll_launch_now(comm, w, kind, req);
    {
        weft__coll_t **held = malloc(sizeof(*held));
        weft__stream_job_t job = { device_stream_run, device_stream_release, held, fn };

        if (!held) {
            weft__coll_free(w);
            return weft__error(WEFT_ERR_NO_MEMORY, "%s: out of memory", fn);
        }
        *held = w;
        w->kind = (int)kind;
        if (req != WEFT__COLL_BLOCKING)
            *req = NULL;
        return weft__stream_submit(comm, NULL, 0, NULL, 0, &job, NULL, 0);
    }
}

/* Starts c of kind with its device buffers staged through host memory,
 * or queues it on comm's stream. The algorithm is chosen here
 * (weft__tune_choose with tune_bytes and even) unless tuned says the
 * caller set it. Frees c on failure. */
static weft_result_t stage_launch(weft_comm_t comm, weft__coll_t *c, weft__coll_kind_t kind,
                                  size_t tune_bytes, int even, int tuned, weft_request_t *req)
{
    char fn[48];
    weft__plugin_t *dev = weft__plugins_device(&comm->inst->wire.plugins);
    weft__stream_copy_t in[2], out[1];
    int nin = 0, nout = 0, sdev = 0, rdev = 0;
    weft_result_t rc = WEFT_SUCCESS;
    extent_t x;
    stage_t *s;

    if (extent_of(c, kind, comm, &x) == 0) {
        sdev = x.sbytes ? on_device(dev, c->sendbuf, kind, "sendbuf", &rc) : 0;
        rdev = x.rbytes && sdev >= 0 ? on_device(dev, c->recvbuf, kind, "recvbuf", &rc) : 0;
    }
    if (sdev < 0 || rdev < 0) {
        weft__coll_free(c);
        return rc;
    }
    /* GPU to GPU inside the node, where every rank can (coll_device.c);
     * every rank of such a call takes part, whatever its buffers. */
    if (weft__coll_device_joins(comm, c, kind))
        return device_launch(comm, c, kind, tune_bytes, even, tuned, sdev, rdev, req);
    /* Host memory and no stream, the common case: as if no device. */
    if (!sdev && !rdev && !comm->stream) {
        if (!tuned)
            weft__tune_choose(c, comm, kind, tune_bytes, even);
        return weft__coll_launch_now(comm, c, kind, req);
    }
    snprintf(fn, sizeof(fn), "weft_%s", weft__coll_kind_names[kind]);
    if (comm->stream && (rc = weft__stream_error(comm, fn)) != WEFT_SUCCESS) {
        weft__coll_free(c);
        return rc;
    }
    if (!(s = calloc(1, sizeof(*s)))) {
        weft__coll_free(c);
        return weft__error(WEFT_ERR_NO_MEMORY, "%s: out of memory", fn);
    }
    *s = (stage_t){ .dev = dev, .comm = comm, .c = c, .kind = kind, .tune_bytes = tune_bytes,
                    .even = even, .tuned = tuned, .on_stream = comm->stream != NULL };
    memcpy(s->fn, fn, sizeof(fn));
    if ((rc = stage_buffers(s, &x, sdev > 0, rdev > 0, in, &nin, out, &nout)) != WEFT_SUCCESS) {
        stage_free(s);
        return rc;
    }
    if (!comm->stream)
        return run_staged(s, in, nin, req);
    /* On the stream: the thread runs it; the request is complete at once. */
    {
        weft__stream_job_t job = { stream_run, stream_release, s, s->fn };
        void *staging[2];
        int n = 0;

        for (int i = 0; i < 2; i++)
            if (s->host[i])
                staging[n++] = s->host[i];
        s->host[0] = s->host[1] = NULL;
        if (req != WEFT__COLL_BLOCKING)
            *req = NULL;
        return weft__stream_submit(comm, in, nin, out, nout, &job, staging, n);
    }
}

/* Whether a call on comm may involve device memory or a stream: then
 * coll_stage.c starts it. */
static inline int maybe_staged(weft_comm_t comm)
{
    return comm->stream || weft__plugins_device(&comm->inst->wire.plugins);
}

weft_result_t weft__coll_launch_tuned(weft_comm_t comm, weft__coll_t *c, weft__coll_kind_t kind,
                                      size_t bytes, int even, weft_request_t *req)
{
    weft__tune_sample_t sample = { NULL, 0 };
    weft_result_t rc;
    int64_t t0;

    if (__builtin_expect(maybe_staged(comm), 0))
        return stage_launch(comm, c, kind, bytes, even, 0, req);
    /* The check's two collectives per call would swamp any timing. */
    if (weft__coll_check_enabled())
        weft__tune_choose(c, comm, kind, bytes, even);
    else
        weft__tune_choose_timed(c, comm, kind, bytes, even, &sample);
    /* A nonblocking call's duration is the program's, not the
     * algorithm's: only blocking ones are timed. */
    if (!sample.entry || req != WEFT__COLL_BLOCKING)
        return weft__coll_launch_now(comm, c, kind, req);
    t0 = weft__tune_now_ns();
    rc = weft__coll_launch_now(comm, c, kind, req);
    weft__tune_adapt_record(&sample, rc, weft__tune_now_ns() - t0);
    return rc;
}

weft_result_t weft__coll_launch(weft_comm_t comm, weft__coll_t *c, weft__coll_kind_t kind,
                                weft_request_t *req)
{
    if (__builtin_expect(maybe_staged(comm), 0))
        return stage_launch(comm, c, kind, 0, 1, 1, req);
    return weft__coll_launch_now(comm, c, kind, req);
}
