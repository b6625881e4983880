/*
 * sockets.c: the sockets transport: TCP between any two hosts, driven by
 * one epoll set per context. See sockets.h for the design.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/uio.h>
#include <unistd.h>

#include "plugins/sockets/sockets.h"

#define MAX_EVENTS 64
#define SOCK_BUF_BYTES (4 << 20)

/* ------------------------------------------------------------ completion */

static void req_complete(struct sock_req *r, weft_result_t status)
{
    if (r->done)
        return;
    r->done = 1;
    if (r->status == WEFT_SUCCESS)
        r->status = status;
}

static int tag_match(uint64_t want, uint64_t ignore, uint64_t got)
{
    return (want & ~ignore) == (got & ~ignore);
}

static void posted_remove(struct sock_ctx *ctx, struct sock_req *r)
{
    struct sock_req **link = &ctx->posted_head, *prev = NULL;

    while (*link && *link != r) {
        prev = *link;
        link = &(*link)->next;
    }
    if (!*link)
        return;
    *link = r->next;
    if (ctx->posted_tail == r)
        ctx->posted_tail = prev;
    r->next = NULL;
}

static void unexp_remove(struct sock_ctx *ctx, struct sock_inmsg *m)
{
    struct sock_inmsg **link = &ctx->unexp_head, *prev = NULL;

    while (*link && *link != m) {
        prev = *link;
        link = &(*link)->next_unexp;
    }
    if (!*link)
        return;
    *link = m->next_unexp;
    if (ctx->unexp_tail == m)
        ctx->unexp_tail = prev;
    m->next_unexp = NULL;
}

/* A receive finished with its whole message. */
static void recv_finish(struct sock_req *r, struct sock_inmsg *m)
{
    r->src = m->peer;
    r->mtag = m->tag;
    r->total = m->total;
    r->bound = NULL;
    req_complete(r, m->total > r->cap ? WEFT_ERR_TRUNCATED : WEFT_SUCCESS);
}

/* Binds receive r to message m: what arrived so far is copied, the rest
 * is read straight into r's buffer. */
static void recv_bind(struct sock_req *r, struct sock_inmsg *m)
{
    size_t n = m->got < r->cap ? m->got : r->cap;

    if (n && r->buf)
        memcpy(r->buf, m->ubuf, n);
    free(m->ubuf);
    m->ubuf = NULL;
    m->req = r;
    if (m->complete) {
        recv_finish(r, m);
        free(m);
    } else {
        r->bound = m;
    }
}

/* ------------------------------------------------------------ connections */

static void conn_set_events(struct sock_ctx *ctx, struct sock_conn *c, uint32_t events)
{
    struct epoll_event ev = { .events = events, .data.ptr = c };

    if (c->events == events)
        return;
    if (epoll_ctl(ctx->epfd, EPOLL_CTL_MOD, c->fd, &ev) == 0)
        c->events = events;
}

static struct sock_conn *conn_new(struct sock_ctx *ctx, int fd, int peer, int outgoing)
{
    struct sock_conn *c = calloc(1, sizeof(*c));
    struct epoll_event ev = { .events = EPOLLIN, .data.ptr = NULL };
    int one = 1, bytes = SOCK_BUF_BYTES;

    if (!c)
        return NULL;
    c->fd = fd;
    c->peer = peer;
    c->outgoing = outgoing;
    c->rstate = outgoing ? RS_HDR : RS_HELLO;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &bytes, sizeof(bytes));
    setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &bytes, sizeof(bytes));
    ev.data.ptr = c;
    ev.events = EPOLLIN | (outgoing ? EPOLLOUT : 0);
    if (epoll_ctl(ctx->epfd, EPOLL_CTL_ADD, fd, &ev) != 0) {
        free(c);
        return NULL;
    }
    c->events = ev.events;
    c->next = ctx->conns;
    ctx->conns = c;
    return c;
}

static void conn_close(struct sock_ctx *ctx, struct sock_conn *c)
{
    struct sock_conn **link;

    for (link = &ctx->conns; *link && *link != c; link = &(*link)->next)
        ;
    if (*link)
        *link = c->next;
    epoll_ctl(ctx->epfd, EPOLL_CTL_DEL, c->fd, NULL);
    close(c->fd);
    if (c->peer >= 0) {
        if (ctx->peers[c->peer].out == c)
            ctx->peers[c->peer].out = NULL;
        if (ctx->peers[c->peer].in == c)
            ctx->peers[c->peer].in = NULL;
    }
    /* Partial messages die with their stream; unexpected complete ones
     * stay queued (they are whole). */
    while (c->inflight) {
        struct sock_inmsg *m = c->inflight;

        c->inflight = m->next_conn;
        if (m->req) {
            m->req->bound = NULL;
            req_complete(m->req, WEFT_ERR_PEER_LOST);
            free(m);
        } else {
            unexp_remove(ctx, m);
            free(m->ubuf);
            free(m);
        }
    }
    while (c->sq_head) {
        struct sock_req *r = c->sq_head;

        c->sq_head = r->next;
        r->next = NULL;
        req_complete(r, WEFT_ERR_PEER_LOST);
    }
    free(c);
}

/* The peer is gone: everything pending with it fails. A peer that said
 * goodbye left on purpose, so receives from any source may still be
 * satisfied by others; a peer that vanished fails those too, as nothing
 * tells whether it was the one meant to send. */
static void peer_lost(struct sock_ctx *ctx, int peer, const char *why)
{
    struct sock_peer *p = &ctx->peers[peer];
    int crash = !p->departed;

    if (!p->lost)
        SOCK_LOG(ctx, crash ? WEFT_TRANSPORT_LOG_WARN : WEFT_TRANSPORT_LOG_INFO,
                 "rank %d: connection lost (%s)%s", peer, why,
                 crash ? "" : " after it finished");
    p->lost = 1;
    if (p->out)
        conn_close(ctx, p->out);
    if (p->in)
        conn_close(ctx, p->in);
    for (struct sock_req *r = ctx->posted_head, *next; r; r = next) {
        next = r->next;
        if (r->peer == peer || (crash && r->peer == WEFT_TRANSPORT_ANY_PEER)) {
            posted_remove(ctx, r);
            req_complete(r, WEFT_ERR_PEER_LOST);
        }
    }
}

/* Dials peer; the hello goes out first, ahead of any chunk. */
static struct sock_conn *conn_dial(struct sock_ctx *ctx, int peer)
{
    struct sock_peer *p = &ctx->peers[peer];
    struct sockaddr_storage ss;
    socklen_t len;
    struct sock_conn *c;
    struct sock_hello *h;
    int fd;

    memset(&ss, 0, sizeof(ss));
    if (p->addr.family == AF_INET6) {
        struct sockaddr_in6 *a = (struct sockaddr_in6 *)&ss;

        a->sin6_family = AF_INET6;
        a->sin6_port = htons(p->addr.port);
        memcpy(&a->sin6_addr, p->addr.ip, 16);
        len = sizeof(*a);
    } else {
        struct sockaddr_in *a = (struct sockaddr_in *)&ss;

        a->sin_family = AF_INET;
        a->sin_port = htons(p->addr.port);
        memcpy(&a->sin_addr, p->addr.ip, 4);
        len = sizeof(*a);
    }
    fd = socket(ss.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return NULL;
    if (connect(fd, (struct sockaddr *)&ss, len) != 0 && errno != EINPROGRESS) {
        close(fd);
        return NULL;
    }
    c = conn_new(ctx, fd, peer, 1);
    if (!c) {
        close(fd);
        return NULL;
    }
    c->connecting = 1;
    h = (struct sock_hello *)c->whdr;
    memset(h, 0, sizeof(*h));
    h->magic = SOCK_HELLO_MAGIC;
    h->rank = (uint32_t)ctx->rank;
    snprintf(h->job_id, sizeof(h->job_id), "%s", ctx->core->job_id);
    c->whdr_len = sizeof(*h);
    c->whdr_sent = 0;
    c->hello_pending = 1;
    p->out = c;
    return c;
}

/* ------------------------------------------------------------ sending */

static void sq_push(struct sock_conn *c, struct sock_req *r)
{
    r->next = NULL;
    if (c->sq_tail)
        c->sq_tail->next = r;
    else
        c->sq_head = r;
    c->sq_tail = r;
}

static struct sock_req *sq_pop(struct sock_conn *c)
{
    struct sock_req *r = c->sq_head;

    c->sq_head = r->next;
    if (!c->sq_head)
        c->sq_tail = NULL;
    r->next = NULL;
    return r;
}

/* Writes as much as the socket takes. Returns -1 when the connection
 * failed (the caller declares the peer lost). */
static int conn_write(struct sock_ctx *ctx, struct sock_conn *c)
{
    while (c->hello_pending || c->sq_head) {
        struct iovec iov[2];
        int n = 0;
        ssize_t w;

        if (!c->hello_pending && c->whdr_len == 0) {
            /* Start the next chunk of the message at the head. */
            struct sock_req *r = c->sq_head;
            struct sock_chunk_hdr *h = (struct sock_chunk_hdr *)c->whdr;
            size_t left = r->cap - r->offset;

            h->msg_id = r->msg_id;
            h->len = (uint32_t)(left < ctx->chunk ? left : ctx->chunk);
            h->tag = r->tag;
            h->total = r->cap;
            h->offset = r->offset;
            c->whdr_len = sizeof(*h);
            c->whdr_sent = 0;
            c->wchunk_len = h->len;
            c->wchunk_sent = 0;
        }
        if (c->whdr_sent < c->whdr_len) {
            iov[n].iov_base = c->whdr + c->whdr_sent;
            iov[n++].iov_len = c->whdr_len - c->whdr_sent;
        }
        if (!c->hello_pending && c->wchunk_sent < c->wchunk_len) {
            iov[n].iov_base = c->sq_head->buf + c->sq_head->offset + c->wchunk_sent;
            iov[n++].iov_len = c->wchunk_len - c->wchunk_sent;
        }
        w = n ? writev(c->fd, iov, n) : 0;
        if (w < 0) {
            if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR) {
                conn_set_events(ctx, c, EPOLLIN | EPOLLOUT);
                return 0;
            }
            return -1;
        }
        if (c->whdr_sent < c->whdr_len) {
            size_t h = c->whdr_len - c->whdr_sent;

            if ((size_t)w < h) {
                c->whdr_sent += (size_t)w;
                continue;
            }
            c->whdr_sent = c->whdr_len;
            w -= (ssize_t)h;
        }
        if (c->hello_pending) {
            c->hello_pending = 0;
            c->whdr_len = 0;
            continue;
        }
        c->wchunk_sent += (size_t)w;
        if (c->wchunk_sent < c->wchunk_len)
            continue;
        /* Chunk done. */
        {
            struct sock_req *r = sq_pop(c);

            r->offset += c->wchunk_len;
            c->whdr_len = 0;
            if (r->offset == r->cap) {
                r->total = r->cap;
                req_complete(r, WEFT_SUCCESS);
            } else {
                sq_push(c, r); /* round-robin with the other queued messages */
            }
        }
    }
    conn_set_events(ctx, c, EPOLLIN);
    return 0;
}

/* ------------------------------------------------------------ receiving */

static struct sock_inmsg *inflight_find(struct sock_conn *c, uint32_t id)
{
    for (struct sock_inmsg *m = c->inflight; m; m = m->next_conn)
        if (m->msg_id == id)
            return m;
    return NULL;
}

static void inflight_remove(struct sock_conn *c, struct sock_inmsg *m)
{
    struct sock_inmsg **link;

    for (link = &c->inflight; *link && *link != m; link = &(*link)->next_conn)
        ;
    if (*link)
        *link = m->next_conn;
}

/* The first chunk of a message: match it or queue it as unexpected. */
static int message_start(struct sock_ctx *ctx, struct sock_conn *c)
{
    struct sock_inmsg *m = calloc(1, sizeof(*m));
    struct sock_req *r;

    if (!m)
        return -1;
    m->msg_id = c->hdr.msg_id;
    m->peer = c->peer;
    m->tag = c->hdr.tag;
    m->total = c->hdr.total;
    for (r = ctx->posted_head; r; r = r->next)
        if ((r->peer == WEFT_TRANSPORT_ANY_PEER || r->peer == c->peer) &&
            tag_match(r->tag, r->ignore, m->tag))
            break;
    if (r) {
        posted_remove(ctx, r);
        m->req = r;
        r->bound = m;
    } else {
        m->ubuf = malloc(m->total ? m->total : 1);
        if (!m->ubuf) {
            free(m);
            SOCK_LOG(ctx, WEFT_TRANSPORT_LOG_WARN, "cannot buffer an unexpected message of "
                     "%zu bytes from rank %d", (size_t)c->hdr.total, c->peer);
            return -1;
        }
        if (ctx->unexp_tail)
            ctx->unexp_tail->next_unexp = m;
        else
            ctx->unexp_head = m;
        ctx->unexp_tail = m;
    }
    m->next_conn = c->inflight;
    c->inflight = m;
    c->cur = m;
    return 0;
}

static void message_maybe_done(struct sock_conn *c, struct sock_inmsg *m)
{
    if (m->got < m->total)
        return;
    inflight_remove(c, m);
    m->complete = 1;
    if (m->req) {
        recv_finish(m->req, m);
        free(m);
    }
}

/* A chunk header arrived: validate it and find its message. */
static int chunk_begin(struct sock_ctx *ctx, struct sock_conn *c)
{
    memcpy(&c->hdr, c->rbuf, sizeof(c->hdr));
    if (c->hdr.msg_id == SOCK_BYE_ID) {
        c->said_bye = 1;
        ctx->peers[c->peer].departed = 1;
        c->rstate = RS_HDR;
        c->rgot = 0;
        return 0;
    }
    if (c->hdr.offset == 0) {
        if (inflight_find(c, c->hdr.msg_id) || message_start(ctx, c) != 0)
            return -1;
    } else {
        c->cur = inflight_find(c, c->hdr.msg_id);
        if (!c->cur || c->cur->got != c->hdr.offset)
            return -1;
    }
    if (c->hdr.len > c->cur->total - c->cur->got)
        return -1;
    c->chunk_left = c->hdr.len;
    c->rgot = 0;
    if (c->chunk_left == 0) {
        message_maybe_done(c, c->cur);
        c->rstate = RS_HDR;
    } else {
        c->rstate = RS_PAYLOAD;
    }
    return 0;
}

/* Where the next payload bytes of the current message go. */
static unsigned char *payload_target(struct sock_ctx *ctx, struct sock_conn *c, size_t *room)
{
    struct sock_inmsg *m = c->cur;

    if (m->req) {
        struct sock_req *r = m->req;

        if (r->buf && m->got < r->cap) {
            *room = r->cap - m->got;
            return r->buf + m->got;
        }
        *room = sizeof(ctx->discard);
        return ctx->discard; /* truncated or cancelled: thrown away */
    }
    *room = m->total - m->got;
    return m->ubuf + m->got;
}

static int hello_done(struct sock_ctx *ctx, struct sock_conn *c)
{
    struct sock_hello h;
    struct sock_peer *p;

    memcpy(&h, c->rbuf, sizeof(h));
    h.job_id[SOCK_JOB_ID_MAX - 1] = '\0';
    if (h.magic != SOCK_HELLO_MAGIC || h.rank >= (uint32_t)ctx->size ||
        strcmp(h.job_id, ctx->core->job_id)) {
        SOCK_LOG(ctx, WEFT_TRANSPORT_LOG_WARN, "rejected a connection that is not from this "
                 "job (magic %#x, rank %u, job '%s')", h.magic, h.rank, h.job_id);
        return -1;
    }
    p = &ctx->peers[h.rank];
    if (p->in && p->in != c)
        conn_close(ctx, p->in);
    c->peer = (int)h.rank;
    p->in = c;
    c->rstate = RS_HDR;
    c->rgot = 0;
    return 0;
}

/* Reads what the socket has. Returns -1 on a failed or closed stream. */
static int conn_read(struct sock_ctx *ctx, struct sock_conn *c)
{
    for (;;) {
        ssize_t n;

        if (c->rstate == RS_PAYLOAD) {
            size_t room, want;
            unsigned char *dst = payload_target(ctx, c, &room);

            want = c->chunk_left < room ? c->chunk_left : room;
            n = recv(c->fd, dst, want, 0);
            if (n > 0) {
                c->cur->got += (size_t)n;
                c->chunk_left -= (size_t)n;
                if (c->chunk_left == 0) {
                    struct sock_inmsg *m = c->cur;

                    c->rstate = RS_HDR;
                    c->rgot = 0;
                    message_maybe_done(c, m);
                }
                continue;
            }
        } else {
            size_t need = c->rstate == RS_HELLO ? sizeof(struct sock_hello)
                                                : sizeof(struct sock_chunk_hdr);

            n = recv(c->fd, c->rbuf + c->rgot, need - c->rgot, 0);
            if (n > 0) {
                c->rgot += (size_t)n;
                if (c->rgot < need)
                    continue;
                if ((c->rstate == RS_HELLO ? hello_done(ctx, c) : chunk_begin(ctx, c)) != 0) {
                    errno = EPROTO;
                    return -1;
                }
                continue;
            }
        }
        if (n == 0) {
            errno = c->said_bye ? 0 : ECONNRESET;
            return -1;
        }
        if (errno == EAGAIN || errno == EWOULDBLOCK)
            return 0;
        if (errno != EINTR)
            return -1;
    }
}

/* ------------------------------------------------------------ events */

/* Fails the receives waiting for a peer that can send no more. */
static void fail_recvs_from(struct sock_ctx *ctx, int peer)
{
    for (struct sock_req *r = ctx->posted_head, *next; r; r = next) {
        next = r->next;
        if (r->peer == peer) {
            posted_remove(ctx, r);
            req_complete(r, WEFT_ERR_PEER_LOST);
        }
    }
}

static int conn_read(struct sock_ctx *ctx, struct sock_conn *c);

static void conn_failed(struct sock_ctx *ctx, struct sock_conn *c, const char *what)
{
    struct sock_peer *p;
    char why[128];

    if (c->peer < 0) {
        conn_close(ctx, c); /* a stranger, or a peer that never said hello */
        return;
    }
    p = &ctx->peers[c->peer];
    if (p->departed) {
        /* A peer that said goodbye closes each stream after its last
         * bytes: the other stream may still hold messages for us. */
        int peer = c->peer;

        conn_close(ctx, c);
        if (!p->in)
            fail_recvs_from(ctx, peer);
        if (!p->in && !p->out)
            p->lost = 1;
        return;
    }
    snprintf(why, sizeof(why), "%s: %s", what, errno ? strerror(errno) : "closed");
    /* Whatever the other stream already delivered is still good. */
    if (p->in && p->in != c && conn_read(ctx, p->in) != 0 && p->departed) {
        conn_failed(ctx, c, what);
        return;
    }
    peer_lost(ctx, c->peer, why);
}

static void accept_all(struct sock_ctx *ctx)
{
    for (;;) {
        int fd = accept4(ctx->listen_fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);

        if (fd < 0)
            return;
        if (!conn_new(ctx, fd, -1, 0))
            close(fd);
    }
}

static weft_result_t sock_progress(void *vctx)
{
    struct sock_ctx *ctx = vctx;
    struct epoll_event ev[MAX_EVENTS];
    int n = epoll_wait(ctx->epfd, ev, MAX_EVENTS, 0);

    for (int i = 0; i < n; i++) {
        struct sock_conn *c = ev[i].data.ptr;
        int alive = 1;

        if (!c) {
            accept_all(ctx);
            continue;
        }
        /* A connection closed by an earlier event of this batch is not in
         * the list any more. */
        {
            struct sock_conn *k;

            for (k = ctx->conns; k && k != c; k = k->next)
                ;
            if (!k)
                continue;
        }
        if (ev[i].events & (EPOLLIN | EPOLLERR | EPOLLHUP)) {
            if (conn_read(ctx, c) != 0) {
                conn_failed(ctx, c, "receive");
                alive = 0;
            }
        }
        if (alive && (ev[i].events & EPOLLOUT) && c->outgoing) {
            int so = 0;
            socklen_t sl = sizeof(so);

            if (c->connecting) {
                getsockopt(c->fd, SOL_SOCKET, SO_ERROR, &so, &sl);
                if (so) {
                    errno = so;
                    conn_failed(ctx, c, "connect");
                    continue;
                }
                c->connecting = 0;
            }
            if (conn_write(ctx, c) != 0)
                conn_failed(ctx, c, "send");
        }
    }
    return WEFT_SUCCESS;
}

/* ------------------------------------------------------------ the ABI */

static weft_result_t sock_init(const weft_transport_core_t *core, void **out)
{
    struct sock_ctx *ctx = calloc(1, sizeof(*ctx));
    struct sockaddr_storage ss;
    socklen_t len = sizeof(ss);
    struct epoll_event ev = { .events = EPOLLIN, .data.ptr = NULL };
    const char *chunk = core->get_param("WEFT_SOCKET_CHUNK");
    char desc[160];
    weft_result_t rc;

    if (!ctx) {
        core->set_error("sockets: out of memory");
        return WEFT_ERR_NO_MEMORY;
    }
    ctx->core = core;
    ctx->rank = core->rank;
    ctx->size = core->size;
    ctx->chunk = SOCK_DEFAULT_CHUNK;
    if (chunk && *chunk) {
        char *end;
        unsigned long v = strtoul(chunk, &end, 10);

        if (*end || v < 4096 || v > (1ul << 30)) {
            core->set_error("sockets: WEFT_SOCKET_CHUNK=%s is not a byte count from 4096 to "
                            "1 GiB", chunk);
            free(ctx);
            return WEFT_ERR_INVALID_ARG;
        }
        ctx->chunk = v;
    }
    ctx->peers = calloc((size_t)ctx->size, sizeof(*ctx->peers));
    if (!ctx->peers) {
        free(ctx);
        core->set_error("sockets: out of memory");
        return WEFT_ERR_NO_MEMORY;
    }
    rc = sock_pick_address(core, &ss, &len, desc, sizeof(desc));
    if (rc != WEFT_SUCCESS)
        goto err_free;
    ((struct sockaddr_in *)&ss)->sin_port = 0; /* same offset in sockaddr_in6 */
    ctx->listen_fd = socket(ss.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (ctx->listen_fd < 0 || bind(ctx->listen_fd, (struct sockaddr *)&ss, len) != 0 ||
        listen(ctx->listen_fd, 1024) != 0 ||
        getsockname(ctx->listen_fd, (struct sockaddr *)&ss, &len) != 0) {
        core->set_error("sockets: cannot listen on %s: %m", desc);
        rc = WEFT_ERR_SYSTEM;
        goto err_listen;
    }
    ctx->self.magic = SOCK_ADDR_MAGIC;
    ctx->self.family = ss.ss_family;
    if (ss.ss_family == AF_INET6) {
        ctx->self.port = ntohs(((struct sockaddr_in6 *)&ss)->sin6_port);
        memcpy(ctx->self.ip, &((struct sockaddr_in6 *)&ss)->sin6_addr, 16);
    } else {
        ctx->self.port = ntohs(((struct sockaddr_in *)&ss)->sin_port);
        memcpy(ctx->self.ip, &((struct sockaddr_in *)&ss)->sin_addr, 4);
    }
    ctx->epfd = epoll_create1(EPOLL_CLOEXEC);
    if (ctx->epfd < 0 || epoll_ctl(ctx->epfd, EPOLL_CTL_ADD, ctx->listen_fd, &ev) != 0) {
        core->set_error("sockets: epoll: %m");
        rc = WEFT_ERR_SYSTEM;
        goto err_epoll;
    }
    SOCK_LOG(ctx, WEFT_TRANSPORT_LOG_INFO, "listening on %s port %u, chunks of %zu bytes", desc,
             ctx->self.port, ctx->chunk);
    *out = ctx;
    return WEFT_SUCCESS;

err_epoll:
    if (ctx->epfd >= 0)
        close(ctx->epfd);
err_listen:
    if (ctx->listen_fd >= 0)
        close(ctx->listen_fd);
err_free:
    free(ctx->peers);
    free(ctx);
    return rc;
}

static weft_result_t sock_query(void *vctx, weft_transport_caps_t *caps)
{
    caps->flags = WEFT_TRANSPORT_CAP_MPROBE | WEFT_TRANSPORT_CAP_SELF;
    caps->mem_types = 1u << WEFT_TRANSPORT_MEM_HOST;
    caps->max_msg_size = SIZE_MAX;
    caps->latency_us = 20.0;
    caps->bandwidth_gbps = 10.0;
    return WEFT_SUCCESS;
}

static weft_result_t sock_get_address(void *vctx, void *addr, size_t *len)
{
    struct sock_ctx *ctx = vctx;

    if (*len < sizeof(ctx->self))
        return WEFT_ERR_INVALID_ARG;
    memcpy(addr, &ctx->self, sizeof(ctx->self));
    *len = sizeof(ctx->self);
    return WEFT_SUCCESS;
}

static int addr_valid(const void *addr, size_t len)
{
    struct sock_addr a;

    if (len != sizeof(a))
        return 0;
    memcpy(&a, addr, sizeof(a));
    return a.magic == SOCK_ADDR_MAGIC && (a.family == AF_INET || a.family == AF_INET6) &&
           a.port != 0;
}

static weft_result_t sock_reach(void *vctx, const void *addr, size_t len,
                                weft_transport_reach_t *reach)
{
    *reach = addr_valid(addr, len) ? WEFT_TRANSPORT_REACH_NETWORK : WEFT_TRANSPORT_REACH_NONE;
    return WEFT_SUCCESS;
}

static weft_result_t sock_connect(void *vctx, int peer, const void *addr, size_t len)
{
    struct sock_ctx *ctx = vctx;

    if (peer < 0 || peer >= ctx->size || !addr_valid(addr, len)) {
        ctx->core->set_error("sockets: bad address for rank %d", peer);
        return WEFT_ERR_INVALID_ARG;
    }
    memcpy(&ctx->peers[peer].addr, addr, sizeof(struct sock_addr));
    ctx->peers[peer].known = 1;
    ctx->peers[peer].lost = 0;
    ctx->peers[peer].departed = 0;
    return WEFT_SUCCESS;
}

static weft_result_t sock_disconnect(void *vctx, int peer)
{
    struct sock_ctx *ctx = vctx;
    struct sock_peer *p;

    if (peer < 0 || peer >= ctx->size)
        return WEFT_ERR_INVALID_ARG;
    p = &ctx->peers[peer];
    for (struct sock_req *r = ctx->posted_head, *next; r; r = next) {
        next = r->next;
        if (r->peer == peer) {
            posted_remove(ctx, r);
            req_complete(r, WEFT_ERR_ABORTED);
        }
    }
    if (p->out) {
        for (struct sock_req *r = p->out->sq_head; r; r = r->next)
            r->status = WEFT_ERR_ABORTED;
        conn_close(ctx, p->out);
    }
    if (p->in)
        conn_close(ctx, p->in);
    p->known = 0;
    return WEFT_SUCCESS;
}

static weft_result_t sock_mem_register(void *vctx, void *buf, size_t len, int mem_type,
                                       void **mh)
{
    *mh = NULL;
    return mem_type == WEFT_TRANSPORT_MEM_HOST ? WEFT_SUCCESS : WEFT_ERR_UNSUPPORTED;
}

static weft_result_t sock_mem_deregister(void *vctx, void *mh)
{
    return WEFT_SUCCESS;
}

static struct sock_req *req_new(int kind, int peer, void *buf, size_t len, uint64_t tag,
                                uint64_t ignore)
{
    struct sock_req *r = calloc(1, sizeof(*r));

    if (!r)
        return NULL;
    r->kind = kind;
    r->peer = peer;
    r->buf = buf;
    r->cap = len;
    r->tag = tag;
    r->ignore = ignore;
    r->src = peer;
    return r;
}

static weft_result_t sock_isend(void *vctx, int peer, const void *buf, size_t len,
                                uint64_t tag, void *mh, void **out)
{
    struct sock_ctx *ctx = vctx;
    struct sock_peer *p;
    struct sock_req *r;

    if (peer < 0 || peer >= ctx->size || !ctx->peers[peer].known) {
        ctx->core->set_error("sockets: isend to rank %d, which is not connected", peer);
        return WEFT_ERR_INVALID_ARG;
    }
    r = req_new(SREQ_SEND, peer, (void *)buf, len, tag, 0);
    if (!r) {
        ctx->core->set_error("sockets: out of memory");
        return WEFT_ERR_NO_MEMORY;
    }
    p = &ctx->peers[peer];
    *out = r;
    if (p->lost || p->departed) {
        req_complete(r, WEFT_ERR_PEER_LOST);
        return WEFT_SUCCESS;
    }
    if (!p->out && !conn_dial(ctx, peer)) {
        peer_lost(ctx, peer, "cannot connect");
        req_complete(r, WEFT_ERR_PEER_LOST);
        return WEFT_SUCCESS;
    }
    r->msg_id = p->next_msg_id++;
    if (p->next_msg_id == SOCK_BYE_ID)
        p->next_msg_id = 0;
    sq_push(p->out, r);
    /* Small messages usually leave at once, without waiting for progress. */
    if (!p->out->connecting && conn_write(ctx, p->out) != 0) {
        errno = errno ? errno : EPIPE;
        conn_failed(ctx, p->out, "send");
    }
    return WEFT_SUCCESS;
}

static weft_result_t sock_irecv(void *vctx, int peer, void *buf, size_t len, uint64_t tag,
                                uint64_t ignore, void *mh, void **out)
{
    struct sock_ctx *ctx = vctx;
    struct sock_req *r;

    if (peer != WEFT_TRANSPORT_ANY_PEER && (peer < 0 || peer >= ctx->size)) {
        ctx->core->set_error("sockets: irecv from rank %d, out of range", peer);
        return WEFT_ERR_INVALID_ARG;
    }
    r = req_new(SREQ_RECV, peer, buf, len, tag, ignore);
    if (!r) {
        ctx->core->set_error("sockets: out of memory");
        return WEFT_ERR_NO_MEMORY;
    }
    *out = r;
    for (struct sock_inmsg *m = ctx->unexp_head; m; m = m->next_unexp)
        if ((peer == WEFT_TRANSPORT_ANY_PEER || m->peer == peer) &&
            tag_match(tag, ignore, m->tag)) {
            unexp_remove(ctx, m);
            recv_bind(r, m);
            return WEFT_SUCCESS;
        }
    if (peer != WEFT_TRANSPORT_ANY_PEER &&
        (ctx->peers[peer].lost || (ctx->peers[peer].departed && !ctx->peers[peer].in))) {
        req_complete(r, WEFT_ERR_PEER_LOST);
        return WEFT_SUCCESS;
    }
    r->next = NULL;
    if (ctx->posted_tail)
        ctx->posted_tail->next = r;
    else
        ctx->posted_head = r;
    ctx->posted_tail = r;
    return WEFT_SUCCESS;
}

static weft_result_t sock_test(void *vctx, void *vreq, int *done, weft_transport_completion_t *c)
{
    struct sock_req *r = vreq;

    if (!r->done) {
        *done = 0;
        return WEFT_SUCCESS;
    }
    *done = 1;
    c->status = r->status;
    c->peer = r->src;
    c->tag = r->kind == SREQ_RECV ? r->mtag : r->tag;
    c->len = r->total;
    free(r);
    return WEFT_SUCCESS;
}

static weft_result_t sock_cancel(void *vctx, void *vreq)
{
    struct sock_ctx *ctx = vctx;
    struct sock_req *r = vreq;

    if (r->done)
        return WEFT_SUCCESS;
    if (r->kind == SREQ_RECV) {
        if (r->bound) {
            /* Bytes keep arriving for this message: into the discard. */
            r->buf = NULL;
            r->status = WEFT_ERR_ABORTED;
        } else {
            posted_remove(ctx, r);
            req_complete(r, WEFT_ERR_ABORTED);
        }
        return WEFT_SUCCESS;
    }
    /* A send not started yet leaves its queue; one on the wire finishes so
     * that the stream stays well formed. */
    {
        struct sock_conn *c = ctx->peers[r->peer].out;
        int started = c && c->sq_head == r && c->whdr_len;

        if (c && !started && r->offset == 0) {
            struct sock_req **link;

            for (link = &c->sq_head; *link && *link != r; link = &(*link)->next)
                ;
            if (*link) {
                *link = r->next;
                if (c->sq_tail == r) {
                    c->sq_tail = NULL;
                    for (struct sock_req *k = c->sq_head; k; k = k->next)
                        c->sq_tail = k;
                }
                r->next = NULL;
                req_complete(r, WEFT_ERR_ABORTED);
                return WEFT_SUCCESS;
            }
        }
        r->status = WEFT_ERR_ABORTED;
    }
    return WEFT_SUCCESS;
}

static weft_result_t sock_get_wait_fd(void *vctx, int *fd)
{
    *fd = ((struct sock_ctx *)vctx)->epfd;
    return WEFT_SUCCESS;
}

static weft_result_t sock_improbe(void *vctx, int peer, uint64_t tag, uint64_t ignore,
                                  int *found, void **msg, weft_transport_completion_t *info)
{
    struct sock_ctx *ctx = vctx;

    for (struct sock_inmsg *m = ctx->unexp_head; m; m = m->next_unexp)
        if ((peer == WEFT_TRANSPORT_ANY_PEER || m->peer == peer) &&
            tag_match(tag, ignore, m->tag)) {
            unexp_remove(ctx, m);
            *found = 1;
            *msg = m;
            info->status = WEFT_SUCCESS;
            info->peer = m->peer;
            info->tag = m->tag;
            info->len = m->total;
            return WEFT_SUCCESS;
        }
    *found = 0;
    return WEFT_SUCCESS;
}

static weft_result_t sock_imrecv(void *vctx, void *msg, void *buf, size_t len, void *mh,
                                 void **out)
{
    struct sock_ctx *ctx = vctx;
    struct sock_inmsg *m = msg;
    struct sock_req *r = req_new(SREQ_RECV, m->peer, buf, len, m->tag, 0);

    if (!r) {
        ctx->core->set_error("sockets: out of memory");
        return WEFT_ERR_NO_MEMORY;
    }
    recv_bind(r, m);
    *out = r;
    return WEFT_SUCCESS;
}

/* Tells every peer that no more messages will come from here, on both
 * directions' connections, so that its receives from any source do not
 * fail when our connections close as they would for a crash. */
static void say_goodbye(struct sock_ctx *ctx)
{
    struct sock_chunk_hdr bye = { .msg_id = SOCK_BYE_ID };

    for (struct sock_conn *c = ctx->conns; c; c = c->next) {
        if (c->peer < 0 || c->connecting || c->hello_pending || c->whdr_len)
            continue;
        if (send(c->fd, &bye, sizeof(bye), MSG_NOSIGNAL | MSG_DONTWAIT) != (ssize_t)sizeof(bye))
            SOCK_LOG(ctx, WEFT_TRANSPORT_LOG_INFO, "goodbye to rank %d not sent", c->peer);
    }
}

static weft_result_t sock_finalize(void *vctx)
{
    struct sock_ctx *ctx = vctx;

    say_goodbye(ctx);
    while (ctx->conns)
        conn_close(ctx, ctx->conns);
    while (ctx->posted_head) {
        struct sock_req *r = ctx->posted_head;

        ctx->posted_head = r->next;
        free(r);
    }
    while (ctx->unexp_head) {
        struct sock_inmsg *m = ctx->unexp_head;

        ctx->unexp_head = m->next_unexp;
        free(m->ubuf);
        free(m);
    }
    close(ctx->listen_fd);
    close(ctx->epfd);
    free(ctx->peers);
    free(ctx);
    return WEFT_SUCCESS;
}

__attribute__((visibility("default"))) const weft_transport_v1_t weft_transport_v1 = {
    .abi_version = WEFT_TRANSPORT_ABI_VERSION,
    .struct_size = sizeof(weft_transport_v1_t),
    .name = "sockets",
    .description = "TCP sockets over any IP network",
    .init = sock_init,
    .query = sock_query,
    .get_address = sock_get_address,
    .reach = sock_reach,
    .connect = sock_connect,
    .disconnect = sock_disconnect,
    .finalize = sock_finalize,
    .mem_register = sock_mem_register,
    .mem_deregister = sock_mem_deregister,
    .isend = sock_isend,
    .irecv = sock_irecv,
    .test = sock_test,
    .cancel = sock_cancel,
    .progress = sock_progress,
    .get_wait_fd = sock_get_wait_fd,
    .improbe = sock_improbe,
    .imrecv = sock_imrecv,
};
