/*
 * store_server.c: the rendezvous store server, one thread with a poll loop.
 *
 * Requests that must wait (a join before everyone arrived, a get of a key
 * nobody set yet, a barrier) are parked on the client and answered when the
 * state changes; the thread itself never blocks on one client except to
 * read a frame whose header already arrived (bounded by FRAME_READ_MS).
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
#include <time.h>
#include <unistd.h>

#include "core/error.h"
#include "core/frame.h"
#include "core/log.h"
#include "core/store.h"

#define FRAME_READ_MS 5000
#define MAX_CLIENTS 65536

enum park { PARK_NONE = 0, PARK_JOIN, PARK_GET, PARK_BARRIER };

struct client {
    int fd;
    int authed;
    int rank;                    /* joined as, or -1 */
    int park;
    char key[WEFT__STORE_KEY_MAX];
    char peer[64];
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
    uint32_t pid;
    char host[256];
    unsigned char *blob;
    size_t len;
};

struct weft__store_server {
    int listen_fd;
    int wake[2];                 /* self-pipe: stop */
    int port;
    char token[256];
    char job_id[WEFT__JOB_ID_MAX];
    pthread_t thread;

    struct client *clients;
    int nclients, cap;
    struct kv *kvs;
    struct barrier *barriers;

    int size;                    /* -1 until known */
    struct member *members;
    int joined;
    weft_result_t job_rc;        /* set once the join failed for everyone */
    char job_msg[512];
};

static void client_send(struct client *c, uint32_t type, const void *p, size_t len)
{
    int64_t deadline;
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    deadline = (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000 + FRAME_READ_MS;
    if (weft__frame_send(c->fd, type, p, len, deadline) != WEFT_SUCCESS) {
        shutdown(c->fd, SHUT_RDWR);
    }
}

static void client_error(struct client *c, weft_result_t rc, const char *msg)
{
    weft__wbuf_t w = { 0 };

    weft__wbuf_u32(&w, (uint32_t)rc);
    weft__wbuf_str(&w, msg);
    if (!w.failed)
        client_send(c, WEFT__FRAME_ERROR, w.data, w.len);
    weft__wbuf_free(&w);
}

static struct kv *kv_find(struct weft__store_server *s, const char *key)
{
    for (struct kv *e = s->kvs; e; e = e->next)
        if (!strcmp(e->key, key))
            return e;
    return NULL;
}

/* Fails the job for every rank: waiting joiners now, later ones on arrival. */
static void join_fail(struct weft__store_server *s, const char *msg)
{
    s->job_rc = WEFT_ERR_BOOTSTRAP;
    snprintf(s->job_msg, sizeof(s->job_msg), "%s", msg);
    WEFT_WARN(INIT, "rendezvous: %s", msg);
    for (int i = 0; i < s->nclients; i++)
        if (s->clients[i].park == PARK_JOIN) {
            s->clients[i].park = PARK_NONE;
            client_error(&s->clients[i], s->job_rc, s->job_msg);
        }
}

static void join_complete(struct weft__store_server *s)
{
    weft__wbuf_t w = { 0 };

    weft__wbuf_str(&w, s->job_id);
    weft__wbuf_u32(&w, (uint32_t)s->size);
    for (int r = 0; r < s->size; r++)
        weft__wbuf_bytes(&w, s->members[r].blob, s->members[r].len);
    if (w.failed) {
        join_fail(s, "the rendezvous server ran out of memory");
        weft__wbuf_free(&w);
        return;
    }
    for (int i = 0; i < s->nclients; i++)
        if (s->clients[i].park == PARK_JOIN) {
            s->clients[i].park = PARK_NONE;
            client_send(&s->clients[i], WEFT__FRAME_JOINED, w.data, w.len);
        }
    weft__wbuf_free(&w);
}

static void handle_join(struct weft__store_server *s, struct client *c, weft__rbuf_t *r)
{
    int rank = (int)weft__rbuf_u32(r), size = (int)weft__rbuf_u32(r);
    uint32_t pid = weft__rbuf_u32(r);
    char host[256], msg[512];
    const void *blob;
    size_t len;
    struct member *m;

    weft__rbuf_str(r, host, sizeof(host));
    len = weft__rbuf_bytes(r, &blob, WEFT__STORE_VALUE_MAX);
    if (r->failed || size <= 0 || size > WEFT__FRAME_MAX_RANKS || rank < 0 || rank >= size) {
        client_error(c, WEFT_ERR_BOOTSTRAP, "malformed join request");
        return;
    }
    if (s->job_rc != WEFT_SUCCESS) {
        client_error(c, s->job_rc, s->job_msg);
        return;
    }
    if (s->size < 0) {
        s->size = size;
        s->members = calloc((size_t)size, sizeof(*s->members));
        if (!s->members) {
            s->size = -1;
            client_error(c, WEFT_ERR_NO_MEMORY, "the rendezvous server ran out of memory");
            return;
        }
    }
    if (size != s->size) {
        snprintf(msg, sizeof(msg), "rank %d (host %.100s, pid %u) joined with world size %d, but "
                 "the job has world size %d", rank, host, pid, size, s->size);
        c->park = PARK_JOIN;
        join_fail(s, msg);
        return;
    }
    m = &s->members[rank];
    if (m->present) {
        snprintf(msg, sizeof(msg), "rank %d joined twice: from host %.100s, pid %u and from "
                 "host %.100s, pid %u", rank, m->host, m->pid, host, pid);
        c->park = PARK_JOIN;
        join_fail(s, msg);
        return;
    }
    m->blob = malloc(len ? len : 1);
    if (!m->blob) {
        client_error(c, WEFT_ERR_NO_MEMORY, "the rendezvous server ran out of memory");
        return;
    }
    memcpy(m->blob, blob, len);
    m->len = len;
    m->pid = pid;
    snprintf(m->host, sizeof(m->host), "%s", host);
    m->present = 1;
    c->rank = rank;
    c->park = PARK_JOIN;
    if (++s->joined == s->size)
        join_complete(s);
}

static void handle_query(struct weft__store_server *s, struct client *c)
{
    weft__wbuf_t w = { 0 };

    weft__wbuf_u32(&w, (uint32_t)(s->size < 0 ? 0 : s->size));
    weft__wbuf_u32(&w, (uint32_t)s->joined);
    for (int r = 0; r < s->size; r++)
        if (s->members[r].present)
            weft__wbuf_u32(&w, (uint32_t)r);
    if (!w.failed)
        client_send(c, WEFT__FRAME_QUERIED, w.data, w.len);
    weft__wbuf_free(&w);
}

static void answer_gets(struct weft__store_server *s, const struct kv *e)
{
    for (int i = 0; i < s->nclients; i++) {
        struct client *c = &s->clients[i];

        if (c->park == PARK_GET && !strcmp(c->key, e->key)) {
            c->park = PARK_NONE;
            client_send(c, WEFT__FRAME_VALUE, e->val, e->len);
        }
    }
}

static void handle_set(struct weft__store_server *s, struct client *c, weft__rbuf_t *r)
{
    char key[WEFT__STORE_KEY_MAX];
    const void *val;
    size_t len;
    struct kv *e;
    unsigned char *copy;

    weft__rbuf_str(r, key, sizeof(key));
    len = weft__rbuf_bytes(r, &val, WEFT__STORE_VALUE_MAX);
    if (r->failed) {
        client_error(c, WEFT_ERR_INVALID_ARG, "malformed set request (key or value too long?)");
        return;
    }
    copy = malloc(len ? len : 1);
    e = kv_find(s, key);
    if (!copy || (!e && !(e = calloc(1, sizeof(*e))))) {
        free(copy);
        client_error(c, WEFT_ERR_NO_MEMORY, "the rendezvous server ran out of memory");
        return;
    }
    if (!e->key[0]) {
        snprintf(e->key, sizeof(e->key), "%s", key);
        e->next = s->kvs;
        s->kvs = e;
    }
    memcpy(copy, val, len);
    free(e->val);
    e->val = copy;
    e->len = len;
    client_send(c, WEFT__FRAME_OK, NULL, 0);
    answer_gets(s, e);
}

static void handle_get(struct weft__store_server *s, struct client *c, weft__rbuf_t *r)
{
    struct kv *e;

    weft__rbuf_str(r, c->key, sizeof(c->key));
    if (r->failed) {
        client_error(c, WEFT_ERR_INVALID_ARG, "malformed get request");
        return;
    }
    e = kv_find(s, c->key);
    if (e)
        client_send(c, WEFT__FRAME_VALUE, e->val, e->len);
    else
        c->park = PARK_GET;
}

static void handle_barrier(struct weft__store_server *s, struct client *c, weft__rbuf_t *r)
{
    char name[WEFT__STORE_KEY_MAX];
    int n;
    struct barrier *b;

    weft__rbuf_str(r, name, sizeof(name));
    n = (int)weft__rbuf_u32(r);
    if (r->failed || n <= 0) {
        client_error(c, WEFT_ERR_INVALID_ARG, "malformed barrier request");
        return;
    }
    for (b = s->barriers; b && strcmp(b->name, name); b = b->next)
        ;
    if (!b) {
        b = calloc(1, sizeof(*b));
        if (!b) {
            client_error(c, WEFT_ERR_NO_MEMORY, "the rendezvous server ran out of memory");
            return;
        }
        snprintf(b->name, sizeof(b->name), "%s", name);
        b->n = n;
        b->next = s->barriers;
        s->barriers = b;
    }
    c->park = PARK_BARRIER;
    snprintf(c->key, sizeof(c->key), "%s", name);
    if (++b->count < b->n)
        return;
    for (int i = 0; i < s->nclients; i++) {
        struct client *o = &s->clients[i];

        if (o->park == PARK_BARRIER && !strcmp(o->key, name)) {
            o->park = PARK_NONE;
            client_send(o, WEFT__FRAME_OK, NULL, 0);
        }
    }
    b->count = 0; /* the same name can be used again */
}

static void client_drop(struct weft__store_server *s, int i)
{
    struct client *c = &s->clients[i];

    /* A rank that leaves before the job is complete has not joined. */
    if (c->rank >= 0 && s->members && s->joined < s->size && s->members[c->rank].present) {
        free(s->members[c->rank].blob);
        memset(&s->members[c->rank], 0, sizeof(s->members[c->rank]));
        s->joined--;
    }
    if (c->park == PARK_BARRIER)
        for (struct barrier *b = s->barriers; b; b = b->next)
            if (!strcmp(b->name, c->key) && b->count > 0)
                b->count--;
    close(c->fd);
    s->clients[i] = s->clients[--s->nclients];
}

/* Reads and handles one frame of client i; returns 0 when it was dropped. */
static int client_read(struct weft__store_server *s, int i)
{
    struct client *c = &s->clients[i];
    unsigned char *payload = NULL;
    size_t len = 0;
    uint32_t type;
    struct timespec ts;
    weft__rbuf_t r;
    weft_result_t rc;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    rc = weft__frame_recv(c->fd, &type, &payload, &len,
                          (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000 + FRAME_READ_MS);
    if (rc != WEFT_SUCCESS) {
        if (rc != WEFT_ERR_PEER_LOST)
            WEFT_WARN(INIT, "rendezvous: dropping client %s: %s", c->peer, weft__get_error());
        client_drop(s, i);
        return 0;
    }
    r.p = payload;
    r.end = payload + len;
    r.failed = 0;
    if (!c->authed) {
        char token[256];

        weft__rbuf_str(&r, token, sizeof(token));
        if (type != WEFT__FRAME_HELLO || r.failed || strcmp(token, s->token)) {
            WEFT_WARN(INIT, "rendezvous: rejected a client from %s: wrong job token", c->peer);
            client_error(c, WEFT_ERR_BOOTSTRAP, "wrong job token (WEFT_AUTH_TOKEN)");
            free(payload);
            client_drop(s, i);
            return 0;
        }
        c->authed = 1;
        client_send(c, WEFT__FRAME_OK, s->job_id, strlen(s->job_id));
        free(payload);
        return 1;
    }
    if (c->park != PARK_NONE) {
        client_error(c, WEFT_ERR_BOOTSTRAP, "request while another one is pending");
    } else {
        switch (type) {
        case WEFT__FRAME_JOIN: handle_join(s, c, &r); break;
        case WEFT__FRAME_QUERY: handle_query(s, c); break;
        case WEFT__FRAME_SET: handle_set(s, c, &r); break;
        case WEFT__FRAME_GET: handle_get(s, c, &r); break;
        case WEFT__FRAME_BARRIER: handle_barrier(s, c, &r); break;
        default: client_error(c, WEFT_ERR_BOOTSTRAP, "unknown request"); break;
        }
    }
    free(payload);
    return 1;
}

static void accept_client(struct weft__store_server *s)
{
    struct sockaddr_storage ss;
    socklen_t sl = sizeof(ss);
    int fd = accept4(s->listen_fd, (struct sockaddr *)&ss, &sl, SOCK_CLOEXEC | SOCK_NONBLOCK);
    struct client *c;
    char host[48] = "?", serv[16] = "?";
    int one = 1;

    if (fd < 0)
        return;
    if (s->nclients == MAX_CLIENTS) {
        close(fd);
        return;
    }
    if (s->nclients == s->cap) {
        int cap = s->cap ? s->cap * 2 : 16;
        struct client *p = realloc(s->clients, (size_t)cap * sizeof(*p));

        if (!p) {
            close(fd);
            return;
        }
        s->clients = p;
        s->cap = cap;
    }
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    getnameinfo((struct sockaddr *)&ss, sl, host, sizeof(host), serv, sizeof(serv),
                NI_NUMERICHOST | NI_NUMERICSERV);
    c = &s->clients[s->nclients++];
    memset(c, 0, sizeof(*c));
    c->fd = fd;
    c->rank = -1;
    snprintf(c->peer, sizeof(c->peer), "%s:%s", host, serv);
}

static void *server_main(void *arg)
{
    struct weft__store_server *s = arg;

    for (;;) {
        struct pollfd *fds = calloc((size_t)s->nclients + 2, sizeof(*fds));
        int n = s->nclients;

        if (!fds) {
            sleep(1);
            continue;
        }
        fds[0].fd = s->wake[0];
        fds[0].events = POLLIN;
        fds[1].fd = s->listen_fd;
        fds[1].events = POLLIN;
        for (int i = 0; i < n; i++) {
            fds[i + 2].fd = s->clients[i].fd;
            fds[i + 2].events = POLLIN;
        }
        if (poll(fds, (nfds_t)n + 2, -1) < 0 && errno != EINTR) {
            free(fds);
            break;
        }
        if (fds[0].revents) {
            free(fds);
            break;
        }
        /* Back to front: dropping client i moves the last one into i. */
        for (int i = n - 1; i >= 0; i--)
            if (fds[i + 2].revents)
                client_read(s, i);
        if (fds[1].revents)
            accept_client(s);
        free(fds);
    }
    return NULL;
}

static int listen_on(const char *host, int port, int *bound)
{
    struct addrinfo hints = { .ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM,
                              .ai_flags = AI_PASSIVE | AI_NUMERICSERV }, *res, *ai;
    char serv[16];
    int fd = -1, one = 1, zero = 0;

    snprintf(serv, sizeof(serv), "%d", port);
    if (!host || !*host) {
        /* Every address: one dual-stack IPv6 socket, else IPv4. */
        struct sockaddr_in6 a6 = { .sin6_family = AF_INET6, .sin6_port = htons((uint16_t)port),
                                   .sin6_addr = IN6ADDR_ANY_INIT };
        struct sockaddr_in a4 = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port),
                                  .sin_addr.s_addr = htonl(INADDR_ANY) };

        fd = socket(AF_INET6, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
        if (fd >= 0) {
            setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
            setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &zero, sizeof(zero));
            if (bind(fd, (struct sockaddr *)&a6, sizeof(a6)) == 0 && listen(fd, 1024) == 0)
                goto out;
            close(fd);
        }
        fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
        if (fd < 0)
            return -1;
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
        if (bind(fd, (struct sockaddr *)&a4, sizeof(a4)) == 0 && listen(fd, 1024) == 0)
            goto out;
        close(fd);
        return -1;
    }
    if (getaddrinfo(host, serv, &hints, &res) != 0)
        return -1;
    for (ai = res; ai; ai = ai->ai_next) {
        fd = socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
        if (fd < 0)
            continue;
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
        if (bind(fd, ai->ai_addr, ai->ai_addrlen) == 0 && listen(fd, 1024) == 0)
            break;
        close(fd);
        fd = -1;
    }
    freeaddrinfo(res);
    if (fd < 0)
        return -1;
out:
    {
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
    int err;

    if (port < 0 || port > 65535)
        return weft__error(WEFT_ERR_INVALID_ARG, "rendezvous port %d is out of range", port);
    s = calloc(1, sizeof(*s));
    if (!s)
        return weft__error(WEFT_ERR_NO_MEMORY, "cannot allocate the rendezvous server");
    s->size = expected_size > 0 ? expected_size : -1;
    if (s->size > 0) {
        s->members = calloc((size_t)s->size, sizeof(*s->members));
        if (!s->members)
            goto err_free;
    }
    snprintf(s->token, sizeof(s->token), "%s", token ? token : "");
    if (job_id && *job_id) {
        snprintf(s->job_id, sizeof(s->job_id), "%s", job_id);
    } else {
        unsigned char rnd[8] = { 0 };

        if (getrandom(rnd, sizeof(rnd), 0) != (ssize_t)sizeof(rnd))
            memcpy(rnd, &s, sizeof(s) < sizeof(rnd) ? sizeof(s) : sizeof(rnd));
        for (int i = 0; i < 8; i++)
            snprintf(s->job_id + 2 * i, 3, "%02x", rnd[i]);
    }
    s->listen_fd = listen_on(host, port, &s->port);
    if (s->listen_fd < 0) {
        err = errno;
        free(s->members);
        free(s);
        return weft__error(WEFT_ERR_BOOTSTRAP, "cannot listen for the rendezvous on %s:%d: %s",
                           host && *host ? host : "*", port, strerror(err));
    }
    if (pipe2(s->wake, O_CLOEXEC) != 0)
        goto err_listen;
    if (pthread_create(&s->thread, NULL, server_main, s) != 0)
        goto err_pipe;
    WEFT_INFO(INIT, "rendezvous store listening on %s:%d (job %s)", host && *host ? host : "*",
              s->port, s->job_id);
    *out = s;
    return WEFT_SUCCESS;

err_pipe:
    close(s->wake[0]);
    close(s->wake[1]);
err_listen:
    close(s->listen_fd);
err_free:
    free(s->members);
    free(s);
    return weft__error(WEFT_ERR_SYSTEM, "cannot start the rendezvous server: %m");
}

int weft__store_server_port(const weft__store_server_t *srv)
{
    return srv->port;
}

const char *weft__store_server_job_id(const weft__store_server_t *srv)
{
    return srv->job_id;
}

void weft__store_server_stop(weft__store_server_t *s)
{
    if (!s)
        return;
    if (write(s->wake[1], "x", 1) < 0)
        WEFT_WARN(INIT, "cannot wake the rendezvous server: %m");
    pthread_join(s->thread, NULL);
    /* Ranks still waiting for the join hear why the store goes away
     * instead of seeing their connection drop. */
    if (s->size > 0 && s->joined < s->size && s->job_rc == WEFT_SUCCESS) {
        char msg[512];
        size_t o = (size_t)snprintf(msg, sizeof(msg), "the host of the rendezvous store stopped "
                                    "waiting for the job (%d of %d joined; missing rank%s",
                                    s->joined, s->size, s->size - s->joined > 1 ? "s" : "");

        for (int r = 0, n = 0; r < s->size && o < sizeof(msg) - 32; r++)
            if (!s->members[r].present)
                o += (size_t)snprintf(msg + o, sizeof(msg) - o, "%s %d", n++ ? "," : "", r);
        snprintf(msg + o, sizeof(msg) - o, ")");
        for (int i = 0; i < s->nclients; i++)
            if (s->clients[i].park == PARK_JOIN)
                client_error(&s->clients[i], WEFT_ERR_TIMEOUT, msg);
    }
    for (int i = 0; i < s->nclients; i++)
        close(s->clients[i].fd);
    free(s->clients);
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
