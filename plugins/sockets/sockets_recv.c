/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * sockets_recv.c: the read side of a stream: hello, frame headers and
 * payload, which goes straight to the bound receive's buffer when there
 * is one. A readv that finishes a payload also takes the next header, so
 * a stream of small messages costs one system call per message.
 */
#include "config.h"

#include <errno.h>
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
        weft__sock_peer_departed(ctx, c->peer, f.msg_id,
                                 f.total > SOCK_MAX_STREAMS ? SOCK_MAX_STREAMS : (int)f.total);
        return SOCK_RD_OK;
    }
    if (c->outgoing || c->got_bye)
        return proto(c, "data where none was expected");
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

/* Reads what c has, up to about budget payload bytes. */
enum sock_rd weft__sock_conn_read(struct sock_ctx *ctx, struct sock_conn *c, size_t budget)
{
    while (!c->closed) {
        ssize_t n;

        if (c->rstate == RS_HELD)
            return SOCK_RD_OK;
        if (c->rstate == RS_HELLO || c->rstate == RS_HDR) {
            size_t need = c->rstate == RS_HELLO ? sizeof(c->rbuf.hello)
                                                : sizeof(c->rbuf.frame);

            n = recv(c->fd, c->rbuf.raw + c->rgot, need - c->rgot, 0);
            if (n <= 0) {
                if (n < 0 && errno == EINTR)
                    continue;
                return n < 0 && would_block() ? SOCK_RD_OK : read_failed(c, n);
            }
            c->rgot += (size_t)n;
            if (c->rgot < need)
                continue;
            if (c->rstate == RS_HELLO) {
                int rc = weft__sock_hello_check(ctx, c);

                if (rc < 0)
                    return SOCK_RD_REJECT;
            } else {
                enum sock_rd rd = frame_begin(ctx, c);

                if (rd != SOCK_RD_OK)
                    return rd;
            }
            continue;
        }
        /* Payload, and the next header if the payload ends within this
         * read. */
        {
            struct sock_msg *m = c->rmsg;
            struct iovec iov[2];
            size_t room, pos = c->cur.offset + c->rdone, left = c->cur.len - c->rdone;
            unsigned char *dst;
            int niov = 1;

            if (budget == 0)
                return SOCK_RD_OK;
            dst = payload_target(ctx, c, &room);
            room = tp_min(room, budget);
            iov[0].iov_base = dst;
            iov[0].iov_len = room;
            if (room == left) {
                iov[1].iov_base = c->rbuf.raw;
                iov[1].iov_len = sizeof(c->rbuf.frame);
                niov = 2;
            }
            n = readv(c->fd, iov, niov);
            if (n <= 0) {
                if (n < 0 && errno == EINTR)
                    continue;
                return n < 0 && would_block() ? SOCK_RD_OK : read_failed(c, n);
            }
            {
                size_t got = tp_min((size_t)n, room);

                if (m->ubuf && dst == m->ubuf + pos)
                    weft__sock_msg_arrived(m, pos, pos + got);
                m->got += got;
                c->rdone += got;
                budget -= tp_min(got, budget);
                if (c->rdone < c->cur.len)
                    continue;
                frame_end(ctx, c);
                c->rgot = (size_t)n - got;
                if (c->rgot == sizeof(c->rbuf.frame)) {
                    enum sock_rd rd = frame_begin(ctx, c);

                    if (rd != SOCK_RD_OK)
                        return rd;
                }
            }
        }
    }
    return SOCK_RD_OK;
}
