/*
 * store_client.c: a rank's connection to the rendezvous store.
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
#include <time.h>
#include <unistd.h>

#include "core/error.h"
#include "core/frame.h"
#include "core/log.h"
#include "core/store.h"

/* Pause between connection attempts while the server is not up yet. */
#define RETRY_MS 50
/* After a local timeout, how long to wait for the store's own verdict and
 * for the answer to "who is missing?". */
#define GRACE_MS 500

struct weft__store {
    int fd;
    char where[300];
    char host[256];
    int port;
    char token[256];
    int grace_ms;               /* see weft__store_set_grace */
    /* One request in flight per connection: calls from several threads
     * take turns. */
    pthread_mutex_t lock;
};

static int64_t now_ms(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* One nonblocking connect attempt to any address of host:port. */
static int try_connect(const char *host, int port, int64_t deadline, int *err)
{
    struct addrinfo hints = { .ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM,
                              .ai_flags = AI_NUMERICSERV }, *res, *ai;
    char serv[16];
    int fd = -1, gai;

    snprintf(serv, sizeof(serv), "%d", port);
    gai = getaddrinfo(host, serv, &hints, &res);
    if (gai != 0) {
        *err = -gai;
        return -1;
    }
    for (ai = res; ai && fd < 0; ai = ai->ai_next) {
        struct pollfd pfd;
        int64_t left = deadline - now_ms();
        int so = 0, one = 1;
        socklen_t sl = sizeof(so);

        fd = socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
        if (fd < 0)
            continue;
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

/* Turns an ERROR frame into its result code and message. */
static weft_result_t reply_error(const unsigned char *p, size_t len)
{
    weft__rbuf_t r = { p, p + len, 0 };
    weft_result_t rc = (weft_result_t)weft__rbuf_u32(&r);
    char msg[512];

    weft__rbuf_str(&r, msg, sizeof(msg));
    if (r.failed || rc == WEFT_SUCCESS)
        return weft__error(WEFT_ERR_BOOTSTRAP, "malformed error from the rendezvous store");
    return weft__error(rc, "%s", msg);
}

/* Sends a request and waits for its reply of the expected type; *remote
 * (when given) tells whether a failure is the store's answer. */
static weft_result_t roundtrip_remote(weft__store_t *st, uint32_t type, const weft__wbuf_t *req,
                                      uint32_t want, unsigned char **reply, size_t *len,
                                      int64_t deadline, int *remote)
{
    uint32_t got;
    weft_result_t rc;

    if (remote)
        *remote = 0;
    if (req->failed)
        return weft__error(WEFT_ERR_NO_MEMORY, "cannot build a rendezvous request");
    rc = weft__frame_send(st->fd, type, req->data, req->len, deadline);
    if (rc == WEFT_SUCCESS)
        rc = weft__frame_recv(st->fd, &got, reply, len, deadline);
    if (rc == WEFT_ERR_TIMEOUT)
        return rc; /* the caller words it */
    if (rc != WEFT_SUCCESS)
        return weft__error(rc, "rendezvous store at %s: %s", st->where, weft__get_error());
    if (got == WEFT__FRAME_ERROR) {
        rc = reply_error(*reply, *len);
        free(*reply);
        if (remote)
            *remote = 1;
        return rc;
    }
    if (got != want) {
        free(*reply);
        return weft__error(WEFT_ERR_BOOTSTRAP, "rendezvous store at %s answered with frame "
                           "type %u instead of %u", st->where, got, want);
    }
    return WEFT_SUCCESS;
}

/* Sends a request and waits for its reply of the expected type. */
static weft_result_t roundtrip(weft__store_t *st, uint32_t type, const weft__wbuf_t *req,
                               uint32_t want, unsigned char **reply, size_t *len,
                               int64_t deadline)
{
    return roundtrip_remote(st, type, req, want, reply, len, deadline, NULL);
}

weft_result_t weft__store_connect(const char *host, int port, const char *token,
                                  int timeout_ms, weft__store_t **out)
{
    int64_t deadline = now_ms() + timeout_ms;
    weft__store_t *st = calloc(1, sizeof(*st));
    weft__wbuf_t w = { 0 };
    unsigned char *reply = NULL;
    size_t len;
    int err = 0;
    weft_result_t rc;

    if (!st)
        return weft__error(WEFT_ERR_NO_MEMORY, "cannot allocate a rendezvous client");
    snprintf(st->where, sizeof(st->where), strchr(host, ':') ? "[%s]:%d" : "%s:%d", host, port);
    snprintf(st->host, sizeof(st->host), "%s", host);
    snprintf(st->token, sizeof(st->token), "%s", token ? token : "");
    st->port = port;
    st->grace_ms = GRACE_MS;
    pthread_mutex_init(&st->lock, NULL);
    for (;;) {
        st->fd = try_connect(host, port, deadline, &err);
        if (st->fd >= 0)
            break;
        if (err < 0 && err != -EAI_AGAIN) {
            rc = weft__error(WEFT_ERR_BOOTSTRAP, "cannot resolve the rendezvous host %s: %s",
                             host, gai_strerror(-err));
            goto err_free;
        }
        if (now_ms() + RETRY_MS >= deadline) {
            rc = weft__error(WEFT_ERR_TIMEOUT, "could not reach the rendezvous store at %s "
                             "within %d ms: %s", st->where, timeout_ms,
                             err > 0 ? strerror(err) : gai_strerror(-err));
            goto err_free;
        }
        usleep(RETRY_MS * 1000);
    }
    weft__wbuf_str(&w, token ? token : "");
    rc = roundtrip(st, WEFT__FRAME_HELLO, &w, WEFT__FRAME_OK, &reply, &len, deadline);
    weft__wbuf_free(&w);
    if (rc == WEFT_ERR_TIMEOUT)
        rc = weft__error(rc, "the rendezvous store at %s did not answer within %d ms",
                         st->where, timeout_ms);
    if (rc != WEFT_SUCCESS)
        goto err_close;
    free(reply);
    *out = st;
    return WEFT_SUCCESS;

err_close:
    close(st->fd);
err_free:
    pthread_mutex_destroy(&st->lock);
    free(st);
    return rc;
}

/* "2, 5, 7-9" from a presence array. */
static void missing_list(const unsigned char *present, int size, char *buf, size_t cap)
{
    size_t o = 0;
    int n = 0;

    buf[0] = '\0';
    for (int r = 0; r < size && o + 32 < cap; r++) {
        int e = r;

        if (present[r])
            continue;
        while (e + 1 < size && !present[e + 1])
            e++;
        o += (size_t)snprintf(buf + o, cap - o, "%s%d", n++ ? ", " : "", r);
        if (e > r)
            o += (size_t)snprintf(buf + o, cap - o, "-%d", e);
        r = e;
    }
    if (o + 32 >= cap)
        snprintf(buf + o, cap - o, ", ...");
}

/* After a join timed out: ask, on a fresh connection (the old one has the
 * join pending), which ranks arrived, and name those that did not. */
static weft_result_t join_timeout(weft__store_t *st, int rank, int size, int timeout_ms)
{
    weft__store_t *q = NULL;
    weft__wbuf_t w = { 0 };
    unsigned char *reply = NULL, *present = NULL;
    size_t len;
    char list[256];
    int joined = 0;
    weft_result_t rc;

    rc = weft__store_connect(st->host, st->port, st->token, GRACE_MS, &q);
    if (rc == WEFT_SUCCESS)
        rc = roundtrip(q, WEFT__FRAME_QUERY, &w, WEFT__FRAME_QUERIED, &reply, &len,
                       now_ms() + GRACE_MS);
    if (rc == WEFT_SUCCESS) {
        weft__rbuf_t r = { reply, reply + len, 0 };
        int n;

        weft__rbuf_u32(&r);
        n = (int)weft__rbuf_u32(&r);
        present = calloc((size_t)size, 1);
        for (int i = 0; present && i < n && !r.failed; i++) {
            uint32_t who = weft__rbuf_u32(&r);

            if (!r.failed && who < (uint32_t)size && !present[who]) {
                present[who] = 1;
                joined++;
            }
        }
    }
    weft__store_close(q);
    free(reply);
    if (!present) {
        /* The store went away while we asked: its host may have sent its
         * verdict on the join connection meanwhile. */
        uint32_t got = 0;

        if (weft__frame_recv(st->fd, &got, &reply, &len, now_ms() + GRACE_MS) == WEFT_SUCCESS) {
            rc = got == WEFT__FRAME_ERROR ? reply_error(reply, len) : WEFT_ERR_TIMEOUT;
            free(reply);
            if (got == WEFT__FRAME_ERROR)
                return rc;
        }
        return weft__error(WEFT_ERR_TIMEOUT, "rank %d: timed out after %d ms waiting for the "
                           "other ranks of %d to join", rank, timeout_ms, size);
    }
    present[rank] = 1;
    missing_list(present, size, list, sizeof(list));
    free(present);
    return weft__error(WEFT_ERR_TIMEOUT, "timed out after %d ms waiting for rank%s %s "
                       "(%d of %d joined)", timeout_ms, strchr(list, ',') || strchr(list, '-')
                       ? "s" : "", list, joined, size);
}

weft_result_t weft__store_join(weft__store_t *st, int rank, int size, const void *blob,
                               size_t len, int timeout_ms, char job_id[WEFT__JOB_ID_MAX],
                               void **blobs, size_t **lens)
{
    int64_t deadline = now_ms() + timeout_ms;
    weft__wbuf_t w = { 0 };
    unsigned char *reply = NULL, *all = NULL;
    size_t rlen, total = 0;
    size_t *ls = NULL;
    char host[256];
    int remote = 0;
    weft__rbuf_t r;
    weft_result_t rc;

    if (gethostname(host, sizeof(host)) != 0)
        snprintf(host, sizeof(host), "unknown");
    host[sizeof(host) - 1] = '\0';
    weft__wbuf_u32(&w, (uint32_t)rank);
    weft__wbuf_u32(&w, (uint32_t)size);
    weft__wbuf_u32(&w, (uint32_t)getpid());
    weft__wbuf_str(&w, host);
    weft__wbuf_bytes(&w, blob, len);
    pthread_mutex_lock(&st->lock);
    rc = roundtrip_remote(st, WEFT__FRAME_JOIN, &w, WEFT__FRAME_JOINED, &reply, &rlen, deadline,
                          &remote);
    if (rc == WEFT_ERR_TIMEOUT && remote) {
        pthread_mutex_unlock(&st->lock);
        weft__wbuf_free(&w);
        return rc;
    }
    if (rc == WEFT_ERR_TIMEOUT) {
        /* Ranks time out together: the store's host may be telling us,
         * right now, who is missing. Listen a moment before asking. */
        uint32_t got = 0;

        rc = st->grace_ms ? weft__frame_recv(st->fd, &got, &reply, &rlen,
                                             now_ms() + st->grace_ms) : WEFT_ERR_TIMEOUT;
        if (rc == WEFT_SUCCESS && got == WEFT__FRAME_ERROR) {
            rc = reply_error(reply, rlen);
            free(reply);
            pthread_mutex_unlock(&st->lock);
            weft__wbuf_free(&w);
            return rc;
        } else if (rc == WEFT_SUCCESS && got != WEFT__FRAME_JOINED) {
            free(reply);
            rc = weft__error(WEFT_ERR_BOOTSTRAP, "unexpected answer to a join");
        } else if (rc != WEFT_SUCCESS) {
            rc = WEFT_ERR_TIMEOUT;
        }
    }
    pthread_mutex_unlock(&st->lock);
    weft__wbuf_free(&w);
    if (rc == WEFT_ERR_TIMEOUT)
        return join_timeout(st, rank, size, timeout_ms);
    if (rc == WEFT_ERR_PEER_LOST)
        return weft__error(WEFT_ERR_BOOTSTRAP, "lost the connection to the rendezvous store at "
                           "%s while waiting for the other ranks (did its host exit?)",
                           st->where);
    if (rc != WEFT_SUCCESS)
        return rc;
    r.p = reply;
    r.end = reply + rlen;
    r.failed = 0;
    weft__rbuf_str(&r, job_id, WEFT__JOB_ID_MAX);
    if ((int)weft__rbuf_u32(&r) != size || r.failed)
        goto err_bad;
    ls = calloc((size_t)size, sizeof(*ls));
    all = malloc(rlen ? rlen : 1);
    if (!ls || !all) {
        rc = weft__error(WEFT_ERR_NO_MEMORY, "cannot allocate %d address records", size);
        goto err_free;
    }
    for (int i = 0; i < size; i++) {
        const void *p;

        ls[i] = weft__rbuf_bytes(&r, &p, WEFT__STORE_VALUE_MAX);
        if (r.failed)
            goto err_bad;
        memcpy(all + total, p, ls[i]);
        total += ls[i];
    }
    free(reply);
    *blobs = all;
    *lens = ls;
    return WEFT_SUCCESS;

err_bad:
    rc = weft__error(WEFT_ERR_BOOTSTRAP, "malformed join reply from the rendezvous store");
err_free:
    free(ls);
    free(all);
    free(reply);
    return rc;
}

weft_result_t weft__store_set(weft__store_t *st, const char *key, const void *val, size_t len)
{
    weft__wbuf_t w = { 0 };
    unsigned char *reply = NULL;
    size_t rlen;
    weft_result_t rc;

    if (strlen(key) >= WEFT__STORE_KEY_MAX || len > WEFT__STORE_VALUE_MAX)
        return weft__error(WEFT_ERR_INVALID_ARG, "store key or value too long");
    weft__wbuf_str(&w, key);
    weft__wbuf_bytes(&w, val, len);
    pthread_mutex_lock(&st->lock);
    rc = roundtrip(st, WEFT__FRAME_SET, &w, WEFT__FRAME_OK, &reply, &rlen, now_ms() + 30000);
    pthread_mutex_unlock(&st->lock);
    weft__wbuf_free(&w);
    if (rc == WEFT_ERR_TIMEOUT)
        return weft__error(rc, "the rendezvous store at %s did not answer", st->where);
    free(reply);
    return rc;
}

weft_result_t weft__store_get(weft__store_t *st, const char *key, void *val, size_t cap,
                              size_t *len, int timeout_ms)
{
    weft__wbuf_t w = { 0 };
    unsigned char *reply = NULL;
    size_t rlen;
    weft_result_t rc;

    weft__wbuf_str(&w, key);
    pthread_mutex_lock(&st->lock);
    rc = roundtrip(st, WEFT__FRAME_GET, &w, WEFT__FRAME_VALUE, &reply, &rlen,
                   now_ms() + timeout_ms);
    weft__wbuf_free(&w);
    if (rc == WEFT_ERR_TIMEOUT) {
        /* The server still holds the get: this connection cannot be
         * trusted to pair the next reply with the next request. */
        shutdown(st->fd, SHUT_RDWR);
        pthread_mutex_unlock(&st->lock);
        return weft__error(rc, "key '%s' did not appear in the rendezvous store within %d ms",
                           key, timeout_ms);
    }
    pthread_mutex_unlock(&st->lock);
    if (rc != WEFT_SUCCESS)
        return rc;
    if (rlen > cap) {
        free(reply);
        return weft__error(WEFT_ERR_TRUNCATED, "value of '%s' has %zu bytes, the buffer %zu",
                           key, rlen, cap);
    }
    memcpy(val, reply, rlen);
    *len = rlen;
    free(reply);
    return WEFT_SUCCESS;
}

weft_result_t weft__store_barrier(weft__store_t *st, const char *name, int n, int timeout_ms)
{
    weft__wbuf_t w = { 0 };
    unsigned char *reply = NULL;
    size_t rlen;
    weft_result_t rc;

    weft__wbuf_str(&w, name);
    weft__wbuf_u32(&w, (uint32_t)n);
    pthread_mutex_lock(&st->lock);
    rc = roundtrip(st, WEFT__FRAME_BARRIER, &w, WEFT__FRAME_OK, &reply, &rlen,
                   now_ms() + timeout_ms);
    pthread_mutex_unlock(&st->lock);
    weft__wbuf_free(&w);
    if (rc == WEFT_ERR_TIMEOUT)
        return weft__error(rc, "barrier '%s' of %d did not complete within %d ms", name, n,
                           timeout_ms);
    free(reply);
    return rc;
}

void weft__store_set_grace(weft__store_t *st, int ms)
{
    st->grace_ms = ms;
}

void weft__store_close(weft__store_t *st)
{
    if (!st)
        return;
    close(st->fd);
    pthread_mutex_destroy(&st->lock);
    free(st);
}
