/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_ibv_sym.c: how the ib-verbs transport opens libibverbs: against
 * fake libraries of each kind (rdma-core's versions, only 1.0 and 1.1,
 * none, a required symbol missing, everything at the wrong version) and
 * against the real libibverbs.so.1 where one is installed; the fallbacks
 * of the optional symbols; query_port through the compat call.
 */
#include "config.h"

#include <dlfcn.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "plugins/ib-verbs/ibv.h"

#define FAKE(v) WEFT_TEST_BUILDDIR "/tests/unit/.libs/fakeverbs" v ".so"

static void test_full(void **state)
{
    struct wib_fns f;
    char why[512] = "", missing[256];

    (void)state;
    if (weft__ibv_sym_load(&f, FAKE(""), why, sizeof(why)) != 0)
        fail_msg("%s", why);
    assert_non_null(f.get_device_list);
    assert_non_null(f.create_comp_channel);
    assert_non_null(f.reg_mr_iova2);
    assert_non_null(f.query_gid_ex);
    assert_non_null(f.reg_dmabuf_mr);
    assert_non_null(f.is_fork_initialized);
    weft__ibv_sym_missing(&f, missing, sizeof(missing));
    assert_string_equal(missing, "");
    assert_string_equal(f.path, FAKE(""));
    weft__ibv_sym_unload(&f);
    assert_null(f.dl);
    assert_null(f.get_device_list);
}

/* Only IBVERBS_1.0 and 1.1: the optional ones are NULL, and registration
 * with optional flags falls back to ibv_reg_mr without them. */
static void test_old(void **state)
{
    struct wib_fns f;
    char why[512] = "", missing[256];
    const char **last;
    int *access;
    struct ibv_device **list;
    struct ibv_context *vctx;
    struct ibv_pd *pd;
    struct ibv_mr *mr;
    char buf[64];

    (void)state;
    setenv("FAKE_IBV_DEVICES", "fake0=ACTIVE.IB", 1);
    if (weft__ibv_sym_load(&f, FAKE("-old"), why, sizeof(why)) != 0)
        fail_msg("%s", why);
    assert_null(f.reg_mr_iova2);
    assert_null(f.query_gid_ex);
    assert_null(f.reg_dmabuf_mr);
    assert_null(f.is_fork_initialized);
    weft__ibv_sym_missing(&f, missing, sizeof(missing));
    assert_string_equal(missing, "ibv_reg_mr_iova2@IBVERBS_1.8 _ibv_query_gid_ex@IBVERBS_1.11 "
                                 "ibv_reg_dmabuf_mr@IBVERBS_1.12 "
                                 "ibv_is_fork_initialized@IBVERBS_1.13");
    last = dlsym(f.dl, "fake_ibv_last_reg");
    access = dlsym(f.dl, "fake_ibv_last_access");
    assert_non_null(last);
    list = f.get_device_list(NULL);
    vctx = f.open_device(list[0]);
    pd = f.alloc_pd(vctx);
    mr = weft__ibv_reg_mr(&f, pd, buf, sizeof(buf), IBV_ACCESS_LOCAL_WRITE |
                          IBV_ACCESS_RELAXED_ORDERING);
    assert_non_null(mr);
    assert_string_equal(*last, "ibv_reg_mr");
    assert_int_equal(*access, IBV_ACCESS_LOCAL_WRITE);
    f.dereg_mr(mr);
    f.dealloc_pd(pd);
    f.close_device(vctx);
    weft__ibv_sym_unload(&f);
}

/* With rdma-core's versions, optional flags go through reg_mr_iova2 and
 * plain ones through ibv_reg_mr, as verbs.h's macro does. */
static void test_reg_mr(void **state)
{
    struct wib_fns f;
    char why[512] = "", buf[64];
    const char **last;
    int *access;
    struct ibv_context *vctx;
    struct ibv_pd *pd;
    struct ibv_mr *mr;

    (void)state;
    setenv("FAKE_IBV_DEVICES", "fake0=ACTIVE.IB", 1);
    if (weft__ibv_sym_load(&f, FAKE(""), why, sizeof(why)) != 0)
        fail_msg("%s", why);
    last = dlsym(f.dl, "fake_ibv_last_reg");
    access = dlsym(f.dl, "fake_ibv_last_access");
    vctx = f.open_device(f.get_device_list(NULL)[0]);
    pd = f.alloc_pd(vctx);
    mr = weft__ibv_reg_mr(&f, pd, buf, sizeof(buf), IBV_ACCESS_LOCAL_WRITE |
                          IBV_ACCESS_RELAXED_ORDERING);
    assert_string_equal(*last, "ibv_reg_mr_iova2");
    assert_int_equal(*access, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_RELAXED_ORDERING);
    f.dereg_mr(mr);
    mr = weft__ibv_reg_mr(&f, pd, buf, sizeof(buf), IBV_ACCESS_LOCAL_WRITE);
    assert_string_equal(*last, "ibv_reg_mr");
    f.dereg_mr(mr);
    f.dealloc_pd(pd);
    f.close_device(vctx);
    weft__ibv_sym_unload(&f);
}

/* A library that defines no versions is resolved by name, and says so;
 * one with rdma-core's versions is not. */
static void test_unversioned(void **state)
{
    struct wib_fns f;
    char why[512] = "";

    (void)state;
    if (weft__ibv_sym_load(&f, FAKE("-nover"), why, sizeof(why)) != 0)
        fail_msg("%s", why);
    assert_true(f.unversioned);
    assert_non_null(f.create_qp);
    assert_non_null(f.is_fork_initialized);
    weft__ibv_sym_unload(&f);
    if (weft__ibv_sym_load(&f, FAKE(""), why, sizeof(why)) != 0)
        fail_msg("%s", why);
    assert_false(f.unversioned);
    weft__ibv_sym_unload(&f);
}

static void test_refused(void **state)
{
    struct wib_fns f;
    char why[512] = "";

    (void)state;
    assert_int_equal(weft__ibv_sym_load(&f, FAKE("-noqp"), why, sizeof(why)), -1);
    assert_non_null(strstr(why, "has no ibv_create_qp@IBVERBS_1.1"));
    assert_null(f.dl);
    /* The right names at the wrong version are not the API we know. */
    assert_int_equal(weft__ibv_sym_load(&f, FAKE("-oldabi"), why, sizeof(why)), -1);
    assert_non_null(strstr(why, "@IBVERBS_1.1"));
    assert_int_equal(weft__ibv_sym_load(&f, "/nonexistent/libibverbs.so.1", why, sizeof(why)),
                     -1);
    assert_non_null(strstr(why, "cannot open /nonexistent/libibverbs.so.1 (WEFT_IBVERBS_LIB)"));
}

/* query_port of a context without extended ops: the exported compat
 * call, the rest of the struct cleared. */
static void test_query_port(void **state)
{
    struct wib_fns f;
    char why[512] = "";
    struct ibv_context *vctx;
    struct ibv_port_attr a;

    (void)state;
    setenv("FAKE_IBV_DEVICES", "fake0=DOWN.IB/ACTIVE.ETH", 1);
    if (weft__ibv_sym_load(&f, FAKE(""), why, sizeof(why)) != 0)
        fail_msg("%s", why);
    vctx = f.open_device(f.get_device_list(NULL)[0]);
    memset(&a, 0xa5, sizeof(a));
    assert_int_equal(weft__ibv_query_port(&f, vctx, 2, &a), 0);
    assert_int_equal(a.state, IBV_PORT_ACTIVE);
    assert_int_equal(a.link_layer, IBV_LINK_LAYER_ETHERNET);
    assert_int_equal(a.active_mtu, IBV_MTU_4096);
    assert_int_equal(a.flags, 0);
    assert_int_equal(a.port_cap_flags2, 0);
    assert_int_not_equal(weft__ibv_query_port(&f, vctx, 3, &a), 0);
    f.close_device(vctx);
    weft__ibv_sym_unload(&f);
}

/* The installed rdma-core: every symbol at its version. */
static void test_real(void **state)
{
    struct wib_fns f;
    char why[512] = "", missing[256];

    (void)state;
    if (weft__ibv_sym_load(&f, NULL, why, sizeof(why)) != 0) {
        if (strstr(why, "cannot open")) {
            print_message("skipped: %s\n", why);
            skip();
        }
        fail_msg("%s", why);
    }
    assert_string_equal(f.path, WIB_DEFAULT_LIB);
    assert_false(f.unversioned);
    weft__ibv_sym_missing(&f, missing, sizeof(missing));
    /* rdma-core 35 and later have every optional one. */
    print_message("installed libibverbs lacks: %s\n", missing[0] ? missing : "nothing");
    if (dlvsym(f.dl, "ibv_query_qp_data_in_order", "IBVERBS_1.14"))
        assert_string_equal(missing, "");
    weft__ibv_sym_unload(&f);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_full),
        cmocka_unit_test(test_old),
        cmocka_unit_test(test_reg_mr),
        cmocka_unit_test(test_unversioned),
        cmocka_unit_test(test_refused),
        cmocka_unit_test(test_query_port),
        cmocka_unit_test(test_real),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
