/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_sockets.c: the sockets transport through its ABI, with 2 to 4
 * contexts ("ranks") in one process talking over loopback TCP, driven by
 * progressing every context in turn until a deadline.
 */
#include "config.h"

#include <arpa/inet.h>
#include <errno.h>
#include <poll.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "weft/transport.h"
#include "plugins/sockets/sockets.h"

/* The plugin's one export, built into this test rather than dlopen'ed. */
extern const weft_transport_v1_t weft_transport_v1;
static const weft_transport_v1_t *T = &weft_transport_v1;

#define MAXR 4
#define ANY WEFT_TRANSPORT_ANY_PEER
#define ALL 0xffffffffu
#define DEADLINE_MS 15000
#define JOB "job-under-test"

typedef weft_transport_completion_t compl_t;

static weft_transport_core_t cores[MAXR];
static void *ctx[MAXR];
static unsigned char addrs[MAXR][WEFT_TRANSPORT_ADDR_MAX];
static size_t addr_len[MAXR];
static int nranks;
static char last_error[512];

/* ------------------------------------------------------------ fake core */

static void fake_log(int level, const char *plugin, const char *fmt, ...)
{
    va_list ap;

    if (!getenv("WEFT_DEBUG"))
        return;
    va_start(ap, fmt);
    fprintf(stderr, "[%s %d] ", plugin, level);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
}

static void fake_set_error(const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(last_error, sizeof(last_error), fmt, ap);
    va_end(ap);
}

static const char *fake_param(const char *name)
{
    return getenv(name);
}

static void core_fill(weft_transport_core_t *core, int rank, int size)
{
    memset(core, 0, sizeof(*core));
    core->struct_size = sizeof(*core);
    core->rank = rank;
    core->size = size;
    core->job_id = JOB;
    core->master_addr = "127.0.0.1";
    core->log = fake_log;
    core->set_error = fake_set_error;
    core->get_param = fake_param;
}

/* ------------------------------------------------------------ driving */

static int64_t now_ms(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void progress_mask(unsigned mask)
{
    for (int r = 0; r < nranks; r++)
        if (ctx[r] && (mask & (1u << r)))
            assert_int_equal(T->progress(ctx[r]), WEFT_SUCCESS);
}

static void spin(int rounds)
{
    for (int i = 0; i < rounds; i++)
        progress_mask(ALL);
}

/* One round of progress, then test: 1 when req (of rank r) is done. */
static int poll_req(int r, void *req, compl_t *c, unsigned mask)
{
    int done = 0;

    progress_mask(mask);
    assert_int_equal(T->test(ctx[r], req, &done, c), WEFT_SUCCESS);
    return done;
}

/* Test only, no progress. */
static int is_done(int r, void *req, compl_t *c)
{
    int done = 0;

    assert_int_equal(T->test(ctx[r], req, &done, c), WEFT_SUCCESS);
    return done;
}

static compl_t wait_mask(int r, void *req, unsigned mask)
{
    compl_t c;
    int64_t deadline = now_ms() + DEADLINE_MS;

    memset(&c, 0, sizeof(c));
    while (!poll_req(r, req, &c, mask))
        if (now_ms() > deadline)
            fail_msg("a request of rank %d did not complete within %d ms", r, DEADLINE_MS);
    return c;
}

static compl_t wait_req(int r, void *req)
{
    return wait_mask(r, req, ALL);
}

static void *send_(int from, int to, const void *buf, size_t len, uint64_t tag)
{
    void *req = NULL;

    assert_int_equal(T->isend(ctx[from], to, buf, len, tag, NULL, &req), WEFT_SUCCESS);
    assert_non_null(req);
    return req;
}

static void *recv_(int at, int from, void *buf, size_t len, uint64_t tag, uint64_t ignore)
{
    void *req = NULL;

    assert_int_equal(T->irecv(ctx[at], from, buf, len, tag, ignore, NULL, &req), WEFT_SUCCESS);
    assert_non_null(req);
    return req;
}

static unsigned char *pattern(size_t n, unsigned seed)
{
    unsigned char *p = malloc(n ? n : 1);
    uint32_t x = seed * 2654435761u + 1;

    assert_non_null(p);
    for (size_t i = 0; i < n; i++) {
        x = x * 1103515245u + 12345u;
        p[i] = (unsigned char)(x >> 16);
    }
    return p;
}

/* The test peeks inside a context to reach states the ABI cannot show. */
static struct sock_ctx *sctx(int r)
{
    return ctx[r];
}

/* ------------------------------------------------------------ set-up */

static void world_up(int n)
{
    nranks = n;
    for (int r = 0; r < n; r++) {
        core_fill(&cores[r], r, n);
        ctx[r] = NULL;
        assert_int_equal(T->init(&cores[r], &ctx[r]), WEFT_SUCCESS);
        addr_len[r] = sizeof(addrs[r]);
        assert_int_equal(T->get_address(ctx[r], addrs[r], &addr_len[r]), WEFT_SUCCESS);
    }
    for (int r = 0; r < n; r++)
        for (int p = 0; p < n; p++) {
            weft_transport_reach_t reach = WEFT_TRANSPORT_REACH_NONE;

            assert_int_equal(T->reach(ctx[r], addrs[p], addr_len[p], &reach), WEFT_SUCCESS);
            assert_int_equal(reach, WEFT_TRANSPORT_REACH_NETWORK);
            assert_int_equal(T->connect(ctx[r], p, addrs[p], addr_len[p]), WEFT_SUCCESS);
        }
}

static void finalize_rank(int r)
{
    assert_int_equal(T->finalize(ctx[r]), WEFT_SUCCESS);
    ctx[r] = NULL;
}

static int teardown(void **state)
{
    (void)state;
    for (int r = 0; r < MAXR; r++)
        if (ctx[r])
            finalize_rank(r);
    unsetenv("WEFT_SOCKET_NSOCKS");
    unsetenv("WEFT_SOCKET_CHUNK");
    unsetenv("WEFT_SOCKET_IFNAME");
    return 0;
}

static int setup_env(int n, const char *nsocks, const char *chunk)
{
    if (nsocks)
        setenv("WEFT_SOCKET_NSOCKS", nsocks, 1);
    if (chunk)
        setenv("WEFT_SOCKET_CHUNK", chunk, 1);
    world_up(n);
    unsetenv("WEFT_SOCKET_NSOCKS");
    unsetenv("WEFT_SOCKET_CHUNK");
    return 0;
}

static int setup2(void **state)
{
    (void)state;
    return setup_env(2, NULL, NULL);
}

static int setup3(void **state)
{
    (void)state;
    return setup_env(3, NULL, NULL);
}

/* Several streams and small frames: frames spread over streams and arrive
 * out of order. */
static int setup3_streams(void **state)
{
    (void)state;
    return setup_env(3, "4", "4096");
}

static int setup3_nsocks4(void **state)
{
    (void)state;
    return setup_env(3, "4", NULL);
}

static int setup4_mixed(void **state)
{
    (void)state;
    return setup_env(4, "2", "8192");
}

/* ------------------------------------------------------------ tests */

static void test_ping_pong(void **state)
{
    static const size_t sizes[] = { 0, 1, 100, 4096, 65536, (1u << 20) + 3 };

    (void)state;
    for (size_t k = 0; k < sizeof(sizes) / sizeof(sizes[0]); k++) {
        size_t n = sizes[k];
        unsigned char *out = pattern(n, (unsigned)k), *in = calloc(1, n + 1);
        unsigned char *back = calloc(1, n + 1);
        void *s, *r;
        compl_t c;

        assert_non_null(in);
        assert_non_null(back);
        for (int round = 0; round < 5; round++) {
            memset(in, 0, n + 1);
            memset(back, 0, n + 1);
            r = recv_(1, 0, in, n, 100 + k, 0);
            s = send_(0, 1, out, n, 100 + k);
            c = wait_req(1, r);
            assert_int_equal(c.status, WEFT_SUCCESS);
            assert_int_equal(c.peer, 0);
            assert_int_equal(c.tag, 100 + k);
            assert_int_equal(c.len, n);
            assert_memory_equal(in, out, n);
            c = wait_req(0, s);
            assert_int_equal(c.status, WEFT_SUCCESS);
            assert_int_equal(c.len, n);
            assert_int_equal(c.tag, 100 + k);
            /* and back */
            r = recv_(0, 1, back, n, 200 + k, 0);
            s = send_(1, 0, in, n, 200 + k);
            c = wait_req(0, r);
            assert_int_equal(c.status, WEFT_SUCCESS);
            assert_int_equal(c.peer, 1);
            assert_memory_equal(back, out, n);
            wait_req(1, s);
        }
        free(out);
        free(in);
        free(back);
    }
    /* Rank 1's replies went on the stream rank 0 dialed: one connection
     * carries both directions, so each side's data acknowledges the
     * other's (no bare ACK segments), and rank 1 dialed nothing. */
    assert_non_null(sctx(1)->peers[0].in[0]);
    assert_ptr_equal(sctx(1)->peers[0].tx[0], sctx(1)->peers[0].in[0]);
    assert_null(sctx(1)->peers[0].out[0]);
    assert_null(sctx(0)->peers[1].in[0]);
    assert_ptr_equal(sctx(0)->peers[1].tx[0], sctx(0)->peers[1].out[0]);
    assert_true(sctx(0)->peers[1].out[0]->rx_data);
}

static void test_match_masks(void **state)
{
    int a = 0, b = 0, any = 0, none = 0, v1 = 11, v2 = 22, v3 = 33;
    void *ra, *rb, *rany, *rnone, *s1, *s2, *s3;
    compl_t c;

    (void)state;
    /* Context 5, any user tag (low half ignored). */
    ra = recv_(1, ANY, &a, sizeof(a), 0x500000000ull, 0xffffffffull);
    /* Rank 2, tag 7 exactly. */
    rb = recv_(1, 2, &b, sizeof(b), 7, 0);
    /* Anything from anyone. */
    rany = recv_(1, ANY, &any, sizeof(any), 0, ~0ull);
    /* Context 9 from rank 0: nothing will match. */
    rnone = recv_(1, 0, &none, sizeof(none), 0x900000000ull, 0xffffffffull);

    /* Context 6 matches only the wildcard. */
    s1 = send_(0, 1, &v1, sizeof(v1), 0x600000001ull);
    c = wait_req(1, rany);
    assert_int_equal(c.status, WEFT_SUCCESS);
    assert_int_equal(c.peer, 0);
    assert_int_equal(c.tag, 0x600000001ull);
    assert_int_equal(any, 11);
    assert_false(is_done(1, ra, &c));
    /* Tag 7 from rank 2: not context 5, and rb is the one for rank 2. */
    s2 = send_(2, 1, &v2, sizeof(v2), 7);
    c = wait_req(1, rb);
    assert_int_equal(c.peer, 2);
    assert_int_equal(b, 22);
    assert_false(is_done(1, ra, &c));
    /* Context 5, user tag 0x42. */
    s3 = send_(0, 1, &v3, sizeof(v3), 0x500000042ull);
    c = wait_req(1, ra);
    assert_int_equal(c.tag, 0x500000042ull);
    assert_int_equal(c.peer, 0);
    assert_int_equal(a, 33);
    wait_req(0, s1);
    wait_req(2, s2);
    wait_req(0, s3);
    spin(20);
    assert_false(is_done(1, rnone, &c));
    assert_int_equal(T->cancel(ctx[1], rnone), WEFT_SUCCESS);
    c = wait_req(1, rnone);
    assert_int_equal(c.status, WEFT_ERR_ABORTED);
    assert_int_equal(none, 0);
}

static void test_post_order(void **state)
{
    int x[3] = { 0 }, v[3] = { 1, 2, 3 }, u[3] = { 4, 5, 6 }, y[3] = { 0 };
    void *r[3], *s[3];
    compl_t c;

    (void)state;
    /* Receives posted first: each message takes the oldest match. */
    r[0] = recv_(2, ANY, &x[0], sizeof(int), 11, 0);
    r[1] = recv_(2, 1, &x[1], sizeof(int), 11, 0);
    r[2] = recv_(2, ANY, &x[2], sizeof(int), 11, 0);
    for (int i = 0; i < 3; i++)
        s[i] = send_(1, 2, &v[i], sizeof(int), 11);
    for (int i = 0; i < 3; i++) {
        c = wait_req(2, r[i]);
        assert_int_equal(c.peer, 1);
        assert_int_equal(x[i], i + 1);
        wait_req(1, s[i]);
    }
    /* Messages first: each receive takes the oldest match. */
    s[0] = send_(0, 2, &u[0], sizeof(int), 12);
    s[1] = send_(0, 2, &u[1], sizeof(int), 13);
    s[2] = send_(0, 2, &u[2], sizeof(int), 12);
    for (int i = 0; i < 3; i++)
        wait_req(0, s[i]);
    spin(20);
    r[0] = recv_(2, 0, &y[0], sizeof(int), 12, 0);
    r[1] = recv_(2, ANY, &y[1], sizeof(int), 0, ~0ull);
    r[2] = recv_(2, 0, &y[2], sizeof(int), 12, 0);
    wait_req(2, r[0]);
    assert_int_equal(y[0], 4);
    c = wait_req(2, r[1]);
    assert_int_equal(c.tag, 13);
    assert_int_equal(y[1], 5);
    wait_req(2, r[2]);
    assert_int_equal(y[2], 6);
}

static void test_unexpected(void **state)
{
    static const size_t sizes[] = { 0, 10, 4095, 4096, 4097, (1u << 20) + 5 };
    enum { N = sizeof(sizes) / sizeof(sizes[0]) };
    unsigned char *out[N], *in[N];
    void *s[N], *r[N];
    compl_t c;

    (void)state;
    for (int i = 0; i < N; i++) {
        out[i] = pattern(sizes[i], 40 + (unsigned)i);
        in[i] = calloc(1, sizes[i] + 1);
        assert_non_null(in[i]);
        s[i] = send_(0, 1, out[i], sizes[i], 40 + (uint64_t)i);
    }
    for (int i = 0; i < N; i++)
        wait_req(0, s[i]);
    spin(50);
    /* All of it waits in rank 1's unexpected queue; take it in reverse. */
    for (int i = N - 1; i >= 0; i--) {
        r[i] = recv_(1, 0, in[i], sizes[i], 40 + (uint64_t)i, 0);
        c = wait_req(1, r[i]);
        assert_int_equal(c.status, WEFT_SUCCESS);
        assert_int_equal(c.len, sizes[i]);
        assert_memory_equal(in[i], out[i], sizes[i]);
        free(out[i]);
        free(in[i]);
    }
}

/* A receive posted while its message is half in the unexpected queue gets
 * the buffered part copied and the rest read into its buffer. */
static void test_unexpected_partial(void **state)
{
    size_t n = 48u << 20;
    unsigned char *out = pattern(n, 77), *in = calloc(1, n);
    void *s, *r;
    compl_t c;
    int64_t deadline = now_ms() + DEADLINE_MS;

    (void)state;
    assert_non_null(in);
    /* Connected first, so that the large send starts writing at once. */
    r = recv_(1, 0, in, 1, 4, 0);
    s = send_(0, 1, out, 1, 4);
    wait_req(1, r);
    wait_req(0, s);
    s = send_(0, 1, out, n, 5);
    /* Only the receiver runs: the sender wrote what its sockets hold. */
    do {
        progress_mask(1u << 1);
        if (now_ms() > deadline)
            fail_msg("no byte of the message reached rank 1");
    } while (!sctx(1)->unexp_head || sctx(1)->unexp_head->got == 0);
    progress_mask(1u << 1);
    progress_mask(1u << 1);
    assert_true(sctx(1)->unexp_head->got < n);
    r = recv_(1, 0, in, n, 5, 0);
    c = wait_req(1, r);
    assert_int_equal(c.status, WEFT_SUCCESS);
    assert_int_equal(c.len, n);
    assert_memory_equal(in, out, n);
    assert_int_equal(wait_req(0, s).status, WEFT_SUCCESS);
    free(out);
    free(in);
}

static void test_order_1000(void **state)
{
    enum { N = 1000 };
    static int out0[N], out1[N], in0[N], inany[2 * N];
    static void *s0[N], *s1[N], *r0[N], *rany[2 * N];
    int next[2] = { 0, 0 };
    compl_t c;

    (void)state;
    /* Rank 0 to rank 2, half of the receives posted before the sends. */
    for (int i = 0; i < N; i++) {
        out0[i] = i;
        in0[i] = -1;
        if (i < N / 2)
            r0[i] = recv_(2, 0, &in0[i], sizeof(int), 12, 0);
    }
    for (int i = 0; i < N; i++)
        s0[i] = send_(0, 2, &out0[i], sizeof(int), 12);
    for (int i = N / 2; i < N; i++)
        r0[i] = recv_(2, 0, &in0[i], sizeof(int), 12, 0);
    for (int i = 0; i < N; i++) {
        c = wait_req(2, r0[i]);
        assert_int_equal(c.status, WEFT_SUCCESS);
        assert_int_equal(in0[i], i);
        wait_req(0, s0[i]);
    }
    /* Ranks 0 and 1 at once to receives from anyone: each sender's
     * messages keep their order. */
    for (int i = 0; i < N; i++) {
        out1[i] = i;
        s0[i] = send_(0, 2, &out1[i], sizeof(int), 13);
        s1[i] = send_(1, 2, &out1[i], sizeof(int), 13);
    }
    for (int i = 0; i < 2 * N; i++)
        rany[i] = recv_(2, ANY, &inany[i], sizeof(int), 13, 0);
    for (int i = 0; i < 2 * N; i++) {
        c = wait_req(2, rany[i]);
        assert_true(c.peer == 0 || c.peer == 1);
        assert_int_equal(inany[i], next[c.peer]);
        next[c.peer]++;
    }
    assert_int_equal(next[0], N);
    assert_int_equal(next[1], N);
    for (int i = 0; i < N; i++) {
        wait_req(0, s0[i]);
        wait_req(1, s1[i]);
    }
}

static void test_truncation(void **state)
{
    size_t big = (1u << 20) + 7, cap = 300000;
    unsigned char *out = pattern(big, 9), *in = malloc(cap + 64), small[10], tiny[4] = { 0 };
    char hundred[100];
    void *s, *r;
    compl_t c;

    (void)state;
    assert_non_null(in);
    memset(hundred, 'x', sizeof(hundred));
    memset(small, 0, sizeof(small));
    /* Posted first, one frame. */
    r = recv_(0, 1, small, sizeof(small), 3, 0);
    s = send_(1, 0, hundred, sizeof(hundred), 3);
    c = wait_req(0, r);
    assert_int_equal(c.status, WEFT_ERR_TRUNCATED);
    assert_int_equal(c.len, sizeof(hundred));
    assert_memory_equal(small, "xxxxxxxxxx", 10);
    wait_req(1, s);
    /* Posted first, frames over several streams: only cap bytes land. */
    memset(in, 0xee, cap + 64);
    r = recv_(0, 1, in, cap, 4, 0);
    s = send_(1, 0, out, big, 4);
    c = wait_req(0, r);
    assert_int_equal(c.status, WEFT_ERR_TRUNCATED);
    assert_int_equal(c.len, big);
    assert_memory_equal(in, out, cap);
    for (size_t i = cap; i < cap + 64; i++)
        assert_int_equal(in[i], 0xee);
    wait_req(1, s);
    /* Unexpected first. */
    memset(in, 0xee, cap + 64);
    s = send_(1, 0, out, big, 5);
    wait_req(1, s);
    spin(50);
    r = recv_(0, 1, in, cap, 5, 0);
    c = wait_req(0, r);
    assert_int_equal(c.status, WEFT_ERR_TRUNCATED);
    assert_int_equal(c.len, big);
    assert_memory_equal(in, out, cap);
    assert_int_equal(in[cap], 0xee);
    /* The streams are still in step. */
    r = recv_(0, 1, tiny, sizeof(tiny), 6, 0);
    s = send_(1, 0, "abc", 4, 6);
    c = wait_req(0, r);
    assert_int_equal(c.status, WEFT_SUCCESS);
    assert_string_equal((char *)tiny, "abc");
    wait_req(1, s);
    free(out);
    free(in);
}

static void test_zero_length(void **state)
{
    char buf[10];
    void *s, *r;
    compl_t c;

    (void)state;
    /* Posted first, NULL buffer. */
    r = recv_(0, 1, NULL, 0, 1, 0);
    s = send_(1, 0, NULL, 0, 1);
    c = wait_req(0, r);
    assert_int_equal(c.status, WEFT_SUCCESS);
    assert_int_equal(c.len, 0);
    assert_int_equal(c.peer, 1);
    c = wait_req(1, s);
    assert_int_equal(c.status, WEFT_SUCCESS);
    assert_int_equal(c.len, 0);
    /* Unexpected, into a real buffer that stays untouched. */
    s = send_(1, 0, NULL, 0, 2);
    wait_req(1, s);
    spin(20);
    memset(buf, 'q', sizeof(buf));
    r = recv_(0, 1, buf, sizeof(buf), 2, 0);
    c = wait_req(0, r);
    assert_int_equal(c.status, WEFT_SUCCESS);
    assert_int_equal(c.len, 0);
    assert_memory_equal(buf, "qqqqqqqqqq", 10);
    /* Data into a zero-length receive: truncated. */
    r = recv_(0, 1, NULL, 0, 3, 0);
    s = send_(1, 0, "hello", 5, 3);
    c = wait_req(0, r);
    assert_int_equal(c.status, WEFT_ERR_TRUNCATED);
    assert_int_equal(c.len, 5);
    wait_req(1, s);
    /* To itself. */
    s = send_(0, 0, NULL, 0, 4);
    r = recv_(0, 0, NULL, 0, 4, 0);
    c = wait_req(0, r);
    assert_int_equal(c.status, WEFT_SUCCESS);
    assert_int_equal(c.peer, 0);
    wait_req(0, s);
}

/* 64 MiB over four streams, and small messages sent after it to the same
 * and to another rank finish first. */
static void test_large_and_overtake(void **state)
{
    size_t n = 64u << 20;
    unsigned char *out = pattern(n, 64), *in = calloc(1, n);
    int one = 1, two = 2, got1 = 0, got2 = 0;
    void *sb, *s1, *s2, *rb, *r1, *r2;
    compl_t c;

    (void)state;
    assert_non_null(in);
    rb = recv_(1, 0, in, n, 20, 0);
    r1 = recv_(1, 0, &got1, sizeof(int), 21, 0);
    r2 = recv_(2, 0, &got2, sizeof(int), 22, 0);
    sb = send_(0, 1, out, n, 20);
    s1 = send_(0, 1, &one, sizeof(int), 21);
    s2 = send_(0, 2, &two, sizeof(int), 22);
    c = wait_req(1, r1);
    assert_int_equal(c.status, WEFT_SUCCESS);
    assert_int_equal(got1, 1);
    assert_false(is_done(1, rb, &c));
    c = wait_req(2, r2);
    assert_int_equal(got2, 2);
    assert_false(is_done(1, rb, &c));
    c = wait_req(1, rb);
    assert_int_equal(c.status, WEFT_SUCCESS);
    assert_int_equal(c.len, n);
    assert_int_equal(c.tag, 20);
    assert_memory_equal(in, out, n);
    c = wait_req(0, sb);
    assert_int_equal(c.status, WEFT_SUCCESS);
    assert_int_equal(c.len, n);
    wait_req(0, s1);
    wait_req(0, s2);
    free(out);
    free(in);
}

static void test_self(void **state)
{
    size_t n = (3u << 20) + 1;
    unsigned char *out = pattern(n, 3), *in = calloc(1, n);
    int v = 42, got = 0;
    void *s, *r;
    compl_t c;

    (void)state;
    assert_non_null(in);
    /* Posted first, from anyone: the completion names the rank itself. */
    r = recv_(1, ANY, &got, sizeof(got), 9, 0);
    s = send_(1, 1, &v, sizeof(v), 9);
    c = wait_req(1, r);
    assert_int_equal(c.status, WEFT_SUCCESS);
    assert_int_equal(c.peer, 1);
    assert_int_equal(got, 42);
    wait_req(1, s);
    /* Unexpected, several frames on several streams. */
    s = send_(1, 1, out, n, 10);
    wait_req(1, s);
    spin(20);
    r = recv_(1, 1, in, n, 10, 0);
    c = wait_req(1, r);
    assert_int_equal(c.status, WEFT_SUCCESS);
    assert_int_equal(c.len, n);
    assert_memory_equal(in, out, n);
    free(out);
    free(in);
}

static void test_mprobe(void **state)
{
    int v = 99, w = 100, got = 0, got2 = 0, found = 1;
    size_t n = 40u << 20;
    unsigned char *out = pattern(n, 5), *in = calloc(1, n), small[8];
    void *s, *s2, *msg = NULL, *r, *rl;
    compl_t info, c;
    int64_t deadline = now_ms() + DEADLINE_MS;

    (void)state;
    assert_non_null(in);
    assert_int_equal(T->improbe(ctx[1], ANY, 30, 0, &found, &msg, &info), WEFT_SUCCESS);
    assert_false(found);
    s = send_(0, 1, &v, sizeof(v), 30);
    while (!found) {
        progress_mask(ALL);
        assert_int_equal(T->improbe(ctx[1], ANY, 30, 0, &found, &msg, &info), WEFT_SUCCESS);
        if (now_ms() > deadline)
            fail_msg("improbe never found the message");
    }
    assert_int_equal(info.peer, 0);
    assert_int_equal(info.tag, 30);
    assert_int_equal(info.len, sizeof(v));
    /* Claimed: neither a probe nor a receive sees it any more. */
    assert_int_equal(T->improbe(ctx[1], ANY, 30, 0, &found, &(void *){ NULL }, &info),
                     WEFT_SUCCESS);
    assert_false(found);
    r = recv_(1, ANY, &got2, sizeof(got2), 30, 0);
    spin(20);
    assert_false(is_done(1, r, &c));
    s2 = send_(0, 1, &w, sizeof(w), 30);
    wait_req(1, r);
    assert_int_equal(got2, 100);
    assert_int_equal(T->imrecv(ctx[1], msg, &got, sizeof(got), NULL, &r), WEFT_SUCCESS);
    c = wait_req(1, r);
    assert_int_equal(c.status, WEFT_SUCCESS);
    assert_int_equal(c.peer, 0);
    assert_int_equal(got, 99);
    wait_req(0, s);
    wait_req(0, s2);
    /* A probe of a message still arriving, received whole. */
    s = send_(0, 1, out, n, 31);
    found = 0;
    while (!found) {
        progress_mask(1u << 1);
        assert_int_equal(T->improbe(ctx[1], 0, 31, 0, &found, &msg, &info), WEFT_SUCCESS);
        if (now_ms() > deadline)
            fail_msg("improbe never found the large message");
    }
    assert_int_equal(info.len, n);
    assert_true(((struct sock_msg *)msg)->got < n);
    assert_int_equal(T->imrecv(ctx[1], msg, in, n, NULL, &rl), WEFT_SUCCESS);
    c = wait_req(1, rl);
    assert_int_equal(c.status, WEFT_SUCCESS);
    assert_int_equal(c.len, n);
    assert_memory_equal(in, out, n);
    wait_req(0, s);
    /* One received into a buffer too small. */
    s = send_(0, 1, out, 100, 32);
    wait_req(0, s);
    found = 0;
    while (!found) {
        progress_mask(ALL);
        assert_int_equal(T->improbe(ctx[1], 0, 32, 0, &found, &msg, &info), WEFT_SUCCESS);
        if (now_ms() > deadline)
            fail_msg("improbe never found the third message");
    }
    assert_int_equal(T->imrecv(ctx[1], msg, small, sizeof(small), NULL, &r), WEFT_SUCCESS);
    c = wait_req(1, r);
    assert_int_equal(c.status, WEFT_ERR_TRUNCATED);
    assert_int_equal(c.len, 100);
    assert_memory_equal(small, out, sizeof(small));
    free(out);
    free(in);
}

static void test_cancel(void **state)
{
    size_t n = 48u << 20;
    unsigned char *out = pattern(n, 11), *in = calloc(1, n);
    int v = 7, w = 8, got = 0, found = 1;
    void *r, *sb, *sc, *s3, *rb, *r3, *msg;
    compl_t c, info;
    int64_t deadline = now_ms() + DEADLINE_MS;

    (void)state;
    assert_non_null(in);
    /* A receive still waiting. */
    r = recv_(1, 0, &got, sizeof(got), 1, 0);
    assert_int_equal(T->cancel(ctx[1], r), WEFT_SUCCESS);
    assert_true(is_done(1, r, &c));
    assert_int_equal(c.status, WEFT_ERR_ABORTED);
    /* A receive already finished keeps its result. */
    r = recv_(1, 0, &got, sizeof(got), 2, 0);
    sb = send_(0, 1, &v, sizeof(v), 2);
    while (!((struct sock_req *)r)->done) {
        progress_mask(ALL);
        if (now_ms() > deadline)
            fail_msg("the receive did not finish");
    }
    assert_int_equal(T->cancel(ctx[1], r), WEFT_SUCCESS);
    c = wait_req(1, r);
    assert_int_equal(c.status, WEFT_SUCCESS);
    assert_int_equal(got, 7);
    wait_req(0, sb);
    /* A send queued behind a large one that filled the socket (rank 1
     * does not run) is withdrawn; the one after it arrives in its place. */
    sb = send_(0, 1, out, n, 3);
    while (!sctx(0)->peers[1].out[0] || !sctx(0)->peers[1].out[0]->wblocked) {
        progress_mask(1u << 0);
        if (now_ms() > deadline)
            fail_msg("the large send never filled its socket");
    }
    sc = send_(0, 1, &v, sizeof(v), 4);
    assert_false(((struct sock_req *)sc)->picked);
    assert_int_equal(T->cancel(ctx[0], sc), WEFT_SUCCESS);
    assert_true(is_done(0, sc, &c));
    assert_int_equal(c.status, WEFT_ERR_ABORTED);
    s3 = send_(0, 1, &w, sizeof(w), 5);
    rb = recv_(1, 0, in, n, 3, 0);
    r3 = recv_(1, 0, &got, sizeof(got), 5, 0);
    c = wait_req(1, rb);
    assert_int_equal(c.status, WEFT_SUCCESS);
    assert_memory_equal(in, out, n);
    wait_req(1, r3);
    assert_int_equal(got, 8);
    assert_int_equal(T->improbe(ctx[1], ANY, 4, 0, &found, &msg, &info), WEFT_SUCCESS);
    assert_false(found);
    wait_req(0, sb);
    wait_req(0, s3);
    /* A receive whose message is arriving: done at once, the rest of the
     * message is read and dropped, and the stream stays in step. */
    memset(in, 0, n);
    rb = recv_(1, 0, in, n, 6, 0);
    sb = send_(0, 1, out, n, 6);
    while (!((struct sock_req *)rb)->msg || ((struct sock_req *)rb)->msg->got == 0) {
        progress_mask(1u << 1);
        if (now_ms() > deadline)
            fail_msg("the large message never started to arrive");
    }
    assert_int_equal(T->cancel(ctx[1], rb), WEFT_SUCCESS);
    assert_true(is_done(1, rb, &c));
    assert_int_equal(c.status, WEFT_ERR_ABORTED);
    r3 = recv_(1, 0, &got, sizeof(got), 7, 0);
    s3 = send_(0, 1, &v, sizeof(v), 7);
    c = wait_req(1, r3);
    assert_int_equal(c.status, WEFT_SUCCESS);
    assert_int_equal(got, 7);
    assert_int_equal(wait_req(0, sb).status, WEFT_SUCCESS);
    wait_req(0, s3);
    free(out);
    free(in);
}

/* Finalizing rank 1 fails rank 0's receive from it and its send to it;
 * later operations with it fail at once; rank 2 is not disturbed. */
static void test_peer_lost(void **state)
{
    size_t n = 48u << 20;
    unsigned char *out = pattern(n, 1);
    int got = 0, v = 5;
    void *r, *s, *r2, *s2;
    compl_t c;

    (void)state;
    r = recv_(0, 1, &got, sizeof(got), 50, 0);
    s = send_(0, 1, out, n, 51);
    progress_mask(1u << 0);
    finalize_rank(1);
    c = wait_req(0, r);
    assert_int_equal(c.status, WEFT_ERR_PEER_LOST);
    c = wait_req(0, s);
    assert_int_equal(c.status, WEFT_ERR_PEER_LOST);
    s = send_(0, 1, &v, sizeof(v), 52);
    assert_true(is_done(0, s, &c));
    assert_int_equal(c.status, WEFT_ERR_PEER_LOST);
    r = recv_(0, 1, &got, sizeof(got), 53, 0);
    assert_true(is_done(0, r, &c));
    assert_int_equal(c.status, WEFT_ERR_PEER_LOST);
    r2 = recv_(2, 0, &got, sizeof(got), 54, 0);
    s2 = send_(0, 2, &v, sizeof(v), 54);
    assert_int_equal(wait_req(2, r2).status, WEFT_SUCCESS);
    assert_int_equal(got, 5);
    wait_req(0, s2);
    /* Rank 2 never dialed rank 1: its listener is gone, the connection is
     * refused, and that counts as a crash (receives from anyone fail). */
    r2 = recv_(2, ANY, &got, sizeof(got), 55, 0);
    s2 = send_(2, 1, &v, sizeof(v), 55);
    assert_int_equal(wait_req(2, s2).status, WEFT_ERR_PEER_LOST);
    assert_int_equal(wait_req(2, r2).status, WEFT_ERR_PEER_LOST);
    free(out);
}

/* A rank accepts streams before it knows its job id (the core sets it at
 * the first connect): the hello waits until the id is there. */
static void test_job_id_late(void **state)
{
    static char job[32];
    int v = 9, got = 0;
    void *s, *r;
    compl_t c;

    (void)state;
    job[0] = '\0';
    cores[1].job_id = job;
    r = recv_(1, 0, &got, sizeof(got), 1, 0);
    s = send_(0, 1, &v, sizeof(v), 1);
    wait_req(0, s);
    for (int i = 0; i < 50; i++)
        assert_false(poll_req(1, r, &c, ALL));
    assert_int_equal(sctx(1)->nheld, 1);
    snprintf(job, sizeof(job), "%s", JOB);
    c = wait_req(1, r);
    assert_int_equal(c.status, WEFT_SUCCESS);
    assert_int_equal(got, 9);
    assert_int_equal(sctx(1)->nheld, 0);
    cores[1].job_id = JOB;
}

/* A rank that finalizes after its sends finished: what it sent still
 * arrives, receives from it then fail, and receives from any source are
 * left for the others. */
static void test_goodbye(void **state)
{
    int v = 60, w = 61, got = 0, any = 0;
    void *s, *r, *rany;
    compl_t c;

    (void)state;
    s = send_(2, 0, &v, sizeof(v), 60);
    c = wait_mask(2, s, 1u << 2);
    assert_int_equal(c.status, WEFT_SUCCESS);
    rany = recv_(0, ANY, &any, sizeof(any), 61, 0);
    finalize_rank(2);
    r = recv_(0, 2, &got, sizeof(got), 60, 0);
    c = wait_req(0, r);
    assert_int_equal(c.status, WEFT_SUCCESS);
    assert_int_equal(got, 60);
    r = recv_(0, 2, &got, sizeof(got), 62, 0);
    c = wait_req(0, r);
    assert_int_equal(c.status, WEFT_ERR_PEER_LOST);
    assert_false(is_done(0, rany, &c));
    s = send_(1, 0, &w, sizeof(w), 61);
    c = wait_req(0, rany);
    assert_int_equal(c.status, WEFT_SUCCESS);
    assert_int_equal(c.peer, 1);
    assert_int_equal(any, 61);
    wait_req(1, s);
}

/* disconnect() drops the peer without a goodbye: there it looks like a
 * crash, so receives from any source fail too; both may connect again. */
static void test_disconnect(void **state)
{
    int v = 1, got = 0, any = 0, mine = 0;
    void *s, *r, *rany, *r1, *rx;
    compl_t c;

    (void)state;
    r = recv_(1, 0, &got, sizeof(got), 70, 0);
    s = send_(0, 1, &v, sizeof(v), 70);
    wait_req(1, r);
    wait_req(0, s);
    r = recv_(0, 1, &got, sizeof(got), 70, 0);
    s = send_(1, 0, &v, sizeof(v), 70);
    wait_req(0, r);
    wait_req(1, s);
    rany = recv_(0, ANY, &any, sizeof(any), 71, 0);
    r1 = recv_(0, 1, &got, sizeof(got), 72, 0);
    rx = recv_(1, 0, &mine, sizeof(mine), 73, 0);
    assert_int_equal(T->disconnect(ctx[1], 0), WEFT_SUCCESS);
    assert_true(is_done(1, rx, &c));
    assert_int_equal(c.status, WEFT_ERR_ABORTED);
    /* Not connected any more: misuse. */
    assert_int_equal(T->isend(ctx[1], 0, &v, sizeof(v), 1, NULL, &s), WEFT_ERR_INVALID_ARG);
    assert_non_null(strstr(last_error, "rank 0"));
    c = wait_req(0, rany);
    assert_int_equal(c.status, WEFT_ERR_PEER_LOST);
    c = wait_req(0, r1);
    assert_int_equal(c.status, WEFT_ERR_PEER_LOST);
    s = send_(0, 1, &v, sizeof(v), 74);
    assert_true(is_done(0, s, &c));
    assert_int_equal(c.status, WEFT_ERR_PEER_LOST);
    /* Connected again on both sides: traffic flows. */
    assert_int_equal(T->connect(ctx[1], 0, addrs[0], addr_len[0]), WEFT_SUCCESS);
    assert_int_equal(T->connect(ctx[0], 1, addrs[1], addr_len[1]), WEFT_SUCCESS);
    v = 75;
    r = recv_(1, 0, &mine, sizeof(mine), 75, 0);
    s = send_(0, 1, &v, sizeof(v), 75);
    assert_int_equal(wait_req(1, r).status, WEFT_SUCCESS);
    assert_int_equal(mine, 75);
    wait_req(0, s);
    r = recv_(0, 1, &got, sizeof(got), 76, 0);
    s = send_(1, 0, &v, sizeof(v), 76);
    assert_int_equal(wait_req(0, r).status, WEFT_SUCCESS);
    wait_req(1, s);
}

static int dial_stranger(int victim, const struct sock_hello *h, size_t len)
{
    struct sockaddr_storage ss;
    socklen_t sl = weft__sock_addr_to_sa(&sctx(victim)->self, &ss);
    int fd = socket(ss.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);

    assert_true(fd >= 0);
    assert_int_equal(connect(fd, (struct sockaddr *)&ss, sl), 0);
    assert_int_equal(write(fd, h, len), (ssize_t)len);
    return fd;
}

/* 1 once the transport closed fd. */
static int closed_by_peer(int fd)
{
    struct pollfd p = { .fd = fd, .events = POLLIN };
    char c;

    if (poll(&p, 1, 0) <= 0)
        return 0;
    return recv(fd, &c, 1, MSG_DONTWAIT) <= 0;
}

static void test_strangers(void **state)
{
    enum { NS = 5 };
    struct sock_hello good, h;
    int fds[NS], v = 3, got = 0, nclosed = 0;
    void *s, *r;
    int64_t deadline = now_ms() + DEADLINE_MS;

    (void)state;
    memset(&good, 0, sizeof(good));
    good.magic = SOCK_HELLO_MAGIC;
    good.wire_version = SOCK_WIRE_VERSION;
    good.abi_version = WEFT_TRANSPORT_ABI_VERSION;
    good.rank = 0;
    good.stream = 5;
    snprintf(good.job_id, sizeof(good.job_id), "%s", JOB);
    h = good;
    snprintf(h.job_id, sizeof(h.job_id), "another-job");
    fds[0] = dial_stranger(1, &h, sizeof(h));
    h = good;
    h.magic = 0x12345678;
    fds[1] = dial_stranger(1, &h, sizeof(h));
    h = good;
    h.rank = 99;
    fds[2] = dial_stranger(1, &h, sizeof(h));
    h = good;
    h.stream = SOCK_MAX_STREAMS;
    fds[3] = dial_stranger(1, &h, sizeof(h));
    h = good;
    h.wire_version = 77;
    fds[4] = dial_stranger(1, &h, sizeof(h));
    /* The real rank 0 still gets through, meanwhile. */
    r = recv_(1, 0, &got, sizeof(got), 40, 0);
    s = send_(0, 1, &v, sizeof(v), 40);
    assert_int_equal(wait_req(1, r).status, WEFT_SUCCESS);
    assert_int_equal(got, 3);
    wait_req(0, s);
    while (nclosed < NS) {
        progress_mask(ALL);
        for (int i = 0; i < NS; i++)
            if (fds[i] >= 0 && closed_by_peer(fds[i])) {
                close(fds[i]);
                fds[i] = -1;
                nclosed++;
            }
        if (now_ms() > deadline)
            fail_msg("only %d of %d strangers' connections were closed", nclosed, NS);
    }
    /* And after. */
    r = recv_(1, 0, &got, sizeof(got), 41, 0);
    s = send_(0, 1, &v, sizeof(v), 41);
    assert_int_equal(wait_req(1, r).status, WEFT_SUCCESS);
    wait_req(0, s);
}

/* Every rank sends to every rank, itself included, messages of many
 * sizes; receives mix specific sources and any source. */
static void test_all_to_all(void **state)
{
    enum { K = 6 };
    static const size_t sizes[K] = { 0, 1, 8191, 8192, 70000, 300001 };
    unsigned char *out[MAXR][MAXR][K], *in[MAXR][MAXR][K];
    void *s[MAXR][MAXR][K], *r[MAXR][MAXR][K];
    int n = nranks;

    (void)state;
    for (int d = 0; d < n; d++)
        for (int src = 0; src < n; src++)
            for (int k = 0; k < K; k++) {
                /* Even k: posted before the sends, from the source; odd
                 * k: from any source, posted after them. Tags name the
                 * source, so each receive has one message. */
                in[d][src][k] = calloc(1, sizes[k] + 1);
                assert_non_null(in[d][src][k]);
                out[src][d][k] = pattern(sizes[k], (unsigned)(src * 100 + d * 10 + k));
                if (k % 2 == 0)
                    r[d][src][k] = recv_(d, src, in[d][src][k], sizes[k],
                                         ((uint64_t)k << 32) | (uint64_t)src, 0);
            }
    for (int k = 0; k < K; k++)
        for (int src = 0; src < n; src++)
            for (int d = 0; d < n; d++)
                s[src][d][k] = send_(src, d, out[src][d][k], sizes[k],
                                     ((uint64_t)k << 32) | (uint64_t)src);
    for (int d = 0; d < n; d++)
        for (int src = 0; src < n; src++)
            for (int k = 1; k < K; k += 2)
                r[d][src][k] = recv_(d, ANY, in[d][src][k], sizes[k],
                                     ((uint64_t)k << 32) | (uint64_t)src, 0);
    for (int d = 0; d < n; d++)
        for (int src = 0; src < n; src++)
            for (int k = 0; k < K; k++) {
                compl_t c = wait_req(d, r[d][src][k]);

                assert_int_equal(c.status, WEFT_SUCCESS);
                assert_int_equal(c.peer, src);
                assert_int_equal(c.len, sizes[k]);
                assert_memory_equal(in[d][src][k], out[src][d][k], sizes[k]);
            }
    for (int src = 0; src < n; src++)
        for (int d = 0; d < n; d++)
            for (int k = 0; k < K; k++) {
                assert_int_equal(wait_req(src, s[src][d][k]).status, WEFT_SUCCESS);
                free(out[src][d][k]);
                free(in[d][src][k]);
            }
}

/* Idle contexts leave their descriptor quiet (no busy waking); a message
 * makes the receiver's readable. */
static void test_wait_fd(void **state)
{
    int fd0 = -1, fd1 = -1, v = 1, got = 0;
    struct pollfd p[2];
    void *s, *r;

    (void)state;
    assert_int_equal(T->get_wait_fd(ctx[0], &fd0), WEFT_SUCCESS);
    assert_int_equal(T->get_wait_fd(ctx[1], &fd1), WEFT_SUCCESS);
    assert_true(fd0 >= 0 && fd1 >= 0);
    r = recv_(1, 0, &got, sizeof(got), 1, 0);
    s = send_(0, 1, &v, sizeof(v), 1);
    wait_req(1, r);
    wait_req(0, s);
    spin(10);
    p[0].fd = fd0;
    p[1].fd = fd1;
    p[0].events = p[1].events = POLLIN;
    assert_int_equal(poll(p, 2, 50), 0);
    s = send_(0, 1, &v, sizeof(v), 2);
    p[0].fd = fd1;
    assert_int_equal(poll(p, 1, 5000), 1);
    r = recv_(1, 0, &got, sizeof(got), 2, 0);
    wait_req(1, r);
    wait_req(0, s);
}

/* ------------------------------------------------------------ the ABI's edges */

static void test_abi_edges(void **state)
{
    weft_transport_caps_t caps;
    weft_transport_reach_t reach;
    unsigned char junk[sizeof(struct sock_addr)], small[8];
    size_t len;
    void *h = (void *)1, *req = NULL, *c2 = NULL;
    weft_transport_core_t core;
    int v = 0;

    (void)state;
    assert_int_equal(weft_transport_v1.abi_version, WEFT_TRANSPORT_ABI_VERSION);
    assert_int_equal(weft_transport_v1.struct_size, sizeof(weft_transport_v1_t));
    assert_string_equal(weft_transport_v1.name, "sockets");
    assert_null(weft_transport_v1.put);
    assert_null(weft_transport_v1.mem_export);
    memset(&caps, 0, sizeof(caps));
    caps.struct_size = sizeof(caps);
    assert_int_equal(T->query(ctx[0], &caps), WEFT_SUCCESS);
    assert_true(caps.flags & WEFT_TRANSPORT_CAP_MPROBE);
    assert_false(caps.flags & WEFT_TRANSPORT_CAP_PUT);
    assert_int_equal(caps.mem_types, 1u << WEFT_TRANSPORT_MEM_HOST);
    assert_true(caps.max_msg_size == SIZE_MAX);
    assert_true(caps.latency_us > 0 && caps.bandwidth_gbps > 0);
    /* An older, shorter caps struct is not written past its end. */
    memset(&caps, 0x5a, sizeof(caps));
    caps.struct_size = offsetof(weft_transport_caps_t, max_msg_size);
    assert_int_equal(T->query(ctx[0], &caps), WEFT_SUCCESS);
    assert_int_equal(caps.mem_types, 1u << WEFT_TRANSPORT_MEM_HOST);
    assert_true(caps.max_msg_size == (size_t)0x5a5a5a5a5a5a5a5aull);
    /* Addresses. */
    memset(junk, 0x42, sizeof(junk));
    assert_int_equal(T->reach(ctx[0], junk, sizeof(junk), &reach), WEFT_SUCCESS);
    assert_int_equal(reach, WEFT_TRANSPORT_REACH_NONE);
    assert_int_equal(T->reach(ctx[0], addrs[1], addr_len[1] - 1, &reach), WEFT_SUCCESS);
    assert_int_equal(reach, WEFT_TRANSPORT_REACH_NONE);
    assert_int_equal(T->reach(ctx[0], addrs[1], addr_len[1], &reach), WEFT_SUCCESS);
    assert_int_equal(reach, WEFT_TRANSPORT_REACH_NETWORK);
    len = sizeof(small);
    assert_int_equal(T->get_address(ctx[0], small, &len), WEFT_ERR_INVALID_ARG);
    assert_int_equal(len, sizeof(small));
    assert_int_equal(T->connect(ctx[0], 1, junk, sizeof(junk)), WEFT_ERR_INVALID_ARG);
    assert_non_null(strstr(last_error, "rank 1"));
    assert_int_equal(T->connect(ctx[0], 2, addrs[1], addr_len[1]), WEFT_ERR_INVALID_ARG);
    assert_non_null(strstr(last_error, "rank 2"));
    assert_int_equal(T->isend(ctx[0], 5, &v, sizeof(v), 1, NULL, &req), WEFT_ERR_INVALID_ARG);
    assert_int_equal(T->irecv(ctx[0], -7, &v, sizeof(v), 1, 0, NULL, &req),
                     WEFT_ERR_INVALID_ARG);
    assert_int_equal(T->isend(ctx[0], 1, NULL, 4, 1, NULL, &req), WEFT_ERR_INVALID_ARG);
    /* Memory. */
    assert_int_equal(T->mem_register(ctx[0], &v, sizeof(v), WEFT_TRANSPORT_MEM_HOST, &h),
                     WEFT_SUCCESS);
    assert_null(h);
    assert_int_equal(T->mem_deregister(ctx[0], h), WEFT_SUCCESS);
    assert_int_equal(T->mem_register(ctx[0], &v, sizeof(v), WEFT_TRANSPORT_MEM_CUDA, &h),
                     WEFT_ERR_UNSUPPORTED);
    /* Parameters. */
    core_fill(&core, 0, 2);
    setenv("WEFT_SOCKET_NSOCKS", "9", 1);
    assert_int_equal(T->init(&core, &c2), WEFT_ERR_INVALID_ARG);
    assert_non_null(strstr(last_error, "WEFT_SOCKET_NSOCKS"));
    setenv("WEFT_SOCKET_NSOCKS", "two", 1);
    assert_int_equal(T->init(&core, &c2), WEFT_ERR_INVALID_ARG);
    unsetenv("WEFT_SOCKET_NSOCKS");
    setenv("WEFT_SOCKET_CHUNK", "1000", 1);
    assert_int_equal(T->init(&core, &c2), WEFT_ERR_INVALID_ARG);
    assert_non_null(strstr(last_error, "WEFT_SOCKET_CHUNK"));
    unsetenv("WEFT_SOCKET_CHUNK");
    setenv("WEFT_SOCKET_IFNAME", "no-such-interface", 1);
    assert_int_equal(T->init(&core, &c2), WEFT_ERR_UNSUPPORTED);
    assert_non_null(strstr(last_error, "no-such-interface"));
    setenv("WEFT_SOCKET_IFNAME", "lo", 1);
    assert_int_equal(T->init(&core, &c2), WEFT_SUCCESS);
    unsetenv("WEFT_SOCKET_IFNAME");
    {
        struct sock_ctx *sc = c2;
        struct in_addr lo = { htonl(INADDR_LOOPBACK) };

        assert_int_equal(sc->self.family, AF_INET);
        assert_memory_equal(sc->self.ip, &lo, 4);
    }
    assert_int_equal(T->finalize(c2), WEFT_SUCCESS);
    core.rank = 2;
    assert_int_equal(T->init(&core, &c2), WEFT_ERR_INVALID_ARG);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_ping_pong, setup2, teardown),
        cmocka_unit_test_setup_teardown(test_match_masks, setup3, teardown),
        cmocka_unit_test_setup_teardown(test_post_order, setup3, teardown),
        cmocka_unit_test_setup_teardown(test_unexpected, setup3_streams, teardown),
        cmocka_unit_test_setup_teardown(test_unexpected_partial, setup2, teardown),
        cmocka_unit_test_setup_teardown(test_order_1000, setup3, teardown),
        cmocka_unit_test_setup_teardown(test_truncation, setup3_streams, teardown),
        cmocka_unit_test_setup_teardown(test_zero_length, setup2, teardown),
        cmocka_unit_test_setup_teardown(test_large_and_overtake, setup3_nsocks4, teardown),
        cmocka_unit_test_setup_teardown(test_self, setup3_streams, teardown),
        cmocka_unit_test_setup_teardown(test_mprobe, setup2, teardown),
        cmocka_unit_test_setup_teardown(test_cancel, setup2, teardown),
        cmocka_unit_test_setup_teardown(test_peer_lost, setup3, teardown),
        cmocka_unit_test_setup_teardown(test_job_id_late, setup2, teardown),
        cmocka_unit_test_setup_teardown(test_goodbye, setup3, teardown),
        cmocka_unit_test_setup_teardown(test_disconnect, setup3, teardown),
        cmocka_unit_test_setup_teardown(test_strangers, setup2, teardown),
        cmocka_unit_test_setup_teardown(test_all_to_all, setup4_mixed, teardown),
        cmocka_unit_test_setup_teardown(test_wait_fd, setup2, teardown),
        cmocka_unit_test_setup_teardown(test_abi_edges, setup2, teardown),
    };

    return cmocka_run_group_tests_name("sockets", tests, NULL, NULL);
}
