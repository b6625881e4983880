/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * sockets_conn.c: connections and the event loop. The first send to a
 * peer picks the streams it writes on: stream 0 the peer dialed, accepted
 * in progress() already, else streams it dials (weft__sock_tx_open); the
 * hello decides whether an accepted one belongs to this job. What happens to a peer
 * whose connection ends depends on how it ended: after its goodbye only
 * the operations with that peer fail, after a crash (EOF or error without
 * a goodbye) receives from any source fail too, as nothing tells whether
 * the lost rank was the one meant to send.
 */
#include "config.h"

#include <errno.h>
#include <netinet/tcp.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <unistd.h>

#include "plugins/sockets/sockets.h"

#define MAX_EVENTS 64

void weft__sock_set_events(struct sock_ctx *ctx, struct sock_conn *c, uint32_t events)
{
    struct epoll_event ev;

    if (c->closed || c->events == events)
        return;
    memset(&ev, 0, sizeof(ev));
    ev.events = events;
    ev.data.ptr = c;
    if (epoll_ctl(ctx->epfd, EPOLL_CTL_MOD, c->fd, &ev) == 0)
        c->events = events;
}

static void tune(const struct sock_ctx *ctx, int fd)
{
    int one = 1;

    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    if (ctx->bufsize) {
        setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &ctx->bufsize, sizeof(ctx->bufsize));
        setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &ctx->bufsize, sizeof(ctx->bufsize));
    }
}

static struct sock_conn *conn_add(struct sock_ctx *ctx, int fd, int outgoing, uint32_t events)
{
    struct sock_conn *c = calloc(1, sizeof(*c));
    struct epoll_event ev;

    if (!c)
        return NULL;
    c->fd = fd;
    c->peer = -1;
    c->outgoing = outgoing;
    c->rstate = outgoing ? RS_HDR : RS_HELLO;
    memset(&ev, 0, sizeof(ev));
    ev.events = events;
    ev.data.ptr = c;
    if (epoll_ctl(ctx->epfd, EPOLL_CTL_ADD, fd, &ev) != 0) {
        free(c);
        return NULL;
    }
    c->events = events;
    c->next = ctx->conns;
    if (ctx->conns)
        ctx->conns->prev = c;
    ctx->conns = c;
    return c;
}

void weft__sock_conn_close(struct sock_ctx *ctx, struct sock_conn *c)
{
    if (c->closed)
        return;
    epoll_ctl(ctx->epfd, EPOLL_CTL_DEL, c->fd, NULL);
    close(c->fd);
    c->closed = 1;
    if (c->rstate == RS_HELD)
        ctx->nheld--;
    if (c->peer >= 0) {
        struct sock_peer *p = &ctx->peers[c->peer];

        if (c->outgoing && p->out[c->stream] == c)
            p->out[c->stream] = NULL;
        if (!c->outgoing && p->in[c->stream] == c)
            p->in[c->stream] = NULL;
        if (p->tx[c->stream] == c)
            p->tx[c->stream] = NULL;
    }
    /* Off the live list onto the zombies: an event of the current batch
     * may still name it. */
    if (c->prev)
        c->prev->next = c->next;
    else
        ctx->conns = c->next;
    if (c->next)
        c->next->prev = c->prev;
    c->prev = NULL;
    c->next = ctx->zombies;
    ctx->zombies = c;
}

void weft__sock_free_zombies(struct sock_ctx *ctx)
{
    while (ctx->zombies) {
        struct sock_conn *c = ctx->zombies;

        ctx->zombies = c->next;
        free(c->stage);
        free(c);
    }
}

void weft__sock_peer_close_all(struct sock_ctx *ctx, int peer)
{
    struct sock_peer *p = &ctx->peers[peer];

    for (int k = 0; k < SOCK_MAX_STREAMS; k++) {
        if (p->out[k])
            weft__sock_conn_close(ctx, p->out[k]);
        if (p->in[k])
            weft__sock_conn_close(ctx, p->in[k]);
    }
}

/* ------------------------------------------------------------ peers' fate */

/* What a peer that left can no longer do fails: receives from it once
 * every message it said it started has started here (nothing more can
 * match), the messages still arriving once every stream it said it opened
 * was accepted and ended. */
static void departed_check(struct sock_ctx *ctx, int peer)
{
    struct sock_peer *p = &ctx->peers[peer];
    int ended = 1;

    if (!p->departed)
        return;
    if (p->next_start_id >= p->bye_msgs)
        weft__tp_match_fail_peer(&ctx->tp, peer, 0, WEFT_ERR_PEER_LOST);
    for (int k = 0; k < SOCK_MAX_STREAMS; k++)
        if (p->in[k] || (p->out[k] && p->out[k]->rx_data) ||
            (((p->bye_dialed >> k) & 1u) && !((p->in_seen >> k) & 1u)))
            ended = 0;
    if (ended)
        weft__sock_msgs_fail(ctx, peer, WEFT_ERR_PEER_LOST);
}

/* The peer said goodbye on one of its connections. Its streams stay open
 * until they end, and those it opened that are not accepted yet will be,
 * for the bytes they still hold. */
void weft__sock_peer_departed(struct sock_ctx *ctx, int peer, uint64_t msgs, unsigned dialed)
{
    struct sock_peer *p = &ctx->peers[peer];

    if (!p->departed) {
        TP_INFO(ctx, "rank %d finalized", peer);
        p->departed = 1;
        p->bye_msgs = msgs;
        p->bye_dialed = dialed & ((1u << SOCK_MAX_STREAMS) - 1);
        weft__sock_sends_fail(ctx, peer, WEFT_ERR_PEER_LOST);
    }
    departed_check(ctx, peer);
}

static void peer_lost(struct sock_ctx *ctx, int peer, const char *why)
{
    struct sock_peer *p = &ctx->peers[peer];

    if (!p->lost)
        TP_WARN(ctx, "rank %d lost: %s", peer, why);
    p->lost = 1;
    weft__sock_peer_close_all(ctx, peer);
    weft__sock_sends_fail(ctx, peer, WEFT_ERR_PEER_LOST);
    weft__sock_msgs_fail(ctx, peer, WEFT_ERR_PEER_LOST);
    weft__tp_match_fail_peer(&ctx->tp, peer, 1, WEFT_ERR_PEER_LOST);
}

/* c ended (EOF, error or a protocol violation, described by c->err and
 * c->why). */
void weft__sock_conn_failed(struct sock_ctx *ctx, struct sock_conn *c, const char *what)
{
    char why[200];
    struct sock_peer *p;
    int peer = c->peer;

    if (c->closed)
        return;
    snprintf(why, sizeof(why), "%s on stream %d: %s", what, c->stream,
             c->why ? c->why : c->err ? strerror(c->err) : "closed by the peer");
    if (peer < 0) {
        TP_TRACE(ctx, "connection without a hello ended: %s", why);
        weft__sock_conn_close(ctx, c);
        return;
    }
    p = &ctx->peers[peer];
    if (!p->departed && !c->why) {
        /* What already arrived on the peer's streams is valid and may be
         * its goodbye: read it before judging. */
        for (int k = 0; k < SOCK_MAX_STREAMS; k++) {
            if (p->in[k])
                weft__sock_conn_read(ctx, p->in[k], SIZE_MAX);
            if (p->out[k])
                weft__sock_conn_read(ctx, p->out[k], SIZE_MAX);
        }
    }
    if (p->departed) {
        if (c->why)
            TP_WARN(ctx, "rank %d: %s", peer, why);
        weft__sock_conn_close(ctx, c);
        departed_check(ctx, peer);
        return;
    }
    peer_lost(ctx, peer, why);
}

/* ------------------------------------------------------------ dialing */

static int dial_one(struct sock_ctx *ctx, int peer, int stream)
{
    struct sock_peer *p = &ctx->peers[peer];
    struct sockaddr_storage ss;
    socklen_t len = weft__sock_addr_to_sa(&p->addr, &ss);
    const char *job = ctx->core->job_id ? ctx->core->job_id : "";
    struct sock_conn *c;
    int fd, connecting = 0;

    fd = socket(ss.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return -1;
    tune(ctx, fd);
    if (connect(fd, (struct sockaddr *)&ss, len) != 0) {
        if (errno != EINPROGRESS) {
            int e = errno;

            close(fd);
            errno = e;
            return -1;
        }
        connecting = 1;
    }
    c = conn_add(ctx, fd, 1, EPOLLIN | EPOLLOUT);
    if (!c) {
        close(fd);
        errno = ENOMEM;
        return -1;
    }
    c->peer = peer;
    c->stream = stream;
    c->connecting = connecting;
    c->whello.magic = SOCK_HELLO_MAGIC;
    c->whello.wire_version = SOCK_WIRE_VERSION;
    c->whello.abi_version = WEFT_TRANSPORT_ABI_VERSION;
    c->whello.rank = (uint32_t)ctx->rank;
    c->whello.stream = (uint32_t)stream;
    strncpy(c->whello.job_id, job, sizeof(c->whello.job_id) - 1);
    c->hello_left = sizeof(c->whello);
    c->tx = 1;
    p->out[stream] = c;
    p->tx[stream] = c;
    p->dialed |= 1u << stream;
    return 0;
}

int weft__sock_tx_open(struct sock_ctx *ctx, int peer)
{
    struct sock_peer *p = &ctx->peers[peer];

    for (int k = 0; k < ctx->nsocks; k++) {
        struct sock_conn *in = p->in[k];

        if (p->tx[k])
            continue;
        if (k == 0 && in && !in->got_bye && !in->cut) {
            in->tx = 1;
            p->tx[k] = in;
            continue;
        }
        if (dial_one(ctx, peer, k) != 0) {
            char why[200], to[80];
            struct sockaddr_storage ss;

            weft__sock_addr_to_sa(&ctx->peers[peer].addr, &ss);
            weft__sock_sa_str((struct sockaddr *)&ss, to, sizeof(to));
            snprintf(why, sizeof(why), "cannot connect to %s: %s", to, strerror(errno));
            peer_lost(ctx, peer, why);
            return -1;
        }
    }
    return 0;
}

static void connect_done(struct sock_ctx *ctx, struct sock_conn *c)
{
    int err = 0;
    socklen_t len = sizeof(err);

    if (getsockopt(c->fd, SOL_SOCKET, SO_ERROR, &err, &len) != 0)
        err = errno;
    if (err) {
        c->err = err;
        weft__sock_conn_failed(ctx, c, "connect");
        return;
    }
    c->connecting = 0;
    TP_TRACE(ctx, "stream %d to rank %d connected", c->stream, c->peer);
}

/* ------------------------------------------------------------ accepting */

static void accept_all(struct sock_ctx *ctx)
{
    for (;;) {
        int fd = accept4(ctx->listen_fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);

        if (fd < 0) {
            if (errno == EINTR || errno == ECONNABORTED)
                continue;
            if (errno != EAGAIN && errno != EWOULDBLOCK)
                TP_WARN(ctx, "accept failed: %s", strerror(errno));
            return;
        }
        tune(ctx, fd);
        if (!conn_add(ctx, fd, 0, EPOLLIN))
            close(fd);
    }
}

static void reject(struct sock_ctx *ctx, struct sock_conn *c, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static void reject(struct sock_ctx *ctx, struct sock_conn *c, const char *fmt, ...)
{
    struct sockaddr_storage ss;
    socklen_t len = sizeof(ss);
    char from[80] = "?", why[160];
    va_list ap;

    if (getpeername(c->fd, (struct sockaddr *)&ss, &len) == 0)
        weft__sock_sa_str((struct sockaddr *)&ss, from, sizeof(from));
    va_start(ap, fmt);
    vsnprintf(why, sizeof(why), fmt, ap);
    va_end(ap);
    TP_WARN(ctx, "refused a connection from %s: %s", from, why);
}

/* A whole hello arrived on accepted stream c: 0 when it is accepted, 1
 * when it waits for this rank's job id, -1 when c must be closed. */
int weft__sock_hello_check(struct sock_ctx *ctx, struct sock_conn *c)
{
    const struct sock_hello *h = &c->rbuf.hello;
    const char *job = ctx->core->job_id ? ctx->core->job_id : "";
    char theirs[SOCK_JOB_ID_BYTES];
    struct sock_peer *p;

    if (h->magic != SOCK_HELLO_MAGIC) {
        reject(ctx, c, "not a weft " SOCK_NAME " peer");
        return -1;
    }
    if (h->wire_version != SOCK_WIRE_VERSION || h->abi_version != WEFT_TRANSPORT_ABI_VERSION) {
        reject(ctx, c, "wire version %u, ABI %u; this rank speaks %u, %u", h->wire_version,
               h->abi_version, SOCK_WIRE_VERSION, WEFT_TRANSPORT_ABI_VERSION);
        return -1;
    }
    if (!*job) {
        /* Set from the first connect() on: compare then. */
        if (c->rstate != RS_HELD) {
            c->rstate = RS_HELD;
            ctx->nheld++;
            weft__sock_set_events(ctx, c, 0);
        }
        return 1;
    }
    memcpy(theirs, h->job_id, sizeof(theirs));
    theirs[sizeof(theirs) - 1] = '\0';
    if (strncmp(theirs, job, sizeof(theirs) - 1)) {
        reject(ctx, c, "it belongs to job %s, not %s", theirs, job);
        return -1;
    }
    if (h->rank >= (uint32_t)ctx->size || h->stream >= SOCK_MAX_STREAMS) {
        reject(ctx, c, "rank %u stream %u, outside %d ranks and %d streams", h->rank,
               h->stream, ctx->size, SOCK_MAX_STREAMS);
        return -1;
    }
    p = &ctx->peers[h->rank];
    /* A peer that left may still have streams in the backlog that it
     * opened before its goodbye: those are accepted, nothing after them. */
    if (p->lost || p->disconnected || p->in[h->stream] ||
        (p->departed && (!((p->bye_dialed >> h->stream) & 1u) ||
                         ((p->in_seen >> h->stream) & 1u)))) {
        reject(ctx, c, "rank %u is %s", h->rank, p->lost ? "lost" :
               p->disconnected ? "disconnected" : p->in[h->stream] ?
               "connected on that stream already" : "gone");
        return -1;
    }
    p->in_seen |= 1u << h->stream;
    if (c->rstate == RS_HELD)
        ctx->nheld--;
    c->peer = (int)h->rank;
    c->stream = (int)h->stream;
    c->rstate = RS_HDR;
    c->rgot = 0;
    p->in[c->stream] = c;
    weft__sock_set_events(ctx, c, EPOLLIN);
    TP_TRACE(ctx, "stream %d from rank %d accepted", c->stream, c->peer);
    return 0;
}

static void retry_held(struct sock_ctx *ctx)
{
    for (struct sock_conn *c = ctx->conns, *next; c; c = next) {
        next = c->next;
        if (c->rstate == RS_HELD && weft__sock_hello_check(ctx, c) < 0)
            weft__sock_conn_close(ctx, c);
    }
}

/* ------------------------------------------------------------ leaving */

/* Tells every peer that this rank leaves on purpose, on each connection
 * that is between frames (a frame cut short cannot carry it; another
 * connection of that peer usually does). */
void weft__sock_say_goodbye(struct sock_ctx *ctx)
{
    struct sock_frame bye;

    memset(&bye, 0, sizeof(bye));
    bye.flags = SOCK_FRAME_BYE;
    for (struct sock_conn *c = ctx->conns; c; c = c->next) {
        if (c->peer < 0 || (c->tx && !weft__sock_stream_idle(c)))
            continue;
        /* What the peer is still to receive from this rank. */
        bye.msg_id = ctx->peers[c->peer].starts_written;
        bye.total = ctx->peers[c->peer].dialed;
        if (send(c->fd, &bye, sizeof(bye), MSG_NOSIGNAL | MSG_DONTWAIT) != (ssize_t)sizeof(bye))
            TP_TRACE(ctx, "no room for a goodbye to rank %d on stream %d", c->peer,
                     c->stream);
    }
}

/* ------------------------------------------------------------ events */

static void on_readable(struct sock_ctx *ctx, struct sock_conn *c)
{
    switch (weft__sock_conn_read(ctx, c, SOCK_READ_BUDGET)) {
    case SOCK_RD_OK:
        break;
    case SOCK_RD_REJECT:
        weft__sock_conn_close(ctx, c);
        break;
    case SOCK_RD_PROTO:
        weft__sock_conn_failed(ctx, c, "protocol error");
        break;
    default:
        weft__sock_conn_failed(ctx, c, "receive");
        break;
    }
}

weft_result_t weft__sock_progress(void *vctx)
{
    struct sock_ctx *ctx = vctx;
    struct epoll_event ev[MAX_EVENTS];
    int n;

    if (ctx->nheld && ctx->core->job_id && *ctx->core->job_id)
        retry_held(ctx);
    n = epoll_wait(ctx->epfd, ev, MAX_EVENTS, 0);
    if (n < 0 && errno != EINTR) {
        ctx->core->set_error(SOCK_NAME ": epoll_wait: %s", strerror(errno));
        return WEFT_ERR_SYSTEM;
    }
    for (int i = 0; i < n; i++) {
        struct sock_conn *c = ev[i].data.ptr;
        uint32_t e = ev[i].events;

        if (!c) {
            accept_all(ctx);
            continue;
        }
        if (c->closed)
            continue;
        if (c->rstate == RS_HELD) {
            /* Not read until the job id is known; only its end matters. */
            if (e & (EPOLLERR | EPOLLHUP))
                weft__sock_conn_close(ctx, c);
            continue;
        }
        if (c->outgoing && c->connecting && (e & (EPOLLOUT | EPOLLERR | EPOLLHUP))) {
            connect_done(ctx, c);
            if (c->closed)
                continue;
        }
        if (c->tx && !c->connecting && (e & EPOLLOUT)) {
            c->wblocked = 0;
            weft__sock_pump(ctx, c->peer);
            if (c->closed)
                continue;
        }
        if (e & (EPOLLIN | EPOLLERR | EPOLLHUP))
            on_readable(ctx, c);
    }
    weft__sock_free_zombies(ctx);
    return WEFT_SUCCESS;
}
