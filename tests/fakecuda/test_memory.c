/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_memory.c: device and host memory as the driver API reference
 * describes it: device memory the host cannot dereference, addresses
 * reused after cuMemFree while buffer ids never are, copies in every
 * direction, cuMemsetD8, page-locked host memory, and pointer
 * attributes, with the reference's answers for memory CUDA does not know.
 */
#include "config.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "tests/fakecuda/fctest.h"

static CUdeviceptr victim;

static void touch_child(void)
{
    /* a host load through a device pointer: must fault (and not be
     * caught by cmocka's handler, which would carry on with the tests) */
    signal(SIGSEGV, SIG_DFL);
    volatile char c = *(volatile char *)(uintptr_t)victim;
    (void)c;
}

static void not_host_readable_child(void)
{
    fct_up(0);
    FCT_OK(cuMemAlloc(&victim, 4096));
    FCT_OK(cuMemsetD8(victim, 7, 4096));
    exit(fct_child(touch_child));
}

static void not_host_readable(void **state)
{
    assert_int_equal(fct_child(not_host_readable_child), 128 + SIGSEGV);
}

static unsigned long long buffer_id(CUdeviceptr p)
{
    unsigned long long id = 0;
    FCT_OK(cuPointerGetAttribute(&id, CU_POINTER_ATTRIBUTE_BUFFER_ID, p));
    return id;
}

static void reuse_child(void)
{
    fct_up(0);
    CUdeviceptr a, b, c, d, e;
    FCT_OK(cuMemAlloc(&a, 100000));
    FCT_OK(cuMemAlloc(&b, 100000));
    FCT_OK(cuMemAlloc(&c, 100000));
    FCT_TRUE(a != b && b != c);
    unsigned long long ida = buffer_id(a), idb = buffer_id(b), idc = buffer_id(c);
    FCT_TRUE(ida != idb && idb != idc && ida != idc);
    FCT_OK(cuMemFree(a));
    FCT_OK(cuMemFree(c));
    /* the last freed comes back first, under a new id */
    FCT_OK(cuMemAlloc(&d, 100000));
    FCT_TRUE(d == c);
    FCT_TRUE(buffer_id(d) > idc);
    FCT_OK(cuMemAlloc(&e, 50000));
    FCT_TRUE(e == a);
    FCT_TRUE(buffer_id(e) > buffer_id(d));
    /* freed memory is no longer CUDA memory; a double free fails */
    FCT_OK(cuMemFree(b));
    FCT_EXPECT(cuPointerGetAttribute(&ida, CU_POINTER_ATTRIBUTE_BUFFER_ID, b), CUDA_ERROR_INVALID_VALUE);
    FCT_EXPECT(cuMemFree(b), CUDA_ERROR_INVALID_VALUE);
    FCT_EXPECT(cuMemFree(d + 8), CUDA_ERROR_INVALID_VALUE);
    FCT_EXPECT(cuMemAlloc(&a, 0), CUDA_ERROR_INVALID_VALUE);
}

static void reuse(void **state)
{
    assert_int_equal(fct_child(reuse_child), 0);
}

static void copies_child(void)
{
    fct_up(0);
    enum { N = 10000 };
    char *h = malloc(N), *back = malloc(N);
    for (int i = 0; i < N; i++)
        h[i] = (char)(i * 7);
    CUdeviceptr d1, d2;
    FCT_OK(cuMemAlloc(&d1, N));
    FCT_OK(cuMemAlloc(&d2, N));
    /* cuMemAlloc does not clear memory (the double fills it with 0xa5) */
    FCT_OK(cuMemcpyDtoH(back, d1, 16));
    FCT_TRUE((unsigned char)back[0] == 0xa5);
    FCT_OK(cuMemcpyHtoD(d1, h, N));
    FCT_OK(cuMemcpyDtoD(d2, d1, N));
    memset(back, 0, N);
    FCT_OK(cuMemcpyDtoH(back, d2, N));
    FCT_TRUE(!memcmp(h, back, N));
    /* generic copies with unified addressing, and an offset inside */
    FCT_OK(cuMemcpy(d1 + 100, (CUdeviceptr)(uintptr_t)(h + 5000), 50));
    FCT_OK(cuMemcpy((CUdeviceptr)(uintptr_t)back, d1, N));
    FCT_TRUE(!memcmp(back + 100, h + 5000, 50) && !memcmp(back, h, 100));
    FCT_OK(cuMemsetD8(d2 + 10, 0x3c, 20));
    FCT_OK(cuMemcpyDtoH(back, d2, 40));
    FCT_TRUE(back[9] == h[9] && back[10] == 0x3c && back[29] == 0x3c && back[30] == h[30]);
    /* past the end, a host pointer where a device one is due, a hole */
    FCT_EXPECT(cuMemcpyHtoD(d1 + N - 10, h, 20), CUDA_ERROR_INVALID_VALUE);
    FCT_EXPECT(cuMemcpyHtoD((CUdeviceptr)(uintptr_t)back, h, 20), CUDA_ERROR_INVALID_VALUE);
    FCT_EXPECT(cuMemcpyDtoH(back, (CUdeviceptr)(uintptr_t)h, 20), CUDA_ERROR_INVALID_VALUE);
    FCT_OK(cuMemFree(d2));
    FCT_EXPECT(cuMemcpyDtoH(back, d2, 20), CUDA_ERROR_INVALID_VALUE);
    FCT_EXPECT(cuMemsetD8(d2, 0, 20), CUDA_ERROR_INVALID_VALUE);
    /* page-locked host memory */
    void *ph;
    FCT_OK(cuMemAllocHost(&ph, N));
    FCT_OK(cuMemcpyDtoH(ph, d1, N));
    FCT_TRUE(!memcmp(ph, h, 100) && !memcmp((char *)ph + 100, h + 5000, 50) &&
             !memcmp((char *)ph + 150, h + 150, N - 150));
    FCT_OK(cuMemHostRegister(back, N, 0));
    FCT_EXPECT(cuMemHostRegister(back + 10, 10, 0), CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED);
    CUdeviceptr dp;
    FCT_OK(cuMemHostGetDevicePointer(&dp, back, 0));
    FCT_TRUE(dp == (CUdeviceptr)(uintptr_t)back);
    FCT_OK(cuMemHostUnregister(back));
    FCT_EXPECT(cuMemHostUnregister(back), CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED);
    FCT_OK(cuMemFreeHost(ph));
    FCT_EXPECT(cuMemFreeHost(ph), CUDA_ERROR_INVALID_VALUE);
    FCT_OK(cuMemFree(d1));
    free(h);
    free(back);
}

static void copies(void **state)
{
    assert_int_equal(fct_child(copies_child), 0);
}

static void attributes_child(void)
{
    setenv("WEFT_FAKECUDA_DEVICES", "2", 1);
    fct_up(0);
    CUcontext c1;
    FCT_OK(cuDevicePrimaryCtxRetain(&c1, 1));
    FCT_OK(cuCtxSetCurrent(c1));
    CUdeviceptr d;
    FCT_OK(cuMemAlloc(&d, 5000));
    unsigned type = 0, ipc = 0;
    int ord = -1;
    CUcontext ctx = NULL;
    CUdeviceptr start = 0;
    size_t size = 0;
    unsigned long long handles = 99, id = 0;
    FCT_OK(cuPointerGetAttribute(&type, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, d + 4999));
    FCT_TRUE(type == CU_MEMORYTYPE_DEVICE);
    FCT_OK(cuPointerGetAttribute(&ord, CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL, d));
    FCT_TRUE(ord == 1);
    FCT_OK(cuPointerGetAttribute(&ctx, CU_POINTER_ATTRIBUTE_CONTEXT, d));
    FCT_TRUE(ctx == c1);
    FCT_OK(cuPointerGetAttribute(&start, CU_POINTER_ATTRIBUTE_RANGE_START_ADDR, d + 10));
    FCT_OK(cuPointerGetAttribute(&size, CU_POINTER_ATTRIBUTE_RANGE_SIZE, d + 10));
    FCT_TRUE(start == d && size == 5000);
    FCT_OK(cuPointerGetAttribute(&ipc, CU_POINTER_ATTRIBUTE_IS_LEGACY_CUDA_IPC_CAPABLE, d));
    FCT_TRUE(ipc == 1);
    FCT_OK(cuPointerGetAttribute(&handles, CU_POINTER_ATTRIBUTE_ALLOWED_HANDLE_TYPES, d));
    FCT_TRUE(handles == 0);
    FCT_EXPECT(cuPointerGetAttribute(&type, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, d + 5000),
               CUDA_ERROR_INVALID_VALUE);
    void *hp;
    FCT_OK(cuMemAllocHost(&hp, 100));
    FCT_OK(cuPointerGetAttribute(&type, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, (CUdeviceptr)(uintptr_t)hp));
    FCT_TRUE(type == CU_MEMORYTYPE_HOST);
    FCT_OK(cuPointerGetAttribute(&ipc, CU_POINTER_ATTRIBUTE_IS_LEGACY_CUDA_IPC_CAPABLE,
                                 (CUdeviceptr)(uintptr_t)hp));
    FCT_TRUE(ipc == 0);

    /* memory CUDA does not know: one attribute fails ... */
    static char plain[64];
    CUdeviceptr pp = (CUdeviceptr)(uintptr_t)plain;
    FCT_EXPECT(cuPointerGetAttribute(&type, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, pp), CUDA_ERROR_INVALID_VALUE);
    /* ... several succeed with null values */
    CUpointer_attribute attrs[] = { CU_POINTER_ATTRIBUTE_MEMORY_TYPE, CU_POINTER_ATTRIBUTE_CONTEXT,
                                    CU_POINTER_ATTRIBUTE_BUFFER_ID, CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL };
    type = 7;
    ctx = c1;
    id = 7;
    ord = 7;
    void *data[] = { &type, &ctx, &id, &ord };
    FCT_OK(cuPointerGetAttributes(4, attrs, data, pp));
    FCT_TRUE(type == 0 && ctx == NULL && id == 0 && ord == 0);
    FCT_OK(cuPointerGetAttributes(4, attrs, data, d));
    FCT_TRUE(type == CU_MEMORYTYPE_DEVICE && ctx == c1 && id == buffer_id(d) && ord == 1);
}

static void attributes(void **state)
{
    assert_int_equal(fct_child(attributes_child), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(not_host_readable),
        cmocka_unit_test(reuse),
        cmocka_unit_test(copies),
        cmocka_unit_test(attributes),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
