/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * sockets_send.c: the send side. Each peer has a send queue (every
 * unfinished send, in send order) and a round-robin of started sends with
 * bytes left. A stream with room takes one frame at a time: stream 0 the
 * next start (starts leave in send order, which is what keeps matching in
 * send order) and, when it is the only stream, turns with continuations;
 * the other streams take continuations of sends whose start is written.
 * Payload goes from the user's buffer to the socket, never copied.
 */
#include "config.h"

#include <errno.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/uio.h>

#include "plugins/sockets/sockets.h"

/* ------------------------------------------------------------ queues */

static void sq_append(struct sock_peer *p, struct sock_req *r)
{
    weft__tp_queue_append(&p->sq, &r->tp);
    if (!p->next_start)
        p->next_start = r;
}

static void sq_remove(struct sock_peer *p, struct sock_req *r)
{
    if (p->next_start == r)
        p->next_start = (struct sock_req *)r->qnext;
    weft__tp_queue_remove(&p->sq, &r->tp);
}

static void act_append(struct sock_peer *p, struct sock_req *r)
{
    r->act_next = NULL;
    if (p->act_tail)
        p->act_tail->act_next = r;
    else
        p->act_head = r;
    p->act_tail = r;
    r->in_active = 1;
}

static struct sock_req *act_pop(struct sock_peer *p)
{
    struct sock_req *r = p->act_head;

    p->act_head = r->act_next;
    if (!p->act_head)
        p->act_tail = NULL;
    r->act_next = NULL;
    r->in_active = 0;
    return r;
}

/* ------------------------------------------------------------ streams */

/* Hands stream c its next frame; 0 when there is none for it. */
static int pick_frame(struct sock_ctx *ctx, struct sock_conn *c)
{
    struct sock_peer *p = &ctx->peers[c->peer];
    int can_start = c->stream == 0 && p->next_start;
    int can_cont = p->act_head && (c->stream != 0 || ctx->nsocks == 1);
    struct sock_req *r;
    struct sock_frame *f = &c->wframe;

    if (!can_start && !can_cont)
        return 0;
    memset(f, 0, sizeof(*f));
    if (can_start && (!can_cont || p->start_turn)) {
        r = p->next_start;
        p->next_start = (struct sock_req *)r->qnext;
        p->start_turn = 0;
        r->picked = 1;
        r->msg_id = p->next_msg_id++;
        f->flags = SOCK_FRAME_START;
        f->offset = 0;
        f->len = (uint32_t)tp_min(r->len, ctx->chunk);
    } else {
        r = act_pop(p);
        p->start_turn = 1;
        f->offset = r->assigned;
        f->len = (uint32_t)tp_min(r->len - r->assigned, ctx->chunk);
        if (r->assigned + f->len < r->len)
            act_append(p, r);
    }
    r->assigned += f->len;
    f->msg_id = r->msg_id;
    f->tag = r->tag;
    f->total = r->len;
    c->wreq = r;
    c->wframe_sent = 0;
    c->wpay_sent = 0;
    return 1;
}

/* Stream c finished writing its frame. */
static void frame_written(struct sock_ctx *ctx, struct sock_conn *c)
{
    struct sock_peer *p = &ctx->peers[c->peer];
    struct sock_req *r = c->wreq;

    c->wreq = NULL;
    r->written += c->wframe.len;
    if (c->wframe.flags & SOCK_FRAME_START) {
        r->started = 1;
        p->starts_written++;
        /* Only now may other streams carry the rest: the receiver then
         * rarely sees a chunk before the start that names its tag. */
        if (r->assigned < r->len)
            act_append(p, r);
    }
    if (r->written == r->len) {
        sq_remove(p, r);
        r->total = r->len;
        weft__tp_req_complete(&r->tp, WEFT_SUCCESS);
    }
}

int weft__sock_stream_idle(const struct sock_conn *c)
{
    return !c->connecting && !c->hello_left && !c->cut && (!c->wreq || c->wframe_sent == 0);
}

/* Writes on stream c until the socket is full or nothing is left for it.
 * -1 when the connection failed (errno set). */
static int stream_flush(struct sock_ctx *ctx, struct sock_conn *c)
{
    for (;;) {
        struct iovec iov[2];
        struct msghdr mh;
        int n = 0;
        ssize_t w;

        if (c->cut) {
            /* The receiver would read what follows as the rest of the
             * abandoned frame: nothing more goes out here. */
            c->wblocked = 0;
            weft__sock_set_events(ctx, c, EPOLLIN);
            return 0;
        }
        if (c->hello_left) {
            iov[n].iov_base = (char *)&c->whello + sizeof(c->whello) - c->hello_left;
            iov[n++].iov_len = c->hello_left;
        } else {
            if (!c->wreq && !pick_frame(ctx, c)) {
                c->wblocked = 0;
                weft__sock_set_events(ctx, c, EPOLLIN);
                return 0;
            }
            if (c->wframe_sent < sizeof(c->wframe)) {
                iov[n].iov_base = (char *)&c->wframe + c->wframe_sent;
                iov[n++].iov_len = sizeof(c->wframe) - c->wframe_sent;
            }
            if (c->wpay_sent < c->wframe.len) {
                iov[n].iov_base = c->wreq->buf + c->wframe.offset + c->wpay_sent;
                iov[n++].iov_len = c->wframe.len - c->wpay_sent;
            }
        }
        memset(&mh, 0, sizeof(mh));
        mh.msg_iov = iov;
        mh.msg_iovlen = (size_t)n;
        w = sendmsg(c->fd, &mh, MSG_NOSIGNAL | MSG_DONTWAIT);
        if (w < 0) {
            if (errno == EINTR)
                continue;
            if (errno == EAGAIN || errno == EWOULDBLOCK) {
                c->wblocked = 1;
                weft__sock_set_events(ctx, c, EPOLLIN | EPOLLOUT);
                return 0;
            }
            c->err = errno;
            return -1;
        }
        if (c->hello_left) {
            c->hello_left -= (size_t)w;
            continue;
        }
        if (c->wframe_sent < sizeof(c->wframe)) {
            size_t h = sizeof(c->wframe) - c->wframe_sent;

            if ((size_t)w < h) {
                c->wframe_sent += (size_t)w;
                continue;
            }
            c->wframe_sent = sizeof(c->wframe);
            w -= (ssize_t)h;
        }
        c->wpay_sent += (size_t)w;
        if (c->wpay_sent == c->wframe.len)
            frame_written(ctx, c);
    }
}

/* Lets every stream to peer that has room write. Stream 0 goes first: a
 * start it writes gives the others work. -1 when a connection failed and
 * the peer was dealt with. */
int weft__sock_pump(struct sock_ctx *ctx, int peer)
{
    struct sock_peer *p = &ctx->peers[peer];

    for (int k = 0; k < SOCK_MAX_STREAMS; k++) {
        struct sock_conn *c = p->tx[k];

        if (!c || c->connecting || c->wblocked)
            continue;
        if (stream_flush(ctx, c) != 0) {
            weft__sock_conn_failed(ctx, c, "send");
            return -1;
        }
    }
    return 0;
}

/* Every unfinished send to peer completes with status; the caller closes
 * or abandons the streams, whose frames are cut short. */
void weft__sock_sends_fail(struct sock_ctx *ctx, int peer, weft_result_t status)
{
    struct sock_peer *p = &ctx->peers[peer];

    for (int k = 0; k < SOCK_MAX_STREAMS; k++) {
        struct sock_conn *c = p->tx[k];

        if (!c)
            continue;
        if (c->wreq && c->wframe_sent)
            c->cut = 1;
        c->wreq = NULL;
    }
    while (p->sq.head) {
        struct sock_req *r = (struct sock_req *)p->sq.head;

        sq_remove(p, r);
        r->total = r->written;
        weft__tp_req_complete(&r->tp, status);
    }
    p->next_start = NULL;
    p->act_head = p->act_tail = NULL;
}

/* A send whose start has not left is withdrawn; one under way must finish
 * (the receiver expects all its bytes) and then reports the cancel. */
void weft__sock_send_cancel(struct tp_ctx *tp, struct tp_req *r)
{
    struct sock_req *s = (struct sock_req *)r;

    r->cancelled = 1;
    if (r->queued && !s->picked) {
        sq_remove(&((struct sock_ctx *)tp)->peers[r->peer], s);
        weft__tp_req_complete(r, WEFT_ERR_ABORTED);
    }
}

weft_result_t weft__sock_isend(void *vctx, int peer, const void *buf, size_t len,
                               uint64_t tag, void *mh, void **out)
{
    struct sock_ctx *ctx = vctx;
    weft_result_t rc;
    struct tp_req *r = weft__tp_isend_new(&ctx->tp, peer, buf, len, tag, out, &rc);
    struct sock_peer *p;

    if (!r || r->done)
        return rc;
    p = &ctx->peers[peer];
    sq_append(p, (struct sock_req *)r);
    if (!p->tx[0] && weft__sock_tx_open(ctx, peer) != 0)
        return WEFT_SUCCESS; /* the peer is lost, r completed with it */
    /* Small messages usually leave now, not at the next progress. */
    weft__sock_pump(ctx, peer);
    return WEFT_SUCCESS;
}
