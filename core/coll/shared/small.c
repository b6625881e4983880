/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * small.c: small collectives through the communicator's node-shared
 * segment (coll/shared/segment.h), for communicators that live on one node.
 *
 * Each rank copies its payload into the segment and raises its arrived
 * counter; then every rank reads what it needs straight from the others'
 * payloads (a reduction folds them in rank order, so every rank computes
 * the same bits). No message, request or matching is involved: a small
 * allreduce costs a copy in, the reads and a counter, where the message
 * path costs a send and a receive per peer and step.
 *
 * A collective runs in two phases, each of which may have to wait for
 * other ranks: the step then sets c->again, and the engine calls it again
 * (weft__coll_poll) or the blocking caller waits (coll_run_inline).
 */
#include "config.h"

#include <stdio.h>
#include <string.h>

#include "core/coll/coll.h"
#include "core/coll/shared/shared_impl.h"
#include "core/base/error.h"
#include "core/dt/reduce.h"
#include "core/coll/shared/segment.h"

enum { PUBLISH, READ };

/* What one operation publishes and reads. */
typedef struct shared_op {
    /* Bytes of every rank's payload (the same on all ranks). */
    size_t (*bytes)(const weft__coll_t *c);
    /* Copies this rank's payload to dst. */
    void (*publish)(weft__coll_t *c, unsigned char *dst);
    /* Whether this rank reads rank r's payload. */
    int (*needs)(const weft__coll_t *c, int r);
    /* Reads the payloads of generation c->shared_gen. */
    void (*read)(weft__coll_t *c, const weft__shared_t *s);
} shared_op_t;

static const void *input_of(const weft__coll_t *c)
{
    return c->sendbuf == WEFT_IN_PLACE ? c->recvbuf : c->sendbuf;
}

static int needs_all(const weft__coll_t *c, int r)
{
    (void)c;
    (void)r;
    return 1;
}

/* Rank r's payload in c's generation. */
static const unsigned char *payload(const weft__coll_t *c, const weft__shared_t *s, int r)
{
    const shared_op_t *op = c->ctx;

    return weft__shared_payload(s, c->shared_gen, r, op->bytes(c));
}

static size_t vector_bytes(const weft__coll_t *c)
{
    return c->count * c->esize;
}

/* Folds count elements at byte offset off of every rank's payload into
 * dst, in rank order. */
static void fold(weft__coll_t *c, const weft__shared_t *s, void *dst, size_t off, size_t count)
{
    weft__reduce(dst, payload(c, s, 0) + off, payload(c, s, 1) + off, count, c->dt, c->op);
    for (int r = 2; r < s->n; r++)
        weft__reduce(dst, dst, payload(c, s, r) + off, count, c->dt, c->op);
    if (c->op == WEFT_AVG)
        weft__reduce_avg_finish(dst, count, c->dt, s->n);
}

/* ----------------------------------------------------------------- barrier */

static size_t no_bytes(const weft__coll_t *c)
{
    (void)c;
    return 0;
}

static void publish_nothing(weft__coll_t *c, unsigned char *dst)
{
    (void)c;
    (void)dst;
}

static void read_nothing(weft__coll_t *c, const weft__shared_t *s)
{
    (void)c;
    (void)s;
}

/* --------------------------------------------------------------- broadcast */

static void bcast_publish(weft__coll_t *c, unsigned char *dst)
{
    if (c->comm->rank == c->root)
        memcpy(dst, c->recvbuf, c->count * c->esize);
}

static int bcast_needs(const weft__coll_t *c, int r)
{
    return c->comm->rank != c->root && r == c->root;
}

static void bcast_read(weft__coll_t *c, const weft__shared_t *s)
{
    if (c->comm->rank != c->root)
        memcpy(c->recvbuf, payload(c, s, c->root), c->count * c->esize);
}

/* -------------------------------------------------------- reduce, allreduce */

static void vector_publish(weft__coll_t *c, unsigned char *dst)
{
    memcpy(dst, input_of(c), c->count * c->esize);
}

static void allreduce_read(weft__coll_t *c, const weft__shared_t *s)
{
    fold(c, s, c->recvbuf, 0, c->count);
}

static int reduce_needs(const weft__coll_t *c, int r)
{
    (void)r;
    return c->comm->rank == c->root;
}

static void reduce_read(weft__coll_t *c, const weft__shared_t *s)
{
    if (c->comm->rank == c->root)
        fold(c, s, c->recvbuf, 0, c->count);
}

/* ---------------------------------------------------------- reduce_scatter */

/* The whole input vector is published; each rank folds its own block
 * (c->rcounts, the same on every rank). */
static void reduce_scatter_read(weft__coll_t *c, const weft__shared_t *s)
{
    size_t off = 0;

    for (int r = 0; r < c->comm->rank; r++)
        off += c->rcounts[r];
    if (c->rcounts[c->comm->rank])
        fold(c, s, c->recvbuf, off * c->esize, c->rcounts[c->comm->rank]);
}

/* --------------------------------------------------- allgather, all-to-all */

/* Even forms only: every block has the same size, in rank order. */
static size_t block_bytes(const weft__coll_t *c)
{
    return c->rcounts[0] * c->esize;
}

static void allgather_publish(weft__coll_t *c, unsigned char *dst)
{
    size_t b = block_bytes(c);

    memcpy(dst, c->sendbuf == WEFT_IN_PLACE ? (const unsigned char *)c->recvbuf +
           (size_t)c->comm->rank * b : (const unsigned char *)c->sendbuf, b);
}

static void allgather_read(weft__coll_t *c, const weft__shared_t *s)
{
    size_t b = block_bytes(c);

    for (int r = 0; r < s->n; r++)
        if (r != c->comm->rank || c->sendbuf != WEFT_IN_PLACE)
            memcpy((unsigned char *)c->recvbuf + (size_t)r * b, payload(c, s, r), b);
}

static size_t alltoall_bytes(const weft__coll_t *c)
{
    return (size_t)c->comm->size * block_bytes(c);
}

static void alltoall_publish(weft__coll_t *c, unsigned char *dst)
{
    memcpy(dst, input_of(c), alltoall_bytes(c));
}

static void alltoall_read(weft__coll_t *c, const weft__shared_t *s)
{
    size_t b = block_bytes(c), mine = (size_t)c->comm->rank * b;

    for (int r = 0; r < s->n; r++)
        memcpy((unsigned char *)c->recvbuf + (size_t)r * b, payload(c, s, r) + mine, b);
}

static const shared_op_t op_barrier = { no_bytes, publish_nothing, needs_all, read_nothing };
static const shared_op_t op_bcast = { vector_bytes, bcast_publish, bcast_needs, bcast_read };
static const shared_op_t op_reduce = { vector_bytes, vector_publish, reduce_needs,
                                       reduce_read };
static const shared_op_t op_allreduce = { vector_bytes, vector_publish, needs_all,
                                          allreduce_read };
static const shared_op_t op_reduce_scatter = { vector_bytes, vector_publish, needs_all,
                                               reduce_scatter_read };
static const shared_op_t op_allgather = { block_bytes, allgather_publish, needs_all,
                                          allgather_read };
static const shared_op_t op_alltoall = { alltoall_bytes, alltoall_publish, needs_all,
                                         alltoall_read };

/* ---------------------------------------------------------------- the step */

weft_result_t weft__coll_shared_wait(weft__coll_t *c, int r)
{
    c->again = 1;
    c->wait_rank = r;
    return r >= 0 ? weft__shared_check_alive(c->comm, r) : WEFT_SUCCESS;
}

weft_result_t weft__coll_shared_enter(weft__coll_t *c, weft__shared_t **s)
{
    weft_comm_t comm = c->comm;
    weft_result_t rc;

    if (!c->shared_counted) {
        c->shared_counted = 1;
        __atomic_add_fetch(&comm->inst->unrung_inflight, 1, __ATOMIC_RELAXED);
    }
    if (!comm->shared && (rc = weft__shared_attach(comm)) != WEFT_SUCCESS)
        return rc;
    *s = comm->shared;
    return WEFT_SUCCESS;
}

weft_result_t weft__coll_shared_publish(weft__coll_t *c, weft__shared_t *s, size_t bytes,
                                        uint64_t call_bytes,
                                        void (*fill)(weft__coll_t *c, unsigned char *dst))
{
    uint32_t k = c->shared_gen;
    int late;

    /* One generation after the other on this rank; and a cell or a slot
     * is rewritten only once every rank is past its previous use
     * (coll/shared/segment.h). */
    if (s->retired != k - 1)
        return weft__coll_shared_wait(c, -1);
    if (!weft__shared_all_published(s, k - (bytes > WEFT__SHARED_SMALL ? 1 :
                                            WEFT__SHARED_DEPTH - 1), k - 1, &late))
        return weft__coll_shared_wait(c, late);
    if (bytes) /* a call of count 0 may pass NULL buffers: nothing to copy */
        fill(c, weft__shared_payload(s, k, c->comm->rank, bytes));
    /* Ordered before the readers' sight of k by weft__shared_publish. */
    weft__shared_cell(s, k, c->comm->rank)->bytes = call_bytes;
    weft__shared_publish(c->comm, k, 0);
    return WEFT_SUCCESS;
}

int weft__coll_shared_same_length(weft__coll_t *c, const weft__shared_t *s, int r,
                                  uint64_t call_bytes)
{
    uint64_t theirs = weft__shared_cell(s, c->shared_gen, r)->bytes;

    if (theirs == call_bytes)
        return 1;
    weft__coll_note_mismatch(c, r, (size_t)theirs, (size_t)call_bytes);
    return 0;
}

weft_result_t weft__coll_shared_given_up(weft__coll_t *c, const weft__shared_t *s, int r)
{
    uint32_t k = c->shared_gen;
    weft_result_t rc;

    if (weft__shared_published(s, k, r) &&
        __atomic_load_n(&weft__shared_cell(s, k, r)->abandoned, __ATOMIC_RELAXED) == k) {
        /* Most often for a rank that died: name that one instead. */
        if ((rc = weft__shared_find_lost(c->comm, k)) != WEFT_SUCCESS)
            return rc;
        return weft__error(WEFT_ERR_ABORTED, "rank %d gave this collective up", r);
    }
    return WEFT_SUCCESS;
}

/* Drops c from inst->unrung_inflight (finished or freed). */
static void shared_uncount(weft__coll_t *c)
{
    if (c->shared_counted) {
        c->shared_counted = 0;
        __atomic_sub_fetch(&c->comm->inst->unrung_inflight, 1, __ATOMIC_RELAXED);
    }
}

void weft__coll_shared_finish(weft__coll_t *c, int *done)
{
    weft__shared_retire(c->comm, c->shared_gen);
    c->shared_gen = 0; /* retired: nothing to give up when freed */
    shared_uncount(c);
    *done = 1;
}

static weft_result_t shared_step(weft__coll_t *c, int *done)
{
    const shared_op_t *op = c->ctx;
    weft__shared_t *s;
    uint32_t k = c->shared_gen;
    int me = c->comm->rank;
    size_t bytes = op->bytes(c);
    weft_result_t rc;

    if ((rc = weft__coll_shared_enter(c, &s)) != WEFT_SUCCESS)
        return rc;
    if (c->phase == PUBLISH) {
        if ((rc = weft__coll_shared_publish(c, s, bytes, bytes, op->publish)) != WEFT_SUCCESS ||
            c->again)
            return rc;
        c->phase = READ;
    }
    for (int r = 0; r < s->n; r++) {
        if (r == me || !op->needs(c, r))
            continue;
        if (!weft__shared_published(s, k, r))
            return weft__coll_shared_wait(c, r);
        if ((rc = weft__coll_shared_given_up(c, s, r)) != WEFT_SUCCESS)
            return rc;
        /* A payload of another length is not read at all: the call still
         * retires its generation in turn, and fails at its end. */
        weft__coll_shared_same_length(c, s, r, bytes);
    }
    if (bytes && !c->mismatch)
        op->read(c, s);
    weft__coll_shared_finish(c, done);
    return WEFT_SUCCESS;
}

void weft__coll_shared_withdraw(weft__coll_t *c)
{
    if (c->shared_gen && c->shared_gen == c->comm->shared_gen) {
        c->comm->shared_gen--;
        c->shared_gen = 0;
    }
}

/* ------------------------------------------- what the engine asks of them */

static void waits_sleeping(weft__coll_t *c, int on)
{
    weft__shared_sleeping(c->comm, on);
}

static void waits_describe(const weft__coll_t *c, char *buf, size_t cap)
{
    if (c->wait_rank >= 0)
        snprintf(buf, cap, ", waiting for rank %d on the shared segment,", c->wait_rank);
    else
        snprintf(buf, cap, ", waiting for an earlier collective,");
}

/* A shared collective freed before it finished gives its generation up
 * (segment.h), and no longer counts as in flight. */
static void waits_release(weft__coll_t *c)
{
    if (c->shared_gen) {
        weft__shared_abandon(c->comm, c->shared_gen);
        c->shared_gen = 0;
    }
    shared_uncount(c);
}

static const weft__coll_waits_t shared_waits = {
    waits_sleeping, waits_describe, waits_release
};

void weft__coll_shared_assign(weft__coll_t *c, weft__coll_step_fn step, const void *op)
{
    c->ctx = (void *)op;
    c->step = step;
    c->waits = &shared_waits;
    /* A generation reserved at the call's start (weft__coll_shared_reserve)
     * is the one it runs in. */
    if (!c->shared_gen)
        c->shared_gen = ++c->comm->shared_gen;
}

void weft__coll_shared_reserve(weft__coll_t *c)
{
    c->shared_gen = ++c->comm->shared_gen;
}

void weft__coll_shared_unreserve(weft__coll_t *c)
{
    if (c->shared_gen) {
        weft__shared_abandon(c->comm, c->shared_gen);
        c->shared_gen = 0;
    }
}

static void set_shared(weft__coll_t *c, const shared_op_t *op)
{
    weft__coll_shared_assign(c, shared_step, op);
}

void weft__barrier_shared(weft__coll_t *c)
{
    set_shared(c, &op_barrier);
}

void weft__bcast_shared(weft__coll_t *c)
{
    set_shared(c, &op_bcast);
}

void weft__reduce_shared(weft__coll_t *c)
{
    set_shared(c, &op_reduce);
}

void weft__allreduce_shared(weft__coll_t *c)
{
    set_shared(c, &op_allreduce);
}

void weft__reduce_scatter_shared(weft__coll_t *c)
{
    set_shared(c, &op_reduce_scatter);
}

void weft__allgather_shared(weft__coll_t *c)
{
    set_shared(c, &op_allgather);
}

void weft__alltoall_shared(weft__coll_t *c)
{
    set_shared(c, &op_alltoall);
}
