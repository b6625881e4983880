/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_shm.c: the shared-memory transport. First its ring alone (wrap
 * around, full ring, odd record sizes, a producer and a consumer thread
 * at full speed), then the transport through its ABI with two contexts
 * ("ranks") in one process: eager, fragmented and single-copy messages,
 * truncation, any-peer matching, matched probes and cancels.
 */
#include "config.h"

#include <errno.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "weft/transport.h"
#include "plugins/shm/shm.h"

extern const weft_transport_v1_t weft_transport_v1;
static const weft_transport_v1_t *T = &weft_transport_v1;

/* ------------------------------------------------------------ the ring */

struct ring_fixture {
    struct shm_ring_ctl *ctl;
    unsigned char *data;
    struct shm_ring prod, cons;
};

static struct ring_fixture *ring_new(uint64_t cap)
{
    struct ring_fixture *f = calloc(1, sizeof(*f));

    assert_non_null(f);
    f->ctl = aligned_alloc(SHM_CACHELINE, sizeof(*f->ctl));
    f->data = malloc(cap);
    assert_non_null(f->ctl);
    assert_non_null(f->data);
    memset(f->ctl, 0, sizeof(*f->ctl));
    memset(f->data, 0xee, cap);
    weft__shm_ring_attach(&f->prod, f->ctl, f->data, cap, 1);
    weft__shm_ring_attach(&f->cons, f->ctl, f->data, cap, 0);
    return f;
}

static void ring_free(struct ring_fixture *f)
{
    free(f->ctl);
    free(f->data);
    free(f);
}

static void fill(unsigned char *p, size_t n, unsigned seed)
{
    for (size_t i = 0; i < n; i++)
        p[i] = (unsigned char)(seed * 131u + i * 7u + (i >> 8));
}

static void test_ring_layout(void **state)
{
    (void)state;
    /* Head and tail on lines of their own: no false sharing. */
    assert_int_equal(offsetof(struct shm_ring_ctl, tail) % SHM_CACHELINE, 0);
    assert_int_equal(offsetof(struct shm_ring_ctl, head) % SHM_CACHELINE, 0);
    assert_true(offsetof(struct shm_ring_ctl, head) - offsetof(struct shm_ring_ctl, tail) >=
                SHM_CACHELINE);
    assert_true(offsetof(struct shm_ring_ctl, producer_blocked) -
                offsetof(struct shm_ring_ctl, head) >= SHM_CACHELINE);
    assert_int_equal(offsetof(struct shm_seg_hdr, waiting) % SHM_CACHELINE, 0);
    assert_true(sizeof(struct shm_slot) <= SHM_PAGE);
}

/* Records of odd sizes go round a small ring many times, each checked
 * byte for byte after it crossed the end. */
static void test_ring_wrap_odd_sizes(void **state)
{
    struct ring_fixture *f = ring_new(256);
    unsigned char in[200], out[200];
    uint32_t hdr, got;

    (void)state;
    for (unsigned i = 0; i < 2000; i++) {
        size_t n = (i * 37u) % 180 + (i % 3);

        fill(in, n, i);
        hdr = (uint32_t)n;
        assert_int_equal(weft__shm_ring_push(&f->prod, &hdr, sizeof(hdr), in, n), 0);
        assert_int_equal(weft__shm_ring_avail(&f->cons), sizeof(hdr) + n);
        weft__shm_ring_peek(&f->cons, 0, &got, sizeof(got));
        assert_int_equal(got, n);
        memset(out, 0, sizeof(out));
        weft__shm_ring_peek(&f->cons, sizeof(hdr), out, n);
        assert_memory_equal(in, out, n);
        weft__shm_ring_consume(&f->cons, sizeof(hdr) + n);
    }
    assert_int_equal(weft__shm_ring_avail(&f->cons), 0);
    assert_true(f->ctl->tail > 100 * 256);
    ring_free(f);
}

/* A full ring refuses a record whole (nothing written), takes it once the
 * consumer gave back enough, and accepts a record of exactly its size. */
static void test_ring_full(void **state)
{
    struct ring_fixture *f = ring_new(128);
    unsigned char in[128], out[128];

    (void)state;
    fill(in, sizeof(in), 3);
    assert_int_equal(weft__shm_ring_push(&f->prod, in, 100, NULL, 0), 0);
    assert_int_equal(weft__shm_ring_space(&f->prod), 28);
    assert_int_equal(weft__shm_ring_push(&f->prod, in, 29, NULL, 0), -1);
    assert_int_equal(f->ctl->tail, 100);
    assert_int_equal(weft__shm_ring_push(&f->prod, in, 28, NULL, 0), 0);
    assert_int_equal(weft__shm_ring_space(&f->prod), 0);
    assert_int_equal(weft__shm_ring_push(&f->prod, in, 1, NULL, 0), -1);
    weft__shm_ring_consume(&f->cons, 50);
    assert_int_equal(weft__shm_ring_push(&f->prod, in + 1, 51, NULL, 0), -1);
    assert_int_equal(weft__shm_ring_push(&f->prod, in + 1, 50, NULL, 0), 0);
    /* What is left: 50 bytes of the first, the 28, then 50 that wrapped. */
    assert_int_equal(weft__shm_ring_avail(&f->cons), 128);
    weft__shm_ring_peek(&f->cons, 50 + 28, out, 50);
    assert_memory_equal(out, in + 1, 50);
    weft__shm_ring_consume(&f->cons, 128);
    assert_int_equal(weft__shm_ring_push(&f->prod, in, 128, NULL, 0), 0);
    weft__shm_ring_peek(&f->cons, 0, out, 128);
    assert_memory_equal(out, in, 128);
    ring_free(f);
}

/* A ring attached again (a reconnect) continues where its counters are. */
static void test_ring_reattach(void **state)
{
    struct ring_fixture *f = ring_new(64);
    struct shm_ring again;
    unsigned char in[40] = { 1, 2, 3 }, out[40];

    (void)state;
    assert_int_equal(weft__shm_ring_push(&f->prod, in, 40, NULL, 0), 0);
    weft__shm_ring_consume(&f->cons, 40);
    weft__shm_ring_attach(&again, f->ctl, f->data, 64, 1);
    fill(in, sizeof(in), 9);
    assert_int_equal(weft__shm_ring_push(&again, in, 40, NULL, 0), 0);
    assert_int_equal(weft__shm_ring_avail(&f->cons), 40);
    weft__shm_ring_peek(&f->cons, 0, out, 40);
    assert_memory_equal(in, out, 40);
    ring_free(f);
}

#define THREAD_RECORDS 200000

static void *producer_main(void *arg)
{
    struct ring_fixture *f = arg;
    unsigned char buf[300];

    for (uint32_t i = 0; i < THREAD_RECORDS; i++) {
        uint32_t hdr[2] = { i, (i * 7919u) % 250 };

        fill(buf, hdr[1], i);
        while (weft__shm_ring_push(&f->prod, hdr, sizeof(hdr), buf, hdr[1]) != 0)
            ;
    }
    return NULL;
}

/* A producer thread and this consumer at full speed on a ring a few
 * records long: every record arrives once, in order, intact. */
static void test_ring_threads(void **state)
{
    struct ring_fixture *f = ring_new(1024);
    unsigned char buf[300], want[300];
    pthread_t th;
    uint32_t next = 0;

    (void)state;
    assert_int_equal(pthread_create(&th, NULL, producer_main, f), 0);
    while (next < THREAD_RECORDS) {
        uint32_t hdr[2];

        if (weft__shm_ring_avail(&f->cons) < sizeof(hdr))
            continue;
        weft__shm_ring_peek(&f->cons, 0, hdr, sizeof(hdr));
        assert_int_equal(hdr[0], next);
        assert_true(weft__shm_ring_avail(&f->cons) >= sizeof(hdr) + hdr[1]);
        weft__shm_ring_peek(&f->cons, sizeof(hdr), buf, hdr[1]);
        fill(want, hdr[1], next);
        if (memcmp(buf, want, hdr[1]) != 0)
            fail_msg("record %u corrupted", next);
        weft__shm_ring_consume(&f->cons, sizeof(hdr) + hdr[1]);
        next++;
    }
    pthread_join(th, NULL);
    assert_int_equal(weft__shm_ring_avail(&f->cons), 0);
    ring_free(f);
}

/* ------------------------------------------------------------ two ranks */

#define NR 2
#define DEADLINE_MS 15000

static weft_transport_core_t cores[NR];
static void *ctx[NR];
static char job[64];
static char last_error[1024];
static const char *param_cma = "1";

static void core_log(int level, const char *plugin, const char *fmt, ...)
{
    (void)level;
    (void)plugin;
    (void)fmt;
}

static void core_set_error(const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(last_error, sizeof(last_error), fmt, ap);
    va_end(ap);
}

static const char *core_param(const char *name)
{
    if (!strcmp(name, "WEFT_SHM_CMA"))
        return param_cma;
    if (!strcmp(name, "WEFT_SHM_RING_SIZE"))
        return "8192";
    if (!strcmp(name, "WEFT_SHM_CMA_THRESHOLD"))
        return "4096";
    if (!strcmp(name, "WEFT_HOSTID"))
        return "test-node";
    return NULL;
}

static int64_t now_ms(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static int setup_ranks(void **state)
{
    unsigned char addr[NR][WEFT_TRANSPORT_ADDR_MAX];
    size_t len[NR];

    (void)state;
    snprintf(job, sizeof(job), "unit%d", (int)getpid());
    for (int r = 0; r < NR; r++) {
        cores[r].struct_size = sizeof(cores[r]);
        cores[r].rank = r;
        cores[r].size = NR;
        cores[r].job_id = job;
        cores[r].log = core_log;
        cores[r].set_error = core_set_error;
        cores[r].get_param = core_param;
        assert_int_equal(T->init(&cores[r], &ctx[r]), WEFT_SUCCESS);
        len[r] = sizeof(addr[r]);
        assert_int_equal(T->get_address(ctx[r], addr[r], &len[r]), WEFT_SUCCESS);
    }
    for (int r = 0; r < NR; r++) {
        weft_transport_reach_t reach;

        assert_int_equal(T->reach(ctx[r], addr[1 - r], len[1 - r], &reach), WEFT_SUCCESS);
        assert_int_equal(reach, WEFT_TRANSPORT_REACH_NODE);
    }
    /* Each rank creates its segment at its first connect: itself first,
     * so that one thread can connect both. */
    for (int r = 0; r < NR; r++)
        assert_int_equal(T->connect(ctx[r], r, addr[r], len[r]), WEFT_SUCCESS);
    for (int r = 0; r < NR; r++)
        assert_int_equal(T->connect(ctx[r], 1 - r, addr[1 - r], len[1 - r]), WEFT_SUCCESS);
    return 0;
}

static int setup_ranks_nocma(void **state)
{
    param_cma = "0";
    return setup_ranks(state);
}

static int teardown_ranks(void **state)
{
    (void)state;
    for (int r = 0; r < NR; r++)
        assert_int_equal(T->finalize(ctx[r]), WEFT_SUCCESS);
    param_cma = "1";
    return 0;
}

/* Progresses both ranks until req of rank r is done. */
static weft_transport_completion_t wait_req(int r, void *req)
{
    weft_transport_completion_t c;
    int64_t deadline = now_ms() + DEADLINE_MS;

    for (;;) {
        int done = 0;

        for (int i = 0; i < NR; i++)
            assert_int_equal(T->progress(ctx[i]), WEFT_SUCCESS);
        assert_int_equal(T->test(ctx[r], req, &done, &c), WEFT_SUCCESS);
        if (done)
            return c;
        if (now_ms() > deadline)
            fail_msg("request of rank %d did not complete", r);
    }
}

/* Sizes across the eager, fragmented and single-copy paths. */
static void test_sizes(void **state)
{
    static const size_t sizes[] = { 0, 1, 7, 2000, 2048, 2049, 4095, 4096, 100000, 1 << 20 };

    (void)state;
    for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
        size_t n = sizes[i];
        unsigned char *in = malloc(n + 1), *out = malloc(n + 1);
        void *sreq, *rreq;
        weft_transport_completion_t c;

        fill(in, n, (unsigned)i);
        memset(out, 0, n + 1);
        /* Half posted before the send, half after (unexpected). */
        if (i % 2)
            assert_int_equal(T->irecv(ctx[1], 0, out, n, 42 + i, 0, NULL, &rreq), 0);
        assert_int_equal(T->isend(ctx[0], 1, in, n, 42 + i, NULL, &sreq), 0);
        if (!(i % 2)) {
            for (int k = 0; k < 5; k++)
                T->progress(ctx[1]);
            assert_int_equal(T->irecv(ctx[1], 0, out, n, 42 + i, 0, NULL, &rreq), 0);
        }
        c = wait_req(1, rreq);
        assert_int_equal(c.status, WEFT_SUCCESS);
        assert_int_equal(c.len, n);
        assert_int_equal(c.peer, 0);
        assert_int_equal(c.tag, 42 + i);
        assert_memory_equal(in, out, n);
        c = wait_req(0, sreq);
        assert_int_equal(c.status, WEFT_SUCCESS);
        free(in);
        free(out);
    }
}

/* Messages of one peer and tag match in send order; a receive from any
 * peer with ignored tag bits takes the first one. */
static void test_order_and_any(void **state)
{
    uint32_t in[20], out[20];
    void *s[20], *r[20];

    (void)state;
    for (int i = 0; i < 20; i++) {
        in[i] = (uint32_t)i * 3 + 1;
        assert_int_equal(T->isend(ctx[0], 1, &in[i], sizeof(in[i]), 7, NULL, &s[i]), 0);
    }
    for (int i = 0; i < 20; i++) {
        weft_transport_completion_t c;

        assert_int_equal(T->irecv(ctx[1], WEFT_TRANSPORT_ANY_PEER, &out[i], sizeof(out[i]),
                                  i % 2 ? 7 : 0, i % 2 ? 0 : 0xff, NULL, &r[i]),
                         0);
        c = wait_req(1, r[i]);
        assert_int_equal(c.status, WEFT_SUCCESS);
        assert_int_equal(out[i], in[i]);
        assert_int_equal(c.peer, 0);
    }
    for (int i = 0; i < 20; i++)
        wait_req(0, s[i]);
}

/* Longer than the buffer: the buffer fills, the rest is dropped, the
 * status says TRUNCATED with the full length; on every path. */
static void test_truncation(void **state)
{
    static const size_t sizes[] = { 100, 3000, 50000 };

    (void)state;
    for (size_t i = 0; i < 3; i++) {
        unsigned char *in = malloc(sizes[i]), out[64];
        void *sreq, *rreq;
        weft_transport_completion_t c;

        fill(in, sizes[i], 5);
        assert_int_equal(T->irecv(ctx[1], 0, out, sizeof(out), 9, 0, NULL, &rreq), 0);
        assert_int_equal(T->isend(ctx[0], 1, in, sizes[i], 9, NULL, &sreq), 0);
        c = wait_req(1, rreq);
        assert_int_equal(c.status, WEFT_ERR_TRUNCATED);
        assert_int_equal(c.len, sizes[i]);
        assert_memory_equal(in, out, sizeof(out));
        assert_int_equal(wait_req(0, sreq).status, WEFT_SUCCESS);
        free(in);
    }
}

/* improbe takes the message out of the queue; a receive posted after it
 * does not see it; imrecv receives exactly it. A posted receive that is
 * cancelled completes ABORTED and matches nothing. */
static void test_mprobe_cancel(void **state)
{
    uint64_t a = 111, b = 222, got = 0;
    void *s1, *s2, *r, *msg = NULL;
    int found = 0;
    weft_transport_completion_t info, c;
    int64_t deadline = now_ms() + DEADLINE_MS;

    (void)state;
    assert_int_equal(T->irecv(ctx[1], 0, &got, sizeof(got), 5, 0, NULL, &r), 0);
    assert_int_equal(T->cancel(ctx[1], r), 0);
    c = wait_req(1, r);
    assert_int_equal(c.status, WEFT_ERR_ABORTED);
    assert_int_equal(T->isend(ctx[0], 1, &a, sizeof(a), 5, NULL, &s1), 0);
    assert_int_equal(T->isend(ctx[0], 1, &b, sizeof(b), 5, NULL, &s2), 0);
    while (!found && now_ms() < deadline) {
        T->progress(ctx[1]);
        assert_int_equal(T->improbe(ctx[1], WEFT_TRANSPORT_ANY_PEER, 5, 0, &found, &msg,
                                    &info), 0);
    }
    assert_true(found);
    assert_int_equal(info.len, sizeof(a));
    assert_int_equal(T->irecv(ctx[1], 0, &got, sizeof(got), 5, 0, NULL, &r), 0);
    c = wait_req(1, r);
    assert_int_equal(got, b);
    assert_int_equal(T->imrecv(ctx[1], msg, &got, sizeof(got), NULL, &r), 0);
    c = wait_req(1, r);
    assert_int_equal(c.status, WEFT_SUCCESS);
    assert_int_equal(got, a);
    wait_req(0, s1);
    wait_req(0, s2);
}

/* Messages to itself take the same path. */
static void test_self(void **state)
{
    unsigned char in[50000], out[50000];
    void *s, *r;

    (void)state;
    fill(in, sizeof(in), 77);
    assert_int_equal(T->isend(ctx[0], 0, in, sizeof(in), 3, NULL, &s), 0);
    assert_int_equal(T->irecv(ctx[0], 0, out, sizeof(out), 3, 0, NULL, &r), 0);
    assert_int_equal(wait_req(0, r).status, WEFT_SUCCESS);
    assert_int_equal(wait_req(0, s).status, WEFT_SUCCESS);
    assert_memory_equal(in, out, sizeof(in));
}

/* Bad arguments are refused with a reason, never a crash. */
static void test_bad_args(void **state)
{
    void *req;
    char b = 0;

    (void)state;
    assert_int_equal(T->isend(ctx[0], 5, &b, 1, 0, NULL, &req), WEFT_ERR_INVALID_ARG);
    assert_non_null(strstr(last_error, "rank 5"));
    assert_int_equal(T->isend(ctx[0], 1, NULL, 1, 0, NULL, &req), WEFT_ERR_INVALID_ARG);
    assert_non_null(strstr(last_error, "buf"));
    assert_int_equal(T->irecv(ctx[0], -7, &b, 1, 0, 0, NULL, &req), WEFT_ERR_INVALID_ARG);
    assert_int_equal(T->test(ctx[0], NULL, NULL, NULL), WEFT_ERR_INVALID_ARG);
    assert_int_equal(T->cancel(ctx[0], NULL), WEFT_ERR_INVALID_ARG);
}

/* Nothing of a context is left in /dev/shm once both attached and
 * progressed. */
static void test_unlinked(void **state)
{
    char path[256];

    (void)state;
    for (int r = 0; r < NR; r++)
        T->progress(ctx[r]);
    for (int r = 0; r < NR; r++) {
        weft__shm_seg_name(path, sizeof(path), job, r, (unsigned)getpid());
        assert_int_equal(access(path, F_OK), -1);
        {
            char full[300];

            snprintf(full, sizeof(full), "/dev/shm%s", path);
            assert_int_equal(access(full, F_OK), -1);
            snprintf(full, sizeof(full), "/dev/shm%s.wake", path);
            assert_int_equal(access(full, F_OK), -1);
        }
    }
}

int main(void)
{
    const struct CMUnitTest ring[] = {
        cmocka_unit_test(test_ring_layout),
        cmocka_unit_test(test_ring_wrap_odd_sizes),
        cmocka_unit_test(test_ring_full),
        cmocka_unit_test(test_ring_reattach),
        cmocka_unit_test(test_ring_threads),
    };
    const struct CMUnitTest ranks[] = {
        cmocka_unit_test(test_sizes),
        cmocka_unit_test(test_order_and_any),
        cmocka_unit_test(test_truncation),
        cmocka_unit_test(test_mprobe_cancel),
        cmocka_unit_test(test_self),
        cmocka_unit_test(test_bad_args),
        cmocka_unit_test(test_unlinked),
    };
    int failed = cmocka_run_group_tests_name("ring", ring, NULL, NULL);

    failed += cmocka_run_group_tests_name("ranks, cross memory attach", ranks, setup_ranks,
                                          teardown_ranks);
    failed += cmocka_run_group_tests_name("ranks, through the ring", ranks, setup_ranks_nocma,
                                          teardown_ranks);
    return failed;
}
