/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_ibv_port.c: which ports the ib-verbs transport uses and in what
 * order: judging a port (WEFT_IB_HCA, state, LID, GID), ordering
 * (usable, nearest, fastest, name, port) and choosing the rails.
 */
#include "config.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "plugins/ib-verbs/ibv.h"

static struct wib_port_info port(const char *dev, int num, int ll, int near, double gbps)
{
    struct wib_port_info p;

    memset(&p, 0, sizeof(p));
    snprintf(p.dev, sizeof(p.dev), "%s", dev);
    p.devi = -1;
    p.port = num;
    p.state = IBV_PORT_ACTIVE;
    p.link_layer = ll;
    p.lid = ll == IBV_LINK_LAYER_INFINIBAND ? 7 : 0;
    p.near = near;
    p.gbps = gbps;
    p.gid.index = ll == IBV_LINK_LAYER_ETHERNET ? 3 : -1;
    p.rail = -1;
    return p;
}

static void test_judge(void **state)
{
    struct wib_hca_spec hca;
    struct wib_port_info p;
    char why[64];

    (void)state;
    assert_int_equal(weft__ibv_hca_parse("^mlx5_1", &hca, why, sizeof(why)), 0);
    p = port("mlx5_0", 1, IBV_LINK_LAYER_INFINIBAND, WIB_NEAR_NUMA, 200);
    weft__ibv_port_judge(&p, &hca);
    assert_true(p.usable);
    assert_string_equal(p.why, "");
    p = port("mlx5_1", 1, IBV_LINK_LAYER_INFINIBAND, WIB_NEAR_NUMA, 200);
    weft__ibv_port_judge(&p, &hca);
    assert_false(p.usable);
    assert_string_equal(p.why, "left out by WEFT_IB_HCA");
    p = port("mlx5_0", 2, IBV_LINK_LAYER_INFINIBAND, WIB_NEAR_NUMA, 200);
    p.state = IBV_PORT_DOWN;
    weft__ibv_port_judge(&p, NULL);
    assert_false(p.usable);
    assert_string_equal(p.why, "port DOWN");
    p = port("mlx5_0", 1, IBV_LINK_LAYER_INFINIBAND, WIB_NEAR_NUMA, 200);
    p.lid = 0;
    weft__ibv_port_judge(&p, NULL);
    assert_false(p.usable);
    assert_non_null(strstr(p.why, "subnet manager"));
    /* Old kernels say "unspecified" for InfiniBand. */
    p = port("mthca0", 1, IBV_LINK_LAYER_UNSPECIFIED, WIB_NEAR_NUMA, 8);
    p.lid = 3;
    weft__ibv_port_judge(&p, NULL);
    assert_true(p.usable);
    assert_int_equal(p.link_layer, IBV_LINK_LAYER_INFINIBAND);
    p = port("rocep1s0", 1, IBV_LINK_LAYER_ETHERNET, WIB_NEAR_NUMA, 100);
    p.gid.index = -1;
    snprintf(p.gid.why, sizeof(p.gid.why), "no RoCE GID (2 entries)");
    weft__ibv_port_judge(&p, NULL);
    assert_false(p.usable);
    assert_string_equal(p.why, "no RoCE GID (2 entries)");
}

static void test_sort(void **state)
{
    struct wib_port_info p[6];

    (void)state;
    p[0] = port("mlx5_3", 1, IBV_LINK_LAYER_INFINIBAND, WIB_NEAR_FAR, 400);
    p[1] = port("mlx5_1", 2, IBV_LINK_LAYER_INFINIBAND, WIB_NEAR_NUMA, 200);
    p[2] = port("mlx5_1", 1, IBV_LINK_LAYER_INFINIBAND, WIB_NEAR_NUMA, 200);
    p[3] = port("mlx5_0", 1, IBV_LINK_LAYER_INFINIBAND, WIB_NEAR_NUMA, 100);
    p[4] = port("mlx5_9", 1, IBV_LINK_LAYER_INFINIBAND, WIB_NEAR_GPU_SWITCH, 100);
    p[5] = port("mlx5_0", 2, IBV_LINK_LAYER_INFINIBAND, WIB_NEAR_GPU_SWITCH, 400);
    for (int i = 0; i < 6; i++)
        p[i].usable = 1;
    p[5].usable = 0;
    weft__ibv_port_sort(p, 6);
    /* nearest, then fastest, then name, then port; unusable last */
    assert_string_equal(p[0].dev, "mlx5_9");
    assert_string_equal(p[1].dev, "mlx5_1");
    assert_int_equal(p[1].port, 1);
    assert_string_equal(p[2].dev, "mlx5_1");
    assert_int_equal(p[2].port, 2);
    assert_string_equal(p[3].dev, "mlx5_0");
    assert_string_equal(p[4].dev, "mlx5_3");
    assert_string_equal(p[5].dev, "mlx5_0");
    assert_int_equal(p[5].port, 2);
}

static void test_rails(void **state)
{
    struct wib_port_info p[6];

    (void)state;
    p[0] = port("mlx5_0", 1, IBV_LINK_LAYER_INFINIBAND, WIB_NEAR_NUMA, 200);
    p[1] = port("mlx5_1", 1, IBV_LINK_LAYER_INFINIBAND, WIB_NEAR_NUMA, 200);
    p[2] = port("mlx5_2", 1, IBV_LINK_LAYER_ETHERNET, WIB_NEAR_NUMA, 100);
    p[3] = port("mlx5_3", 1, IBV_LINK_LAYER_INFINIBAND, WIB_NEAR_NUMA, 100);
    p[4] = port("mlx5_4", 1, IBV_LINK_LAYER_INFINIBAND, WIB_NEAR_FAR, 400);
    p[5] = port("mlx5_5", 1, IBV_LINK_LAYER_INFINIBAND, WIB_NEAR_NUMA, 400);
    for (int i = 0; i < 6; i++)
        p[i].usable = 1;
    p[5].usable = 0;
    snprintf(p[5].why, sizeof(p[5].why), "port DOWN");
    assert_int_equal(weft__ibv_port_rails(p, 6, 2), 2);
    assert_int_equal(p[0].rail, 0);
    assert_int_equal(p[1].rail, 1);
    assert_int_equal(p[2].rail, -1);
    assert_non_null(strstr(p[2].why, "Ethernet"));
    assert_int_equal(p[3].rail, -1);
    assert_string_equal(p[3].why, "beyond WEFT_IB_RAILS=2");
    assert_int_equal(p[4].rail, -1);
    assert_non_null(strstr(p[4].why, "farther than mlx5_0:1"));
    assert_int_equal(p[5].rail, -1);
    assert_string_equal(p[5].why, "port DOWN");
    assert_int_equal(weft__ibv_port_rails(p, 6, 4), 3);
    assert_int_equal(p[3].rail, 2);
    /* Nothing usable: no rail. */
    p[0].usable = p[1].usable = p[2].usable = p[3].usable = p[4].usable = 0;
    assert_int_equal(weft__ibv_port_rails(p, 6, 4), 0);
    assert_int_equal(p[0].rail, -1);
}

/* A core whose topology places "near0" under the GPU's switch, "numa0"
 * on the rank's node, "far0" elsewhere, and does not show the rest. */
static weft_transport_nearness_t fake_nearness(void *core_ctx, const char *name)
{
    (void)core_ctx;
    if (strcmp(name, "near0") == 0)
        return WEFT_TRANSPORT_NEAR_GPU;
    if (strcmp(name, "numa0") == 0)
        return WEFT_TRANSPORT_NEAR_NUMA;
    if (strcmp(name, "far0") == 0)
        return WEFT_TRANSPORT_NEAR_HOST;
    return WEFT_TRANSPORT_NEAR_UNKNOWN;
}

static void test_nearness(void **state)
{
    weft_transport_core_t core;
    const char *nowhere = "/nonexistent/sysfs/device";

    (void)state;
    memset(&core, 0, sizeof(core));
    core.struct_size = sizeof(core);
    core.device_nearness = fake_nearness;
    assert_int_equal(weft__ibv_dev_near(&core, "near0", nowhere, 0), WIB_NEAR_GPU_SWITCH);
    assert_int_equal(weft__ibv_dev_near(&core, "numa0", nowhere, 0), WIB_NEAR_NUMA);
    assert_int_equal(weft__ibv_dev_near(&core, "far0", nowhere, 0), WIB_NEAR_FAR);
    /* Not in the topology, and no sysfs folder to say its node. */
    assert_int_equal(weft__ibv_dev_near(&core, "other0", nowhere, 0), WIB_NEAR_UNKNOWN);
    /* A core built before device_nearness existed: sysfs decides. */
    core.struct_size = offsetof(weft_transport_core_t, device_nearness);
    assert_int_equal(weft__ibv_dev_near(&core, "near0", nowhere, 0), WIB_NEAR_UNKNOWN);
    assert_int_equal(weft__ibv_dev_near(NULL, "near0", nowhere, 0), WIB_NEAR_UNKNOWN);
}

static void test_names_and_rates(void **state)
{
    (void)state;
    /* HDR 4x: 200 Gb/s; EDR 4x: 100; NDR 2x: 200; 25 GbE (EDR 1x): 25 */
    assert_true(weft__ibv_port_gbps(64, 2) == 200.0);
    assert_true(weft__ibv_port_gbps(32, 2) == 100.0);
    assert_true(weft__ibv_port_gbps(128, 16) == 200.0);
    assert_true(weft__ibv_port_gbps(32, 1) == 25.0);
    assert_true(weft__ibv_port_gbps(3, 2) == 0.0);
    assert_int_equal(weft__ibv_mtu_bytes(IBV_MTU_4096), 4096);
    assert_int_equal(weft__ibv_mtu_bytes(IBV_MTU_1024), 1024);
    assert_int_equal(weft__ibv_mtu_bytes(0), 0);
    assert_string_equal(weft__ibv_port_state_name(IBV_PORT_ACTIVE), "ACTIVE");
    assert_string_equal(weft__ibv_link_layer_name(IBV_LINK_LAYER_INFINIBAND), "InfiniBand");
    assert_string_equal(weft__ibv_near_name(WIB_NEAR_FAR), "on another NUMA node");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_judge),
        cmocka_unit_test(test_sort),
        cmocka_unit_test(test_rails),
        cmocka_unit_test(test_names_and_rates),
        cmocka_unit_test(test_nearness),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
