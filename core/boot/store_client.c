/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * store_client.c: a rank's connection to the rendezvous store.
 *
 * One request at a time per connection. A get or barrier that times out
 * is withdrawn with CANCEL, so the connection stays in step; a connection
 * that fell out of step (a send cut short, a bad frame, a cancel nobody
 * confirmed) is closed and the next call opens a fresh one.
 */
#include "config.h"

#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "core/base/error.h"
#include "core/boot/frame.h"
#include "core/base/log.h"
#include "core/boot/store.h"

/* Pauses between connection attempts while the server is not up yet:
 * short at first, then longer so that a large job does not hammer it. */
#define RETRY_FIRST_MS 20
#define RETRY_MAX_MS 500
/* After a local timeout: how long to wait for the store's own verdict, the
 * answer to "who is missing?", or the confirmation of a cancel. */
#define GRACE_MS 500
/* A set never waits on other ranks: only a stuck store takes this long. */
#define SET_TIMEOUT_MS 30000

struct weft__store {
    int fd;                     /* -1: the next call reconnects */
    char where[300];            /* host:port, for messages */
    char host[256];
    int port;
    char token[WEFT__FRAME_HOST_MAX];
    int grace_ms;               /* see weft__store_set_grace */
    /* Guards fd and grace_ms: one request in flight per connection, so
     * calls from several threads take turns. */
    pthread_mutex_t lock;
};

static void drop_conn(weft__store_t *st)
{
    if (st->fd >= 0)
        close(st->fd);
    st->fd = -1;
}

/* One nonblocking connect attempt to each address of host:port, each
 * bounded by the deadline (and 1 s). *err: errno, or -EAI_* when the name
 * does not resolve. */
static int try_connect(const char *host, int port, int64_t deadline, int *err)
{
    struct addrinfo hints = { .ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM,
                              .ai_flags = AI_NUMERICSERV }, *res, *ai;
    char serv[16];
    int fd = -1, gai;

    snprintf(serv, sizeof(serv), "%d", port);
    gai = getaddrinfo(host, serv, &hints, &res);
    if (gai != 0) {
        *err = gai == EAI_SYSTEM ? errno : -gai;
        return -1;
    }
    for (ai = res; ai && fd < 0; ai = ai->ai_next) {
        struct pollfd pfd;
        int64_t left = deadline - weft__frame_clock_ms();
        int so = 0, one = 1;
        socklen_t sl = sizeof(so);

        fd = socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
        if (fd < 0) {
            *err = errno;
            continue;
        }
        if (connect(fd, ai->ai_addr, ai->ai_addrlen) != 0 && errno != EINPROGRESS) {
            *err = errno;
            goto next;
        }
        pfd.fd = fd;
        pfd.events = POLLOUT;
        if (poll(&pfd, 1, left > 0 ? (int)(left > 1000 ? 1000 : left) : 0) <= 0) {
            *err = ETIMEDOUT;
            goto next;
        }
        getsockopt(fd, SOL_SOCKET, SO_ERROR, &so, &sl);
        if (so) {
            *err = so;
            goto next;
        }
        setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
        continue;
next:
        close(fd);
        fd = -1;
    }
    freeaddrinfo(res);
    return fd;
}

static weft_result_t open_conn(weft__store_t *st, int64_t deadline, int timeout_ms);

/* The store's ERROR frame as this thread's error. */
static weft_result_t remote_error(const weft__msg_t *m)
{
    weft_result_t rc = (weft_result_t)m->code;

    if (m->code > WEFT_ERR_INTERNAL)
        rc = WEFT_ERR_BOOTSTRAP;
    return weft__error(rc, "%s", m->text);
}

/* Sends req and waits for the reply of type want (*rep, its payload in
 * *payload to free). *remote tells whether a failure is the store's own
 * answer. A local WEFT_ERR_TIMEOUT is returned without a message, for the
 * caller to word; the request may then still be pending at the store. */
static weft_result_t request(weft__store_t *st, const weft__msg_t *req, uint32_t want,
                             size_t max, weft__msg_t *rep, unsigned char **payload,
                             int64_t deadline, int *remote)
{
    weft__wbuf_t w = { 0 };
    weft_result_t rc;

    *remote = 0;
    *payload = NULL;
    rc = weft__msg_encode(req, &w);
    if (rc != WEFT_SUCCESS)
        goto out;
    if (st->fd < 0) {
        int64_t left = deadline - weft__frame_clock_ms();

        rc = open_conn(st, deadline, left > 0 ? (int)left : 0);
        if (rc != WEFT_SUCCESS)
            goto out;
    }
    rc = weft__frame_send(st->fd, w.data, w.len, deadline);
    if (rc != WEFT_SUCCESS) {
        /* Half a request would put the store out of step with us. */
        drop_conn(st);
        goto out;
    }
    rc = weft__frame_recv(st->fd, max, rep, payload, deadline);
    if (rc == WEFT_ERR_TIMEOUT)
        goto out;
    if (rc != WEFT_SUCCESS) {
        rc = weft__error(rc, "rendezvous store at %s: %s", st->where, weft__get_error());
        drop_conn(st);
        goto out;
    }
    if (rep->type == WEFT__FRAME_ERROR) {
        *remote = 1;
        rc = remote_error(rep);
    } else if (rep->type != want) {
        rc = weft__error(WEFT_ERR_BOOTSTRAP, "the rendezvous store at %s answered with frame "
                         "type %u instead of %u", st->where, rep->type, want);
        drop_conn(st);
    }
    if (rc != WEFT_SUCCESS) {
        free(*payload);
        *payload = NULL;
    }
out:
    weft__wbuf_free(&w);
    return rc;
}

/* Connects (retrying until the deadline: the store may not be up yet)
 * and says hello. */
static weft_result_t open_conn(weft__store_t *st, int64_t deadline, int timeout_ms)
{
    weft__msg_t hello = { .type = WEFT__FRAME_HELLO }, rep;
    unsigned char *payload;
    int err = ETIMEDOUT, remote, pause = RETRY_FIRST_MS;
    weft_result_t rc;

    for (;;) {
        int64_t left;

        st->fd = try_connect(st->host, st->port, deadline, &err);
        if (st->fd >= 0)
            break;
        if (err < 0 && err != -EAI_AGAIN)
            return weft__error(WEFT_ERR_BOOTSTRAP, "cannot resolve the rendezvous host %s: %s",
                               st->host, gai_strerror(-err));
        left = deadline - weft__frame_clock_ms();
        if (left <= 0)
            return weft__error(WEFT_ERR_TIMEOUT, "could not reach the rendezvous store at %s "
                               "within %d ms: %s", st->where, timeout_ms,
                               err > 0 ? strerror(err) : gai_strerror(-err));
        poll(NULL, 0, (int)(left < pause ? left : pause));
        pause = pause * 2 > RETRY_MAX_MS ? RETRY_MAX_MS : pause * 2;
    }
    snprintf(hello.text, sizeof(hello.text), "%s", st->token);
    rc = request(st, &hello, WEFT__FRAME_OK, WEFT__FRAME_REQUEST_MAX, &rep, &payload, deadline,
                 &remote);
    free(payload);
    if (rc == WEFT_SUCCESS)
        return WEFT_SUCCESS;
    drop_conn(st);
    if (rc == WEFT_ERR_TIMEOUT && !remote)
        return weft__error(rc, "the rendezvous store at %s did not answer within %d ms",
                           st->where, timeout_ms);
    if (remote)
        return weft__error(rc, "the rendezvous store at %s refused this rank: %s", st->where,
                           weft__get_error());
    return rc;
}

weft_result_t weft__store_connect(const char *host, int port, const char *token,
                                  int timeout_ms, weft__store_t **out)
{
    int64_t deadline = weft__frame_clock_ms() + (timeout_ms > 0 ? timeout_ms : 0);
    weft__store_t *st;
    weft_result_t rc;

    if (!host || !*host || strlen(host) >= sizeof(st->host))
        return weft__error(WEFT_ERR_INVALID_ARG, "rendezvous host '%.64s' is empty or too long",
                           host ? host : "(null)");
    if (port <= 0 || port > 65535)
        return weft__error(WEFT_ERR_INVALID_ARG, "rendezvous port %d is not from 1 to 65535",
                           port);
    if (token && strlen(token) >= WEFT__FRAME_HOST_MAX)
        return weft__error(WEFT_ERR_INVALID_ARG, "the job token has %zu bytes, the limit is %d",
                           strlen(token), WEFT__FRAME_HOST_MAX - 1);
    st = calloc(1, sizeof(*st));
    if (!st)
        return weft__error(WEFT_ERR_NO_MEMORY, "cannot allocate a rendezvous client");
    snprintf(st->where, sizeof(st->where), strchr(host, ':') ? "[%s]:%d" : "%s:%d", host, port);
    snprintf(st->host, sizeof(st->host), "%s", host);
    snprintf(st->token, sizeof(st->token), "%s", token ? token : "");
    st->port = port;
    st->grace_ms = GRACE_MS;
    st->fd = -1;
    rc = open_conn(st, deadline, timeout_ms);
    if (rc != WEFT_SUCCESS) {
        free(st);
        return rc;
    }
    pthread_mutex_init(&st->lock, NULL);
    *out = st;
    return WEFT_SUCCESS;
}

/* ----------------------------------------------------------------- join */

/* After a join timed out: ask, on a fresh connection (the old one has the
 * join pending), which ranks arrived, and name those that did not. */
static weft_result_t join_timeout(weft__store_t *st, int rank, int size, int timeout_ms)
{
    weft__store_t *q = NULL;
    weft__msg_t query = { .type = WEFT__FRAME_QUERY }, rep;
    unsigned char *payload = NULL, *present = NULL;
    char list[256];
    int joined = 0, remote;
    weft_result_t rc;

    rc = weft__store_connect(st->host, st->port, st->token, GRACE_MS, &q);
    if (rc == WEFT_SUCCESS)
        rc = request(q, &query, WEFT__FRAME_QUERIED, WEFT__FRAME_MAX, &rep, &payload,
                     weft__frame_clock_ms() + GRACE_MS, &remote);
    if (rc == WEFT_SUCCESS && rep.size == size) {
        weft__rbuf_t r;

        present = calloc((size_t)size, 1);
        weft__rbuf_init(&r, rep.data, rep.len);
        for (uint32_t i = 0; present && i < rep.count; i++) {
            uint32_t who = weft__rbuf_u32(&r); /* below size: decoding checked */

            joined += !present[who];
            present[who] = 1;
        }
    }
    free(payload);
    weft__store_close(q);
    if (!present) {
        /* The store went away while we asked (its host may have sent its
         * verdict on the join connection meanwhile), or it counts
         * another world size. */
        unsigned char *verdict = NULL;
        int told;

        pthread_mutex_lock(&st->lock);
        told = st->fd >= 0 &&
               weft__frame_recv(st->fd, WEFT__FRAME_MAX, &rep, &verdict,
                                weft__frame_clock_ms() + GRACE_MS) == WEFT_SUCCESS &&
               rep.type == WEFT__FRAME_ERROR;
        if (told)
            rc = remote_error(&rep);
        pthread_mutex_unlock(&st->lock);
        free(verdict);
        if (told)
            return rc;
        return weft__error(WEFT_ERR_TIMEOUT, "rank %d: timed out after %d ms waiting for the "
                           "other ranks of %d to join (the rendezvous store at %s could not "
                           "say which are missing)", rank, timeout_ms, size, st->where);
    }
    if (!present[rank]) {
        present[rank] = 1;
        joined++;
    }
    weft__format_missing(present, size, list, sizeof(list));
    free(present);
    return weft__error(WEFT_ERR_TIMEOUT, "timed out after %d ms waiting for rank%s %s "
                       "(%d of %d joined)", timeout_ms, size - joined > 1 ? "s" : "", list,
                       joined, size);
}

/* Copies the records of a JOINED reply into one buffer and a length array. */
static weft_result_t join_records(const weft__msg_t *rep, int size, void **blobs, size_t **lens)
{
    unsigned char *all;
    size_t *ls, total = 0;
    weft__rbuf_t r;

    ls = malloc((size_t)size * sizeof(*ls));
    all = malloc(rep->len ? rep->len : 1);
    if (!ls || !all) {
        free(ls);
        free(all);
        return weft__error(WEFT_ERR_NO_MEMORY, "cannot allocate the records of %d ranks", size);
    }
    weft__rbuf_init(&r, rep->data, rep->len);
    for (int i = 0; i < size; i++) {
        const void *p;

        /* Decoding checked that size records fill the frame. */
        ls[i] = weft__rbuf_bytes(&r, &p, WEFT__STORE_VALUE_MAX);
        if (ls[i])
            memcpy(all + total, p, ls[i]);
        total += ls[i];
    }
    *blobs = all;
    *lens = ls;
    return WEFT_SUCCESS;
}

weft_result_t weft__store_join(weft__store_t *st, int rank, int size, const void *blob,
                               size_t len, int timeout_ms, char job_id[WEFT__JOB_ID_MAX],
                               void **blobs, size_t **lens)
{
    int64_t deadline = weft__frame_clock_ms() + timeout_ms;
    weft__msg_t req = { .type = WEFT__FRAME_JOIN, .rank = rank, .size = size,
                        .pid = (uint32_t)getpid(), .data = blob, .len = len }, rep;
    unsigned char *payload = NULL;
    int remote = 0;
    weft_result_t rc;

    if (size < 1 || size > WEFT__FRAME_MAX_RANKS || rank < 0 || rank >= size)
        return weft__error(WEFT_ERR_INVALID_ARG, "rank %d of %d: not a rank of a world of 1 to "
                           "%d ranks", rank, size, WEFT__FRAME_MAX_RANKS);
    if (len > WEFT__STORE_VALUE_MAX)
        return weft__error(WEFT_ERR_INVALID_ARG, "rank %d: its record of %zu bytes exceeds the "
                           "limit of %u", rank, len, WEFT__STORE_VALUE_MAX);
    if (gethostname(req.text, WEFT__FRAME_HOST_MAX) != 0)
        snprintf(req.text, sizeof(req.text), "unknown");
    req.text[WEFT__FRAME_HOST_MAX - 1] = '\0';

    pthread_mutex_lock(&st->lock);
    rc = request(st, &req, WEFT__FRAME_JOINED, WEFT__FRAME_MAX, &rep, &payload, deadline,
                 &remote);
    if (rc == WEFT_ERR_TIMEOUT && !remote && st->grace_ms > 0 && st->fd >= 0) {
        /* Ranks time out together: the store's host may be telling us,
         * right now, who is missing. Listen a moment before asking. */
        rc = weft__frame_recv(st->fd, WEFT__FRAME_MAX, &rep, &payload,
                              weft__frame_clock_ms() + st->grace_ms);
        if (rc == WEFT_SUCCESS && rep.type == WEFT__FRAME_ERROR) {
            remote = 1;
            rc = remote_error(&rep);
        } else if (rc == WEFT_SUCCESS && rep.type != WEFT__FRAME_JOINED) {
            rc = weft__error(WEFT_ERR_BOOTSTRAP, "the rendezvous store at %s answered a join "
                             "with frame type %u", st->where, rep.type);
        } else if (rc != WEFT_SUCCESS) {
            rc = WEFT_ERR_TIMEOUT;
        }
        if (rc != WEFT_SUCCESS) {
            free(payload);
            payload = NULL;
        }
    }
    pthread_mutex_unlock(&st->lock);
    if (rc == WEFT_ERR_TIMEOUT && !remote)
        return join_timeout(st, rank, size, timeout_ms);
    if (rc == WEFT_ERR_PEER_LOST)
        return weft__error(WEFT_ERR_BOOTSTRAP, "lost the connection to the rendezvous store at "
                           "%s while waiting for the other ranks (did its host exit?)",
                           st->where);
    if (rc != WEFT_SUCCESS)
        return rc;
    if (rep.size != size) {
        rc = weft__error(WEFT_ERR_BOOTSTRAP, "the rendezvous store at %s answered a join of %d "
                         "ranks with %d records", st->where, size, rep.size);
    } else {
        rc = join_records(&rep, size, blobs, lens);
        if (rc == WEFT_SUCCESS) {
            /* Decoding bounded the job id to WEFT__JOB_ID_MAX - 1 bytes. */
            size_t n = strnlen(rep.text, WEFT__JOB_ID_MAX - 1);

            memcpy(job_id, rep.text, n);
            job_id[n] = '\0';
        }
    }
    free(payload);
    return rc;
}

/* ------------------------------------------------------ keys, barriers */

/* After a get or barrier timed out: withdraw it. Its own reply may still
 * come first: then it did complete, and *completed says so (*rep and
 * *payload hold that reply). The connection is dropped when the store
 * does not confirm in time, so that no stale reply can pair with a later
 * request. */
static void cancel(weft__store_t *st, uint32_t want, weft__msg_t *rep, unsigned char **payload,
                   int *completed)
{
    weft__msg_t req = { .type = WEFT__FRAME_CANCEL }, m;
    int64_t deadline = weft__frame_clock_ms() + GRACE_MS;
    weft__wbuf_t w = { 0 };
    unsigned char *p;

    *completed = 0;
    *payload = NULL;
    if (weft__msg_encode(&req, &w) != WEFT_SUCCESS ||
        weft__frame_send(st->fd, w.data, w.len, deadline) != WEFT_SUCCESS) {
        weft__wbuf_free(&w);
        drop_conn(st);
        return;
    }
    weft__wbuf_free(&w);
    for (;;) {
        if (weft__frame_recv(st->fd, WEFT__FRAME_REQUEST_MAX, &m, &p, deadline) !=
            WEFT_SUCCESS) {
            drop_conn(st);
            return;
        }
        if (m.type == WEFT__FRAME_CANCELLED) {
            free(p);
            return;
        }
        if (m.type == want && !*completed) {
            *completed = 1;
            *rep = m;
            *payload = p;
            continue;
        }
        free(p); /* an error of the withdrawn request: it is over either way */
    }
}

weft_result_t weft__store_set(weft__store_t *st, const char *key, const void *val, size_t len)
{
    weft__msg_t req = { .type = WEFT__FRAME_SET, .data = val, .len = len }, rep;
    unsigned char *payload;
    int remote;
    weft_result_t rc;

    if (!key || strlen(key) >= WEFT__STORE_KEY_MAX || len > WEFT__STORE_VALUE_MAX)
        return weft__error(WEFT_ERR_INVALID_ARG, "store key '%.64s%s' (%zu bytes, limit %d) or "
                           "its value (%zu bytes, limit %u) is too long", key ? key : "(null)",
                           key && strlen(key) > 64 ? "..." : "", key ? strlen(key) : 0,
                           WEFT__STORE_KEY_MAX - 1, len, WEFT__STORE_VALUE_MAX);
    snprintf(req.text, sizeof(req.text), "%s", key);
    pthread_mutex_lock(&st->lock);
    rc = request(st, &req, WEFT__FRAME_OK, WEFT__FRAME_REQUEST_MAX, &rep, &payload,
                 weft__frame_clock_ms() + SET_TIMEOUT_MS, &remote);
    if (rc == WEFT_ERR_TIMEOUT && !remote) {
        drop_conn(st);
        rc = weft__error(rc, "the rendezvous store at %s did not answer a set within %d ms",
                         st->where, SET_TIMEOUT_MS);
    }
    pthread_mutex_unlock(&st->lock);
    free(payload);
    return rc;
}

weft_result_t weft__store_get(weft__store_t *st, const char *key, void *val, size_t cap,
                              size_t *len, int timeout_ms)
{
    weft__msg_t req = { .type = WEFT__FRAME_GET }, rep;
    unsigned char *payload;
    int remote, completed = 0;
    weft_result_t rc;

    if (!key || strlen(key) >= WEFT__STORE_KEY_MAX)
        return weft__error(WEFT_ERR_INVALID_ARG, "store key '%.64s%s' is missing or longer "
                           "than %d bytes", key ? key : "(null)",
                           key && strlen(key) > 64 ? "..." : "", WEFT__STORE_KEY_MAX - 1);
    snprintf(req.text, sizeof(req.text), "%s", key);
    pthread_mutex_lock(&st->lock);
    rc = request(st, &req, WEFT__FRAME_VALUE, WEFT__FRAME_REQUEST_MAX, &rep, &payload,
                 weft__frame_clock_ms() + timeout_ms, &remote);
    if (rc == WEFT_ERR_TIMEOUT && !remote && st->fd >= 0) {
        cancel(st, WEFT__FRAME_VALUE, &rep, &payload, &completed);
        rc = completed ? WEFT_SUCCESS : WEFT_ERR_TIMEOUT;
    }
    if (rc == WEFT_ERR_TIMEOUT && !remote)
        rc = weft__error(rc, "key '%s' did not appear in the rendezvous store at %s within "
                         "%d ms", key, st->where, timeout_ms);
    pthread_mutex_unlock(&st->lock);
    if (rc == WEFT_SUCCESS && rep.len > cap)
        rc = weft__error(WEFT_ERR_TRUNCATED, "the value of store key '%s' has %zu bytes, the "
                         "buffer %zu", key, rep.len, cap);
    if (rc == WEFT_SUCCESS) {
        if (rep.len)
            memcpy(val, rep.data, rep.len);
        *len = rep.len;
    }
    free(payload);
    return rc;
}

weft_result_t weft__store_barrier(weft__store_t *st, const char *name, int n, int timeout_ms)
{
    weft__msg_t req = { .type = WEFT__FRAME_BARRIER, .count = (uint32_t)n }, rep;
    unsigned char *payload;
    int remote, completed = 0;
    weft_result_t rc;

    if (!name || strlen(name) >= WEFT__STORE_KEY_MAX || n < 1 || n > WEFT__FRAME_MAX_RANKS)
        return weft__error(WEFT_ERR_INVALID_ARG, "barrier '%.64s' of %d ranks: the name must "
                           "be shorter than %d bytes and the count from 1 to %d",
                           name ? name : "(null)", n, WEFT__STORE_KEY_MAX,
                           WEFT__FRAME_MAX_RANKS);
    snprintf(req.text, sizeof(req.text), "%s", name);
    pthread_mutex_lock(&st->lock);
    rc = request(st, &req, WEFT__FRAME_OK, WEFT__FRAME_REQUEST_MAX, &rep, &payload,
                 weft__frame_clock_ms() + timeout_ms, &remote);
    if (rc == WEFT_ERR_TIMEOUT && !remote && st->fd >= 0) {
        cancel(st, WEFT__FRAME_OK, &rep, &payload, &completed);
        rc = completed ? WEFT_SUCCESS : WEFT_ERR_TIMEOUT;
    }
    if (rc == WEFT_ERR_TIMEOUT && !remote)
        rc = weft__error(rc, "barrier '%s' of %d ranks did not complete within %d ms", name, n,
                         timeout_ms);
    pthread_mutex_unlock(&st->lock);
    free(payload);
    return rc;
}

void weft__store_set_grace(weft__store_t *st, int ms)
{
    pthread_mutex_lock(&st->lock);
    st->grace_ms = ms;
    pthread_mutex_unlock(&st->lock);
}

void weft__store_close(weft__store_t *st)
{
    if (!st)
        return;
    drop_conn(st);
    pthread_mutex_destroy(&st->lock);
    free(st);
}
