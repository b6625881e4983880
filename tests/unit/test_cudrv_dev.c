/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_cudrv_dev.c: the device inventory of plugins/cuda-common against
 * the loader's fake libcuda: ordinal, UUID text, name, compute
 * capability, PCI bus id and features per device, device features that
 * need optional driver functions turned off without them, the line
 * weft-info prints, and a device the driver does not have.
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

#define FAKE(v) WEFT_TEST_BUILDDIR "/tests/unit/.libs/fakecudrv" v ".so"

static void load(struct wcu_drv *d, const char *path)
{
    char why[512] = "";

    setenv("FAKE_CUDA_DEVICES", "2", 1);
    if (weft__cudrv_sym_load(d, path, 0, why, sizeof(why)) != WCU_OK)
        fail_msg("%s", why);
    assert_int_equal(d->fn.cuInit(0), CUDA_SUCCESS);
}

static void test_uuid_text(void **state)
{
    CUuuid u;
    char buf[48];

    (void)state;
    for (int i = 0; i < 16; i++)
        u.bytes[i] = (char)(0xf0 + i);
    weft__cudrv_dev_uuid_text(&u, buf, sizeof(buf));
    assert_string_equal(buf, "GPU-f0f1f2f3-f4f5-f6f7-f8f9-fafbfcfdfeff");
    /* Cut short, still a string. */
    weft__cudrv_dev_uuid_text(&u, buf, 8);
    assert_string_equal(buf, "GPU-f0f");
}

static void test_inventory(void **state)
{
    struct wcu_drv d;
    struct wcu_dev dev;
    char why[256] = "", line[512];

    (void)state;
    load(&d, FAKE(""));
    if (weft__cudrv_dev_query(&d, 0, &dev, why, sizeof(why)) != 0)
        fail_msg("%s", why);
    assert_int_equal(dev.ordinal, 0);
    assert_string_equal(dev.uuid, "GPU-10111213-1415-1617-1819-1a1b1c1d1e1f");
    assert_string_equal(dev.name, "Fake GPU 0");
    assert_int_equal(dev.cc_major, 9);
    assert_int_equal(dev.cc_minor, 0);
    assert_string_equal(dev.pci, "0000:18:00.0");
    /* The fake does not know the memops attributes (an older driver's
     * CUDA_ERROR_INVALID_VALUE): off, not an error. */
    assert_int_equal(dev.features, WCU_DEV_VMM | WCU_DEV_POSIX_FD | WCU_DEV_DMA_BUF |
                                   WCU_DEV_UVA | WCU_DEV_GDR | WCU_DEV_MEMOPS);
    weft__cudrv_dev_describe(&dev, line, sizeof(line));
    assert_string_equal(line, "cuda0 GPU-10111213-1415-1617-1819-1a1b1c1d1e1f Fake GPU 0, "
                              "sm_90, PCI 0000:18:00.0: memops vmm posix-fd dma-buf uva gdr");

    if (weft__cudrv_dev_query(&d, 1, &dev, why, sizeof(why)) != 0)
        fail_msg("%s", why);
    assert_int_equal(dev.ordinal, 1);
    assert_string_equal(dev.pci, "0000:19:00.0");
    assert_int_equal(dev.features, WCU_DEV_MEMOPS);
    weft__cudrv_dev_describe(&dev, line, sizeof(line));
    assert_string_equal(line, "cuda1 GPU-20212223-2425-2627-2829-2a2b2c2d2e2f Fake GPU 1, "
                              "sm_90, PCI 0000:19:00.0: memops");
    dev.features = 0;
    weft__cudrv_dev_describe(&dev, line, sizeof(line));
    assert_non_null(strstr(line, "0000:19:00.0: no features"));

    assert_int_equal(weft__cudrv_dev_query(&d, 2, &dev, why, sizeof(why)), -1);
    assert_string_equal(why, "CUDA device 2: cuDeviceGet failed: CUDA error 101");
    weft__cudrv_sym_unload(&d);
}

/* The device says VMM and dma-buf, the driver lacks their functions. */
static void test_features_need_functions(void **state)
{
    struct wcu_drv d;
    struct wcu_dev dev;
    char why[256] = "";

    (void)state;
    load(&d, FAKE("-noopt"));
    if (weft__cudrv_dev_query(&d, 0, &dev, why, sizeof(why)) != 0)
        fail_msg("%s", why);
    assert_int_equal(dev.features, WCU_DEV_UVA | WCU_DEV_GDR | WCU_DEV_MEMOPS);
    weft__cudrv_sym_unload(&d);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_uuid_text),
        cmocka_unit_test(test_inventory),
        cmocka_unit_test(test_features_need_functions),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
