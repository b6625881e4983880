/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * sockets_recv.c: the read side of a stream: hello, frame headers and
 * payload, which goes straight to the bound receive's buffer when there
 * is one. What a read finds after the bytes it knows where to put goes
 * into the stream's stage: a stream of small messages costs one system
 * call for as many as have arrived, where it cost a call for each header
 * and each payload and one more to find the socket empty (8-byte
 * ping-pong between two hosts: 4 calls a message on the receiving side).
 */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>

#include "plugins/sockets/sockets.h"

static enum sock_rd proto(struct sock_conn *c, const char *why)
{
    c->why = why;
    return SOCK_RD_PROTO;
}

/* Where the next payload bytes of c's frame go, and how many fit. */
static unsigned char *payload_target(struct sock_ctx *ctx, struct sock_conn *c, size_t *room)
{
    struct sock_msg *m = c->rmsg;
    size_t pos = c->cur.offset + c->rdone, left = c->cur.len - c->rdone;

    if (m->req && m->req->buf && pos < m->req->len) {
        *room = tp_min(left, m->req->len - pos);
        return m->req->buf + pos;
    }
    if (m->ubuf) {
        *room = left;
        return m->ubuf + pos;
    }
    /* Truncated, cancelled or abandoned: read and drop. */
    *room = tp_min(left, sizeof(ctx->discard));
    return ctx->discard;
}

/* The frame's payload is all read. */
static void frame_end(struct sock_ctx *ctx, struct sock_conn *c)
{
    struct sock_msg *m = c->rmsg;

    c->rmsg = NULL;
    c->rstate = RS_HDR;
    c->rgot = 0;
    weft__sock_msg_check_done(ctx, m);
}

/* A frame header arrived on an accepted stream: find or make its message. */
static enum sock_rd frame_begin(struct sock_ctx *ctx, struct sock_conn *c)
{
    struct sock_frame f = c->rbuf.frame;
    struct sock_peer *p = &ctx->peers[c->peer];
    struct sock_msg *m;

    c->rgot = 0;
    if (f.flags == SOCK_FRAME_BYE) {
        c->got_bye = 1;
        weft__sock_peer_departed(ctx, c->peer, f.msg_id, (unsigned)f.total);
        return SOCK_RD_OK;
    }
    if (c->got_bye)
        return proto(c, "data after the goodbye");
    /* The peer writes on a stream this rank dialed (weft__sock_tx_open). */
    c->rx_data |= c->outgoing;
    if (f.flags & ~SOCK_FRAME_START || f.len > f.total || f.offset > f.total - f.len ||
        f.total > SIZE_MAX)
        return proto(c, "a malformed frame header");
    m = weft__sock_msg_find(p, f.msg_id);
    if (f.flags & SOCK_FRAME_START) {
        if (c->stream != 0 || f.offset != 0 || f.msg_id < p->next_start_id)
            return proto(c, "a message start out of place");
        if (m && (m->started || m->total != f.total))
            return proto(c, "a message started twice");
        if (!m && !(m = weft__sock_msg_new(ctx, c->peer, f.msg_id, (size_t)f.total)))
            return proto(c, "no memory for an arriving message");
        p->next_start_id = f.msg_id + 1;
        m->tag = f.tag;
        m->started = 1;
        if (weft__tp_match_arrive(&ctx->tp, &m->tp) != 0)
            return proto(c, "no memory to buffer an unexpected message");
    } else if (!m) {
        /* A frame that overtook its start (it travelled on another
         * stream): keep its bytes until the start names the tag. */
        if (f.msg_id < p->next_start_id || f.len == 0)
            return proto(c, "a frame of an unknown message");
        m = weft__sock_msg_new(ctx, c->peer, f.msg_id, (size_t)f.total);
        if (!m || weft__sock_msg_buffer(m) != 0) {
            if (m) {
                weft__sock_msg_flight_remove(ctx, m);
                weft__sock_msg_free(m);
            }
            return proto(c, "no memory for an arriving message");
        }
    } else if (m->total != f.total || f.len == 0) {
        return proto(c, "a frame that does not fit its message");
    }
    c->cur = f;
    c->rmsg = m;
    c->rdone = 0;
    if (f.len == 0) {
        frame_end(ctx, c);
        return SOCK_RD_OK;
    }
    c->rstate = RS_PAYLOAD;
    return SOCK_RD_OK;
}

static enum sock_rd read_failed(struct sock_conn *c, ssize_t n)
{
    if (n == 0)
        return SOCK_RD_EOF;
    c->err = errno;
    return SOCK_RD_ERR;
}

static int would_block(void)
{
    return errno == EAGAIN || errno == EWOULDBLOCK;
}

/* got payload bytes of c's frame are now at dst. */
static void payload_got(struct sock_ctx *ctx, struct sock_conn *c, const unsigned char *dst,
                        size_t got)
{
    struct sock_msg *m = c->rmsg;
    size_t pos = c->cur.offset + c->rdone;

    if (m->ubuf && dst == m->ubuf + pos)
        weft__sock_msg_arrived(m, pos, pos + got);
    m->got += got;
    c->rdone += got;
    if (c->rdone == c->cur.len)
        frame_end(ctx, c);
}

/* The next step of c's state with bytes of its stage: header bytes, or
 * payload copied to where it belongs. */
static enum sock_rd consume(struct sock_ctx *ctx, struct sock_conn *c)
{
    size_t avail = c->stage_len - c->stage_pos, k;
    const unsigned char *from = c->stage + c->stage_pos;

    if (c->rstate == RS_HDR) {
        k = tp_min(sizeof(c->rbuf.frame) - c->rgot, avail);
        memcpy(c->rbuf.raw + c->rgot, from, k);
        c->rgot += k;
        c->stage_pos += k;
        return c->rgot == sizeof(c->rbuf.frame) ? frame_begin(ctx, c) : SOCK_RD_OK;
    }
    {
        size_t room;
        unsigned char *dst = payload_target(ctx, c, &room);

        k = tp_min(room, avail);
        memcpy(dst, from, k);
        c->stage_pos += k;
        payload_got(ctx, c, dst, k);
    }
    return SOCK_RD_OK;
}

/* One read of c's socket in state RS_HDR or RS_PAYLOAD: payload straight
 * to its place (up to *budget bytes) and, where the frame ends within
 * the read, what follows into the stage. *drained: the socket had less
 * than asked, so a further read would find nothing (the event loop is
 * level-triggered: it reports what arrives later). */
static enum sock_rd fill(struct sock_ctx *ctx, struct sock_conn *c, size_t *budget,
                         int *drained)
{
    struct iovec iov[2];
    unsigned char *dst = NULL;
    size_t room = 0, asked;
    int niov = 0;
    ssize_t n;

    if (!c->stage && !(c->stage = malloc(SOCK_STAGE_BYTES)))
        return proto(c, "no memory for a receive stage");
    c->stage_pos = c->stage_len = 0;
    if (c->rstate == RS_PAYLOAD) {
        dst = payload_target(ctx, c, &room);
        room = tp_min(room, *budget);
        iov[niov].iov_base = dst;
        iov[niov++].iov_len = room;
    }
    if (c->rstate == RS_HDR || room == c->cur.len - c->rdone) {
        iov[niov].iov_base = c->stage;
        iov[niov++].iov_len = SOCK_STAGE_BYTES;
    }
    asked = room + (niov > 1 || !dst ? SOCK_STAGE_BYTES : 0);
    do
        n = readv(c->fd, iov, niov);
    while (n < 0 && errno == EINTR);
    if (n <= 0) {
        *drained = 1;
        return n < 0 && would_block() ? SOCK_RD_OK : read_failed(c, n);
    }
    *drained = (size_t)n < asked;
    if (dst) {
        size_t got = tp_min((size_t)n, room);

        *budget -= got;
        payload_got(ctx, c, dst, got);
        n -= (ssize_t)got;
    }
    c->stage_len = (size_t)n;
    return SOCK_RD_OK;
}

/* Reads what c has, up to about budget payload bytes straight into
 * receive buffers; what the stage took is handed out before returning. */
enum sock_rd weft__sock_conn_read(struct sock_ctx *ctx, struct sock_conn *c, size_t budget)
{
    int drained = 0;

    while (!c->closed) {
        enum sock_rd rd;

        if (c->rstate == RS_HELD)
            return SOCK_RD_OK;
        if (c->stage_pos < c->stage_len) {
            if ((rd = consume(ctx, c)) != SOCK_RD_OK)
                return rd;
            continue;
        }
        if (drained || (c->rstate == RS_PAYLOAD && budget == 0))
            return SOCK_RD_OK;
        if (c->rstate == RS_HELLO) {
            /* Exactly the hello: a stream held until the job id is known
             * must leave what follows in the socket, where the event
             * loop sees it once the stream is let in. */
            ssize_t n = recv(c->fd, c->rbuf.raw + c->rgot, sizeof(c->rbuf.hello) - c->rgot, 0);

            if (n <= 0) {
                if (n < 0 && errno == EINTR)
                    continue;
                return n < 0 && would_block() ? SOCK_RD_OK : read_failed(c, n);
            }
            c->rgot += (size_t)n;
            if (c->rgot == sizeof(c->rbuf.hello) && weft__sock_hello_check(ctx, c) < 0)
                return SOCK_RD_REJECT;
            continue;
        }
        if ((rd = fill(ctx, c, &budget, &drained)) != SOCK_RD_OK)
            return rd;
    }
    return SOCK_RD_OK;
}
