/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_errors.c: how requests fail, as ibv_poll_cq(3), ibv_post_send(3),
 * ibv_modify_qp(3) and ibv_reg_mr(3) name the failures: local and remote
 * key, range, PD and access errors (with the responder's QP in error and
 * its IBV_EVENT_QP_ACCESS_ERR), messages too long, RNR with its timer and
 * retry count (7 for ever), no answer (unknown QP number or GID, PSN
 * mismatch, responder not ready, ACKs that cannot come back, a dead
 * peer) after timeout and retry_cnt, read and atomic depth, path MTU,
 * CQ overrun, the device's limits, registration checks and
 * RLIMIT_MEMLOCK, objects still in use, and bad work requests.
 */
#define _GNU_SOURCE
#include "config.h"

#include <errno.h>
#include <linux/capability.h>
#include <poll.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "tests/swrdma/swtest.h"

#define BUF 65536

static struct swt_dev d;
static struct ibv_qp *a, *b;
static struct swt_bufs f;

static int setup(void **state)
{
    return swt_bufs_open(&d, BUF, &f);
}

static int teardown(void **state)
{
    swt_bufs_close(&d, &f);
    return 0;
}

static void drain(struct ibv_cq *cq)
{
    struct ibv_wc wc[16];
    while (ibv_poll_cq(cq, 16, wc) > 0)
        ;
}

/* Acknowledges every async event; returns how many of TYPE on QP there were. */
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

static void unpair(void)
{
    if (a)
        ibv_destroy_qp(a);
    if (b)
        ibv_destroy_qp(b);
    a = b = NULL;
    drain(f.cq_a);
    drain(f.cq_b);
    events(IBV_EVENT_COMM_EST, NULL, 0);
}

/* A fresh pair; CA and CB are a's and b's connection attributes. */
static void pair_with(const struct swt_conn *ca, const struct swt_conn *cb)
{
    unpair();
    a = swt_qp(&d, f.cq_a, f.cq_a, 8, 2, 0);
    b = swt_qp(&d, f.cq_b, f.cq_b, 8, 2, 0);
    assert_non_null(a);
    assert_non_null(b);
    struct swt_addr aa, ba;
    swt_addr_of(&d, a, 100, &aa);
    swt_addr_of(&d, b, 200, &ba);
    assert_int_equal(swt_connect(&d, a, 100, &ba, ca), 0);
    assert_int_equal(swt_connect(&d, b, 200, &aa, cb), 0);
}

static void pair(void)
{
    struct swt_conn c = swt_conn_default();
    pair_with(&c, &c);
}

static int end_teardown(void **state)
{
    unpair();
    return 0;
}

/* Posts one request on a and returns the status of its completion. */
static enum ibv_wc_status one(enum ibv_wr_opcode op, void *local, uint32_t len, uint32_t lkey,
                              uint64_t raddr, uint32_t rkey)
{
    assert_int_equal(swt_send(a, op, 42, local, len, lkey, IBV_SEND_SIGNALED, raddr, rkey, 0), 0);
    struct ibv_wc wc;
    assert_int_equal(swt_poll(f.cq_a, &wc, 1, 5000), 1);
    assert_int_equal(wc.wr_id, 42);
    assert_int_equal(wc.qp_num, a->qp_num);
    return wc.status;
}

static void local_keys(void **state)
{
    pair();
    assert_int_equal(swt_recv(b, 1, f.buf_b, 64, f.mr_b->lkey), 0);
    assert_int_equal(one(IBV_WR_SEND, f.buf_a, 8, f.mr_a->lkey ^ 0x100, 0, 0), IBV_WC_LOC_PROT_ERR);
    assert_int_equal(swt_state(a), IBV_QPS_ERR);
    /* what follows is flushed */
    assert_int_equal(one(IBV_WR_SEND, f.buf_a, 8, f.mr_a->lkey, 0, 0), IBV_WC_WR_FLUSH_ERR);

    /* a key of another PD of the same process */
    struct ibv_pd *pd2 = ibv_alloc_pd(d.ctx);
    struct ibv_mr *other = ibv_reg_mr(pd2, f.buf_a, 4096, SWT_ACCESS_ALL);
    assert_non_null(other);
    pair();
    assert_int_equal(one(IBV_WR_RDMA_WRITE, f.buf_a, 8, other->lkey, (uintptr_t)f.buf_b, f.mr_b->rkey),
                     IBV_WC_LOC_PROT_ERR);
    assert_int_equal(ibv_dereg_mr(other), 0);
    assert_int_equal(ibv_dealloc_pd(pd2), 0);

    /* past the end of the region */
    pair();
    assert_int_equal(one(IBV_WR_RDMA_WRITE, f.buf_a + BUF - 4, 8, f.mr_a->lkey, (uintptr_t)f.buf_b, f.mr_b->rkey),
                     IBV_WC_LOC_PROT_ERR);

    /* a read lands in local memory: its region needs local write */
    struct ibv_mr *ro = ibv_reg_mr(d.pd, f.buf_a, 4096, IBV_ACCESS_REMOTE_READ);
    assert_non_null(ro);
    pair();
    assert_int_equal(one(IBV_WR_RDMA_READ, f.buf_a, 8, ro->lkey, (uintptr_t)f.buf_b, f.mr_b->rkey),
                     IBV_WC_LOC_PROT_ERR);
    assert_int_equal(ibv_dereg_mr(ro), 0);
}

/* REM_ACCESS_ERR here, the responder in error with an access event. */
static void expect_remote_access(enum ibv_wc_status st)
{
    assert_int_equal(st, IBV_WC_REM_ACCESS_ERR);
    assert_int_equal(swt_state(a), IBV_QPS_ERR);
    assert_int_equal(events(IBV_EVENT_QP_ACCESS_ERR, b, 2000), 1);
    assert_int_equal(swt_state(b), IBV_QPS_ERR);
}

static void remote_keys(void **state)
{
    pair();
    expect_remote_access(one(IBV_WR_RDMA_WRITE, f.buf_a, 8, f.mr_a->lkey, (uintptr_t)f.buf_b, f.mr_b->rkey ^ 0x100));
    memset(f.buf_b, 0, 64);

    /* a region without remote write */
    struct ibv_mr *ro = ibv_reg_mr(d.pd, f.buf_b, 4096, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_READ);
    pair();
    memset(f.buf_a, 'x', 8);
    expect_remote_access(one(IBV_WR_RDMA_WRITE, f.buf_a, 8, f.mr_a->lkey, (uintptr_t)f.buf_b, ro->rkey));
    assert_int_equal(f.buf_b[0], 0);     /* nothing written */
    pair();
    /* ... but it may be read */
    assert_int_equal(one(IBV_WR_RDMA_READ, f.buf_a, 8, f.mr_a->lkey, (uintptr_t)f.buf_b, ro->rkey), IBV_WC_SUCCESS);
    assert_int_equal(ibv_dereg_mr(ro), 0);

    /* a responder QP that does not allow remote writes */
    struct swt_conn c = swt_conn_default(), cb = c;
    cb.access = IBV_ACCESS_REMOTE_READ;
    pair_with(&c, &cb);
    expect_remote_access(one(IBV_WR_RDMA_WRITE, f.buf_a, 8, f.mr_a->lkey, (uintptr_t)f.buf_b, f.mr_b->rkey));
    pair_with(&c, &cb);
    assert_int_equal(one(IBV_WR_RDMA_READ, f.buf_a, 8, f.mr_a->lkey, (uintptr_t)f.buf_b, f.mr_b->rkey), IBV_WC_SUCCESS);

    /* past the end of the remote region */
    pair();
    expect_remote_access(one(IBV_WR_RDMA_WRITE, f.buf_a, 16, f.mr_a->lkey, (uintptr_t)f.buf_b + BUF - 8, f.mr_b->rkey));

    /* a key of another PD than the responder QP's */
    struct ibv_pd *pd2 = ibv_alloc_pd(d.ctx);
    struct ibv_mr *other = ibv_reg_mr(pd2, f.buf_b, 4096, SWT_ACCESS_ALL);
    pair();
    expect_remote_access(one(IBV_WR_RDMA_WRITE, f.buf_a, 8, f.mr_a->lkey, (uintptr_t)f.buf_b, other->rkey));
    assert_int_equal(ibv_dereg_mr(other), 0);
    assert_int_equal(ibv_dealloc_pd(pd2), 0);

    /* a deregistered key stops working at once */
    struct ibv_mr *gone = ibv_reg_mr(d.pd, f.buf_b + 8192, 4096, SWT_ACCESS_ALL);
    uint32_t rkey = gone->rkey;
    pair();
    assert_int_equal(one(IBV_WR_RDMA_WRITE, f.buf_a, 8, f.mr_a->lkey, (uintptr_t)f.buf_b + 8192, rkey), IBV_WC_SUCCESS);
    assert_int_equal(ibv_dereg_mr(gone), 0);
    expect_remote_access(one(IBV_WR_RDMA_WRITE, f.buf_a, 8, f.mr_a->lkey, (uintptr_t)f.buf_b + 8192, rkey));
    /* and a key registered again at the same place is a new key */
    gone = ibv_reg_mr(d.pd, f.buf_b + 8192, 4096, SWT_ACCESS_ALL);
    assert_int_not_equal(gone->rkey, rkey);
    assert_int_equal(ibv_dereg_mr(gone), 0);
}

static void too_long(void **state)
{
    pair();
    assert_int_equal(swt_recv(b, 7, f.buf_b, 50, f.mr_b->lkey), 0);
    assert_int_equal(swt_recv(b, 8, f.buf_b + 64, 50, f.mr_b->lkey), 0);
    assert_int_equal(one(IBV_WR_SEND, f.buf_a, 100, f.mr_a->lkey, 0, 0), IBV_WC_REM_INV_REQ_ERR);
    struct ibv_wc wc[2];
    assert_int_equal(swt_poll(f.cq_b, wc, 2, 2000), 2);
    assert_int_equal(wc[0].wr_id, 7);
    assert_int_equal(wc[0].status, IBV_WC_LOC_LEN_ERR);
    assert_int_equal(wc[0].qp_num, b->qp_num);
    assert_int_equal(wc[1].wr_id, 8);
    assert_int_equal(wc[1].status, IBV_WC_WR_FLUSH_ERR);
    assert_int_equal(swt_state(a), IBV_QPS_ERR);
    assert_int_equal(swt_state(b), IBV_QPS_ERR);
    /* bad keys in the receive: the responder's protection error */
    pair();
    assert_int_equal(swt_recv(b, 9, f.buf_b, 64, f.mr_b->lkey ^ 0x100), 0);
    assert_int_equal(one(IBV_WR_SEND, f.buf_a, 10, f.mr_a->lkey, 0, 0), IBV_WC_REM_OP_ERR);
    assert_int_equal(swt_poll(f.cq_b, wc, 1, 2000), 1);
    assert_int_equal(wc[0].wr_id, 9);
    assert_int_equal(wc[0].status, IBV_WC_LOC_PROT_ERR);
}

static void rnr(void **state)
{
    struct swt_conn ca = swt_conn_default(), cb = ca;
    ca.rnr_retry = 2;
    cb.min_rnr_timer = 14;     /* 1.28 ms, the responder's to ask for */
    pair_with(&ca, &cb);
    uint64_t t0 = swt_ms();
    assert_int_equal(one(IBV_WR_SEND, f.buf_a, 8, f.mr_a->lkey, 0, 0), IBV_WC_RNR_RETRY_EXC_ERR);
    assert_true(swt_ms() - t0 >= 2);
    assert_int_equal(swt_state(a), IBV_QPS_ERR);
    /* an immediate needs a receive too */
    pair_with(&ca, &cb);
    assert_int_equal(one(IBV_WR_RDMA_WRITE_WITH_IMM, f.buf_a, 8, f.mr_a->lkey, (uintptr_t)f.buf_b, f.mr_b->rkey),
                     IBV_WC_RNR_RETRY_EXC_ERR);
    /* 7: for ever, until a receive comes */
    ca.rnr_retry = 7;
    pair_with(&ca, &cb);
    assert_int_equal(swt_send(a, IBV_WR_SEND, 5, f.buf_a, 8, f.mr_a->lkey, IBV_SEND_SIGNALED, 0, 0, 0), 0);
    struct ibv_wc wc;
    assert_int_equal(swt_poll(f.cq_a, &wc, 1, 60), 0);
    assert_int_equal(swt_recv(b, 6, f.buf_b, 64, f.mr_b->lkey), 0);
    assert_int_equal(swt_poll(f.cq_a, &wc, 1, 2000), 1);
    assert_int_equal(wc.status, IBV_WC_SUCCESS);
}

/* No answer: timeout 10 is 4.19 ms, retry_cnt 2 gives three tries. */
static void no_answer(void **state)
{
    struct swt_conn c = swt_conn_default();
    c.timeout = 10;
    c.retry_cnt = 2;
    /* an unknown QP number */
    unpair();
    a = swt_qp(&d, f.cq_a, f.cq_a, 8, 2, 0);
    struct swt_addr to;
    swt_addr_of(&d, a, 1, &to);
    to.qpn = 0xabcdef;
    assert_int_equal(swt_connect(&d, a, 1, &to, &c), 0);
    uint64_t t0 = swt_ms();
    assert_int_equal(one(IBV_WR_RDMA_WRITE, f.buf_a, 8, f.mr_a->lkey, (uintptr_t)f.buf_b, f.mr_b->rkey),
                     IBV_WC_RETRY_EXC_ERR);
    uint64_t took = swt_ms() - t0;
    assert_true(took >= 12);
    assert_true(took < 3000);
    assert_int_equal(swt_state(a), IBV_QPS_ERR);

    /* a GID nobody has */
    unpair();
    a = swt_qp(&d, f.cq_a, f.cq_a, 8, 2, 0);
    b = swt_qp(&d, f.cq_b, f.cq_b, 8, 2, 0);
    swt_addr_of(&d, b, 1, &to);
    memset(to.gid.raw, 0, 16);
    to.gid.raw[10] = to.gid.raw[11] = 0xff;
    to.gid.raw[12] = 203;
    to.gid.raw[14] = 113;
    to.gid.raw[15] = 9;
    assert_int_equal(swt_connect(&d, a, 1, &to, &c), 0);
    assert_int_equal(one(IBV_WR_RDMA_WRITE, f.buf_a, 8, f.mr_a->lkey, (uintptr_t)f.buf_b, f.mr_b->rkey),
                     IBV_WC_RETRY_EXC_ERR);

    /* the responder expects another PSN: nothing is executed */
    unpair();
    a = swt_qp(&d, f.cq_a, f.cq_a, 8, 2, 0);
    b = swt_qp(&d, f.cq_b, f.cq_b, 8, 2, 0);
    struct swt_addr aa, ba;
    swt_addr_of(&d, a, 100, &aa);
    swt_addr_of(&d, b, 200, &ba);
    aa.psn = 101;
    assert_int_equal(swt_connect(&d, a, 100, &ba, &c), 0);
    assert_int_equal(swt_connect(&d, b, 200, &aa, &c), 0);
    memset(f.buf_b, 0, 16);
    memset(f.buf_a, 'p', 16);
    assert_int_equal(one(IBV_WR_RDMA_WRITE, f.buf_a, 16, f.mr_a->lkey, (uintptr_t)f.buf_b, f.mr_b->rkey),
                     IBV_WC_RETRY_EXC_ERR);
    assert_int_equal(f.buf_b[0], 0);

    /* a responder still in Init drops what comes */
    unpair();
    a = swt_qp(&d, f.cq_a, f.cq_a, 8, 2, 0);
    b = swt_qp(&d, f.cq_b, f.cq_b, 8, 2, 0);
    swt_addr_of(&d, b, 200, &ba);
    assert_int_equal(swt_connect(&d, a, 100, &ba, &c), 0);
    assert_int_equal(one(IBV_WR_RDMA_WRITE, f.buf_a, 16, f.mr_a->lkey, (uintptr_t)f.buf_b, f.mr_b->rkey),
                     IBV_WC_RETRY_EXC_ERR);

    /* the responder's ACKs go to another QP: the write lands, the
     * requester never hears of it */
    unpair();
    a = swt_qp(&d, f.cq_a, f.cq_a, 8, 2, 0);
    b = swt_qp(&d, f.cq_b, f.cq_b, 8, 2, 0);
    swt_addr_of(&d, a, 100, &aa);
    swt_addr_of(&d, b, 200, &ba);
    aa.qpn = b->qp_num;     /* b talks to itself */
    assert_int_equal(swt_connect(&d, a, 100, &ba, &c), 0);
    assert_int_equal(swt_connect(&d, b, 200, &aa, &c), 0);
    memset(f.buf_b, 0, 16);
    assert_int_equal(one(IBV_WR_RDMA_WRITE, f.buf_a, 16, f.mr_a->lkey, (uintptr_t)f.buf_b, f.mr_b->rkey),
                     IBV_WC_RETRY_EXC_ERR);
    assert_int_equal(f.buf_b[0], 'p');
}

static int doomed_peer(void *arg)
{
    int sock = *(int *)arg;
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
    if (swt_connect(&t, qp, 5, &peer, &c))
        return 12;
    char go = 1;
    if (write(sock, &go, 1) != 1)
        return 13;
    pause();        /* killed here */
    return 0;
}

static void dead_peer(void **state)
{
    unpair();
    int sv[2];
    assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
    fflush(NULL);
    pid_t pid = fork();
    if (pid == 0) {
        close(sv[0]);
        exit(doomed_peer(&sv[1]));
    }
    close(sv[1]);
    struct swt_addr peer, mine;
    assert_int_equal(read(sv[0], &peer, sizeof(peer)), sizeof(peer));
    a = swt_qp(&d, f.cq_a, f.cq_a, 8, 2, 0);
    swt_addr_of(&d, a, 5, &mine);
    assert_int_equal(write(sv[0], &mine, sizeof(mine)), sizeof(mine));
    struct swt_conn c = swt_conn_default();
    c.timeout = 10;
    c.retry_cnt = 1;
    assert_int_equal(swt_connect(&d, a, 5, &peer, &c), 0);
    char go;
    assert_int_equal(read(sv[0], &go, 1), 1);
    assert_int_equal(one(IBV_WR_RDMA_WRITE, f.buf_a, 8, f.mr_a->lkey, peer.addr, peer.rkey), IBV_WC_SUCCESS);
    kill(pid, SIGKILL);
    assert_int_equal(waitpid(pid, NULL, 0), pid);
    close(sv[0]);
    assert_int_equal(one(IBV_WR_RDMA_WRITE, f.buf_a, 8, f.mr_a->lkey, peer.addr, peer.rkey), IBV_WC_RETRY_EXC_ERR);
}

static void read_depth_and_mtu(void **state)
{
    /* the responder takes no reads */
    struct swt_conn ca = swt_conn_default(), cb = ca;
    cb.rd_atomic = 0;
    pair_with(&ca, &cb);
    assert_int_equal(one(IBV_WR_RDMA_READ, f.buf_a, 8, f.mr_a->lkey, (uintptr_t)f.buf_b, f.mr_b->rkey),
                     IBV_WC_REM_INV_REQ_ERR);
    assert_int_equal(events(IBV_EVENT_QP_REQ_ERR, b, 2000), 1);
    /* the requester may not issue any */
    ca.rd_atomic = 0;
    cb.rd_atomic = 4;
    pair_with(&ca, &cb);
    assert_int_equal(one(IBV_WR_RDMA_READ, f.buf_a, 8, f.mr_a->lkey, (uintptr_t)f.buf_b, f.mr_b->rkey),
                     IBV_WC_LOC_QP_OP_ERR);
    /* an atomic on an address not 8-byte aligned */
    pair();
    struct ibv_sge sge = { (uintptr_t)f.buf_a, 8, f.mr_a->lkey };
    struct ibv_send_wr wr = { .wr_id = 42, .sg_list = &sge, .num_sge = 1,
                              .opcode = IBV_WR_ATOMIC_FETCH_AND_ADD, .send_flags = IBV_SEND_SIGNALED },
                       *bad;
    wr.wr.atomic.remote_addr = (uintptr_t)f.buf_b + 4;
    wr.wr.atomic.rkey = f.mr_b->rkey;
    assert_int_equal(ibv_post_send(a, &wr, &bad), 0);
    struct ibv_wc wc;
    assert_int_equal(swt_poll(f.cq_a, &wc, 1, 2000), 1);
    assert_int_equal(wc.status, IBV_WC_REM_INV_REQ_ERR);
    /* packets longer than the responder's path MTU */
    ca = cb = swt_conn_default();
    ca.mtu = IBV_MTU_1024;
    cb.mtu = IBV_MTU_256;
    pair_with(&ca, &cb);
    assert_int_equal(one(IBV_WR_RDMA_WRITE, f.buf_a, 600, f.mr_a->lkey, (uintptr_t)f.buf_b, f.mr_b->rkey),
                     IBV_WC_REM_INV_REQ_ERR);
}

static void cq_overrun(void **state)
{
    struct ibv_cq *small = ibv_create_cq(d.ctx, 1, NULL, NULL, 0);
    assert_non_null(small);
    assert_true(small->cqe >= 1);
    unpair();
    a = swt_qp(&d, small, small, 8, 1, 0);
    b = swt_qp(&d, f.cq_b, f.cq_b, 8, 1, 0);
    struct swt_conn c = swt_conn_default();
    assert_int_equal(swt_pair(&d, a, b, &c), 0);
    for (int i = 0; i <= small->cqe; i++)
        assert_int_equal(swt_send(a, IBV_WR_RDMA_WRITE, (uint64_t)i, f.buf_a, 8, f.mr_a->lkey,
                                  IBV_SEND_SIGNALED, (uintptr_t)f.buf_b, f.mr_b->rkey, 0), 0);
    assert_int_equal(events(IBV_EVENT_CQ_ERR, small, 2000), 1);
    struct ibv_wc wc[8];
    assert_int_equal(ibv_poll_cq(small, 8, wc), small->cqe);   /* what fitted */
    unpair();
    assert_int_equal(ibv_destroy_cq(small), 0);
}

static int limits_child(void *arg)
{
    swt_fabric("errlim");
    setenv("WEFT_SWRDMA_CONFIG", "max_mr=2,max_cq=2,max_pd=2,max_cqe=15,max_qp_wr=8,max_sge=2", 1);
    struct swt_dev t;
    if (swt_open(&t))
        return 10;
    static char mem[3][4096];
    struct ibv_mr *m1 = ibv_reg_mr(t.pd, mem[0], 4096, 0), *m2 = ibv_reg_mr(t.pd, mem[1], 4096, 0);
    struct ibv_mr *m3 = ibv_reg_mr(t.pd, mem[2], 4096, 0);
    if (!m1 || !m2 || m3 || errno != ENOMEM)
        return 11;
    ibv_dereg_mr(m1);
    if (!(m1 = ibv_reg_mr(t.pd, mem[2], 4096, 0)))
        return 12;
    struct ibv_cq *c1 = ibv_create_cq(t.ctx, 15, NULL, NULL, 0), *c2 = ibv_create_cq(t.ctx, 1, NULL, NULL, 0);
    struct ibv_cq *c3 = ibv_create_cq(t.ctx, 1, NULL, NULL, 0);
    if (!c1 || !c2 || c3 || errno != ENOMEM)
        return 13;
    struct ibv_pd *p2 = ibv_alloc_pd(t.ctx), *p3 = ibv_alloc_pd(t.ctx);
    if (!p2 || p3 || errno != ENOMEM)
        return 14;
    struct ibv_qp *q = swt_qp(&t, c1, c1, 9, 1, 0);
    if (q || errno != EINVAL)
        return 15;
    q = swt_qp(&t, c1, c1, 8, 3, 0);
    if (q || errno != EINVAL)
        return 16;
    ibv_dereg_mr(m1);
    ibv_dereg_mr(m2);
    ibv_destroy_cq(c1);
    ibv_destroy_cq(c2);
    ibv_dealloc_pd(p2);
    swt_close(&t);
    return 0;
}

static void limits(void **state)
{
    assert_int_equal(swt_child(limits_child, NULL), 0);
}

static void registration(void **state)
{
    char *p = mmap(NULL, 16384, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    assert_true(p != MAP_FAILED);
    assert_null(ibv_reg_mr(d.pd, p, 4096, IBV_ACCESS_REMOTE_WRITE));
    assert_int_equal(errno, EINVAL);
    assert_null(ibv_reg_mr(d.pd, p, 4096, IBV_ACCESS_REMOTE_ATOMIC));
    assert_int_equal(errno, EINVAL);
    assert_null(ibv_reg_mr(d.pd, p, 4096, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_ON_DEMAND));
    assert_int_equal(errno, EOPNOTSUPP);
    assert_null(ibv_reg_mr(d.pd, p, 0, IBV_ACCESS_LOCAL_WRITE));
    assert_int_equal(errno, EINVAL);
    /* the IOVA keeps the address's offset in its page */
    assert_null(ibv_reg_mr_iova2(d.pd, p + 8, 64, 0x10000, IBV_ACCESS_LOCAL_WRITE));
    assert_int_equal(errno, EINVAL);
    struct ibv_mr *m = ibv_reg_mr_iova2(d.pd, p + 8, 64, 0x10008, IBV_ACCESS_LOCAL_WRITE);
    assert_non_null(m);
    assert_int_equal(ibv_dereg_mr(m), 0);
    /* read-only memory: registered for reading, not for writing */
    assert_int_equal(mprotect(p + 4096, 4096, PROT_READ), 0);
    m = ibv_reg_mr(d.pd, p + 4096, 4096, IBV_ACCESS_REMOTE_READ);
    assert_non_null(m);
    assert_int_equal(ibv_dereg_mr(m), 0);
    assert_null(ibv_reg_mr(d.pd, p + 4096, 4096, IBV_ACCESS_LOCAL_WRITE));
    assert_int_equal(errno, EFAULT);
    /* memory that is not there */
    assert_int_equal(munmap(p + 8192, 8192), 0);
    assert_null(ibv_reg_mr(d.pd, p + 8192, 4096, 0));
    assert_int_equal(errno, EFAULT);
    munmap(p, 8192);
    /* a dma-buf registration wants a dma-buf */
    int fd = memfd_create("not-a-dmabuf", 0);
    assert_true(fd >= 0);
    assert_int_equal(ftruncate(fd, 4096), 0);
    assert_null(ibv_reg_dmabuf_mr(d.pd, 0, 4096, 0, fd, IBV_ACCESS_LOCAL_WRITE));
    assert_int_equal(errno, EINVAL);
    close(fd);
    assert_null(ibv_reg_dmabuf_mr(d.pd, 0, 4096, 0, 999, IBV_ACCESS_LOCAL_WRITE));
    assert_int_equal(errno, EBADF);
}

static int memlock_child(void *arg)
{
    /* without CAP_IPC_LOCK the limit holds, as in the kernel */
    struct __user_cap_header_struct h = { _LINUX_CAPABILITY_VERSION_3, 0 };
    struct __user_cap_data_struct c[2];
    if (syscall(SYS_capget, &h, c))
        return 10;
    c[0].effective &= ~(1u << CAP_IPC_LOCK);
    if (syscall(SYS_capset, &h, c))
        return 11;
    struct rlimit rl = { 65536, 65536 };
    if (setrlimit(RLIMIT_MEMLOCK, &rl))
        return 12;
    struct swt_dev t;
    if (swt_open(&t))
        return 13;
    char *p = aligned_alloc(4096, 1 << 18);
    struct ibv_mr *m1 = ibv_reg_mr(t.pd, p, 32768, 0);
    if (!m1)
        return 14;
    struct ibv_mr *m2 = ibv_reg_mr(t.pd, p + 65536, 65536, 0);
    if (m2 || errno != ENOMEM)
        return 15;
    ibv_dereg_mr(m1);
    m2 = ibv_reg_mr(t.pd, p + 65536, 65536, 0);
    if (!m2)
        return 16;
    ibv_dereg_mr(m2);
    swt_close(&t);
    free(p);
    return 0;
}

static void memlock(void **state)
{
    assert_int_equal(swt_child(memlock_child, NULL), 0);
}

static void busy_objects(void **state)
{
    struct ibv_pd *pd = ibv_alloc_pd(d.ctx);
    struct ibv_mr *m = ibv_reg_mr(pd, f.buf_a, 64, 0);
    assert_int_equal(ibv_dealloc_pd(pd), EBUSY);
    assert_int_equal(swt_check_count("ibv_dealloc_pd() on a PD that 1 memory regions"), 1);
    assert_int_equal(ibv_dereg_mr(m), 0);
    assert_int_equal(ibv_dealloc_pd(pd), 0);
    struct ibv_comp_channel *ch = ibv_create_comp_channel(d.ctx);
    struct ibv_cq *cq = ibv_create_cq(d.ctx, 4, NULL, ch, 0);
    assert_int_equal(ibv_destroy_comp_channel(ch), EBUSY);
    struct ibv_qp *qp = swt_qp(&d, cq, cq, 1, 1, 0);
    assert_int_equal(ibv_destroy_cq(cq), EBUSY);
    assert_int_equal(ibv_destroy_qp(qp), 0);
    assert_int_equal(ibv_destroy_cq(cq), 0);
    assert_int_equal(ibv_destroy_comp_channel(ch), 0);
    /* a comp_vector the context does not have */
    assert_null(ibv_create_cq(d.ctx, 4, NULL, NULL, d.ctx->num_comp_vectors));
    assert_int_equal(errno, EINVAL);
}

static void bad_requests(void **state)
{
    pair();
    struct ibv_sge sge[3] = { { (uintptr_t)f.buf_a, 8, f.mr_a->lkey }, { (uintptr_t)f.buf_a, 8, f.mr_a->lkey },
                              { (uintptr_t)f.buf_a, 8, f.mr_a->lkey } };
    struct ibv_send_wr w2 = { .wr_id = 2, .sg_list = sge, .num_sge = 3, .opcode = IBV_WR_RDMA_WRITE };
    struct ibv_send_wr w1 = { .wr_id = 1, .next = &w2, .sg_list = sge, .num_sge = 1,
                              .opcode = IBV_WR_RDMA_WRITE, .send_flags = IBV_SEND_SIGNALED },
                       *bad = NULL;
    w1.wr.rdma.remote_addr = w2.wr.rdma.remote_addr = (uintptr_t)f.buf_b;
    w1.wr.rdma.rkey = w2.wr.rdma.rkey = f.mr_b->rkey;
    /* more SGEs than the QP has: the list stops there, the first went */
    assert_int_equal(ibv_post_send(a, &w1, &bad), EINVAL);
    assert_ptr_equal(bad, &w2);
    struct ibv_wc wc;
    assert_int_equal(swt_poll(f.cq_a, &wc, 1, 2000), 1);
    assert_int_equal(wc.wr_id, 1);
    w1.next = NULL;
    w1.opcode = IBV_WR_LOCAL_INV;
    assert_int_equal(ibv_post_send(a, &w1, &bad), EINVAL);
    w1.opcode = IBV_WR_SEND;
    w1.send_flags = IBV_SEND_IP_CSUM;
    assert_int_equal(ibv_post_send(a, &w1, &bad), EINVAL);
    struct ibv_recv_wr r = { .wr_id = 3, .sg_list = sge, .num_sge = 3 }, *rbad;
    assert_int_equal(ibv_post_recv(b, &r, &rbad), EINVAL);
    assert_ptr_equal(rbad, &r);
}

int main(void)
{
    swt_fabric("errors");
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_teardown(local_keys, end_teardown),
        cmocka_unit_test_teardown(remote_keys, end_teardown),
        cmocka_unit_test_teardown(too_long, end_teardown),
        cmocka_unit_test_teardown(rnr, end_teardown),
        cmocka_unit_test_teardown(no_answer, end_teardown),
        cmocka_unit_test_teardown(dead_peer, end_teardown),
        cmocka_unit_test_teardown(read_depth_and_mtu, end_teardown),
        cmocka_unit_test_teardown(cq_overrun, end_teardown),
        cmocka_unit_test(limits),
        cmocka_unit_test(registration),
        cmocka_unit_test(memlock),
        cmocka_unit_test(busy_objects),
        cmocka_unit_test_teardown(bad_requests, end_teardown),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
