/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * progress.c: the progress engine: advancing transports, waiting without
 * burning a core, reaping requests the user let go of.
 */
#include "config.h"

#include <errno.h>
#include <limits.h>
#include <poll.h>
#include <sched.h>
#include <time.h>
#include <unistd.h>

#include "core/base/env.h"
#include "core/base/error.h"
#include "core/base/log.h"
#include "core/progress/doorbell.h"
#include "core/progress/progress.h"

/* A waiter spins WEFT_SPIN_POLLS polls, then on for a budget of time by
 * the clock (read every WEFT_SPIN_CLOCK_EVERY polls), then sleeps. A
 * budget in time, not polls: once polls got cheaper, 200 of them ended
 * before a reply that a scheduler hiccup delayed by a few microseconds,
 * and the sleep and wake-up then cost ten times the message.
 * Where ranks outnumber cores the budget is short, so that a rank blocked
 * on a slow peer gives its core up at once. Where each has a core, it is
 * longer: waking a sleeping rank costs far more than the spin. On the
 * development machine (a virtual machine) a 128 KiB broadcast at 2 ranks
 * stalled for 100-300 us about once in a hundred calls; with 50 us of
 * spin those stalls became sleeps of 600-900 us, with 1 ms they stayed at
 * 100-300 us. WEFT_SPIN_US sets either. */
#define WEFT_SPIN_POLLS 64
#define WEFT_SPIN_CLOCK_EVERY 16
#define WEFT_SPIN_US_SHARED_CORES 50
#define WEFT_SPIN_US_OWN_CORE 1000
/* With more ranks than cores on the node, a spinning waiter yields after
 * every fruitless poll, so that the peer it waits for gets the core at
 * once (8-byte allreduce, 4 ranks on 2 cores: 11 us against 14 us when
 * yielding every 16 polls). Without, a yield is only a system call. */
#define WEFT_YIELD_EVERY 1
/* Upper bound of one sleep, so deadlines are noticed. */
#define WEFT_SLEEP_MAX_MS 100
/* Progress passes between two background looks (the background hooks,
 * such as abort notices, and detached requests). A notice is a rare event
 * and a look costs two locks and a transport test; a waiter that sleeps
 * looks after every wake-up, so none is missed for long. */
#define WEFT_BACKGROUND_EVERY 32
/* A second of spinning is already a core's worth of waste. */
#define WEFT_SPIN_US_MAX 1000000

/* WEFT_SPIN_US, -1 where unset; set once by weft__progress_settings_parse,
 * atomic since threads of other instances may read it meanwhile (all read
 * the same value). */
static long long spin_us_set = -1;

weft_result_t weft__progress_settings_parse(void)
{
    unsigned long long spin = ULLONG_MAX;
    weft_result_t rc = weft__env_ullong("WEFT_SPIN_US", 0, WEFT_SPIN_US_MAX, &spin);

    if (rc != WEFT_SUCCESS)
        return rc;
    __atomic_store_n(&spin_us_set, spin == ULLONG_MAX ? -1 : (long long)spin, __ATOMIC_RELAXED);
    return WEFT_SUCCESS;
}

long long weft__progress_spin_us(void)
{
    return __atomic_load_n(&spin_us_set, __ATOMIC_RELAXED);
}

static weft_result_t hook_add(weft__progress_hook_t *hooks, int *n, weft__progress_hook_fn fn,
                              void *arg)
{
    if (*n == WEFT__PROGRESS_HOOKS_MAX)
        return weft__error(WEFT_ERR_INTERNAL, "more than %d progress hooks",
                           WEFT__PROGRESS_HOOKS_MAX);
    hooks[*n].fn = fn;
    hooks[*n].arg = arg;
    (*n)++;
    return WEFT_SUCCESS;
}

weft_result_t weft__progress_hook_add(weft__instance_t *inst, weft__progress_hook_fn fn,
                                      void *arg)
{
    return hook_add(inst->pass_hooks, &inst->npass_hooks, fn, arg);
}

weft_result_t weft__progress_background_add(weft__instance_t *inst, weft__progress_hook_fn fn,
                                            void *arg)
{
    return hook_add(inst->background_hooks, &inst->nbackground_hooks, fn, arg);
}

static void run_hooks(weft__instance_t *inst, const weft__progress_hook_t *hooks, int n)
{
    for (int i = 0; i < n; i++)
        hooks[i].fn(inst, hooks[i].arg);
}

static int64_t now_us(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

int64_t weft__now_ms(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Any thread may find a detached request done, but it hands the request
 * to its context's thread rather than freeing it: freeing unlinks it from
 * ctx->active, which that thread changes without a lock (see
 * weft__request_detach). inst->lock keeps reapers apart and orders the
 * hand-over on ctx->reaped. */
static void reap_detached(weft__instance_t *inst)
{
    struct weft_request **link;

    pthread_mutex_lock(&inst->lock);
    link = &inst->detached;
    while (*link) {
        struct weft_request *req = *link;
        weft__mctx_t *ctx = req->ctx;
        int done = 0;

        weft__request_poll_detached(req, &done);
        if (done) {
            /* Atomic: link may be inst->detached, peeked at unlocked. */
            __atomic_store_n(link, req->next_detached, __ATOMIC_RELAXED);
            req->next_detached = ctx->reaped;
            /* Atomic: request creation peeks at it without the lock. */
            __atomic_store_n(&ctx->reaped, req, __ATOMIC_RELAXED);
        } else {
            link = &req->next_detached;
        }
    }
    pthread_mutex_unlock(&inst->lock);
}

/* One pass over the transports and the pass hooks (the collectives in
 * flight). */
static void progress_transports(weft__instance_t *inst)
{
    for (int i = 0; i < inst->wire.plugins.n; i++) {
        weft__plugin_t *pl = &inst->wire.plugins.plugins[i];

        /* A transport no peer goes through has nothing to do, and asking
         * it may cost a system call per poll (an epoll_wait for sockets):
         * on one node, that was most of a small message's latency. */
        if (!pl->used)
            continue;

        pthread_mutex_lock(&pl->lock);
        pl->ops->progress(pl->ctx);
        pthread_mutex_unlock(&pl->lock);
    }
    run_hooks(inst, inst->pass_hooks, inst->npass_hooks);
}

static void progress_background(weft__instance_t *inst)
{
    run_hooks(inst, inst->background_hooks, inst->nbackground_hooks);
    if (__atomic_load_n(&inst->detached, __ATOMIC_RELAXED))
        reap_detached(inst);
}

void weft__progress(weft__instance_t *inst)
{
    /* Per thread: an atomic counter shared by the instance cost a locked
     * instruction per pass. */
    static __thread unsigned progress_ticks;
    unsigned tick = ++progress_ticks;

    progress_transports(inst);
    if (tick % WEFT_BACKGROUND_EVERY == 0)
        progress_background(inst);
}

/* weft__progress and weft__request_poll, with the transport's pass and
 * the request's test under one hold of its lock where that is possible:
 * a lock and an unlock are a tenth of a small message's time. */
static void progress_and_poll(weft__instance_t *inst, struct weft_request *req, int *done)
{
    static __thread unsigned progress_ticks_fast;

    if (!weft__request_progress_test(req, 1, done)) {
        weft__progress(inst);
        weft__request_poll(req, done);
        return;
    }
    run_hooks(inst, inst->pass_hooks, inst->npass_hooks);
    if (++progress_ticks_fast % WEFT_BACKGROUND_EVERY == 0)
        progress_background(inst);
}

void weft__progress_sleep(weft__instance_t *inst, int timeout_ms, int rung)
{
    struct pollfd fds[WEFT__PLUGIN_MAX + 1];
    int n = 0, bell = -1;

    for (int i = 0; i < inst->wire.plugins.n; i++) {
        weft__plugin_t *pl = &inst->wire.plugins.plugins[i];
        int fd = -1;

        if (!pl->used)
            continue;
        pthread_mutex_lock(&pl->lock);
        if (pl->ops->get_wait_fd(pl->ctx, &fd) != WEFT_SUCCESS)
            fd = -1;
        pthread_mutex_unlock(&pl->lock);
        if (fd < 0) {
            /* A transport that cannot be slept on is polled every ms. */
            if (timeout_ms > 1)
                timeout_ms = 1;
            continue;
        }
        fds[n].fd = fd;
        fds[n].events = POLLIN;
        fds[n].revents = 0;
        n++;
    }
    if (inst->bell_fd >= 0) {
        bell = n;
        fds[n].fd = inst->bell_fd;
        fds[n].events = POLLIN;
        fds[n].revents = 0;
        n++;
    }
    /* An operation that nothing rings awake for (instance.h) is looked
     * at every ms. */
    if (__atomic_load_n(&inst->unrung_inflight, __ATOMIC_RELAXED) > rung && timeout_ms > 1)
        timeout_ms = 1;
    if (timeout_ms > WEFT_SLEEP_MAX_MS)
        timeout_ms = WEFT_SLEEP_MAX_MS;
    if (poll(fds, (nfds_t)n, timeout_ms) < 0 && errno != EINTR)
        WEFT_WARN(TRANSPORT, "poll on transport descriptors failed: %m");
    else if (bell >= 0 && fds[bell].revents)
        weft__doorbell_drain(inst);
}

/* Whether this rank competes for its cores with other ranks: the ranks
 * of its node outnumber the node's cores, or other ranks of the job on
 * the same machine (simulated hosts, containers) are pinned to its core
 * or outnumber the cores it may use (wire.cores_shared). Then a spinning
 * waiter must yield, or the peer it waits for may not get a core: 4
 * ranks of 2 simulated hosts on 2 cores took 2.4 ms an 8-byte allreduce
 * spinning, 25 us yielding. Asked once. */
static int node_oversubscribed(weft__instance_t *inst)
{
    if (!inst->oversubscribed) {
        long cores = sysconf(_SC_NPROCESSORS_ONLN);

        inst->oversubscribed = (cores > 0 && inst->wire.local_size > cores) ||
                               inst->wire.cores_shared ? 1 : -1;
    }
    return inst->oversubscribed > 0;
}

/* The spinning part of a wait (see WEFT_SPIN_POLLS). */
typedef struct spin_state {
    int spins;
    int yield_every;
    int budget_us;
    int64_t end_us;
    const unsigned *moves;       /* inst->moves */
    unsigned moves_seen;
} spin_state_t;

static void spin_init(spin_state_t *sp, weft__instance_t *inst)
{
    long long set = weft__progress_spin_us();
    int crowded = node_oversubscribed(inst);

    sp->spins = 0;
    sp->yield_every = crowded ? WEFT_YIELD_EVERY : 0;
    if (set >= 0)
        sp->budget_us = (int)set;
    else
        sp->budget_us = crowded ? WEFT_SPIN_US_SHARED_CORES : WEFT_SPIN_US_OWN_CORE;
    sp->end_us = 0;
    sp->moves = &inst->moves;
    sp->moves_seen = __atomic_load_n(sp->moves, __ATOMIC_RELAXED);
}

/* After a fruitless pass: yields where ranks outnumber cores, and says
 * whether the spin budget is spent, so that the waiter should sleep. A
 * pipelined shared collective that moved a step starts the budget over. */
static int spin_spent(spin_state_t *sp)
{
    unsigned moves;

    sp->spins++;
    if (sp->yield_every && sp->spins % sp->yield_every == 0)
        sched_yield();
    /* The clock is read only once the first polls found nothing:
     * reading it per call was a tenth of a small message's time. */
    if (sp->spins < WEFT_SPIN_POLLS || sp->spins % WEFT_SPIN_CLOCK_EVERY)
        return 0;
    if ((moves = __atomic_load_n(sp->moves, __ATOMIC_RELAXED)) != sp->moves_seen) {
        sp->moves_seen = moves;
        sp->end_us = 0;
    }
    if (!sp->end_us) {
        sp->end_us = now_us() + sp->budget_us;
        return 0;
    }
    return now_us() >= sp->end_us;
}

/* Milliseconds left before *deadline_ms (which 0 leaves to be set now)
 * in *left, or WEFT_ERR_TIMEOUT with the error set once it passed. */
static weft_result_t time_left(int timeout_ms, int64_t *deadline_ms, int64_t *left)
{
    if (!*deadline_ms)
        *deadline_ms = weft__now_ms() + timeout_ms;
    *left = *deadline_ms - weft__now_ms();
    if (*left > 0)
        return WEFT_SUCCESS;
    return weft__error(WEFT_ERR_TIMEOUT, "operation did not complete within %d ms "
                       "(WEFT_TIMEOUT)", timeout_ms);
}

/* Whether the deadline passed, looked at after every pass that did not
 * finish the wait from the WEFT_SPIN_CLOCK_EVERY-th on, also while the
 * spin budget lasts: a wait of a few passes reads no clock, and the first
 * look sets the deadline. Passes can be slow: a root flooded with the
 * unexpected messages of ranks that run ahead reads megabytes a pass, and
 * yields its core to seven others between passes. It waited 7 s on a
 * stopped rank with WEFT_TIMEOUT 2 s when the deadline was set only once
 * the spin budget was spent, and 3.8 s when looked at every 16 passes. */
static int deadline_due(const spin_state_t *sp, int timeout_ms, int64_t *deadline_ms)
{
    int64_t left;

    return sp->spins >= WEFT_SPIN_CLOCK_EVERY &&
           time_left(timeout_ms, deadline_ms, &left) != WEFT_SUCCESS;
}

weft_result_t weft__progress_wait_for(weft__instance_t *inst, const weft__wait_target_t *t,
                                      int timeout_ms, int64_t *deadline_ms)
{
    spin_state_t sp;

    spin_init(&sp, inst);
    for (;;) {
        int64_t left;

        if (t->poll(t->arg))
            return WEFT_SUCCESS;
        /* Other traffic moves meanwhile: a peer may need this rank's
         * progress before it can signal. */
        weft__progress(inst);
        if (weft__mctx_aborted(t->ctx))
            return weft__error(WEFT_ERR_ABORTED, "the communicator was aborted");
        if (!spin_spent(&sp)) {
            if (deadline_due(&sp, timeout_ms, deadline_ms))
                return WEFT_ERR_TIMEOUT;
            continue;
        }
        if (time_left(timeout_ms, deadline_ms, &left) != WEFT_SUCCESS)
            return WEFT_ERR_TIMEOUT;
        /* Asleep first, then a last look: a signal after the look rings. */
        t->sleeping(t->arg, 1);
        if (t->poll(t->arg)) {
            t->sleeping(t->arg, 0);
            return WEFT_SUCCESS;
        }
        weft__progress_sleep(inst, (int)left, 1);
        t->sleeping(t->arg, 0);
        progress_background(inst);
    }
}

weft_result_t weft__request_wait(struct weft_request *req, int timeout_ms)
{
    int64_t deadline = 0;

    return weft__request_wait_until(req, timeout_ms, &deadline);
}

weft_result_t weft__request_wait_until(struct weft_request *req, int timeout_ms,
                                       int64_t *deadline_ms)
{
    weft__instance_t *inst = req->inst;
    spin_state_t sp;
    int done = 0;

    /* A send that went out whole at posting, or a receive whose message
     * was already drained, needs no pass over the transports. */
    if (!weft__request_progress_test(req, 0, &done))
        weft__request_poll(req, &done);
    if (done)
        return WEFT_SUCCESS;
    spin_init(&sp, inst);
    for (;;) {
        int64_t left;

        progress_and_poll(inst, req, &done);
        if (done)
            return WEFT_SUCCESS;
        /* An abort notice for req's context, found by this or any other
         * thread's progress, is applied here (the waiter is that
         * context's thread): it fails req, which the next pass finds
         * done, so a blocked wait ends within one sleep. */
        weft__mctx_aborted(req->ctx);
        if (!spin_spent(&sp)) {
            if (deadline_due(&sp, timeout_ms, deadline_ms))
                return WEFT_ERR_TIMEOUT;
            continue;
        }
        if (time_left(timeout_ms, deadline_ms, &left) != WEFT_SUCCESS)
            return WEFT_ERR_TIMEOUT;
        weft__progress_sleep(inst, (int)left, 0);
        /* Woken, perhaps by an abort notice: look now. */
        progress_background(inst);
    }
}
