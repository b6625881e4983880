/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_device.c: the software RDMA device as ibv_get_device_list(3),
 * ibv_open_device(3), ibv_query_device(3), ibv_query_port(3),
 * ibv_query_gid(3), ibv_query_gid_ex(3) and ibv_query_pkey(3) describe a
 * device: one device per host, an extended context, a RoCE v2 port whose
 * GIDs are this network namespace's addresses, WEFT_SWRDMA_CONFIG's ports,
 * link layers, MTU and limits, and the exported names at rdma-core's
 * symbol versions, in the full library and in the variants without
 * IBVERBS_1.13 and IBVERBS_1.12.
 */
#define _GNU_SOURCE
#include "config.h"

#include <arpa/inet.h>
#include <dlfcn.h>
#include <errno.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <poll.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "tests/swrdma/swtest.h"

static void device_list(void **state)
{
    int n = -1;
    struct ibv_device **list = ibv_get_device_list(&n);
    assert_non_null(list);
    assert_int_equal(n, 1);
    assert_non_null(list[0]);
    assert_null(list[1]);
    assert_string_equal(ibv_get_device_name(list[0]), "swrdma0");
    assert_int_equal(list[0]->node_type, IBV_NODE_CA);
    assert_int_equal(list[0]->transport_type, IBV_TRANSPORT_IB);
    assert_true(ibv_get_device_guid(list[0]) != 0);
    assert_int_equal(ibv_get_device_index(list[0]), 0);
    ibv_free_device_list(list);
}

static void extended_context(void **state)
{
    struct swt_dev d;
    assert_int_equal(swt_open(&d), 0);
    /* verbs.h finds these through the context, inline */
    assert_non_null(verbs_get_ctx(d.ctx));
    assert_non_null(d.ctx->ops.post_send);
    assert_non_null(d.ctx->ops.post_recv);
    assert_non_null(d.ctx->ops.poll_cq);
    assert_non_null(d.ctx->ops.req_notify_cq);
    assert_non_null(verbs_get_ctx_op(d.ctx, query_port));
    assert_non_null(verbs_get_ctx_op(d.ctx, query_device_ex));
    assert_true(d.ctx->num_comp_vectors >= 1);
    /* nothing happened: the async descriptor has nothing to read */
    struct pollfd p = { .fd = d.ctx->async_fd, .events = POLLIN };
    assert_int_equal(poll(&p, 1, 0), 0);
    swt_close(&d);
}

static void query_device(void **state)
{
    struct swt_dev d;
    assert_int_equal(swt_open(&d), 0);
    struct ibv_device_attr a;
    assert_int_equal(ibv_query_device(d.ctx, &a), 0);
    assert_int_equal(a.max_qp, 256);
    assert_int_equal(a.max_qp_wr, 1024);
    assert_int_equal(a.max_sge, 16);
    assert_int_equal(a.max_cqe, 4095);
    assert_int_equal(a.max_mr, 1024);
    assert_int_equal(a.phys_port_cnt, 1);
    assert_int_equal(a.atomic_cap, IBV_ATOMIC_HCA);
    assert_true(a.device_cap_flags & IBV_DEVICE_RC_RNR_NAK_GEN);
    assert_int_equal(a.max_srq, 0);
    assert_true(a.node_guid != 0);
    struct ibv_device_attr_ex ax;
    assert_int_equal(ibv_query_device_ex(d.ctx, NULL, &ax), 0);
    assert_int_equal(ax.orig_attr.max_qp, a.max_qp);
    assert_true(ax.orig_attr.node_guid == a.node_guid);
    swt_close(&d);
}

/* The 1.1 ABI's port attributes: struct ibv_port_attr less port_cap_flags2. */
struct compat_port_attr {
    char bytes[offsetof(struct ibv_port_attr, port_cap_flags2)];
};

static void query_port(void **state)
{
    struct swt_dev d;
    assert_int_equal(swt_open(&d), 0);
    struct ibv_port_attr p;
    assert_int_equal(ibv_query_port(d.ctx, 1, &p), 0);
    assert_int_equal(p.state, IBV_PORT_ACTIVE);
    assert_int_equal(p.link_layer, IBV_LINK_LAYER_ETHERNET);
    assert_true(p.flags & IBV_QPF_GRH_REQUIRED);
    assert_true(p.active_mtu >= IBV_MTU_256 && p.active_mtu <= p.max_mtu);
    assert_int_equal(p.gid_tbl_len, 16);
    assert_int_equal(p.lid, 0);
    assert_true(p.port_cap_flags & IBV_PORT_IP_BASED_GIDS);
    assert_int_not_equal(ibv_query_port(d.ctx, 0, &p), 0);
    assert_int_not_equal(ibv_query_port(d.ctx, 2, &p), 0);
    /* the exported function, as a caller resolving it with dlvsym has it */
    struct ibv_port_attr q;
    memset(&q, 0xa5, sizeof(q));
    int (*exported)(struct ibv_context *, uint8_t, struct compat_port_attr *) =
        (void *)dlvsym(RTLD_DEFAULT, "ibv_query_port", "IBVERBS_1.1");
    assert_non_null(exported);
    assert_int_equal(exported(d.ctx, 1, (struct compat_port_attr *)&q), 0);
    assert_int_equal(q.state, p.state);
    assert_int_equal(q.active_mtu, p.active_mtu);
    assert_int_equal(q.link_layer, p.link_layer);
    assert_int_equal(q.port_cap_flags2, 0xa5a5);   /* not part of that ABI */
    swt_close(&d);
}

static bool is_local_ipv4(const uint8_t raw[16])
{
    struct ifaddrs *ifa;
    bool found = false;
    if (getifaddrs(&ifa) < 0)
        return false;
    for (struct ifaddrs *a = ifa; a; a = a->ifa_next)
        if (a->ifa_addr && a->ifa_addr->sa_family == AF_INET &&
            !memcmp(&((struct sockaddr_in *)a->ifa_addr)->sin_addr, raw + 12, 4))
            found = true;
    freeifaddrs(ifa);
    return found;
}

static void gids(void **state)
{
    struct swt_dev d;
    assert_int_equal(swt_open(&d), 0);
    int valid = 0, v4 = 0, empty = -1;
    for (uint32_t i = 0; i < 16; i++) {
        struct ibv_gid_entry e;
        int rc = ibv_query_gid_ex(d.ctx, 1, i, &e, 0);
        union ibv_gid g;
        assert_int_equal(ibv_query_gid(d.ctx, 1, (int)i, &g), 0);
        if (rc == ENODATA) {
            static const uint8_t zero[16];
            assert_memory_equal(g.raw, zero, 16);     /* an empty entry reads as zeros */
            if (empty < 0)
                empty = (int)i;
            continue;
        }
        assert_int_equal(rc, 0);
        valid++;
        assert_int_equal(e.gid_index, i);
        assert_int_equal(e.port_num, 1);
        assert_int_equal(e.gid_type, IBV_GID_TYPE_ROCE_V2);
        assert_memory_equal(g.raw, e.gid.raw, 16);
        if (e.gid.raw[10] == 0xff && e.gid.raw[11] == 0xff) {
            assert_true(is_local_ipv4(e.gid.raw));
            assert_true(e.ndev_ifindex > 0);
            v4++;
        }
    }
    assert_true(valid >= 1);
    assert_true(v4 >= 1);
    assert_true(empty >= 1);
    struct ibv_gid_entry e;
    assert_int_equal(ibv_query_gid_ex(d.ctx, 1, 16, &e, 0), EINVAL);
    assert_int_equal(ibv_query_gid_ex(d.ctx, 2, 0, &e, 0), EINVAL);
    assert_int_equal(ibv_query_gid_ex(d.ctx, 1, 0, &e, 1), EINVAL);
    union ibv_gid g;
    assert_int_equal(ibv_query_gid(d.ctx, 1, 16, &g), -1);
    struct ibv_gid_entry table[32];
    assert_int_equal(ibv_query_gid_table(d.ctx, table, 32, 0), valid);
    assert_true(ibv_query_gid_table(d.ctx, table, (size_t)valid - 1, 0) < 0);
    swt_close(&d);
}

static void pkeys(void **state)
{
    struct swt_dev d;
    assert_int_equal(swt_open(&d), 0);
    __be16 pkey = 0;
    assert_int_equal(ibv_query_pkey(d.ctx, 1, 0, &pkey), 0);
    assert_int_equal(ntohs(pkey), 0xffff);
    assert_int_equal(ibv_query_pkey(d.ctx, 1, 1, &pkey), -1);
    assert_int_equal(ibv_get_pkey_index(d.ctx, 1, htons(0xffff)), 0);
    assert_true(ibv_get_pkey_index(d.ctx, 1, htons(0x8001)) < 0);
    swt_close(&d);
}

/* A child on a fabric of its own, with its own WEFT_SWRDMA_CONFIG. */
static int configured_child(void *arg)
{
    swt_fabric("devcfg");
    setenv("WEFT_SWRDMA_CONFIG", "ports=2,port2.link=ib,mtu=2048,max_qp=2,max_cqe=63,gids=v1v2", 1);
    struct swt_dev d;
    if (swt_open(&d))
        return 10;
    struct ibv_device_attr a;
    if (ibv_query_device(d.ctx, &a) || a.phys_port_cnt != 2 || a.max_qp != 2 || a.max_cqe != 63)
        return 11;
    struct ibv_port_attr p1, p2;
    if (ibv_query_port(d.ctx, 1, &p1) || ibv_query_port(d.ctx, 2, &p2))
        return 12;
    if (p1.active_mtu != IBV_MTU_2048 || p1.link_layer != IBV_LINK_LAYER_ETHERNET)
        return 13;
    if (p2.link_layer != IBV_LINK_LAYER_INFINIBAND || p2.lid == 0 || (p2.flags & IBV_QPF_GRH_REQUIRED))
        return 14;
    struct ibv_gid_entry e0, e1;
    if (ibv_query_gid_ex(d.ctx, 2, 0, &e0, 0) || e0.gid_type != IBV_GID_TYPE_IB ||
        e0.gid.raw[0] != 0xfe || e0.gid.raw[1] != 0x80)
        return 15;
    /* gids=v1v2: each address as a RoCE v1 entry, then its v2 twin */
    if (ibv_query_gid_ex(d.ctx, 1, 0, &e0, 0) || ibv_query_gid_ex(d.ctx, 1, 1, &e1, 0) ||
        e0.gid_type != IBV_GID_TYPE_ROCE_V1 || e1.gid_type != IBV_GID_TYPE_ROCE_V2 ||
        memcmp(e0.gid.raw, e1.gid.raw, 16))
        return 16;
    struct ibv_cq *cq = ibv_create_cq(d.ctx, 64, NULL, NULL, 0);
    if (cq || errno != EINVAL)
        return 17;
    cq = ibv_create_cq(d.ctx, 63, NULL, NULL, 0);
    if (!cq || cq->cqe < 63)
        return 18;
    struct ibv_qp *q1 = swt_qp(&d, cq, cq, 4, 1, 0), *q2 = swt_qp(&d, cq, cq, 4, 1, 0);
    struct ibv_qp *q3 = swt_qp(&d, cq, cq, 4, 1, 0);
    if (!q1 || !q2 || q3 || errno != ENOMEM)
        return 19;
    ibv_destroy_qp(q1);
    q3 = swt_qp(&d, cq, cq, 4, 1, 0);     /* the limit counts live QPs */
    if (!q3)
        return 20;
    ibv_destroy_qp(q2);
    ibv_destroy_qp(q3);
    ibv_destroy_cq(cq);
    swt_close(&d);
    return 0;
}

static void configured(void **state)
{
    assert_int_equal(swt_child(configured_child, NULL), 0);
}

static int bad_config_child(void *arg)
{
    swt_fabric("devbad");
    setenv("WEFT_SWRDMA_CONFIG", arg, 1);
    int n = 5;
    struct ibv_device **list = ibv_get_device_list(&n);
    return list == NULL && errno == ENOSYS ? 0 : 1;
}

static void bad_config(void **state)
{
    assert_int_equal(swt_child(bad_config_child, "max_qp=0"), 0);
    assert_int_equal(swt_child(bad_config_child, "no_such_key=1"), 0);
    assert_int_equal(swt_child(bad_config_child, "mtu=1000"), 0);
}

static void symbol_versions(void **state)
{
    void *h = dlopen("libibverbs.so.1", RTLD_NOW | RTLD_NOLOAD);
    assert_non_null(h);
    assert_ptr_equal(dlvsym(h, "ibv_get_device_list", "IBVERBS_1.1"), (void *)ibv_get_device_list);
    assert_non_null(dlvsym(h, "ibv_reg_mr_iova2", "IBVERBS_1.8"));
    assert_non_null(dlvsym(h, "_ibv_query_gid_ex", "IBVERBS_1.11"));
    assert_non_null(dlvsym(h, "ibv_reg_dmabuf_mr", "IBVERBS_1.12"));
    assert_non_null(dlvsym(h, "ibv_query_qp_data_in_order", "IBVERBS_1.14"));
    enum ibv_fork_status (*forkst)(void) = (void *)dlvsym(h, "ibv_is_fork_initialized", "IBVERBS_1.13");
    assert_non_null(forkst);
    assert_int_equal(forkst(), IBV_FORK_UNNEEDED);
    assert_null(dlvsym(h, "ibv_reg_dmabuf_mr", "IBVERBS_1.13"));
    /* the pre-2007 ABI exists and says it is not there */
    void *(*open10)(void *) = (void *(*)(void *))dlvsym(h, "ibv_open_device", "IBVERBS_1.0");
    assert_non_null(open10);
    assert_ptr_not_equal((void *)open10, (void *)ibv_open_device);
    errno = 0;
    assert_null(open10(NULL));
    assert_int_equal(errno, ENOSYS);
    assert_non_null(dlvsym(h, "ibv_create_comp_channel", "IBVERBS_1.0"));
    /* nothing of the device's own is visible */
    assert_null(dlsym(h, "sw_attach"));
    assert_null(dlsym(h, "sw"));
    dlclose(h);
}

static int variant_child(void *arg)
{
    const char *which = arg;
    char path[512];
    snprintf(path, sizeof(path), "%s/tests/swrdma/%s/.libs/libibverbs.so.1", WEFT_TEST_BUILDDIR, which);
    void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!h)
        return 10;
    if (!dlvsym(h, "ibv_get_device_list", "IBVERBS_1.1") || !dlvsym(h, "ibv_reg_mr_iova2", "IBVERBS_1.8") ||
        !dlvsym(h, "_ibv_query_gid_ex", "IBVERBS_1.11"))
        return 11;
    bool has12 = dlvsym(h, "ibv_reg_dmabuf_mr", "IBVERBS_1.12") != NULL;
    bool has13 = dlvsym(h, "ibv_is_fork_initialized", "IBVERBS_1.13") != NULL;
    bool has14 = dlvsym(h, "ibv_query_qp_data_in_order", "IBVERBS_1.14") != NULL;
    if (!strcmp(which, "no-1.13"))
        return has12 && !has13 && !has14 ? 0 : 12;
    return !has12 && !has13 && !has14 ? 0 : 13;
}

static void variants(void **state)
{
    assert_int_equal(swt_child(variant_child, "no-1.13"), 0);
    assert_int_equal(swt_child(variant_child, "no-1.12"), 0);
}

int main(void)
{
    swt_fabric("device");
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(device_list), cmocka_unit_test(extended_context),
        cmocka_unit_test(query_device), cmocka_unit_test(query_port),
        cmocka_unit_test(gids), cmocka_unit_test(pkeys),
        cmocka_unit_test(configured), cmocka_unit_test(bad_config),
        cmocka_unit_test(symbol_versions), cmocka_unit_test(variants),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
