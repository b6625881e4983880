/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_events.c: completion and async events as ibv_req_notify_cq(3),
 * ibv_get_cq_event(3) and ibv_get_async_event(3) describe them: an event
 * only for a new entry after arming, one per arming, solicited-only
 * arming, descriptors usable with poll() and O_NONBLOCK, destroying a CQ
 * waiting for its events to be acknowledged, events of destroyed objects
 * dropped, and IBV_EVENT_COMM_EST.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "tests/swrdma/swtest.h"

static struct swt_dev d;
static struct ibv_comp_channel *ch;
static struct ibv_cq *cq_a, *cq_b;
static struct ibv_qp *a, *b;
static char *buf;
static struct ibv_mr *mr;
static int ctx_tag;

static int setup(void **state)
{
    if (swt_open(&d))
        return -1;
    ch = ibv_create_comp_channel(d.ctx);
    cq_a = ibv_create_cq(d.ctx, 63, &ctx_tag, ch, 0);
    cq_b = ibv_create_cq(d.ctx, 63, NULL, ch, 0);
    buf = aligned_alloc(4096, 65536);
    mr = ibv_reg_mr(d.pd, buf, 65536, SWT_ACCESS_ALL);
    a = swt_qp(&d, cq_a, cq_a, 16, 1, 0);
    b = swt_qp(&d, cq_b, cq_b, 16, 1, 0);
    struct swt_conn c = swt_conn_default();
    return ch && cq_a && cq_b && mr && a && b && swt_pair(&d, a, b, &c) == 0 ? 0 : -1;
}

static int teardown(void **state)
{
    ibv_destroy_qp(a);
    ibv_destroy_qp(b);
    ibv_dereg_mr(mr);
    ibv_destroy_cq(cq_a);
    ibv_destroy_cq(cq_b);
    ibv_destroy_comp_channel(ch);
    free(buf);
    swt_close(&d);
    return 0;
}

static int readable(int fd, int ms)
{
    struct pollfd p = { .fd = fd, .events = POLLIN };
    return poll(&p, 1, ms);
}

static void write_a(uint64_t id)
{
    assert_int_equal(swt_send(a, IBV_WR_RDMA_WRITE, id, buf, 8, mr->lkey, IBV_SEND_SIGNALED,
                              (uintptr_t)buf + 4096, mr->rkey, 0), 0);
}

static void drain(struct ibv_cq *cq, int n)
{
    struct ibv_wc wc[8];
    assert_int_equal(swt_poll(cq, wc, n, 2000), n);
}

static void armed_once(void **state)
{
    /* not armed: a completion, no event */
    write_a(1);
    drain(cq_a, 1);
    assert_int_equal(readable(ch->fd, 50), 0);
    /* armed: the next completion raises one event, for that CQ */
    assert_int_equal(ibv_req_notify_cq(cq_a, 0), 0);
    write_a(2);
    assert_int_equal(readable(ch->fd, 2000), 1);
    struct ibv_cq *got;
    void *got_ctx;
    assert_int_equal(ibv_get_cq_event(ch, &got, &got_ctx), 0);
    assert_ptr_equal(got, cq_a);
    assert_ptr_equal(got_ctx, &ctx_tag);
    ibv_ack_cq_events(got, 1);
    drain(cq_a, 1);
    /* one event per arming */
    write_a(3);
    drain(cq_a, 1);
    assert_int_equal(readable(ch->fd, 50), 0);
    /* entries already there when arming raise nothing: only new ones */
    write_a(4);
    struct timespec ts = { 0, 30000000 };
    nanosleep(&ts, NULL);
    assert_int_equal(ibv_req_notify_cq(cq_a, 0), 0);
    assert_int_equal(readable(ch->fd, 50), 0);
    write_a(5);
    assert_int_equal(readable(ch->fd, 2000), 1);
    assert_int_equal(ibv_get_cq_event(ch, &got, &got_ctx), 0);
    ibv_ack_cq_events(got, 1);
    drain(cq_a, 2);
}

static void solicited(void **state)
{
    assert_int_equal(ibv_req_notify_cq(cq_b, 1), 0);
    assert_int_equal(swt_recv(b, 1, buf + 8192, 64, mr->lkey), 0);
    assert_int_equal(swt_recv(b, 2, buf + 8192, 64, mr->lkey), 0);
    assert_int_equal(swt_send(a, IBV_WR_SEND, 1, buf, 8, mr->lkey, 0, 0, 0, 0), 0);
    drain(cq_b, 1);
    assert_int_equal(readable(ch->fd, 50), 0);     /* not solicited */
    assert_int_equal(swt_send(a, IBV_WR_SEND, 2, buf, 8, mr->lkey, IBV_SEND_SOLICITED, 0, 0, 0), 0);
    assert_int_equal(readable(ch->fd, 2000), 1);
    struct ibv_cq *got;
    void *got_ctx;
    assert_int_equal(ibv_get_cq_event(ch, &got, &got_ctx), 0);
    assert_ptr_equal(got, cq_b);
    ibv_ack_cq_events(got, 1);
    drain(cq_b, 1);
}

static void nonblocking(void **state)
{
    int fl = fcntl(ch->fd, F_GETFL);
    assert_int_equal(fcntl(ch->fd, F_SETFL, fl | O_NONBLOCK), 0);
    struct ibv_cq *got;
    void *got_ctx;
    assert_int_equal(ibv_get_cq_event(ch, &got, &got_ctx), -1);
    assert_int_equal(errno, EAGAIN);
    assert_int_equal(fcntl(ch->fd, F_SETFL, fl), 0);
    fl = fcntl(d.ctx->async_fd, F_GETFL);
    assert_int_equal(fcntl(d.ctx->async_fd, F_SETFL, fl | O_NONBLOCK), 0);
    struct ibv_async_event ev;
    assert_int_equal(ibv_get_async_event(d.ctx, &ev), -1);
    assert_int_equal(errno, EAGAIN);
    assert_int_equal(fcntl(d.ctx->async_fd, F_SETFL, fl), 0);
}

static void *destroyer(void *arg)
{
    return (void *)(intptr_t)ibv_destroy_cq(arg);
}

/* ibv_destroy_cq() waits until the events it handed out are acknowledged */
static void destroy_waits_for_ack(void **state)
{
    struct ibv_cq *cq = ibv_create_cq(d.ctx, 7, NULL, ch, 0);
    struct ibv_qp *x = swt_qp(&d, cq, cq, 4, 1, 0), *y = swt_qp(&d, cq_b, cq_b, 4, 1, 0);
    struct swt_conn c = swt_conn_default();
    assert_int_equal(swt_pair(&d, x, y, &c), 0);
    assert_int_equal(ibv_req_notify_cq(cq, 0), 0);
    assert_int_equal(swt_send(x, IBV_WR_RDMA_WRITE, 1, buf, 8, mr->lkey, IBV_SEND_SIGNALED,
                              (uintptr_t)buf + 4096, mr->rkey, 0), 0);
    struct ibv_cq *got;
    void *got_ctx;
    assert_int_equal(ibv_get_cq_event(ch, &got, &got_ctx), 0);
    assert_ptr_equal(got, cq);
    drain(cq, 1);
    assert_int_equal(ibv_destroy_qp(x), 0);
    assert_int_equal(ibv_destroy_qp(y), 0);
    pthread_t t;
    assert_int_equal(pthread_create(&t, NULL, destroyer, cq), 0);
    struct timespec ts = { 0, 50000000 };
    nanosleep(&ts, NULL);
    void *rc = (void *)1;
    assert_int_equal(pthread_tryjoin_np(t, &rc), EBUSY);   /* still waiting */
    ibv_ack_cq_events(got, 1);
    assert_int_equal(pthread_join(t, &rc), 0);
    assert_int_equal((intptr_t)rc, 0);
}

/* Events queued for an object that is then destroyed are gone with it. */
static void destroyed_objects_events(void **state)
{
    struct ibv_cq *cq = ibv_create_cq(d.ctx, 7, NULL, ch, 0);
    struct ibv_qp *x = swt_qp(&d, cq, cq, 4, 1, 0), *y = swt_qp(&d, cq_b, cq_b, 4, 1, 0);
    struct swt_conn c = swt_conn_default();
    assert_int_equal(swt_pair(&d, x, y, &c), 0);
    assert_int_equal(ibv_req_notify_cq(cq, 0), 0);
    assert_int_equal(swt_send(x, IBV_WR_RDMA_WRITE, 1, buf, 8, mr->lkey, IBV_SEND_SIGNALED,
                              (uintptr_t)buf + 4096, mr->rkey, 0), 0);
    assert_int_equal(readable(ch->fd, 2000), 1);
    /* an access error: y gets an async event, not taken */
    assert_int_equal(swt_send(x, IBV_WR_RDMA_WRITE, 2, buf, 8, mr->lkey, IBV_SEND_SIGNALED,
                              (uintptr_t)buf + 4096, mr->rkey ^ 0x100, 0), 0);
    assert_int_equal(readable(d.ctx->async_fd, 2000), 1);
    assert_int_equal(ibv_destroy_qp(x), 0);
    assert_int_equal(ibv_destroy_qp(y), 0);
    assert_int_equal(readable(d.ctx->async_fd, 0), 0);
    assert_int_equal(ibv_destroy_cq(cq), 0);
    assert_int_equal(readable(ch->fd, 0), 0);
    struct ibv_wc wc[4];
    while (ibv_poll_cq(cq_b, 4, wc) > 0)
        ;
}

static void comm_est(void **state)
{
    /* a responder still in RTR learns that its peer has started */
    struct ibv_qp *x = swt_qp(&d, cq_a, cq_a, 4, 1, 0), *y = swt_qp(&d, cq_b, cq_b, 4, 1, 0);
    struct swt_conn c = swt_conn_default();
    struct swt_addr xa, ya;
    swt_addr_of(&d, x, 10, &xa);
    swt_addr_of(&d, y, 20, &ya);
    assert_int_equal(swt_connect(&d, x, 10, &ya, &c), 0);
    struct ibv_qp_attr at;
    memset(&at, 0, sizeof(at));
    at.qp_state = IBV_QPS_INIT;
    at.port_num = 1;
    at.qp_access_flags = c.access;
    assert_int_equal(ibv_modify_qp(y, &at, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT |
                                               IBV_QP_ACCESS_FLAGS), 0);
    memset(&at, 0, sizeof(at));
    at.qp_state = IBV_QPS_RTR;
    at.path_mtu = d.port.active_mtu;
    at.dest_qp_num = xa.qpn;
    at.rq_psn = 10;
    at.max_dest_rd_atomic = 1;
    at.min_rnr_timer = 1;
    at.ah_attr.is_global = 1;
    at.ah_attr.port_num = 1;
    at.ah_attr.grh.dgid = d.gid;
    at.ah_attr.grh.sgid_index = (uint8_t)d.gid_index;
    assert_int_equal(ibv_modify_qp(y, &at, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
                                               IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC |
                                               IBV_QP_MIN_RNR_TIMER), 0);
    assert_int_equal(swt_recv(y, 1, buf + 8192, 64, mr->lkey), 0);
    assert_int_equal(swt_send(x, IBV_WR_SEND, 1, buf, 8, mr->lkey, IBV_SEND_SIGNALED, 0, 0, 0), 0);
    drain(cq_b, 1);
    drain(cq_a, 1);
    assert_int_equal(readable(d.ctx->async_fd, 2000), 1);
    struct ibv_async_event ev;
    assert_int_equal(ibv_get_async_event(d.ctx, &ev), 0);
    assert_int_equal(ev.event_type, IBV_EVENT_COMM_EST);
    assert_ptr_equal(ev.element.qp, y);
    ibv_ack_async_event(&ev);
    assert_int_equal(ibv_destroy_qp(x), 0);
    assert_int_equal(ibv_destroy_qp(y), 0);
}

int main(void)
{
    swt_fabric("events");
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(armed_once), cmocka_unit_test(solicited), cmocka_unit_test(nonblocking),
        cmocka_unit_test(destroy_waits_for_ack), cmocka_unit_test(destroyed_objects_events),
        cmocka_unit_test(comm_est),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
