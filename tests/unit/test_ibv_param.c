/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_ibv_param.c: the ib-verbs transport's parameters: defaults,
 * values taken, values outside their range refused with the variable
 * named, and the checks between parameters.
 */
#include "config.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "plugins/ib-verbs/ibv.h"

static char last_error[512];

static void fake_set_error(const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(last_error, sizeof(last_error), fmt, ap);
    va_end(ap);
}

static const char *fake_param(const char *name)
{
    return getenv(name);
}

static weft_transport_core_t core;
static struct tp_ctx tp;

static int setup(void **state)
{
    static const char *const vars[] = {
        "WEFT_IBVERBS_LIB", "WEFT_IB_HCA", "WEFT_IB_GID_INDEX", "WEFT_IB_TIMEOUT",
        "WEFT_IB_RETRY_CNT", "WEFT_IB_RNR_RETRY", "WEFT_IB_MIN_RNR_TIMER", "WEFT_IB_SL",
        "WEFT_IB_TC", "WEFT_IB_RAILS", "WEFT_IB_QPS", "WEFT_IB_SQ_DEPTH", "WEFT_IB_EAGER_SIZE",
        "WEFT_IB_EAGER_CREDITS", "WEFT_IB_CTS_SLOTS", "WEFT_IB_CHUNK", "WEFT_IB_STAGING",
        "WEFT_IB_REG_MIN", "WEFT_IB_REG_CACHE", "WEFT_IB_RCACHE_SIZE", "WEFT_IB_FORK_INIT",
        "WEFT_IB_GDR", "WEFT_TIMEOUT",
    };

    (void)state;
    for (size_t i = 0; i < sizeof(vars) / sizeof(vars[0]); i++)
        unsetenv(vars[i]);
    memset(&core, 0, sizeof(core));
    core.struct_size = sizeof(core);
    core.size = 1;
    core.set_error = fake_set_error;
    core.get_param = fake_param;
    memset(&tp, 0, sizeof(tp));
    tp.core = &core;
    tp.name = WIB_NAME;
    last_error[0] = '\0';
    return 0;
}

static void test_defaults(void **state)
{
    struct wib_params p;

    (void)state;
    assert_int_equal(weft__ibv_params_read(&tp, &p), 0);
    assert_null(p.lib);
    assert_null(p.hca);
    assert_int_equal(p.gid_index, -1);
    assert_int_equal(p.timeout, 18);
    assert_int_equal(p.retry_cnt, 7);
    assert_int_equal(p.rnr_retry, 7);
    assert_int_equal(p.min_rnr_timer, 12);
    assert_int_equal(p.rails, WIB_RAILS_MAX);
    assert_int_equal(p.qps, 1);
    assert_int_equal(p.eager_size, 8192);
    assert_int_equal(p.eager_credits, 16);
    assert_int_equal(p.cts_slots, 16);
    assert_int_equal(p.chunk, 512 * 1024);
    assert_int_equal(p.reg_cache, -1);
    assert_int_equal(p.fork_init, 1);
    assert_int_equal(p.keepalive_ms, 1000);
    assert_int_equal(p.gdr, 1);
    assert_int_equal(p.timeout_ms, 300000);
}

static void test_values(void **state)
{
    struct wib_params p;

    (void)state;
    setenv("WEFT_IBVERBS_LIB", "/opt/swrdma/libibverbs.so.1", 1);
    setenv("WEFT_IB_HCA", "^mlx5_2", 1);
    setenv("WEFT_IB_GID_INDEX", "3", 1);
    setenv("WEFT_IB_TIMEOUT", "14", 1);
    setenv("WEFT_IB_MIN_RNR_TIMER", "1", 1);
    setenv("WEFT_IB_QPS", "4", 1);
    setenv("WEFT_IB_CHUNK", "65536", 1);
    setenv("WEFT_TIMEOUT", "5", 1);
    setenv("WEFT_IB_GDR", "0", 1);
    /* An empty value is unset. */
    setenv("WEFT_IB_RAILS", "", 1);
    assert_int_equal(weft__ibv_params_read(&tp, &p), 0);
    assert_string_equal(p.lib, "/opt/swrdma/libibverbs.so.1");
    assert_string_equal(p.hca, "^mlx5_2");
    assert_int_equal(p.gid_index, 3);
    assert_int_equal(p.timeout, 14);
    assert_int_equal(p.min_rnr_timer, 1);
    assert_int_equal(p.qps, 4);
    assert_int_equal(p.chunk, 65536);
    assert_int_equal(p.timeout_ms, 5000);
    assert_int_equal(p.rails, WIB_RAILS_MAX);
    assert_int_equal(p.gdr, 0);
}

/* var=val (with whatever else is set) fails, saying says. */
static void refused(const char *var, const char *val, const char *says)
{
    struct wib_params p;

    setenv(var, val, 1);
    if (weft__ibv_params_read(&tp, &p) == 0)
        fail_msg("%s=%s accepted", var, val);
    if (!strstr(last_error, says))
        fail_msg("%s=%s: \"%s\" does not say \"%s\"", var, val, last_error, says);
    unsetenv(var);
}

static void test_refused(void **state)
{
    (void)state;
    /* Each alone; 0 would be 655 ms, not "none". */
    refused("WEFT_IB_MIN_RNR_TIMER", "0", "WEFT_IB_MIN_RNR_TIMER=0 is not a number from 1 to 31");
    refused("WEFT_IB_TIMEOUT", "0", "WEFT_IB_TIMEOUT=0");
    refused("WEFT_IB_TIMEOUT", "32", "WEFT_IB_TIMEOUT=32");
    refused("WEFT_IB_RETRY_CNT", "8", "WEFT_IB_RETRY_CNT=8");
    refused("WEFT_IB_RNR_RETRY", "-1", "WEFT_IB_RNR_RETRY=-1");
    refused("WEFT_IB_GID_INDEX", "256", "WEFT_IB_GID_INDEX=256");
    refused("WEFT_IB_QPS", "5", "WEFT_IB_QPS=5");
    refused("WEFT_IB_RAILS", "0", "WEFT_IB_RAILS=0");
    refused("WEFT_IB_EAGER_SIZE", "100", "WEFT_IB_EAGER_SIZE=100");
    refused("WEFT_IB_CTS_SLOTS", "1", "WEFT_IB_CTS_SLOTS=1");
    refused("WEFT_IB_REG_CACHE", "2", "WEFT_IB_REG_CACHE=2");
    refused("WEFT_IB_CHUNK", "1k", "WEFT_IB_CHUNK=1k");
    refused("WEFT_IB_GDR", "2", "WEFT_IB_GDR=2 is not a number from 0 to 1");
    refused("WEFT_IB_GDR", "yes", "WEFT_IB_GDR=yes");
    /* Staging holds at least two chunks. */
    setenv("WEFT_IB_CHUNK", "1048576", 1);
    refused("WEFT_IB_STAGING", "1048576", "fewer than two chunks");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup(test_defaults, setup),
        cmocka_unit_test_setup(test_values, setup),
        cmocka_unit_test_setup(test_refused, setup),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
