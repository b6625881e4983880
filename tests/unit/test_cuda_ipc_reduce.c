/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_cuda_ipc_reduce.c: the cuda-ipc plugin's reductions on the GPU
 * (cuda_ipc_reduce.c and its kernels, kernels/reduce.cu) against weft's
 * CUDA test double, which "runs" the kernels from their documented
 * semantics: every dtype x op, AVG's finish and PREMUL_SUM's scaling
 * compared bit for bit with weft's host kernels (tests/gpu/kcheck.c, which
 * tests/gpu/kernels_check runs on a real GPU); the INFO line at init; the
 * kernels off without modules (nolaunch), when the image or a function
 * is refused, or where weft was built without nvcc; argument checks; a
 * failed launch; order on a stream.
 *
 * The double's results say that the plugin launches the right kernel with
 * the right arguments, and that reduce.cu's documented rules are the host
 * kernels'; only a GPU runs reduce.cu itself (kernels_check). Built
 * without nvcc, the plugin has no kernels: the cases that need them skip.
 *
 * As in test_cuda_ipc.c, each case runs in a child process that sets the
 * double's environment first, and the parent asserts on its exit status.
 */
#include "config.h"

#include <errno.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "plugins/cuda-ipc/cuda_ipc.h"
#include "plugins/cuda-ipc/kernels/cuda_ipc_fatbin.h"
#include "tests/gpu/kcheck.h"
#include "tests/unit/cipc_test.h"


extern const weft_transport_v1_t weft_transport_v1;
static const weft_transport_v1_t *const tp = &weft_transport_v1;

/* Every dtype x op takes a while on the double's reference kernels. */
static int in_child(void (*fn)(void))
{
    return cipc_in_child(fn, 120);
}

static int have_kernels(void)
{
    return weft__cuda_ipc_fatbin_size != 0;
}

#define NEED_KERNELS()                                                                  \
    do {                                                                                \
        if (!have_kernels()) {                                                          \
            print_message("skipped: weft was built without nvcc (%s)\n",                \
                          weft__cuda_ipc_fatbin_info);                                  \
            skip();                                                                     \
        }                                                                               \
    } while (0)

static struct kcheck kc;

static void kc_up(void)
{
    char why[WCU_WHY_MAX];

    if (kcheck_up(&kc, tp, &core, last_error, stderr, why, sizeof(why)) != 0) {
        fprintf(stderr, "kcheck_up: %s\n", why);
        _exit(1);
    }
}

/* ------------------------------------------------------------ the cases */

/* One INFO line says what init loaded, or why nothing. */
static void info_child(void)
{
    void *ctx;

    use_double("1", NULL);
    CHECK_OK(tp->init(&core, &ctx));
    if (have_kernels()) {
        CHECK_EQ(count_logs(WEFT_TRANSPORT_LOG_INFO, "kernels: 30 loaded for sm_90 (the "
                                                     "fatbin holds "), 1);
        CHECK_EQ(count_logs(WEFT_TRANSPORT_LOG_INFO, weft__cuda_ipc_fatbin_info), 1);
    } else {
        CHECK_EQ(count_logs(WEFT_TRANSPORT_LOG_INFO, "kernels off: weft was built without "
                                                     "them"), 1);
        CHECK_EQ(count_logs(WEFT_TRANSPORT_LOG_INFO, "device reductions stage through host "
                                                     "memory"), 1);
        CHECK_EQ(weft__cuda_ipc_reduce(ctx, NULL, NULL, NULL, NULL, 0, WEFT_FLOAT32, WEFT_SUM),
                 WEFT_ERR_UNSUPPORTED);
        CHECK_ERROR_SAYS("no GPU kernels: weft was built without them");
    }
    CHECK_OK(tp->finalize(ctx));
}

static void test_info(void **state)
{
    assert_int_equal(in_child(info_child), 0);
}

static void run_group(unsigned group)
{
    use_double("1", NULL);
    kc_up();
    CHECK_EQ(kcheck_run(&kc, group), 0);
    fprintf(stderr, "%ld comparisons, %ld exceptions (scaling, both NaN)\n", kc.checks,
            kc.exceptions);
    kcheck_down(&kc);
}

static void reduce_child(void)
{
    run_group(KCHECK_REDUCE);
}

static void avg_child(void)
{
    run_group(KCHECK_AVG);
}

static void scale_child(void)
{
    run_group(KCHECK_SCALE);
}

static void test_reduce(void **state)
{
    NEED_KERNELS();
    assert_int_equal(in_child(reduce_child), 0);
}

static void test_avg(void **state)
{
    NEED_KERNELS();
    assert_int_equal(in_child(avg_child), 0);
}

static void test_scale(void **state)
{
    NEED_KERNELS();
    assert_int_equal(in_child(scale_child), 0);
}

/* Queued on the stream behind copies that the double delays, and before
 * the copy back: the result is there only after the stream. */
static void order_child(void)
{
    enum { N = 4096 };
    const struct wcu_fns *f;
    int32_t *h;
    const struct cipc_ctx *c;

    setenv("WEFT_FAKECUDA_DELAY_US", "2000", 1);
    use_double("1", NULL);
    kc_up();
    f = &kc.drv.fn;
    c = kc.ctx;
    CHECK_CU(f->cuMemAllocHost((void **)&h, N * 4));
    for (int i = 0; i < N; i++)
        h[i] = i - N / 2;
    CHECK_CU(f->cuMemcpyAsync(kc.da, (uintptr_t)h, N * 4, kc.stream));
    CHECK_CU(f->cuMemcpyAsync(kc.db, (uintptr_t)h, N * 4, kc.stream));
    for (int k = 0; k < 4; k++)
        CHECK_OK(weft__cuda_ipc_reduce(c, kc.stream, (void *)(uintptr_t)kc.da,
                                       (void *)(uintptr_t)kc.da, (void *)(uintptr_t)kc.db, N,
                                       WEFT_INT32, WEFT_SUM));
    CHECK_OK(weft__cuda_ipc_reduce_avg(c, kc.stream, (void *)(uintptr_t)kc.da, N, WEFT_INT32, 5));
    CHECK_CU(f->cuMemcpyAsync((uintptr_t)h, kc.da, N * 4, kc.stream));
    CHECK_EQ(f->cuStreamQuery(kc.stream), CUDA_ERROR_NOT_READY);
    CHECK_CU(f->cuStreamSynchronize(kc.stream));
    for (int i = 0; i < N; i++)
        CHECK_EQ(h[i], i - N / 2);
    CHECK_CU(f->cuMemFreeHost(h));
    kcheck_down(&kc);
}

static void test_order(void **state)
{
    NEED_KERNELS();
    assert_int_equal(in_child(order_child), 0);
}

/* Refused before anything is launched. */
static void args_child(void)
{
    const struct cipc_ctx *c;
    void *d, *x;
    unsigned char one[8] = { 1 };

    use_double("1", NULL);
    kc_up();
    c = kc.ctx;
    d = (void *)(uintptr_t)kc.dd;
    x = (void *)(uintptr_t)kc.da;
    CHECK_EQ(weft__cuda_ipc_reduce(c, kc.stream, d, x, x, 8, WEFT_FLOAT32, WEFT_BAND),
             WEFT_ERR_INVALID_ARG);
    CHECK_ERROR_SAYS("not a built-in operator");
    CHECK_EQ(weft__cuda_ipc_reduce(c, kc.stream, d, x, x, 8, WEFT_INT32, (weft_op_t)8),
             WEFT_ERR_INVALID_ARG);
    CHECK_EQ(weft__cuda_ipc_reduce(c, kc.stream, d, x, x, 8, (weft_dtype_t)10, WEFT_SUM),
             WEFT_ERR_INVALID_ARG);
    CHECK_ERROR_SAYS("not a weft_dtype_t");
    CHECK_EQ(weft__cuda_ipc_reduce(c, kc.stream, (char *)d + 2, x, x, 8, WEFT_FLOAT32, WEFT_SUM),
             WEFT_ERR_INVALID_ARG);
    CHECK_ERROR_SAYS("not aligned to the 4 bytes");
    CHECK_EQ(weft__cuda_ipc_reduce_avg(c, kc.stream, (char *)x + 1, 8, WEFT_FLOAT16, 2),
             WEFT_ERR_INVALID_ARG);
    CHECK_EQ(weft__cuda_ipc_reduce_avg(c, kc.stream, x, 8, WEFT_FLOAT16, 0),
             WEFT_ERR_INVALID_ARG);
    CHECK_ERROR_SAYS("nranks 0");
    CHECK_EQ(weft__cuda_ipc_reduce_scale(c, kc.stream, d, (char *)x + 4, 8, WEFT_FLOAT64, one),
             WEFT_ERR_INVALID_ARG);
    /* no elements: nothing launched, whatever the pointers (byte types
     * need no alignment) */
    CHECK_OK(weft__cuda_ipc_reduce(c, kc.stream, NULL, NULL, NULL, 0, WEFT_FLOAT64, WEFT_MAX));
    CHECK_OK(weft__cuda_ipc_reduce_scale(c, kc.stream, (char *)d + 1, x, 3, WEFT_UINT8, one));
    CHECK_CU(kc.drv.fn.cuStreamSynchronize(kc.stream));
    kcheck_down(&kc);
}

static void test_args(void **state)
{
    NEED_KERNELS();
    assert_int_equal(in_child(args_child), 0);
}

/* A launch the driver refuses is the caller's error, naming the kernel. */
static void launch_fails_child(void)
{
    const struct cipc_ctx *c;
    void *x;

    use_double("1", "fail=cuLaunchKernel@2");
    kc_up();
    c = kc.ctx;
    x = (void *)(uintptr_t)kc.da;
    CHECK_OK(weft__cuda_ipc_reduce(c, kc.stream, x, x, x, 8, WEFT_BFLOAT16, WEFT_PROD));
    CHECK_EQ(weft__cuda_ipc_reduce(c, kc.stream, x, x, x, 8, WEFT_FLOAT32, WEFT_MIN),
             WEFT_ERR_SYSTEM);
    CHECK_ERROR_SAYS("cuLaunchKernel(weft_reduce_f32) failed: CUDA_ERROR_UNKNOWN");
    CHECK_OK(weft__cuda_ipc_reduce(c, kc.stream, x, x, x, 8, WEFT_FLOAT32, WEFT_MIN));
    CHECK_CU(kc.drv.fn.cuStreamSynchronize(kc.stream));
    kcheck_down(&kc);
}

static void test_launch_fails(void **state)
{
    NEED_KERNELS();
    assert_int_equal(in_child(launch_fails_child), 0);
}

/* Kernels off, init fine: the reason in one INFO line and in the error
 * of every call. */
static void expect_off(const char *faults, const char *why)
{
    void *ctx;

    use_double("1", faults);
    CHECK_OK(tp->init(&core, &ctx));
    CHECK_EQ(count_logs(WEFT_TRANSPORT_LOG_INFO, "kernels off: "), 1);
    CHECK_EQ(count_logs(WEFT_TRANSPORT_LOG_INFO, why), 1);
    CHECK_EQ(count_logs(WEFT_TRANSPORT_LOG_INFO, "device reductions stage through host memory"),
             1);
    CHECK_EQ(weft__cuda_ipc_reduce(ctx, NULL, NULL, NULL, NULL, 0, WEFT_INT8, WEFT_SUM),
             WEFT_ERR_UNSUPPORTED);
    CHECK_ERROR_SAYS(why);
    CHECK_EQ(weft__cuda_ipc_reduce_avg(ctx, NULL, NULL, 0, WEFT_INT8, 2), WEFT_ERR_UNSUPPORTED);
    CHECK_EQ(weft__cuda_ipc_reduce_scale(ctx, NULL, NULL, NULL, 0, WEFT_INT8,
                                         (const unsigned char *)"\1\0\0\0\0\0\0"),
             WEFT_ERR_UNSUPPORTED);
    CHECK_OK(tp->finalize(ctx));
}

static void nolaunch_child(void)
{
    expect_off("nolaunch", "cuModuleLoadData failed: CUDA_ERROR_NOT_SUPPORTED");
}

static void no_binary_child(void)
{
    expect_off("fail=cuModuleLoadData@1:CUDA_ERROR_NO_BINARY_FOR_GPU",
               "cuModuleLoadData failed: CUDA_ERROR_NO_BINARY_FOR_GPU");
    CHECK_EQ(count_logs(WEFT_TRANSPORT_LOG_INFO, "this GPU is sm_90"), 1);
}

/* The seventh lookup is weft_reduce_f16 (reduce for every dtype first). */
static void no_function_child(void)
{
    expect_off("fail=cuModuleGetFunction@7:CUDA_ERROR_NOT_FOUND",
               "cuModuleGetFunction(weft_reduce_f16) failed: CUDA_ERROR_NOT_FOUND");
}

static void test_nolaunch(void **state)
{
    NEED_KERNELS();
    assert_int_equal(in_child(nolaunch_child), 0);
}

static void test_no_binary(void **state)
{
    NEED_KERNELS();
    assert_int_equal(in_child(no_binary_child), 0);
}

static void test_no_function(void **state)
{
    NEED_KERNELS();
    assert_int_equal(in_child(no_function_child), 0);
}

/* The double takes the embedded fatbin as a driver would, and refuses
 * what is no image. */
static void images_child(void)
{
    static const unsigned char junk[64] = { 0x7f, 'E', 'L', 'G' };
    struct wcu_drv drv;
    char why[WCU_WHY_MAX];
    CUdevice dev;
    CUcontext ctx;
    CUmodule m;

    use_double("1", NULL);
    CHECK_EQ(weft__cudrv_open(&drv, &core, "test", why, sizeof(why)), WCU_OK);
    CHECK_CU(drv.fn.cuDeviceGet(&dev, 0));
    CHECK_CU(drv.fn.cuDevicePrimaryCtxRetain(&ctx, dev));
    CHECK_CU(drv.fn.cuCtxSetCurrent(ctx));
    CHECK_EQ(drv.fn.cuModuleLoadData(&m, junk), CUDA_ERROR_INVALID_IMAGE);
    CHECK_EQ(drv.fn.cuModuleLoadData(&m, "garbage, not PTX"), CUDA_ERROR_INVALID_IMAGE);
    if (have_kernels()) {
        CHECK_CU(drv.fn.cuModuleLoadData(&m, weft__cuda_ipc_fatbin));
        CHECK_CU(drv.fn.cuModuleUnload(m));
    }
    CHECK_CU(drv.fn.cuDevicePrimaryCtxRelease(dev));
    weft__cudrv_close(&drv);
}

static void test_images(void **state)
{
    assert_int_equal(in_child(images_child), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_info),
        cmocka_unit_test(test_reduce),
        cmocka_unit_test(test_avg),
        cmocka_unit_test(test_scale),
        cmocka_unit_test(test_order),
        cmocka_unit_test(test_args),
        cmocka_unit_test(test_launch_fails),
        cmocka_unit_test(test_nolaunch),
        cmocka_unit_test(test_no_binary),
        cmocka_unit_test(test_no_function),
        cmocka_unit_test(test_images),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
