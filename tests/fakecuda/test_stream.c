/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_stream.c: streams, events and stream memory operations as the
 * driver API reference describes them, with WEFT_FAKECUDA_DELAY_US on so
 * that work is still pending when the host looks: order within a
 * stream, cuStreamQuery's CUDA_ERROR_NOT_READY, the legacy NULL stream
 * waiting for blocking streams but not for non-blocking ones, events
 * and cuStreamWaitEvent, and cuStreamWriteValue32/WaitValue32.
 */
#include "config.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "tests/fakecuda/fctest.h"

enum { N = 4096 };

#define DEV(p) ((CUdeviceptr)(uintptr_t)(p))

static void order_child(void)
{
    setenv("WEFT_FAKECUDA_DELAY_US", "3000", 1);
    fct_up(0);
    CUstream s;
    CUdeviceptr d, d2;
    unsigned char *h, *a;
    FCT_OK(cuStreamCreate(&s, CU_STREAM_DEFAULT));
    FCT_OK(cuMemAlloc(&d, N));
    FCT_OK(cuMemAlloc(&d2, N));
    FCT_OK(cuMemAllocHost((void **)&h, N));
    FCT_OK(cuMemAllocHost((void **)&a, N));
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    for (int i = 1; i <= 20; i++)
        FCT_OK(cuMemsetD8Async(d, (unsigned char)i, N, s));
    FCT_OK(cuMemcpyDtoHAsync(h, d, N, s));
    FCT_EXPECT(cuStreamQuery(s), CUDA_ERROR_NOT_READY);
    FCT_OK(cuStreamSynchronize(s));
    clock_gettime(CLOCK_MONOTONIC, &t1);
    /* 21 delays of 0..3 ms: about 31 ms, under 10 ms only if ignored */
    FCT_TRUE((t1.tv_sec - t0.tv_sec) * 1000 + (t1.tv_nsec - t0.tv_nsec) / 1000000 >= 10);
    FCT_OK(cuStreamQuery(s));
    FCT_TRUE(h[0] == 20 && h[N - 1] == 20);
    /* a chain through three copies */
    for (int i = 0; i < N; i++)
        a[i] = (unsigned char)(i * 3);
    FCT_OK(cuMemcpyHtoDAsync(d, a, N, s));
    FCT_OK(cuMemcpyDtoDAsync(d2, d, N, s));
    FCT_OK(cuMemsetD8Async(d, 0, N, s));
    FCT_OK(cuMemcpyAsync(DEV(h), d2, N, s));
    FCT_OK(cuStreamSynchronize(s));
    FCT_TRUE(!memcmp(h, a, N));
    FCT_OK(cuStreamDestroy(s));
    FCT_EXPECT(cuStreamCreate(&s, 0x10), CUDA_ERROR_INVALID_VALUE);
}

static void order(void **state)
{
    assert_int_equal(fct_child(order_child), 0);
}

static void legacy_child(void)
{
    setenv("WEFT_FAKECUDA_DELAY_US", "3000", 1);
    fct_up(0);
    CUstream s, ns;
    CUdeviceptr d;
    uint32_t *flag;
    unsigned char h[N];
    FCT_OK(cuStreamCreate(&s, CU_STREAM_DEFAULT));
    FCT_OK(cuStreamCreate(&ns, CU_STREAM_NON_BLOCKING));
    FCT_OK(cuMemAlloc(&d, N));
    FCT_OK(cuMemAllocHost((void **)&flag, sizeof(*flag)));
    *flag = 0;
    /* a synchronous copy (the NULL stream) waits for a blocking stream */
    for (int i = 1; i <= 10; i++)
        FCT_OK(cuMemsetD8Async(d, (unsigned char)i, N, s));
    FCT_OK(cuMemcpyDtoH(h, d, N));
    FCT_TRUE(h[0] == 10 && h[N - 1] == 10);
    /* ... but not for a non-blocking one, stuck on a flag */
    FCT_OK(cuStreamWaitValue32(ns, DEV(flag), 1, CU_STREAM_WAIT_VALUE_EQ));
    FCT_OK(cuMemsetD8Async(d, 0x77, N, ns));
    FCT_OK(cuMemcpyDtoH(h, d, N));
    FCT_TRUE(h[0] == 10);
    FCT_EXPECT(cuStreamQuery(ns), CUDA_ERROR_NOT_READY);
    FCT_OK(cuStreamQuery(NULL));
    /* a stuck blocking stream makes the NULL stream not ready */
    FCT_OK(cuStreamWaitValue32(s, DEV(flag), 1, CU_STREAM_WAIT_VALUE_EQ));
    FCT_EXPECT(cuStreamQuery(NULL), CUDA_ERROR_NOT_READY);
    __atomic_store_n(flag, 1, __ATOMIC_SEQ_CST);
    FCT_OK(cuStreamSynchronize(NULL));
    FCT_OK(cuStreamQuery(s));
    FCT_OK(cuStreamSynchronize(ns));
    FCT_OK(cuMemcpyDtoH(h, d, N));
    FCT_TRUE(h[0] == 0x77);
    CUstream pt = CU_STREAM_PER_THREAD;
    FCT_EXPECT(cuStreamQuery(pt), CUDA_ERROR_NOT_SUPPORTED);
}

static void legacy_stream(void **state)
{
    assert_int_equal(fct_child(legacy_child), 0);
}

static void events_child(void)
{
    setenv("WEFT_FAKECUDA_DELAY_US", "1000", 1);
    fct_up(0);
    CUstream s1, s2;
    CUevent e;
    uint32_t *gate, *out;
    FCT_OK(cuStreamCreate(&s1, CU_STREAM_NON_BLOCKING));
    FCT_OK(cuStreamCreate(&s2, CU_STREAM_NON_BLOCKING));
    FCT_OK(cuMemAllocHost((void **)&gate, 4));
    FCT_OK(cuMemAllocHost((void **)&out, 4));
    *gate = *out = 0;
    FCT_EXPECT(cuEventCreate(&e, CU_EVENT_INTERPROCESS), CUDA_ERROR_INVALID_VALUE);
    FCT_OK(cuEventCreate(&e, CU_EVENT_DISABLE_TIMING));
    FCT_OK(cuEventQuery(e));              /* never recorded: complete */
    FCT_OK(cuEventSynchronize(e));
    FCT_OK(cuStreamWaitValue32(s1, DEV(gate), 1, CU_STREAM_WAIT_VALUE_GEQ));
    FCT_OK(cuEventRecord(e, s1));
    FCT_EXPECT(cuEventQuery(e), CUDA_ERROR_NOT_READY);
    FCT_OK(cuStreamWaitEvent(s2, e, 0));
    FCT_OK(cuStreamWriteValue32(s2, DEV(out), 42, CU_STREAM_WRITE_VALUE_DEFAULT));
    usleep(30000);
    FCT_TRUE(__atomic_load_n(out, __ATOMIC_SEQ_CST) == 0);
    FCT_EXPECT(cuStreamQuery(s2), CUDA_ERROR_NOT_READY);
    __atomic_store_n(gate, 1, __ATOMIC_SEQ_CST);
    FCT_OK(cuEventSynchronize(e));
    FCT_OK(cuEventQuery(e));
    FCT_OK(cuStreamSynchronize(s2));
    FCT_TRUE(*out == 42);
    FCT_OK(cuEventDestroy(e));
}

static void events(void **state)
{
    assert_int_equal(fct_child(events_child), 0);
}

static void memops_child(void)
{
    fct_up(0);
    CUstream s;
    CUdeviceptr d;
    uint32_t *w, got = 0;
    FCT_OK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    FCT_OK(cuMemAlloc(&d, 64));
    FCT_OK(cuMemAllocHost((void **)&w, 4));
    /* a write into device memory */
    FCT_OK(cuStreamWriteValue32(s, d + 8, 0xabcd, 0));
    FCT_OK(cuStreamSynchronize(s));
    FCT_OK(cuMemcpyDtoH(&got, d + 8, 4));
    FCT_TRUE(got == 0xabcd);
    /* waits: EQ, cyclic GEQ, AND, NOR */
    *w = 4;
    FCT_OK(cuStreamWaitValue32(s, DEV(w), 5, CU_STREAM_WAIT_VALUE_EQ));
    usleep(10000);
    FCT_EXPECT(cuStreamQuery(s), CUDA_ERROR_NOT_READY);
    __atomic_store_n(w, 5, __ATOMIC_SEQ_CST);
    FCT_OK(cuStreamSynchronize(s));
    *w = 0x80000000u;
    FCT_OK(cuStreamWaitValue32(s, DEV(w), 0x7fffffffu, CU_STREAM_WAIT_VALUE_GEQ));
    FCT_OK(cuStreamSynchronize(s));       /* 0x80000000 - 0x7fffffff = 1 >= 0 */
    FCT_OK(cuStreamWaitValue32(s, DEV(w), 0x80000001u, CU_STREAM_WAIT_VALUE_GEQ));
    usleep(10000);
    FCT_EXPECT(cuStreamQuery(s), CUDA_ERROR_NOT_READY);
    __atomic_store_n(w, 0x80000001u, __ATOMIC_SEQ_CST);
    FCT_OK(cuStreamSynchronize(s));
    /* cyclic: 1 is "after" 0xfffffff0, though smaller */
    *w = 1;
    FCT_OK(cuStreamWaitValue32(s, DEV(w), 0xfffffff0u, CU_STREAM_WAIT_VALUE_GEQ));
    usleep(10000);
    FCT_OK(cuStreamQuery(s));
    *w = 0x0f;
    FCT_OK(cuStreamWaitValue32(s, DEV(w), 0xf0, CU_STREAM_WAIT_VALUE_AND));
    usleep(10000);
    FCT_EXPECT(cuStreamQuery(s), CUDA_ERROR_NOT_READY);
    __atomic_store_n(w, 0x10, __ATOMIC_SEQ_CST);
    FCT_OK(cuStreamSynchronize(s));
    *w = 0xffffffffu;
    FCT_OK(cuStreamWaitValue32(s, DEV(w), 0, CU_STREAM_WAIT_VALUE_NOR));
    usleep(10000);
    FCT_EXPECT(cuStreamQuery(s), CUDA_ERROR_NOT_READY);
    __atomic_store_n(w, 0xfffffffeu, __ATOMIC_SEQ_CST);
    FCT_OK(cuStreamSynchronize(s));
    /* memory CUDA does not know, and a misaligned word */
    static uint32_t plain;
    FCT_EXPECT(cuStreamWriteValue32(s, DEV(&plain), 1, 0), CUDA_ERROR_INVALID_VALUE);
    FCT_EXPECT(cuStreamWriteValue32(s, d + 2, 1, 0), CUDA_ERROR_INVALID_VALUE);
    FCT_EXPECT(cuStreamWaitValue32(s, d, 1, 7), CUDA_ERROR_INVALID_VALUE);
}

static void memops(void **state)
{
    assert_int_equal(fct_child(memops_child), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(order),
        cmocka_unit_test(legacy_stream),
        cmocka_unit_test(events),
        cmocka_unit_test(memops),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
