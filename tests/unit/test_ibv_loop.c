/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_ibv_loop.c: two ib-verbs contexts in one process, rank 0 and
 * rank 1, talking through the fake libibverbs, which moves data between
 * QPs of the process (ibv_fake.c): connection on first use through an
 * out-of-band store and knocks, eager messages (inline and bounced),
 * large ones through staging and in place, unexpected ones, truncation,
 * ordering under credit flow control, any source, a rank to itself,
 * puts, and a peer that finalizes. The fake fails any send to a QP below
 * RTR and any that finds no receive posted, and counts them: both must
 * stay 0. This is not the software RDMA device, which tests the same
 * code over a real kernel interface; it runs in make check.
 */
#include "config.h"

#include <dlfcn.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "plugins/ib-verbs/ibv.h"
#include "tests/unit/oob_store.h"

#define FAKE WEFT_TEST_BUILDDIR "/tests/unit/.libs/fakeverbs.so"
#define SPINS 200000

extern const weft_transport_v1_t weft_transport_v1;
static const weft_transport_v1_t *T = &weft_transport_v1;

static char last_error[1024];

static void fake_set_error(const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(last_error, sizeof(last_error), fmt, ap);
    va_end(ap);
}

static void fake_log(int level, const char *plugin, const char *fmt, ...)
{
    va_list ap;

    if (!getenv("TEST_VERBOSE"))
        return;
    va_start(ap, fmt);
    fprintf(stderr, "%s: ", plugin);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
}

static const char *fake_param(const char *name)
{
    return getenv(name);
}

/* ------------------------------------------------------------ two ranks */

static weft_transport_core_t core[2];
static void *ctx[2];
static void *fake_dl;

static int counter(const char *name)
{
    int *v = dlsym(fake_dl, name);

    if (!v)
        fail_msg("the fake has no %s", name);
    return *v;
}

static void progress(void)
{
    for (int r = 0; r < 2; r++)
        if (ctx[r])
            assert_int_equal(T->progress(ctx[r]), WEFT_SUCCESS);
}

/* Progress both until req (of rank r) is done: its completion. */
static weft_transport_completion_t wait_req(int r, void *req)
{
    weft_transport_completion_t c;
    int done = 0;

    memset(&c, 0, sizeof(c));
    for (int i = 0; i < SPINS && !done; i++) {
        progress();
        assert_int_equal(T->test(ctx[r], req, &done, &c), WEFT_SUCCESS);
    }
    if (!done)
        fail_msg("rank %d: request not done after %d rounds (%s)", r, SPINS, last_error);
    return c;
}

static int setup(void **state)
{
    unsigned char addr[2][WEFT_TRANSPORT_ADDR_MAX];
    size_t len[2];

    (void)state;
    oob_store_clear();
    setenv("WEFT_IBVERBS_LIB", FAKE, 1);
    setenv("FAKE_IBV_DEVICES", "fake0=ACTIVE.ETH;fake1=ACTIVE.ETH", 1);
    setenv("WEFT_IB_QPS", "2", 1);
    setenv("WEFT_IB_CHUNK", "65536", 1);
    setenv("WEFT_IB_STAGING", "524288", 1);
    setenv("WEFT_IB_EAGER_CREDITS", "8", 1);
    setenv("WEFT_IB_CTS_SLOTS", "4", 1);
    /* No CUDA driver, whatever the machine has: test_gpu_flush registers
     * host memory as CUDA memory, as only peermem would take it. */
    setenv("WEFT_IB_GDR", "0", 1);
    for (int r = 0; r < 2; r++) {
        memset(&core[r], 0, sizeof(core[r]));
        core[r].struct_size = sizeof(core[r]);
        core[r].rank = r;
        core[r].size = 2;
        core[r].job_id = "loop";
        core[r].master_addr = "127.0.0.1";
        core[r].log = fake_log;
        core[r].set_error = fake_set_error;
        core[r].get_param = fake_param;
        core[r].oob_put = oob_store_put;
        core[r].oob_get = oob_store_get;
        if (T->init(&core[r], &ctx[r]) != WEFT_SUCCESS)
            fail_msg("init of rank %d: %s", r, last_error);
        len[r] = sizeof(addr[r]);
        assert_int_equal(T->get_address(ctx[r], addr[r], &len[r]), WEFT_SUCCESS);
    }
    for (int r = 0; r < 2; r++)
        for (int p = 0; p < 2; p++)
            assert_int_equal(T->connect(ctx[r], p, addr[p], len[p]), WEFT_SUCCESS);
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    for (int r = 0; r < 2; r++)
        if (ctx[r]) {
            T->finalize(ctx[r]);
            ctx[r] = NULL;
        }
    /* The strict fake: nothing ever met a QP not ready or without a
     * receive, and no completion queue overflowed. */
    assert_int_equal(counter("fake_ibv_not_ready"), 0);
    assert_int_equal(counter("fake_ibv_rnr"), 0);
    assert_int_equal(counter("fake_ibv_cq_overflows"), 0);
    assert_int_equal(counter("fake_ibv_rem_access"), 0);
    assert_int_equal(counter("fake_ibv_live_mrs"), 0);
    return 0;
}

static void fill(unsigned char *b, size_t n, unsigned seed)
{
    for (size_t i = 0; i < n; i++)
        b[i] = (unsigned char)(seed + i * 7 + (i >> 8));
}

/* from sends n bytes with tag to `to`, which receives into room bytes;
 * the receive is posted first or after the send. */
static void exchange(int from, int to, size_t n, size_t room, int recv_first,
                     weft_result_t want)
{
    unsigned char *s = malloc(n ? n : 1), *d = calloc(1, room ? room : 1);
    void *sr, *rr;
    weft_transport_completion_t c;

    assert_non_null(s);
    assert_non_null(d);
    fill(s, n, (unsigned)n);
    if (recv_first)
        assert_int_equal(T->irecv(ctx[to], from, d, room, 42, 0, NULL, &rr), WEFT_SUCCESS);
    assert_int_equal(T->isend(ctx[from], to, s, n, 42, NULL, &sr), WEFT_SUCCESS);
    if (!recv_first) {
        /* Let it arrive unexpected first. */
        for (int i = 0; i < 200; i++)
            progress();
        assert_int_equal(T->irecv(ctx[to], from, d, room, 42, 0, NULL, &rr), WEFT_SUCCESS);
    }
    c = wait_req(to, rr);
    if (c.status != want)
        fail_msg("%zu bytes into %zu (%s): status %d, want %d (%s)", n, room,
                 recv_first ? "expected" : "unexpected", c.status, want, last_error);
    assert_int_equal(c.len, n);
    assert_int_equal(c.peer, from);
    assert_int_equal(c.tag, 42);
    assert_memory_equal(d, s, n < room ? n : room);
    c = wait_req(from, sr);
    assert_int_equal(c.status, WEFT_SUCCESS);
    free(s);
    free(d);
}

static void test_sizes(void **state)
{
    static const size_t sizes[] = {
        0, 1, 17, 100, 4000, 8160, 8161, 65536, 65537, 300000, 2u << 20,
    };

    (void)state;
    for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
        exchange(0, 1, sizes[i], sizes[i], 1, WEFT_SUCCESS);
        exchange(1, 0, sizes[i], sizes[i], 1, WEFT_SUCCESS);
    }
}

static void test_unexpected(void **state)
{
    (void)state;
    exchange(0, 1, 10, 10, 0, WEFT_SUCCESS);
    exchange(0, 1, 5000, 5000, 0, WEFT_SUCCESS);
    exchange(0, 1, 400000, 400000, 0, WEFT_SUCCESS);
    /* Unregistered memory without on-demand paging: staged. */
    assert_int_equal(((struct wib_ctx *)ctx[1])->windows_in_place, 0);
    assert_true(((struct wib_ctx *)ctx[1])->windows_staged > 0);
}

static void test_truncated(void **state)
{
    (void)state;
    exchange(0, 1, 5000, 1000, 1, WEFT_ERR_TRUNCATED);
    exchange(0, 1, 300000, 70000, 1, WEFT_ERR_TRUNCATED);
    exchange(0, 1, 300000, 0, 1, WEFT_ERR_TRUNCATED);
    exchange(1, 0, 300000, 1000, 0, WEFT_ERR_TRUNCATED);
}

static void test_self(void **state)
{
    (void)state;
    exchange(0, 0, 100, 100, 1, WEFT_SUCCESS);
    exchange(0, 0, 200000, 200000, 1, WEFT_SUCCESS);
}

/* More messages than credits, all sent before any receive: they arrive
 * in order, each with its number. */
static void test_order(void **state)
{
    enum { N = 64 };
    uint32_t out[N], in[N];
    unsigned char big[3][100000], bigin[3][100000];
    void *sr[N + 3], *rr[N + 3];

    (void)state;
    for (int i = 0; i < N; i++) {
        out[i] = (uint32_t)i;
        assert_int_equal(T->isend(ctx[0], 1, &out[i], sizeof(out[i]), 7, NULL, &sr[i]),
                         WEFT_SUCCESS);
        if (i % 20 == 10) {
            int k = i / 20;

            fill(big[k], sizeof(big[k]), (unsigned)i);
            assert_int_equal(T->isend(ctx[0], 1, big[k], sizeof(big[k]), 7, NULL,
                                      &sr[N + k]), WEFT_SUCCESS);
        }
    }
    for (int i = 0, k = 0; i < N; i++) {
        assert_int_equal(T->irecv(ctx[1], 0, &in[i], sizeof(in[i]), 7, 0, NULL, &rr[i]),
                         WEFT_SUCCESS);
        if (i % 20 == 10) {
            assert_int_equal(T->irecv(ctx[1], 0, bigin[k], sizeof(bigin[k]), 7, 0, NULL,
                                      &rr[N + k]), WEFT_SUCCESS);
            k++;
        }
    }
    for (int i = 0; i < N + 3; i++) {
        assert_int_equal(wait_req(1, rr[i]).status, WEFT_SUCCESS);
        assert_int_equal(wait_req(0, sr[i]).status, WEFT_SUCCESS);
    }
    for (int i = 0; i < N; i++)
        assert_int_equal(in[i], i);
    for (int k = 0; k < 3; k++)
        assert_memory_equal(big[k], bigin[k], sizeof(big[k]));
}

static void test_any_source(void **state)
{
    char a[] = "from zero", b[] = "from one!", d[2][16];
    void *s0, *s1, *r0, *r1;
    weft_transport_completion_t c0, c1;

    (void)state;
    assert_int_equal(T->irecv(ctx[0], WEFT_TRANSPORT_ANY_PEER, d[0], 16, 9, 0, NULL, &r0),
                     WEFT_SUCCESS);
    assert_int_equal(T->irecv(ctx[0], WEFT_TRANSPORT_ANY_PEER, d[1], 16, 9, 0, NULL, &r1),
                     WEFT_SUCCESS);
    assert_int_equal(T->isend(ctx[1], 0, b, sizeof(b), 9, NULL, &s1), WEFT_SUCCESS);
    assert_int_equal(T->isend(ctx[0], 0, a, sizeof(a), 9, NULL, &s0), WEFT_SUCCESS);
    c0 = wait_req(0, r0);
    c1 = wait_req(0, r1);
    assert_int_equal(c0.peer + c1.peer, 1);
    assert_string_equal(d[c0.peer == 0 ? 0 : 1], "from zero");
    assert_string_equal(d[c0.peer == 0 ? 1 : 0], "from one!");
    wait_req(0, s0);
    wait_req(1, s1);
}

/* Registered on both sides: written in place. */
static void test_registered(void **state)
{
    size_t n = 3u << 20;
    unsigned char *s = malloc(n), *d = calloc(1, n);
    void *ms, *md, *sr, *rr;
    weft_transport_completion_t c;

    (void)state;
    fill(s, n, 3);
    assert_int_equal(T->mem_register(ctx[0], s, n, WEFT_TRANSPORT_MEM_HOST, &ms), WEFT_SUCCESS);
    assert_int_equal(T->mem_register(ctx[1], d, n, WEFT_TRANSPORT_MEM_HOST, &md), WEFT_SUCCESS);
    assert_int_equal(T->irecv(ctx[1], 0, d, n, 5, 0, md, &rr), WEFT_SUCCESS);
    assert_int_equal(T->isend(ctx[0], 1, s, n, 5, ms, &sr), WEFT_SUCCESS);
    c = wait_req(1, rr);
    assert_int_equal(c.status, WEFT_SUCCESS);
    assert_memory_equal(d, s, n);
    /* Found by its address, though irecv's handle is not passed on. */
    assert_true(((struct wib_ctx *)ctx[1])->windows_in_place > 0);
    assert_int_equal(((struct wib_ctx *)ctx[1])->windows_staged, 0);
    wait_req(0, sr);
    T->mem_deregister(ctx[0], ms);
    T->mem_deregister(ctx[1], md);
    free(s);
    free(d);
}

/* GPU memory (host memory registered as CUDA, which the fake cannot tell
 * apart, registered by address as peermem would): read back through the
 * rank's own pair before the receive completes. */
static void test_gpu_flush(void **state)
{
    size_t n = 300000;
    unsigned char *s = malloc(n), *d = calloc(1, n);
    void *md, *sr, *rr;
    struct wib_ctx *c1;

    (void)state;
    fill(s, n, 5);
    assert_int_equal(T->mem_register(ctx[1], d, n, WEFT_TRANSPORT_MEM_CUDA, &md), WEFT_SUCCESS);
    assert_int_equal(T->irecv(ctx[1], 0, d, n, 4, 0, md, &rr), WEFT_SUCCESS);
    assert_int_equal(T->isend(ctx[0], 1, s, n, 4, NULL, &sr), WEFT_SUCCESS);
    assert_int_equal(wait_req(1, rr).status, WEFT_SUCCESS);
    assert_memory_equal(d, s, n);
    c1 = ctx[1];
    assert_int_equal(c1->peers[1].state, WIB_P_UP);
    assert_int_equal(c1->st.flushes, 1);
    wait_req(0, sr);
    T->mem_deregister(ctx[1], md);
    free(s);
    free(d);
}

static void test_put(void **state)
{
    size_t n = 1u << 20;
    unsigned char *s = malloc(n), *d = calloc(1, n + 64);
    unsigned char rkey[WEFT_TRANSPORT_ADDR_MAX];
    size_t rlen = sizeof(rkey);
    void *md, *req;
    weft_transport_completion_t c;

    (void)state;
    fill(s, n, 11);
    assert_int_equal(T->mem_register(ctx[1], d, n + 64, WEFT_TRANSPORT_MEM_HOST, &md),
                     WEFT_SUCCESS);
    assert_int_equal(T->mem_export(ctx[1], md, rkey, &rlen), WEFT_SUCCESS);
    assert_int_equal(T->put(ctx[0], 1, s, n, NULL, (uintptr_t)(d + 64), rkey, rlen, &req),
                     WEFT_SUCCESS);
    c = wait_req(0, req);
    assert_int_equal(c.status, WEFT_SUCCESS);
    assert_memory_equal(d + 64, s, n);
    /* Outside the region: refused at once. */
    assert_int_equal(T->put(ctx[0], 1, s, n, NULL, (uintptr_t)(d + 128), rkey, rlen, &req),
                     WEFT_ERR_INVALID_ARG);
    T->mem_deregister(ctx[1], md);
    free(s);
    free(d);
}

/* Both ways at once, many large messages, each side left alone for a
 * while: every window slot, lane receive and credit is in use at the
 * same time, and none runs out (the fake fails on the first RNR). */
static void test_both_ways(void **state)
{
    enum { N = 12, SZ = 150000 };
    unsigned char *s[2][N], *d[2][N];
    void *sr[2][N], *rr[2][N];

    (void)state;
    for (int r = 0; r < 2; r++)
        for (int i = 0; i < N; i++) {
            s[r][i] = malloc(SZ);
            d[r][i] = calloc(1, SZ);
            fill(s[r][i], SZ, (unsigned)(r * 100 + i));
            assert_int_equal(T->irecv(ctx[r], 1 - r, d[r][i], SZ, 1, 0, NULL, &rr[r][i]),
                             WEFT_SUCCESS);
        }
    for (int r = 0; r < 2; r++)
        for (int i = 0; i < N; i++)
            assert_int_equal(T->isend(ctx[r], 1 - r, s[r][i], SZ, 1, NULL, &sr[r][i]),
                             WEFT_SUCCESS);
    for (int round = 0; round < 2000; round++) {
        /* One side many times, then the other. */
        for (int k = 0; k < 1 + round % 7; k++)
            T->progress(ctx[round % 2]);
    }
    for (int r = 0; r < 2; r++)
        for (int i = 0; i < N; i++) {
            assert_int_equal(wait_req(r, rr[r][i]).status, WEFT_SUCCESS);
            assert_int_equal(wait_req(1 - r, sr[1 - r][i]).status, WEFT_SUCCESS);
            assert_memory_equal(d[r][i], s[1 - r][i], SZ);
            free(s[1 - r][i]);
            free(d[r][i]);
        }
}

/* Rank 1 finalizes: rank 0's receive from it fails, as a departure. */
static void test_departure(void **state)
{
    char buf[8];
    void *rr, *sr;
    weft_transport_completion_t c;

    (void)state;
    exchange(1, 0, 10, 10, 1, WEFT_SUCCESS);
    assert_int_equal(T->irecv(ctx[0], 1, buf, sizeof(buf), 3, 0, NULL, &rr), WEFT_SUCCESS);
    T->finalize(ctx[1]);
    ctx[1] = NULL;
    c = wait_req(0, rr);
    assert_int_equal(c.status, WEFT_ERR_PEER_LOST);
    assert_int_equal(T->isend(ctx[0], 1, buf, sizeof(buf), 3, NULL, &sr), WEFT_SUCCESS);
    c = wait_req(0, sr);
    assert_int_equal(c.status, WEFT_ERR_PEER_LOST);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_sizes, setup, teardown),
        cmocka_unit_test_setup_teardown(test_unexpected, setup, teardown),
        cmocka_unit_test_setup_teardown(test_truncated, setup, teardown),
        cmocka_unit_test_setup_teardown(test_self, setup, teardown),
        cmocka_unit_test_setup_teardown(test_order, setup, teardown),
        cmocka_unit_test_setup_teardown(test_any_source, setup, teardown),
        cmocka_unit_test_setup_teardown(test_registered, setup, teardown),
        cmocka_unit_test_setup_teardown(test_gpu_flush, setup, teardown),
        cmocka_unit_test_setup_teardown(test_put, setup, teardown),
        cmocka_unit_test_setup_teardown(test_both_ways, setup, teardown),
        cmocka_unit_test_setup_teardown(test_departure, setup, teardown),
    };

    fake_dl = dlopen(FAKE, RTLD_NOW | RTLD_LOCAL);
    if (!fake_dl) {
        fprintf(stderr, "cannot open the fake libibverbs: %s\n", dlerror());
        return 1;
    }
    return cmocka_run_group_tests(tests, NULL, NULL);
}
