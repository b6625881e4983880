/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_qp.c: the RC queue pair as ibv_create_qp(3) and ibv_modify_qp(3)
 * describe it: limits and the capabilities returned, each transition of
 * Reset -> Init -> RTR -> RTS with its required attributes (one missing,
 * one extra or one out of range fails the call and changes nothing),
 * transitions that do not exist, posting in each state, the error state
 * flushing both queues, Reset dropping them, and SQD.
 */
#include "config.h"

#include <errno.h>
#include <poll.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "tests/swrdma/swtest.h"

static struct swt_dev d;
static struct ibv_cq *cq;

static int setup(void **state)
{
    if (swt_open(&d))
        return -1;
    cq = ibv_create_cq(d.ctx, 255, NULL, NULL, 0);
    return cq ? 0 : -1;
}

static int teardown(void **state)
{
    ibv_destroy_cq(cq);
    swt_close(&d);
    return 0;
}

static void create(void **state)
{
    struct ibv_device_attr a;
    assert_int_equal(ibv_query_device(d.ctx, &a), 0);
    struct ibv_qp_init_attr ia;
    memset(&ia, 0, sizeof(ia));
    ia.send_cq = cq;
    ia.recv_cq = cq;
    ia.qp_type = IBV_QPT_RC;
    ia.cap.max_send_wr = 5;
    ia.cap.max_recv_wr = 3;
    ia.cap.max_send_sge = 2;
    ia.cap.max_recv_sge = 3;
    ia.cap.max_inline_data = 16;
    struct ibv_qp *qp = ibv_create_qp(d.pd, &ia);
    assert_non_null(qp);
    assert_true(ia.cap.max_send_wr >= 5);
    assert_true(ia.cap.max_recv_wr >= 3);
    assert_true(ia.cap.max_send_sge >= 2);
    assert_true(ia.cap.max_recv_sge >= 3);
    assert_true(ia.cap.max_inline_data >= 16);
    assert_int_equal(qp->state, IBV_QPS_RESET);
    assert_int_equal(swt_state(qp), IBV_QPS_RESET);
    assert_true(qp->qp_num > 1 && qp->qp_num < (1u << 24));
    struct ibv_qp *other = swt_qp(&d, cq, cq, 1, 1, 0);
    assert_non_null(other);
    assert_int_not_equal(other->qp_num, qp->qp_num);
    struct ibv_qp_attr at;
    struct ibv_qp_init_attr got;
    assert_int_equal(ibv_query_qp(qp, &at, IBV_QP_CAP, &got), 0);
    assert_int_equal(got.cap.max_send_wr, ia.cap.max_send_wr);
    assert_int_equal(got.qp_type, IBV_QPT_RC);
    assert_ptr_equal(got.send_cq, cq);
    assert_int_equal(ibv_destroy_qp(other), 0);
    assert_int_equal(ibv_destroy_qp(qp), 0);

    /* beyond the device's limits, or not what this device offers */
    ia.cap.max_send_wr = (uint32_t)a.max_qp_wr + 1;
    assert_null(ibv_create_qp(d.pd, &ia));
    assert_int_equal(errno, EINVAL);
    ia.cap.max_send_wr = 1;
    ia.cap.max_recv_sge = (uint32_t)a.max_sge + 1;
    assert_null(ibv_create_qp(d.pd, &ia));
    assert_int_equal(errno, EINVAL);
    ia.cap.max_recv_sge = 1;
    ia.cap.max_inline_data = 1u << 20;
    assert_null(ibv_create_qp(d.pd, &ia));
    assert_int_equal(errno, EINVAL);
    ia.cap.max_inline_data = 0;
    ia.send_cq = NULL;
    assert_null(ibv_create_qp(d.pd, &ia));
    ia.send_cq = cq;
    ia.qp_type = IBV_QPT_UC;
    assert_null(ibv_create_qp(d.pd, &ia));
    assert_int_equal(errno, EOPNOTSUPP);
}

static int init_mask = IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS;

static void init_attr(struct ibv_qp_attr *at)
{
    memset(at, 0, sizeof(*at));
    at->qp_state = IBV_QPS_INIT;
    at->port_num = 1;
    at->qp_access_flags = IBV_ACCESS_REMOTE_WRITE;
}

static void reset_to_init(void **state)
{
    struct ibv_qp *qp = swt_qp(&d, cq, cq, 4, 1, 0);
    struct ibv_qp_attr at;
    init_attr(&at);
    static const int required[] = { IBV_QP_PKEY_INDEX, IBV_QP_PORT, IBV_QP_ACCESS_FLAGS };
    for (size_t i = 0; i < 3; i++) {
        assert_int_equal(ibv_modify_qp(qp, &at, init_mask & ~required[i]), EINVAL);
        assert_int_equal(swt_state(qp), IBV_QPS_RESET);
    }
    assert_int_equal(ibv_modify_qp(qp, &at, init_mask | IBV_QP_SQ_PSN), EINVAL);
    at.port_num = 2;
    assert_int_equal(ibv_modify_qp(qp, &at, init_mask), EINVAL);
    at.port_num = 1;
    at.pkey_index = 1;
    assert_int_equal(ibv_modify_qp(qp, &at, init_mask), EINVAL);
    at.pkey_index = 0;
    at.qp_access_flags = 1u << 12;
    assert_int_equal(ibv_modify_qp(qp, &at, init_mask), EINVAL);
    assert_int_equal(swt_state(qp), IBV_QPS_RESET);
    at.qp_access_flags = IBV_ACCESS_REMOTE_WRITE;
    assert_int_equal(ibv_modify_qp(qp, &at, init_mask), 0);
    assert_int_equal(swt_state(qp), IBV_QPS_INIT);
    assert_int_equal(qp->state, IBV_QPS_INIT);
    /* Init -> Init takes the same attributes, none required */
    at.qp_access_flags = IBV_ACCESS_REMOTE_READ;
    assert_int_equal(ibv_modify_qp(qp, &at, IBV_QP_STATE | IBV_QP_ACCESS_FLAGS), 0);
    struct ibv_qp_attr q;
    struct ibv_qp_init_attr qi;
    assert_int_equal(ibv_query_qp(qp, &q, IBV_QP_ACCESS_FLAGS, &qi), 0);
    assert_int_equal(q.qp_access_flags, IBV_ACCESS_REMOTE_READ);
    assert_int_equal(ibv_destroy_qp(qp), 0);
}

static const int rtr_mask = IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
                            IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER;

static void rtr_attr(struct ibv_qp_attr *at, uint32_t dest)
{
    memset(at, 0, sizeof(*at));
    at->qp_state = IBV_QPS_RTR;
    at->path_mtu = d.port.active_mtu;
    at->dest_qp_num = dest;
    at->rq_psn = 0x123456;
    at->max_dest_rd_atomic = 2;
    at->min_rnr_timer = 12;
    at->ah_attr.is_global = 1;
    at->ah_attr.port_num = 1;
    at->ah_attr.grh.dgid = d.gid;
    at->ah_attr.grh.sgid_index = (uint8_t)d.gid_index;
    at->ah_attr.grh.hop_limit = 64;
}

static void init_to_rtr(void **state)
{
    struct ibv_qp *qp = swt_qp(&d, cq, cq, 4, 1, 0);
    struct ibv_qp_attr at;
    init_attr(&at);
    assert_int_equal(ibv_modify_qp(qp, &at, init_mask), 0);
    rtr_attr(&at, 0x4242);
    static const int required[] = { IBV_QP_AV, IBV_QP_PATH_MTU, IBV_QP_DEST_QPN, IBV_QP_RQ_PSN,
                                    IBV_QP_MAX_DEST_RD_ATOMIC, IBV_QP_MIN_RNR_TIMER };
    for (size_t i = 0; i < 6; i++) {
        assert_int_equal(ibv_modify_qp(qp, &at, rtr_mask & ~required[i]), EINVAL);
        assert_int_equal(swt_state(qp), IBV_QPS_INIT);
    }
    assert_int_equal(ibv_modify_qp(qp, &at, rtr_mask | IBV_QP_SQ_PSN), EINVAL);
    if (d.port.active_mtu < IBV_MTU_4096) {
        at.path_mtu = d.port.active_mtu + 1;      /* larger than the port's */
        assert_int_equal(ibv_modify_qp(qp, &at, rtr_mask), EINVAL);
    }
    rtr_attr(&at, 0x4242);
    at.ah_attr.is_global = 0;                      /* RoCE needs the GRH */
    assert_int_equal(ibv_modify_qp(qp, &at, rtr_mask), EINVAL);
    rtr_attr(&at, 0x4242);
    at.ah_attr.grh.sgid_index = 15;                /* an empty entry */
    assert_int_equal(ibv_modify_qp(qp, &at, rtr_mask), EINVAL);
    rtr_attr(&at, 0x4242);
    at.ah_attr.port_num = 0;
    assert_int_equal(ibv_modify_qp(qp, &at, rtr_mask), EINVAL);
    rtr_attr(&at, 0x4242);
    at.max_dest_rd_atomic = 17;
    assert_int_equal(ibv_modify_qp(qp, &at, rtr_mask), EINVAL);
    rtr_attr(&at, 1u << 24);
    assert_int_equal(ibv_modify_qp(qp, &at, rtr_mask), EINVAL);
    assert_int_equal(swt_state(qp), IBV_QPS_INIT);
    rtr_attr(&at, 0x4242);
    assert_int_equal(ibv_modify_qp(qp, &at, rtr_mask), 0);
    struct ibv_qp_attr q;
    struct ibv_qp_init_attr qi;
    assert_int_equal(ibv_query_qp(qp, &q, rtr_mask, &qi), 0);
    assert_int_equal(q.qp_state, IBV_QPS_RTR);
    assert_int_equal(q.dest_qp_num, 0x4242);
    assert_int_equal(q.rq_psn, 0x123456);
    assert_int_equal(q.path_mtu, d.port.active_mtu);
    assert_int_equal(q.max_dest_rd_atomic, 2);
    assert_int_equal(q.min_rnr_timer, 12);
    assert_memory_equal(q.ah_attr.grh.dgid.raw, d.gid.raw, 16);
    assert_int_equal(ibv_destroy_qp(qp), 0);
}

static const int rts_mask = IBV_QP_STATE | IBV_QP_SQ_PSN | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT |
                            IBV_QP_RNR_RETRY | IBV_QP_MAX_QP_RD_ATOMIC;

static void rts_attr(struct ibv_qp_attr *at)
{
    memset(at, 0, sizeof(*at));
    at->qp_state = IBV_QPS_RTS;
    at->sq_psn = 0x654321;
    at->timeout = 14;
    at->retry_cnt = 7;
    at->rnr_retry = 6;
    at->max_rd_atomic = 3;
}

static void rtr_to_rts(void **state)
{
    struct ibv_qp *qp = swt_qp(&d, cq, cq, 4, 1, 0);
    struct ibv_qp_attr at;
    init_attr(&at);
    assert_int_equal(ibv_modify_qp(qp, &at, init_mask), 0);
    rtr_attr(&at, 0x4242);
    assert_int_equal(ibv_modify_qp(qp, &at, rtr_mask), 0);
    rts_attr(&at);
    static const int required[] = { IBV_QP_SQ_PSN, IBV_QP_TIMEOUT, IBV_QP_RETRY_CNT,
                                    IBV_QP_RNR_RETRY, IBV_QP_MAX_QP_RD_ATOMIC };
    for (size_t i = 0; i < 5; i++) {
        assert_int_equal(ibv_modify_qp(qp, &at, rts_mask & ~required[i]), EINVAL);
        assert_int_equal(swt_state(qp), IBV_QPS_RTR);
    }
    at.timeout = 32;
    assert_int_equal(ibv_modify_qp(qp, &at, rts_mask), EINVAL);
    rts_attr(&at);
    at.retry_cnt = 8;
    assert_int_equal(ibv_modify_qp(qp, &at, rts_mask), EINVAL);
    rts_attr(&at);
    at.rnr_retry = 8;
    assert_int_equal(ibv_modify_qp(qp, &at, rts_mask), EINVAL);
    rts_attr(&at);
    at.max_rd_atomic = 17;
    assert_int_equal(ibv_modify_qp(qp, &at, rts_mask), EINVAL);
    rts_attr(&at);
    at.cur_qp_state = IBV_QPS_INIT;                /* not where it is */
    assert_int_equal(ibv_modify_qp(qp, &at, rts_mask | IBV_QP_CUR_STATE), EINVAL);
    assert_int_equal(swt_state(qp), IBV_QPS_RTR);
    at.cur_qp_state = IBV_QPS_RTR;
    assert_int_equal(ibv_modify_qp(qp, &at, rts_mask | IBV_QP_CUR_STATE), 0);
    struct ibv_qp_attr q;
    struct ibv_qp_init_attr qi;
    assert_int_equal(ibv_query_qp(qp, &q, rts_mask, &qi), 0);
    assert_int_equal(q.qp_state, IBV_QPS_RTS);
    assert_int_equal(q.sq_psn, 0x654321);
    assert_int_equal(q.timeout, 14);
    assert_int_equal(q.retry_cnt, 7);
    assert_int_equal(q.rnr_retry, 6);
    assert_int_equal(q.max_rd_atomic, 3);
    /* RTS -> RTS takes only optional attributes */
    at.min_rnr_timer = 3;
    assert_int_equal(ibv_modify_qp(qp, &at, IBV_QP_MIN_RNR_TIMER), 0);
    assert_int_equal(ibv_modify_qp(qp, &at, IBV_QP_TIMEOUT), EINVAL);
    assert_int_equal(ibv_destroy_qp(qp), 0);
}

static void move(struct ibv_qp *qp, enum ibv_qp_state to, int expect)
{
    struct ibv_qp_attr at;
    memset(&at, 0, sizeof(at));
    at.qp_state = to;
    enum ibv_qp_state before = swt_state(qp);
    assert_int_equal(ibv_modify_qp(qp, &at, IBV_QP_STATE), expect);
    assert_int_equal(swt_state(qp), expect ? before : to);
}

static void transitions(void **state)
{
    struct ibv_qp *qp = swt_qp(&d, cq, cq, 4, 1, 0);
    move(qp, IBV_QPS_RTR, EINVAL);
    move(qp, IBV_QPS_RTS, EINVAL);
    move(qp, IBV_QPS_SQD, EINVAL);
    struct ibv_qp_attr at;
    init_attr(&at);
    assert_int_equal(ibv_modify_qp(qp, &at, init_mask), 0);
    move(qp, IBV_QPS_RTS, EINVAL);
    move(qp, IBV_QPS_SQD, EINVAL);
    move(qp, IBV_QPS_ERR, 0);
    move(qp, IBV_QPS_RTS, EINVAL);
    move(qp, IBV_QPS_INIT, EINVAL);
    move(qp, IBV_QPS_ERR, 0);
    move(qp, IBV_QPS_RESET, 0);
    /* a QP back in Reset starts over */
    assert_int_equal(ibv_modify_qp(qp, &at, init_mask), 0);
    move(qp, IBV_QPS_RESET, 0);
    move(qp, IBV_QPS_ERR, 0);
    /* to Reset or Err takes nothing but the state */
    at.qp_state = IBV_QPS_RESET;
    assert_int_equal(ibv_modify_qp(qp, &at, IBV_QP_STATE | IBV_QP_PORT), EINVAL);
    assert_int_equal(ibv_destroy_qp(qp), 0);
}

static void post_by_state(void **state)
{
    struct ibv_qp *qp = swt_qp(&d, cq, cq, 4, 1, 0);
    char buf[8];
    struct ibv_sge sge = { (uintptr_t)buf, 0, 0 };
    struct ibv_send_wr wr, *bad = NULL;
    memset(&wr, 0, sizeof(wr));
    wr.sg_list = &sge;
    wr.num_sge = 1;
    wr.opcode = IBV_WR_SEND;
    struct ibv_recv_wr rwr, *rbad = NULL;
    memset(&rwr, 0, sizeof(rwr));
    assert_int_equal(ibv_post_send(qp, &wr, &bad), EINVAL);
    assert_ptr_equal(bad, &wr);
    assert_int_equal(ibv_post_recv(qp, &rwr, &rbad), EINVAL);
    assert_ptr_equal(rbad, &rwr);
    struct ibv_qp_attr at;
    init_attr(&at);
    assert_int_equal(ibv_modify_qp(qp, &at, init_mask), 0);
    bad = NULL;
    assert_int_equal(ibv_post_send(qp, &wr, &bad), EINVAL);
    assert_ptr_equal(bad, &wr);
    assert_int_equal(ibv_post_recv(qp, &rwr, &rbad), 0);     /* receives from Init on */
    rtr_attr(&at, 0x4242);
    assert_int_equal(ibv_modify_qp(qp, &at, rtr_mask), 0);
    assert_int_equal(ibv_post_send(qp, &wr, &bad), EINVAL);
    assert_int_equal(ibv_destroy_qp(qp), 0);
}

static void error_flushes(void **state)
{
    struct ibv_cq *scq = ibv_create_cq(d.ctx, 31, NULL, NULL, 0);
    struct ibv_cq *rcq = ibv_create_cq(d.ctx, 31, NULL, NULL, 0);
    struct ibv_qp *qp = ibv_create_qp(d.pd, &(struct ibv_qp_init_attr){
        .send_cq = scq, .recv_cq = rcq, .qp_type = IBV_QPT_RC,
        .cap = { .max_send_wr = 8, .max_recv_wr = 8, .max_send_sge = 1, .max_recv_sge = 1 } });
    assert_non_null(qp);
    /* a peer that never answers, and a timeout of 0 (wait for ever):
     * the sends stay posted until the QP leaves RTS */
    struct swt_conn c = swt_conn_default();
    c.timeout = 0;
    struct swt_addr nobody;
    swt_addr_of(&d, qp, 1, &nobody);
    nobody.qpn = 0x7ffff0;
    assert_int_equal(swt_connect(&d, qp, 1, &nobody, &c), 0);
    for (uint64_t i = 1; i <= 3; i++)
        assert_int_equal(swt_recv(qp, 100 + i, NULL, 0, 0), 0);
    assert_int_equal(swt_send(qp, IBV_WR_SEND, 201, NULL, 0, 0, 0, 0, 0, 0), 0);
    assert_int_equal(swt_send(qp, IBV_WR_SEND, 202, NULL, 0, 0, IBV_SEND_SIGNALED, 0, 0, 0), 0);
    struct ibv_wc wc[8];
    assert_int_equal(swt_poll(scq, wc, 1, 30), 0);
    move(qp, IBV_QPS_ERR, 0);
    /* every request completes, signaled or not, in order */
    assert_int_equal(swt_poll(rcq, wc, 3, 1000), 3);
    for (int i = 0; i < 3; i++) {
        assert_int_equal(wc[i].status, IBV_WC_WR_FLUSH_ERR);
        assert_int_equal(wc[i].wr_id, 101 + i);
        assert_int_equal(wc[i].qp_num, qp->qp_num);
    }
    assert_int_equal(swt_poll(scq, wc, 2, 1000), 2);
    assert_int_equal(wc[0].wr_id, 201);
    assert_int_equal(wc[1].wr_id, 202);
    assert_int_equal(wc[0].status, IBV_WC_WR_FLUSH_ERR);
    assert_int_equal(wc[1].status, IBV_WC_WR_FLUSH_ERR);
    /* posted in error: taken, and flushed */
    assert_int_equal(swt_recv(qp, 104, NULL, 0, 0), 0);
    assert_int_equal(swt_poll(rcq, wc, 1, 1000), 1);
    assert_int_equal(wc[0].wr_id, 104);
    assert_int_equal(wc[0].status, IBV_WC_WR_FLUSH_ERR);
    assert_int_equal(swt_send(qp, IBV_WR_SEND, 203, NULL, 0, 0, 0, 0, 0, 0), 0);
    assert_int_equal(swt_poll(scq, wc, 1, 1000), 1);
    assert_int_equal(wc[0].wr_id, 203);
    assert_int_equal(wc[0].status, IBV_WC_WR_FLUSH_ERR);
    assert_int_equal(ibv_destroy_qp(qp), 0);
    assert_int_equal(ibv_destroy_cq(scq), 0);
    assert_int_equal(ibv_destroy_cq(rcq), 0);
}

static void reset_drops(void **state)
{
    struct ibv_qp *qp = swt_qp(&d, cq, cq, 4, 1, 0);
    struct ibv_qp_attr at;
    init_attr(&at);
    assert_int_equal(ibv_modify_qp(qp, &at, init_mask), 0);
    assert_int_equal(swt_recv(qp, 1, NULL, 0, 0), 0);
    assert_int_equal(swt_recv(qp, 2, NULL, 0, 0), 0);
    move(qp, IBV_QPS_RESET, 0);
    struct ibv_wc wc;
    assert_int_equal(swt_poll(cq, &wc, 1, 30), 0);
    /* and the queue is empty again: it takes its whole depth */
    assert_int_equal(ibv_modify_qp(qp, &at, init_mask), 0);
    for (int i = 0; i < 4; i++)
        assert_int_equal(swt_recv(qp, 10 + (uint64_t)i, NULL, 0, 0), 0);
    assert_int_equal(swt_recv(qp, 20, NULL, 0, 0), ENOMEM);
    assert_int_equal(ibv_destroy_qp(qp), 0);
}

static void sq_drain(void **state)
{
    struct ibv_qp *a = swt_qp(&d, cq, cq, 4, 1, 0), *b = swt_qp(&d, cq, cq, 4, 1, 0);
    struct swt_conn c = swt_conn_default();
    assert_int_equal(swt_pair(&d, a, b, &c), 0);
    struct ibv_qp_attr at;
    memset(&at, 0, sizeof(at));
    at.qp_state = IBV_QPS_SQD;
    at.en_sqd_async_notify = 1;
    assert_int_equal(ibv_modify_qp(a, &at, IBV_QP_STATE | IBV_QP_EN_SQD_ASYNC_NOTIFY), 0);
    struct pollfd p = { .fd = d.ctx->async_fd, .events = POLLIN };
    assert_int_equal(poll(&p, 1, 2000), 1);
    struct ibv_async_event ev;
    assert_int_equal(ibv_get_async_event(d.ctx, &ev), 0);
    assert_int_equal(ev.event_type, IBV_EVENT_SQ_DRAINED);
    assert_ptr_equal(ev.element.qp, a);
    ibv_ack_async_event(&ev);
    /* posted in SQD: taken, not executed until RTS */
    assert_int_equal(swt_recv(b, 1, NULL, 0, 0), 0);
    assert_int_equal(swt_send(a, IBV_WR_SEND, 7, NULL, 0, 0, IBV_SEND_SIGNALED, 0, 0, 0), 0);
    struct ibv_wc wc[2];
    assert_int_equal(swt_poll(cq, wc, 1, 30), 0);
    at.qp_state = IBV_QPS_RTS;
    assert_int_equal(ibv_modify_qp(a, &at, IBV_QP_STATE), 0);
    assert_int_equal(swt_poll(cq, wc, 2, 2000), 2);
    assert_int_equal(wc[0].status, IBV_WC_SUCCESS);
    assert_int_equal(wc[1].status, IBV_WC_SUCCESS);
    assert_int_equal(ibv_destroy_qp(a), 0);
    assert_int_equal(ibv_destroy_qp(b), 0);
}

int main(void)
{
    swt_fabric("qp");
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(create), cmocka_unit_test(reset_to_init), cmocka_unit_test(init_to_rtr),
        cmocka_unit_test(rtr_to_rts), cmocka_unit_test(transitions), cmocka_unit_test(post_by_state),
        cmocka_unit_test(error_flushes), cmocka_unit_test(reset_drops), cmocka_unit_test(sq_drain),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
