/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_entry.c: the driver's entry and its devices and contexts, as the
 * CUDA driver API reference describes them: cuGetProcAddress at explicit
 * versions (cudaTypedefs.h's PFN_<name>_v<version>), the driver version,
 * error names, the marker weft looks for, CUDA_ERROR_NOT_INITIALIZED
 * before cuInit, WEFT_FAKECUDA_DEVICES, device queries, and primary
 * contexts with CUDA_ERROR_INVALID_CONTEXT when none is current.
 */
#include "config.h"

#include <dlfcn.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "tests/fakecuda/fctest.h"

static void *proc(const char *name, int version, CUdriverProcAddressQueryResult *st)
{
    void *fn = (void *)1;
    FCT_OK(cuGetProcAddress_v2(name, &fn, version, CU_GET_PROC_ADDRESS_DEFAULT, st));
    return fn;
}

static void versions_child(void)
{
    CUdriverProcAddressQueryResult st;
    /* before cuInit too: it is how a loader finds cuInit */
    FCT_TRUE(proc("cuInit", 2000, &st) == (void *)cuInit && st == CU_GET_PROC_ADDRESS_SUCCESS);
    FCT_TRUE(proc("cuMemAlloc", 3020, &st) == (void *)cuMemAlloc_v2);
    FCT_TRUE(proc("cuMemAlloc", 13000, &st) == (void *)cuMemAlloc_v2);
    /* the CUDA 2.0 variant is not emulated: found, version too low */
    FCT_TRUE(proc("cuMemAlloc", 3010, &st) == NULL && st == CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT);
    FCT_TRUE(proc("cuMemAlloc_v2", 13000, &st) == NULL && st == CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND);
    FCT_TRUE(proc("cuNoSuchThing", 13000, &st) == NULL && st == CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND);
    FCT_TRUE(proc("cuIpcOpenMemHandle", 11000, &st) == (void *)cuIpcOpenMemHandle_v2);
    void *v1 = proc("cuIpcOpenMemHandle", 10020, &st);
    FCT_TRUE(v1 && v1 != (void *)cuIpcOpenMemHandle_v2 && st == CU_GET_PROC_ADDRESS_SUCCESS);
    FCT_TRUE(proc("cuStreamWriteValue32", 12000, &st) == (void *)cuStreamWriteValue32_v2);
    FCT_TRUE(proc("cuStreamWaitValue32", 11070, &st) == (void *)cuStreamWaitValue32_v2);
    FCT_TRUE(proc("cuDeviceGetUuid", 11040, &st) == (void *)cuDeviceGetUuid_v2);
    FCT_TRUE(proc("cuCtxGetDevice", 12080, &st) != (void *)cuCtxGetDevice_v2);
    FCT_TRUE(proc("cuCtxGetDevice", 13000, &st) == (void *)cuCtxGetDevice_v2);
    FCT_TRUE(proc("cuGetProcAddress", 12000, &st) == (void *)cuGetProcAddress_v2);
    void *fn;
    /* a version above the driver's */
    FCT_EXPECT(cuGetProcAddress_v2("cuInit", &fn, 13010, 0, NULL), CUDA_ERROR_INVALID_VALUE);
    FCT_EXPECT(cuGetProcAddress_v2(NULL, &fn, 12000, 0, NULL), CUDA_ERROR_INVALID_VALUE);
    FCT_EXPECT(cuGetProcAddress_v2("cuInit", &fn, 12000, 4, NULL), CUDA_ERROR_INVALID_VALUE);
    FCT_OK(cuGetProcAddress_v2("cuInit", &fn, 12000, CU_GET_PROC_ADDRESS_LEGACY_STREAM, NULL));
    FCT_TRUE(fn == (void *)cuInit);
}

static void get_proc_address(void **state)
{
    assert_int_equal(fct_child(versions_child), 0);
}

static void marker_child(void)
{
    int *marker = dlsym(RTLD_DEFAULT, "weft_fakecuda_test_double");
    FCT_TRUE(marker && *marker == 1);
    int v = 0;
    FCT_OK(cuDriverGetVersion(&v));
    FCT_TRUE(v == 13000);
    const char *s;
    FCT_OK(cuGetErrorName(CUDA_ERROR_INVALID_CONTEXT, &s));
    FCT_TRUE(!strcmp(s, "CUDA_ERROR_INVALID_CONTEXT"));
    FCT_OK(cuGetErrorString(CUDA_ERROR_NOT_READY, &s));
    FCT_TRUE(s && *s);
    FCT_EXPECT(cuGetErrorName((CUresult)12345, &s), CUDA_ERROR_INVALID_VALUE);
    FCT_TRUE(s == NULL);
}

static void marker_and_version(void **state)
{
    assert_int_equal(fct_child(marker_child), 0);
}

static void uninit_child(void)
{
    int n;
    CUdevice d;
    CUcontext c;
    CUdeviceptr p;
    FCT_EXPECT(cuDeviceGetCount(&n), CUDA_ERROR_NOT_INITIALIZED);
    FCT_EXPECT(cuDeviceGet(&d, 0), CUDA_ERROR_NOT_INITIALIZED);
    FCT_EXPECT(cuCtxGetCurrent(&c), CUDA_ERROR_NOT_INITIALIZED);
    FCT_EXPECT(cuMemAlloc(&p, 16), CUDA_ERROR_NOT_INITIALIZED);
    FCT_EXPECT(cuInit(1), CUDA_ERROR_INVALID_VALUE);
    FCT_OK(cuInit(0));
    FCT_OK(cuInit(0));
    FCT_OK(cuDeviceGetCount(&n));
}

static void not_initialized(void **state)
{
    assert_int_equal(fct_child(uninit_child), 0);
}

static void devices_child(void)
{
    setenv("WEFT_FAKECUDA_DEVICES", "3", 1);
    FCT_OK(cuInit(0));
    int n, v;
    FCT_OK(cuDeviceGetCount(&n));
    FCT_TRUE(n == 3);
    CUdevice d;
    FCT_EXPECT(cuDeviceGet(&d, 3), CUDA_ERROR_INVALID_DEVICE);
    FCT_OK(cuDeviceGet(&d, 2));
    FCT_TRUE(d == 2);
    char name[64], bus[3][16];
    FCT_OK(cuDeviceGetName(name, sizeof(name), d));
    FCT_TRUE(strstr(name, "fakecuda") != NULL);
    CUuuid u[3];
    for (int i = 0; i < 3; i++) {
        FCT_OK(cuDeviceGetUuid(&u[i], i));
        FCT_OK(cuDeviceGetPCIBusId(bus[i], sizeof(bus[i]), i));
        FCT_TRUE(strlen(bus[i]) == 12 && bus[i][4] == ':' && bus[i][7] == ':');
    }
    FCT_TRUE(memcmp(&u[0], &u[1], sizeof(u[0])) && strcmp(bus[0], bus[2]));
    FCT_EXPECT(cuDeviceGetUuid(&u[0], 7), CUDA_ERROR_INVALID_DEVICE);
    FCT_OK(cuDeviceGetAttribute(&v, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, 0));
    FCT_TRUE(v == 9);
    FCT_OK(cuDeviceGetAttribute(&v, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, 0));
    FCT_TRUE(v == 0);
    FCT_OK(cuDeviceGetAttribute(&v, CU_DEVICE_ATTRIBUTE_UNIFIED_ADDRESSING, 1));
    FCT_TRUE(v == 1);
    FCT_OK(cuDeviceGetAttribute(&v, CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED, 0));
    FCT_TRUE(v == 1);
    FCT_OK(cuDeviceGetAttribute(&v, CU_DEVICE_ATTRIBUTE_CAN_USE_64_BIT_STREAM_MEM_OPS, 0));
    FCT_TRUE(v == 1);
    FCT_OK(cuDeviceGetAttribute(&v, CU_DEVICE_ATTRIBUTE_PCI_BUS_ID, 2));
    FCT_TRUE(v == (int)strtol(bus[2] + 5, NULL, 16));
    FCT_EXPECT(cuDeviceGetAttribute(&v, CU_DEVICE_ATTRIBUTE_MAX, 0), CUDA_ERROR_INVALID_VALUE);
}

static void devices(void **state)
{
    assert_int_equal(fct_child(devices_child), 0);
}

static void no_device_child(void)
{
    setenv("WEFT_FAKECUDA_DEVICES", "0", 1);
    FCT_EXPECT(cuInit(0), CUDA_ERROR_NO_DEVICE);
}

static void no_device(void **state)
{
    assert_int_equal(fct_child(no_device_child), 0);
}

static void contexts_child(void)
{
    setenv("WEFT_FAKECUDA_DEVICES", "2", 1);
    FCT_OK(cuInit(0));
    CUcontext c0, c1, cur = (CUcontext)1;
    CUdevice d;
    CUdeviceptr p;
    FCT_OK(cuCtxGetCurrent(&cur));
    FCT_TRUE(cur == NULL);
    FCT_EXPECT(cuCtxGetDevice(&d), CUDA_ERROR_INVALID_CONTEXT);
    FCT_EXPECT(cuMemAlloc(&p, 16), CUDA_ERROR_INVALID_CONTEXT);
    FCT_EXPECT(cuCtxSynchronize(), CUDA_ERROR_INVALID_CONTEXT);
    FCT_OK(cuDevicePrimaryCtxRetain(&c0, 0));
    FCT_OK(cuDevicePrimaryCtxRetain(&c1, 1));
    FCT_TRUE(c0 && c1 && c0 != c1);
    CUcontext again;
    FCT_OK(cuDevicePrimaryCtxRetain(&again, 0));
    FCT_TRUE(again == c0);
    FCT_OK(cuCtxSetCurrent(c1));
    FCT_OK(cuCtxGetDevice(&d));
    FCT_TRUE(d == 1);
    FCT_OK(cuCtxGetDevice_v2(&d, c0));
    FCT_TRUE(d == 0);
    FCT_OK(cuCtxGetCurrent(&cur));
    FCT_TRUE(cur == c1);
    FCT_OK(cuCtxSetCurrent(NULL));
    FCT_EXPECT(cuCtxGetDevice(&d), CUDA_ERROR_INVALID_CONTEXT);
    /* released to zero, a current primary context is destroyed */
    FCT_OK(cuCtxSetCurrent(c1));
    FCT_OK(cuDevicePrimaryCtxRelease(1));
    FCT_EXPECT(cuCtxGetDevice(&d), CUDA_ERROR_CONTEXT_IS_DESTROYED);
    unsigned flags;
    int active;
    FCT_OK(cuDevicePrimaryCtxGetState(0, &flags, &active));
    FCT_TRUE(active == 1);
    FCT_OK(cuDevicePrimaryCtxGetState(1, &flags, &active));
    FCT_TRUE(active == 0);
}

static void contexts(void **state)
{
    assert_int_equal(fct_child(contexts_child), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(get_proc_address),
        cmocka_unit_test(marker_and_version),
        cmocka_unit_test(not_initialized),
        cmocka_unit_test(devices),
        cmocka_unit_test(no_device),
        cmocka_unit_test(contexts),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
