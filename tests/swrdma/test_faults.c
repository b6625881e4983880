/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_faults.c: fault injection by WEFT_SWRDMA_FAULTS. Each case runs
 * in a child, which reads the variable when it joins the fabric: the Nth
 * request failing with the status asked for, a delay before each request,
 * an RNR storm against rnr_retry, a port going down and up (with its
 * events, for every process of the host), and a process falling off the
 * fabric, seen from both sides.
 */
#include "config.h"

#include <errno.h>
#include <poll.h>
#include <setjmp.h>
#include <signal.h>
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

/* A child's world: a device, two connected QPs, a registered buffer. */
struct world {
    struct swt_dev d;
    struct ibv_cq *cq;
    struct ibv_qp *a, *b;
    char *buf;
    struct ibv_mr *mr;
};

static int world_up(struct world *w, const char *faults, const struct swt_conn *c)
{
    setenv("WEFT_SWRDMA_FAULTS", faults, 1);
    if (swt_open(&w->d))
        return -1;
    w->cq = ibv_create_cq(w->d.ctx, 63, NULL, NULL, 0);
    w->a = swt_qp(&w->d, w->cq, w->cq, 8, 1, 0);
    w->b = swt_qp(&w->d, w->cq, w->cq, 8, 1, 0);
    w->buf = aligned_alloc(4096, 65536);
    w->mr = ibv_reg_mr(w->d.pd, w->buf, 65536, SWT_ACCESS_ALL);
    struct swt_conn dflt = swt_conn_default();
    if (!w->cq || !w->a || !w->b || !w->mr || swt_pair(&w->d, w->a, w->b, c ? c : &dflt))
        return -1;
    return 0;
}

static void world_down(struct world *w)
{
    ibv_destroy_qp(w->a);
    ibv_destroy_qp(w->b);
    ibv_dereg_mr(w->mr);
    ibv_destroy_cq(w->cq);
    free(w->buf);
    swt_close(&w->d);
}

static int write_a(struct world *w, uint64_t id)
{
    return swt_send(w->a, IBV_WR_RDMA_WRITE, id, w->buf, 8, w->mr->lkey, IBV_SEND_SIGNALED,
                    (uintptr_t)w->buf + 4096, w->mr->rkey, 0);
}

static int fail_nth(void *arg)
{
    struct world w;
    if (world_up(&w, "fail_wr=3:rem_access", NULL))
        return 10;
    for (uint64_t i = 1; i <= 4; i++)
        if (write_a(&w, i))
            return 11;
    struct ibv_wc wc[4];
    if (swt_poll(w.cq, wc, 4, 2000) != 4)
        return 12;
    if (wc[0].status != IBV_WC_SUCCESS || wc[1].status != IBV_WC_SUCCESS ||
        wc[2].status != IBV_WC_REM_ACCESS_ERR || wc[2].wr_id != 3 ||
        wc[3].status != IBV_WC_WR_FLUSH_ERR)
        return 13;
    if (swt_state(w.a) != IBV_QPS_ERR)
        return 14;
    world_down(&w);
    return 0;
}

static void fail_wr(void **state)
{
    assert_int_equal(swt_child(fail_nth, NULL), 0);
}

static int delayed(void *arg)
{
    struct world w;
    if (world_up(&w, "delay_us=20000", NULL))
        return 10;
    uint64_t t0 = swt_ms();
    for (uint64_t i = 1; i <= 3; i++)
        if (write_a(&w, i))
            return 11;
    struct ibv_wc wc[3];
    if (swt_poll(w.cq, wc, 1, 2000) != 1 || swt_ms() - t0 < 20)
        return 12;
    if (swt_poll(w.cq, wc, 2, 2000) != 2 || swt_ms() - t0 < 60)
        return 13;
    world_down(&w);
    return 0;
}

static void delay(void **state)
{
    assert_int_equal(swt_child(delayed, NULL), 0);
}

static int storm(void *arg)
{
    struct swt_conn c = swt_conn_default();
    c.rnr_retry = (uint8_t)(uintptr_t)arg;
    struct world w;
    if (world_up(&w, "rnr_storm=3", &c))
        return 10;
    if (swt_recv(w.b, 7, w.buf + 8192, 64, w.mr->lkey) ||
        swt_send(w.a, IBV_WR_SEND, 1, w.buf, 8, w.mr->lkey, IBV_SEND_SIGNALED, 0, 0, 0))
        return 11;
    struct ibv_wc wc[2];
    int rc = 0;
    if (c.rnr_retry < 3) {
        /* the sender gave up; the responder, untouched, keeps its receive */
        if (swt_poll(w.cq, wc, 1, 2000) != 1 || wc[0].wr_id != 1 ||
            wc[0].status != IBV_WC_RNR_RETRY_EXC_ERR)
            rc = 12;
        else if (swt_poll(w.cq, wc, 1, 30) != 0 || swt_state(w.b) != IBV_QPS_RTS)
            rc = 13;
    } else if (swt_poll(w.cq, wc, 2, 2000) != 2 || wc[0].status != IBV_WC_SUCCESS ||
               wc[1].status != IBV_WC_SUCCESS) {
        rc = 14;
    }
    world_down(&w);
    return rc;
}

static void rnr_storm(void **state)
{
    assert_int_equal(swt_child(storm, (void *)2), 0);
    assert_int_equal(swt_child(storm, (void *)3), 0);
    assert_int_equal(swt_child(storm, (void *)7), 0);
}

static int next_port_event(struct ibv_context *ctx, enum ibv_event_type *type)
{
    struct pollfd p = { .fd = ctx->async_fd, .events = POLLIN };
    if (poll(&p, 1, 3000) != 1)
        return -1;
    struct ibv_async_event ev;
    if (ibv_get_async_event(ctx, &ev))
        return -1;
    *type = ev.event_type;
    int port = ev.element.port_num;
    ibv_ack_async_event(&ev);
    return port;
}

static int port_flap(void *arg)
{
    struct swt_conn c = swt_conn_default();
    c.timeout = 10;
    c.retry_cnt = 1;
    struct world w;
    if (world_up(&w, "port_down=1@30+200", &c))
        return 10;
    enum ibv_event_type t;
    if (next_port_event(w.d.ctx, &t) != 1 || t != IBV_EVENT_PORT_ERR)
        return 11;
    struct ibv_port_attr pa;
    if (ibv_query_port(w.d.ctx, 1, &pa) || pa.state != IBV_PORT_DOWN)
        return 12;
    struct ibv_wc wc;
    if (write_a(&w, 1) || swt_poll(w.cq, &wc, 1, 2000) != 1 || wc.status != IBV_WC_RETRY_EXC_ERR)
        return 13;
    if (next_port_event(w.d.ctx, &t) != 1 || t != IBV_EVENT_PORT_ACTIVE)
        return 14;
    if (ibv_query_port(w.d.ctx, 1, &pa) || pa.state != IBV_PORT_ACTIVE)
        return 15;
    world_down(&w);
    return 0;
}

static void port_down(void **state)
{
    assert_int_equal(swt_child(port_flap, NULL), 0);
}

/* The lost process: its second request finds it off the fabric. */
static int lost_one(void *arg)
{
    int sock = *(int *)arg;
    setenv("WEFT_SWRDMA_FAULTS", "lose_after_wr=1", 1);
    struct swt_dev t;
    if (swt_open(&t))
        return 10;
    struct ibv_cq *cq = ibv_create_cq(t.ctx, 15, NULL, NULL, 0);
    struct ibv_qp *qp = swt_qp(&t, cq, cq, 4, 1, 0);
    char *mem = aligned_alloc(4096, 4096);
    struct ibv_mr *mr = ibv_reg_mr(t.pd, mem, 4096, SWT_ACCESS_ALL);
    struct swt_addr mine, peer;
    swt_addr_of(&t, qp, 5, &mine);
    mine.addr = (uintptr_t)mem;
    mine.rkey = mr->rkey;
    if (write(sock, &mine, sizeof(mine)) != sizeof(mine) || read(sock, &peer, sizeof(peer)) != sizeof(peer))
        return 11;
    struct swt_conn c = swt_conn_default();
    c.timeout = 10;
    c.retry_cnt = 1;
    if (swt_connect(&t, qp, 5, &peer, &c))
        return 12;
    struct ibv_wc wc;
    if (swt_send(qp, IBV_WR_RDMA_WRITE, 1, mem, 8, mr->lkey, IBV_SEND_SIGNALED, peer.addr, peer.rkey, 0) ||
        swt_poll(cq, &wc, 1, 2000) != 1 || wc.status != IBV_WC_SUCCESS)
        return 13;
    if (swt_send(qp, IBV_WR_RDMA_WRITE, 2, mem, 8, mr->lkey, IBV_SEND_SIGNALED, peer.addr, peer.rkey, 0) ||
        swt_poll(cq, &wc, 1, 2000) != 1 || wc.status != IBV_WC_RETRY_EXC_ERR)
        return 14;
    char go = 1;
    if (write(sock, &go, 1) != 1 || read(sock, &go, 1) != 1)
        return 15;
    ibv_destroy_qp(qp);
    ibv_dereg_mr(mr);
    ibv_destroy_cq(cq);
    free(mem);
    swt_close(&t);
    return 0;
}

static void lose_peer(void **state)
{
    struct swt_dev d;
    assert_int_equal(swt_open(&d), 0);
    struct ibv_cq *cq = ibv_create_cq(d.ctx, 15, NULL, NULL, 0);
    struct ibv_qp *qp = swt_qp(&d, cq, cq, 4, 1, 0);
    char *mem = aligned_alloc(4096, 4096);
    struct ibv_mr *mr = ibv_reg_mr(d.pd, mem, 4096, SWT_ACCESS_ALL);
    int sv[2];
    assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
    fflush(NULL);
    pid_t pid = fork();
    if (pid == 0) {
        close(sv[0]);
        exit(lost_one(&sv[1]));
    }
    close(sv[1]);
    struct swt_addr mine, peer;
    assert_int_equal(read(sv[0], &peer, sizeof(peer)), sizeof(peer));
    swt_addr_of(&d, qp, 5, &mine);
    mine.addr = (uintptr_t)mem;
    mine.rkey = mr->rkey;
    assert_int_equal(write(sv[0], &mine, sizeof(mine)), sizeof(mine));
    struct swt_conn c = swt_conn_default();
    c.timeout = 10;
    c.retry_cnt = 1;
    assert_int_equal(swt_connect(&d, qp, 5, &peer, &c), 0);
    char go;
    assert_int_equal(read(sv[0], &go, 1), 1);
    /* the child is off the fabric now: nothing answers for it */
    struct ibv_wc wc;
    assert_int_equal(swt_send(qp, IBV_WR_RDMA_WRITE, 1, mem, 8, mr->lkey, IBV_SEND_SIGNALED,
                              peer.addr, peer.rkey, 0), 0);
    assert_int_equal(swt_poll(cq, &wc, 1, 2000), 1);
    assert_int_equal(wc.status, IBV_WC_RETRY_EXC_ERR);
    assert_int_equal(write(sv[0], &go, 1), 1);
    int st;
    assert_int_equal(waitpid(pid, &st, 0), pid);
    assert_true(WIFEXITED(st));
    assert_int_equal(WEXITSTATUS(st), 0);
    close(sv[0]);
    assert_int_equal(ibv_destroy_qp(qp), 0);
    assert_int_equal(ibv_dereg_mr(mr), 0);
    assert_int_equal(ibv_destroy_cq(cq), 0);
    free(mem);
    swt_close(&d);
}

static int bad_faults(void *arg)
{
    setenv("WEFT_SWRDMA_FAULTS", arg, 1);
    int n;
    return ibv_get_device_list(&n) == NULL ? 0 : 1;
}

static void bad_spec(void **state)
{
    assert_int_equal(swt_child(bad_faults, "fail_wr=0"), 0);
    assert_int_equal(swt_child(bad_faults, "fail_wr=2:nonsense"), 0);
    assert_int_equal(swt_child(bad_faults, "port_down=9@10"), 0);
    assert_int_equal(swt_child(bad_faults, "explode=1"), 0);
}

int main(void)
{
    swt_fabric("faults");
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(fail_wr), cmocka_unit_test(delay), cmocka_unit_test(rnr_storm),
        cmocka_unit_test(port_down), cmocka_unit_test(lose_peer), cmocka_unit_test(bad_spec),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
