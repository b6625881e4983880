/*
 * progress.c: the progress engine: advancing transports, waiting without
 * burning a core, reaping requests the user let go of.
 */
#include "config.h"

#include <errno.h>
#include <poll.h>
#include <sched.h>
#include <time.h>

#include "core/abort_notice.h"
#include "core/coll.h"
#include "core/comm.h"
#include "core/error.h"
#include "core/log.h"
#include "core/progress.h"

/* Busy polls before sleeping: long enough to catch a reply that is a few
 * microseconds away, short enough that an oversubscribed rank yields the
 * core to the peer it waits for. */
#define WEFT_SPIN_POLLS 200
/* Upper bound of one sleep, so deadlines are noticed. */
#define WEFT_SLEEP_MAX_MS 100

int64_t weft__now_ms(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void reap_detached(weft__instance_t *inst)
{
    struct weft_request **link, *done_list = NULL;

    pthread_mutex_lock(&inst->lock);
    link = &inst->detached;
    while (*link) {
        struct weft_request *req = *link;
        int done = 0;

        weft__request_poll(req, &done);
        if (done) {
            *link = req->next_detached;
            req->detached = 0;
            req->next_detached = done_list;
            done_list = req;
        } else {
            link = &req->next_detached;
        }
    }
    pthread_mutex_unlock(&inst->lock);
    while (done_list) {
        struct weft_request *req = done_list;

        done_list = req->next_detached;
        weft__request_free(req);
    }
}

void weft__progress(weft__instance_t *inst)
{
    for (int i = 0; i < inst->plugins.n; i++) {
        weft__plugin_t *pl = &inst->plugins.plugins[i];

        /* A transport no peer goes through has nothing to do, and asking
         * it may cost a system call per poll (an epoll_wait for sockets):
         * on one node, that was most of a small message's latency. */
        if (!pl->used)
            continue;

        pthread_mutex_lock(&pl->lock);
        pl->ops->progress(pl->ctx);
        pthread_mutex_unlock(&pl->lock);
    }
    weft__coll_progress_all(inst);
    weft__abort_poll(inst);
    if (inst->detached)
        reap_detached(inst);
}

void weft__progress_sleep(weft__instance_t *inst, int timeout_ms)
{
    struct pollfd fds[WEFT__PLUGIN_MAX];
    int n = 0;

    for (int i = 0; i < inst->plugins.n; i++) {
        weft__plugin_t *pl = &inst->plugins.plugins[i];
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
    if (timeout_ms > WEFT_SLEEP_MAX_MS)
        timeout_ms = WEFT_SLEEP_MAX_MS;
    if (poll(fds, (nfds_t)n, timeout_ms) < 0 && errno != EINTR)
        WEFT_WARN(TRANSPORT, "poll on transport descriptors failed: %m");
}

weft_result_t weft__request_wait(struct weft_request *req, int timeout_ms)
{
    weft__instance_t *inst = req->inst;
    int64_t deadline = weft__now_ms() + timeout_ms;
    int spins = 0;

    for (;;) {
        int done = 0;
        int64_t left;

        weft__progress(inst);
        weft__request_poll(req, &done);
        if (done)
            return WEFT_SUCCESS;
        if (++spins < WEFT_SPIN_POLLS) {
            if (spins % 16 == 0)
                sched_yield();
            continue;
        }
        left = deadline - weft__now_ms();
        if (left <= 0)
            return weft__error(WEFT_ERR_TIMEOUT,
                               "operation did not complete within %d ms (WEFT_TIMEOUT)",
                               timeout_ms);
        weft__progress_sleep(inst, (int)left);
    }
}
