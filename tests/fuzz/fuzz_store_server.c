/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * fuzz_store_server.c: the rendezvous store's server (core/boot/
 * store_server.c), live, over TCP on 127.0.0.1.
 *
 * Input: a first byte of settings, then the bytes of one to four client
 * connections, separated by SEP. Settings: bit 0 has every connection
 * open with a correct hello first (the store's token), so that half the
 * inputs reach the requests a client may send once authenticated (join,
 * set, get, barrier, query, cancel); bit 1 starts the store knowing the
 * world size (as weftrun does) rather than taking the first joiner's.
 * Every connection writes its bytes while the replies are read, then
 * half-closes; the store must then close it too.
 *
 * Properties: every byte the store sends is a whole frame its clients'
 * decoder accepts, of a reply type; a connection without a hello gets
 * one error and is closed, or is let in by a correct hello; the store
 * closes every connection within STUCK_MS of its end; and after all that
 * the store still serves a well-behaved client (the real one of
 * store_client.c: connect, set, get). Each input gets a fresh store, so
 * that a crash replays from its input alone.
 */
#include "config.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "core/base/error.h"
#include "core/boot/frame.h"
#include "core/boot/store.h"
#include "tests/fuzz/fuzz.h"

#define TOKEN "fuzz-token"
#define JOB "fuzz-job"
#define SEP "\n@@\n"
#define MAX_CONNS 4
#define STUCK_MS 5000
#define REPLY_MAX (WEFT__FRAME_HEADER + WEFT__FRAME_MAX)

struct client {
    int fd;
    const uint8_t *out;             /* the fuzz bytes still to send */
    size_t out_left;
    int wr_done, eof;
    unsigned char *in;              /* replies received */
    size_t in_len, in_cap;
};

/* A connection to the store, nonblocking: libFuzzer's timer signal may
 * interrupt a blocking connect halfway. */
static int dial(int port)
{
    struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port),
                             .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0), err = 0;
    socklen_t len = sizeof(err);
    struct pollfd pfd;

    FUZZ_REQUIRE(fd >= 0, "socket: %s", strerror(errno));
    if (connect(fd, (struct sockaddr *)&a, sizeof(a)) == 0)
        return fd;
    FUZZ_REQUIRE(errno == EINPROGRESS || errno == EINTR, "connect: %s", strerror(errno));
    pfd = (struct pollfd){ .fd = fd, .events = POLLOUT };
    while (poll(&pfd, 1, STUCK_MS) < 0)
        FUZZ_REQUIRE(errno == EINTR, "poll: %s", strerror(errno));
    FUZZ_REQUIRE(getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len) == 0 && err == 0 &&
                 (pfd.revents & POLLOUT), "the store does not accept: %s", strerror(err));
    return fd;
}

/* The hello of a well-behaved client, and the store's answer. */
static void hello(int fd)
{
    weft__msg_t m = { .type = WEFT__FRAME_HELLO }, reply;
    weft__wbuf_t w = { 0 };
    unsigned char *payload;

    snprintf(m.text, sizeof(m.text), "%s", TOKEN);
    FUZZ_REQUIRE(weft__msg_encode(&m, &w) == WEFT_SUCCESS, "hello: %s", weft__get_error());
    FUZZ_REQUIRE(weft__frame_send(fd, w.data, w.len, weft__frame_clock_ms() + STUCK_MS) ==
                 WEFT_SUCCESS, "hello: %s", weft__get_error());
    weft__wbuf_free(&w);
    FUZZ_REQUIRE(weft__frame_recv(fd, WEFT__FRAME_MAX, &reply, &payload,
                                  weft__frame_clock_ms() + STUCK_MS) == WEFT_SUCCESS,
                 "no answer to a correct hello: %s", weft__get_error());
    FUZZ_REQUIRE(reply.type == WEFT__FRAME_OK && !strcmp(reply.text, JOB),
                 "a correct hello answered with type %u '%s'", reply.type, reply.text);
    free(payload);
}

/* Splits the input at SEP into at most MAX_CONNS scripts. */
static int split(const uint8_t *data, size_t size, struct client *c)
{
    int n = 0;

    for (;;) {
        const uint8_t *sep = n + 1 < MAX_CONNS ? memmem(data, size, SEP, strlen(SEP)) : NULL;

        c[n].out = data;
        c[n].out_left = sep ? (size_t)(sep - data) : size;
        n++;
        if (!sep)
            return n;
        size -= (size_t)(sep - data) + strlen(SEP);
        data = sep + strlen(SEP);
    }
}

static void receive(struct client *c)
{
    ssize_t n;

    if (c->in_cap - c->in_len < 65536) {
        size_t cap = c->in_cap ? 2 * c->in_cap : 131072;
        unsigned char *p = realloc(c->in, cap);

        FUZZ_REQUIRE(p != NULL, "out of memory for %zu reply bytes", cap);
        c->in = p;
        c->in_cap = cap;
    }
    n = recv(c->fd, c->in + c->in_len, c->in_cap - c->in_len, MSG_DONTWAIT);
    if (n > 0) {
        c->in_len += (size_t)n;
        FUZZ_REQUIRE(c->in_len <= 64 * (size_t)REPLY_MAX, "the store keeps talking");
    } else if (n == 0 || (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)) {
        /* A reset counts as an end: the store closes a connection whose
         * remaining bytes it refused unread. */
        c->eof = 1;
    }
}

static void send_some(struct client *c)
{
    ssize_t n = send(c->fd, c->out, c->out_left, MSG_DONTWAIT | MSG_NOSIGNAL);

    if (n > 0) {
        c->out += n;
        c->out_left -= (size_t)n;
    } else if (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) {
        c->out_left = 0; /* the store closed it: the rest is not wanted */
    }
    if (c->out_left == 0) {
        shutdown(c->fd, SHUT_WR);
        c->wr_done = 1;
    }
}

/* Writes every script while reading every reply, until the store closed
 * every connection. */
static void exchange(struct client *c, int n)
{
    int64_t deadline = weft__frame_clock_ms() + STUCK_MS;

    for (;;) {
        struct pollfd pfd[MAX_CONNS];
        int open = 0;

        for (int i = 0; i < n; i++) {
            pfd[i].fd = c[i].eof ? -1 : c[i].fd;
            pfd[i].events = POLLIN | (c[i].wr_done ? 0 : POLLOUT);
            pfd[i].revents = 0;
            open += !c[i].eof;
        }
        if (!open)
            return;
        FUZZ_REQUIRE(weft__frame_clock_ms() < deadline,
                     "the store left %d connections open %d ms after they ended", open,
                     STUCK_MS);
        if (poll(pfd, (nfds_t)n, 100) < 0 && errno != EINTR)
            FUZZ_REQUIRE(0, "poll: %s", strerror(errno));
        for (int i = 0; i < n; i++) {
            if (pfd[i].revents & POLLOUT)
                send_some(&c[i]);
            if (pfd[i].revents & (POLLIN | POLLHUP | POLLERR))
                receive(&c[i]);
        }
    }
}

/* Every reply is a whole frame of a reply type; a connection that did
 * not say hello hears one error, unless a correct hello let it in. */
static void check_replies(const struct client *c, int authed)
{
    const unsigned char *p = c->in;
    size_t left = c->in_len;
    int nth = 0, refused = 0;

    while (left > 0) {
        weft__msg_t m;
        size_t used = 0;
        weft_result_t rc = weft__frame_decode(p, left, WEFT__FRAME_MAX, &m, &used);

        FUZZ_REQUIRE(rc == WEFT_SUCCESS, "reply %d does not decode (%s); %zu bytes left", nth,
                     weft__get_error(), left);
        FUZZ_REQUIRE(m.type == WEFT__FRAME_OK || m.type == WEFT__FRAME_ERROR ||
                     m.type == WEFT__FRAME_JOINED || m.type == WEFT__FRAME_QUERIED ||
                     m.type == WEFT__FRAME_VALUE || m.type == WEFT__FRAME_CANCELLED,
                     "reply %d is of type %u, not a reply", nth, m.type);
        FUZZ_REQUIRE(!refused, "a reply after the refusal of a client without a hello");
        if (!authed && nth == 0) {
            if (m.type == WEFT__FRAME_OK)
                FUZZ_REQUIRE(!strcmp(m.text, JOB), "hello answered with job '%s'", m.text);
            else
                FUZZ_REQUIRE(m.type == WEFT__FRAME_ERROR, "type %u before any hello", m.type);
            refused = m.type == WEFT__FRAME_ERROR;
        }
        if (m.type == WEFT__FRAME_JOINED)
            FUZZ_REQUIRE(!strcmp(m.text, JOB), "joined job '%s'", m.text);
        p += used;
        left -= used;
        nth++;
    }
}

/* A well-behaved client is still served. */
static void check_health(int port)
{
    static const char val[] = "still serving";
    weft__store_t *st = NULL;
    char got[sizeof(val)];
    size_t len = 0;
    weft_result_t rc = weft__store_connect("127.0.0.1", port, TOKEN, STUCK_MS, &st);

    FUZZ_REQUIRE(rc == WEFT_SUCCESS, "connect after the input: %s", weft__get_error());
    rc = weft__store_set(st, "fuzz-health", val, sizeof(val));
    FUZZ_REQUIRE(rc == WEFT_SUCCESS, "set after the input: %s", weft__get_error());
    rc = weft__store_get(st, "fuzz-health", got, sizeof(got), &len, STUCK_MS);
    FUZZ_REQUIRE(rc == WEFT_SUCCESS, "get after the input: %s", weft__get_error());
    FUZZ_REQUIRE(len == sizeof(val) && !memcmp(got, val, len), "get returned another value");
    weft__store_close(st);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static int quiet;
    struct client c[MAX_CONNS];
    weft__store_server_t *srv = NULL;
    weft_result_t rc;
    int n, authed, port;

    if (!quiet++)
        weft_fuzz_quiet();
    if (size < 1)
        return 0;
    authed = data[0] & 1;
    rc = weft__store_server_start("127.0.0.1", 0, TOKEN, data[0] & 2 ? 2 : -1, JOB, &srv);
    FUZZ_REQUIRE(rc == WEFT_SUCCESS, "the store does not start: %s", weft__get_error());
    port = weft__store_server_port(srv);
    memset(c, 0, sizeof(c));
    n = split(data + 1, size - 1, c);
    for (int i = 0; i < n; i++) {
        c[i].fd = dial(port);
        if (authed)
            hello(c[i].fd);
        if (c[i].out_left == 0) {
            shutdown(c[i].fd, SHUT_WR);
            c[i].wr_done = 1;
        }
    }
    exchange(c, n);
    for (int i = 0; i < n; i++) {
        check_replies(&c[i], authed);
        close(c[i].fd);
        free(c[i].in);
    }
    check_health(port);
    weft__store_server_stop(srv);
    return 0;
}
