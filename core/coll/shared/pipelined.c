/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * pipelined.c: large allreduce, reduce_scatter, allgather,
 * all-to-all and broadcast through the communicator's node-shared
 * segments, in steps of up to a chunk slot per rank (coll/shared/segment.h).
 *
 * The payload is cut in chunks, and each chunk in parts, one per rank
 * (of an allgather: each rank's block; of a reduction: an equal share of
 * the vector, or of each rank's block; of an all-to-all: the blocks a
 * rank receives; of a broadcast: the root's buffer, the others' parts
 * empty). Per chunk a collective runs up to two stages, each one
 * step:
 *   - exchange: every rank writes to its chunk slot the parts of its
 *     input that the others own; then each folds its own part, from its
 *     input and the others' slots, straight into its output (a
 *     reduction), or copies the parts the others wrote for it (an
 *     all-to-all);
 *   - gather: every rank writes its part (the one it folded, or its block)
 *     to its slot; the others copy it out.
 * An allreduce runs both, a reduce_scatter and an all-to-all the first,
 * an allgather and a broadcast the second. A byte is copied once into
 * the segment and folded or copied once out of it; through a transport,
 * a ring copies it into the transport's buffer, out into a scratch
 * buffer, and only then folds it.
 * Every part is folded by one rank, in a fixed order, so every rank ends
 * with the same bits.
 */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "core/coll/coll.h"
#include "core/coll/shared/shared_impl.h"
#include "core/dt/copy_stream.h"
#include "core/base/error.h"
#include "core/progress/instance.h"
#include "core/dt/reduce.h"
#include "core/coll/shared/segment.h"

enum { PUBLISH, WRITE, READ };

typedef struct pipe_op {
    int exchanges, gathers;         /* its stages per chunk (0 or 1 each) */
    int folds;                      /* the exchange reduces (or copies) */
    /* Elements of the largest part there can be. */
    size_t (*largest)(const weft__coll_t *c);
    /* Chunks of the payload for parts of q elements. */
    size_t (*chunks)(const weft__coll_t *c, size_t q);
    /* Where rank r's part of chunk j is: element *in of the input,
     * element *out of the output, *len elements (0 past the end). */
    void (*part)(const weft__coll_t *c, size_t q, size_t j, int r, size_t *in, size_t *out,
                 size_t *len);
    /* Elements of this rank's output. */
    size_t (*output)(const weft__coll_t *c);
} pipe_op_t;

static size_t min_size(size_t a, size_t b)
{
    return a < b ? a : b;
}

static size_t ceil_div(size_t a, size_t b)
{
    return (a + b - 1) / b;
}

/* Elements of a part: the parts of a step (n of them in an exchange, 1
 * in a gather) fit a chunk slot, in whole cache lines; and no more than
 * the largest part of the payload (most), so that a small payload still
 * gives every rank a part. */
static size_t part_elements(const weft__coll_t *c, int parts, size_t most)
{
    size_t line = 64 / c->esize ? 64 / c->esize : 1;
    size_t q = weft__shared_chunk_bytes(c->comm->size) / c->esize / (size_t)parts;

    most = ceil_div(most, line) * line;
    if (q >= line)
        q -= q % line;
    q = min_size(q, most);
    return q ? q : 1;
}

static const unsigned char *input_of(const weft__coll_t *c)
{
    return c->sendbuf == WEFT_IN_PLACE ? c->recvbuf : c->sendbuf;
}

/* The elements of [first, first + q) below end. */
static size_t clip(size_t first, size_t q, size_t end)
{
    return first >= end ? 0 : min_size(q, end - first);
}

/* -------------------------------------------------------------- allreduce */

/* Chunk j is elements [j n q, (j + 1) n q) of the vector, rank r's part
 * the r-th q of them. */
static size_t allreduce_largest(const weft__coll_t *c)
{
    return ceil_div(c->count, (size_t)c->comm->size);
}

static size_t allreduce_chunks(const weft__coll_t *c, size_t q)
{
    return ceil_div(c->count, (size_t)c->comm->size * q);
}

static void allreduce_part(const weft__coll_t *c, size_t q, size_t j, int r, size_t *in,
                           size_t *out, size_t *len)
{
    size_t first = (j * (size_t)c->comm->size + (size_t)r) * q;

    *in = *out = first;
    *len = clip(first, q, c->count);
}

static size_t count_output(const weft__coll_t *c)
{
    return c->count;
}

/* --------------------------------------------------------- reduce_scatter */

/* Chunk j is elements [j q, (j + 1) q) of every rank's block (c->offs:
 * the blocks' offsets in the input). */
static size_t reduce_scatter_largest(const weft__coll_t *c)
{
    size_t largest = 0;

    for (int r = 0; r < c->comm->size; r++)
        if (c->rcounts[r] > largest)
            largest = c->rcounts[r];
    return largest;
}

static size_t reduce_scatter_chunks(const weft__coll_t *c, size_t q)
{
    return ceil_div(reduce_scatter_largest(c), q);
}

static void reduce_scatter_part(const weft__coll_t *c, size_t q, size_t j, int r, size_t *in,
                                size_t *out, size_t *len)
{
    *in = c->offs[r] + j * q;
    *out = j * q;
    *len = clip(j * q, q, c->rcounts[r]);
}

static size_t reduce_scatter_output(const weft__coll_t *c)
{
    return c->rcounts[c->comm->rank];
}

/* -------------------------------------------------------------- allgather */

/* Even forms only; chunk j is elements [j q, (j + 1) q) of every block. */
/* The even forms' block, every rank's. */
static size_t even_block(const weft__coll_t *c)
{
    return c->rcounts[0];
}

static size_t every_block_output(const weft__coll_t *c)
{
    return (size_t)c->comm->size * c->rcounts[0];
}

static size_t allgather_chunks(const weft__coll_t *c, size_t q)
{
    return ceil_div(c->rcounts[0], q);
}

static void allgather_part(const weft__coll_t *c, size_t q, size_t j, int r, size_t *in,
                           size_t *out, size_t *len)
{
    *in = j * q;
    *out = (size_t)r * c->rcounts[0] + j * q;
    *len = clip(j * q, q, c->rcounts[0]);
}

/* ------------------------------------------------------------- all-to-all */

/* Even forms only; chunk j is elements [j q, (j + 1) q) of every block;
 * rank r's part is both the block this rank sends it and the block it
 * receives from r, at the same place of the input and the output. */
static size_t alltoall_chunks(const weft__coll_t *c, size_t q)
{
    return ceil_div(c->rcounts[0], q);
}

static void alltoall_part(const weft__coll_t *c, size_t q, size_t j, int r, size_t *in,
                          size_t *out, size_t *len)
{
    *in = *out = (size_t)r * c->rcounts[0] + j * q;
    *len = clip(j * q, q, c->rcounts[0]);
}

static const pipe_op_t op_allreduce = { 1, 1, 1, allreduce_largest, allreduce_chunks,
                                        allreduce_part, count_output };
static const pipe_op_t op_reduce_scatter = { 1, 0, 1, reduce_scatter_largest,
                                             reduce_scatter_chunks, reduce_scatter_part,
                                             reduce_scatter_output };
static const pipe_op_t op_allgather = { 0, 1, 0, even_block, allgather_chunks,
                                        allgather_part, every_block_output };
static const pipe_op_t op_alltoall = { 1, 0, 0, even_block, alltoall_chunks,
                                       alltoall_part, every_block_output };

/* -------------------------------------------------------------- broadcast */

/* The root's part is chunk j of the buffer, the others' are empty: a
 * gather stage that only the root writes. */
static size_t bcast_largest(const weft__coll_t *c)
{
    return c->count;
}

static size_t bcast_chunks(const weft__coll_t *c, size_t q)
{
    return ceil_div(c->count, q);
}

static void bcast_part(const weft__coll_t *c, size_t q, size_t j, int r, size_t *in,
                       size_t *out, size_t *len)
{
    *in = *out = j * q;
    *len = r == c->root ? clip(j * q, q, c->count) : 0;
}

static const pipe_op_t op_bcast = { 0, 1, 0, bcast_largest, bcast_chunks, bcast_part,
                                    count_output };

/* Where the parts' input offsets count from: an in-place allgather's
 * block is in the output, a broadcast's buffer is the output. */
static const unsigned char *input_base(const weft__coll_t *c)
{
    const pipe_op_t *op = c->ctx;

    if (op == &op_allgather && c->sendbuf == WEFT_IN_PLACE)
        return (const unsigned char *)c->recvbuf +
               (size_t)c->comm->rank * c->rcounts[0] * c->esize;
    if (op == &op_bcast)
        return c->recvbuf;
    return input_of(c);
}

/* ------------------------------------------------------------- the stages */

/* Where rank r's data of step t lies in its chunk slot. A step uses
 * only part of the slot when the payload is small (the exchange stage n
 * parts, the gather stage one), and successive steps move through the
 * slot as through a ring: data written to the lines a reader has just
 * read stays in the writer's cache, and crossed between the cores of the
 * development machine at a fraction of the rate of data that had moved
 * on to the shared cache (256 KiB allreduces at 2 ranks: 41 us reusing
 * the slot's first lines, 18 us moving). Every rank derives the same
 * place from the generation and the step. */
static unsigned char *step_data(const weft__coll_t *c, const weft__shared_t *s, uint32_t t,
                                int r, int exchange, size_t q)
{
    size_t used = (exchange ? (size_t)s->n : 1) * q * c->esize;
    size_t places = s->chunk_bytes / used;
    size_t at = ((size_t)c->shared_gen + (t - 1) / 2) % places;

    return weft__shared_chunk(s, t, r) + at * used;
}

/* Copies len bytes into the output: streamed when the output is too
 * large for the cache (copy_stream.h). */
static void copy_out(const weft__coll_t *c, void *dst, const void *src, size_t len)
{
    if (c->pipe_stream)
        weft__copy_stream(dst, src, len);
    else
        memcpy(dst, src, len);
}

/* Exchange, first half: the parts the others own, at their rank's place
 * in this rank's slot. */
static void exchange_write(weft__coll_t *c, unsigned char *slot, size_t q, size_t j)
{
    const pipe_op_t *op = c->ctx;
    const unsigned char *in = input_base(c);
    size_t at, out, len;

    for (int r = 0; r < c->comm->size; r++) {
        if (r == c->comm->rank)
            continue;
        op->part(c, q, j, r, &at, &out, &len);
        if (len)
            memcpy(slot + (size_t)r * q * c->esize, in + at * c->esize, len * c->esize);
    }
}

/* Exchange, second half, of a reduction: this rank's part, its own
 * input first and then the others' in rank order, into the output. The
 * input is read by the first fold only, so an in-place output may
 * overwrite it. An allreduce folds into its slot of step t + 1 instead,
 * which its gather stage publishes, and copies the sum from there into
 * the output: the slot is free already (every rank wrote step t, so
 * finished reading step t - 1 from it), it stays in this core's cache,
 * and the output is written once, by a copy that may stream. */
static void reduce_read(weft__coll_t *c, const weft__shared_t *s, uint32_t t, size_t q,
                        size_t j)
{
    const pipe_op_t *op = c->ctx;
    int me = c->comm->rank;
    size_t at, out, len;
    const void *acc;
    unsigned char *dst, *own;

    op->part(c, q, j, me, &at, &out, &len);
    if (!len)
        return;
    own = (unsigned char *)c->recvbuf + out * c->esize;
    dst = op->gathers ? step_data(c, s, t + 1, me, 0, q) : own;
    acc = input_base(c) + at * c->esize;
    for (int r = 0; r < s->n; r++) {
        if (r == me)
            continue;
        weft__reduce(dst, acc, step_data(c, s, t, r, 1, q) + (size_t)me * q * c->esize, len,
                     c->dt, c->op);
        acc = dst;
    }
    if (c->op == WEFT_AVG)
        weft__reduce_avg_finish(dst, len, c->dt, s->n);
    if (dst != own)
        copy_out(c, own, dst, len * c->esize);
}

/* Exchange, second half, of an all-to-all: the parts the others wrote
 * for this rank into their places in the output (and an out-of-place
 * call's own block). In place, this rank's blocks for the others were
 * copied out at the first half, before their places are overwritten. */
static void scatter_read(weft__coll_t *c, const weft__shared_t *s, uint32_t t, size_t q,
                         size_t j)
{
    const pipe_op_t *op = c->ctx;
    unsigned char *dst = c->recvbuf;
    int me = c->comm->rank;
    size_t at, out, len;

    for (int r = 0; r < s->n; r++) {
        op->part(c, q, j, r, &at, &out, &len);
        if (!len)
            continue;
        if (r != me)
            copy_out(c, dst + out * c->esize,
                     step_data(c, s, t, r, 1, q) + (size_t)me * q * c->esize, len * c->esize);
        else if (c->sendbuf != WEFT_IN_PLACE)
            copy_out(c, dst + out * c->esize, input_base(c) + at * c->esize, len * c->esize);
    }
}

/* Copies src to the slot and to the output, reading src once: in
 * pieces that stay in the core's first-level cache between the two
 * copies. */
static void copy_twice(const weft__coll_t *c, unsigned char *slot, unsigned char *out,
                       const unsigned char *src, size_t len)
{
    const size_t piece = 16 * 1024;

    for (size_t o = 0; o < len; o += piece) {
        size_t n = len - o < piece ? len - o : piece;

        memcpy(slot + o, src + o, n);
        copy_out(c, out + o, slot + o, n);
    }
}

/* Gather, first half: this rank's part (its own block; a reduction's
 * sum is in the slot already) at the start of its slot; an out-of-place
 * allgather's block into its place in the output too. */
static void gather_write(weft__coll_t *c, unsigned char *slot, size_t q, size_t j)
{
    const pipe_op_t *op = c->ctx;
    const unsigned char *src;
    unsigned char *own;
    size_t at, out, len;

    op->part(c, q, j, c->comm->rank, &at, &out, &len);
    if (!len || op->folds)
        return;
    own = (unsigned char *)c->recvbuf + out * c->esize;
    src = input_base(c) + at * c->esize;
    if (src == own)
        memcpy(slot, own, len * c->esize);
    else
        copy_twice(c, slot, own, src, len * c->esize);
}

/* Gather, second half: the others' parts into the output (an
 * out-of-place allgather's own block went there at the first half). */
static void gather_read(weft__coll_t *c, const weft__shared_t *s, uint32_t t, size_t q,
                        size_t j)
{
    const pipe_op_t *op = c->ctx;
    unsigned char *dst = c->recvbuf;
    size_t at, out, len;

    for (int r = 0; r < s->n; r++) {
        op->part(c, q, j, r, &at, &out, &len);
        if (!len)
            continue;
        if (r != c->comm->rank)
            copy_out(c, dst + out * c->esize, step_data(c, s, t, r, 0, q), len * c->esize);
    }
}

/* ---------------------------------------------------------------- the step */

static void publish_nothing(weft__coll_t *c, unsigned char *dst)
{
    (void)c;
    (void)dst;
}

/* Waits for rank r, unless it gave the collective up. */
static weft_result_t wait_rank(weft__coll_t *c, const weft__shared_t *s, int r)
{
    weft_result_t rc = weft__coll_shared_given_up(c, s, r);

    return rc != WEFT_SUCCESS ? rc : weft__coll_shared_wait(c, r);
}

/* Whether the output is written with streaming stores: when it is too
 * large for the cache, and not in place of an input whose lines the
 * exchange read at the same chunk (an allreduce's, an all-to-all's):
 * those are in cache, and streaming would evict them to write them. */
static int stream_output(const weft__coll_t *c)
{
    const pipe_op_t *op = c->ctx;

    if (c->sendbuf == WEFT_IN_PLACE && (op == &op_allreduce || op == &op_alltoall))
        return 0;
    return weft__copy_stream_worth(op->output(c) * c->esize, c->comm->size,
                                   weft__shared_stream_threshold(
                                       weft__instance_llc_bytes(c->comm->inst)));
}

static weft_result_t pipe_step(weft__coll_t *c, int *done)
{
    const pipe_op_t *op = c->ctx;
    int stages = op->exchanges + op->gathers, late;
    uint32_t k = c->shared_gen;
    weft__shared_t *s;
    weft_result_t rc;
    size_t q;

    if ((rc = weft__coll_shared_enter(c, &s)) != WEFT_SUCCESS ||
        (!s->chunks && (rc = weft__shared_attach_chunks(c->comm)) != WEFT_SUCCESS))
        return rc;
    if (c->phase == PUBLISH) {
        if (op == &op_reduce_scatter && !c->offs &&
            (rc = weft__coll_block_offsets(c, c->comm->size)) != WEFT_SUCCESS)
            return rc;
        /* The generation itself carries nothing: it orders this
         * collective among the others on the segment. */
        if ((rc = weft__coll_shared_publish(c, s, 0, (uint64_t)c->count * c->esize,
                                            publish_nothing)) != WEFT_SUCCESS || c->again)
            return rc;
        c->phase = WRITE;
        c->pipe_step = 1;
        c->pipe_part = part_elements(c, op->exchanges ? c->comm->size : 1, op->largest(c));
        c->pipe_steps = op->chunks(c, c->pipe_part) * (size_t)stages;
        c->pipe_stream = stream_output(c);
    }
    q = c->pipe_part;
    for (; c->pipe_step <= c->pipe_steps; c->pipe_step++) {
        uint32_t t = c->pipe_step;
        size_t j = (t - 1) / (size_t)stages;
        int exchange = op->exchanges && (t - 1) % (size_t)stages == 0;

        if (c->phase == WRITE) {
            /* Slot t % 2 is free once every rank wrote step t - 1, and so
             * finished reading step t - 2 (step 1: once every rank is in
             * this generation, past every earlier one). */
            if (t == 1 ? !weft__shared_all_published(s, k, k, &late)
                       : !weft__shared_all_progressed(s, k, t - 1, &late))
                return wait_rank(c, s, late);
            /* Ranks whose lengths differ would cut the pipeline into
             * different steps and wait on each other: every rank sees the
             * difference here and gives the collective up at once. */
            if (t == 1)
                for (int r = 0; r < c->comm->size; r++)
                    if (!weft__coll_shared_same_length(c, s, r, (uint64_t)c->count * c->esize))
                        return weft__error(WEFT_ERR_MISMATCH, "rank %d passed %zu bytes "
                                           "where this rank passed %zu: the ranks passed "
                                           "different counts or datatypes", r,
                                           c->mismatch_got, c->mismatch_want);
            if (exchange)
                exchange_write(c, step_data(c, s, t, c->comm->rank, 1, q), q, j);
            else
                gather_write(c, step_data(c, s, t, c->comm->rank, 0, q), q, j);
            weft__shared_progress(c->comm, k, t);
            c->phase = READ;
        }
        if (!weft__shared_all_progressed(s, k, t, &late))
            return wait_rank(c, s, late);
        if (exchange && op->folds)
            reduce_read(c, s, t, q, j);
        else if (exchange)
            scatter_read(c, s, t, q, j);
        else
            gather_read(c, s, t, q, j);
        c->phase = WRITE;
        __atomic_add_fetch(&c->comm->inst->moves, 1, __ATOMIC_RELAXED);
    }
    weft__coll_shared_finish(c, done);
    return WEFT_SUCCESS;
}

static void set_pipe(weft__coll_t *c, const pipe_op_t *op)
{
    weft__coll_shared_assign(c, pipe_step, op);
}

void weft__allreduce_shared_pipelined(weft__coll_t *c)
{
    set_pipe(c, &op_allreduce);
}

void weft__reduce_scatter_shared_pipelined(weft__coll_t *c)
{
    set_pipe(c, &op_reduce_scatter);
}

void weft__allgather_shared_pipelined(weft__coll_t *c)
{
    set_pipe(c, &op_allgather);
}

void weft__alltoall_shared_pipelined(weft__coll_t *c)
{
    set_pipe(c, &op_alltoall);
}

void weft__bcast_shared_pipelined(weft__coll_t *c)
{
    set_pipe(c, &op_bcast);
}
