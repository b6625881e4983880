/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_rc.c: data on a reliable connection as ibv_post_send(3),
 * ibv_post_recv(3) and ibv_poll_cq(3) describe it: SEND and SEND with
 * immediate (gather, scatter, every completion field), RDMA write and
 * write with immediate, RDMA read, atomics, inline data, unsignaled
 * requests and the send queue they fill, receives taken in order, the
 * order of a write and a later send, an unfenced and a fenced read, keys
 * of regions registered at an IOVA, and two processes where the target
 * only watches its memory while its peer writes into it.
 */
#include "config.h"

#include <arpa/inet.h>
#include <endian.h>
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "tests/swrdma/swtest.h"

#define BUF (1u << 21)

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

/* A fresh pair for each test: a's completions on f.cq_a, b's on f.cq_b. */
static int pair_up(void **state)
{
    struct ibv_qp_init_attr ia = { .send_cq = f.cq_a, .recv_cq = f.cq_a, .qp_type = IBV_QPT_RC,
                                   .cap = { 4, 16, 4, 4, 32 } };
    a = ibv_create_qp(d.pd, &ia);
    ia.send_cq = ia.recv_cq = f.cq_b;
    b = ibv_create_qp(d.pd, &ia);
    struct swt_conn c = swt_conn_default();
    memset(f.buf_a, 0, BUF);
    memset(f.buf_b, 0, BUF);
    return a && b && swt_pair(&d, a, b, &c) == 0 ? 0 : -1;
}

static int unpair(void **state)
{
    struct ibv_wc wc[16];
    while (ibv_poll_cq(f.cq_a, 16, wc) > 0)
        ;
    while (ibv_poll_cq(f.cq_b, 16, wc) > 0)
        ;
    ibv_destroy_qp(a);
    ibv_destroy_qp(b);
    return 0;
}

static void send_recv(void **state)
{
    strcpy(f.buf_a, "0123456789");
    strcpy(f.buf_a + 100, "abcdef");
    memset(f.buf_b, '.', 64);
    /* gather 10 + 6 bytes, scatter into 4 + 40 */
    struct ibv_sge rs[2] = { { (uintptr_t)f.buf_b, 4, f.mr_b->lkey }, { (uintptr_t)f.buf_b + 20, 40, f.mr_b->lkey } };
    struct ibv_recv_wr rwr = { .wr_id = 77, .sg_list = rs, .num_sge = 2 }, *rbad;
    assert_int_equal(ibv_post_recv(b, &rwr, &rbad), 0);
    struct ibv_sge ss[2] = { { (uintptr_t)f.buf_a, 10, f.mr_a->lkey }, { (uintptr_t)f.buf_a + 100, 6, f.mr_a->lkey } };
    struct ibv_send_wr wr = { .wr_id = 55, .sg_list = ss, .num_sge = 2, .opcode = IBV_WR_SEND_WITH_IMM,
                              .send_flags = IBV_SEND_SIGNALED, .imm_data = htonl(0xdeadbeef) },
                       *bad;
    assert_int_equal(ibv_post_send(a, &wr, &bad), 0);
    struct ibv_wc wc;
    assert_int_equal(swt_poll(f.cq_b, &wc, 1, 2000), 1);
    assert_int_equal(wc.status, IBV_WC_SUCCESS);
    assert_int_equal(wc.wr_id, 77);
    assert_int_equal(wc.opcode, IBV_WC_RECV);
    assert_int_equal(wc.byte_len, 16);
    assert_true(wc.wc_flags & IBV_WC_WITH_IMM);
    assert_int_equal(wc.imm_data, htonl(0xdeadbeef));     /* network order, as sent */
    assert_int_equal(wc.qp_num, b->qp_num);
    assert_int_equal(wc.src_qp, a->qp_num);
    assert_memory_equal(f.buf_b, "0123", 4);
    assert_memory_equal(f.buf_b + 4, "....", 4);             /* past the first SGE: untouched */
    assert_memory_equal(f.buf_b + 20, "456789abcdef", 12);
    assert_int_equal(f.buf_b[32], '.');                      /* past the message: untouched */
    assert_int_equal(swt_poll(f.cq_a, &wc, 1, 2000), 1);
    assert_int_equal(wc.status, IBV_WC_SUCCESS);
    assert_int_equal(wc.wr_id, 55);
    assert_int_equal(wc.opcode, IBV_WC_SEND);
    assert_int_equal(wc.qp_num, a->qp_num);
    /* a plain SEND carries no immediate */
    assert_int_equal(swt_recv(b, 78, f.buf_b, 64, f.mr_b->lkey), 0);
    assert_int_equal(swt_send(a, IBV_WR_SEND, 56, f.buf_a, 3, f.mr_a->lkey, IBV_SEND_SIGNALED, 0, 0, 0), 0);
    assert_int_equal(swt_poll(f.cq_b, &wc, 1, 2000), 1);
    assert_int_equal(wc.opcode, IBV_WC_RECV);
    assert_int_equal(wc.byte_len, 3);
    assert_false(wc.wc_flags & IBV_WC_WITH_IMM);
}

static void rdma_write(void **state)
{
    memset(f.buf_a, 'w', 4096);
    memset(f.buf_b, '.', 8192);
    assert_int_equal(swt_send(a, IBV_WR_RDMA_WRITE, 1, f.buf_a, 4096, f.mr_a->lkey, IBV_SEND_SIGNALED,
                              (uintptr_t)f.buf_b + 100, f.mr_b->rkey, 0), 0);
    struct ibv_wc wc;
    assert_int_equal(swt_poll(f.cq_a, &wc, 1, 2000), 1);
    assert_int_equal(wc.status, IBV_WC_SUCCESS);
    assert_int_equal(wc.opcode, IBV_WC_RDMA_WRITE);
    assert_int_equal(f.buf_b[99], '.');
    assert_int_equal(f.buf_b[100], 'w');
    assert_int_equal(f.buf_b[4195], 'w');
    assert_int_equal(f.buf_b[4196], '.');
    /* with immediate: a receive is taken, its buffer untouched */
    memset(f.buf_b + 8192, '.', 16);
    assert_int_equal(swt_recv(b, 9, f.buf_b + 8192, 16, f.mr_b->lkey), 0);
    memset(f.buf_a, 'i', 50);
    assert_int_equal(swt_send(a, IBV_WR_RDMA_WRITE_WITH_IMM, 2, f.buf_a, 50, f.mr_a->lkey,
                              IBV_SEND_SIGNALED, (uintptr_t)f.buf_b + 5000, f.mr_b->rkey, 0x01020304), 0);
    assert_int_equal(swt_poll(f.cq_b, &wc, 1, 2000), 1);
    assert_int_equal(wc.status, IBV_WC_SUCCESS);
    assert_int_equal(wc.wr_id, 9);
    assert_int_equal(wc.opcode, IBV_WC_RECV_RDMA_WITH_IMM);
    assert_int_equal(wc.byte_len, 50);
    assert_true(wc.wc_flags & IBV_WC_WITH_IMM);
    assert_int_equal(be32toh(wc.imm_data), 0x01020304);
    assert_int_equal(wc.src_qp, a->qp_num);
    assert_memory_equal(f.buf_b + 8192, "................", 16);
    assert_int_equal(f.buf_b[5000], 'i');
    assert_int_equal(f.buf_b[5049], 'i');
    assert_int_equal(swt_poll(f.cq_a, &wc, 1, 2000), 1);
    assert_int_equal(wc.opcode, IBV_WC_RDMA_WRITE);
}

/* A large write, then a small send: the send's receive completion means
 * the write's data is all there. */
static void write_then_send(void **state)
{
    for (uint32_t i = 0; i < BUF; i++)
        f.buf_a[i] = (char)(i * 7 + 1);
    assert_int_equal(swt_recv(b, 1, f.buf_b + BUF - 64, 64, f.mr_b->lkey), 0);
    assert_int_equal(swt_send(a, IBV_WR_RDMA_WRITE, 1, f.buf_a, BUF - 4096, f.mr_a->lkey, 0,
                              (uintptr_t)f.buf_b, f.mr_b->rkey, 0), 0);
    assert_int_equal(swt_send(a, IBV_WR_SEND, 2, f.buf_a, 8, f.mr_a->lkey, IBV_SEND_SIGNALED, 0, 0, 0), 0);
    struct ibv_wc wc;
    assert_int_equal(swt_poll(f.cq_b, &wc, 1, 5000), 1);
    assert_int_equal(wc.status, IBV_WC_SUCCESS);
    assert_memory_equal(f.buf_b, f.buf_a, BUF - 4096);
    /* one completion on the sender: the write was unsignaled */
    assert_int_equal(swt_poll(f.cq_a, &wc, 1, 2000), 1);
    assert_int_equal(wc.wr_id, 2);
    assert_int_equal(swt_poll(f.cq_a, &wc, 1, 20), 0);
}

static void rdma_read(void **state)
{
    for (int i = 0; i < 1000; i++)
        f.buf_b[i] = (char)(i ^ 0x5a);
    memset(f.buf_a, 0, 2000);
    assert_int_equal(swt_send(a, IBV_WR_RDMA_READ, 3, f.buf_a + 10, 1000, f.mr_a->lkey,
                              IBV_SEND_SIGNALED, (uintptr_t)f.buf_b, f.mr_b->rkey, 0), 0);
    struct ibv_wc wc;
    assert_int_equal(swt_poll(f.cq_a, &wc, 1, 2000), 1);
    assert_int_equal(wc.status, IBV_WC_SUCCESS);
    assert_int_equal(wc.opcode, IBV_WC_RDMA_READ);
    assert_int_equal(wc.byte_len, 1000);
    assert_memory_equal(f.buf_a + 10, f.buf_b, 1000);
    assert_int_equal(f.buf_a[9], 0);
    assert_int_equal(f.buf_a[1010], 0);
}

/* A read lands before a later request only when that request is fenced. */
static void read_fence(void **state)
{
    for (int fenced = 0; fenced < 2; fenced++) {
        memset(f.buf_a, 'o', 64);       /* old */
        memset(f.buf_b, 'n', 64);       /* new, to be read */
        assert_int_equal(swt_recv(b, 1, f.buf_b + 4096, 64, f.mr_b->lkey), 0);
        struct ibv_sge rs = { (uintptr_t)f.buf_a, 64, f.mr_a->lkey };
        struct ibv_sge ss = { (uintptr_t)f.buf_a, 64, f.mr_a->lkey };
        struct ibv_send_wr send = { .wr_id = 2, .sg_list = &ss, .num_sge = 1, .opcode = IBV_WR_SEND,
                                    .send_flags = IBV_SEND_SIGNALED | (fenced ? IBV_SEND_FENCE : 0) };
        struct ibv_send_wr rd = { .wr_id = 1, .next = &send, .sg_list = &rs, .num_sge = 1,
                                  .opcode = IBV_WR_RDMA_READ, .send_flags = IBV_SEND_SIGNALED };
        rd.wr.rdma.remote_addr = (uintptr_t)f.buf_b;
        rd.wr.rdma.rkey = f.mr_b->rkey;
        struct ibv_send_wr *bad;
        assert_int_equal(ibv_post_send(a, &rd, &bad), 0);
        struct ibv_wc wc[2];
        assert_int_equal(swt_poll(f.cq_b, wc, 1, 2000), 1);
        assert_int_equal(f.buf_b[4096], fenced ? 'n' : 'o');
        /* completions stay in order whatever landed first */
        assert_int_equal(swt_poll(f.cq_a, wc, 2, 2000), 2);
        assert_int_equal(wc[0].wr_id, 1);
        assert_int_equal(wc[1].wr_id, 2);
        assert_memory_equal(f.buf_a, f.buf_b, 64);
        /* unfenced, the send's buffer changed under it before its
         * completion: a program bug the checker names; fenced, none */
        assert_int_equal(swt_check_count("work request 0x2 changed before its completion"), 1);
    }
}

static void inline_data(void **state)
{
    assert_int_equal(swt_recv(b, 1, f.buf_b, 64, f.mr_b->lkey), 0);
    char local[32];
    strcpy(local, "inline payload");
    /* not registered, and no key: inline data is copied at post */
    assert_int_equal(swt_send(a, IBV_WR_SEND, 1, local, 15, 0xdeadbe00, IBV_SEND_INLINE | IBV_SEND_SIGNALED,
                              0, 0, 0), 0);
    strcpy(local, "CHANGED RIGHT AWAY");
    struct ibv_wc wc;
    assert_int_equal(swt_poll(f.cq_b, &wc, 1, 2000), 1);
    assert_int_equal(wc.status, IBV_WC_SUCCESS);
    assert_string_equal(f.buf_b, "inline payload");
    assert_int_equal(swt_poll(f.cq_a, &wc, 1, 2000), 1);
    assert_int_equal(wc.status, IBV_WC_SUCCESS);
    /* over max_inline_data (32 asked for) */
    char big[64] = { 0 };
    assert_int_equal(swt_send(a, IBV_WR_SEND, 2, big, 64, 0, IBV_SEND_INLINE, 0, 0, 0), ENOMEM);
    /* inline is for sends and writes only */
    assert_int_equal(swt_send(a, IBV_WR_RDMA_READ, 3, big, 8, 0, IBV_SEND_INLINE,
                              (uintptr_t)f.buf_b, f.mr_b->rkey, 0), EINVAL);
}

static void full_send_queue(void **state)
{
    struct ibv_qp_attr at;
    struct ibv_qp_init_attr ia;
    assert_int_equal(ibv_query_qp(a, &at, IBV_QP_CAP, &ia), 0);
    uint32_t depth = ia.cap.max_send_wr;
    assert_true(depth >= 4);
    /* unsignaled requests hold their slots until a later signaled one's
     * completion is polled */
    for (uint32_t i = 0; i < depth - 1; i++)
        assert_int_equal(swt_send(a, IBV_WR_RDMA_WRITE, i, f.buf_a, 8, f.mr_a->lkey, 0,
                                  (uintptr_t)f.buf_b, f.mr_b->rkey, 0), 0);
    assert_int_equal(swt_send(a, IBV_WR_RDMA_WRITE, 100, f.buf_a, 8, f.mr_a->lkey, IBV_SEND_SIGNALED,
                              (uintptr_t)f.buf_b, f.mr_b->rkey, 0), 0);
    struct timespec ts = { 0, 20000000 };
    nanosleep(&ts, NULL);     /* executed by now, not yet polled */
    assert_int_equal(swt_send(a, IBV_WR_RDMA_WRITE, 101, f.buf_a, 8, f.mr_a->lkey, IBV_SEND_SIGNALED,
                              (uintptr_t)f.buf_b, f.mr_b->rkey, 0), ENOMEM);
    struct ibv_wc wc[8];
    assert_int_equal(swt_poll(f.cq_a, wc, 8, 100), 1);
    assert_int_equal(wc[0].wr_id, 100);
    for (uint32_t i = 0; i < depth; i++)
        assert_int_equal(swt_send(a, IBV_WR_RDMA_WRITE, 200 + i, f.buf_a, 8, f.mr_a->lkey,
                                  IBV_SEND_SIGNALED, (uintptr_t)f.buf_b, f.mr_b->rkey, 0), 0);
    assert_int_equal(swt_poll(f.cq_a, wc, (int)depth, 2000), (int)depth);
    for (uint32_t i = 0; i < depth; i++)
        assert_int_equal(wc[i].wr_id, 200 + i);
}

static void receives_in_order(void **state)
{
    for (int i = 0; i < 4; i++)
        assert_int_equal(swt_recv(b, 10 + (uint64_t)i, f.buf_b + i * 64, 64, f.mr_b->lkey), 0);
    for (int i = 0; i < 4; i++) {
        f.buf_a[i * 8] = (char)('A' + i);
        assert_int_equal(swt_send(a, IBV_WR_SEND, (uint64_t)i, f.buf_a + i * 8, 1, f.mr_a->lkey,
                                  IBV_SEND_SIGNALED, 0, 0, 0), 0);
    }
    struct ibv_wc wc[4];
    assert_int_equal(swt_poll(f.cq_b, wc, 4, 2000), 4);
    for (int i = 0; i < 4; i++) {
        assert_int_equal(wc[i].wr_id, 10 + i);
        assert_int_equal(f.buf_b[i * 64], 'A' + i);
    }
}

static void atomics(void **state)
{
    uint64_t *remote = (uint64_t *)(f.buf_b + 64), *local = (uint64_t *)(f.buf_a + 64);
    *remote = 5;
    *local = 0;
    struct ibv_sge sge = { (uintptr_t)local, 8, f.mr_a->lkey };
    struct ibv_send_wr wr = { .wr_id = 1, .sg_list = &sge, .num_sge = 1,
                              .opcode = IBV_WR_ATOMIC_FETCH_AND_ADD, .send_flags = IBV_SEND_SIGNALED },
                       *bad;
    wr.wr.atomic.remote_addr = (uintptr_t)remote;
    wr.wr.atomic.rkey = f.mr_b->rkey;
    wr.wr.atomic.compare_add = 10;
    assert_int_equal(ibv_post_send(a, &wr, &bad), 0);
    struct ibv_wc wc;
    assert_int_equal(swt_poll(f.cq_a, &wc, 1, 2000), 1);
    assert_int_equal(wc.status, IBV_WC_SUCCESS);
    assert_int_equal(wc.opcode, IBV_WC_FETCH_ADD);
    assert_int_equal(wc.byte_len, 8);
    assert_int_equal(*local, 5);
    assert_int_equal(*remote, 15);
    wr.opcode = IBV_WR_ATOMIC_CMP_AND_SWP;
    wr.wr.atomic.compare_add = 15;
    wr.wr.atomic.swap = 99;
    assert_int_equal(ibv_post_send(a, &wr, &bad), 0);
    assert_int_equal(swt_poll(f.cq_a, &wc, 1, 2000), 1);
    assert_int_equal(wc.opcode, IBV_WC_COMP_SWAP);
    assert_int_equal(*local, 15);
    assert_int_equal(*remote, 99);
    wr.wr.atomic.compare_add = 1;     /* no match: nothing swapped */
    wr.wr.atomic.swap = 7;
    assert_int_equal(ibv_post_send(a, &wr, &bad), 0);
    assert_int_equal(swt_poll(f.cq_a, &wc, 1, 2000), 1);
    assert_int_equal(*local, 99);
    assert_int_equal(*remote, 99);
}

static void iova_keys(void **state)
{
    uint64_t iova = 0x7000000000ull + ((uintptr_t)f.buf_b & 4095) + 4096 * 3;
    struct ibv_mr *m = ibv_reg_mr_iova2(d.pd, f.buf_b + 4096 * 3, 8192, iova, SWT_ACCESS_ALL);
    assert_non_null(m);
    memcpy(f.buf_a, "by iova", 8);
    assert_int_equal(swt_send(a, IBV_WR_RDMA_WRITE, 1, f.buf_a, 8, f.mr_a->lkey, IBV_SEND_SIGNALED,
                              iova + 16, m->rkey, 0), 0);
    struct ibv_wc wc;
    assert_int_equal(swt_poll(f.cq_a, &wc, 1, 2000), 1);
    assert_int_equal(wc.status, IBV_WC_SUCCESS);
    assert_string_equal(f.buf_b + 4096 * 3 + 16, "by iova");
    /* the local key addresses its region by IOVA too */
    assert_int_equal(swt_send(b, IBV_WR_RDMA_WRITE, 2, (void *)(uintptr_t)(iova + 16), 8, m->lkey,
                              IBV_SEND_SIGNALED, (uintptr_t)f.buf_a + 100, f.mr_a->rkey, 0), 0);
    assert_int_equal(swt_poll(f.cq_b, &wc, 1, 2000), 1);
    assert_int_equal(wc.status, IBV_WC_SUCCESS);
    assert_string_equal(f.buf_a + 100, "by iova");
    assert_int_equal(ibv_dereg_mr(m), 0);
}

/* Two processes: the target registers memory, hands out its key and
 * then only watches that memory, calling nothing, until its peer's RDMA
 * write lands; then it takes a SEND. */
static int target(void *arg)
{
    int sock = *(int *)arg;
    struct swt_dev t;     /* on the parent's fabric, as a process of its own */
    if (swt_open(&t))
        return 10;
    struct ibv_cq *cq = ibv_create_cq(t.ctx, 15, NULL, NULL, 0);
    struct ibv_qp *qp = swt_qp(&t, cq, cq, 4, 1, 0);
    volatile char *mem = mmap(NULL, 1 << 16, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    struct ibv_mr *mr = ibv_reg_mr(t.pd, (void *)mem, 1 << 16, SWT_ACCESS_ALL);
    if (!cq || !qp || !mr)
        return 11;
    struct swt_addr mine, peer;
    swt_addr_of(&t, qp, 77, &mine);
    mine.addr = (uintptr_t)mem;
    mine.rkey = mr->rkey;
    if (write(sock, &mine, sizeof(mine)) != sizeof(mine) || read(sock, &peer, sizeof(peer)) != sizeof(peer))
        return 12;
    struct swt_conn c = swt_conn_default();
    if (swt_connect(&t, qp, 77, &peer, &c) || swt_recv(qp, 5, (char *)mem + 32768, 64, mr->lkey))
        return 13;
    char go = 1;
    if (write(sock, &go, 1) != 1)
        return 14;
    uint64_t end = swt_ms() + 10000;
    while (mem[32767] != 0x5a) {
        if (swt_ms() > end)
            return 15;
        struct timespec ts = { 0, 10000 };
        nanosleep(&ts, NULL);
    }
    for (int i = 0; i < 32767; i++)
        if (mem[i] != (char)(i % 251))
            return 16;
    struct ibv_wc wc;
    if (swt_poll(cq, &wc, 1, 10000) != 1 || wc.status != IBV_WC_SUCCESS || wc.byte_len != 6 ||
        wc.src_qp != peer.qpn || memcmp((char *)mem + 32768, "done!", 6))
        return 17;
    /* the peer reads back what it wrote, then says goodbye */
    if (read(sock, &go, 1) != 1)
        return 18;
    ibv_destroy_qp(qp);
    ibv_dereg_mr(mr);
    ibv_destroy_cq(cq);
    swt_close(&t);
    return 0;
}

static void two_processes(void **state)
{
    int sv[2];
    assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
    fflush(NULL);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        close(sv[0]);
        exit(target(&sv[1]));
    }
    close(sv[1]);
    struct swt_addr peer, mine;
    assert_int_equal(read(sv[0], &peer, sizeof(peer)), sizeof(peer));
    struct ibv_qp *qp = swt_qp(&d, f.cq_a, f.cq_a, 4, 1, 0);
    assert_non_null(qp);
    swt_addr_of(&d, qp, 99, &mine);
    assert_int_equal(write(sv[0], &mine, sizeof(mine)), sizeof(mine));
    struct swt_conn c = swt_conn_default();
    assert_int_equal(swt_connect(&d, qp, 99, &peer, &c), 0);
    char go;
    assert_int_equal(read(sv[0], &go, 1), 1);
    for (int i = 0; i < 32767; i++)
        f.buf_a[i] = (char)(i % 251);
    f.buf_a[32767] = 0x5a;
    assert_int_equal(swt_send(qp, IBV_WR_RDMA_WRITE, 1, f.buf_a, 32768, f.mr_a->lkey, 0, peer.addr, peer.rkey, 0), 0);
    memcpy(f.buf_a + 40000, "done!", 6);
    assert_int_equal(swt_send(qp, IBV_WR_SEND, 2, f.buf_a + 40000, 6, f.mr_a->lkey, IBV_SEND_SIGNALED, 0, 0, 0), 0);
    assert_int_equal(swt_send(qp, IBV_WR_RDMA_READ, 3, f.buf_a + 50000, 100, f.mr_a->lkey, IBV_SEND_SIGNALED,
                              peer.addr, peer.rkey, 0), 0);
    struct ibv_wc wc[2];
    assert_int_equal(swt_poll(f.cq_a, wc, 2, 10000), 2);
    assert_int_equal(wc[0].status, IBV_WC_SUCCESS);
    assert_int_equal(wc[1].status, IBV_WC_SUCCESS);
    assert_memory_equal(f.buf_a + 50000, f.buf_a, 100);
    assert_int_equal(write(sv[0], &go, 1), 1);
    int st;
    assert_int_equal(waitpid(pid, &st, 0), pid);
    assert_true(WIFEXITED(st));
    assert_int_equal(WEXITSTATUS(st), 0);
    close(sv[0]);
    assert_int_equal(ibv_destroy_qp(qp), 0);
}

int main(void)
{
    swt_fabric("rc");
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(send_recv, pair_up, unpair),
        cmocka_unit_test_setup_teardown(rdma_write, pair_up, unpair),
        cmocka_unit_test_setup_teardown(write_then_send, pair_up, unpair),
        cmocka_unit_test_setup_teardown(rdma_read, pair_up, unpair),
        cmocka_unit_test_setup_teardown(read_fence, pair_up, unpair),
        cmocka_unit_test_setup_teardown(inline_data, pair_up, unpair),
        cmocka_unit_test_setup_teardown(full_send_queue, pair_up, unpair),
        cmocka_unit_test_setup_teardown(receives_in_order, pair_up, unpair),
        cmocka_unit_test_setup_teardown(atomics, pair_up, unpair),
        cmocka_unit_test_setup_teardown(iova_keys, pair_up, unpair),
        cmocka_unit_test(two_processes),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
