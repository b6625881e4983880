/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * store_server.c: the rendezvous store server, one thread with a poll loop
 * over nonblocking sockets.
 *
 * Each connection reads one frame at a time (header, checked against the
 * limits, then exactly the payload it announced) and gets its replies
 * through a queue of shared output buffers (the join reply, the largest,
 * is built once for every rank). While a connection has output queued, its
 * input is not read: a client cannot make the server buffer more than one
 * request and its reply. Requests that must wait (a join before everyone
 * arrived, a get of a key nobody set yet, a barrier) are parked on the
 * connection and answered when the state changes. Connections that stall
 * (no hello, half a frame, output nobody reads) are dropped after STALL_MS.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <unistd.h>

#include "core/base/error.h"
#include "core/boot/frame.h"
#include "core/base/log.h"
#include "core/boot/store.h"

#define STALL_MS 10000       /* hello, a started frame, or queued output */
#define STOP_FLUSH_MS 2000   /* replies still queued when the server stops */
#define ACCEPT_PAUSE_MS 100  /* out of file descriptors: accept later */

enum park { PARK_NONE = 0, PARK_JOIN, PARK_GET, PARK_BARRIER };

/* One encoded frame; several connections may hold it. */
struct outbuf {
    int refs;
    size_t len;
    unsigned char *data;
};

struct outq {
    struct outbuf *buf;
    size_t off;
    struct outq *next;
};

struct conn {
    int fd;
    int authed;
    int rank;                      /* joined as, or -1 */
    int park;                      /* enum park */
    int closing;                   /* drop once the queued output is sent */
    int dead;                      /* drop at the end of this round */
    char key[WEFT__STORE_KEY_MAX]; /* parked on this key or barrier */
    char peer[80];                 /* address:port, for messages */
    int64_t since;                 /* accepted, or the current frame began */

    unsigned char hdr[WEFT__FRAME_HEADER];
    size_t hdr_got;
    unsigned char *in;             /* the payload, once its header passed */
    uint32_t in_type, in_len;
    size_t in_got;

    struct outq *out_head, *out_tail;
    int64_t out_moved;             /* output last made progress */
};

struct kv {
    char key[WEFT__STORE_KEY_MAX];
    unsigned char *val;
    size_t len;
    struct kv *next;
};

struct barrier {
    char name[WEFT__STORE_KEY_MAX];
    int n, count;
    struct barrier *next;
};

struct member {
    int present;
    int arrived;                   /* joined at some point, maybe left since */
    uint32_t pid;
    char host[WEFT__FRAME_HOST_MAX];
    unsigned char *blob;
    size_t len;
};

struct weft__store_server {
    int listen_fd;
    int wake[2];                   /* self-pipe: stop */
    int port;
    char token[WEFT__FRAME_HOST_MAX];
    char job_id[WEFT__JOB_ID_MAX];
    pthread_t thread;
    int64_t accept_paused_until;

    struct conn **conns;
    int nconns, cap;
    struct kv *kvs;
    struct barrier *barriers;

    int size;                      /* world size, -1 until known */
    struct member *members;
    int joined;                    /* ranks present now */
    int arrived;                   /* ranks that came at all, for messages */
    int complete;
    weft_result_t job_rc;          /* set once the join failed for everyone */
    char job_msg[WEFT__FRAME_TEXT_MAX];
};

/* Decoding already bounded every string to its field; this only keeps the
 * copy within dst whatever the (NUL-terminated) source. */
static void copy_str(char *dst, size_t cap, const char *src)
{
    size_t n = strlen(src);

    if (n > cap - 1)
        n = cap - 1;

    memcpy(dst, src, n);
    dst[n] = '\0';
}

/* --------------------------------------------------------------- output */

static void outbuf_unref(struct outbuf *b)
{
    if (b && --b->refs == 0) {
        free(b->data);
        free(b);
    }
}

/* Encodes m into a new shared buffer (one reference), or NULL. */
static struct outbuf *outbuf_encode(const weft__msg_t *m)
{
    weft__wbuf_t w = { 0 };
    struct outbuf *b;

    if (weft__msg_encode(m, &w) != WEFT_SUCCESS) {
        WEFT_WARN(INIT, "rendezvous: cannot build a reply: %s", weft__get_error());
        weft__wbuf_free(&w);
        return NULL;
    }
    b = malloc(sizeof(*b));
    if (!b) {
        WEFT_WARN(INIT, "rendezvous: out of memory for a reply");
        weft__wbuf_free(&w);
        return NULL;
    }
    b->refs = 1;
    b->len = w.len;
    b->data = w.data;
    return b;
}

/* Sends what the socket takes now; the rest waits for POLLOUT. */
static void conn_flush(struct conn *c)
{
    while (c->out_head && !c->dead) {
        struct outq *q = c->out_head;
        ssize_t n = send(c->fd, q->buf->data + q->off, q->buf->len - q->off,
                         MSG_DONTWAIT | MSG_NOSIGNAL);

        if (n < 0) {
            if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)
                return;
            c->dead = 1;
            return;
        }
        q->off += (size_t)n;
        c->out_moved = weft__frame_clock_ms();
        if (q->off < q->buf->len)
            continue;
        c->out_head = q->next;
        if (!c->out_head)
            c->out_tail = NULL;
        outbuf_unref(q->buf);
        free(q);
    }
    if (!c->out_head && c->closing)
        c->dead = 1;
}

static void conn_send_buf(struct conn *c, struct outbuf *b)
{
    struct outq *q;

    if (!b || c->dead)
        return;
    q = malloc(sizeof(*q));
    if (!q) {
        c->dead = 1;
        return;
    }
    q->buf = b;
    q->off = 0;
    q->next = NULL;
    b->refs++;
    if (!c->out_head)
        c->out_moved = weft__frame_clock_ms();
    if (c->out_tail)
        c->out_tail->next = q;
    else
        c->out_head = q;
    c->out_tail = q;
    conn_flush(c);
}

static void conn_send(struct conn *c, const weft__msg_t *m)
{
    struct outbuf *b = outbuf_encode(m);

    if (!b) {
        c->dead = 1;
        return;
    }
    conn_send_buf(c, b);
    outbuf_unref(b);
}

static void conn_reply(struct conn *c, uint32_t type, const char *text)
{
    weft__msg_t m = { .type = type };

    copy_str(m.text, sizeof(m.text), text ? text : "");
    conn_send(c, &m);
}

static void conn_error(struct conn *c, weft_result_t rc, const char *text)
{
    weft__msg_t m = { .type = WEFT__FRAME_ERROR, .code = (uint32_t)rc };

    copy_str(m.text, sizeof(m.text), text);
    conn_send(c, &m);
}

/* An error the client cannot recover from on this connection. */
static void conn_refuse(struct conn *c, weft_result_t rc, const char *text)
{
    conn_error(c, rc, text);
    c->closing = 1;
    if (!c->out_head)
        c->dead = 1;
}

/* ----------------------------------------------------------------- join */

/* Fails the job for every rank: waiting joiners now, later ones on arrival. */
static void join_fail(struct weft__store_server *s, const char *msg)
{
    s->job_rc = WEFT_ERR_BOOTSTRAP;
    copy_str(s->job_msg, sizeof(s->job_msg), msg);
    WEFT_WARN(INIT, "rendezvous: %s", msg);
    for (int i = 0; i < s->nconns; i++)
        if (s->conns[i]->park == PARK_JOIN) {
            s->conns[i]->park = PARK_NONE;
            conn_error(s->conns[i], s->job_rc, s->job_msg);
        }
}

static void join_complete(struct weft__store_server *s)
{
    weft__wbuf_t records = { 0 };
    weft__msg_t m = { .type = WEFT__FRAME_JOINED, .size = s->size };
    struct outbuf *b = NULL;

    for (int r = 0; r < s->size; r++)
        weft__wbuf_bytes(&records, s->members[r].blob, s->members[r].len);
    if (!records.failed) {
        copy_str(m.text, sizeof(m.text), s->job_id);
        m.data = records.data;
        m.len = records.len;
        b = outbuf_encode(&m);
    }
    weft__wbuf_free(&records);
    if (!b) {
        join_fail(s, "the rendezvous store cannot build the join reply (out of memory, or "
                  "the records exceed the frame limit)");
        return;
    }
    s->complete = 1;
    WEFT_INFO(INIT, "rendezvous: all %d ranks joined job %s", s->size, s->job_id);
    for (int i = 0; i < s->nconns; i++)
        if (s->conns[i]->park == PARK_JOIN) {
            s->conns[i]->park = PARK_NONE;
            conn_send_buf(s->conns[i], b);
        }
    outbuf_unref(b);
}

static void handle_join(struct weft__store_server *s, struct conn *c, const weft__msg_t *m)
{
    char msg[WEFT__FRAME_TEXT_MAX];
    struct member *mb;

    if (s->job_rc != WEFT_SUCCESS) {
        conn_error(c, s->job_rc, s->job_msg);
        return;
    }
    if (s->size < 0) {
        s->members = calloc((size_t)m->size, sizeof(*s->members));
        if (!s->members) {
            conn_error(c, WEFT_ERR_NO_MEMORY, "the rendezvous store ran out of memory");
            return;
        }
        s->size = m->size;
    }
    if (m->size != s->size) {
        snprintf(msg, sizeof(msg), "rank %d (host %.100s, pid %u) joined with world size %d, "
                 "but the job has world size %d", m->rank, m->text, m->pid, m->size, s->size);
        c->park = PARK_JOIN;
        join_fail(s, msg);
        return;
    }
    mb = &s->members[m->rank];
    if (mb->present || s->complete) {
        snprintf(msg, sizeof(msg), "rank %d joined twice: from host %.100s, pid %u and from "
                 "host %.100s, pid %u", m->rank, mb->host, mb->pid, m->text, m->pid);
        c->park = PARK_JOIN;
        join_fail(s, msg);
        return;
    }
    mb->blob = malloc(m->len ? m->len : 1);
    if (!mb->blob) {
        conn_error(c, WEFT_ERR_NO_MEMORY, "the rendezvous store ran out of memory");
        return;
    }
    if (m->len)
        memcpy(mb->blob, m->data, m->len);
    mb->len = m->len;
    mb->pid = m->pid;
    copy_str(mb->host, sizeof(mb->host), m->text);
    mb->present = 1;
    if (!mb->arrived) {
        mb->arrived = 1;
        s->arrived++;
    }
    c->rank = m->rank;
    c->park = PARK_JOIN;
    WEFT_INFO(INIT, "rendezvous: rank %d (host %s, pid %u) joined from %s, %d of %d", m->rank,
              m->text, m->pid, c->peer, s->joined + 1, s->size);
    if (++s->joined == s->size)
        join_complete(s);
}

/* A rank that leaves before the job is complete has not joined. */
static void join_leave(struct weft__store_server *s, struct conn *c)
{
    struct member *mb;

    if (c->rank < 0 || s->complete || !s->members)
        return;
    mb = &s->members[c->rank];
    if (!mb->present)
        return;
    WEFT_INFO(INIT, "rendezvous: rank %d (host %s, pid %u) left before the job was complete",
              c->rank, mb->host, mb->pid);
    free(mb->blob);
    memset(mb, 0, sizeof(*mb));
    mb->arrived = 1; /* a timeout elsewhere should not call it missing */
    s->joined--;
    c->rank = -1;
}

/* Which ranks came (also those that left since: they are not the ones
 * to name when others time out). */
static void handle_query(struct weft__store_server *s, struct conn *c)
{
    weft__wbuf_t ranks = { 0 };
    weft__msg_t m = { .type = WEFT__FRAME_QUERIED };

    for (int r = 0; r < s->size; r++)
        if (s->members[r].arrived)
            weft__wbuf_u32(&ranks, (uint32_t)r);
    if (ranks.failed) {
        conn_error(c, WEFT_ERR_NO_MEMORY, "the rendezvous store ran out of memory");
    } else {
        m.size = s->size < 0 ? 0 : s->size;
        m.count = (uint32_t)s->arrived;
        m.data = ranks.data;
        m.len = ranks.len;
        conn_send(c, &m);
    }
    weft__wbuf_free(&ranks);
}

/* ------------------------------------------------------ keys, barriers */

static struct kv *kv_find(struct weft__store_server *s, const char *key)
{
    for (struct kv *e = s->kvs; e; e = e->next)
        if (!strcmp(e->key, key))
            return e;
    return NULL;
}

static void handle_set(struct weft__store_server *s, struct conn *c, const weft__msg_t *m)
{
    weft__msg_t v = { .type = WEFT__FRAME_VALUE };
    struct kv *e = kv_find(s, m->text);
    /* Whether e is new, by its lookup: an empty key is a key too, and
     * linking its entry again would make the list a loop. */
    int fresh = !e;
    unsigned char *copy = malloc(m->len ? m->len : 1);
    struct outbuf *b;

    if (!copy || (fresh && !(e = calloc(1, sizeof(*e))))) {
        free(copy);
        conn_error(c, WEFT_ERR_NO_MEMORY, "the rendezvous store ran out of memory");
        return;
    }
    if (fresh) {
        copy_str(e->key, sizeof(e->key), m->text);
        e->next = s->kvs;
        s->kvs = e;
    }
    if (m->len)
        memcpy(copy, m->data, m->len);
    free(e->val);
    e->val = copy;
    e->len = m->len;
    conn_reply(c, WEFT__FRAME_OK, NULL);

    v.data = e->val;
    v.len = e->len;
    b = outbuf_encode(&v);
    for (int i = 0; i < s->nconns; i++) {
        struct conn *o = s->conns[i];

        if (o->park == PARK_GET && !strcmp(o->key, e->key)) {
            o->park = PARK_NONE;
            if (b)
                conn_send_buf(o, b);
            else
                conn_error(o, WEFT_ERR_NO_MEMORY, "the rendezvous store ran out of memory");
        }
    }
    outbuf_unref(b);
}

static void handle_get(struct weft__store_server *s, struct conn *c, const weft__msg_t *m)
{
    struct kv *e = kv_find(s, m->text);

    if (e) {
        weft__msg_t v = { .type = WEFT__FRAME_VALUE, .data = e->val, .len = e->len };

        conn_send(c, &v);
        return;
    }
    copy_str(c->key, sizeof(c->key), m->text);
    c->park = PARK_GET;
}

static void handle_barrier(struct weft__store_server *s, struct conn *c, const weft__msg_t *m)
{
    struct barrier *b;

    for (b = s->barriers; b && strcmp(b->name, m->text); b = b->next)
        ;
    if (!b) {
        b = calloc(1, sizeof(*b));
        if (!b) {
            conn_error(c, WEFT_ERR_NO_MEMORY, "the rendezvous store ran out of memory");
            return;
        }
        copy_str(b->name, sizeof(b->name), m->text);
        b->next = s->barriers;
        s->barriers = b;
    }
    if (b->count == 0) {
        b->n = (int)m->count;
    } else if (b->n != (int)m->count) {
        char msg[WEFT__FRAME_TEXT_MAX];

        snprintf(msg, sizeof(msg), "barrier '%.200s' waits for %d ranks, this one asked for %u",
                 b->name, b->n, m->count);
        conn_error(c, WEFT_ERR_MISMATCH, msg);
        return;
    }
    c->park = PARK_BARRIER;
    copy_str(c->key, sizeof(c->key), b->name);
    if (++b->count < b->n)
        return;
    b->count = 0; /* the same name can be used again */
    for (int i = 0; i < s->nconns; i++) {
        struct conn *o = s->conns[i];

        if (o->park == PARK_BARRIER && !strcmp(o->key, b->name)) {
            o->park = PARK_NONE;
            conn_reply(o, WEFT__FRAME_OK, NULL);
        }
    }
}

/* Withdraws what c waits for (it timed out, or left). */
static void unpark(struct weft__store_server *s, struct conn *c)
{
    if (c->park == PARK_BARRIER)
        for (struct barrier *b = s->barriers; b; b = b->next)
            if (!strcmp(b->name, c->key) && b->count > 0)
                b->count--;
    if (c->park == PARK_JOIN)
        join_leave(s, c);
    c->park = PARK_NONE;
}

/* ---------------------------------------------------------- connections */

/* Compares without leaking through timing how much of the token matched. */
static int token_equal(const char *a, const char *b)
{
    size_t la = strlen(a), lb = strlen(b);
    unsigned char diff = la != lb;

    for (size_t i = 0; i < la; i++)
        diff |= (unsigned char)(a[i] ^ b[i < lb ? i : 0]);
    return diff == 0;
}

static void handle_frame(struct weft__store_server *s, struct conn *c, uint32_t type,
                         const unsigned char *payload, size_t len)
{
    weft__msg_t m;

    if (weft__msg_decode(type, payload, len, &m) != WEFT_SUCCESS) {
        WEFT_WARN(INIT, "rendezvous: dropping client %s: %s", c->peer, weft__get_error());
        conn_refuse(c, WEFT_ERR_BOOTSTRAP, weft__get_error());
        return;
    }
    if (!c->authed) {
        if (m.type != WEFT__FRAME_HELLO || !token_equal(m.text, s->token)) {
            WEFT_WARN(INIT, "rendezvous: rejected a client from %s: %s", c->peer,
                      m.type != WEFT__FRAME_HELLO ? "it did not open with a hello"
                                                  : "wrong job token");
            conn_refuse(c, WEFT_ERR_BOOTSTRAP, "wrong job token (WEFT_AUTH_TOKEN differs from "
                        "the store's)");
            return;
        }
        c->authed = 1;
        conn_reply(c, WEFT__FRAME_OK, s->job_id);
        return;
    }
    if (m.type == WEFT__FRAME_CANCEL) {
        unpark(s, c);
        conn_reply(c, WEFT__FRAME_CANCELLED, NULL);
        return;
    }
    if (c->park != PARK_NONE) {
        WEFT_WARN(INIT, "rendezvous: dropping client %s: a request while another one is "
                  "pending", c->peer);
        conn_refuse(c, WEFT_ERR_BOOTSTRAP, "a request while another one is pending");
        return;
    }
    switch (m.type) {
    case WEFT__FRAME_JOIN: handle_join(s, c, &m); break;
    case WEFT__FRAME_QUERY: handle_query(s, c); break;
    case WEFT__FRAME_SET: handle_set(s, c, &m); break;
    case WEFT__FRAME_GET: handle_get(s, c, &m); break;
    case WEFT__FRAME_BARRIER: handle_barrier(s, c, &m); break;
    default:
        WEFT_WARN(INIT, "rendezvous: dropping client %s: frame type %u is not a request",
                  c->peer, m.type);
        conn_refuse(c, WEFT_ERR_BOOTSTRAP, "not a request");
        break;
    }
}

/* Reads what is there of c's current frame, and handles it once whole. */
static void conn_read(struct weft__store_server *s, struct conn *c)
{
    unsigned char *payload;
    ssize_t n;

    if (!c->in) {
        n = recv(c->fd, c->hdr + c->hdr_got, sizeof(c->hdr) - c->hdr_got, MSG_DONTWAIT);
        if (n <= 0)
            goto io_end;
        if (c->hdr_got == 0 && c->authed)
            c->since = weft__frame_clock_ms();
        c->hdr_got += (size_t)n;
        if (c->hdr_got < sizeof(c->hdr))
            return;
        if (weft__frame_parse_header(c->hdr, c->authed ? WEFT__FRAME_REQUEST_MAX
                                                       : WEFT__FRAME_HELLO_MAX,
                                     &c->in_type, &c->in_len) != WEFT_SUCCESS) {
            WEFT_WARN(INIT, "rendezvous: dropping client %s: %s", c->peer, weft__get_error());
            conn_refuse(c, WEFT_ERR_BOOTSTRAP, weft__get_error());
            return;
        }
        c->in = malloc(c->in_len ? c->in_len : 1);
        if (!c->in) {
            WEFT_WARN(INIT, "rendezvous: dropping client %s: no memory for a %u-byte frame",
                      c->peer, c->in_len);
            c->dead = 1;
            return;
        }
        c->in_got = 0;
    }
    if (c->in_got < c->in_len) {
        n = recv(c->fd, c->in + c->in_got, c->in_len - c->in_got, MSG_DONTWAIT);
        if (n <= 0)
            goto io_end;
        c->in_got += (size_t)n;
        if (c->in_got < c->in_len)
            return;
    }
    payload = c->in;
    c->in = NULL;
    c->hdr_got = 0;
    handle_frame(s, c, c->in_type, payload, c->in_len);
    free(payload);
    return;

io_end:
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR))
        return;
    if (c->in || c->hdr_got)
        WEFT_WARN(INIT, "rendezvous: client %s left in the middle of a frame", c->peer);
    c->dead = 1;
}

static void conn_free(struct weft__store_server *s, struct conn *c)
{
    unpark(s, c);
    join_leave(s, c);
    while (c->out_head) {
        struct outq *q = c->out_head;

        c->out_head = q->next;
        outbuf_unref(q->buf);
        free(q);
    }
    free(c->in);
    close(c->fd);
    free(c);
}

/* Drops the dead connections. */
static void sweep(struct weft__store_server *s)
{
    for (int i = s->nconns - 1; i >= 0; i--)
        if (s->conns[i]->dead) {
            conn_free(s, s->conns[i]);
            s->conns[i] = s->conns[--s->nconns];
        }
}

/* Marks the connections that stalled; returns the poll timeout until the
 * next one could (-1: none). */
static int expire(struct weft__store_server *s, int64_t now)
{
    int64_t next = -1;

    for (int i = 0; i < s->nconns; i++) {
        struct conn *c = s->conns[i];
        int64_t since = -1;
        const char *why = NULL;

        if (c->out_head) {
            since = c->out_moved;
            why = "it does not read its replies";
        } else if (!c->authed) {
            since = c->since;
            why = "no hello";
        } else if (c->in || c->hdr_got) {
            since = c->since;
            why = "a frame that does not finish";
        }
        if (since < 0)
            continue;
        if (now - since >= STALL_MS) {
            WEFT_WARN(INIT, "rendezvous: dropping client %s: %s within %d ms", c->peer, why,
                      STALL_MS);
            c->dead = 1;
        } else if (next < 0 || since + STALL_MS < next) {
            next = since + STALL_MS;
        }
    }
    if (s->accept_paused_until && (next < 0 || s->accept_paused_until < next))
        next = s->accept_paused_until;
    return next < 0 ? -1 : (int)(next - now > 0 ? next - now : 0);
}

static void format_peer(const struct sockaddr_storage *ss, socklen_t sl, char *buf, size_t cap)
{
    char host[INET6_ADDRSTRLEN + 16] = "?", serv[16] = "?";
    struct sockaddr_in v4;
    const struct sockaddr *sa = (const struct sockaddr *)ss;

    /* Dual-stack sockets see IPv4 peers as ::ffff:a.b.c.d: show a.b.c.d. */
    if (ss->ss_family == AF_INET6 &&
        IN6_IS_ADDR_V4MAPPED(&((const struct sockaddr_in6 *)ss)->sin6_addr)) {
        const struct sockaddr_in6 *a6 = (const struct sockaddr_in6 *)ss;

        memset(&v4, 0, sizeof(v4));
        v4.sin_family = AF_INET;
        v4.sin_port = a6->sin6_port;
        memcpy(&v4.sin_addr, a6->sin6_addr.s6_addr + 12, 4);
        sa = (const struct sockaddr *)&v4;
        sl = sizeof(v4);
    }
    getnameinfo(sa, sl, host, sizeof(host), serv, sizeof(serv), NI_NUMERICHOST | NI_NUMERICSERV);
    snprintf(buf, cap, sa->sa_family == AF_INET6 ? "[%s]:%s" : "%s:%s", host, serv);
}

static void accept_all(struct weft__store_server *s)
{
    for (;;) {
        struct sockaddr_storage ss;
        socklen_t sl = sizeof(ss);
        int fd = accept4(s->listen_fd, (struct sockaddr *)&ss, &sl,
                         SOCK_CLOEXEC | SOCK_NONBLOCK), one = 1;
        struct conn *c;

        if (fd < 0) {
            if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS || errno == ENOMEM) {
                WEFT_WARN(INIT, "rendezvous: cannot accept more clients for now: %m");
                s->accept_paused_until = weft__frame_clock_ms() + ACCEPT_PAUSE_MS;
            }
            return;
        }
        if (s->nconns == s->cap) {
            int cap = s->cap ? s->cap * 2 : 16;
            struct conn **p = realloc(s->conns, (size_t)cap * sizeof(*p));

            if (!p) {
                close(fd);
                return;
            }
            s->conns = p;
            s->cap = cap;
        }
        c = calloc(1, sizeof(*c));
        if (!c) {
            close(fd);
            return;
        }
        setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
        c->fd = fd;
        c->rank = -1;
        c->since = weft__frame_clock_ms();
        format_peer(&ss, sl, c->peer, sizeof(c->peer));
        s->conns[s->nconns++] = c;
    }
}

static void *server_main(void *arg)
{
    struct weft__store_server *s = arg;
    struct pollfd *fds = NULL;
    int fds_cap = 0;

    for (;;) {
        int64_t now = weft__frame_clock_ms();
        int n, timeout;

        if (s->accept_paused_until && now >= s->accept_paused_until)
            s->accept_paused_until = 0;
        timeout = expire(s, now);
        sweep(s);
        n = s->nconns;
        if (n + 2 > fds_cap) {
            struct pollfd *p = realloc(fds, (size_t)(n + 2) * 2 * sizeof(*p));

            if (!p) {
                WEFT_WARN(INIT, "rendezvous: out of memory for the poll set");
                poll(NULL, 0, ACCEPT_PAUSE_MS);
                continue;
            }
            fds = p;
            fds_cap = (n + 2) * 2;
        }
        fds[0] = (struct pollfd){ .fd = s->wake[0], .events = POLLIN };
        fds[1] = (struct pollfd){ .fd = s->accept_paused_until ? -1 : s->listen_fd,
                                  .events = POLLIN };
        for (int i = 0; i < n; i++)
            fds[i + 2] = (struct pollfd){ .fd = s->conns[i]->fd,
                                          .events = s->conns[i]->out_head ? POLLOUT : POLLIN };
        if (poll(fds, (nfds_t)n + 2, timeout) < 0) {
            if (errno == EINTR)
                continue;
            WEFT_WARN(INIT, "rendezvous: poll: %m");
            poll(NULL, 0, ACCEPT_PAUSE_MS);
            continue;
        }
        if (fds[0].revents)
            break;
        /* Handlers may mark any connection dead; none is freed before
         * the sweep, so indices stay valid. */
        for (int i = 0; i < n; i++) {
            struct conn *c = s->conns[i];

            if (!fds[i + 2].revents || c->dead)
                continue;
            if (c->out_head)
                conn_flush(c);
            else
                conn_read(s, c);
        }
        if (fds[1].revents)
            accept_all(s);
        sweep(s);
    }
    free(fds);
    return NULL;
}

/* ----------------------------------------------------------- start, stop */

static int listen_fd_on(int family, const struct sockaddr *sa, socklen_t sl, int v6only)
{
    int fd = socket(family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0), one = 1, err;

    if (fd < 0)
        return -1;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    if (family == AF_INET6)
        setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &v6only, sizeof(v6only));
    if (bind(fd, sa, sl) == 0 && listen(fd, SOMAXCONN) == 0)
        return fd;
    err = errno;
    close(fd);
    errno = err;
    return -1;
}

/* Listens on host:port (every address when host is NULL or ""); -1 with
 * errno (or *gai for a name that does not resolve) on failure. */
static int listen_on(const char *host, int port, int *bound, int *gai)
{
    int fd = -1;

    *gai = 0;
    if (!host || !*host) {
        /* Every address: one dual-stack IPv6 socket, else IPv4 alone. */
        struct sockaddr_in6 a6 = { .sin6_family = AF_INET6, .sin6_port = htons((uint16_t)port),
                                   .sin6_addr = IN6ADDR_ANY_INIT };
        struct sockaddr_in a4 = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port),
                                  .sin_addr.s_addr = htonl(INADDR_ANY) };

        fd = listen_fd_on(AF_INET6, (struct sockaddr *)&a6, sizeof(a6), 0);
        if (fd < 0 && errno != EADDRINUSE)
            fd = listen_fd_on(AF_INET, (struct sockaddr *)&a4, sizeof(a4), 0);
    } else {
        struct addrinfo hints = { .ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM,
                                  .ai_flags = AI_PASSIVE | AI_NUMERICSERV }, *res, *ai;
        char serv[16];
        int err = EADDRNOTAVAIL;

        snprintf(serv, sizeof(serv), "%d", port);
        *gai = getaddrinfo(host, serv, &hints, &res);
        if (*gai != 0)
            return -1;
        for (ai = res; ai && fd < 0; ai = ai->ai_next) {
            fd = listen_fd_on(ai->ai_family, ai->ai_addr, ai->ai_addrlen, 1);
            if (fd < 0)
                err = errno;
        }
        freeaddrinfo(res);
        errno = err;
    }
    if (fd >= 0) {
        struct sockaddr_storage ss;
        socklen_t sl = sizeof(ss);

        getsockname(fd, (struct sockaddr *)&ss, &sl);
        *bound = ntohs(ss.ss_family == AF_INET6 ? ((struct sockaddr_in6 *)&ss)->sin6_port
                                                : ((struct sockaddr_in *)&ss)->sin_port);
    }
    return fd;
}

weft_result_t weft__store_server_start(const char *host, int port, const char *token,
                                       int expected_size, const char *job_id,
                                       weft__store_server_t **out)
{
    struct weft__store_server *s;
    int gai, err;

    if (port < 0 || port > 65535)
        return weft__error(WEFT_ERR_INVALID_ARG, "rendezvous port %d is not from 0 to 65535",
                           port);
    if (expected_size > WEFT__FRAME_MAX_RANKS)
        return weft__error(WEFT_ERR_INVALID_ARG, "world size %d exceeds the limit of %d",
                           expected_size, WEFT__FRAME_MAX_RANKS);
    if (token && strlen(token) >= WEFT__FRAME_HOST_MAX)
        return weft__error(WEFT_ERR_INVALID_ARG, "the job token has %zu bytes, the limit is %d",
                           strlen(token), WEFT__FRAME_HOST_MAX - 1);
    s = calloc(1, sizeof(*s));
    if (!s)
        return weft__error(WEFT_ERR_NO_MEMORY, "cannot allocate the rendezvous store");
    s->size = expected_size > 0 ? expected_size : -1;
    if (s->size > 0) {
        s->members = calloc((size_t)s->size, sizeof(*s->members));
        if (!s->members) {
            free(s);
            return weft__error(WEFT_ERR_NO_MEMORY, "cannot allocate the rendezvous store for "
                               "%d ranks", expected_size);
        }
    }
    copy_str(s->token, sizeof(s->token), token ? token : "");
    if (job_id && *job_id) {
        copy_str(s->job_id, sizeof(s->job_id), job_id);
    } else {
        unsigned char rnd[8] = { 0 };
        uint64_t fallback = (uint64_t)weft__frame_clock_ms() ^ ((uint64_t)getpid() << 40);

        if (getrandom(rnd, sizeof(rnd), GRND_NONBLOCK) != (ssize_t)sizeof(rnd))
            memcpy(rnd, &fallback, sizeof(rnd));
        for (int i = 0; i < 8; i++)
            snprintf(s->job_id + 2 * i, 3, "%02x", rnd[i]);
    }
    s->listen_fd = listen_on(host, port, &s->port, &gai);
    if (s->listen_fd < 0) {
        err = errno;
        free(s->members);
        free(s);
        if (gai)
            return weft__error(WEFT_ERR_BOOTSTRAP, "cannot listen for the rendezvous on %s: "
                               "%s", host, gai_strerror(gai));
        return weft__error(WEFT_ERR_BOOTSTRAP, "cannot listen for the rendezvous on %s%s%s:%d: "
                           "%s", host && strchr(host, ':') ? "[" : "",
                           host && *host ? host : "*", host && strchr(host, ':') ? "]" : "",
                           port, strerror(err));
    }
    if (pipe2(s->wake, O_CLOEXEC) != 0) {
        err = errno;
        goto err_close_listen;
    }
    err = pthread_create(&s->thread, NULL, server_main, s);
    if (err != 0)
        goto err_close_pipe;
    WEFT_INFO(INIT, "rendezvous store listening on %s port %d (job %s)",
              host && *host ? host : "every address", s->port, s->job_id);
    *out = s;
    return WEFT_SUCCESS;

err_close_pipe:
    close(s->wake[0]);
    close(s->wake[1]);
err_close_listen:
    close(s->listen_fd);
    free(s->members);
    free(s);
    return weft__error(WEFT_ERR_SYSTEM, "cannot start the rendezvous store: %s", strerror(err));
}

int weft__store_server_port(const weft__store_server_t *srv)
{
    return srv->port;
}

const char *weft__store_server_job_id(const weft__store_server_t *srv)
{
    return srv->job_id;
}

/* Ranks still waiting for the join hear why the store goes away instead of
 * seeing their connection drop. */
static void tell_waiting(struct weft__store_server *s)
{
    char msg[WEFT__FRAME_TEXT_MAX], list[300];
    unsigned char *present;
    int n = 0;

    if (s->size <= 0 || s->complete || s->job_rc != WEFT_SUCCESS)
        return;
    for (int i = 0; i < s->nconns; i++)
        n += s->conns[i]->park == PARK_JOIN;
    if (!n)
        return;
    present = calloc((size_t)s->size, 1);
    if (!present)
        return;
    for (int r = 0; r < s->size; r++)
        present[r] = (unsigned char)s->members[r].arrived;
    weft__format_missing(present, s->size, list, sizeof(list));
    free(present);
    snprintf(msg, sizeof(msg), "the host of the rendezvous store stopped waiting for the job "
             "(%d of %d joined; missing rank%s %s)", s->arrived, s->size,
             s->size - s->arrived > 1 ? "s" : "", list);
    for (int i = 0; i < s->nconns; i++)
        if (s->conns[i]->park == PARK_JOIN) {
            s->conns[i]->park = PARK_NONE;
            conn_error(s->conns[i], WEFT_ERR_TIMEOUT, msg);
        }
}

/* Gives queued replies a last chance to leave. */
static void flush_all(struct weft__store_server *s)
{
    int64_t deadline = weft__frame_clock_ms() + STOP_FLUSH_MS;
    struct pollfd *fds = calloc((size_t)s->nconns + 1, sizeof(*fds));

    while (fds) {
        int n = 0, left = (int)(deadline - weft__frame_clock_ms());

        for (int i = 0; i < s->nconns; i++)
            if (s->conns[i]->out_head && !s->conns[i]->dead)
                fds[n++] = (struct pollfd){ .fd = s->conns[i]->fd, .events = POLLOUT };
        if (!n || left <= 0 || (poll(fds, (nfds_t)n, left) < 0 && errno != EINTR))
            break;
        for (int i = 0; i < s->nconns; i++)
            if (s->conns[i]->out_head)
                conn_flush(s->conns[i]);
    }
    free(fds);
}

void weft__store_server_stop(weft__store_server_t *s)
{
    if (!s)
        return;
    if (write(s->wake[1], "x", 1) < 0)
        WEFT_WARN(INIT, "cannot wake the rendezvous store: %m");
    pthread_join(s->thread, NULL);
    tell_waiting(s);
    flush_all(s);
    s->complete = 1; /* leaving now does not unjoin anyone */
    for (int i = 0; i < s->nconns; i++)
        conn_free(s, s->conns[i]);
    free(s->conns);
    while (s->kvs) {
        struct kv *e = s->kvs;

        s->kvs = e->next;
        free(e->val);
        free(e);
    }
    while (s->barriers) {
        struct barrier *b = s->barriers;

        s->barriers = b->next;
        free(b);
    }
    for (int r = 0; s->members && r < s->size; r++)
        free(s->members[r].blob);
    free(s->members);
    close(s->listen_fd);
    close(s->wake[0]);
    close(s->wake[1]);
    free(s);
}
