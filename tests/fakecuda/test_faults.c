/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_faults.c: WEFT_FAKECUDA_FAULTS: the Nth call of a function
 * failing with the default or a named or numbered error (and the calls
 * after it succeeding), and the novmm, nomemops and noipc switches, each
 * seen through the attributes a program would check and the calls that
 * then fail.
 */
#include "config.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include <cmocka.h>

#include "tests/fakecuda/fctest.h"

static void nth_child(void)
{
    setenv("WEFT_FAKECUDA_FAULTS", "fail=cuMemAlloc_v2@3", 1);
    fct_up(0);
    CUdeviceptr d;
    FCT_OK(cuMemAlloc(&d, 64));
    FCT_OK(cuMemAlloc(&d, 64));
    FCT_EXPECT(cuMemAlloc(&d, 64), CUDA_ERROR_UNKNOWN);
    FCT_OK(cuMemAlloc(&d, 64));
}

static void fail_nth(void **state)
{
    assert_int_equal(fct_child(nth_child), 0);
}

static void error_child(void)
{
    setenv("WEFT_FAKECUDA_FAULTS",
           "fail=cuStreamCreate@1:CUDA_ERROR_OUT_OF_MEMORY, fail=cuMemcpyHtoD_v2@2:201", 1);
    fct_up(0);
    CUstream s;
    CUdeviceptr d;
    char b[8] = "";
    FCT_EXPECT(cuStreamCreate(&s, 0), CUDA_ERROR_OUT_OF_MEMORY);
    FCT_OK(cuStreamCreate(&s, 0));
    FCT_OK(cuMemAlloc(&d, 8));
    FCT_OK(cuMemcpyHtoD(d, b, 8));
    FCT_EXPECT(cuMemcpyHtoD(d, b, 8), CUDA_ERROR_INVALID_CONTEXT);
    FCT_OK(cuMemcpyHtoD(d, b, 8));
}

static void fail_error(void **state)
{
    assert_int_equal(fct_child(error_child), 0);
}

static int attr(CUdevice_attribute a)
{
    int v = -1;
    FCT_OK(cuDeviceGetAttribute(&v, a, 0));
    return v;
}

static void novmm_child(void)
{
    setenv("WEFT_FAKECUDA_FAULTS", "novmm", 1);
    fct_up(0);
    FCT_TRUE(attr(CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED) == 0);
    FCT_TRUE(attr(CU_DEVICE_ATTRIBUTE_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR_SUPPORTED) == 0);
    FCT_TRUE(attr(CU_DEVICE_ATTRIBUTE_CAN_USE_64_BIT_STREAM_MEM_OPS) == 1);
}

static void novmm(void **state)
{
    assert_int_equal(fct_child(novmm_child), 0);
}

static void nomemops_child(void)
{
    setenv("WEFT_FAKECUDA_FAULTS", "nomemops", 1);
    fct_up(0);
    FCT_TRUE(attr(CU_DEVICE_ATTRIBUTE_CAN_USE_STREAM_MEM_OPS_V1) == 0);
    FCT_TRUE(attr(CU_DEVICE_ATTRIBUTE_CAN_USE_64_BIT_STREAM_MEM_OPS) == 0);
    FCT_TRUE(attr(CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED) == 1);
    CUdeviceptr d;
    FCT_OK(cuMemAlloc(&d, 64));
    FCT_EXPECT(cuStreamWriteValue32(NULL, d, 1, 0), CUDA_ERROR_NOT_SUPPORTED);
    FCT_EXPECT(cuStreamWaitValue32(NULL, d, 0, 0), CUDA_ERROR_NOT_SUPPORTED);
}

static void nomemops(void **state)
{
    assert_int_equal(fct_child(nomemops_child), 0);
}

static void noipc_child(void)
{
    setenv("WEFT_FAKECUDA_FAULTS", "noipc", 1);
    fct_up(0);
    FCT_TRUE(attr(CU_DEVICE_ATTRIBUTE_IPC_EVENT_SUPPORTED) == 0);
    CUdeviceptr d;
    CUipcMemHandle h;
    unsigned capable = 1;
    FCT_OK(cuMemAlloc(&d, 64));
    FCT_OK(cuPointerGetAttribute(&capable, CU_POINTER_ATTRIBUTE_IS_LEGACY_CUDA_IPC_CAPABLE, d));
    FCT_TRUE(capable == 0);
    FCT_EXPECT(cuIpcGetMemHandle(&h, d), CUDA_ERROR_NOT_SUPPORTED);
}

static void noipc(void **state)
{
    assert_int_equal(fct_child(noipc_child), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(fail_nth),
        cmocka_unit_test(fail_error),
        cmocka_unit_test(novmm),
        cmocka_unit_test(nomemops),
        cmocka_unit_test(noipc),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
