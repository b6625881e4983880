/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_ud.c: unreliable datagrams and address handles as ibv_create_qp(3),
 * ibv_modify_qp(3), ibv_create_ah(3), ibv_post_send(3), ibv_post_recv(3),
 * ibv_poll_cq(3) and ibv_create_ah_from_wc(3) describe them: the UD state
 * machine and the attributes each transition takes, a datagram's
 * completion fields and the 40 bytes of GRH before its payload, receives
 * taken in order, datagrams lost without a receive, with the wrong Q_Key
 * or to nobody, a message above the MTU, a receive too small, the AH's
 * checks and its hold on the PD, flushes, a reply made from the
 * completion, two processes, an injected failure, and an InfiniBand
 * port without GRH.
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
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "tests/swrdma/swtest.h"

#define BUF (1u << 16)
#define GRH 40
#define QKEY 0x11223344u

static struct swt_dev d;
static struct ibv_cq *cq_a, *cq_b;
static struct ibv_qp *a, *b;
static struct ibv_ah *ah;          /* towards this host's own GID */
static char *buf_a, *buf_b;
static struct ibv_mr *mr_a, *mr_b;

static struct ibv_qp *ud_qp(struct swt_dev *dev, struct ibv_cq *cq, uint32_t wr)
{
    struct ibv_qp_init_attr ia;
    memset(&ia, 0, sizeof(ia));
    ia.send_cq = ia.recv_cq = cq;
    ia.qp_type = IBV_QPT_UD;
    ia.cap.max_send_wr = ia.cap.max_recv_wr = wr;
    ia.cap.max_send_sge = ia.cap.max_recv_sge = 2;
    ia.cap.max_inline_data = 32;
    return ibv_create_qp(dev->pd, &ia);
}

/* RESET to RTS with exactly what ibv_modify_qp(3) requires of UD. */
static int ud_up(struct ibv_qp *qp, uint32_t qkey)
{
    struct ibv_qp_attr at;
    memset(&at, 0, sizeof(at));
    at.qp_state = IBV_QPS_INIT;
    at.port_num = 1;
    at.qkey = qkey;
    int rc = ibv_modify_qp(qp, &at, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_QKEY);
    at.qp_state = IBV_QPS_RTR;
    rc = rc ? rc : ibv_modify_qp(qp, &at, IBV_QP_STATE);
    at.qp_state = IBV_QPS_RTS;
    at.sq_psn = 17;
    return rc ? rc : ibv_modify_qp(qp, &at, IBV_QP_STATE | IBV_QP_SQ_PSN);
}

static struct ibv_ah *ah_to(struct swt_dev *dev, const union ibv_gid *gid, uint16_t lid)
{
    struct ibv_ah_attr at;
    memset(&at, 0, sizeof(at));
    at.port_num = 1;
    at.dlid = lid;
    if (gid) {
        at.is_global = 1;
        at.grh.dgid = *gid;
        at.grh.sgid_index = (uint8_t)dev->gid_index;
        at.grh.hop_limit = 64;
    }
    return ibv_create_ah(dev->pd, &at);
}

static int ud_send(struct ibv_qp *qp, struct ibv_ah *to, uint32_t qpn, uint32_t qkey, uint64_t wr_id,
                   const void *buf, uint32_t len, uint32_t lkey, enum ibv_wr_opcode op, uint32_t imm)
{
    struct ibv_sge sge = { (uintptr_t)buf, len, lkey };
    struct ibv_send_wr wr, *bad = NULL;
    memset(&wr, 0, sizeof(wr));
    wr.wr_id = wr_id;
    wr.sg_list = &sge;
    wr.num_sge = 1;
    wr.opcode = op;
    wr.send_flags = IBV_SEND_SIGNALED;
    wr.imm_data = htonl(imm);
    wr.wr.ud.ah = to;
    wr.wr.ud.remote_qpn = qpn;
    wr.wr.ud.remote_qkey = qkey;
    return ibv_post_send(qp, &wr, &bad);
}

/* The sender's completion of one datagram: it says only that it left. */
static void sent_ok(struct ibv_cq *cq, uint64_t wr_id)
{
    struct ibv_wc wc;
    assert_int_equal(swt_poll(cq, &wc, 1, 2000), 1);
    assert_int_equal(wc.status, IBV_WC_SUCCESS);
    assert_int_equal(wc.opcode, IBV_WC_SEND);
    assert_int_equal(wc.wr_id, wr_id);
}

/* Nothing arrived: delivery happens before the sender's completion. */
static void nothing_on(struct ibv_cq *cq)
{
    struct ibv_wc wc;
    assert_int_equal(ibv_poll_cq(cq, 1, &wc), 0);
}

static int setup(void **state)
{
    if (swt_open(&d))
        return -1;
    cq_a = ibv_create_cq(d.ctx, 63, NULL, NULL, 0);
    cq_b = ibv_create_cq(d.ctx, 63, NULL, NULL, 0);
    buf_a = aligned_alloc(4096, BUF);
    buf_b = aligned_alloc(4096, BUF);
    mr_a = ibv_reg_mr(d.pd, buf_a, BUF, IBV_ACCESS_LOCAL_WRITE);
    mr_b = ibv_reg_mr(d.pd, buf_b, BUF, IBV_ACCESS_LOCAL_WRITE);
    ah = ah_to(&d, &d.gid, d.port.lid);
    return cq_a && cq_b && mr_a && mr_b && ah ? 0 : -1;
}

static int teardown(void **state)
{
    ibv_destroy_ah(ah);
    ibv_dereg_mr(mr_a);
    ibv_dereg_mr(mr_b);
    ibv_destroy_cq(cq_a);
    ibv_destroy_cq(cq_b);
    free(buf_a);
    free(buf_b);
    swt_close(&d);
    return 0;
}

/* Two UD QPs at RTS with one Q_Key: a's completions on cq_a, b's on cq_b. */
static int up(void **state)
{
    a = ud_qp(&d, cq_a, 8);
    b = ud_qp(&d, cq_b, 8);
    memset(buf_a, 0, BUF);
    memset(buf_b, 0, BUF);
    return a && b && !ud_up(a, QKEY) && !ud_up(b, QKEY) ? 0 : -1;
}

static int down(void **state)
{
    struct ibv_wc wc[16];
    ibv_destroy_qp(a);
    ibv_destroy_qp(b);
    while (ibv_poll_cq(cq_a, 16, wc) > 0)
        ;
    while (ibv_poll_cq(cq_b, 16, wc) > 0)
        ;
    return 0;
}

static void state_machine(void **state)
{
    struct ibv_qp *q = ud_qp(&d, cq_a, 4);
    assert_non_null(q);
    assert_int_equal(q->qp_type, IBV_QPT_UD);
    struct ibv_qp_attr at;
    memset(&at, 0, sizeof(at));
    at.qp_state = IBV_QPS_INIT;
    at.port_num = 1;
    at.qkey = QKEY;
    int base = IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT;
    /* RESET to INIT: P_Key index, port and Q_Key, nothing else */
    assert_int_equal(ibv_modify_qp(q, &at, base), EINVAL);
    assert_int_equal(ibv_modify_qp(q, &at, base | IBV_QP_QKEY | IBV_QP_ACCESS_FLAGS), EINVAL);
    assert_int_equal(swt_state(q), IBV_QPS_RESET);
    assert_int_equal(swt_recv(q, 1, buf_a, 64, mr_a->lkey), EINVAL);
    assert_int_equal(ibv_modify_qp(q, &at, base | IBV_QP_QKEY), 0);
    /* receives from INIT on, sends not before RTS */
    assert_int_equal(swt_recv(q, 1, buf_a, 64, mr_a->lkey), 0);
    assert_int_equal(ud_send(q, ah, q->qp_num, QKEY, 1, buf_a, 8, mr_a->lkey, IBV_WR_SEND, 0), EINVAL);
    /* INIT to RTR: the state alone; a path is for connections */
    at.qp_state = IBV_QPS_RTR;
    at.path_mtu = IBV_MTU_256;
    assert_int_equal(ibv_modify_qp(q, &at, IBV_QP_STATE | IBV_QP_PATH_MTU), EINVAL);
    assert_int_equal(ibv_modify_qp(q, &at, IBV_QP_STATE | IBV_QP_DEST_QPN), EINVAL);
    assert_int_equal(ibv_modify_qp(q, &at, IBV_QP_STATE), 0);
    assert_int_equal(ud_send(q, ah, q->qp_num, QKEY, 1, buf_a, 8, mr_a->lkey, IBV_WR_SEND, 0), EINVAL);
    /* RTR to RTS: the SQ PSN, and no retry counts */
    at.qp_state = IBV_QPS_RTS;
    at.sq_psn = 5;
    at.timeout = 8;
    assert_int_equal(ibv_modify_qp(q, &at, IBV_QP_STATE), EINVAL);
    assert_int_equal(ibv_modify_qp(q, &at, IBV_QP_STATE | IBV_QP_SQ_PSN | IBV_QP_TIMEOUT), EINVAL);
    assert_int_equal(ibv_modify_qp(q, &at, IBV_QP_STATE | IBV_QP_SQ_PSN), 0);
    /* the Q_Key may change at RTS */
    at.qkey = 0x1234;
    assert_int_equal(ibv_modify_qp(q, &at, IBV_QP_QKEY), 0);
    struct ibv_qp_init_attr ia;
    assert_int_equal(ibv_query_qp(q, &at, IBV_QP_STATE | IBV_QP_QKEY | IBV_QP_SQ_PSN, &ia), 0);
    assert_int_equal(at.qp_state, IBV_QPS_RTS);
    assert_int_equal(at.qkey, 0x1234);
    assert_int_equal(at.sq_psn, 5);
    assert_int_equal(at.port_num, 1);
    assert_int_equal(ia.qp_type, IBV_QPT_UD);
    assert_true(ia.cap.max_send_wr >= 4 && ia.cap.max_inline_data >= 32);
    assert_int_equal(ibv_destroy_qp(q), 0);
    struct ibv_wc wc;
    while (ibv_poll_cq(cq_a, 1, &wc) > 0)
        ;
}

static bool v4_mapped(const union ibv_gid *g)
{
    static const uint8_t prefix[12] = { 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff };
    return !memcmp(g->raw, prefix, 12);
}

/* The 40 bytes before the payload: an IPv4 header in the last 20 for
 * RoCE v2 between IPv4 addresses, else an IPv6-shaped GRH. */
static void check_grh(const uint8_t *g, const union ibv_gid *src, const union ibv_gid *dst,
                      uint32_t len)
{
    if (v4_mapped(src)) {
        const uint8_t *ip = g + 20;
        assert_int_equal(ip[0], 0x45);
        assert_int_equal(ip[9], 17);
        assert_int_equal(ip[2] << 8 | ip[3], 20 + 8 + 12 + 8 + len + 4);
        assert_memory_equal(ip + 12, src->raw + 12, 4);
        assert_memory_equal(ip + 16, dst->raw + 12, 4);
        uint32_t sum = 0;
        for (int i = 0; i < 20; i += 2)
            sum += (uint32_t)ip[i] << 8 | ip[i + 1];
        while (sum >> 16)
            sum = (sum & 0xffff) + (sum >> 16);
        assert_int_equal(sum, 0xffff);          /* a valid header checksum */
    } else {
        assert_int_equal(g[0] >> 4, 6);
        assert_memory_equal(g + 8, src->raw, 16);
        assert_memory_equal(g + 24, dst->raw, 16);
    }
}

static void datagram(void **state)
{
    memcpy(buf_a, "hello, datagram", 16);
    memset(buf_b, '.', 256);
    assert_int_equal(swt_recv(b, 42, buf_b, 256, mr_b->lkey), 0);
    assert_int_equal(ud_send(a, ah, b->qp_num, QKEY, 7, buf_a, 16, mr_a->lkey, IBV_WR_SEND_WITH_IMM,
                             0xcafef00d), 0);
    sent_ok(cq_a, 7);
    struct ibv_wc wc;
    assert_int_equal(swt_poll(cq_b, &wc, 1, 2000), 1);
    assert_int_equal(wc.status, IBV_WC_SUCCESS);
    assert_int_equal(wc.opcode, IBV_WC_RECV);
    assert_int_equal(wc.wr_id, 42);
    assert_int_equal(wc.byte_len, GRH + 16);        /* the GRH counts */
    assert_int_equal(wc.qp_num, b->qp_num);
    assert_int_equal(wc.src_qp, a->qp_num);
    assert_int_equal(wc.pkey_index, 0);
    assert_true(wc.wc_flags & IBV_WC_GRH);
    assert_true(wc.wc_flags & IBV_WC_WITH_IMM);
    assert_int_equal(wc.imm_data, htonl(0xcafef00d));
    assert_memory_equal(buf_b + GRH, "hello, datagram", 16);
    assert_int_equal(buf_b[GRH + 16], '.');
    check_grh((const uint8_t *)buf_b, &d.gid, &d.gid, 16);
    /* inline data, no immediate */
    struct ibv_sge sge = { (uintptr_t)"inline!", 8, 0 };
    struct ibv_send_wr wr = { .wr_id = 8, .sg_list = &sge, .num_sge = 1, .opcode = IBV_WR_SEND,
                              .send_flags = IBV_SEND_SIGNALED | IBV_SEND_INLINE },
                       *bad;
    wr.wr.ud.ah = ah;
    wr.wr.ud.remote_qpn = b->qp_num;
    wr.wr.ud.remote_qkey = QKEY;
    assert_int_equal(swt_recv(b, 43, buf_b + 1024, 64, mr_b->lkey), 0);
    assert_int_equal(ibv_post_send(a, &wr, &bad), 0);
    sent_ok(cq_a, 8);
    assert_int_equal(swt_poll(cq_b, &wc, 1, 2000), 1);
    assert_int_equal(wc.wr_id, 43);
    assert_int_equal(wc.byte_len, GRH + 8);
    assert_false(wc.wc_flags & IBV_WC_WITH_IMM);
    assert_string_equal(buf_b + 1024 + GRH, "inline!");
}

static void receives_in_order(void **state)
{
    for (int i = 0; i < 3; i++)
        assert_int_equal(swt_recv(b, 100 + i, buf_b + 1024 * i, 1024, mr_b->lkey), 0);
    for (int i = 0; i < 3; i++) {
        buf_a[64 * i] = (char)('x' + i);
        assert_int_equal(ud_send(a, ah, b->qp_num, QKEY, i, buf_a + 64 * i, 1, mr_a->lkey, IBV_WR_SEND, 0), 0);
    }
    struct ibv_wc wc[3];
    assert_int_equal(swt_poll(cq_b, wc, 3, 2000), 3);
    for (int i = 0; i < 3; i++) {
        assert_int_equal(wc[i].status, IBV_WC_SUCCESS);
        assert_int_equal(wc[i].wr_id, 100 + i);
        assert_int_equal(buf_b[1024 * i + GRH], 'x' + i);
    }
}

/* No receive posted: lost, not held for a later receive (no RNR). */
static void no_receive_drops(void **state)
{
    buf_a[0] = '1';
    buf_a[1] = '2';
    assert_int_equal(ud_send(a, ah, b->qp_num, QKEY, 1, buf_a, 1, mr_a->lkey, IBV_WR_SEND, 0), 0);
    sent_ok(cq_a, 1);
    nothing_on(cq_b);
    assert_int_equal(swt_recv(b, 9, buf_b, 256, mr_b->lkey), 0);
    assert_int_equal(ud_send(a, ah, b->qp_num, QKEY, 2, buf_a + 1, 1, mr_a->lkey, IBV_WR_SEND, 0), 0);
    sent_ok(cq_a, 2);
    struct ibv_wc wc;
    assert_int_equal(swt_poll(cq_b, &wc, 1, 2000), 1);
    assert_int_equal(wc.wr_id, 9);
    assert_int_equal(buf_b[GRH], '2');
    nothing_on(cq_b);
}

/* A QP takes datagrams from RTR on: at INIT its receives wait. */
static void not_ready_drops(void **state)
{
    struct ibv_qp *c = ud_qp(&d, cq_b, 4);
    assert_non_null(c);
    struct ibv_qp_attr at = { .qp_state = IBV_QPS_INIT, .port_num = 1, .qkey = QKEY };
    assert_int_equal(ibv_modify_qp(c, &at, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_QKEY), 0);
    assert_int_equal(swt_recv(c, 1, buf_b, 256, mr_b->lkey), 0);
    buf_a[0] = 'i';
    buf_a[1] = 'r';
    assert_int_equal(ud_send(a, ah, c->qp_num, QKEY, 1, buf_a, 1, mr_a->lkey, IBV_WR_SEND, 0), 0);
    sent_ok(cq_a, 1);
    nothing_on(cq_b);
    at.qp_state = IBV_QPS_RTR;
    assert_int_equal(ibv_modify_qp(c, &at, IBV_QP_STATE), 0);
    assert_int_equal(ud_send(a, ah, c->qp_num, QKEY, 2, buf_a + 1, 1, mr_a->lkey, IBV_WR_SEND, 0), 0);
    sent_ok(cq_a, 2);
    struct ibv_wc wc;
    assert_int_equal(swt_poll(cq_b, &wc, 1, 2000), 1);
    assert_int_equal(wc.wr_id, 1);
    assert_int_equal(buf_b[GRH], 'r');
    assert_int_equal(ibv_destroy_qp(c), 0);
}

/* A wrong Q_Key is dropped at the target; one with the high bit set
 * means the sending QP's own. */
static void qkey(void **state)
{
    assert_int_equal(swt_recv(b, 9, buf_b, 256, mr_b->lkey), 0);
    assert_int_equal(ud_send(a, ah, b->qp_num, QKEY + 1, 1, buf_a, 4, mr_a->lkey, IBV_WR_SEND, 0), 0);
    sent_ok(cq_a, 1);
    nothing_on(cq_b);
    assert_int_equal(ud_send(a, ah, b->qp_num, 0x80000000u, 2, buf_a, 4, mr_a->lkey, IBV_WR_SEND, 0), 0);
    sent_ok(cq_a, 2);
    struct ibv_wc wc;
    assert_int_equal(swt_poll(cq_b, &wc, 1, 2000), 1);
    assert_int_equal(wc.wr_id, 9);
    /* a's own Q_Key changed: the high bit now names a different one */
    struct ibv_qp_attr at = { .qkey = 5 };
    assert_int_equal(ibv_modify_qp(a, &at, IBV_QP_QKEY), 0);
    assert_int_equal(swt_recv(b, 10, buf_b, 256, mr_b->lkey), 0);
    assert_int_equal(ud_send(a, ah, b->qp_num, 0x80000000u, 3, buf_a, 4, mr_a->lkey, IBV_WR_SEND, 0), 0);
    sent_ok(cq_a, 3);
    nothing_on(cq_b);
}

/* To nobody: an unknown QP number, or a GID no host has. */
static void lost_to_nobody(void **state)
{
    assert_int_equal(swt_recv(b, 9, buf_b, 256, mr_b->lkey), 0);
    assert_int_equal(ud_send(a, ah, b->qp_num ^ 0x5a5a00, QKEY, 1, buf_a, 4, mr_a->lkey, IBV_WR_SEND, 0), 0);
    sent_ok(cq_a, 1);
    union ibv_gid nowhere;
    memset(&nowhere, 0, sizeof(nowhere));
    nowhere.raw[10] = nowhere.raw[11] = 0xff;
    nowhere.raw[12] = 198;
    nowhere.raw[13] = 51;
    nowhere.raw[14] = 100;
    nowhere.raw[15] = 77;
    struct ibv_ah *far = ah_to(&d, &nowhere, 0);
    assert_non_null(far);
    assert_int_equal(ud_send(a, far, b->qp_num, QKEY, 2, buf_a, 4, mr_a->lkey, IBV_WR_SEND, 0), 0);
    sent_ok(cq_a, 2);
    nothing_on(cq_b);
    assert_int_equal(ibv_destroy_ah(far), 0);
    /* the QP's receive is still there for the next one */
    assert_int_equal(ud_send(a, ah, b->qp_num, QKEY, 3, buf_a, 4, mr_a->lkey, IBV_WR_SEND, 0), 0);
    sent_ok(cq_a, 3);
    struct ibv_wc wc;
    assert_int_equal(swt_poll(cq_b, &wc, 1, 2000), 1);
    assert_int_equal(wc.wr_id, 9);
}

/* A UD message is one packet: above the path MTU it fails on the sender,
 * whose send queue stops (SQE) while its receives go on; RTS again
 * resumes it. */
static void above_mtu(void **state)
{
    uint32_t mtu = 128u << d.port.active_mtu;
    assert_int_equal(swt_recv(b, 1, buf_b, mtu + GRH, mr_b->lkey), 0);
    assert_int_equal(ud_send(a, ah, b->qp_num, QKEY, 1, buf_a, mtu, mr_a->lkey, IBV_WR_SEND, 0), 0);
    sent_ok(cq_a, 1);
    struct ibv_wc wc[2];
    assert_int_equal(swt_poll(cq_b, wc, 1, 2000), 1);
    assert_int_equal(wc[0].byte_len, mtu + GRH);
    assert_int_equal(ud_send(a, ah, b->qp_num, QKEY, 2, buf_a, mtu + 1, mr_a->lkey, IBV_WR_SEND, 0), 0);
    assert_int_equal(ud_send(a, ah, b->qp_num, QKEY, 3, buf_a, 1, mr_a->lkey, IBV_WR_SEND, 0), 0);
    assert_int_equal(swt_poll(cq_a, wc, 2, 2000), 2);
    assert_int_equal(wc[0].wr_id, 2);
    assert_int_equal(wc[0].status, IBV_WC_LOC_LEN_ERR);
    assert_int_equal(wc[1].wr_id, 3);
    assert_int_equal(wc[1].status, IBV_WC_WR_FLUSH_ERR);
    assert_int_equal(swt_state(a), IBV_QPS_SQE);
    /* a still receives */
    assert_int_equal(swt_recv(a, 50, buf_a + 8192, 256, mr_a->lkey), 0);
    assert_int_equal(ud_send(b, ah, a->qp_num, QKEY, 4, buf_b, 4, mr_b->lkey, IBV_WR_SEND, 0), 0);
    sent_ok(cq_b, 4);
    assert_int_equal(swt_poll(cq_a, wc, 1, 2000), 1);
    assert_int_equal(wc[0].wr_id, 50);
    assert_int_equal(wc[0].status, IBV_WC_SUCCESS);
    /* SQE to RTS, and a sends again */
    struct ibv_qp_attr at = { .qp_state = IBV_QPS_RTS };
    assert_int_equal(ibv_modify_qp(a, &at, IBV_QP_STATE), 0);
    assert_int_equal(ud_send(a, ah, b->qp_num, QKEY, 5, buf_a, 1, mr_a->lkey, IBV_WR_SEND, 0), 0);
    sent_ok(cq_a, 5);
}

/* A receive too small for GRH and payload fails at the target, which
 * goes to error; the sender cannot tell. */
static void receive_too_small(void **state)
{
    assert_int_equal(swt_recv(b, 1, buf_b, GRH + 4, mr_b->lkey), 0);
    assert_int_equal(swt_recv(b, 2, buf_b + 256, 256, mr_b->lkey), 0);
    assert_int_equal(ud_send(a, ah, b->qp_num, QKEY, 1, buf_a, 5, mr_a->lkey, IBV_WR_SEND, 0), 0);
    sent_ok(cq_a, 1);
    struct ibv_wc wc[2];
    assert_int_equal(swt_poll(cq_b, wc, 2, 2000), 2);
    assert_int_equal(wc[0].wr_id, 1);
    assert_int_equal(wc[0].status, IBV_WC_LOC_LEN_ERR);
    assert_int_equal(wc[1].wr_id, 2);
    assert_int_equal(wc[1].status, IBV_WC_WR_FLUSH_ERR);
    assert_int_equal(swt_state(b), IBV_QPS_ERR);
    assert_int_equal(swt_state(a), IBV_QPS_RTS);
}

/* UD sends SEND and SEND with immediate, to an AH. */
static void opcodes(void **state)
{
    struct ibv_sge sge = { (uintptr_t)buf_a, 8, mr_a->lkey };
    struct ibv_send_wr wr = { .wr_id = 1, .sg_list = &sge, .num_sge = 1, .opcode = IBV_WR_RDMA_WRITE },
                       *bad = NULL;
    wr.wr.ud.ah = ah;
    wr.wr.ud.remote_qpn = b->qp_num;
    wr.wr.ud.remote_qkey = QKEY;
    assert_int_equal(ibv_post_send(a, &wr, &bad), EINVAL);
    assert_ptr_equal(bad, &wr);
    wr.opcode = IBV_WR_RDMA_READ;
    assert_int_equal(ibv_post_send(a, &wr, &bad), EINVAL);
    wr.opcode = IBV_WR_ATOMIC_FETCH_AND_ADD;
    assert_int_equal(ibv_post_send(a, &wr, &bad), EINVAL);
    wr.opcode = IBV_WR_SEND;
    wr.wr.ud.ah = NULL;
    assert_int_equal(ibv_post_send(a, &wr, &bad), EINVAL);
    nothing_on(cq_a);
}

static void ah_attributes(void **state)
{
    struct ibv_ah_attr at;
    memset(&at, 0, sizeof(at));
    at.port_num = 1;
    at.dlid = 1;
    if (d.port.link_layer == IBV_LINK_LAYER_ETHERNET) {
        /* RoCE has no LIDs: a GRH is required */
        assert_null(ibv_create_ah(d.pd, &at));
        assert_int_equal(errno, EINVAL);
    }
    at.is_global = 1;
    at.grh.dgid = d.gid;
    at.grh.sgid_index = 15;            /* an empty entry */
    assert_null(ibv_create_ah(d.pd, &at));
    assert_int_equal(errno, EINVAL);
    at.grh.sgid_index = (uint8_t)d.gid_index;
    at.port_num = 2;
    assert_null(ibv_create_ah(d.pd, &at));
    assert_int_equal(errno, EINVAL);
    at.port_num = 0;
    assert_null(ibv_create_ah(d.pd, &at));
    at.port_num = 1;
    at.sl = 16;
    assert_null(ibv_create_ah(d.pd, &at));
    at.sl = 0;
    /* an AH holds its PD */
    struct ibv_pd *pd = ibv_alloc_pd(d.ctx);
    assert_non_null(pd);
    struct ibv_ah *h = ibv_create_ah(pd, &at);
    assert_non_null(h);
    assert_ptr_equal(h->pd, pd);
    assert_ptr_equal(h->context, d.ctx);
    assert_int_equal(ibv_dealloc_pd(pd), EBUSY);
    assert_int_equal(ibv_destroy_ah(h), 0);
    assert_int_equal(ibv_dealloc_pd(pd), 0);
}

/* The AH may go once the post returns: its address was copied. */
static void ah_destroyed_after_post(void **state)
{
    struct ibv_ah *h = ah_to(&d, &d.gid, d.port.lid);
    assert_non_null(h);
    assert_int_equal(swt_recv(b, 1, buf_b, 256, mr_b->lkey), 0);
    assert_int_equal(ud_send(a, h, b->qp_num, QKEY, 1, buf_a, 4, mr_a->lkey, IBV_WR_SEND, 0), 0);
    assert_int_equal(ibv_destroy_ah(h), 0);
    sent_ok(cq_a, 1);
    struct ibv_wc wc;
    assert_int_equal(swt_poll(cq_b, &wc, 1, 2000), 1);
    assert_int_equal(wc.status, IBV_WC_SUCCESS);
}

static void flush_on_error(void **state)
{
    for (int i = 0; i < 3; i++)
        assert_int_equal(swt_recv(b, 10 + i, buf_b + 256 * i, 256, mr_b->lkey), 0);
    struct ibv_qp_attr at = { .qp_state = IBV_QPS_ERR };
    assert_int_equal(ibv_modify_qp(b, &at, IBV_QP_STATE), 0);
    struct ibv_wc wc[3];
    assert_int_equal(swt_poll(cq_b, wc, 3, 2000), 3);
    for (int i = 0; i < 3; i++) {
        assert_int_equal(wc[i].wr_id, 10 + i);
        assert_int_equal(wc[i].status, IBV_WC_WR_FLUSH_ERR);
    }
    /* a QP in error takes no datagram */
    assert_int_equal(ud_send(a, ah, b->qp_num, QKEY, 1, buf_a, 4, mr_a->lkey, IBV_WR_SEND, 0), 0);
    sent_ok(cq_a, 1);
    nothing_on(cq_b);
    /* and its sends flush */
    assert_int_equal(ud_send(b, ah, a->qp_num, QKEY, 2, buf_b, 4, mr_b->lkey, IBV_WR_SEND, 0), 0);
    assert_int_equal(swt_poll(cq_b, wc, 1, 2000), 1);
    assert_int_equal(wc[0].status, IBV_WC_WR_FLUSH_ERR);
}

/* The responder answers whoever called, from the completion and GRH. */
static void reply_from_wc(void **state)
{
    assert_int_equal(swt_recv(b, 1, buf_b, 256, mr_b->lkey), 0);
    memcpy(buf_a, "ping", 5);
    assert_int_equal(ud_send(a, ah, b->qp_num, QKEY, 1, buf_a, 5, mr_a->lkey, IBV_WR_SEND, 0), 0);
    sent_ok(cq_a, 1);
    struct ibv_wc wc;
    assert_int_equal(swt_poll(cq_b, &wc, 1, 2000), 1);
    assert_int_equal(wc.status, IBV_WC_SUCCESS);
    struct ibv_ah_attr at;
    assert_int_equal(ibv_init_ah_from_wc(d.ctx, 1, &wc, (struct ibv_grh *)buf_b, &at), 0);
    assert_int_equal(at.is_global, 1);
    assert_memory_equal(at.grh.dgid.raw, d.gid.raw, 16);
    assert_int_equal(at.grh.sgid_index, d.gid_index);
    assert_int_equal(at.port_num, 1);
    struct ibv_ah *back = ibv_create_ah_from_wc(d.pd, &wc, (struct ibv_grh *)buf_b, 1);
    assert_non_null(back);
    assert_int_equal(swt_recv(a, 2, buf_a + 4096, 256, mr_a->lkey), 0);
    memcpy(buf_b + 1024, "pong", 5);
    assert_int_equal(ud_send(b, back, wc.src_qp, QKEY, 3, buf_b + 1024, 5, mr_b->lkey, IBV_WR_SEND, 0), 0);
    sent_ok(cq_b, 3);
    assert_int_equal(swt_poll(cq_a, &wc, 1, 2000), 1);
    assert_int_equal(wc.wr_id, 2);
    assert_int_equal(wc.src_qp, b->qp_num);
    assert_string_equal(buf_a + 4096 + GRH, "pong");
    assert_int_equal(ibv_destroy_ah(back), 0);
    /* a GRH that is neither header is refused */
    memset(buf_b, 0, GRH);
    wc.wc_flags = IBV_WC_GRH;
    assert_int_equal(ibv_init_ah_from_wc(d.ctx, 1, &wc, (struct ibv_grh *)buf_b, &at), -1);
    assert_int_equal(errno, EINVAL);
}

/* Two processes: the child answers each datagram it gets, from the
 * completion alone. */
struct knock {
    uint32_t qpn;
    union ibv_gid gid;
    uint16_t lid;
};

static int responder(void *arg)
{
    int sock = *(int *)arg;
    struct swt_dev t;
    if (swt_open(&t))
        return 10;
    struct ibv_cq *cq = ibv_create_cq(t.ctx, 15, NULL, NULL, 0);
    struct ibv_qp *qp = ud_qp(&t, cq, 4);
    char *mem = aligned_alloc(4096, 4096);
    struct ibv_mr *mr = ibv_reg_mr(t.pd, mem, 4096, IBV_ACCESS_LOCAL_WRITE);
    if (!cq || !qp || !mr || ud_up(qp, QKEY))
        return 11;
    for (int i = 0; i < 2; i++)
        if (swt_recv(qp, (uint64_t)i, mem + 1024 * i, 1024, mr->lkey))
            return 12;
    struct knock me = { qp->qp_num, t.gid, t.port.lid };
    if (write(sock, &me, sizeof(me)) != sizeof(me))
        return 13;
    /* two datagrams in, two answers out; a send's completion and the
     * next datagram may come in either order */
    int got = 0, sent = 0;
    uint64_t end = swt_ms() + 10000;
    while (got < 2 || sent < 2) {
        struct ibv_wc wc;
        if (swt_ms() > end)
            return 14;
        if (swt_poll(cq, &wc, 1, 100) != 1)
            continue;
        if (wc.status != IBV_WC_SUCCESS)
            return 15;
        if (wc.opcode == IBV_WC_SEND) {
            sent++;
            continue;
        }
        if (wc.opcode != IBV_WC_RECV || wc.wr_id > 1)
            return 16;
        struct ibv_ah *back = ibv_create_ah_from_wc(t.pd, &wc, (struct ibv_grh *)(mem + 1024 * wc.wr_id), 1);
        if (!back)
            return 17;
        char *msg = mem + 1024 * wc.wr_id + GRH;
        msg[0] = (char)(msg[0] + 1);        /* the answer: the next letter */
        int rc = ud_send(qp, back, wc.src_qp, QKEY, 100, msg, 4, mr->lkey, IBV_WR_SEND, 0);
        ibv_destroy_ah(back);               /* the post copied its address */
        if (rc)
            return 18;
        got++;
    }
    char bye;
    if (read(sock, &bye, 1) != 1)
        return 19;
    ibv_destroy_qp(qp);
    ibv_dereg_mr(mr);
    ibv_destroy_cq(cq);
    swt_close(&t);
    free(mem);
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
        exit(responder(&sv[1]));
    }
    close(sv[1]);
    struct knock peer;
    assert_int_equal(read(sv[0], &peer, sizeof(peer)), sizeof(peer));
    struct ibv_ah *to = ah_to(&d, &peer.gid, peer.lid);
    assert_non_null(to);
    for (int i = 0; i < 2; i++) {
        assert_int_equal(swt_recv(a, 20 + i, buf_a + 4096 * (i + 1), 256, mr_a->lkey), 0);
        memcpy(buf_a + 64 * i, i ? "kno" : "abc", 4);
        assert_int_equal(ud_send(a, to, peer.qpn, QKEY, i, buf_a + 64 * i, 4, mr_a->lkey, IBV_WR_SEND, 0), 0);
        /* the answer may even come before the send's own completion */
        struct ibv_wc wc[2];
        assert_int_equal(swt_poll(cq_a, wc, 2, 10000), 2);
        struct ibv_wc *in = wc[0].opcode == IBV_WC_RECV ? &wc[0] : &wc[1];
        struct ibv_wc *out = in == &wc[0] ? &wc[1] : &wc[0];
        assert_int_equal(out->status, IBV_WC_SUCCESS);
        assert_int_equal(out->opcode, IBV_WC_SEND);
        assert_int_equal(out->wr_id, i);
        assert_int_equal(in->status, IBV_WC_SUCCESS);
        assert_int_equal(in->opcode, IBV_WC_RECV);
        assert_int_equal(in->wr_id, 20 + i);
        assert_int_equal(in->src_qp, peer.qpn);
        assert_string_equal(buf_a + 4096 * (i + 1) + GRH, i ? "lno" : "bbc");
    }
    char bye = 1;
    assert_int_equal(write(sv[0], &bye, 1), 1);
    int st;
    assert_int_equal(waitpid(pid, &st, 0), pid);
    assert_true(WIFEXITED(st));
    assert_int_equal(WEXITSTATUS(st), 0);
    close(sv[0]);
    assert_int_equal(ibv_destroy_ah(to), 0);
}

/* An injected failure (WEFT_SWRDMA_FAULTS=fail_wr) is a UD send's own
 * error: the datagram does not leave and the send queue stops (SQE). */
static int fault_child(void *arg)
{
    swt_fabric("udfault");
    setenv("WEFT_SWRDMA_FAULTS", "fail_wr=1:general", 1);
    struct swt_dev t;
    if (swt_open(&t))
        return 10;
    struct ibv_cq *cq = ibv_create_cq(t.ctx, 15, NULL, NULL, 0);
    struct ibv_qp *p = ud_qp(&t, cq, 4), *q = ud_qp(&t, cq, 4);
    char *mem = aligned_alloc(4096, 4096);
    struct ibv_mr *mr = ibv_reg_mr(t.pd, mem, 4096, IBV_ACCESS_LOCAL_WRITE);
    struct ibv_ah *to = ah_to(&t, &t.gid, t.port.lid);
    if (!cq || !p || !q || !mr || !to || ud_up(p, QKEY) || ud_up(q, QKEY))
        return 11;
    if (swt_recv(q, 1, mem, 256, mr->lkey) ||
        ud_send(p, to, q->qp_num, QKEY, 2, mem + 1024, 4, mr->lkey, IBV_WR_SEND, 0))
        return 12;
    struct ibv_wc wc[2];
    if (swt_poll(cq, wc, 1, 2000) != 1 || wc[0].wr_id != 2 || wc[0].status != IBV_WC_GENERAL_ERR)
        return 13;
    if (swt_state(p) != IBV_QPS_SQE || ibv_poll_cq(cq, 1, wc) != 0)
        return 14;
    struct ibv_qp_attr at = { .qp_state = IBV_QPS_RTS };
    if (ibv_modify_qp(p, &at, IBV_QP_STATE) ||
        ud_send(p, to, q->qp_num, QKEY, 3, mem + 1024, 4, mr->lkey, IBV_WR_SEND, 0))
        return 15;
    if (swt_poll(cq, wc, 2, 2000) != 2 || wc[0].status != IBV_WC_SUCCESS ||
        wc[1].status != IBV_WC_SUCCESS)
        return 16;
    ibv_destroy_ah(to);
    ibv_destroy_qp(p);
    ibv_destroy_qp(q);
    ibv_dereg_mr(mr);
    ibv_destroy_cq(cq);
    swt_close(&t);
    free(mem);
    return 0;
}

static void injected_fault(void **state)
{
    assert_int_equal(swt_child(fault_child, NULL), 0);
}

/* An InfiniBand port routes by LID: no GRH unless the AH asks for one,
 * the 40 bytes still counted; the reply's AH uses the source LID. */
static int infiniband_child(void *arg)
{
    swt_fabric("udib");
    setenv("WEFT_SWRDMA_CONFIG", "link=ib,mtu=2048", 1);
    struct swt_dev t;
    if (swt_open(&t) || t.port.link_layer != IBV_LINK_LAYER_INFINIBAND || t.port.lid == 0)
        return 10;
    struct ibv_cq *cq = ibv_create_cq(t.ctx, 15, NULL, NULL, 0);
    struct ibv_qp *p = ud_qp(&t, cq, 4), *q = ud_qp(&t, cq, 4);
    char *mem = aligned_alloc(4096, 8192);
    struct ibv_mr *mr = ibv_reg_mr(t.pd, mem, 8192, IBV_ACCESS_LOCAL_WRITE);
    if (!cq || !p || !q || !mr || ud_up(p, QKEY) || ud_up(q, QKEY))
        return 11;
    if (ah_to(&t, NULL, 0) || errno != EINVAL)
        return 12;                  /* LID 0 is no address */
    struct ibv_ah *lid = ah_to(&t, NULL, t.port.lid), *glob = ah_to(&t, &t.gid, t.port.lid);
    if (!lid || !glob)
        return 13;
    memset(mem, '.', 8192);
    strcpy(mem + 4096, "ib");
    if (swt_recv(q, 1, mem, 256, mr->lkey) || swt_recv(q, 2, mem + 256, 256, mr->lkey))
        return 14;
    if (ud_send(p, lid, q->qp_num, QKEY, 3, mem + 4096, 3, mr->lkey, IBV_WR_SEND, 0) ||
        ud_send(p, glob, q->qp_num, QKEY, 4, mem + 4096, 3, mr->lkey, IBV_WR_SEND, 0))
        return 15;
    struct ibv_wc wc[4];
    if (swt_poll(cq, wc, 4, 5000) != 4)
        return 16;
    struct ibv_wc *r1 = NULL, *r2 = NULL;
    for (int i = 0; i < 4; i++) {
        if (wc[i].status != IBV_WC_SUCCESS)
            return 17;
        if (wc[i].wr_id == 1)
            r1 = &wc[i];
        if (wc[i].wr_id == 2)
            r2 = &wc[i];
    }
    if (!r1 || !r2 || r1->byte_len != GRH + 3 || r2->byte_len != GRH + 3)
        return 18;
    if ((r1->wc_flags & IBV_WC_GRH) || r1->slid != t.port.lid || mem[0] != '.' ||
        strcmp(mem + GRH, "ib"))
        return 19;                  /* no GRH: its 40 bytes untouched */
    if (!(r2->wc_flags & IBV_WC_GRH) || (mem[256] & 0xff) >> 4 != 6 || (mem[256 + 6] & 0xff) != 0x1b ||
        memcmp(mem + 256 + 8, t.gid.raw, 16))
        return 20;
    struct ibv_ah_attr at;
    if (ibv_init_ah_from_wc(t.ctx, 1, r1, NULL, &at) || at.is_global || at.dlid != t.port.lid)
        return 21;
    ibv_destroy_ah(lid);
    ibv_destroy_ah(glob);
    ibv_destroy_qp(p);
    ibv_destroy_qp(q);
    ibv_dereg_mr(mr);
    ibv_destroy_cq(cq);
    swt_close(&t);
    free(mem);
    return 0;
}

static void infiniband(void **state)
{
    assert_int_equal(swt_child(infiniband_child, NULL), 0);
}

int main(void)
{
    swt_fabric("ud");
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(state_machine),
        cmocka_unit_test_setup_teardown(datagram, up, down),
        cmocka_unit_test_setup_teardown(receives_in_order, up, down),
        cmocka_unit_test_setup_teardown(no_receive_drops, up, down),
        cmocka_unit_test_setup_teardown(not_ready_drops, up, down),
        cmocka_unit_test_setup_teardown(qkey, up, down),
        cmocka_unit_test_setup_teardown(lost_to_nobody, up, down),
        cmocka_unit_test_setup_teardown(above_mtu, up, down),
        cmocka_unit_test_setup_teardown(receive_too_small, up, down),
        cmocka_unit_test_setup_teardown(opcodes, up, down),
        cmocka_unit_test(ah_attributes),
        cmocka_unit_test_setup_teardown(ah_destroyed_after_post, up, down),
        cmocka_unit_test_setup_teardown(flush_on_error, up, down),
        cmocka_unit_test_setup_teardown(reply_from_wc, up, down),
        cmocka_unit_test_setup_teardown(two_processes, up, down),
        cmocka_unit_test(injected_fault),
        cmocka_unit_test(infiniband),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
