/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * coll_device.c: collectives of a node GPU to GPU. Each rank exports its
 * device buffers (the device services' ipc_export), maps its peers'
 * (ipc_open), and the ranks read each other's memory directly: copies on
 * the device's copy engine, reductions by the transport's kernels, all
 * on a stream of the communicator's own. No byte crosses host memory.
 *
 * Which collectives. allreduce, reduce_scatter, allgather(v), broadcast
 * and reduce, on a communicator whose ranks all run on one node, carried
 * by a node-local transport, and all loaded the transport that offers the
 * device services (wireup: peers[].device_services); calls of at least
 * WEFT_CUDA_COLL_MIN bytes (default 64 KiB: below it, staging through
 * host memory costs about what the engine's four synchronisations do).
 * WEFT_CUDA_COLL=stage turns it off. Both must be the same on every
 * rank, as the algorithm settings must.
 *
 * Agreeing. Whether a call can run here depends on every rank's buffers,
 * and a rank knows only its own: one may pass host memory, another
 * device memory of a kind that cannot be exported. So every rank of such
 * a communicator takes part in the agreement for such a call, whatever
 * its buffers:
 *   1. the ranks gather each other's records: can it run on my side
 *      (device memory, aligned, exported, an operator the kernels have),
 *      and the handles of my input and output; a record that says no
 *      stages the call on every rank at once (host-buffer calls of that
 *      size pay this one small collective);
 *   2. each rank maps the handles it will read, and the ranks agree (a
 *      MIN allreduce) that every mapping worked.
 * Any no, and every rank runs the call staged through host memory where
 * its buffers are device memory, as coll_stage.c (which hands the engine
 * its way of staging) runs any other: the same choice everywhere.
 *
 * Running (rank r of n; "in" is a rank's input, its output where in
 * place; a peer's buffers are its mappings here):
 *   allreduce       r reduces part r of every in into its own output,
 *                   then, after a vote, copies every other part s from
 *                   rank s's output; a vote, and done.
 *   reduce_scatter  r reduces block r of every in into its output
 *                   (in place is staged: r's output is where the others
 *                   read their blocks of r's input).
 *   allgather       r copies every rank's in into its output.
 *   broadcast       every rank but the root copies the root's buffer.
 *   reduce          the root reduces every in into its output.
 * A reduction starts from the rank's own input, so that in place the
 * output is read before it is written.
 *
 * Votes. After each device step the ranks vote (a MIN allreduce: the
 * lowest rank whose step failed, or n), which is also the barrier after
 * which no rank reads another's memory: returning, a rank may reuse its
 * buffers. A step that fails on one rank (a launch, a copy) thus fails
 * the call on every rank, its own error there and one naming it
 * elsewhere, instead of leaving the others waiting or returning a result
 * it did not finish. The votes are host collectives on the
 * communicator, entered once this rank's stream work is synchronised.
 *
 * With a stream (weft_comm_set_stream) the whole of it runs on the
 * communicator's stream thread, between the stream's READY and DONE
 * flags (stream.c): the user's stream waits meanwhile, so its buffers
 * hold their inputs and nothing touches them.
 */
#include "config.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/api/coll_args.h"
#include "core/api/coll_device.h"
#include "core/base/env.h"
#include "core/base/error.h"
#include "core/base/log.h"
#include "core/coll/algo/algo.h"
#include "core/coll/shared/shared.h"
#include "core/transport/plugin.h"

#define DEFAULT_MIN (64ull << 10)
#define HANDLE WEFT_TRANSPORT_IPC_HANDLE_MAX

/* Read at weft_init (weft__coll_device_settings_parse). */
static int engine_off;
static unsigned long long engine_min = DEFAULT_MIN;

weft_result_t weft__coll_device_settings_parse(void)
{
    const char *mode = getenv("WEFT_CUDA_COLL");
    unsigned long long min = DEFAULT_MIN;
    weft_result_t rc;

    if (mode && *mode && strcmp(mode, "ipc") && strcmp(mode, "stage"))
        return weft__error(WEFT_ERR_INVALID_ARG, "WEFT_CUDA_COLL: \"%s\" is neither ipc nor "
                           "stage", mode);
    if ((rc = weft__env_ullong("WEFT_CUDA_COLL_MIN", 0, ~0ull, &min)) != WEFT_SUCCESS)
        return rc;
    __atomic_store_n(&engine_off, mode && !strcmp(mode, "stage"), __ATOMIC_RELAXED);
    __atomic_store_n(&engine_min, min, __ATOMIC_RELAXED);
    return WEFT_SUCCESS;
}

/* ------------------------------------------------ the communicator's */

/* What a communicator keeps for its device collectives. */
struct weft__coll_device {
    int usable;                    /* the engine may run here at all */
    void *stream;                  /* the device services' stream, made at first use */
    pthread_mutex_t lock;          /* for stream */
    weft__plugin_t *dev;
    unsigned long long runs, staged; /* calls that ran here, and that agreed to stage */
};

static void device_detach(struct weft_comm *comm, void *arg)
{
    struct weft__coll_device *d = arg;

    if (d->runs || d->staged)
        WEFT_INFO(COLL, "communicator %u: device collectives: %llu GPU to GPU, %llu staged",
                  comm->ctx.context_id, d->runs, d->staged);
    if (d->stream && d->dev->device->stream_destroy(d->dev->ctx, d->stream) != WEFT_SUCCESS)
        WEFT_WARN(COLL, "communicator %u: its device stream did not go: %s",
                  comm->ctx.context_id, weft__get_error());
    pthread_mutex_destroy(&d->lock);
    free(d);
}

/* comm's state, made on first use: NULL where the engine cannot run on
 * comm (the same answer on every rank: it depends on the communicator and
 * the job only). */
static struct weft__coll_device *comm_state(weft_comm_t comm)
{
    static pthread_mutex_t make = PTHREAD_MUTEX_INITIALIZER;
    weft__plugin_t *dev = weft__plugins_device(&comm->inst->wire.plugins);
    struct weft__coll_device *d;
    int usable;

    if ((d = __atomic_load_n(&comm->device_coll, __ATOMIC_ACQUIRE)))
        return d->usable ? d : NULL;
    usable = dev && weft__device_has_ipc(dev->device) && weft__shared_usable(comm);
    for (int i = 0; i < comm->size && usable; i++)
        usable = comm->inst->wire.peers[comm->world_ranks[i]].device_services;
    pthread_mutex_lock(&make);
    if (!(d = comm->device_coll) && (d = calloc(1, sizeof(*d)))) {
        d->usable = usable;
        d->dev = dev;
        pthread_mutex_init(&d->lock, NULL);
        if (weft__comm_add_destructor(comm, device_detach, d) != WEFT_SUCCESS) {
            free(d);
            d = NULL;
        } else {
            __atomic_store_n(&comm->device_coll, d, __ATOMIC_RELEASE);
        }
    }
    pthread_mutex_unlock(&make);
    /* Without memory for it, never: the same on every rank only if no
     * rank ran short, which one that did reports at its next call. */
    return d && d->usable ? d : NULL;
}

static weft_result_t comm_stream(struct weft__coll_device *d, void **stream)
{
    weft_result_t rc = WEFT_SUCCESS;

    pthread_mutex_lock(&d->lock);
    if (!d->stream)
        rc = d->dev->device->stream_create(d->dev->ctx, &d->stream);
    *stream = d->stream;
    pthread_mutex_unlock(&d->lock);
    return rc;
}

/* ------------------------------------------------ one call */

/* What each rank tells the others. */
typedef struct rec {
    int32_t ok;                    /* it can run on this rank's side */
    int32_t pad;
    unsigned char in[HANDLE];      /* its input (its output where in place) */
    unsigned char out[HANDLE];     /* its output, where others read it */
} rec_t;

typedef struct devcall {
    weft_comm_t comm;
    struct weft__coll_device *d;
    weft__plugin_t *dev;
    weft__coll_kind_t kind;
    weft__coll_t *args;            /* the call's arguments: the wrapper's own */
    weft__coll_t *c;               /* the call itself, run where it is staged */
    size_t tune_bytes;
    int even, tuned;
    weft__coll_stage_fn stage;     /* how to run it staged */
    int sdev, rdev;                /* sendbuf, recvbuf are device memory here */
    rec_t me, *recs;
    size_t *vlayout;
    int64_t ok, agreed;            /* a vote: n, or the rank that failed (MIN) */
    weft_result_t err;             /* this rank's failure in a device step */
    char why[256];
    void **in, **out;              /* per rank: its buffers as mapped here */
    void **tokens;                 /* ipc_close's, 2 per rank at most */
    const void **srcs;             /* a reduction's inputs, in order */
    int ntokens;
    void *stream;
    char fn[48];
} devcall_t;

static size_t elements_of(const weft__coll_t *c, int r)
{
    return c->rcounts ? c->rcounts[r] : c->count;
}

/* Where block r of an allgather's output starts, in elements. */
static size_t gather_displ(const weft__coll_t *c, int r)
{
    size_t off = 0;

    if (c->rdispls)
        return c->rdispls[r];
    for (int i = 0; i < r; i++)
        off += elements_of(c, i);
    return off;
}

/* Total bytes of the call, the same on every rank. */
static size_t call_bytes(const weft__coll_t *c, weft__coll_kind_t kind, int n)
{
    size_t e = 0;

    if (kind != WEFT__COLL_ALLGATHER)
        return c->count * c->esize;
    for (int i = 0; i < n; i++)
        e += elements_of(c, i);
    return e * c->esize;
}

static int reduces(weft__coll_kind_t kind)
{
    return kind == WEFT__COLL_ALLREDUCE || kind == WEFT__COLL_REDUCE_SCATTER ||
           kind == WEFT__COLL_REDUCE;
}

int weft__coll_device_joins(weft_comm_t comm, const weft__coll_t *c, weft__coll_kind_t kind)
{
    if (kind != WEFT__COLL_ALLREDUCE && kind != WEFT__COLL_REDUCE_SCATTER &&
        kind != WEFT__COLL_ALLGATHER && kind != WEFT__COLL_BCAST && kind != WEFT__COLL_REDUCE)
        return 0;
    if (__atomic_load_n(&engine_off, __ATOMIC_RELAXED) || c->members)
        return 0;
    if (call_bytes(c, kind, comm->size) < __atomic_load_n(&engine_min, __ATOMIC_RELAXED))
        return 0;
    return comm_state(comm) != NULL;
}

/* This rank's input and output, and their bytes (NULL: none here); the
 * output is always in recvbuf, the input in it where *in_recv. */
static void my_buffers(const devcall_t *k, const void **in, size_t *inb, void **out,
                       size_t *outb, int *in_recv)
{
    const weft__coll_t *c = k->args;
    int me = k->comm->rank, in_place = c->sendbuf == WEFT_IN_PLACE || c->sendbuf == c->recvbuf;

    *in_recv = k->kind == WEFT__COLL_BCAST ||
               (in_place && (k->kind != WEFT__COLL_REDUCE || me == c->root));
    *in = NULL;
    *out = NULL;
    *inb = *outb = 0;
    switch (k->kind) {
    case WEFT__COLL_ALLREDUCE:
        *in = in_place ? c->recvbuf : c->sendbuf;
        *out = c->recvbuf;
        *inb = *outb = c->count * c->esize;
        break;
    case WEFT__COLL_REDUCE_SCATTER:
        *in = c->sendbuf;
        *inb = c->count * c->esize;
        *out = c->recvbuf;
        *outb = c->rcounts[me] * c->esize;
        break;
    case WEFT__COLL_ALLGATHER:
        *inb = elements_of(c, me) * c->esize;
        *in = in_place ? (const char *)c->recvbuf + gather_displ(c, me) * c->esize
                       : c->sendbuf;
        *out = c->recvbuf;
        break;
    case WEFT__COLL_BCAST:
        *in = c->recvbuf;
        *inb = c->count * c->esize;
        break;
    default: /* reduce */
        *in = me == c->root && in_place ? c->recvbuf : c->sendbuf;
        *inb = c->count * c->esize;
        if (me == c->root) {
            *out = c->recvbuf;
            *outb = *inb;
        }
        break;
    }
}

/* 1 when p is len bytes of device memory the kernels may address: on_dev
 * says whether its buffer is device memory, as the entry point found. */
static int device_ok(const devcall_t *k, const void *p, size_t len, int on_dev)
{
    return on_dev && p && len && (uintptr_t)p % k->args->esize == 0;
}

/* Fills k->me: whether this rank's side can run here, with its handles. */
static void describe_me(devcall_t *k)
{
    const weft_transport_device_t *s = k->dev->device;
    unsigned need = WEFT_TRANSPORT_DEVICE_IPC;
    const void *in;
    void *out;
    size_t inb, outb;
    int ok, in_recv;

    memset(&k->me, 0, sizeof(k->me));
    if (!k->sdev && !k->rdev)
        return; /* host buffers: no */
    if (reduces(k->kind))
        need |= WEFT_TRANSPORT_DEVICE_REDUCE;
    my_buffers(k, &in, &inb, &out, &outb, &in_recv);
    ok = (s->features(k->dev->ctx) & need) == need;
    if (reduces(k->kind))
        ok = ok && (unsigned)k->args->op <= WEFT_BXOR;
    if (k->kind == WEFT__COLL_REDUCE_SCATTER)
        ok = ok && k->args->sendbuf != WEFT_IN_PLACE && k->args->sendbuf != k->args->recvbuf;
    /* A rank with nothing to give (an empty block) still takes part. */
    if (ok && inb)
        ok = device_ok(k, in, inb, in_recv ? k->rdev : k->sdev) &&
             s->ipc_export(k->dev->ctx, in, inb, k->me.in) == WEFT_SUCCESS;
    if (ok && outb)
        ok = device_ok(k, out, outb, k->rdev) &&
             (k->kind != WEFT__COLL_ALLREDUCE ||
              s->ipc_export(k->dev->ctx, out, outb, k->me.out) == WEFT_SUCCESS);
    if (!ok)
        WEFT_TRACE(COLL, "%s: rank %d stages this call: %s", k->fn, k->comm->rank,
                   weft__get_error()[0] ? weft__get_error() : "its buffers or operator");
    k->me.ok = ok;
}

/* Maps what this rank reads of peer r: 0, or -1 (the error set). */
static int open_peer(devcall_t *k, int r)
{
    const weft_transport_device_t *s = k->dev->device;
    const weft__coll_t *c = k->args;
    int me = k->comm->rank;
    int want_in = 0, want_out = 0;

    switch (k->kind) {
    case WEFT__COLL_ALLREDUCE:
        want_in = want_out = 1;
        break;
    case WEFT__COLL_REDUCE_SCATTER:
        want_in = c->rcounts[me] > 0;
        break;
    case WEFT__COLL_ALLGATHER:
        want_in = elements_of(c, r) > 0;
        break;
    case WEFT__COLL_BCAST:
        want_in = r == c->root && me != c->root;
        break;
    default:
        want_in = me == c->root;
        break;
    }
    if (want_in) {
        if (s->ipc_open(k->dev->ctx, k->recs[r].in, &k->in[r], &k->tokens[k->ntokens]) !=
            WEFT_SUCCESS)
            return -1;
        k->ntokens++;
    }
    if (want_out) {
        if (s->ipc_open(k->dev->ctx, k->recs[r].out, &k->out[r], &k->tokens[k->ntokens]) !=
            WEFT_SUCCESS)
            return -1;
        k->ntokens++;
    }
    return 0;
}

static void close_all(devcall_t *k)
{
    for (int i = 0; i < k->ntokens; i++)
        if (k->tokens[i] && k->dev->device->ipc_close(k->dev->ctx, k->tokens[i]) != WEFT_SUCCESS)
            WEFT_WARN(COLL, "%s: closing a mapping of a peer's memory failed: %s", k->fn,
                      weft__get_error());
    k->ntokens = 0;
}

/* The children of k's wrapper: the records' allgather, and the votes (a
 * MIN allreduce of an int64, which is also a barrier). */
static weft_result_t run_gather(weft__coll_t *w, devcall_t *k)
{
    int n = k->comm->size;
    weft__coll_t *g = weft__coll_new(&k->me, k->recs, sizeof(rec_t), 1, WEFT_UINT8, WEFT_SUM, 0);
    weft_result_t rc;

    if (!g)
        return WEFT_ERR_NO_MEMORY;
    for (int i = 0; i < n; i++) {
        k->vlayout[i] = sizeof(rec_t);
        k->vlayout[n + i] = (size_t)i * sizeof(rec_t);
    }
    if ((rc = weft__coll_set_vectors(g, n, NULL, NULL, k->vlayout, k->vlayout + n)) !=
        WEFT_SUCCESS) {
        weft__coll_free(g);
        return rc;
    }
    weft__allgatherv_ring(g);
    return weft__coll_run_child(w, g);
}

static weft_result_t run_agree(weft__coll_t *w, devcall_t *k)
{
    weft__coll_t *g = weft__coll_new(&k->ok, &k->agreed, 1, sizeof(int64_t), WEFT_INT64,
                                     WEFT_MIN, 0);

    if (!g)
        return WEFT_ERR_NO_MEMORY;
    weft__allreduce_rd(g);
    return weft__coll_run_child(w, g);
}

/* dst = the reduction of srcs[0..n) (dst may be srcs[0]), on k's stream. */
static weft_result_t reduce_into(devcall_t *k, void *dst, const void *const *srcs, int n,
                                 size_t count)
{
    const weft_transport_device_t *s = k->dev->device;
    weft_result_t rc = WEFT_SUCCESS;

    if (!count)
        return WEFT_SUCCESS;
    for (int i = 1; i < n && rc == WEFT_SUCCESS; i++)
        rc = s->stream_reduce(k->dev->ctx, k->stream, dst, i == 1 ? srcs[0] : dst, srcs[i],
                              count, k->args->dt, k->args->op);
    if (rc == WEFT_SUCCESS && k->args->op == WEFT_AVG)
        rc = s->stream_avg(k->dev->ctx, k->stream, dst, count, k->args->dt, k->comm->size);
    return rc;
}

/* The inputs at element offset off, this rank's own first. */
static void order_inputs(devcall_t *k, const void **srcs, size_t off)
{
    int n = k->comm->size, me = k->comm->rank, j = 0;
    size_t b = off * k->args->esize;

    srcs[j++] = (const char *)k->in[me] + b;
    for (int r = 0; r < n; r++)
        if (r != me)
            srcs[j++] = (const char *)k->in[r] + b;
}

/* Part r of an allreduce of count elements over n ranks. */
static void part_of(size_t count, int n, int r, size_t *off, size_t *len)
{
    size_t base = count / (size_t)n, extra = count % (size_t)n;

    *off = (size_t)r * base + ((size_t)r < extra ? (size_t)r : extra);
    *len = base + ((size_t)r < extra);
}

static weft_result_t copy_on(devcall_t *k, void *dst, const void *src, size_t bytes)
{
    if (!bytes || dst == src)
        return WEFT_SUCCESS;
    return k->dev->device->stream_copy(k->dev->ctx, k->stream, dst, src, bytes);
}

/* The first (or only) device step of k's kind. */
static weft_result_t work_first(devcall_t *k)
{
    weft__coll_t *c = k->args;
    int n = k->comm->size, me = k->comm->rank;
    const void **srcs = k->srcs;
    size_t es = c->esize, off, len;
    weft_result_t rc = WEFT_SUCCESS;

    switch (k->kind) {
    case WEFT__COLL_ALLREDUCE:
        part_of(c->count, n, me, &off, &len);
        order_inputs(k, srcs, off);
        return reduce_into(k, (char *)c->recvbuf + off * es, srcs, n, len);
    case WEFT__COLL_REDUCE_SCATTER:
        if ((rc = weft__coll_block_offsets(c, n)) != WEFT_SUCCESS)
            return rc;
        order_inputs(k, srcs, c->offs[me]);
        return reduce_into(k, c->recvbuf, srcs, n, c->rcounts[me]);
    case WEFT__COLL_ALLGATHER:
        for (int r = 0; r < n && rc == WEFT_SUCCESS; r++)
            rc = copy_on(k, (char *)c->recvbuf + gather_displ(c, r) * es, k->in[r],
                         elements_of(c, r) * es);
        return rc;
    case WEFT__COLL_BCAST:
        return me == c->root ? WEFT_SUCCESS
                             : copy_on(k, c->recvbuf, k->in[c->root], c->count * es);
    default:
        if (me != c->root)
            return WEFT_SUCCESS;
        order_inputs(k, srcs, 0);
        return reduce_into(k, c->recvbuf, srcs, n, c->count);
    }
}

/* allreduce's second step: every other part from its owner's output. */
static weft_result_t work_second(devcall_t *k)
{
    weft__coll_t *c = k->args;
    int n = k->comm->size, me = k->comm->rank;
    weft_result_t rc = WEFT_SUCCESS;
    size_t off, len;

    for (int r = 0; r < n && rc == WEFT_SUCCESS; r++) {
        if (r == me)
            continue;
        part_of(c->count, n, r, &off, &len);
        rc = copy_on(k, (char *)c->recvbuf + off * c->esize,
                     (const char *)k->out[r] + off * c->esize, len * c->esize);
    }
    return rc;
}

enum { P_GATHER, P_OPEN, P_DECIDE, P_SECOND, P_LAST, P_STAGED };

/* After a vote: the failure of the lowest rank whose step failed (this
 * rank's own error, or one naming that rank), or WEFT_SUCCESS. The
 * engine puts the function's name before a step's error. */
static weft_result_t verdict(devcall_t *k)
{
    if (k->agreed == k->comm->size)
        return WEFT_SUCCESS;
    if (k->agreed == k->comm->rank)
        return weft__error(k->err, "%s", k->why);
    return weft__error(WEFT_ERR_SYSTEM, "GPU to GPU: rank %lld's device step failed (see its "
                       "error); the result is not complete", (long long)k->agreed);
}

/* Runs a device step, waits for it, and votes on the outcome: every
 * rank learns of a failure anywhere, instead of waiting for a rank that
 * gave up or returning a result a peer did not finish. */
static weft_result_t step_and_vote(weft__coll_t *w, devcall_t *k,
                                   weft_result_t (*work)(devcall_t *))
{
    weft_result_t rc;

    weft__clear_error();
    rc = work(k);
    if (rc == WEFT_SUCCESS)
        rc = k->dev->device->stream_sync(k->dev->ctx, k->stream);
    k->ok = k->comm->size;
    if (rc != WEFT_SUCCESS) {
        k->err = rc;
        snprintf(k->why, sizeof(k->why), "GPU to GPU: %s", weft__get_error());
        k->ok = k->comm->rank;
    }
    return run_agree(w, k);
}

/* The ranks agreed to stage: the call runs as coll_stage.c runs it, the
 * same on every rank. */
static weft_result_t run_staged(weft__coll_t *w, devcall_t *k)
{
    weft__coll_t *child = k->c;
    weft_result_t rc;

    close_all(k);
    __atomic_fetch_add(&k->d->staged, 1, __ATOMIC_RELAXED);
    k->c = NULL;
    w->phase = P_STAGED;
    if ((rc = k->stage(k->comm, child, k->kind, k->tune_bytes, k->even, k->tuned,
                       k->sdev, k->rdev, &child)) != WEFT_SUCCESS)
        return rc;
    return weft__coll_run_child(w, child);
}

static weft_result_t devcall_step(weft__coll_t *w, int *done)
{
    devcall_t *k = w->ctx;
    weft_result_t rc;
    int n = k->comm->size, me = k->comm->rank;

    switch (w->phase++) {
    case P_GATHER:
        describe_me(k);
        return run_gather(w, k);
    case P_OPEN:
        /* Every rank sees every record: where one says no, all stage at
         * once, without the vote (host-buffer calls pay one collective). */
        k->agreed = n;
        for (int r = 0; r < n; r++)
            if (!k->recs[r].ok)
                k->agreed = r;
        if (k->agreed != n)
            return run_staged(w, k);
        /* A vote as step_and_vote's: n where all is well. */
        k->ok = n;
        weft__clear_error();
        for (int r = 0; r < n && k->ok == n; r++)
            if (open_peer(k, r) != 0) {
                WEFT_INFO(COLL, "%s: rank %d cannot map rank %d's memory: %s; the call is "
                          "staged through host memory", k->fn, me, r, weft__get_error());
                k->ok = me;
            }
        return run_agree(w, k);
    case P_DECIDE:
        if (k->agreed != n)
            return run_staged(w, k);
        __atomic_fetch_add(&k->d->runs, 1, __ATOMIC_RELAXED);
        weft__coll_free(k->c); /* unrun: see weft__coll_device_new */
        k->c = NULL;
        if ((rc = comm_stream(k->d, &k->stream)) != WEFT_SUCCESS)
            return weft__error(rc, "GPU to GPU: no device stream: %s", weft__get_error());
        if (k->kind != WEFT__COLL_ALLREDUCE)
            w->phase = P_LAST;
        return step_and_vote(w, k, work_first);
    case P_SECOND:
        if ((rc = verdict(k)) != WEFT_SUCCESS)
            return rc;
        return step_and_vote(w, k, work_second);
    case P_LAST:
        /* No rank reads another's memory any more. */
        close_all(k);
        if ((rc = verdict(k)) != WEFT_SUCCESS)
            return rc;
        *done = 1;
        return WEFT_SUCCESS;
    default: /* P_STAGED: the staged child finished */
        *done = 1;
        return WEFT_SUCCESS;
    }
}

static void devcall_free(void *p)
{
    devcall_t *k = p;

    close_all(k);
    if (k->c)
        weft__coll_free(k->c);
    free(k->recs);
    free(k->vlayout);
    free(k->tokens);
    free(k->srcs);
    free(k->in);
    free(k->out);
    free(k);
}

weft_result_t weft__coll_device_new(weft_comm_t comm, weft__coll_t *c, weft__coll_kind_t kind,
                                    size_t tune_bytes, int even, int tuned, int sdev, int rdev,
                                    weft__coll_stage_fn stage, weft__coll_t **out)
{
    size_t n = (size_t)comm->size;
    weft__coll_t *w = weft__coll_new(c->sendbuf, c->recvbuf, c->count, c->esize, c->dt, c->op,
                                     c->root);
    devcall_t *k = calloc(1, sizeof(*k));

    if (k) {
        *k = (devcall_t){ .comm = comm, .d = comm_state(comm), .kind = kind, .c = c,
                          .tune_bytes = tune_bytes, .even = even, .tuned = tuned,
                          .stage = stage, .sdev = sdev, .rdev = rdev };
        k->recs = calloc(n, sizeof(*k->recs));
        k->vlayout = calloc(2 * n, sizeof(*k->vlayout));
        k->tokens = calloc(2 * n, sizeof(*k->tokens));
        k->srcs = calloc(n, sizeof(*k->srcs));
        k->in = calloc(n, sizeof(*k->in));
        k->out = calloc(n, sizeof(*k->out));
    }
    if (!w || !k || !k->recs || !k->vlayout || !k->tokens || !k->srcs || !k->in || !k->out) {
        if (k) {
            k->c = NULL;
            devcall_free(k);
        }
        if (w)
            weft__coll_free(w);
        weft__coll_free(c);
        return weft__error(WEFT_ERR_NO_MEMORY, "weft_%s: cannot allocate the state of a "
                           "device collective", weft__coll_kind_names[kind]);
    }
    k->dev = k->d->dev;
    snprintf(k->fn, sizeof(k->fn), "weft_%s", weft__coll_kind_names[kind]);
    /* The staged form's algorithm is chosen now, in call order: a shared
     * one takes the communicator's next generation, and overlapping
     * calls must take theirs in the same order on every rank. Run GPU to
     * GPU instead, c is freed unrun and its generation given up, on
     * every rank alike. */
    if (!tuned)
        weft__tune_choose(c, comm, kind, tune_bytes, even);
    k->tuned = 1;
    /* The wrapper carries the call's arguments, for the device steps and
     * for WEFT_CHECK; c goes before them when it runs GPU to GPU. */
    if (weft__coll_set_vectors(w, (int)n, c->scounts, c->sdispls, c->rcounts, c->rdispls) !=
        WEFT_SUCCESS) {
        devcall_free(k);
        weft__coll_free(w);
        return WEFT_ERR_NO_MEMORY;
    }
    k->args = w;
    w->ctx = k;
    w->ctx_free = devcall_free;
    w->step = devcall_step;
    *out = w;
    return WEFT_SUCCESS;
}
