/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_cq.c: ibv_resize_cq(3) as the man page and mlx5 give it: a size
 * of 1..max_cqe rounded up and written back to cq->cqe; the completions
 * already in the CQ kept, in order, none lost and none twice, also when
 * they wrap around the old ring; a size below the unpolled entries
 * refused with EINVAL; the new size deciding when the CQ overruns; the
 * arming kept; and a CQ grown and shrunk while a peer process keeps
 * writing with immediate and sending into a QP that completes on it.
 *
 * The CQ under test is the receive CQ of QP b: receive completions are
 * written by the requester's NIC when it executes a request, so once the
 * send completion of a later request on a arrives, every earlier one
 * has landed in it and the test knows how many entries it holds.
 */
#include "config.h"

#include <endian.h>
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
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "tests/swrdma/swtest.h"

#define BUF 65536
#define QDEPTH 1024            /* the device's default max_qp_wr */

static struct swt_dev d;
static struct ibv_device_attr dev_attr;
static struct ibv_cq *cq_s, *cq_r;      /* a's and b's sends; b's receives */
static struct ibv_qp *a, *b;
static char *buf;
static struct ibv_mr *mr;
static uint64_t next_id;                /* wr_id and immediate of the next message */

static int setup(void **state)
{
    if (swt_open(&d) || ibv_query_device(d.ctx, &dev_attr))
        return -1;
    cq_s = ibv_create_cq(d.ctx, 255, NULL, NULL, 0);
    buf = aligned_alloc(4096, BUF);
    mr = ibv_reg_mr(d.pd, buf, BUF, SWT_ACCESS_ALL);
    return cq_s && buf && mr ? 0 : -1;
}

static int teardown(void **state)
{
    ibv_dereg_mr(mr);
    ibv_destroy_cq(cq_s);
    free(buf);
    swt_close(&d);
    return 0;
}

/* How many async events of TYPE for ELEM come within WAIT_MS. */
static int events(enum ibv_event_type type, void *elem, int wait_ms)
{
    int n = 0;
    struct pollfd p = { .fd = d.ctx->async_fd, .events = POLLIN };
    while (poll(&p, 1, wait_ms) == 1) {
        struct ibv_async_event ev;
        assert_int_equal(ibv_get_async_event(d.ctx, &ev), 0);
        if (ev.event_type == type && (ev.element.qp == elem || (void *)ev.element.cq == elem))
            n++;
        ibv_ack_async_event(&ev);
        wait_ms = 0;
    }
    return n;
}

/* A pair a -> b whose receives complete on a fresh CQ of CQE entries. */
static void pair_on(int cqe, struct ibv_comp_channel *ch)
{
    cq_r = ibv_create_cq(d.ctx, cqe, NULL, ch, 0);
    assert_non_null(cq_r);
    a = swt_qp(&d, cq_s, cq_s, QDEPTH, 1, 0);
    b = swt_qp(&d, cq_s, cq_r, QDEPTH, 1, 0);
    assert_non_null(a);
    assert_non_null(b);
    struct swt_conn c = swt_conn_default();
    assert_int_equal(swt_pair(&d, a, b, &c), 0);
    next_id = 0;
}

static int unpair(void **state)
{
    ibv_destroy_qp(a);
    ibv_destroy_qp(b);
    a = b = NULL;
    struct ibv_wc wc[16];
    while (ibv_poll_cq(cq_s, 16, wc) > 0)
        ;
    assert_int_equal(ibv_destroy_cq(cq_r), 0);
    cq_r = NULL;
    events(IBV_EVENT_COMM_EST, NULL, 0);
    return 0;
}

/* N receives on b, N writes with immediate from a, then one signaled
 * write whose completion says that all N completions have landed. */
static void land(int n)
{
    for (int i = 0; i < n; i++) {
        uint64_t id = next_id + (uint64_t)i;
        assert_int_equal(swt_recv(b, id, NULL, 0, 0), 0);
        assert_int_equal(swt_send(a, IBV_WR_RDMA_WRITE_WITH_IMM, id, buf, 8, mr->lkey, 0,
                                  (uintptr_t)buf + 4096, mr->rkey, (uint32_t)id), 0);
    }
    next_id += (uint64_t)n;
    assert_int_equal(swt_send(a, IBV_WR_RDMA_WRITE, ~0ull, buf, 8, mr->lkey, IBV_SEND_SIGNALED,
                              (uintptr_t)buf + 8192, mr->rkey, 0), 0);
    struct ibv_wc wc;
    assert_int_equal(swt_poll(cq_s, &wc, 1, 5000), 1);
    assert_int_equal(wc.status, IBV_WC_SUCCESS);
    assert_int_equal(wc.wr_id, ~0ull);
}

/* Polls N completions of b's receives: they must be FIRST, FIRST + 1, .. */
static void expect(uint64_t first, int n)
{
    struct ibv_wc *wc = calloc((size_t)n + 1, sizeof(*wc));
    assert_non_null(wc);
    assert_int_equal(swt_poll(cq_r, wc, n, 5000), n);
    for (int i = 0; i < n; i++) {
        assert_int_equal(wc[i].status, IBV_WC_SUCCESS);
        assert_int_equal(wc[i].opcode, IBV_WC_RECV_RDMA_WITH_IMM);
        assert_int_equal(wc[i].wr_id, first + (uint64_t)i);
        assert_int_equal(be32toh(wc[i].imm_data), (uint32_t)(first + (uint64_t)i));
        assert_int_equal(wc[i].qp_num, b->qp_num);
    }
    free(wc);
}

/* ... and nothing more: no completion came out twice. */
static void expect_empty(void)
{
    struct ibv_wc wc;
    assert_int_equal(ibv_poll_cq(cq_r, 1, &wc), 0);
}

/* Entries that wrap around the old ring come out of the new one in
 * order, and the grown CQ takes what would have overrun the old one. */
static void grow_keeps_order(void **state)
{
    pair_on(15, NULL);
    assert_int_equal(cq_r->cqe, 15);
    land(12);
    expect(0, 8);
    land(10);             /* 14 pending, from slot 8 of 16 round to slot 5 */
    assert_int_equal(ibv_resize_cq(cq_r, 100), 0);
    assert_true(cq_r->cqe >= 100);
    assert_int_equal(cq_r->cqe, 127);      /* mlx5's rounding: 2^n - 1 */
    land(100);
    expect(8, 114);
    expect_empty();
    assert_int_equal(events(IBV_EVENT_CQ_ERR, cq_r, 50), 0);
    assert_int_equal(swt_state(b), IBV_QPS_RTS);
    /* and again from the new ring, after it has wrapped too */
    land(120);
    expect(122, 100);
    land(100);            /* 120 pending, from slot 86 of 128 round to slot 77 */
    assert_int_equal(ibv_resize_cq(cq_r, 300), 0);
    assert_int_equal(cq_r->cqe, 511);
    expect(222, 120);
    expect_empty();
}

/* ibv_resize_cq(3): cqe must be at least the number of unpolled entries.
 * A smaller size that holds them is taken; nothing is lost either way. */
static void shrink(void **state)
{
    pair_on(63, NULL);
    land(20);
    assert_int_equal(ibv_resize_cq(cq_r, 19), EINVAL);
    assert_int_equal(ibv_resize_cq(cq_r, 1), EINVAL);
    assert_int_equal(cq_r->cqe, 63);
    assert_int_equal(ibv_resize_cq(cq_r, 20), 0);
    assert_int_equal(cq_r->cqe, 31);
    expect(0, 20);
    expect_empty();
    assert_int_equal(ibv_resize_cq(cq_r, 1), 0);
    assert_int_equal(cq_r->cqe, 1);
    land(1);
    expect(20, 1);
    expect_empty();
    assert_int_equal(events(IBV_EVENT_CQ_ERR, cq_r, 50), 0);
}

/* 1..max_cqe, as ibv_create_cq(3) takes; a failed resize changes nothing. */
static void limits(void **state)
{
    pair_on(15, NULL);
    land(3);
    assert_int_equal(ibv_resize_cq(cq_r, 0), EINVAL);
    assert_int_equal(ibv_resize_cq(cq_r, -1), EINVAL);
    assert_int_equal(ibv_resize_cq(cq_r, dev_attr.max_cqe + 1), EINVAL);
    assert_int_equal(cq_r->cqe, 15);
    assert_int_equal(ibv_resize_cq(cq_r, dev_attr.max_cqe), 0);
    assert_true(cq_r->cqe >= dev_attr.max_cqe);
    expect(0, 3);
    expect_empty();
}

/* The new size decides when the CQ overruns: its capacity is usable, and
 * one more completion than it holds still raises IBV_EVENT_CQ_ERR. */
static void overrun_after_grow(void **state)
{
    pair_on(15, NULL);
    assert_int_equal(ibv_resize_cq(cq_r, 63), 0);
    assert_int_equal(cq_r->cqe, 63);
    land(63);
    assert_int_equal(events(IBV_EVENT_CQ_ERR, cq_r, 100), 0);
    assert_int_equal(swt_state(b), IBV_QPS_RTS);
    assert_int_equal(swt_recv(b, 63, NULL, 0, 0), 0);
    assert_int_equal(swt_send(a, IBV_WR_RDMA_WRITE_WITH_IMM, 63, buf, 8, mr->lkey, 0,
                              (uintptr_t)buf + 4096, mr->rkey, 63), 0);
    assert_int_equal(events(IBV_EVENT_CQ_ERR, cq_r, 2000), 1);
    expect(0, 63);        /* what fitted */
    expect_empty();
}

/* A CQ armed before a resize fires after it, on the new ring. */
static void arming_survives(void **state)
{
    struct ibv_comp_channel *ch = ibv_create_comp_channel(d.ctx);
    assert_non_null(ch);
    pair_on(15, ch);
    assert_int_equal(ibv_req_notify_cq(cq_r, 0), 0);
    assert_int_equal(ibv_resize_cq(cq_r, 200), 0);
    land(1);
    struct pollfd p = { .fd = ch->fd, .events = POLLIN };
    assert_int_equal(poll(&p, 1, 2000), 1);
    struct ibv_cq *got;
    void *ctx;
    assert_int_equal(ibv_get_cq_event(ch, &got, &ctx), 0);
    assert_ptr_equal(got, cq_r);
    ibv_ack_cq_events(cq_r, 1);
    expect(0, 1);
    expect_empty();
    unpair(state);
    assert_int_equal(ibv_destroy_comp_channel(ch), 0);
}

/* ---------------------------------------------------------------- two processes */
#define MSGS 20000
#define BATCH 32

/* The peer: sends with immediate (even messages) and writes with
 * immediate (odd ones) as fast as the parent's receives let it, in
 * batches whose last request is signaled. */
static int writer(void *arg)
{
    int sock = *(int *)arg;
    struct swt_dev t;
    if (swt_open(&t))
        return 10;
    struct ibv_cq *cq = ibv_create_cq(t.ctx, 63, NULL, NULL, 0);
    struct ibv_qp *qp = swt_qp(&t, cq, cq, 2 * BATCH, 1, 0);
    char *mem = aligned_alloc(4096, 4096);
    struct ibv_mr *m = mem ? ibv_reg_mr(t.pd, mem, 4096, SWT_ACCESS_ALL) : NULL;
    if (!cq || !qp || !m)
        return 11;
    struct swt_addr mine, peer;
    swt_addr_of(&t, qp, 5, &mine);
    if (write(sock, &mine, sizeof(mine)) != sizeof(mine) ||
        read(sock, &peer, sizeof(peer)) != sizeof(peer))
        return 12;
    struct swt_conn c = swt_conn_default();
    if (swt_connect(&t, qp, 5, &peer, &c))
        return 13;
    char go;
    if (read(sock, &go, 1) != 1)
        return 14;
    for (uint32_t i = 0; i < MSGS; i++) {
        unsigned flags = (i % BATCH == BATCH - 1 || i == MSGS - 1) ? IBV_SEND_SIGNALED : 0;
        /* a source of its own until the batch's completion is polled */
        char *src = mem + 4 * (i % 1024);
        memcpy(src, &i, sizeof(i));
        int rc = (i & 1)
                     ? swt_send(qp, IBV_WR_RDMA_WRITE_WITH_IMM, i, src, 4, m->lkey, flags,
                                peer.addr + 4 * (i % 1024), peer.rkey, i)
                     : swt_send(qp, IBV_WR_SEND_WITH_IMM, i, src, 4, m->lkey, flags, 0, 0, i);
        if (rc)
            return 15;
        if (flags) {
            struct ibv_wc wc;
            if (swt_poll(cq, &wc, 1, 20000) != 1 || wc.status != IBV_WC_SUCCESS || wc.wr_id != i)
                return 16;
        }
    }
    ibv_destroy_qp(qp);
    ibv_dereg_mr(m);
    ibv_destroy_cq(cq);
    free(mem);
    swt_close(&t);
    return 0;
}

/* Posts receives until RECV - POLLED reaches LIMIT: never more unpolled
 * completions than the CQ holds, so the CQ never overruns. */
static void refill(uint32_t *posted, uint32_t polled, uint32_t limit)
{
    while (*posted < MSGS && *posted - polled < limit) {
        uint32_t i = *posted;
        assert_int_equal(swt_recv(b, i, buf + 16 * (i % 1024), 16, mr->lkey), 0);
        (*posted)++;
    }
}

/* Polls up to MAX of the peer's messages, which must come in order;
 * sleeps a little when there is none, to leave the CPUs to the NICs. */
static int take(uint32_t *polled, int max)
{
    struct ibv_wc wc[64];
    int n = ibv_poll_cq(cq_r, max < 64 ? max : 64, wc);
    assert_true(n >= 0);
    for (int i = 0; i < n; i++, (*polled)++) {
        assert_int_equal(wc[i].status, IBV_WC_SUCCESS);
        assert_int_equal(wc[i].wr_id, *polled);
        assert_int_equal(be32toh(wc[i].imm_data), *polled);
        assert_int_equal(wc[i].opcode, (*polled & 1) ? IBV_WC_RECV_RDMA_WITH_IMM : IBV_WC_RECV);
    }
    if (n == 0) {
        struct timespec ts = { 0, 20000 };
        nanosleep(&ts, NULL);
    }
    return n;
}

static void concurrent_writer(void **state)
{
    /* sizes the CQ goes through while the peer writes: up, down, up */
    static const int sizes[] = { 15, 31, 63, 127, 255, 127, 63, 31, 15, 7, 3, 1, 3, 7 };
    cq_r = ibv_create_cq(d.ctx, sizes[0], NULL, NULL, 0);
    assert_non_null(cq_r);
    b = swt_qp(&d, cq_s, cq_r, QDEPTH, 1, 0);
    assert_non_null(b);
    int sv[2];
    assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
    fflush(NULL);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        close(sv[0]);
        exit(writer(&sv[1]));
    }
    close(sv[1]);
    struct swt_addr peer, mine;
    assert_int_equal(read(sv[0], &peer, sizeof(peer)), sizeof(peer));
    swt_addr_of(&d, b, 9, &mine);
    mine.addr = (uintptr_t)buf + 32768;
    mine.rkey = mr->rkey;
    assert_int_equal(write(sv[0], &mine, sizeof(mine)), sizeof(mine));
    struct swt_conn c = swt_conn_default();
    assert_int_equal(swt_connect(&d, b, 9, &peer, &c), 0);

    uint32_t posted = 0, polled = 0, limit = (uint32_t)cq_r->cqe;
    int resizes = 0;
    refill(&posted, polled, limit);
    char go = 1;
    assert_int_equal(write(sv[0], &go, 1), 1);
    uint64_t end = swt_ms() + 60000;
    while (polled < MSGS) {
        assert_true(swt_ms() < end);
        int want = sizes[(resizes + 1) % (int)(sizeof(sizes) / sizeof(sizes[0]))];
        /* before shrinking, let fewer receives be outstanding than the new
         * size holds; growing needs nothing: the peer keeps writing */
        uint32_t room = (uint32_t)want < limit ? (uint32_t)want : limit;
        while (posted - polled > room) {
            assert_true(swt_ms() < end);
            take(&polled, 64);
        }
        /* entries are typically pending right now, and more arriving */
        assert_int_equal(ibv_resize_cq(cq_r, want), 0);
        assert_true(cq_r->cqe >= want);
        limit = (uint32_t)cq_r->cqe;
        resizes++;
        refill(&posted, polled, limit);
        /* take a few, not all, so that the next resize finds entries */
        take(&polled, (int)(limit / 4 + 1) < 8 ? (int)(limit / 4 + 1) : 8);
        refill(&posted, polled, limit);
    }
    expect_empty();       /* nothing twice */
    assert_true(resizes >= 500);
    /* the data too: the last message to land in each place */
    for (uint32_t i = MSGS - 1024; i < MSGS; i++) {
        uint32_t v;
        memcpy(&v, buf + ((i & 1) ? 32768 + 4 * (i % 1024) : 16 * (i % 1024)), 4);
        assert_int_equal(v, i);
    }
    int st;
    assert_int_equal(waitpid(pid, &st, 0), pid);
    assert_true(WIFEXITED(st));
    assert_int_equal(WEXITSTATUS(st), 0);
    close(sv[0]);
    assert_int_equal(events(IBV_EVENT_CQ_ERR, cq_r, 0), 0);
    assert_int_equal(ibv_destroy_qp(b), 0);
    b = NULL;
    assert_int_equal(ibv_destroy_cq(cq_r), 0);
    cq_r = NULL;
    events(IBV_EVENT_COMM_EST, NULL, 0);
}

int main(void)
{
    swt_fabric("cq");
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_teardown(grow_keeps_order, unpair),
        cmocka_unit_test_teardown(shrink, unpair),
        cmocka_unit_test_teardown(limits, unpair),
        cmocka_unit_test_teardown(overrun_after_grow, unpair),
        cmocka_unit_test(arming_survives),
        cmocka_unit_test(concurrent_writer),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
