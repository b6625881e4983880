/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_cudrv_open.c: what a GPU transport's init gets from
 * weft__cudrv_open: the parameters read through the core's get_param,
 * each refusal with its status and reason (no library, test double, the
 * toolkit's stub, a driver too old, no device, cuInit failing), the WARN
 * line of an allowed test double and the INFO line of a driver taken.
 */
#include "config.h"

#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "plugins/cuda-common/cudrv.h"

#define FAKE(v) WEFT_TEST_BUILDDIR "/tests/unit/.libs/fakecudrv" v ".so"

static char logged[4096];
static int warns;
static weft_transport_core_t core;

static void fake_log(int level, const char *plugin, const char *fmt, ...)
{
    size_t o = strlen(logged);
    va_list ap;

    if (level == WEFT_TRANSPORT_LOG_WARN)
        warns++;
    o += (size_t)snprintf(logged + o, sizeof(logged) - o, "%d %s: ", level, plugin);
    va_start(ap, fmt);
    if (o < sizeof(logged))
        o += (size_t)vsnprintf(logged + o, sizeof(logged) - o, fmt, ap);
    va_end(ap);
    if (o < sizeof(logged) - 1)
        strcat(logged, "\n");
}

/* Parameters as the core reads them: from the environment. */
static const char *fake_param(const char *name)
{
    return getenv(name);
}

static int reset(void **state)
{
    (void)state;
    memset(&core, 0, sizeof(core));
    core.struct_size = sizeof(core);
    core.log = fake_log;
    core.get_param = fake_param;
    logged[0] = '\0';
    warns = 0;
    setenv("WEFT_CUDA_DRIVER", FAKE(""), 1);
    unsetenv("WEFT_CUDA_ALLOW_TEST_DRIVER");
    unsetenv("CUDA_VISIBLE_DEVICES");
    unsetenv("FAKE_CUDA_VERSION");
    unsetenv("FAKE_CUDA_DEVICES");
    unsetenv("FAKE_CUDA_INIT");
    return 0;
}

static enum wcu_status open_it(struct wcu_drv *d, char *why, size_t cap)
{
    return weft__cudrv_open(d, &core, "cuda-test", why, cap);
}

static void test_taken(void **state)
{
    struct wcu_drv d;
    char why[512] = "";

    (void)state;
    setenv("FAKE_CUDA_DEVICES", "2", 1);
    if (open_it(&d, why, sizeof(why)) != WCU_OK)
        fail_msg("%s", why);
    assert_int_equal(d.version, 13000);
    assert_int_equal(d.ndev, 2);
    assert_int_equal(warns, 0);
    assert_non_null(strstr(logged, "2 cuda-test: CUDA driver " FAKE("") ", CUDA 13.0, "
                                   "2 devices\n"));
    weft__cudrv_close(&d);
    assert_null(d.dl);
}

/* The INFO line says which optional groups are off, and why. */
static void test_taken_without_optional(void **state)
{
    struct wcu_drv d;
    char why[512] = "";

    (void)state;
    setenv("WEFT_CUDA_DRIVER", FAKE("-noopt"), 1);
    if (open_it(&d, why, sizeof(why)) != WCU_OK)
        fail_msg("%s", why);
    assert_non_null(strstr(logged, "1 device; range-handle off: the driver lacks "
                                   "cuMemGetHandleForAddressRange; vmm off: the driver lacks "
                                   "cuMemCreate\n"));
    weft__cudrv_close(&d);
}

static void test_no_library(void **state)
{
    struct wcu_drv d;
    char why[512] = "";

    (void)state;
    setenv("WEFT_CUDA_DRIVER", "/nonexistent/libcuda.so.1", 1);
    assert_int_equal(open_it(&d, why, sizeof(why)), WCU_NO_LIBRARY);
    assert_non_null(strstr(why, "cannot open /nonexistent/libcuda.so.1 (WEFT_CUDA_DRIVER): "));
    assert_null(d.dl);
    /* Unset or empty: libcuda.so.1, which this machine may or may not
     * have; either way the variable is not named. */
    setenv("WEFT_CUDA_DRIVER", "", 1);
    if (open_it(&d, why, sizeof(why)) == WCU_NO_LIBRARY)
        assert_non_null(strstr(why, "cannot open libcuda.so.1 (no NVIDIA driver installed?): "));
    else
        weft__cudrv_close(&d);
}

/* A test double: refused, or with WEFT_CUDA_ALLOW_TEST_DRIVER=1 taken
 * with exactly one WARN line. */
static void test_test_double(void **state)
{
    struct wcu_drv d;
    char why[512] = "";

    (void)state;
    setenv("WEFT_CUDA_DRIVER", FAKE("-marked"), 1);
    assert_int_equal(open_it(&d, why, sizeof(why)), WCU_TEST_DOUBLE);
    assert_non_null(strstr(why, "is a CUDA test double"));
    assert_int_equal(warns, 0);
    setenv("WEFT_CUDA_ALLOW_TEST_DRIVER", "0", 1);
    assert_int_equal(open_it(&d, why, sizeof(why)), WCU_TEST_DOUBLE);
    setenv("WEFT_CUDA_ALLOW_TEST_DRIVER", "1", 1);
    if (open_it(&d, why, sizeof(why)) != WCU_OK)
        fail_msg("%s", why);
    assert_int_equal(warns, 1);
    assert_non_null(strstr(logged, "1 cuda-test: " FAKE("-marked") " is a CUDA test double "
                                   "(weft_fakecuda_test_double = 7), not an NVIDIA driver"));
    weft__cudrv_close(&d);
}

static void test_bad_param(void **state)
{
    struct wcu_drv d;
    char why[512] = "";

    (void)state;
    setenv("WEFT_CUDA_ALLOW_TEST_DRIVER", "yes", 1);
    assert_int_equal(open_it(&d, why, sizeof(why)), WCU_BAD_PARAM);
    assert_string_equal(why, "WEFT_CUDA_ALLOW_TEST_DRIVER=yes: expected 0 or 1");
    assert_null(d.dl);
}

/* The CUDA toolkit's real stub, named by WEFT_CUDA_DRIVER. */
static void test_stub(void **state)
{
    struct wcu_drv d;
    char why[512] = "";

    (void)state;
    if (access(WEFT_TEST_CUDA_STUB, R_OK) != 0) {
        print_message("skipped: %s: %s\n", WEFT_TEST_CUDA_STUB, strerror(errno));
        skip();
    }
    setenv("WEFT_CUDA_DRIVER", WEFT_TEST_CUDA_STUB, 1);
    assert_int_equal(open_it(&d, why, sizeof(why)), WCU_STUB);
    assert_string_equal(why, WEFT_TEST_CUDA_STUB " is the CUDA toolkit's stub library "
                             "(CUDA_ERROR_STUB_LIBRARY), meant for linking only: install the "
                             "NVIDIA driver, or set WEFT_CUDA_DRIVER to its libcuda.so.1");
    assert_null(d.dl);
}

/* cuGetProcAddress_v2 exists but the driver says it is older than 12.0. */
static void test_too_old(void **state)
{
    struct wcu_drv d;
    char why[512] = "";

    (void)state;
    /* Every function of the table is of CUDA 11.7 or before, so loading
     * succeeds: the version check itself must refuse it. */
    setenv("FAKE_CUDA_VERSION", "11080", 1);
    assert_int_equal(open_it(&d, why, sizeof(why)), WCU_TOO_OLD);
    assert_non_null(strstr(why, "is too old: it supports CUDA 11.8, weft needs 12.0 or later"));
    assert_null(d.dl);
}

static void test_no_device(void **state)
{
    struct wcu_drv d;
    char why[512] = "";

    (void)state;
    setenv("FAKE_CUDA_DEVICES", "0", 1);
    assert_int_equal(open_it(&d, why, sizeof(why)), WCU_NO_DEVICE);
    assert_string_equal(why, "no CUDA device: the driver counts none");
    assert_null(d.dl);
    setenv("FAKE_CUDA_DEVICES", "1", 1);
    setenv("FAKE_CUDA_INIT", "100", 1);         /* CUDA_ERROR_NO_DEVICE */
    setenv("CUDA_VISIBLE_DEVICES", "", 1);
    assert_int_equal(open_it(&d, why, sizeof(why)), WCU_NO_DEVICE);
    assert_string_equal(why, "no CUDA device: cuInit says CUDA_ERROR_NO_DEVICE "
                             "(CUDA_VISIBLE_DEVICES=)");
}

/* Any other cuInit failure, named by the driver. */
static void test_init_fails(void **state)
{
    struct wcu_drv d;
    char why[512] = "";

    (void)state;
    setenv("FAKE_CUDA_INIT", "304", 1);         /* CUDA_ERROR_OPERATING_SYSTEM */
    assert_int_equal(open_it(&d, why, sizeof(why)), WCU_FAILED);
    assert_string_equal(why, "CUDA driver " FAKE("") ": cuInit failed: "
                             "CUDA_ERROR_OPERATING_SYSTEM (OS call failed or operation not "
                             "supported on this OS)");
    assert_null(d.dl);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup(test_taken, reset),
        cmocka_unit_test_setup(test_taken_without_optional, reset),
        cmocka_unit_test_setup(test_no_library, reset),
        cmocka_unit_test_setup(test_test_double, reset),
        cmocka_unit_test_setup(test_bad_param, reset),
        cmocka_unit_test_setup(test_stub, reset),
        cmocka_unit_test_setup(test_too_old, reset),
        cmocka_unit_test_setup(test_no_device, reset),
        cmocka_unit_test_setup(test_init_fails, reset),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
