/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_cudrv_sym.c: how plugins/cuda-common opens libcuda: against the
 * loader's fake (cudrv_fake.c) in each variant (everything, no optional
 * functions, a required one missing, the test double's marker, only the
 * CUDA 11 cuGetProcAddress), against the CUDA toolkit's real stub
 * library and against a file that does not exist.
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

#include "plugins/cuda-common/cudrv.h"

#define FAKE(v) WEFT_TEST_BUILDDIR "/tests/unit/.libs/fakecudrv" v ".so"

static int reset(void **state)
{
    (void)state;
    unsetenv("FAKE_CUDA_VERSION");
    unsetenv("FAKE_CUDA_DEVICES");
    unsetenv("FAKE_CUDA_INIT");
    return 0;
}

/* Every function resolved at the version of its field's type: a base
 * name with several variants gives the one that version knows. */
static void test_versions(void **state)
{
    struct wcu_drv d;
    char why[512] = "", missing[512];
    const char **last;
    unsigned long long *flags;
    CUdevice dev = -1;
    CUdeviceptr p = 0;
    CUuuid u;

    (void)state;
    if (weft__cudrv_sym_load(&d, FAKE(""), 0, why, sizeof(why)) != WCU_OK)
        fail_msg("%s", why);
    assert_string_equal(d.path, FAKE(""));
    assert_false(d.test_double);
    assert_int_equal(d.features, (1u << WCU_FEAT_COUNT) - 1);
    weft__cudrv_sym_missing(&d, missing, sizeof(missing));
    assert_string_equal(missing, "");
    last = dlsym(d.dl, "fake_cuda_last_call");
    flags = dlsym(d.dl, "fake_cuda_last_flags");
    assert_non_null(last);
    assert_int_equal(*flags, CU_GET_PROC_ADDRESS_LEGACY_STREAM);
    /* cuda.h's cuCtxGetDevice is the one-argument form of CUDA 2.0, not
     * the CUDA 13 one the fake (as the driver) has too. */
    assert_int_equal(d.fn.cuCtxGetDevice(&dev), CUDA_SUCCESS);
    assert_string_equal(*last, "cuCtxGetDevice@2000");
    /* cuMemAlloc is cuMemAlloc_v2 of CUDA 3.2 (size_t sizes). */
    assert_int_equal(d.fn.cuMemAlloc(&p, 64), CUDA_SUCCESS);
    assert_string_equal(*last, "cuMemAlloc@3020");
    /* cuDeviceGetUuid_v2 of CUDA 11.4: the fake's v1 gives zeros. */
    assert_int_equal(d.fn.cuDeviceGetUuid(&u, 0), CUDA_SUCCESS);
    assert_int_equal((unsigned char)u.bytes[0], 0x10);
    for (size_t i = 0; i < sizeof(d.fn) / sizeof(void (*)(void)); i++) {
        void *fn;

        memcpy(&fn, (char *)&d.fn + i * sizeof(fn), sizeof(fn));
        assert_non_null(fn);
    }
    weft__cudrv_sym_unload(&d);
    assert_null(d.dl);
    assert_null(d.fn.cuInit);
}

/* Optional groups missing: their feature off with the reason, the
 * functions NULL, the rest loaded. */
static void test_optional_missing(void **state)
{
    struct wcu_drv d;
    char why[512] = "", missing[512];

    (void)state;
    if (weft__cudrv_sym_load(&d, FAKE("-noopt"), 0, why, sizeof(why)) != WCU_OK)
        fail_msg("%s", why);
    assert_int_equal(d.features, 1u << WCU_FEAT_LAUNCH);
    assert_null(d.fn.cuMemCreate);
    assert_null(d.fn.cuMemGetHandleForAddressRange);
    assert_non_null(d.fn.cuLaunchKernel);
    assert_string_equal(d.feature_why[WCU_FEAT_VMM], "the driver lacks cuMemCreate");
    assert_string_equal(d.feature_why[WCU_FEAT_RANGE_HANDLE],
                        "the driver lacks cuMemGetHandleForAddressRange");
    assert_string_equal(d.feature_why[WCU_FEAT_LAUNCH], "");
    weft__cudrv_sym_missing(&d, missing, sizeof(missing));
    assert_string_equal(missing, "cuMemGetHandleForAddressRange@11070 cuMemCreate@10020 "
                                 "cuMemExportToShareableHandle@10020 "
                                 "cuMemImportFromShareableHandle@10020 cuMemMap@10020 "
                                 "cuMemSetAccess@10020 cuMemAddressReserve@10020 "
                                 "cuMemAddressFree@10020 cuMemUnmap@10020 cuMemRelease@10020 "
                                 "cuMemRetainAllocationHandle@11000");
    assert_string_equal(weft__cudrv_sym_feature_name(WCU_FEAT_VMM), "vmm");
    weft__cudrv_sym_unload(&d);
}

static void test_required_missing(void **state)
{
    struct wcu_drv d;
    char why[512] = "";

    (void)state;
    assert_int_equal(weft__cudrv_sym_load(&d, FAKE("-noipc"), 0, why, sizeof(why)),
                     WCU_TOO_OLD);
    assert_non_null(strstr(why, "lacks cuIpcGetMemHandle (CUDA 4.1 ABI)"));
    assert_null(d.dl);
}

/* A driver older than a version asked for refuses it
 * (CUDA_ERROR_INVALID_VALUE), which is a driver too old. */
static void test_version_above_driver(void **state)
{
    struct wcu_drv d;
    char why[512] = "";

    (void)state;
    setenv("FAKE_CUDA_VERSION", "11000", 1);
    assert_int_equal(weft__cudrv_sym_load(&d, FAKE(""), 0, why, sizeof(why)), WCU_TOO_OLD);
    assert_non_null(strstr(why, "cuGetProcAddress(cuDeviceGetUuid, 11040) failed with error 1: "
                                "the driver is older than CUDA 11.4"));
    assert_null(d.dl);
}

/* Only the CUDA 11 cuGetProcAddress: too old, with the version it has. */
static void test_no_proc_address_v2(void **state)
{
    struct wcu_drv d;
    char why[512] = "";

    (void)state;
    setenv("FAKE_CUDA_VERSION", "11080", 1);
    assert_int_equal(weft__cudrv_sym_load(&d, FAKE("-nogpa2"), 0, why, sizeof(why)),
                     WCU_TOO_OLD);
    assert_non_null(strstr(why, "is too old: it supports CUDA 11.8, weft needs 12.0 or later"));
    assert_null(d.dl);
}

/* The marker refuses the library unless allowed, and is remembered. */
static void test_marker(void **state)
{
    struct wcu_drv d;
    char why[512] = "";

    (void)state;
    assert_int_equal(weft__cudrv_sym_load(&d, FAKE("-marked"), 0, why, sizeof(why)),
                     WCU_TEST_DOUBLE);
    assert_non_null(strstr(why, "is a CUDA test double (it exports weft_fakecuda_test_double)"));
    assert_non_null(strstr(why, "WEFT_CUDA_ALLOW_TEST_DRIVER=1"));
    assert_null(d.dl);
    if (weft__cudrv_sym_load(&d, FAKE("-marked"), 1, why, sizeof(why)) != WCU_OK)
        fail_msg("%s", why);
    assert_true(d.test_double);
    assert_int_equal(d.test_double_value, 7);
    weft__cudrv_sym_unload(&d);
    /* Allowing test doubles changes nothing for a library without the
     * marker. */
    if (weft__cudrv_sym_load(&d, FAKE(""), 1, why, sizeof(why)) != WCU_OK)
        fail_msg("%s", why);
    assert_false(d.test_double);
    weft__cudrv_sym_unload(&d);
}

/* The toolkit's stub: every call answers CUDA_ERROR_STUB_LIBRARY. */
static void test_real_stub(void **state)
{
    struct wcu_drv d;
    char why[512] = "";
    void *dl = dlopen(WEFT_TEST_CUDA_STUB, RTLD_NOW | RTLD_LOCAL);

    (void)state;
    if (!dl) {
        print_message("skipped: %s\n", dlerror());
        skip();
    }
    dlclose(dl);
    assert_int_equal(weft__cudrv_sym_load(&d, WEFT_TEST_CUDA_STUB, 0, why, sizeof(why)),
                     WCU_STUB);
    assert_non_null(strstr(why, WEFT_TEST_CUDA_STUB " is the CUDA toolkit's stub library "
                                "(CUDA_ERROR_STUB_LIBRARY)"));
    assert_null(d.dl);
}

static void test_no_file(void **state)
{
    struct wcu_drv d;
    char why[512] = "";

    (void)state;
    assert_int_equal(weft__cudrv_sym_load(&d, "/nonexistent/libcuda.so.1", 0, why, sizeof(why)),
                     WCU_NO_LIBRARY);
    assert_non_null(strstr(why, "cannot open /nonexistent/libcuda.so.1 (WEFT_CUDA_DRIVER): "));
    /* dlerror's own words follow. */
    assert_non_null(strstr(why, "No such file or directory"));
    assert_null(d.dl);
}

/* A file that is a shared library but no CUDA driver. */
static void test_not_cuda(void **state)
{
    struct wcu_drv d;
    char why[512] = "";

    (void)state;
    assert_int_equal(weft__cudrv_sym_load(&d, "libm.so.6", 0, why, sizeof(why)), WCU_NOT_CUDA);
    assert_non_null(strstr(why, "libm.so.6 has no cuGetProcAddress_v2 nor cuDriverGetVersion: "
                                "not a CUDA driver"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup(test_versions, reset),
        cmocka_unit_test_setup(test_optional_missing, reset),
        cmocka_unit_test_setup(test_required_missing, reset),
        cmocka_unit_test_setup(test_version_above_driver, reset),
        cmocka_unit_test_setup(test_no_proc_address_v2, reset),
        cmocka_unit_test_setup(test_marker, reset),
        cmocka_unit_test_setup(test_real_stub, reset),
        cmocka_unit_test_setup(test_no_file, reset),
        cmocka_unit_test_setup(test_not_cuda, reset),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
