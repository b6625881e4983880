/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_cudrv_fakecuda.c: the GPU transports' driver access
 * (plugins/cuda-common) against weft's CUDA test double
 * (tests/fakecuda): the double is refused as a driver unless
 * WEFT_CUDA_ALLOW_TEST_DRIVER=1 says so; allowed, it opens with a WARN,
 * every required function resolves, its devices read back as the double
 * configures them, and a buffer of each kind is classified as what it is.
 * Both sides were written from NVIDIA's documentation apart: this checks
 * they agree.
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

#include "plugins/cuda-common/cudrv.h"

#define FAKECUDA WEFT_TEST_BUILDDIR "/tests/fakecuda/.libs/libfakecuda.so"

static int warns;
static weft_transport_core_t core;

static void quiet_log(int level, const char *plugin, const char *fmt, ...)
{
    (void)plugin;
    (void)fmt;
    warns += level == WEFT_TRANSPORT_LOG_WARN;
}

static const char *env_param(const char *name)
{
    return getenv(name);
}

static int reset(void **state)
{
    (void)state;
    memset(&core, 0, sizeof(core));
    core.struct_size = sizeof(core);
    core.log = quiet_log;
    core.get_param = env_param;
    warns = 0;
    setenv("WEFT_CUDA_DRIVER", FAKECUDA, 1);
    setenv("WEFT_FAKECUDA_DEVICES", "2", 1);
    unsetenv("WEFT_CUDA_ALLOW_TEST_DRIVER");
    return 0;
}

static void test_refused(void **state)
{
    struct wcu_drv d;
    char why[WCU_WHY_MAX] = "";

    (void)state;
    assert_int_equal(weft__cudrv_open(&d, &core, "cuda-test", why, sizeof(why)),
                     WCU_TEST_DOUBLE);
    assert_non_null(strstr(why, "WEFT_CUDA_ALLOW_TEST_DRIVER"));
}

static void test_allowed(void **state)
{
    struct wcu_drv d;
    struct wcu_dev dev;
    char why[WCU_WHY_MAX] = "";

    (void)state;
    setenv("WEFT_CUDA_ALLOW_TEST_DRIVER", "1", 1);
    assert_int_equal(weft__cudrv_open(&d, &core, "cuda-test", why, sizeof(why)), WCU_OK);
    assert_int_equal(warns, 1);
    assert_int_equal(d.ndev, 2);
    assert_true(d.version >= WCU_DRIVER_MIN);
    for (int i = 0; i < d.ndev; i++) {
        assert_int_equal(weft__cudrv_dev_query(&d, i, &dev, why, sizeof(why)), 0);
        assert_int_equal(strncmp(dev.uuid, "GPU-", 4), 0);
        assert_true(dev.cc_major >= 7);
        assert_true(dev.features & WCU_DEV_UVA);
    }
    weft__cudrv_close(&d);
}

static void test_classify(void **state)
{
    struct wcu_drv d;
    struct wcu_ptr p;
    char why[WCU_WHY_MAX] = "", host[64];
    CUcontext ctx;
    CUdevice dev;
    CUdeviceptr dptr;
    void *pinned;

    (void)state;
    setenv("WEFT_CUDA_ALLOW_TEST_DRIVER", "1", 1);
    assert_int_equal(weft__cudrv_open(&d, &core, "cuda-test", why, sizeof(why)), WCU_OK);
    assert_int_equal(d.fn.cuDeviceGet(&dev, 1), CUDA_SUCCESS);
    assert_int_equal(d.fn.cuDevicePrimaryCtxRetain(&ctx, dev), CUDA_SUCCESS);
    assert_int_equal(d.fn.cuCtxSetCurrent(ctx), CUDA_SUCCESS);
    assert_int_equal(d.fn.cuMemAlloc(&dptr, 1 << 20), CUDA_SUCCESS);
    assert_int_equal(d.fn.cuMemAllocHost(&pinned, 4096), CUDA_SUCCESS);

    assert_int_equal(weft__cudrv_ptr_query(&d, (void *)(uintptr_t)(dptr + 100), &p, why,
                                           sizeof(why)), 0);
    assert_int_equal(p.mem, WCU_MEM_DEVICE);
    assert_int_equal(p.ordinal, 1);
    assert_true(p.buffer_id != 0);
    assert_int_equal(p.start, (uintptr_t)dptr);
    assert_int_equal(p.size, 1 << 20);

    assert_int_equal(weft__cudrv_ptr_query(&d, pinned, &p, why, sizeof(why)), 0);
    assert_int_equal(p.mem, WCU_MEM_PINNED);

    assert_int_equal(weft__cudrv_ptr_query(&d, host, &p, why, sizeof(why)), 0);
    assert_int_equal(p.mem, WCU_MEM_HOST);
    assert_int_equal(p.ordinal, -1);

    assert_int_equal(d.fn.cuMemFreeHost(pinned), CUDA_SUCCESS);
    assert_int_equal(d.fn.cuMemFree(dptr), CUDA_SUCCESS);
    assert_int_equal(d.fn.cuDevicePrimaryCtxRelease(dev), CUDA_SUCCESS);
    weft__cudrv_close(&d);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup(test_refused, reset),
        cmocka_unit_test_setup(test_allowed, reset),
        cmocka_unit_test_setup(test_classify, reset),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
