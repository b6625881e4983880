/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * adapt.c: choosing between two close algorithms by timing both on the
 * program's own calls, again and again, so that the choice follows what
 * the machine does now.
 *
 * The model (model.c) predicts from parameters measured once, at init;
 * the machine changes under it. On the development machine an allreduce
 * of 128 KiB at 2 ranks took 4.7 us on the shared pipeline in one state
 * of its cores and 14.5 us in another, where the ring took 10.1 us. So
 * where the model's runner-up is predicted within RATIO of its pick, the
 * calls of that operation and size bucket on a communicator (an entry)
 * run in cycles, counted in calls, which every rank counts alike since
 * the ranks make the same calls. A cycle ends with:
 *   - a few calls of the model's pick, then a few of the runner-up; a
 *     blocking one times itself;
 *   - a call that calibrates: before running, it sums the ranks' times
 *     with an allreduce of integer nanoseconds (exact, so every rank
 *     holds the same sums) and every rank takes the same verdict: the
 *     faster, the one in force unless the other is more than HYSTERESIS
 *     faster.
 * The other calls run the verdict in force (the model's pick in the
 * first cycle). The first cycle is MIN_PERIOD calls, so that a program
 * that makes few calls (a short benchmark) times nothing; each verdict
 * sets the next cycle: GROWTH times longer up to MAX_PERIOD, or, when the
 * loser was CLEAR times slower, CLEAR_GROWTH times longer up to
 * MAX_CLEAR with a single call of the loser, so that timing a hopeless
 * algorithm costs little (a shared 8-byte broadcast at 4 ranks took
 * 0.06 us, the pipelined one the model put at twice that 4.5 us).
 *
 * A call that starts while a calibration is still in flight (the
 * calibrating call was nonblocking) waits for its verdict: the verdict
 * must be the same on every rank, and a rank that had guessed could not
 * take its guess back; and the verdict says what the call is (the next
 * cycle's length depends on it). The waiting calls learn it in call
 * order: one of them may be the next calibration, for which the calls
 * after it wait in turn. Where a candidate runs on the node's shared
 * segment, a waiting call takes its generation when it starts, in call
 * order as every shared collective does, and gives it up when the
 * verdict is the other candidate. Calibrations rule in order.
 */
#include "config.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/base/error.h"
#include "core/base/log.h"
#include "core/coll/algo/algo.h"
#include "core/coll/shared/shared.h"
#include "core/tune/tune.h"

/* The runner-up is timed when predicted at most RATIO times the pick:
 * the model misses by less than that (tuner misses measured by weft-bench
 * --tune: 1.2 to 2 times), and timing a hopeless one costs its calls. */
#define RATIO 2.0
/* Timed calls of each candidate per cycle (the slowest of a rank's is
 * dropped: the first after a switch pays for caches the other left). */
#define EXPLORE 4
#define MIN_PERIOD 64
#define GROWTH 4
#define MAX_PERIOD 16384
#define CLEAR 4.0
#define CLEAR_GROWTH 16
#define MAX_CLEAR 262144
/* The other candidate takes over when at least 5% faster. */
#define HYSTERESIS 0.95

struct adapt_call;

/* An entry of a communicator: one operation and size bucket, even forms. */
struct weft__tune_adapt {
    int cand[2];                 /* algorithm ids: the model's pick, its runner-up */
    int pick;                    /* the verdict in force (cand[0] until the first) */
    int shared;                  /* a candidate runs on the shared segment */
    int kind;
    size_t bytes;                /* of the first call, for messages */
    uint64_t calls;              /* calls started: the next one's number */
    /* The cycle in progress, set by the last verdict: its first call,
     * its length, and the calls of each candidate it times before its
     * calibration, which is its last call. */
    uint64_t cycle_start, cycle_len;
    int explore[2];
    uint32_t started, decided;   /* calibrations started, and ruled on */
    /* Calls waiting for the calibration in flight, in call order. */
    struct adapt_call *waiters, *waiters_tail;
    /* This rank's timed calls since the last calibration started, per
     * candidate: nanoseconds, calls, the slowest. */
    int64_t ns[2], n[2], worst[2];
    weft_result_t failed;        /* given up on this rank: see waits_release */
};

/* Where there is no entry for lack of memory, this rank cannot follow
 * the others: the call fails with a message rather than run an algorithm
 * the others may not. */
static weft__tune_adapt_t oom_entry = { .failed = WEFT_ERR_NO_MEMORY };

/* What a call of an entry does. */
enum { ROLE_RUN, ROLE_TIME, ROLE_CALIBRATE };

/* A call whose algorithm waits for a verdict (in c's room), as c->ctx. */
typedef struct adapt_call {
    weft__tune_adapt_t *entry;   /* NULL once it has its verdict */
    uint64_t index;              /* its number among the entry's calls */
    uint32_t calibration;        /* the one it waits for, or runs */
    int calibrates;
    int verdict;                 /* the algorithm it runs, once known */
    struct adapt_call *next, *prev; /* on entry->waiters while it waits */
    int64_t mine[4], sums[4];    /* ns and calls of each candidate: this rank's, all ranks' */
} adapt_call_t;

static int runs_shared(int id)
{
    return (weft__algos[id].needs & (WEFT__ALGO_NEEDS_SHARED | WEFT__ALGO_NEEDS_SEGMENT)) != 0;
}

static int needs_segment(int id)
{
    return (weft__algos[id].needs & WEFT__ALGO_NEEDS_SEGMENT) != 0;
}

/* Whether algorithm id may be timed against pick for calls of bytes.
 * The pipelined algorithms' segment costs milliseconds to create (8 MiB
 * reserved at 4 ranks: 3 to 5 ms on the development machine), which a
 * program whose calls fit the shared slots would pay only to time an
 * algorithm made for larger ones (4-rank allgathers of 64 bytes: 5 us
 * pipelined, 2.6 us in the slots). */
static int may_time(int id, int pick, size_t bytes)
{
    return id != pick && (!needs_segment(id) || needs_segment(pick) ||
                          bytes > WEFT__SHARED_SLOT);
}

/* The entry of its first call: the model's pick and its closest
 * runner-up, if it has one (else cand[1] is -1: nothing to time); NULL
 * without memory. */
static weft__tune_adapt_t *entry_new(weft_comm_t comm, int kind, size_t bytes, int pick)
{
    int ids[WEFT__ALGO_COUNT], other = -1;
    double t[WEFT__ALGO_COUNT], t_pick = 0, t_other = 0;
    int n = weft__tune_candidates(comm, kind, bytes, ids, t, WEFT__ALGO_COUNT);
    weft__tune_adapt_t *a;

    for (int i = 0; i < n; i++)
        if (ids[i] == pick)
            t_pick = t[i];
    for (int i = 0; i < n; i++)
        if (may_time(ids[i], pick, bytes) && (other < 0 || t[i] < t_other)) {
            other = ids[i];
            t_other = t[i];
        }
    if (!(a = calloc(1, sizeof(*a))))
        return NULL;
    a->cand[0] = pick;
    a->cand[1] = other < 0 || t_pick <= 0 || t_other > RATIO * t_pick ? -1 : other;
    if (a->cand[1] < 0)
        return a;
    a->pick = pick;
    a->shared = runs_shared(pick) || runs_shared(other);
    a->kind = kind;
    a->bytes = bytes;
    a->cycle_len = MIN_PERIOD;
    a->explore[0] = a->explore[1] = EXPLORE;
    return a;
}

/* What call index of the cycle in progress does (and which candidate a
 * timed one runs, in *cand). */
static int role_of(const weft__tune_adapt_t *a, uint64_t index, int *cand)
{
    uint64_t at = index - a->cycle_start;
    uint64_t timed = a->cycle_len - 1 - (uint64_t)a->explore[0] - (uint64_t)a->explore[1];

    if (at == a->cycle_len - 1)
        return ROLE_CALIBRATE;
    if (at >= timed) {
        *cand = at - timed >= (uint64_t)a->explore[0];
        return ROLE_TIME;
    }
    return ROLE_RUN;
}

/* ---------------------------------------------------------- the verdict */

/* This rank's times since the last calibration, for the next one's
 * allreduce, and a fresh count. */
static void take_times(weft__tune_adapt_t *a, int64_t mine[4])
{
    for (int k = 0; k < 2; k++) {
        int64_t ns = a->ns[k], n = a->n[k];

        if (n > 1) {
            ns -= a->worst[k];
            n--;
        }
        mine[2 * k] = ns;
        mine[2 * k + 1] = n;
        a->ns[k] = a->n[k] = a->worst[k] = 0;
    }
}

/* The same on every rank: computed from the same sums. The loser's mean
 * over the winner's in *ratio (0 when a candidate went untimed). */
static int verdict(const weft__tune_adapt_t *a, const int64_t sums[4], weft_comm_t comm,
                   double *ratio)
{
    double mean[2];
    int now = a->pick == a->cand[1], other = !now, v = a->pick, timed = 1;

    for (int k = 0; k < 2; k++) {
        /* A candidate no rank timed (its calls were nonblocking): keep. */
        timed &= sums[2 * k + 1] > 0;
        mean[k] = timed ? (double)sums[2 * k] / (double)sums[2 * k + 1] : 0;
    }
    if (timed && mean[other] < HYSTERESIS * mean[now]) {
        v = a->cand[other];
        now = other;
    }
    *ratio = timed && mean[now] > 0 ? mean[!now] / mean[now] : 0;
    WEFT_INFO(TUNING, "calibration %u of %s of %zu bytes on context %u (%d ranks): %s %.2f us, "
              "%s %.2f us (%lld and %lld calls timed): %s", a->decided + 1,
              weft__coll_kind_names[a->kind], a->bytes, comm->ctx.context_id, comm->size,
              weft__algos[a->cand[0]].name, mean[0] * 1e-3, weft__algos[a->cand[1]].name,
              mean[1] * 1e-3, (long long)sums[1], (long long)sums[3], weft__algos[v].name);
    return v;
}

static void waiter_unlink(weft__tune_adapt_t *a, adapt_call_t *w)
{
    if (w->prev)
        w->prev->next = w->next;
    else
        a->waiters = w->next;
    if (w->next)
        w->next->prev = w->prev;
    else
        a->waiters_tail = w->prev;
    w->next = w->prev = NULL;
}

/* w starts calibration ++started with this rank's times so far. */
static void become_calibration(weft__tune_adapt_t *a, adapt_call_t *w)
{
    w->calibrates = 1;
    w->calibration = ++a->started;
    take_times(a, w->mine);
}

/* Calibration w ruled v: the next cycle follows it, and the calls
 * waiting for it learn, in call order, what they are. */
static void rule(weft__tune_adapt_t *a, const adapt_call_t *w, int v, double ratio)
{
    int clear = ratio >= CLEAR, loser = a->cand[1] == v ? 0 : 1;
    uint64_t len = a->cycle_len * (clear ? CLEAR_GROWTH : GROWTH);
    uint64_t cap = clear ? MAX_CLEAR : MAX_PERIOD;
    adapt_call_t *x, *next;

    a->pick = v;
    a->decided = w->calibration;
    a->cycle_start = w->index + 1;
    a->cycle_len = len < cap ? len : cap;
    a->explore[!loser] = EXPLORE;
    a->explore[loser] = clear ? 1 : EXPLORE;
    for (x = a->waiters; x; x = next) {
        int cand = 0, role = role_of(a, x->index, &cand);

        next = x->next;
        waiter_unlink(a, x);
        if (role == ROLE_CALIBRATE) {
            /* The next calibration: the calls after it wait for it. */
            become_calibration(a, x);
            for (adapt_call_t *y = next; y; y = y->next)
                y->calibration = a->started;
            return;
        }
        /* Waiting, it was not timed: it only runs its algorithm. */
        x->verdict = role == ROLE_TIME ? a->cand[cand] : v;
        x->entry = NULL;
    }
}

/* ----------------------------------------- a call that waits or calibrates */

/* A call of an entry that cannot be trusted to agree with the other
 * ranks any more fails at its first step. */
static weft_result_t failed_step(weft__coll_t *c, int *done)
{
    const weft__tune_adapt_t *a = c->ctx;

    (void)done;
    if (a == &oom_entry)
        return weft__error(a->failed, "out of memory for the tuner's state of this call");
    return weft__error(a->failed, "a calibration of the tuner for this operation and size "
                       "on this communicator was given up on this rank, so its ranks may no "
                       "longer agree on the algorithm");
}

static int fail(weft__coll_t *c, weft_comm_t comm, weft__tune_adapt_t *a)
{
    c->comm = comm;
    c->ctx = a;
    c->step = failed_step;
    return -1;
}

/* c becomes algorithm id: its reserved generation goes to a shared one,
 * or is given up; then the algorithm's first step runs. */
static weft_result_t adopt(weft__coll_t *c, int id, int *done)
{
    c->waits = NULL;
    c->ctx = NULL;
    c->phase = 0;
    c->again = 0;
    if (!runs_shared(id))
        weft__coll_shared_unreserve(c);
    weft__tune_apply(c, c->comm, id);
    return c->step(c, done);
}

static weft_result_t adapt_step(weft__coll_t *c, int *done)
{
    adapt_call_t *w = c->ctx;
    weft__tune_adapt_t *a = w->entry;
    weft__coll_t *g;
    double ratio;
    int v;

    if (!a)
        return adopt(c, w->verdict, done);
    if (a->failed != WEFT_SUCCESS)
        return weft__error(a->failed, "a calibration of the tuner on this communicator "
                           "failed on this rank");
    if (!w->calibrates) {
        c->again = 1;
        return WEFT_SUCCESS;
    }
    if (c->phase == 0) {
        /* Integer sums: every rank gets the same, whatever the order.
         * Through messages, as a calibration that was a waiting call
         * could not take a generation of the shared segment in turn. */
        g = weft__coll_new(w->mine, w->sums, 4, sizeof(int64_t), WEFT_INT64, WEFT_SUM, 0);
        if (!g)
            return WEFT_ERR_NO_MEMORY;
        weft__allreduce_rd(g);
        c->phase = 1;
        return weft__coll_run_child(c, g);
    }
    v = verdict(a, w->sums, c->comm, &ratio);
    rule(a, w, v, ratio);
    w->entry = NULL; /* ruled: nothing to undo when freed */
    return adopt(c, v, done);
}

/* The verdict travels as messages, which wake a sleeping rank: nothing to
 * flag. */
static void waits_sleeping(weft__coll_t *c, int on)
{
    (void)c;
    (void)on;
}

static void waits_describe(const weft__coll_t *c, char *buf, size_t cap)
{
    const adapt_call_t *w = c->ctx;

    snprintf(buf, cap, ", waiting for calibration %u of the tuner (every rank's timings),",
             w->calibration);
}

/* Freed before it knew its algorithm (a request freed unfinished, a
 * timeout): the other ranks may go on calibrating with this call, this
 * one cannot, so the entry fails on this rank from now on, with a
 * message rather than a hang or a mismatch. */
static void waits_release(weft__coll_t *c)
{
    adapt_call_t *w = c->ctx;

    weft__coll_shared_unreserve(c);
    if (!w->entry)
        return;
    if (!w->calibrates)
        waiter_unlink(w->entry, w);
    w->entry->failed = c->result != WEFT_SUCCESS ? c->result : WEFT_ERR_ABORTED;
}

static const weft__coll_waits_t adapt_waits = {
    waits_sleeping, waits_describe, waits_release
};

/* Makes c call number index of entry a that calibrates, or waits for the
 * calibration in flight. */
static int defer(weft__coll_t *c, weft_comm_t comm, weft__tune_adapt_t *a, uint64_t index,
                 int calibrates)
{
    adapt_call_t *w = weft__coll_alloc(c, sizeof(*w));

    if (!w) {
        /* Without room to wait, this rank cannot follow the others. */
        a->failed = WEFT_ERR_NO_MEMORY;
        return fail(c, comm, a);
    }
    w->entry = a;
    w->index = index;
    if (calibrates) {
        become_calibration(a, w);
    } else {
        w->calibration = a->started;
        w->prev = a->waiters_tail;
        if (a->waiters_tail)
            a->waiters_tail->next = w;
        else
            a->waiters = w;
        a->waiters_tail = w;
    }
    c->comm = comm;
    c->ctx = w;
    c->step = adapt_step;
    c->waits = &adapt_waits;
    if (a->shared)
        weft__coll_shared_reserve(c);
    return -1;
}

/* ------------------------------------------------------------ per call */

/* Every call of an entry with a shared candidate takes a generation of
 * the segment as it starts, whatever it runs: on one rank a call may
 * start after the calibration before it ruled and on another before (it
 * waits, holding a generation, and gives it up for a message algorithm),
 * and the ranks' generations must stay the same. One that runs a message
 * algorithm gives its generation up at once. Returns id. */
static int takes_generation(weft__coll_t *c, weft_comm_t comm, const weft__tune_adapt_t *a,
                            int id)
{
    if (a->shared && !runs_shared(id)) {
        c->comm = comm;
        weft__coll_shared_reserve(c);
        weft__coll_shared_unreserve(c);
    }
    return id;
}

/* Whether a call of kind is timed: those that synchronise every rank. A
 * rooted one's call may end long before the others' (a broadcast's root
 * runs up to 15 calls ahead on the shared segment), and back to back its
 * calls overlap, so a call's time says little of its algorithm: timed at
 * 4 ranks, broadcasts chose the faster within 10% at 6 of 21 sizes, the
 * model alone at 13. */
static int timed_kind(weft__coll_kind_t kind)
{
    return kind == WEFT__COLL_BARRIER || kind == WEFT__COLL_ALLREDUCE ||
           kind == WEFT__COLL_REDUCE_SCATTER || kind == WEFT__COLL_ALLGATHER ||
           kind == WEFT__COLL_ALLTOALL;
}

int weft__tune_adapt(weft__coll_t *c, weft_comm_t comm, weft__coll_kind_t kind, size_t bytes,
                     int pick, weft__tune_sample_t *sample)
{
    weft__tune_adapt_t **slot, *a;
    uint64_t index;
    int cand = 0;

    if (!comm->inst->tune->adapt || pick < 0 || !timed_kind(kind))
        return pick;
    if (!(slot = weft__tune_adapt_slot(comm, kind, bytes)) ||
        (!*slot && !(*slot = entry_new(comm, kind, bytes, pick))))
        return fail(c, comm, &oom_entry);
    a = *slot;
    if (a->cand[1] < 0)
        return pick;
    if (a->failed != WEFT_SUCCESS)
        return fail(c, comm, a);
    index = a->calls++;
    /* A verdict in flight decides what this call is. */
    if (a->decided != a->started)
        return defer(c, comm, a, index, 0);
    switch (role_of(a, index, &cand)) {
    case ROLE_RUN:
        return takes_generation(c, comm, a, a->pick);
    case ROLE_TIME:
        sample->entry = a;
        sample->cand = cand;
        return takes_generation(c, comm, a, a->cand[cand]);
    default:
        return defer(c, comm, a, index, 1);
    }
}

void weft__tune_adapt_record(const weft__tune_sample_t *sample, weft_result_t rc, int64_t ns)
{
    weft__tune_adapt_t *a = sample->entry;
    int k = sample->cand;

    if (!a || rc != WEFT_SUCCESS)
        return;
    a->ns[k] += ns;
    a->n[k]++;
    if (ns > a->worst[k])
        a->worst[k] = ns;
}

int64_t weft__tune_now_ns(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}
