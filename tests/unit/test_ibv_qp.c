/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_ibv_qp.c: the attributes of the ib-verbs transport's QP
 * transitions: INIT for RC and UD, RTR (MTU agreement, the peer's QP and
 * PSN, LID or GID routing), RTS (timeouts and retries as set), and PSNs.
 */
#include "config.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "plugins/ib-verbs/ibv.h"

static struct wib_params params(void)
{
    struct wib_params p;

    memset(&p, 0, sizeof(p));
    p.gid_index = -1;
    p.timeout = 20;
    p.retry_cnt = 7;
    p.rnr_retry = 7;
    p.min_rnr_timer = 12;
    p.sl = 3;
    p.traffic_class = 106;
    return p;
}

static struct wib_wire_rail rail(int ll, int mtu, uint16_t lid, uint8_t subnet)
{
    struct wib_wire_rail r;

    memset(&r, 0, sizeof(r));
    r.link_layer = (uint8_t)ll;
    r.mtu = (uint8_t)mtu;
    r.port = 1;
    r.lid = lid;
    r.gid[0] = 0xfe;
    r.gid[1] = 0x80;
    r.gid[7] = subnet;
    r.gid[15] = (uint8_t)lid;
    return r;
}

static void test_init(void **state)
{
    struct ibv_qp_attr a;
    int mask;

    (void)state;
    weft__ibv_qp_init_attr(&a, &mask, 2, 1);
    assert_int_equal(a.qp_state, IBV_QPS_INIT);
    assert_int_equal(a.port_num, 2);
    assert_true(a.qp_access_flags & IBV_ACCESS_REMOTE_WRITE);
    assert_true(mask & IBV_QP_ACCESS_FLAGS);
    assert_false(mask & IBV_QP_QKEY);
    weft__ibv_qp_init_attr(&a, &mask, 1, 0);
    assert_int_equal(a.qkey, WIB_QKEY);
    assert_true(mask & IBV_QP_QKEY);
    assert_false(mask & IBV_QP_ACCESS_FLAGS);
}

static void test_rtr_ib(void **state)
{
    struct wib_params p = params();
    struct wib_wire_rail me = rail(IBV_LINK_LAYER_INFINIBAND, IBV_MTU_4096, 5, 0);
    struct wib_wire_rail him = rail(IBV_LINK_LAYER_INFINIBAND, IBV_MTU_2048, 9, 0);
    struct ibv_qp_attr a;
    int mask;

    (void)state;
    weft__ibv_qp_rtr_attr(&a, &mask, &p, &me, -1, &him, 0x1234567, 0xabcdef12);
    assert_int_equal(a.qp_state, IBV_QPS_RTR);
    assert_int_equal(a.path_mtu, IBV_MTU_2048);
    assert_int_equal(a.dest_qp_num, 0x234567);
    assert_int_equal(a.rq_psn, 0xef12 | 0xcd0000);
    assert_int_equal(a.min_rnr_timer, 12);
    assert_int_equal(a.ah_attr.dlid, 9);
    assert_int_equal(a.ah_attr.sl, 3);
    assert_int_equal(a.ah_attr.port_num, 1);
    /* Same subnet, no GID asked for: routed by LID alone. */
    assert_int_equal(a.ah_attr.is_global, 0);
    assert_int_equal(mask, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
                           IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER);
    /* Another subnet: a global route header. */
    him.gid[7] = 1;
    weft__ibv_qp_rtr_attr(&a, &mask, &p, &me, -1, &him, 1, 1);
    assert_int_equal(a.ah_attr.is_global, 1);
    assert_int_equal(a.ah_attr.grh.sgid_index, 0);
    assert_memory_equal(a.ah_attr.grh.dgid.raw, him.gid, 16);
    /* WEFT_IB_GID_INDEX: a global route header with that GID. */
    him.gid[7] = 0;
    p.gid_index = 2;
    weft__ibv_qp_rtr_attr(&a, &mask, &p, &me, 2, &him, 1, 1);
    assert_int_equal(a.ah_attr.is_global, 1);
    assert_int_equal(a.ah_attr.grh.sgid_index, 2);
}

static void test_rtr_roce(void **state)
{
    struct wib_params p = params();
    struct wib_wire_rail me = rail(IBV_LINK_LAYER_ETHERNET, IBV_MTU_1024, 0, 0);
    struct wib_wire_rail him = rail(IBV_LINK_LAYER_ETHERNET, IBV_MTU_4096, 0, 0);
    struct ibv_qp_attr a;
    int mask;

    (void)state;
    him.gid[0] = 0;
    him.gid[10] = him.gid[11] = 0xff;
    him.gid[12] = 10;
    weft__ibv_qp_rtr_attr(&a, &mask, &p, &me, 3, &him, 77, 5);
    assert_int_equal(a.path_mtu, IBV_MTU_1024);
    assert_int_equal(a.ah_attr.is_global, 1);
    assert_int_equal(a.ah_attr.dlid, 0);
    assert_int_equal(a.ah_attr.grh.sgid_index, 3);
    assert_int_equal(a.ah_attr.grh.hop_limit, 255);
    assert_int_equal(a.ah_attr.grh.traffic_class, 106);
    assert_memory_equal(a.ah_attr.grh.dgid.raw, him.gid, 16);
}

static void test_rts(void **state)
{
    struct wib_params p = params();
    struct ibv_qp_attr a;
    int mask;

    (void)state;
    p.timeout = 14;
    p.retry_cnt = 5;
    p.rnr_retry = 6;
    weft__ibv_qp_rts_attr(&a, &mask, &p, 0x1fffffe);
    assert_int_equal(a.qp_state, IBV_QPS_RTS);
    assert_int_equal(a.timeout, 14);
    assert_int_equal(a.retry_cnt, 5);
    assert_int_equal(a.rnr_retry, 6);
    assert_int_equal(a.sq_psn, 0xfffffe);
    assert_int_equal(mask, IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT |
                           IBV_QP_RNR_RETRY | IBV_QP_SQ_PSN | IBV_QP_MAX_QP_RD_ATOMIC);
}

static void test_psn(void **state)
{
    uint32_t a = weft__ibv_psn(), b = weft__ibv_psn(), c = weft__ibv_psn();

    (void)state;
    assert_true(a <= 0xffffff && b <= 0xffffff && c <= 0xffffff);
    /* Random: three equal in a row would be a broken generator. */
    assert_false(a == b && b == c);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_init),
        cmocka_unit_test(test_rtr_ib),
        cmocka_unit_test(test_rtr_roce),
        cmocka_unit_test(test_rts),
        cmocka_unit_test(test_psn),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
