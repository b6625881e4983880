/*
 * test_sockets.c: the sockets transport through its ABI, with several
 * contexts ("ranks") in one process talking over loopback TCP.
 */
#include "config.h"

#include <arpa/inet.h>
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

extern const weft_transport_v1_t weft_transport_v1;
static const weft_transport_v1_t *T = &weft_transport_v1;

#define NRANKS 3
#define ANY WEFT_TRANSPORT_ANY_PEER

static void fake_log(int level, const char *plugin, const char *fmt, ...)
{
    va_list ap;

    if (!getenv("WEFT_DEBUG"))
        return;
    va_start(ap, fmt);
    fprintf(stderr, "[%s] ", plugin);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
}

static void fake_set_error(const char *fmt, ...)
{
    (void)fmt;
}

static const char *fake_param(const char *name)
{
    return getenv(name);
}

static weft_transport_core_t cores[NRANKS];
static void *ctx[NRANKS];

static int64_t now_ms(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void progress_all(void)
{
    for (int r = 0; r < NRANKS; r++)
        if (ctx[r])
            T->progress(ctx[r]);
}

/* Progresses everyone until req (of rank r) completes; fails after 10 s. */
static weft_transport_completion_t wait_req(int r, void *req)
{
    weft_transport_completion_t c;
    int64_t deadline = now_ms() + 30000;
    int done = 0;

    memset(&c, 0, sizeof(c));
    while (!done) {
        progress_all();
        assert_int_equal(T->test(ctx[r], req, &done, &c), WEFT_SUCCESS);
        if (!done && now_ms() > deadline)
            fail_msg("request of rank %d did not complete within 30 s", r);
    }
    return c;
}

static int try_req(int r, void *req, weft_transport_completion_t *c)
{
    int done = 0;

    progress_all();
    assert_int_equal(T->test(ctx[r], req, &done, c), WEFT_SUCCESS);
    return done;
}

static int setup(void **state)
{
    unsigned char addr[NRANKS][WEFT_TRANSPORT_ADDR_MAX];
    size_t len[NRANKS];

    (void)state;
    for (int r = 0; r < NRANKS; r++) {
        cores[r].struct_size = sizeof(cores[r]);
        cores[r].rank = r;
        cores[r].size = NRANKS;
        cores[r].job_id = "job-under-test";
        cores[r].master_addr = "127.0.0.1";
        cores[r].log = fake_log;
        cores[r].set_error = fake_set_error;
        cores[r].get_param = fake_param;
        assert_int_equal(T->init(&cores[r], &ctx[r]), WEFT_SUCCESS);
        len[r] = sizeof(addr[r]);
        assert_int_equal(T->get_address(ctx[r], addr[r], &len[r]), WEFT_SUCCESS);
    }
    for (int r = 0; r < NRANKS; r++)
        for (int p = 0; p < NRANKS; p++) {
            weft_transport_reach_t reach;

            assert_int_equal(T->reach(ctx[r], addr[p], len[p], &reach), WEFT_SUCCESS);
            assert_int_equal(reach, WEFT_TRANSPORT_REACH_NETWORK);
            assert_int_equal(T->connect(ctx[r], p, addr[p], len[p]), WEFT_SUCCESS);
        }
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    for (int r = 0; r < NRANKS; r++)
        if (ctx[r]) {
            T->finalize(ctx[r]);
            ctx[r] = NULL;
        }
    return 0;
}

static void test_ping_and_self(void **state)
{
    int v = 42, got = 0;
    void *s, *q;
    weft_transport_completion_t c;

    (void)state;
    assert_int_equal(T->irecv(ctx[1], 0, &got, sizeof(got), 7, 0, NULL, &q), WEFT_SUCCESS);
    assert_int_equal(T->isend(ctx[0], 1, &v, sizeof(v), 7, NULL, &s), WEFT_SUCCESS);
    c = wait_req(1, q);
    assert_int_equal(c.status, WEFT_SUCCESS);
    assert_int_equal(c.peer, 0);
    assert_int_equal(c.tag, 7);
    assert_int_equal(c.len, sizeof(v));
    assert_int_equal(got, 42);
    assert_int_equal(wait_req(0, s).status, WEFT_SUCCESS);
    /* to itself */
    got = 0;
    assert_int_equal(T->isend(ctx[2], 2, &v, sizeof(v), 9, NULL, &s), WEFT_SUCCESS);
    assert_int_equal(T->irecv(ctx[2], 2, &got, sizeof(got), 9, 0, NULL, &q), WEFT_SUCCESS);
    assert_int_equal(wait_req(2, q).status, WEFT_SUCCESS);
    assert_int_equal(got, 42);
    wait_req(2, s);
}

static void test_matching_rules(void **state)
{
    int a = 1, b = 2, x = 0, y = 0, z = 0;
    void *s1, *s2, *r1, *r2, *r3;
    weft_transport_completion_t c;

    (void)state;
    /* Unexpected first: two messages with different tags from rank 0. */
    assert_int_equal(T->isend(ctx[0], 1, &a, sizeof(a), 0x500000001ull, NULL, &s1), 0);
    assert_int_equal(T->isend(ctx[0], 1, &b, sizeof(b), 0x500000002ull, NULL, &s2), 0);
    wait_req(0, s1);
    wait_req(0, s2);
    for (int i = 0; i < 100; i++)
        progress_all();
    /* Tag 2 matched exactly although tag 1 arrived first. */
    assert_int_equal(T->irecv(ctx[1], 0, &x, sizeof(x), 0x500000002ull, 0, NULL, &r1), 0);
    c = wait_req(1, r1);
    assert_int_equal(x, 2);
    /* Another context id (upper half) does not match the user bits. */
    assert_int_equal(T->irecv(ctx[1], ANY, &y, sizeof(y), 0x600000000ull, 0xffffffffull, NULL,
                              &r2), 0);
    for (int i = 0; i < 50; i++)
        assert_false(try_req(1, r2, &c));
    /* Any source, any user tag within context 5. */
    assert_int_equal(T->irecv(ctx[1], ANY, &z, sizeof(z), 0x500000000ull, 0xffffffffull, NULL,
                              &r3), 0);
    c = wait_req(1, r3);
    assert_int_equal(z, 1);
    assert_int_equal(c.tag, 0x500000001ull);
    assert_int_equal(c.peer, 0);
    assert_int_equal(T->cancel(ctx[1], r2), WEFT_SUCCESS);
    assert_int_equal(wait_req(1, r2).status, WEFT_ERR_ABORTED);
}

static void test_post_order_and_1000_in_order(void **state)
{
    enum { N = 1000 };
    static int out[N], in[N];
    static void *sreq[N], *rreq[N];
    int first = -1, second = -1, v = 5;
    void *ra, *rb, *s;

    (void)state;
    /* Two matching receives: the one posted first gets the first message. */
    assert_int_equal(T->irecv(ctx[2], ANY, &first, sizeof(int), 11, 0, NULL, &ra), 0);
    assert_int_equal(T->irecv(ctx[2], 1, &second, sizeof(int), 11, 0, NULL, &rb), 0);
    assert_int_equal(T->isend(ctx[1], 2, &v, sizeof(v), 11, NULL, &s), 0);
    wait_req(2, ra);
    assert_int_equal(first, 5);
    assert_int_equal(try_req(2, rb, &(weft_transport_completion_t){ 0 }), 0);
    v = 6;
    wait_req(1, s);
    assert_int_equal(T->isend(ctx[1], 2, &v, sizeof(v), 11, NULL, &s), 0);
    wait_req(2, rb);
    assert_int_equal(second, 6);
    wait_req(1, s);
    /* 1000 messages, same tag, half of them unexpected: in order. */
    for (int i = 0; i < N; i++) {
        out[i] = i;
        in[i] = -1;
        assert_int_equal(T->isend(ctx[0], 2, &out[i], sizeof(int), 12, NULL, &sreq[i]), 0);
        if (i % 2 == 0)
            assert_int_equal(T->irecv(ctx[2], 0, &in[i], sizeof(int), 12, 0, NULL, &rreq[i]), 0);
    }
    for (int i = 1; i < N; i += 2)
        assert_int_equal(T->irecv(ctx[2], 0, &in[i], sizeof(int), 12, 0, NULL, &rreq[i]), 0);
    for (int i = 0; i < N; i++) {
        wait_req(2, rreq[i]);
        wait_req(0, sreq[i]);
    }
    /* Even receives were posted first, in order; the odd ones got the
     * rest, also in order. */
    for (int i = 0, k = 0; i < N; i += 2, k++)
        assert_int_equal(in[i], k);
    for (int i = 1, k = N / 2; i < N; i += 2, k++)
        assert_int_equal(in[i], k);
}

static void test_truncation_and_zero_length(void **state)
{
    char big[100], small[10], after[4] = { 0 };
    void *s, *r;
    weft_transport_completion_t c;

    (void)state;
    memset(big, 'x', sizeof(big));
    memset(small, 0, sizeof(small));
    assert_int_equal(T->irecv(ctx[0], 1, small, sizeof(small), 3, 0, NULL, &r), 0);
    assert_int_equal(T->isend(ctx[1], 0, big, sizeof(big), 3, NULL, &s), 0);
    c = wait_req(0, r);
    assert_int_equal(c.status, WEFT_ERR_TRUNCATED);
    assert_int_equal(c.len, sizeof(big));
    assert_memory_equal(small, "xxxxxxxxxx", 10);
    wait_req(1, s);
    /* The stream is intact afterwards; zero-length with NULL buffers. */
    assert_int_equal(T->isend(ctx[1], 0, NULL, 0, 4, NULL, &s), 0);
    assert_int_equal(T->isend(ctx[1], 0, "abc", 4, 5, NULL, &s), 0);
    assert_int_equal(T->irecv(ctx[0], 1, NULL, 0, 4, 0, NULL, &r), 0);
    c = wait_req(0, r);
    assert_int_equal(c.status, WEFT_SUCCESS);
    assert_int_equal(c.len, 0);
    assert_int_equal(T->irecv(ctx[0], 1, after, sizeof(after), 5, 0, NULL, &r), 0);
    wait_req(0, r);
    assert_string_equal(after, "abc");
    wait_req(1, s);
}

static void test_small_overtakes_large(void **state)
{
    size_t n = 64u << 20;
    unsigned char *big = malloc(n), *dst = malloc(n);
    int tiny = 77, got = 0;
    void *sb, *st, *rb, *rt;
    weft_transport_completion_t c;

    (void)state;
    assert_non_null(big);
    assert_non_null(dst);
    for (size_t i = 0; i < n; i++)
        big[i] = (unsigned char)(i * 131 + (i >> 16));
    assert_int_equal(T->irecv(ctx[1], 2, dst, n, 20, 0, NULL, &rb), 0);
    assert_int_equal(T->irecv(ctx[1], 2, &got, sizeof(got), 21, 0, NULL, &rt), 0);
    assert_int_equal(T->isend(ctx[2], 1, big, n, 20, NULL, &sb), 0);
    assert_int_equal(T->isend(ctx[2], 1, &tiny, sizeof(tiny), 21, NULL, &st), 0);
    wait_req(1, rt);
    assert_int_equal(got, 77);
    /* The small message did not wait for the 64 MiB one. */
    assert_false(try_req(1, rb, &c));
    c = wait_req(1, rb);
    assert_int_equal(c.status, WEFT_SUCCESS);
    assert_int_equal(c.len, n);
    assert_memory_equal(dst, big, n);
    wait_req(2, sb);
    wait_req(2, st);
    free(big);
    free(dst);
}

static void test_mprobe(void **state)
{
    int v = 99, got = 0, found = 0;
    void *s, *msg = NULL, *r;
    weft_transport_completion_t info, c;
    int64_t deadline = now_ms() + 5000;

    (void)state;
    assert_int_equal(T->isend(ctx[0], 2, &v, sizeof(v), 30, NULL, &s), 0);
    while (!found && now_ms() < deadline) {
        progress_all();
        assert_int_equal(T->improbe(ctx[2], ANY, 30, 0, &found, &msg, &info), 0);
    }
    assert_true(found);
    assert_int_equal(info.peer, 0);
    assert_int_equal(info.len, sizeof(v));
    /* Claimed: a plain probe no longer sees it. */
    assert_int_equal(T->improbe(ctx[2], ANY, 30, 0, &found, &(void *){ NULL }, &info), 0);
    assert_false(found);
    assert_int_equal(T->imrecv(ctx[2], msg, &got, sizeof(got), NULL, &r), 0);
    c = wait_req(2, r);
    assert_int_equal(c.status, WEFT_SUCCESS);
    assert_int_equal(got, 99);
    wait_req(0, s);
}

static void test_stranger_rejected(void **state)
{
    struct sock_ctx *victim = ctx[1];
    struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons(victim->self.port) };
    struct sock_hello h = { .magic = SOCK_HELLO_MAGIC, .rank = 0 };
    int fd = socket(AF_INET, SOCK_STREAM, 0), v = 3, got = 0;
    void *s, *r;

    (void)state;
    memcpy(&a.sin_addr, victim->self.ip, 4);
    snprintf(h.job_id, sizeof(h.job_id), "another-job");
    assert_int_equal(connect(fd, (struct sockaddr *)&a, sizeof(a)), 0);
    assert_int_equal(write(fd, &h, sizeof(h)), (ssize_t)sizeof(h));
    /* The transport closes it; the real rank 0 still gets through. */
    assert_int_equal(T->irecv(ctx[1], 0, &got, sizeof(got), 40, 0, NULL, &r), 0);
    assert_int_equal(T->isend(ctx[0], 1, &v, sizeof(v), 40, NULL, &s), 0);
    assert_int_equal(wait_req(1, r).status, WEFT_SUCCESS);
    assert_int_equal(got, 3);
    wait_req(0, s);
    {
        char c;

        assert_int_equal(read(fd, &c, 1), 0); /* closed by the transport */
    }
    close(fd);
}

static void test_peer_lost(void **state)
{
    int got = 0, v = 1;
    void *r, *r_any, *s;
    weft_transport_completion_t c;

    (void)state;
    /* Rank 0 waits for rank 2, which goes away; rank 0's later send and
     * receive fail at once. */
    assert_int_equal(T->isend(ctx[2], 0, &v, sizeof(v), 50, NULL, &s), 0);
    wait_req(2, s);
    assert_int_equal(T->irecv(ctx[0], 2, &got, sizeof(got), 51, 0, NULL, &r), 0);
    assert_int_equal(T->irecv(ctx[0], ANY, &got, sizeof(got), 52, 0, NULL, &r_any), 0);
    T->finalize(ctx[2]);
    ctx[2] = NULL;
    c = wait_req(0, r);
    assert_int_equal(c.status, WEFT_ERR_PEER_LOST);
    /* It said goodbye: receives from anyone may still be satisfied. */
    assert_false(try_req(0, r_any, &c));
    assert_int_equal(T->isend(ctx[0], 2, &v, sizeof(v), 53, NULL, &s), 0);
    assert_int_equal(wait_req(0, s).status, WEFT_ERR_PEER_LOST);
    assert_int_equal(T->isend(ctx[1], 0, &v, sizeof(v), 52, NULL, &s), 0);
    assert_int_equal(wait_req(0, r_any).status, WEFT_SUCCESS);
    wait_req(1, s);
}

static void test_ifname_spec(void **state)
{
    (void)state;
    assert_true(sock_ifname_match("eth", "eth0"));
    assert_true(sock_ifname_match("ib0,eth0", "eth0"));
    assert_false(sock_ifname_match("ib0,eth0", "eth1"));
    assert_false(sock_ifname_match("^docker,lo", "docker0"));
    assert_false(sock_ifname_match("^docker,lo", "lo"));
    assert_true(sock_ifname_match("^docker,lo", "enp3s0"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_ping_and_self, setup, teardown),
        cmocka_unit_test_setup_teardown(test_matching_rules, setup, teardown),
        cmocka_unit_test_setup_teardown(test_post_order_and_1000_in_order, setup, teardown),
        cmocka_unit_test_setup_teardown(test_truncation_and_zero_length, setup, teardown),
        cmocka_unit_test_setup_teardown(test_small_overtakes_large, setup, teardown),
        cmocka_unit_test_setup_teardown(test_mprobe, setup, teardown),
        cmocka_unit_test_setup_teardown(test_stranger_rejected, setup, teardown),
        cmocka_unit_test_setup_teardown(test_peer_lost, setup, teardown),
        cmocka_unit_test(test_ifname_spec),
    };

    return cmocka_run_group_tests_name("sockets", tests, NULL, NULL);
}
