/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_ibv_init.c: the ib-verbs transport's init, query, get_address,
 * reach, registration and finalize over the fake libibverbs (ibv_fake.c):
 * every way of refusing with a reason (no library, no device, no usable
 * port, RLIMIT_MEMLOCK too low), the ports and GIDs chosen, rails, fork
 * handling, and that finalize gives every resource back.
 */
#include "config.h"

#include <dlfcn.h>
#include <linux/capability.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "plugins/ib-verbs/ibv.h"

#define FAKE(v) WEFT_TEST_BUILDDIR "/tests/unit/.libs/fakeverbs" v ".so"

extern const weft_transport_v1_t weft_transport_v1;

static char last_error[1024];
static char logged[8192];

static void fake_set_error(const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(last_error, sizeof(last_error), fmt, ap);
    va_end(ap);
}

static void fake_log(int level, const char *plugin, const char *fmt, ...)
{
    va_list ap;
    size_t o = strlen(logged);

    va_start(ap, fmt);
    if (o < sizeof(logged) - 2) {
        vsnprintf(logged + o, sizeof(logged) - o - 1, fmt, ap);
        strcat(logged, "\n");
    }
    va_end(ap);
    if (getenv("TEST_VERBOSE"))
        fprintf(stderr, "%s: %s", plugin, logged + o);
}

static const char *fake_param(const char *name)
{
    return getenv(name);
}

static weft_transport_core_t core;

static int setup(void **state)
{
    (void)state;
    memset(&core, 0, sizeof(core));
    core.struct_size = sizeof(core);
    core.rank = 0;
    core.size = 2;
    core.job_id = "";
    core.master_addr = "127.0.0.1";
    core.log = fake_log;
    core.set_error = fake_set_error;
    core.get_param = fake_param;
    last_error[0] = logged[0] = '\0';
    unsetenv("WEFT_IB_HCA");
    unsetenv("WEFT_IB_RAILS");
    unsetenv("WEFT_IB_FORK_INIT");
    unsetenv("FAKE_IBV_FORK_UNNEEDED");
    setenv("WEFT_IBVERBS_LIB", FAKE(""), 1);
    return 0;
}

/* init is to refuse (WEFT_ERR_UNSUPPORTED) and say says. */
static void refuses(const char *says)
{
    void *ctx = NULL;
    weft_result_t rc = weft_transport_v1.init(&core, &ctx);

    if (rc != WEFT_ERR_UNSUPPORTED)
        fail_msg("init returned %d, not WEFT_ERR_UNSUPPORTED (error: %s)", rc, last_error);
    if (!strstr(last_error, says))
        fail_msg("\"%s\" does not say \"%s\"", last_error, says);
    assert_null(ctx);
}

static void *starts(void)
{
    void *ctx = NULL;

    if (weft_transport_v1.init(&core, &ctx) != WEFT_SUCCESS)
        fail_msg("init failed: %s", last_error);
    assert_non_null(ctx);
    return ctx;
}

/* The fake, held open by the test so that its counters outlive the
 * plugin's dlclose at finalize: the plugin's dlopen gets this copy. */
static void *fake_dl;

static int fake_counter(const char *name)
{
    int *v = fake_dl ? dlsym(fake_dl, name) : NULL;

    if (!v)
        fail_msg("the fake has no %s", name);
    return *v;
}

static void test_table(void **state)
{
    (void)state;
    assert_int_equal(weft_transport_v1.abi_version, WEFT_TRANSPORT_ABI_VERSION);
    assert_string_equal(weft_transport_v1.name, "ib-verbs");
    assert_int_equal(weft_transport_v1.needs, WEFT_TRANSPORT_NEED_RDMA_PORT);
    assert_non_null(weft_transport_v1.put);
    assert_non_null(weft_transport_v1.mem_export);
    assert_ptr_not_equal(weft_transport_v1.mem_register, weft__tp_mem_register);
}

static void test_no_library(void **state)
{
    (void)state;
    setenv("WEFT_IBVERBS_LIB", "/nonexistent/libibverbs.so.1", 1);
    refuses("ib-verbs: cannot open /nonexistent/libibverbs.so.1 (WEFT_IBVERBS_LIB)");
    setenv("WEFT_IBVERBS_LIB", FAKE("-noqp"), 1);
    refuses("has no ibv_create_qp@IBVERBS_1.1");
}

static void test_no_device(void **state)
{
    (void)state;
    setenv("FAKE_IBV_DEVICES", "", 1);
    refuses("no RDMA device");
}

static void test_no_usable_port(void **state)
{
    (void)state;
    setenv("FAKE_IBV_DEVICES", "fake0=DOWN.IB/ACTIVE.ETH;other0=NOLID.IB", 1);
    setenv("WEFT_IB_HCA", "^fake0:2", 1);
    refuses("no usable RDMA port:");
    assert_non_null(strstr(last_error, "fake0:1 port DOWN"));
    assert_non_null(strstr(last_error, "fake0:2 left out by WEFT_IB_HCA"));
    assert_non_null(strstr(last_error, "other0:1 no LID yet"));
    /* A wrong WEFT_IB_HCA is a mistake, not "not applicable". */
    setenv("WEFT_IB_HCA", "fake0:x", 1);
    {
        void *ctx = NULL;

        assert_int_equal(weft_transport_v1.init(&core, &ctx), WEFT_ERR_INVALID_ARG);
        assert_non_null(strstr(last_error, "WEFT_IB_HCA=fake0:x"));
    }
}

/* RoCE: GID v2 on IPv4 (index 3 of the fake's table); the address has
 * the rails; reach and registration work; finalize gives all back. */
static void test_roce(void **state)
{
    void *vctx;
    struct wib_ctx *ctx;
    weft_transport_caps_t caps;
    struct wib_addr a;
    size_t len = sizeof(a);
    weft_transport_reach_t reach;
    void *mh;
    unsigned char buf[10000], rkey[WEFT_TRANSPORT_ADDR_MAX];
    size_t rlen = sizeof(rkey);
    struct wib_rkey k;

    (void)state;
    setenv("FAKE_IBV_DEVICES", "fake0=ACTIVE.ETH;fake1=DOWN.ETH/ACTIVE.ETH", 1);
    vctx = starts();
    ctx = vctx;
    assert_int_equal(ctx->nrails, 2);
    assert_string_equal(ctx->rail[0]->dev, "fake0");
    assert_int_equal(ctx->rail[0]->gid.index, 3);
    assert_int_equal(ctx->rail[0]->gid.kind, WIB_GID_ROCE_V2);
    assert_string_equal(ctx->rail[1]->dev, "fake1");
    assert_int_equal(ctx->rail[1]->port, 2);
    assert_non_null(strstr(logged, "fake0:1 Ethernet (RoCE) 200 Gb/s MTU 4096, GID RoCE v2 "
                                   "::ffff:10.0.0.1 (index 3)"));
    assert_non_null(strstr(logged, "fake1:1 Ethernet (RoCE): not used, port DOWN"));
    memset(&caps, 0, sizeof(caps));
    caps.struct_size = sizeof(caps);
    assert_int_equal(weft_transport_v1.query(vctx, &caps), WEFT_SUCCESS);
    assert_true(caps.flags & WEFT_TRANSPORT_CAP_PUT);
    assert_true(caps.bandwidth_gbps >= 400.0);
    assert_int_equal(weft_transport_v1.get_address(vctx, &a, &len), WEFT_SUCCESS);
    assert_int_equal(len, sizeof(a));
    assert_int_equal(a.magic, WIB_ADDR_MAGIC);
    assert_int_equal(a.nrails, 2);
    assert_int_equal(a.rail[0].gid_index, 3);
    assert_int_equal(a.rail[0].gid[12], 10);
    assert_int_equal(a.ud_qpn, ctx->ud.qp->qp_num);
    assert_int_equal(weft_transport_v1.reach(vctx, &a, len, &reach), WEFT_SUCCESS);
    assert_int_equal(reach, WEFT_TRANSPORT_REACH_NETWORK);
    a.rail[0].link_layer = IBV_LINK_LAYER_INFINIBAND;
    assert_int_equal(weft_transport_v1.reach(vctx, &a, len, &reach), WEFT_SUCCESS);
    assert_int_equal(reach, WEFT_TRANSPORT_REACH_NONE);
    assert_int_equal(weft_transport_v1.reach(vctx, "junk", 4, &reach), WEFT_SUCCESS);
    assert_int_equal(reach, WEFT_TRANSPORT_REACH_NONE);

    /* Registration: one region per rail's device, exported per rail. */
    {
        int before = fake_counter("fake_ibv_live_mrs");

        assert_int_equal(weft_transport_v1.mem_register(vctx, buf + 100, 5000,
                                                        WEFT_TRANSPORT_MEM_HOST, &mh),
                         WEFT_SUCCESS);
        assert_int_equal(fake_counter("fake_ibv_live_mrs"), before + 2);
        assert_int_equal(weft_transport_v1.mem_export(vctx, mh, rkey, &rlen), WEFT_SUCCESS);
        memcpy(&k, rkey, sizeof(k));
        assert_int_equal(k.magic, WIB_RKEY_MAGIC);
        assert_int_equal(k.nrails, 2);
        assert_int_equal(k.addr, (uintptr_t)(buf + 100));
        assert_int_equal(k.len, 5000);
        assert_int_not_equal(k.rkey[0], k.rkey[1]);
        assert_int_equal(weft_transport_v1.mem_deregister(vctx, mh), WEFT_SUCCESS);
        /* A region of mem_register does not outlive it. */
        assert_int_equal(fake_counter("fake_ibv_live_mrs"), before);
        assert_int_equal(weft_transport_v1.mem_register(vctx, buf, 10, 7, &mh),
                         WEFT_ERR_UNSUPPORTED);
    }
    assert_int_equal(weft_transport_v1.finalize(vctx), WEFT_SUCCESS);
    assert_int_equal(fake_counter("fake_ibv_open_contexts"), 0);
    assert_int_equal(fake_counter("fake_ibv_live_mrs"), 0);
}

/* Without _ibv_query_gid_ex and without sysfs, GID types are unknown:
 * the IPv4 one of lowest index. */
static void test_roce_old_library(void **state)
{
    void *vctx;
    struct wib_ctx *ctx;

    (void)state;
    setenv("WEFT_IBVERBS_LIB", FAKE("-old"), 1);
    setenv("FAKE_IBV_DEVICES", "fake0=ACTIVE.ETH", 1);
    vctx = starts();
    ctx = vctx;
    assert_int_equal(ctx->rail[0]->gid.index, 2);
    assert_int_equal(ctx->rail[0]->gid.kind, WIB_GID_UNKNOWN);
    assert_non_null(strstr(logged, "it lacks ibv_reg_mr_iova2@IBVERBS_1.8"));
    assert_int_equal(weft_transport_v1.finalize(vctx), WEFT_SUCCESS);
}

/* InfiniBand by LID; rails of the first rail's link layer only;
 * WEFT_IB_RAILS caps them. */
static void test_rails(void **state)
{
    void *vctx;
    struct wib_ctx *ctx;

    (void)state;
    setenv("FAKE_IBV_DEVICES", "ib0=ACTIVE.IB;ib1=ACTIVE.IB;eth0=ACTIVE.ETH", 1);
    vctx = starts();
    ctx = vctx;
    /* The three are alike but for their names: eth0 comes first, and
     * the rails are of its link layer. */
    assert_int_equal(ctx->nrails, 1);
    assert_string_equal(ctx->rail[0]->dev, "eth0");
    weft_transport_v1.finalize(vctx);
    setenv("WEFT_IB_HCA", "ib", 1);
    vctx = starts();
    ctx = vctx;
    assert_int_equal(ctx->nrails, 2);
    assert_int_equal(ctx->rail[0]->link_layer, IBV_LINK_LAYER_INFINIBAND);
    assert_int_equal(ctx->rail[0]->lid, 10);
    assert_int_equal(ctx->self.rail[1].lid, 11);
    assert_int_equal(ctx->rail[0]->gid.index, -1);
    weft_transport_v1.finalize(vctx);
    setenv("WEFT_IB_RAILS", "1", 1);
    vctx = starts();
    assert_int_equal(((struct wib_ctx *)vctx)->nrails, 1);
    assert_non_null(strstr(logged, "ib1:1 InfiniBand 200 Gb/s MTU 4096 LID 11, place unknown: "
                                   "not used, beyond WEFT_IB_RAILS=1"));
    weft_transport_v1.finalize(vctx);
    assert_int_equal(fake_counter("fake_ibv_open_contexts"), 0);
}

static void test_fork(void **state)
{
    int before;
    void *vctx;

    (void)state;
    setenv("FAKE_IBV_DEVICES", "fake0=ACTIVE.IB", 1);
    before = fake_counter("fake_ibv_fork_inits");
    vctx = starts();
    assert_int_equal(fake_counter("fake_ibv_fork_inits"), before + 1);
    weft_transport_v1.finalize(vctx);
    setenv("FAKE_IBV_FORK_UNNEEDED", "1", 1);
    vctx = starts();
    assert_non_null(strstr(logged, "ibv_fork_init not needed"));
    weft_transport_v1.finalize(vctx);
    unsetenv("FAKE_IBV_FORK_UNNEEDED");
    setenv("WEFT_IB_FORK_INIT", "0", 1);
    vctx = starts();
    assert_non_null(strstr(logged, "WEFT_IB_FORK_INIT=0"));
    weft_transport_v1.finalize(vctx);
    /* A refused start leaves fork alone. */
    unsetenv("WEFT_IB_FORK_INIT");
    setenv("FAKE_IBV_DEVICES", "fake0=DOWN.IB", 1);
    before = fake_counter("fake_ibv_fork_inits");
    refuses("port DOWN");
    assert_int_equal(fake_counter("fake_ibv_fork_inits"), before);
}

/* Drops CAP_IPC_LOCK from the effective set: with it (root), the kernel,
 * and so the transport, ignore RLIMIT_MEMLOCK. 0 or -1. */
static int drop_ipc_lock(void)
{
    struct __user_cap_header_struct h = { _LINUX_CAPABILITY_VERSION_3, 0 };
    struct __user_cap_data_struct d[2];

    if (syscall(SYS_capget, &h, d) != 0)
        return -1;
    d[CAP_IPC_LOCK / 32].effective &= ~(1u << (CAP_IPC_LOCK % 32));
    return (int)syscall(SYS_capset, &h, d);
}

/* RLIMIT_MEMLOCK below what the transport pins: refused, saying how to
 * raise it. In a child: a lowered hard limit cannot be raised again. */
static void test_memlock(void **state)
{
    pid_t pid;
    int status;

    (void)state;
    setenv("FAKE_IBV_DEVICES", "fake0=ACTIVE.IB", 1);
    pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        struct rlimit rl = { 1 << 20, 1 << 20 };
        void *ctx = NULL;
        weft_result_t rc;

        if (setrlimit(RLIMIT_MEMLOCK, &rl) != 0 || drop_ipc_lock() != 0)
            _exit(3);
        rc = weft_transport_v1.init(&core, &ctx);
        if (rc != WEFT_ERR_UNSUPPORTED)
            _exit(1);
        if (!strstr(last_error, "RLIMIT_MEMLOCK is 1 MiB") || !strstr(last_error, "ulimit -l"))
            _exit(2);
        _exit(0);
    }
    assert_int_equal(waitpid(pid, &status, 0), pid);
    assert_true(WIFEXITED(status));
    assert_int_equal(WEXITSTATUS(status), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup(test_table, setup),
        cmocka_unit_test_setup(test_no_library, setup),
        cmocka_unit_test_setup(test_no_device, setup),
        cmocka_unit_test_setup(test_no_usable_port, setup),
        cmocka_unit_test_setup(test_roce, setup),
        cmocka_unit_test_setup(test_roce_old_library, setup),
        cmocka_unit_test_setup(test_rails, setup),
        cmocka_unit_test_setup(test_fork, setup),
        cmocka_unit_test_setup(test_memlock, setup),
    };

    fake_dl = dlopen(FAKE(""), RTLD_NOW | RTLD_LOCAL);
    if (!fake_dl) {
        fprintf(stderr, "cannot open the fake libibverbs: %s\n", dlerror());
        return 1;
    }
    return cmocka_run_group_tests(tests, NULL, NULL);
}
