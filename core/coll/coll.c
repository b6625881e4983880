/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * coll.c: running collective algorithms round by round (see coll.h).
 */
#include "config.h"

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/base/error.h"
#include "core/coll/coll.h"
#include "core/progress/progress.h"
#include "core/progress/request.h"

const char *const weft__coll_kind_names[WEFT__COLL_NKINDS] = {
    "barrier", "broadcast", "reduce", "allreduce", "reduce_scatter", "scan", "exscan",
    "gather", "scatter", "allgather", "alltoall", "gather_axis", "allgather_axis",
    "scatter_axis", "reduce_scatter_axis", "alltoall_axis", "broadcast_bytes",
    "allgather_bytes"
};

/* An instance's collectives in flight, advanced by every wait.
 * lock guards the list and is held while it is walked. */
struct weft__coll_engine {
    pthread_mutex_t lock;
    struct weft__coll *live;
};

/* Internal tags: bit 30 keeps them apart from communicator creation's; the
 * collective's sequence number keeps overlapping collectives apart. Within
 * one collective, the messages of a pair match in the order they were sent
 * (the transport's per-pair ordering): ranks count their rounds
 * differently (a broadcast's root has no receive round), so rounds must
 * not be part of the tag. An algorithm running independent streams
 * between the same pair (the two trees of the double binary tree) gives
 * them lanes (the op's tag, 0 to WEFT__COLL_LANES - 1), each ordered on its
 * own. */
#define COLL_TAG(seq, lane) \
    ((int)(0x40000000u | ((unsigned)(lane) << 28) | ((seq) & 0x0fffffffu)))

/* A heap block of weft__coll_alloc: the header keeps what follows 16-byte
 * aligned. */
typedef struct weft__coll_block {
    struct weft__coll_block *next;
    size_t pad;
} coll_block_t;

/* A freed collective is kept for the next one on its thread, as requests
 * are (request.c): a calloc and a free of a kilobyte were a tenth of a
 * small collective. Two: a collective's child is freed just before it. */
#define COLL_SPARES_MAX 2

static __thread weft__coll_t *spares[COLL_SPARES_MAX];
static __thread int nspares;

/* Drained with the request layer's cache, at thread exit and instance
 * end (weft__request_cache_add_drain). */
static void coll_cache_drain(void)
{
    while (nspares > 0)
        free(spares[--nspares]);
}

static void *coll_take(weft__coll_t *c, size_t bytes, int zero)
{
    size_t at = (c->room_used + 15) & ~(size_t)15;
    coll_block_t *b;

    if (bytes <= WEFT__COLL_ROOM && at <= WEFT__COLL_ROOM - bytes) {
        c->room_used = at + bytes;
        if (zero)
            memset(c->room + at, 0, bytes);
        return c->room + at;
    }
    b = bytes > SIZE_MAX - sizeof(*b) ? NULL
        : zero ? calloc(1, sizeof(*b) + bytes) : malloc(sizeof(*b) + bytes);
    if (!b) {
        weft__error(WEFT_ERR_NO_MEMORY, "cannot allocate %zu bytes for a collective", bytes);
        return NULL;
    }
    b->next = c->blocks;
    c->blocks = b;
    return b + 1;
}

void *weft__coll_alloc(weft__coll_t *c, size_t bytes)
{
    return coll_take(c, bytes, 1);
}

void *weft__coll_scratch(weft__coll_t *c, size_t bytes)
{
    return coll_take(c, bytes, 0);
}

weft__coll_t *weft__coll_new(const void *sendbuf, void *recvbuf, size_t count, size_t esize,
                             weft_dtype_t dt, weft_op_t op, int root)
{
    weft__coll_t *c;

    if (nspares > 0) {
        c = spares[--nspares];
        memset(c, 0, offsetof(weft__coll_t, why));
    } else if (!(c = malloc(sizeof(*c)))) {
        weft__error(WEFT_ERR_NO_MEMORY, "cannot allocate a collective");
        return NULL;
    } else {
        memset(c, 0, offsetof(weft__coll_t, why));
    }
    c->why[0] = '\0';
    c->sendbuf = sendbuf;
    c->recvbuf = recvbuf;
    c->count = count;
    c->esize = esize;
    c->dt = dt;
    c->op = op;
    c->root = root;
    return c;
}

weft_result_t weft__coll_set_vectors(weft__coll_t *c, int n, const size_t *scounts,
                                     const size_t *sdispls, const size_t *rcounts,
                                     const size_t *rdispls)
{
    const size_t *in[4] = { scounts, sdispls, rcounts, rdispls };
    const size_t **out[4] = { &c->scounts, &c->sdispls, &c->rcounts, &c->rdispls };

    /* In the collective's room for up to 16 ranks. */
    c->vec = weft__coll_scratch(c, 4 * (size_t)n * sizeof(*c->vec));
    if (!c->vec)
        return WEFT_ERR_NO_MEMORY;
    for (int i = 0; i < 4; i++) {
        if (!in[i])
            continue;
        memcpy(c->vec + (size_t)i * (size_t)n, in[i], (size_t)n * sizeof(*c->vec));
        *out[i] = c->vec + (size_t)i * (size_t)n;
    }
    return WEFT_SUCCESS;
}

weft_result_t weft__coll_block_offsets(weft__coll_t *c, int n)
{
    if (!(c->offs = malloc(((size_t)n + 1) * sizeof(*c->offs))))
        return weft__error(WEFT_ERR_NO_MEMORY, "reduce_scatter: out of memory");
    c->offs[0] = 0;
    for (int b = 0; b < n; b++)
        c->offs[b + 1] = c->offs[b] + c->rcounts[b];
    return WEFT_SUCCESS;
}

weft_result_t weft__coll_post(weft__coll_t *c, int n, const weft_p2p_op_t *ops)
{
    weft_p2p_op_t few[16], *tagged = few;
    weft_result_t rc;

    if (weft__mctx_aborted(&c->comm->internal))
        return weft__error(WEFT_ERR_ABORTED, "the communicator was aborted");

    /* With n == 0 nothing is copied in and the batch reads nothing, which
     * gcc cannot tell: give it one defined entry rather than a warning. */
    few[0] = (weft_p2p_op_t){ 0 };
    if (n > (int)(sizeof(few) / sizeof(few[0])) && !(tagged = malloc((size_t)n * sizeof(*ops))))
        return weft__error(WEFT_ERR_NO_MEMORY, "cannot allocate a round of %d operations", n);
    for (int i = 0; i < n; i++) {
        tagged[i] = ops[i];
        tagged[i].tag = COLL_TAG(c->seq, ops[i].tag & (WEFT__COLL_LANES - 1));
        if (c->members)
            tagged[i].peer = c->members[ops[i].peer];
    }
    c->round++;
    rc = weft__request_post_batch(&c->comm->internal, n, tagged, &c->inner);
    if (tagged != few)
        free(tagged);
    return rc;
}

void weft__coll_set_group(weft__coll_t *c, int n, int me, const int *members)
{
    c->gsize = n;
    c->grank = me;
    c->members = members;
}

weft_result_t weft__coll_run_child(weft__coll_t *c, weft__coll_t *child)
{
    if (!child->gsize)
        weft__coll_set_group(child, c->gsize, c->grank, c->members);
    child->comm = c->comm;
    child->seq = c->seq;
    child->result = WEFT_SUCCESS;
    c->child = child;
    return WEFT_SUCCESS;
}

/* Says which exchange of a failed round failed, and with whom. */
static void explain_round(weft__coll_t *c, const struct weft_request *round)
{
    for (int i = 0; i < round->nsub; i++) {
        const weft__subop_t *sub = &round->subs[i];

        if (sub->result != round->result)
            continue;
        snprintf(c->why, sizeof(c->why), "%s rank %d of the communicator failed: %s",
                 sub->kind == WEFT_P2P_SEND ? "sending to" : "receiving from", sub->peer,
                 weft_strerror(sub->result));
        return;
    }
    snprintf(c->why, sizeof(c->why), "%s", weft_strerror(round->result));
}

void weft__coll_note_mismatch(weft__coll_t *c, int peer, size_t got, size_t want)
{
    if (c->mismatch)
        return;
    c->mismatch = 1;
    c->mismatch_peer = peer;
    c->mismatch_got = got;
    c->mismatch_want = want;
}

/* Every receive of a collective knows how many bytes its peer sends when
 * the ranks passed the same arguments: a message of another length means
 * they did not. Whether the round failed of nothing but that (a longer
 * message is cut to the receive, WEFT_ERR_TRUNCATED): then the collective
 * goes on, so that its peers are not left waiting, and fails at its end. */
static int round_lengths(weft__coll_t *c, const struct weft_request *round)
{
    int only_lengths = 1;

    for (int i = 0; i < round->nsub; i++) {
        const weft__subop_t *sub = &round->subs[i];

        if (sub->result != WEFT_SUCCESS && sub->result != WEFT_ERR_TRUNCATED)
            only_lengths = 0;
        else if (sub->kind == WEFT_P2P_RECV && sub->len != sub->bytes)
            weft__coll_note_mismatch(c, sub->peer, sub->len, sub->bytes);
    }
    return only_lengths && c->mismatch;
}

/* Reaps what the last step started: the round's batch or the child.
 * *busy when it is still running. */
static void reap(weft__coll_t *c, int *busy)
{
    int done = 0;

    *busy = 0;
    if (c->inner) {
        weft__request_poll(c->inner, &done);
        if (!done) {
            *busy = 1;
            return;
        }
        if (c->inner->result != WEFT_SUCCESS && c->result == WEFT_SUCCESS &&
            !round_lengths(c, c->inner)) {
            c->result = c->inner->result;
            explain_round(c, c->inner);
        } else if (c->inner->result == WEFT_SUCCESS) {
            round_lengths(c, c->inner);
        }
        weft__request_free(c->inner);
        c->inner = NULL;
    }
    if (c->child) {
        weft__coll_poll(c->child, &done);
        if (!done) {
            *busy = 1;
            return;
        }
        if (c->child->mismatch)
            weft__coll_note_mismatch(c, c->child->mismatch_peer, c->child->mismatch_got,
                                     c->child->mismatch_want);
        /* A child that failed of a mismatch alone ran its course, as this
         * one goes on to run its own. */
        if (c->child->result != WEFT_SUCCESS && c->result == WEFT_SUCCESS &&
            !(c->child->mismatch && c->child->result == WEFT_ERR_MISMATCH)) {
            c->result = c->child->result;
            memcpy(c->why, c->child->why, sizeof(c->why));
        }
        weft__coll_free(c->child);
        c->child = NULL;
    }
}

static weft_result_t coll_poll_locked(weft__coll_t *c, int *done);

/* One thread at a time advances a collective: the others (and a progress
 * call nested in its own step) see it as still running. */
weft_result_t weft__coll_poll(weft__coll_t *c, int *done)
{
    weft_result_t rc;

    if (__atomic_exchange_n(&c->polling, 1, __ATOMIC_ACQUIRE)) {
        *done = 0;
        return WEFT_SUCCESS;
    }
    rc = coll_poll_locked(c, done);
    __atomic_store_n(&c->polling, 0, __ATOMIC_RELEASE);
    return rc;
}

/* The progress hook: advances every collective in flight that the
 * calling thread started (a communicator is used by one thread at a time,
 * so another thread's collectives are its own to advance); skipped when
 * an enclosing call is already at it. */
static void progress_live(weft__instance_t *inst, void *arg)
{
    struct weft__coll_engine *e = arg;
    pthread_t self;

    (void)inst;
    if (!__atomic_load_n(&e->live, __ATOMIC_RELAXED) || pthread_mutex_trylock(&e->lock))
        return;
    self = pthread_self();
    for (weft__coll_t *c = e->live; c; c = c->next_live) {
        int done;

        /* Another thread's collective is its own to advance (and to
         * finish): test the owner before touching its state. */
        if (pthread_equal(c->owner, self) && !c->finished)
            weft__coll_poll(c, &done);
    }
    pthread_mutex_unlock(&e->lock);
}

weft_result_t weft__coll_engine_init(weft__instance_t *inst)
{
    struct weft__coll_engine *e = calloc(1, sizeof(*e));
    weft_result_t rc;

    if (!e)
        return weft__error(WEFT_ERR_NO_MEMORY, "cannot allocate the collective engine");
    pthread_mutex_init(&e->lock, NULL);
    rc = weft__progress_hook_add(inst, progress_live, e);
    if (rc != WEFT_SUCCESS) {
        pthread_mutex_destroy(&e->lock);
        free(e);
        return rc;
    }
    weft__request_cache_add_drain(coll_cache_drain);
    inst->coll = e;
    return WEFT_SUCCESS;
}

void weft__coll_engine_fini(weft__instance_t *inst)
{
    struct weft__coll_engine *e = inst->coll;

    if (!e)
        return;
    pthread_mutex_destroy(&e->lock);
    free(e);
    inst->coll = NULL;
}

static void live_add(weft__coll_t *c)
{
    struct weft__coll_engine *e = c->comm->inst->coll;

    pthread_mutex_lock(&e->lock);
    c->owner = pthread_self();
    c->next_live = e->live;
    c->prev_live = NULL;
    if (e->live)
        e->live->prev_live = c;
    /* Atomic: progress_live peeks at the head without the lock. */
    __atomic_store_n(&e->live, c, __ATOMIC_RELAXED);
    c->live = 1;
    pthread_mutex_unlock(&e->lock);
}

static void live_remove(weft__coll_t *c)
{
    struct weft__coll_engine *e = c->comm->inst->coll;

    pthread_mutex_lock(&e->lock);
    if (c->prev_live)
        c->prev_live->next_live = c->next_live;
    else
        __atomic_store_n(&e->live, c->next_live, __ATOMIC_RELAXED);
    if (c->next_live)
        c->next_live->prev_live = c->prev_live;
    c->live = 0;
    pthread_mutex_unlock(&e->lock);
}

static weft_result_t coll_poll_locked(weft__coll_t *c, int *done)
{
    *done = c->finished;
    while (!c->finished) {
        int busy;

        reap(c, &busy);
        if (busy)
            return WEFT_SUCCESS;
        if (c->result == WEFT_SUCCESS) {
            weft_result_t rc;

            c->again = 0;
            rc = c->step(c, done);

            if (rc != WEFT_SUCCESS) {
                c->result = rc;
                snprintf(c->why, sizeof(c->why), "%s", weft__get_error());
            }
        }
        if (*done && c->result == WEFT_SUCCESS && c->mismatch) {
            c->result = WEFT_ERR_MISMATCH;
            snprintf(c->why, sizeof(c->why), "rank %d sent %zu bytes where this rank "
                     "expected %zu: the ranks passed different counts or datatypes",
                     c->mismatch_peer, c->mismatch_got, c->mismatch_want);
        }
        if (c->result != WEFT_SUCCESS || *done) {
            /* A failed step may have posted before failing: cancel that. */
            if (c->result != WEFT_SUCCESS)
                weft__coll_cancel(c, c->result);
            c->finished = 1;
            *done = 1;
            return WEFT_SUCCESS;
        }
        /* A step waiting on something other than a round (the shared
         * segment) runs again next time. */
        if (c->again)
            return WEFT_SUCCESS;
        /* A step that neither finished nor started anything would never
         * run again. */
        if (!c->inner && !c->child) {
            c->result = weft__error(WEFT_ERR_INTERNAL, "a collective step stalled");
            c->finished = 1;
            *done = 1;
            return WEFT_SUCCESS;
        }
    }
    return WEFT_SUCCESS;
}

void weft__coll_cancel(weft__coll_t *c, weft_result_t rc)
{
    if (c->result == WEFT_SUCCESS)
        c->result = rc;
    if (c->inner)
        weft__request_cancel(c->inner, rc);
    if (c->child)
        weft__coll_cancel(c->child, rc);
}

void weft__coll_free(weft__coll_t *c)
{
    if (c->live)
        live_remove(c);
    /* A round still in flight (a step failed after posting it, and the
     * cancel is not through yet) is left to finish in the background. */
    if (c->inner)
        weft__request_release(c->inner);
    if (c->child)
        weft__coll_free(c->child);
    if (c->ctx_free)
        c->ctx_free(c->ctx);
    if (c->waits)
        c->waits->release(c);
    free(c->tmp);
    free(c->offs);
    free(c->premul_input);
    while (c->blocks) {
        coll_block_t *b = c->blocks;

        c->blocks = b->next;
        free(b);
    }
    if (nspares < COLL_SPARES_MAX && weft__request_cache_arm())
        spares[nspares++] = c;
    else
        free(c);
}

void weft__coll_describe(const weft__coll_t *c, char *buf, size_t cap)
{
    const weft__coll_t *at = c;
    int n;

    n = snprintf(buf, cap, "weft_%s", (unsigned)c->kind < WEFT__COLL_NKINDS
                 ? weft__coll_kind_names[c->kind] : "collective");
    while (at->child)
        at = at->child;
    if (n < 0 || (size_t)n >= cap)
        return;
    if (!at->inner && at->again) {
        if (at->waits)
            at->waits->describe(at, buf + n, cap - (size_t)n);
        return;
    }
    if (!at->inner)
        return;
    for (int i = 0; i < at->inner->nsub; i++) {
        const weft__subop_t *sub = &at->inner->subs[i];

        if (sub->state == WEFT__SUBOP_DONE)
            continue;
        snprintf(buf + n, cap - (size_t)n, ", waiting to %s rank %d,", sub->kind ==
                 WEFT_P2P_SEND ? "send to" : "receive from", sub->peer);
        return;
    }
}

weft_request_t weft__coll_blocking_marker;

/* A blocking collective whose step waits on something other than a round
 * (weft__progress_wait_for's target): c is the whole collective, at the
 * one that waits. */
typedef struct inline_wait {
    weft__coll_t *c, *at;
    int done;
} inline_wait_t;

/* The collective c's step waits on now (its deepest child), or NULL
 * when c finished. */
static weft__coll_t *inline_wait_at(const inline_wait_t *w)
{
    weft__coll_t *at = w->c;

    if (w->done)
        return NULL;
    while (at->child)
        at = at->child;
    return at;
}

/* Done when c finished, moved on to a round (waited for as a request),
 * or moved on to another child: w->at may be freed by then, its memory
 * another collective's, so the wait starts again on the new one. */
static int inline_wait_poll(void *arg)
{
    inline_wait_t *w = arg;
    weft__coll_t *at;

    coll_poll_locked(w->c, &w->done);
    at = inline_wait_at(w);
    return !at || at->inner != NULL || at != w->at;
}

/* On the collective waited on now, never on w->at once it is gone. */
static void inline_wait_sleeping(void *arg, int on)
{
    inline_wait_t *w = arg;
    weft__coll_t *at = inline_wait_at(w);

    if (at && !at->inner && at->waits)
        at->waits->sleeping(at, on);
}

/* The blocking form of weft__coll_start: each round is waited for here,
 * under one deadline for the whole collective. */
static weft_result_t coll_run_inline(weft__coll_t *c)
{
    weft__instance_t *inst = c->comm->inst;
    const char *name = weft__coll_kind_names[c->kind];
    int64_t deadline = 0;
    weft_result_t rc;
    int done = 0;

    for (;;) {
        weft__coll_t *at = c;

        coll_poll_locked(c, &done);
        if (done)
            break;
        while (at->child)
            at = at->child;
        /* A step leaves a round or a child behind (coll_poll_locked fails
         * the collective otherwise), and the deepest child a round, unless
         * it waits on something else (and then says how: at->waits). */
        if (at->inner) {
            rc = weft__request_wait_until(at->inner, inst->timeout_ms, &deadline);
        } else {
            inline_wait_t w = { c, at, 0 };
            weft__wait_target_t t = { inline_wait_poll, inline_wait_sleeping, &w,
                                      &at->comm->ctx };

            rc = weft__progress_wait_for(inst, &t, inst->timeout_ms, &deadline);
            if (rc == WEFT_ERR_ABORTED)
                weft__coll_cancel(c, rc);
        }
        if (rc == WEFT_ERR_TIMEOUT) {
            char what[160];

            weft__coll_describe(c, what, sizeof(what));
            weft__coll_cancel(c, rc);
            weft__coll_free(c);
            return weft__error(rc, "%s did not complete within %d ms (WEFT_TIMEOUT)", what,
                               inst->timeout_ms);
        }
    }
    rc = c->result;
    /* A why that names the call already (the WEFT_CHECK wrapper's, which
     * a nonblocking call's wait reports as it is) is not named twice. */
    if (rc != WEFT_SUCCESS && !strncmp(c->why, "weft_", 5) &&
        !strncmp(c->why + 5, name, strlen(name)) && c->why[5 + strlen(name)] == ':')
        weft__error(rc, "%s", c->why);
    else if (rc != WEFT_SUCCESS)
        weft__error(rc, "weft_%s: %s", name, c->why[0] ? c->why : weft_strerror(rc));
    weft__coll_free(c);
    return rc;
}

/* The request of a nonblocking collective: the engine drives it. */
static void request_poll(struct weft_request *req, int *done)
{
    weft__coll_t *c = req->owner;

    weft__coll_poll(c, done);
    req->result = c->result;
}

static void request_cancel(struct weft_request *req, weft_result_t rc)
{
    weft__coll_cancel(req->owner, rc);
}

static void request_release(struct weft_request *req)
{
    weft__coll_free(req->owner);
}

static void request_describe(const struct weft_request *req, char *buf, size_t cap)
{
    weft__coll_describe(req->owner, buf, cap);
}

static const char *request_why(const struct weft_request *req)
{
    const weft__coll_t *c = req->owner;

    return c->why[0] ? c->why : NULL;
}

static const weft__request_ops_t coll_request_ops = {
    request_poll, request_cancel, request_release, request_describe, request_why
};

weft_result_t weft__coll_start(weft_comm_t comm, weft__coll_t *c, weft__coll_kind_t kind,
                               weft_request_t *req)
{
    struct weft_request *r;
    weft_result_t rc;
    int done = 0;

    c->kind = (int)kind;
    if (!c->gsize) /* the choice of algorithm may have ordered the ranks */
        weft__coll_set_group(c, comm->size, comm->rank, NULL);
    c->comm = comm;
    c->result = WEFT_SUCCESS;
    if (req == WEFT__COLL_BLOCKING) {
        c->seq = comm->coll_seq++;
        return coll_run_inline(c);
    }
    rc = weft__request_create_complete(&comm->ctx, &r);
    if (rc != WEFT_SUCCESS) {
        weft__coll_free(c);
        return rc;
    }
    c->seq = comm->coll_seq++;
    r->ops = &coll_request_ops;
    r->owner = c;
    live_add(c);
    /* The first round goes out now, as a nonblocking call promises. */
    weft__coll_poll(c, &done);
    *req = r;
    return WEFT_SUCCESS;
}

void weft__coll_empty_request(weft_comm_t comm, weft_request_t *req)
{
    struct weft_request *r;

    if (weft__request_create_complete(&comm->ctx, &r) != WEFT_SUCCESS)
        r = NULL;
    *req = r;
}
