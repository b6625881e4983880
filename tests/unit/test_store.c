/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_store.c: the rendezvous store, server and clients in one process:
 * joins (blobs back in rank order, size mismatch, duplicate rank, timeouts
 * naming the missing ranks, ranks that leave), authentication, hostile
 * frames from raw sockets, IPv6 and host names, keys, barriers.
 *
 * Client threads only record what happened; the main thread asserts
 * (cmocka's assertions are not for other threads).
 */
#include "config.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <malloc.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cmocka.h>

#include "core/base/error.h"
#include "core/boot/frame.h"
#include "core/boot/store.h"

#define TOKEN "s3cret"

/* ----------------------------------------------------------- helpers */

static void sleep_ms(int ms)
{
    poll(NULL, 0, ms);
}

static int64_t now_ms(void)
{
    return weft__frame_clock_ms();
}

static weft__store_server_t *start_server(const char *host, int size)
{
    weft__store_server_t *srv = NULL;

    assert_int_equal(weft__store_server_start(host, 0, TOKEN, size, NULL, &srv), WEFT_SUCCESS);
    assert_true(weft__store_server_port(srv) > 0);
    return srv;
}

static weft__store_t *connect_ok(const char *host, int port)
{
    weft__store_t *st = NULL;

    if (weft__store_connect(host, port, TOKEN, 2000, &st) != WEFT_SUCCESS)
        fail_msg("connect to %s:%d: %s", host, port, weft_last_error());
    return st;
}

/* A port nothing listens on (bound, then closed). */
static int free_port(void)
{
    struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
    socklen_t sl = sizeof(a);
    int fd = socket(AF_INET, SOCK_STREAM, 0);

    assert_true(fd >= 0);
    assert_int_equal(bind(fd, (struct sockaddr *)&a, sizeof(a)), 0);
    assert_int_equal(getsockname(fd, (struct sockaddr *)&a, &sl), 0);
    close(fd);
    return ntohs(a.sin_port);
}

/* A plain blocking socket to 127.0.0.1:port, for speaking the protocol
 * (or not) by hand. */
static int raw_connect(int port)
{
    struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port),
                             .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
    int fd = socket(AF_INET, SOCK_STREAM, 0);

    assert_true(fd >= 0);
    assert_int_equal(connect(fd, (struct sockaddr *)&a, sizeof(a)), 0);
    return fd;
}

static void raw_send(int fd, const weft__msg_t *m)
{
    weft__wbuf_t w = { 0 };

    assert_int_equal(weft__msg_encode(m, &w), WEFT_SUCCESS);
    assert_int_equal(weft__frame_send(fd, w.data, w.len, now_ms() + 2000), WEFT_SUCCESS);
    weft__wbuf_free(&w);
}

/* Receives one frame of the expected type (its payload freed). */
static void raw_expect(int fd, uint32_t type, weft__msg_t *m)
{
    unsigned char *payload;
    weft__msg_t tmp;

    if (!m)
        m = &tmp;
    assert_int_equal(weft__frame_recv(fd, WEFT__FRAME_MAX, m, &payload, now_ms() + 3000),
                     WEFT_SUCCESS);
    assert_int_equal(m->type, type);
    m->data = NULL; /* points into the payload */
    free(payload);
}

static int raw_hello(int port)
{
    weft__msg_t hello = { .type = WEFT__FRAME_HELLO };
    int fd = raw_connect(port);

    snprintf(hello.text, sizeof(hello.text), "%s", TOKEN);
    raw_send(fd, &hello);
    raw_expect(fd, WEFT__FRAME_OK, NULL);
    return fd;
}

/* 1 when the server closed fd (after what it had to say), within 3 s. */
static int raw_closed(int fd)
{
    struct pollfd pfd = { .fd = fd, .events = POLLIN };
    char buf[256];

    for (int i = 0; i < 100; i++) {
        ssize_t n;

        if (poll(&pfd, 1, 3000) <= 0)
            return 0;
        n = recv(fd, buf, sizeof(buf), 0);
        if (n <= 0)
            return 1;
    }
    return 0;
}

/* Waits until the store counts n joined ranks. */
static void wait_joined(int port, uint32_t n)
{
    int fd = raw_hello(port);
    int64_t deadline = now_ms() + 5000;

    for (;;) {
        weft__msg_t q = { .type = WEFT__FRAME_QUERY }, r;
        unsigned char *payload;

        raw_send(fd, &q);
        assert_int_equal(weft__frame_recv(fd, WEFT__FRAME_MAX, &r, &payload, now_ms() + 2000),
                         WEFT_SUCCESS);
        assert_int_equal(r.type, WEFT__FRAME_QUERIED);
        free(payload);
        if (r.count >= n)
            break;
        if (now_ms() > deadline)
            fail_msg("the store still counts %u of %u joined ranks", r.count, n);
        sleep_ms(10);
    }
    close(fd);
}

/* One rank joining from its own thread. */
struct joiner {
    const char *host;
    int port, rank, size, timeout_ms, grace_ms, delay_ms;
    int close_early;            /* close without joining after the timeout */
    char blob[64];
    size_t blob_len;
    weft_result_t rc;
    char err[1024];
    char job_id[WEFT__JOB_ID_MAX];
    void *blobs;
    size_t *lens;
    int64_t took_ms;
    pthread_t th;
};

static void *join_main(void *arg)
{
    struct joiner *j = arg;
    weft__store_t *st = NULL;
    int64_t t0;

    sleep_ms(j->delay_ms);
    t0 = now_ms();
    j->rc = weft__store_connect(j->host ? j->host : "127.0.0.1", j->port, TOKEN, 5000, &st);
    if (j->rc == WEFT_SUCCESS) {
        if (j->grace_ms >= 0)
            weft__store_set_grace(st, j->grace_ms);
        j->rc = weft__store_join(st, j->rank, j->size, j->blob, j->blob_len, j->timeout_ms,
                                 j->job_id, &j->blobs, &j->lens);
    }
    j->took_ms = now_ms() - t0;
    if (j->rc != WEFT_SUCCESS)
        snprintf(j->err, sizeof(j->err), "%s", weft_last_error());
    weft__store_close(st);
    return NULL;
}

static void joiner_init(struct joiner *j, int port, int rank, int size)
{
    memset(j, 0, sizeof(*j));
    j->port = port;
    j->rank = rank;
    j->size = size;
    j->timeout_ms = 5000;
    j->grace_ms = -1;
    /* Lengths differ (rank 3's is empty) so that order and boundaries
     * both show. */
    j->blob_len = rank == 3 ? 0 : (size_t)snprintf(j->blob, sizeof(j->blob), "rank-%d-%.*s",
                                                    rank, rank, "xxxxxxxxxxxxxxxx");
}

static void joiner_start(struct joiner *j)
{
    assert_int_equal(pthread_create(&j->th, NULL, join_main, j), 0);
}

static void joiner_wait(struct joiner *j)
{
    assert_int_equal(pthread_join(j->th, NULL), 0);
}

static void joiner_free(struct joiner *j)
{
    free(j->blobs);
    free(j->lens);
    j->blobs = NULL;
    j->lens = NULL;
}

static void expect_error(const struct joiner *j, weft_result_t rc, const char *needle)
{
    if (j->rc != rc || !strstr(j->err, needle))
        fail_msg("rank %d: result %d '%s', expected %d mentioning '%s'", j->rank, j->rc, j->err,
                 rc, needle);
}

/* Every joiner got every blob in rank order and the server's job id. */
static void expect_joined(struct joiner *js, int n, const weft__store_server_t *srv)
{
    for (int i = 0; i < n; i++) {
        size_t off = 0;

        if (js[i].rc != WEFT_SUCCESS)
            fail_msg("rank %d: %s", js[i].rank, js[i].err);
        assert_string_equal(js[i].job_id, weft__store_server_job_id(srv));
        for (int r = 0; r < n; r++) {
            const struct joiner *owner = NULL;

            for (int k = 0; k < n; k++)
                if (js[k].rank == r)
                    owner = &js[k];
            assert_non_null(owner);
            assert_int_equal(js[i].lens[r], owner->blob_len);
            assert_memory_equal((char *)js[i].blobs + off, owner->blob, owner->blob_len);
            off += js[i].lens[r];
        }
    }
}

/* ------------------------------------------------------------ joining */

static void test_join_rank_order(void **state)
{
    enum { N = 6 };
    weft__store_server_t *srv = start_server("127.0.0.1", -1);
    struct joiner js[N];

    (void)state;
    /* Started in reverse, staggered: arrival order is not rank order. */
    for (int i = 0; i < N; i++) {
        joiner_init(&js[i], weft__store_server_port(srv), N - 1 - i, N);
        js[i].delay_ms = 5 * i;
        joiner_start(&js[i]);
    }
    for (int i = 0; i < N; i++)
        joiner_wait(&js[i]);
    expect_joined(js, N, srv);
    for (int i = 0; i < N; i++)
        joiner_free(&js[i]);
    weft__store_server_stop(srv);
}

static void test_join_many_and_large(void **state)
{
    enum { N = 24 };
    weft__store_server_t *srv = start_server(NULL, N);
    struct joiner js[N];
    weft__store_t *big;
    unsigned char *blob = malloc(WEFT__STORE_VALUE_MAX);
    char job[WEFT__JOB_ID_MAX];
    void *blobs;
    size_t *lens;

    (void)state;
    assert_non_null(blob);
    for (size_t i = 0; i < WEFT__STORE_VALUE_MAX; i++)
        blob[i] = (unsigned char)(i * 7 + 1);
    for (int i = 1; i < N; i++) {
        joiner_init(&js[i], weft__store_server_port(srv), i, N);
        joiner_start(&js[i]);
    }
    /* Rank 0's record is as large as a record may be: the reply (N
     * copies of over 1 MiB) leaves through the output queues in pieces. */
    big = connect_ok("127.0.0.1", weft__store_server_port(srv));
    assert_int_equal(weft__store_join(big, 0, N, blob, WEFT__STORE_VALUE_MAX, 5000, job, &blobs,
                                      &lens), WEFT_SUCCESS);
    assert_int_equal(lens[0], WEFT__STORE_VALUE_MAX);
    assert_memory_equal(blobs, blob, WEFT__STORE_VALUE_MAX);
    for (int i = 1; i < N; i++) {
        joiner_wait(&js[i]);
        if (js[i].rc != WEFT_SUCCESS)
            fail_msg("rank %d: %s", i, js[i].err);
        assert_int_equal(js[i].lens[0], WEFT__STORE_VALUE_MAX);
        assert_memory_equal(js[i].blobs, blob, WEFT__STORE_VALUE_MAX);
        assert_int_equal(js[i].lens[i], js[i].blob_len);
        joiner_free(&js[i]);
    }
    free(blobs);
    free(lens);
    free(blob);
    weft__store_close(big);
    weft__store_server_stop(srv);
}

static void test_size_mismatch(void **state)
{
    weft__store_server_t *srv = start_server("127.0.0.1", -1);
    int port = weft__store_server_port(srv);
    struct joiner js[4];

    (void)state;
    /* Ranks 0 and 1 make the job's size 4 ... */
    for (int i = 0; i < 2; i++) {
        joiner_init(&js[i], port, i, 4);
        joiner_start(&js[i]);
    }
    wait_joined(port, 2);
    /* ... then rank 2 says 3: every waiting rank hears about it. */
    joiner_init(&js[2], port, 2, 3);
    joiner_start(&js[2]);
    for (int i = 0; i < 3; i++)
        joiner_wait(&js[i]);
    for (int i = 0; i < 3; i++) {
        expect_error(&js[i], WEFT_ERR_BOOTSTRAP, "rank 2 (host ");
        expect_error(&js[i], WEFT_ERR_BOOTSTRAP, "joined with world size 3, but the job has "
                                                 "world size 4");
        expect_error(&js[i], WEFT_ERR_BOOTSTRAP, "pid ");
        assert_true(js[i].took_ms < 4000);
    }
    /* A rank arriving later gets the same verdict at once. */
    joiner_init(&js[3], port, 3, 4);
    joiner_start(&js[3]);
    joiner_wait(&js[3]);
    expect_error(&js[3], WEFT_ERR_BOOTSTRAP, "world size 3");
    weft__store_server_stop(srv);
}

static void test_expected_size(void **state)
{
    weft__store_server_t *srv = start_server("127.0.0.1", 2);
    struct joiner j;

    (void)state;
    /* The host (weftrun) knows the size: the first joiner cannot set it. */
    joiner_init(&j, weft__store_server_port(srv), 1, 3);
    joiner_start(&j);
    joiner_wait(&j);
    expect_error(&j, WEFT_ERR_BOOTSTRAP, "joined with world size 3, but the job has world "
                                         "size 2");
    weft__store_server_stop(srv);
}

static void test_duplicate_rank(void **state)
{
    weft__store_server_t *srv = start_server("127.0.0.1", 3);
    int port = weft__store_server_port(srv);
    struct joiner js[3];

    (void)state;
    joiner_init(&js[0], port, 0, 3);
    joiner_init(&js[1], port, 1, 3);
    joiner_start(&js[0]);
    joiner_start(&js[1]);
    wait_joined(port, 2);
    joiner_init(&js[2], port, 1, 3);
    joiner_start(&js[2]);
    for (int i = 0; i < 3; i++) {
        joiner_wait(&js[i]);
        expect_error(&js[i], WEFT_ERR_BOOTSTRAP, "rank 1 joined twice");
        assert_true(js[i].took_ms < 4000);
    }
    weft__store_server_stop(srv);
}

static void test_timeout_names_missing(void **state)
{
    weft__store_server_t *srv = start_server("127.0.0.1", 8);
    int port = weft__store_server_port(srv), present[] = { 0, 1, 2, 3, 6 };
    struct joiner js[5];

    (void)state;
    for (int i = 0; i < 5; i++) {
        joiner_init(&js[i], port, present[i], 8);
        js[i].timeout_ms = 300;
        js[i].grace_ms = 0;
        joiner_start(&js[i]);
    }
    for (int i = 0; i < 5; i++) {
        joiner_wait(&js[i]);
        expect_error(&js[i], WEFT_ERR_TIMEOUT, "timed out after 300 ms waiting for ranks 4-5, "
                                               "7 (5 of 8 joined)");
        if (js[i].took_ms < 290 || js[i].took_ms > 3000)
            fail_msg("rank %d gave up after %lld ms", js[i].rank, (long long)js[i].took_ms);
    }
    weft__store_server_stop(srv);
}

static void test_host_stops_waiting(void **state)
{
    weft__store_server_t *srv = start_server("127.0.0.1", 3);
    int port = weft__store_server_port(srv);
    struct joiner j;

    (void)state;
    /* The store's host gives up before this rank's own (long) timeout:
     * the rank hears why, and who was missing, instead of a dropped
     * connection. */
    joiner_init(&j, port, 0, 3);
    j.timeout_ms = 10000;
    joiner_start(&j);
    wait_joined(port, 1);
    weft__store_server_stop(srv);
    joiner_wait(&j);
    expect_error(&j, WEFT_ERR_TIMEOUT, "stopped waiting");
    expect_error(&j, WEFT_ERR_TIMEOUT, "missing ranks 1-2");
    assert_true(j.took_ms < 5000);
}

static void test_leaver_is_forgotten(void **state)
{
    weft__store_server_t *srv = start_server("127.0.0.1", 3);
    int port = weft__store_server_port(srv);
    struct joiner early, js[3];

    (void)state;
    /* A rank 1 that gives up and leaves... */
    joiner_init(&early, port, 1, 3);
    early.timeout_ms = 150;
    early.grace_ms = 0;
    joiner_start(&early);
    joiner_wait(&early);
    expect_error(&early, WEFT_ERR_TIMEOUT, "ranks 0, 2 (1 of 3 joined)");
    /* ... is no longer counted: a new rank 1 is not a duplicate. */
    for (int i = 0; i < 3; i++) {
        joiner_init(&js[i], port, i, 3);
        joiner_start(&js[i]);
    }
    for (int i = 0; i < 3; i++)
        joiner_wait(&js[i]);
    expect_joined(js, 3, srv);
    for (int i = 0; i < 3; i++)
        joiner_free(&js[i]);
    weft__store_server_stop(srv);
}

/* ------------------------------------------------------- connections */

static void test_unreachable(void **state)
{
    int port = free_port();
    weft__store_t *st = NULL;
    char expect[128];
    int64_t t0 = now_ms();
    weft_result_t rc;

    (void)state;
    assert_int_equal(weft__store_connect("127.0.0.1", port, TOKEN, 300, &st), WEFT_ERR_TIMEOUT);
    assert_true(now_ms() - t0 >= 290);
    assert_true(now_ms() - t0 < 2000);
    snprintf(expect, sizeof(expect), "could not reach the rendezvous store at 127.0.0.1:%d "
             "within 300 ms", port);
    assert_non_null(strstr(weft_last_error(), expect));
    assert_non_null(strstr(weft_last_error(), "refused"));
    /* A name that does not resolve fails at once; one the resolver
     * cannot answer for now (no DNS here) is retried until the timeout. */
    rc = weft__store_connect("no-such-host.invalid", port, TOKEN, 300, &st);
    assert_true(rc == WEFT_ERR_BOOTSTRAP || rc == WEFT_ERR_TIMEOUT);
    assert_non_null(strstr(weft_last_error(), "no-such-host.invalid"));
    assert_true(now_ms() - t0 < 3000);
}

struct late_server {
    int port;
    weft__store_server_t *srv;
};

static void *start_late(void *arg)
{
    struct late_server *l = arg;

    sleep_ms(250);
    if (weft__store_server_start("127.0.0.1", l->port, TOKEN, 1, NULL, &l->srv) != WEFT_SUCCESS)
        l->srv = NULL;
    return NULL;
}

static void test_server_starts_later(void **state)
{
    struct late_server l = { .port = free_port() };
    weft__store_t *st = NULL;
    pthread_t th;

    (void)state;
    assert_int_equal(pthread_create(&th, NULL, start_late, &l), 0);
    assert_int_equal(weft__store_connect("127.0.0.1", l.port, TOKEN, 5000, &st), WEFT_SUCCESS);
    assert_int_equal(pthread_join(th, NULL), 0);
    assert_non_null(l.srv);
    weft__store_close(st);
    weft__store_server_stop(l.srv);
}

static void test_bad_token(void **state)
{
    weft__store_server_t *srv = start_server("127.0.0.1", -1);
    int port = weft__store_server_port(srv);
    weft__store_t *good = connect_ok("127.0.0.1", port), *bad = NULL;
    char val[16];
    size_t len;

    (void)state;
    assert_int_equal(weft__store_connect("127.0.0.1", port, "guess", 1000, &bad),
                     WEFT_ERR_BOOTSTRAP);
    assert_non_null(strstr(weft_last_error(), "wrong job token"));
    assert_int_equal(weft__store_connect("127.0.0.1", port, "", 1000, &bad), WEFT_ERR_BOOTSTRAP);
    /* The job's own traffic goes on. */
    assert_int_equal(weft__store_set(good, "k", "v1", 2), WEFT_SUCCESS);
    assert_int_equal(weft__store_get(good, "k", val, sizeof(val), &len, 1000), WEFT_SUCCESS);
    assert_int_equal(len, 2);
    assert_memory_equal(val, "v1", 2);
    weft__store_close(good);
    weft__store_server_stop(srv);
}

/* Sends fd a bare header of type announcing len payload bytes: the store
 * must answer that it exceeds the limit, and close the connection. */
static void expect_header_refused(int fd, uint32_t type, uint32_t len)
{
    unsigned char hdr[WEFT__FRAME_HEADER];
    weft__msg_t m;

    weft__frame_header(hdr, type, len);
    assert_int_equal(send(fd, hdr, sizeof(hdr), 0), (ssize_t)sizeof(hdr));
    raw_expect(fd, WEFT__FRAME_ERROR, &m);
    assert_non_null(strstr(m.text, "exceeds"));
    assert_true(raw_closed(fd));
    close(fd);
}

static void test_hostile_frames(void **state)
{
    weft__store_server_t *srv = start_server("127.0.0.1", -1);
    int port = weft__store_server_port(srv), fd, stall;
    weft__store_t *good = connect_ok("127.0.0.1", port);
    char val[16];
    size_t len;
    weft__msg_t m;
    int64_t t0;

    (void)state;
    /* Half a header that never finishes: the others are served meanwhile. */
    stall = raw_connect(port);
    assert_int_equal(send(stall, "WEF", 3, 0), 3);

    /* Before authentication, a frame larger than any hello. */
    expect_header_refused(raw_connect(port), WEFT__FRAME_HELLO, WEFT__FRAME_HELLO_MAX + 1);
    /* After authentication, a header announcing 100 MiB. */
    expect_header_refused(raw_hello(port), WEFT__FRAME_SET, 100u << 20);
    /* A header declaring 4 GiB, before and after authentication: refused
     * from the header alone, nothing allocated for it. */
    expect_header_refused(raw_connect(port), WEFT__FRAME_HELLO, 0xffffffffu);
    expect_header_refused(raw_hello(port), WEFT__FRAME_SET, 0xffffffffu);

    /* Somebody's HTTP client. */
    fd = raw_connect(port);
    assert_int_equal(send(fd, "GET / HTTP/1.1\r\n\r\n", 18, 0), 18);
    raw_expect(fd, WEFT__FRAME_ERROR, &m);
    assert_non_null(strstr(m.text, "magic"));
    assert_true(raw_closed(fd));
    close(fd);

    /* A well-framed set whose key claims more bytes than the frame has. */
    fd = raw_hello(port);
    {
        unsigned char frame[WEFT__FRAME_HEADER + 8];
        uint32_t klen = htonl(1000), vlen = htonl(0);

        weft__frame_header(frame, WEFT__FRAME_SET, 8);
        memcpy(frame + WEFT__FRAME_HEADER, &klen, 4);
        memcpy(frame + WEFT__FRAME_HEADER + 4, &vlen, 4);
        assert_int_equal(send(fd, frame, sizeof(frame), 0), (ssize_t)sizeof(frame));
    }
    raw_expect(fd, WEFT__FRAME_ERROR, &m);
    assert_non_null(strstr(m.text, "malformed"));
    assert_true(raw_closed(fd));
    close(fd);

    /* A request that is not one. */
    fd = raw_hello(port);
    m = (weft__msg_t){ .type = WEFT__FRAME_CANCELLED };
    raw_send(fd, &m);
    raw_expect(fd, WEFT__FRAME_ERROR, NULL);
    assert_true(raw_closed(fd));
    close(fd);

    /* Through all of that, and with the stalled client still there. */
    t0 = now_ms();
    assert_int_equal(weft__store_set(good, "after", "ok", 2), WEFT_SUCCESS);
    assert_int_equal(weft__store_get(good, "after", val, sizeof(val), &len, 1000), WEFT_SUCCESS);
    assert_memory_equal(val, "ok", 2);
    assert_true(now_ms() - t0 < 1000);
    close(stall);
    weft__store_close(good);
    weft__store_server_stop(srv);
}

/* 1000 connections that never authenticate, each holding the largest
 * frame a stranger may start (a hello of WEFT__FRAME_HELLO_MAX bytes, only
 * part of it sent), and garbage from others: the job's own client is
 * served throughout, and what the server holds for a stranger is bounded
 * by that frame, whatever its header claims. */
#define GARBAGE_CONNS 1000

static void test_garbage_connections(void **state)
{
    weft__store_server_t *srv = start_server("127.0.0.1", -1);
    int port = weft__store_server_port(srv), n = GARBAGE_CONNS, *fds;
    weft__store_t *good = connect_ok("127.0.0.1", port);
    struct rlimit rl;
    unsigned char hdr[WEFT__FRAME_HEADER], junk[256];
    char val[16], key[32];
    size_t len, before = 0, after;
    int64_t t0;

    (void)state;
    /* Both ends of every connection are in this process. */
    assert_int_equal(getrlimit(RLIMIT_NOFILE, &rl), 0);
    if (rl.rlim_cur < 2 * GARBAGE_CONNS + 64) {
        rl.rlim_cur = rl.rlim_max < 2 * GARBAGE_CONNS + 64 ? rl.rlim_max
                                                           : 2 * GARBAGE_CONNS + 64;
        setrlimit(RLIMIT_NOFILE, &rl);
        getrlimit(RLIMIT_NOFILE, &rl);
    }
    if (rl.rlim_cur < 2 * GARBAGE_CONNS + 64) {
        n = (int)(rl.rlim_cur - 64) / 2;
        print_message("only %d garbage connections: RLIMIT_NOFILE is %lu\n", n,
                      (unsigned long)rl.rlim_cur);
    }
    fds = calloc((size_t)n, sizeof(*fds));
    assert_non_null(fds);
    for (size_t i = 0; i < sizeof(junk); i++)
        junk[i] = (unsigned char)(i * 37 + 11);
#ifndef __SANITIZE_ADDRESS__
    before = mallinfo2().uordblks;
#endif
    weft__frame_header(hdr, WEFT__FRAME_HELLO, WEFT__FRAME_HELLO_MAX);
    for (int i = 0; i < n; i++) {
        fds[i] = raw_connect(port);
        if (i % 2 == 0) {
            assert_int_equal(send(fds[i], hdr, sizeof(hdr), 0), (ssize_t)sizeof(hdr));
            assert_int_equal(send(fds[i], junk, 100, 0), 100);
        } else {
            /* Bytes that are no frame: refused at the magic, closed. */
            assert_int_equal(send(fds[i], junk + i % 64, 64, MSG_NOSIGNAL), 64);
        }
        if (i % 100 == 99) {
            /* The job's traffic, while the strangers pile up. */
            snprintf(key, sizeof(key), "k%d", i);
            t0 = now_ms();
            assert_int_equal(weft__store_set(good, key, "v", 1), WEFT_SUCCESS);
            assert_int_equal(weft__store_get(good, key, val, sizeof(val), &len, 2000),
                             WEFT_SUCCESS);
            assert_true(now_ms() - t0 < 2000);
        }
    }
    /* Let the server read every one of them. */
    t0 = now_ms();
    assert_int_equal(weft__store_set(good, "last", "ok", 2), WEFT_SUCCESS);
    assert_int_equal(weft__store_get(good, "last", val, sizeof(val), &len, 2000), WEFT_SUCCESS);
    assert_memory_equal(val, "ok", 2);
    usleep(200 * 1000);
#ifndef __SANITIZE_ADDRESS__
    /* The frames started and the connections' state: at most the hello's
     * limit and 2 KiB more for each. */
    after = mallinfo2().uordblks;
    print_message("%d strangers: the server's heap grew by %zu bytes\n", n,
                  after > before ? after - before : 0);
    assert_true(after < before + (size_t)n * (WEFT__FRAME_HELLO_MAX + 2048));
#else
    (void)after;
#endif
    for (int i = 0; i < n; i++)
        close(fds[i]);
    free(fds);
    weft__store_close(good);
    weft__store_server_stop(srv);
}

static int have_ipv6_loopback(void)
{
    struct sockaddr_in6 a = { .sin6_family = AF_INET6, .sin6_addr = IN6ADDR_LOOPBACK_INIT };
    int fd = socket(AF_INET6, SOCK_STREAM, 0), ok;

    if (fd < 0)
        return 0;
    ok = bind(fd, (struct sockaddr *)&a, sizeof(a)) == 0;
    close(fd);
    return ok;
}

static void test_ipv6_and_names(void **state)
{
    weft__store_server_t *srv = start_server(NULL, -1);
    int port = weft__store_server_port(srv);
    weft__store_t *a, *b;
    char val[16];
    size_t len;

    (void)state;
    /* The wildcard server takes IPv4, names and (when there is any) IPv6. */
    a = connect_ok("localhost", port);
    assert_int_equal(weft__store_set(a, "via", "name", 4), WEFT_SUCCESS);
    if (have_ipv6_loopback()) {
        b = connect_ok("::1", port);
        assert_int_equal(weft__store_get(b, "via", val, sizeof(val), &len, 1000),
                         WEFT_SUCCESS);
        assert_memory_equal(val, "name", 4);
        weft__store_close(b);
    } else {
        print_message("no IPv6 loopback here: ::1 not tried\n");
    }
    b = connect_ok("127.0.0.1", port);
    assert_int_equal(weft__store_get(b, "via", val, sizeof(val), &len, 1000), WEFT_SUCCESS);
    weft__store_close(b);
    weft__store_close(a);
    weft__store_server_stop(srv);

    if (have_ipv6_loopback()) {
        srv = start_server("::1", -1);
        a = connect_ok("::1", weft__store_server_port(srv));
        assert_int_equal(weft__store_barrier(a, "alone", 1, 1000), WEFT_SUCCESS);
        weft__store_close(a);
        weft__store_server_stop(srv);
    }
}

static void test_listen_errors(void **state)
{
    weft__store_server_t *srv = start_server("127.0.0.1", -1), *other = NULL;

    (void)state;
    assert_int_equal(weft__store_server_start("127.0.0.1", weft__store_server_port(srv), TOKEN,
                                              -1, NULL, &other), WEFT_ERR_BOOTSTRAP);
    assert_non_null(strstr(weft_last_error(), "ddress already in use"));
    assert_int_equal(weft__store_server_start(NULL, 70000, TOKEN, -1, NULL, &other),
                     WEFT_ERR_INVALID_ARG);
    assert_non_null(strstr(weft_last_error(), "70000"));
    weft__store_server_stop(srv);
    weft__store_server_stop(NULL);
    weft__store_close(NULL);
}

/* ------------------------------------------------------ keys, barriers */

struct getter {
    int port;
    const char *key;
    int timeout_ms;
    weft_result_t rc;
    char val[64];
    size_t len;
    pthread_t th;
};

static void *get_main(void *arg)
{
    struct getter *g = arg;
    weft__store_t *st = NULL;

    g->rc = weft__store_connect("127.0.0.1", g->port, TOKEN, 2000, &st);
    if (g->rc == WEFT_SUCCESS)
        g->rc = weft__store_get(st, g->key, g->val, sizeof(g->val), &g->len, g->timeout_ms);
    weft__store_close(st);
    return NULL;
}

static void test_set_get(void **state)
{
    weft__store_server_t *srv = start_server("127.0.0.1", -1);
    int port = weft__store_server_port(srv);
    weft__store_t *st = connect_ok("127.0.0.1", port);
    struct getter g = { .port = port, .key = "later", .timeout_ms = 3000 };
    char val[8], key[WEFT__STORE_KEY_MAX + 1];
    size_t len;
    int64_t t0;

    (void)state;
    /* A get waits at the store until somebody sets the key. */
    assert_int_equal(pthread_create(&g.th, NULL, get_main, &g), 0);
    sleep_ms(100);
    assert_int_equal(weft__store_set(st, "later", "value", 5), WEFT_SUCCESS);
    assert_int_equal(pthread_join(g.th, NULL), 0);
    assert_int_equal(g.rc, WEFT_SUCCESS);
    assert_int_equal(g.len, 5);
    assert_memory_equal(g.val, "value", 5);

    /* A key nobody sets: a timeout naming it, and the connection stays
     * usable. */
    t0 = now_ms();
    assert_int_equal(weft__store_get(st, "never", val, sizeof(val), &len, 300),
                     WEFT_ERR_TIMEOUT);
    assert_true(now_ms() - t0 >= 290 && now_ms() - t0 < 2000);
    assert_non_null(strstr(weft_last_error(), "'never'"));
    assert_non_null(strstr(weft_last_error(), "300 ms"));
    assert_int_equal(weft__store_set(st, "never", "now", 3), WEFT_SUCCESS);
    assert_int_equal(weft__store_get(st, "never", val, sizeof(val), &len, 300), WEFT_SUCCESS);
    assert_memory_equal(val, "now", 3);

    /* Overwrite, empty values, small buffers, long keys. */
    assert_int_equal(weft__store_set(st, "never", "", 0), WEFT_SUCCESS);
    assert_int_equal(weft__store_get(st, "never", val, sizeof(val), &len, 300), WEFT_SUCCESS);
    assert_int_equal(len, 0);
    assert_int_equal(weft__store_get(st, "later", val, 2, &len, 300), WEFT_ERR_TRUNCATED);
    memset(key, 'k', sizeof(key) - 1);
    key[sizeof(key) - 1] = '\0';
    assert_int_equal(weft__store_set(st, key, "x", 1), WEFT_ERR_INVALID_ARG);
    assert_int_equal(weft__store_get(st, key, val, sizeof(val), &len, 10), WEFT_ERR_INVALID_ARG);
    key[WEFT__STORE_KEY_MAX - 1] = '\0';
    assert_int_equal(weft__store_set(st, key, "x", 1), WEFT_SUCCESS);
    assert_int_equal(weft__store_get(st, key, val, sizeof(val), &len, 300), WEFT_SUCCESS);
    assert_int_equal(weft__store_set(st, "big", val, WEFT__STORE_VALUE_MAX + 1),
                     WEFT_ERR_INVALID_ARG);
    weft__store_close(st);
    weft__store_server_stop(srv);
}

/* Several threads sharing one client: the calls take turns. */
struct sharer {
    weft__store_t *st;
    int id;
    int failures;
    pthread_t th;
};

static void *share_main(void *arg)
{
    struct sharer *s = arg;
    char key[32], val[32], got[32];
    size_t len;

    for (int i = 0; i < 50; i++) {
        int n = snprintf(val, sizeof(val), "%d/%d", s->id, i);

        snprintf(key, sizeof(key), "t%d", s->id);
        if (weft__store_set(s->st, key, val, (size_t)n) != WEFT_SUCCESS ||
            weft__store_get(s->st, key, got, sizeof(got), &len, 1000) != WEFT_SUCCESS ||
            len != (size_t)n || memcmp(got, val, len))
            s->failures++;
    }
    return NULL;
}

static void test_shared_client(void **state)
{
    weft__store_server_t *srv = start_server("127.0.0.1", -1);
    weft__store_t *st = connect_ok("127.0.0.1", weft__store_server_port(srv));
    struct sharer sh[4];

    (void)state;
    for (int i = 0; i < 4; i++) {
        sh[i] = (struct sharer){ .st = st, .id = i };
        assert_int_equal(pthread_create(&sh[i].th, NULL, share_main, &sh[i]), 0);
    }
    for (int i = 0; i < 4; i++) {
        assert_int_equal(pthread_join(sh[i].th, NULL), 0);
        assert_int_equal(sh[i].failures, 0);
    }
    weft__store_close(st);
    weft__store_server_stop(srv);
}

struct barrier_arg {
    int port, n, timeout_ms;
    const char *name;
    int rounds;
    weft_result_t rc;
    int64_t done_at;
    pthread_t th;
};

static void *barrier_main(void *arg)
{
    struct barrier_arg *b = arg;
    weft__store_t *st = NULL;

    b->rc = weft__store_connect("127.0.0.1", b->port, TOKEN, 2000, &st);
    for (int i = 0; i < b->rounds && b->rc == WEFT_SUCCESS; i++)
        b->rc = weft__store_barrier(st, b->name, b->n, b->timeout_ms);
    b->done_at = now_ms();
    weft__store_close(st);
    return NULL;
}

static void test_barrier(void **state)
{
    weft__store_server_t *srv = start_server("127.0.0.1", -1);
    int port = weft__store_server_port(srv);
    weft__store_t *st = connect_ok("127.0.0.1", port);
    struct barrier_arg b[3];
    int64_t released;

    (void)state;
    /* Three ranks, three rounds of the same barrier. */
    for (int i = 0; i < 3; i++) {
        b[i] = (struct barrier_arg){ .port = port, .n = 3, .timeout_ms = 3000, .name = "b",
                                     .rounds = 3 };
        assert_int_equal(pthread_create(&b[i].th, NULL, barrier_main, &b[i]), 0);
    }
    for (int i = 0; i < 3; i++) {
        assert_int_equal(pthread_join(b[i].th, NULL), 0);
        assert_int_equal(b[i].rc, WEFT_SUCCESS);
    }

    /* Nobody leaves before the last one arrives. */
    for (int i = 0; i < 2; i++) {
        b[i] = (struct barrier_arg){ .port = port, .n = 3, .timeout_ms = 3000, .name = "late",
                                     .rounds = 1 };
        assert_int_equal(pthread_create(&b[i].th, NULL, barrier_main, &b[i]), 0);
    }
    sleep_ms(200);
    released = now_ms();
    assert_int_equal(weft__store_barrier(st, "late", 3, 3000), WEFT_SUCCESS);
    for (int i = 0; i < 2; i++) {
        assert_int_equal(pthread_join(b[i].th, NULL), 0);
        assert_int_equal(b[i].rc, WEFT_SUCCESS);
        assert_true(b[i].done_at >= released);
    }

    /* Alone in a barrier of 2: a timeout, after which the barrier does
     * not count this rank any more, and the connection still works. */
    assert_int_equal(weft__store_barrier(st, "pair", 2, 200), WEFT_ERR_TIMEOUT);
    assert_non_null(strstr(weft_last_error(), "'pair'"));
    b[0] = (struct barrier_arg){ .port = port, .n = 2, .timeout_ms = 300, .name = "pair",
                                 .rounds = 1 };
    assert_int_equal(pthread_create(&b[0].th, NULL, barrier_main, &b[0]), 0);
    assert_int_equal(pthread_join(b[0].th, NULL), 0);
    assert_int_equal(b[0].rc, WEFT_ERR_TIMEOUT);

    /* Ranks that disagree on the count. */
    b[0] = (struct barrier_arg){ .port = port, .n = 2, .timeout_ms = 400, .name = "odd",
                                 .rounds = 1 };
    assert_int_equal(pthread_create(&b[0].th, NULL, barrier_main, &b[0]), 0);
    sleep_ms(100);
    assert_int_equal(weft__store_barrier(st, "odd", 3, 1000), WEFT_ERR_MISMATCH);
    assert_non_null(strstr(weft_last_error(), "waits for 2 ranks"));
    assert_int_equal(pthread_join(b[0].th, NULL), 0);
    assert_int_equal(b[0].rc, WEFT_ERR_TIMEOUT);
    assert_int_equal(weft__store_barrier(st, "solo", 1, 1000), WEFT_SUCCESS);
    weft__store_close(st);
    weft__store_server_stop(srv);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_join_rank_order),
        cmocka_unit_test(test_join_many_and_large),
        cmocka_unit_test(test_size_mismatch),
        cmocka_unit_test(test_expected_size),
        cmocka_unit_test(test_duplicate_rank),
        cmocka_unit_test(test_timeout_names_missing),
        cmocka_unit_test(test_host_stops_waiting),
        cmocka_unit_test(test_leaver_is_forgotten),
        cmocka_unit_test(test_unreachable),
        cmocka_unit_test(test_server_starts_later),
        cmocka_unit_test(test_bad_token),
        cmocka_unit_test(test_hostile_frames),
        cmocka_unit_test(test_garbage_connections),
        cmocka_unit_test(test_ipv6_and_names),
        cmocka_unit_test(test_listen_errors),
        cmocka_unit_test(test_set_get),
        cmocka_unit_test(test_shared_client),
        cmocka_unit_test(test_barrier),
    };

    return cmocka_run_group_tests_name("store", tests, NULL, NULL);
}
