/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_module.c: modules and kernel launches on the double. Images: a
 * fatbin with code for the device, one without (NO_BINARY_FOR_GPU), a
 * cubin's ELF header, PTX text, garbage; functions by name; the launch
 * checks of the driver API reference (dimensions, kernelParams, handles,
 * stream); a launch ordered with the copies around it on a stream; a
 * few results of the reference kernels (the plugin's unit test compares
 * all of them with weft's host kernels); unload; nolaunch.
 */
#include "config.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "tests/fakecuda/fctest.h"

#define DEV(p) ((CUdeviceptr)(uintptr_t)(p))

/* A fatbin of one entry of KIND (1 PTX, 2 ELF) for ARCH, laid out as nvcc
 * writes it (module.c), with a 64-byte payload of zeros. */
static unsigned char fatbin[16 + 64 + 64] __attribute__((aligned(8)));

static const void *make_fatbin(uint16_t kind, uint32_t arch)
{
    uint32_t magic = 0xBA55ED50u, hsize = 64, a = arch;
    uint16_t version = 1, header = 16, k = kind;
    uint64_t size = 64 + 64, psize = 64;
    memset(fatbin, 0, sizeof(fatbin));
    memcpy(fatbin, &magic, 4);
    memcpy(fatbin + 4, &version, 2);
    memcpy(fatbin + 6, &header, 2);
    memcpy(fatbin + 8, &size, 8);
    memcpy(fatbin + 16, &k, 2);
    memcpy(fatbin + 16 + 4, &hsize, 4);
    memcpy(fatbin + 16 + 8, &psize, 8);
    memcpy(fatbin + 16 + 28, &a, 4);
    return fatbin;
}

static CUmodule load_any(void)
{
    CUmodule m;
    FCT_OK(cuModuleLoadData(&m, make_fatbin(2, 90)));
    return m;
}

static void images_child(void)
{
    fct_up(0);
    CUmodule m;
    FCT_OK(cuModuleLoadData(&m, make_fatbin(2, 90)));
    FCT_OK(cuModuleUnload(m));
    /* PTX of an older architecture is compiled for the device; native
     * code of another one is of no use */
    FCT_OK(cuModuleLoadData(&m, make_fatbin(1, 75)));
    FCT_EXPECT(cuModuleLoadData(&m, make_fatbin(2, 75)), CUDA_ERROR_NO_BINARY_FOR_GPU);
    FCT_EXPECT(cuModuleLoadData(&m, make_fatbin(1, 100)), CUDA_ERROR_NO_BINARY_FOR_GPU);
    /* a fatbin header whose entries overrun it */
    make_fatbin(2, 90);
    fatbin[16 + 4] = 0xff;
    FCT_EXPECT(cuModuleLoadData(&m, fatbin), CUDA_ERROR_INVALID_IMAGE);
    unsigned char elf[64] = { 0x7f, 'E', 'L', 'F', 2, 1, 1 };
    elf[18] = 190; /* EM_CUDA */
    FCT_OK(cuModuleLoadData(&m, elf));
    elf[18] = 62;  /* EM_X86_64: a host object */
    FCT_EXPECT(cuModuleLoadData(&m, elf), CUDA_ERROR_INVALID_IMAGE);
    FCT_OK(cuModuleLoadData(&m, "//\n// Generated\n//\n\n.version 9.0\n.target sm_90\n"));
    FCT_EXPECT(cuModuleLoadData(&m, "this is not an image, nor is it PTX"),
               CUDA_ERROR_INVALID_IMAGE);
    static const unsigned char junk[64] = { 0xde, 0xad, 0xbe, 0xef };
    FCT_EXPECT(cuModuleLoadData(&m, junk), CUDA_ERROR_INVALID_IMAGE);
    FCT_EXPECT(cuModuleLoadData(&m, NULL), CUDA_ERROR_INVALID_VALUE);
    FCT_EXPECT(cuModuleLoadData(NULL, elf), CUDA_ERROR_INVALID_VALUE);
}

static void test_images(void **state)
{
    assert_int_equal(fct_child(images_child), 0);
}

static void functions_child(void)
{
    fct_up(0);
    CUmodule m = load_any();
    CUfunction f, g;
    FCT_OK(cuModuleGetFunction(&f, m, "weft_reduce_f32"));
    FCT_OK(cuModuleGetFunction(&g, m, "weft_reduce_f32"));
    FCT_TRUE(f == g);
    FCT_OK(cuModuleGetFunction(&g, m, "weft_scale_bf16"));
    FCT_TRUE(f != g);
    FCT_OK(cuModuleGetFunction(&g, m, "weft_avg_u64"));
    FCT_EXPECT(cuModuleGetFunction(&g, m, "weft_reduce_f8"), CUDA_ERROR_NOT_FOUND);
    FCT_EXPECT(cuModuleGetFunction(&g, m, "weft_reduce_f32_sum"), CUDA_ERROR_NOT_FOUND);
    FCT_EXPECT(cuModuleGetFunction(&g, m, NULL), CUDA_ERROR_INVALID_VALUE);
    FCT_EXPECT(cuModuleGetFunction(&g, NULL, "weft_avg_u64"), CUDA_ERROR_INVALID_HANDLE);
    FCT_OK(cuModuleUnload(m));
    FCT_EXPECT(cuModuleGetFunction(&g, m, "weft_avg_u64"), CUDA_ERROR_INVALID_HANDLE);
    FCT_EXPECT(cuModuleUnload(m), CUDA_ERROR_INVALID_HANDLE);
}

static void test_functions(void **state)
{
    assert_int_equal(fct_child(functions_child), 0);
}

/* weft_reduce_<t>(dst, a, b, n, op) */
static CUresult reduce(CUfunction f, CUdeviceptr d, CUdeviceptr a, CUdeviceptr b,
                       unsigned long long n, int op, CUstream s)
{
    void *args[] = { &d, &a, &b, &n, &op };
    return cuLaunchKernel(f, 4, 1, 1, 256, 1, 1, 0, s, args, NULL);
}

static void launch_checks_child(void)
{
    setenv("WEFT_FAKECUDA_DEVICES", "2", 1);
    fct_up(0);
    CUmodule m = load_any();
    CUfunction f;
    CUdeviceptr d;
    unsigned long long n = 16;
    int op = 0;
    FCT_OK(cuModuleGetFunction(&f, m, "weft_reduce_i32"));
    FCT_OK(cuMemAlloc(&d, n * 4));
    void *args[] = { &d, &d, &d, &n, &op };
    FCT_OK(cuLaunchKernel(f, 1, 1, 1, 1, 1, 1, 0, NULL, args, NULL));
    FCT_OK(cuLaunchKernel(f, 2147483647u, 65535, 65535, 1024, 1, 1, 49152, NULL, args, NULL));
    FCT_OK(cuLaunchKernel(f, 1, 1, 1, 16, 1, 64, 0, NULL, args, NULL));
    FCT_EXPECT(cuLaunchKernel(f, 0, 1, 1, 32, 1, 1, 0, NULL, args, NULL), CUDA_ERROR_INVALID_VALUE);
    FCT_EXPECT(cuLaunchKernel(f, 1, 1, 0, 32, 1, 1, 0, NULL, args, NULL), CUDA_ERROR_INVALID_VALUE);
    FCT_EXPECT(cuLaunchKernel(f, 1, 1, 1, 0, 1, 1, 0, NULL, args, NULL), CUDA_ERROR_INVALID_VALUE);
    FCT_EXPECT(cuLaunchKernel(f, 1, 65536, 1, 32, 1, 1, 0, NULL, args, NULL), CUDA_ERROR_INVALID_VALUE);
    FCT_EXPECT(cuLaunchKernel(f, 1, 1, 1, 1025, 1, 1, 0, NULL, args, NULL), CUDA_ERROR_INVALID_VALUE);
    FCT_EXPECT(cuLaunchKernel(f, 1, 1, 1, 1, 1, 65, 0, NULL, args, NULL), CUDA_ERROR_INVALID_VALUE);
    FCT_EXPECT(cuLaunchKernel(f, 1, 1, 1, 64, 32, 1, 0, NULL, args, NULL), CUDA_ERROR_INVALID_VALUE);
    FCT_EXPECT(cuLaunchKernel(f, 1, 1, 1, 32, 1, 1, 49153, NULL, args, NULL), CUDA_ERROR_INVALID_VALUE);
    FCT_EXPECT(cuLaunchKernel(f, 1, 1, 1, 32, 1, 1, 0, NULL, NULL, NULL), CUDA_ERROR_INVALID_VALUE);
    void *extra[] = { CU_LAUNCH_PARAM_END };
    FCT_EXPECT(cuLaunchKernel(f, 1, 1, 1, 32, 1, 1, 0, NULL, args, extra), CUDA_ERROR_INVALID_VALUE);
    FCT_EXPECT(cuLaunchKernel(f, 1, 1, 1, 32, 1, 1, 0, NULL, NULL, extra), CUDA_ERROR_NOT_SUPPORTED);
    FCT_EXPECT(cuLaunchKernel(NULL, 1, 1, 1, 32, 1, 1, 0, NULL, args, NULL), CUDA_ERROR_INVALID_HANDLE);
    FCT_EXPECT(cuLaunchKernel(f, 1, 1, 1, 32, 1, 1, 0, (CUstream)&n, args, NULL),
               CUDA_ERROR_INVALID_HANDLE);
    /* where a GPU would fault, the launch itself fails */
    void *holes[] = { &d, &d, &d, &n, NULL };
    FCT_EXPECT(cuLaunchKernel(f, 1, 1, 1, 32, 1, 1, 0, NULL, holes, NULL), CUDA_ERROR_INVALID_VALUE);
    unsigned long long too_many = 17;
    void *over[] = { &d, &d, &d, &too_many, &op };
    FCT_EXPECT(cuLaunchKernel(f, 1, 1, 1, 32, 1, 1, 0, NULL, over, NULL), CUDA_ERROR_INVALID_VALUE);
    /* nothing is dereferenced for no elements */
    CUdeviceptr nowhere = 0;
    unsigned long long zero = 0;
    void *empty[] = { &nowhere, &nowhere, &nowhere, &zero, &op };
    FCT_OK(cuLaunchKernel(f, 1, 1, 1, 32, 1, 1, 0, NULL, empty, NULL));
    FCT_OK(cuCtxSynchronize());
    /* another device's function, a stale one */
    FCT_OK(cuModuleUnload(m));
    FCT_EXPECT(cuLaunchKernel(f, 1, 1, 1, 32, 1, 1, 0, NULL, args, NULL), CUDA_ERROR_INVALID_HANDLE);
    m = load_any();
    FCT_OK(cuModuleGetFunction(&f, m, "weft_reduce_i32"));
    CUcontext other;
    CUstream s1;
    FCT_OK(cuDevicePrimaryCtxRetain(&other, 1));
    FCT_OK(cuCtxSetCurrent(other));
    FCT_OK(cuStreamCreate(&s1, CU_STREAM_NON_BLOCKING));
    FCT_EXPECT(cuLaunchKernel(f, 1, 1, 1, 32, 1, 1, 0, s1, args, NULL), CUDA_ERROR_INVALID_HANDLE);
    FCT_EXPECT(cuLaunchKernel(f, 1, 1, 1, 32, 1, 1, 0, NULL, args, NULL), CUDA_ERROR_INVALID_HANDLE);
}

static void test_launch_checks(void **state)
{
    assert_int_equal(fct_child(launch_checks_child), 0);
}

/* A launch runs in order with the copies around it, on the stream's
 * worker: the host sees nothing before it synchronises. */
static void order_child(void)
{
    setenv("WEFT_FAKECUDA_DELAY_US", "2000", 1);
    fct_up(0);
    enum { N = 1000 };
    CUmodule m = load_any();
    CUfunction sum;
    CUstream s;
    CUdeviceptr a, b;
    int32_t *h;
    FCT_OK(cuModuleGetFunction(&sum, m, "weft_reduce_i32"));
    FCT_OK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    FCT_OK(cuMemAlloc(&a, N * 4));
    FCT_OK(cuMemAlloc(&b, N * 4));
    FCT_OK(cuMemAllocHost((void **)&h, N * 4));
    for (int i = 0; i < N; i++)
        h[i] = i;
    FCT_OK(cuMemcpyHtoDAsync(a, h, N * 4, s));
    FCT_OK(cuMemcpyHtoDAsync(b, h, N * 4, s));
    for (int k = 0; k < 3; k++)
        FCT_OK(reduce(sum, a, a, b, N, 0, s)); /* a += b, in place */
    FCT_OK(cuMemcpyDtoHAsync(h, a, N * 4, s));
    FCT_EXPECT(cuStreamQuery(s), CUDA_ERROR_NOT_READY);
    FCT_OK(cuStreamSynchronize(s));
    for (int i = 0; i < N; i++)
        FCT_TRUE(h[i] == 4 * i);
}

static void test_order(void **state)
{
    assert_int_equal(fct_child(order_child), 0);
}

/* A few results of the references, from reduce.h's rules. */
static void results_child(void)
{
    fct_up(0);
    CUmodule m = load_any();
    CUfunction f;
    CUdeviceptr d;
    unsigned char *h;
    unsigned long long n = 4;
    int arg;
    FCT_OK(cuMemAlloc(&d, 64));
    FCT_OK(cuMemAllocHost((void **)&h, 64));
    CUdeviceptr a = d, b = d + 16, out = d + 32;
    void *args[] = { &out, &a, &b, &n, &arg };

    /* INT8 SUM wraps, MAX is signed */
    const int8_t i8a[4] = { 127, -128, -1, 5 }, i8b[4] = { 1, -1, 1, -7 };
    FCT_OK(cuMemcpyHtoD(a, i8a, 4));
    FCT_OK(cuMemcpyHtoD(b, i8b, 4));
    FCT_OK(cuModuleGetFunction(&f, m, "weft_reduce_i8"));
    arg = 0;
    FCT_OK(cuLaunchKernel(f, 1, 1, 1, 32, 1, 1, 0, NULL, args, NULL));
    FCT_OK(cuMemcpyDtoH(h, out, 4));
    FCT_TRUE((int8_t)h[0] == -128 && (int8_t)h[1] == 127 && h[2] == 0 && (int8_t)h[3] == -2);
    arg = 3;
    FCT_OK(cuLaunchKernel(f, 1, 1, 1, 32, 1, 1, 0, NULL, args, NULL));
    FCT_OK(cuMemcpyDtoH(h, out, 4));
    FCT_TRUE(h[0] == 127 && (int8_t)h[1] == -1 && h[2] == 1 && h[3] == 5);

    /* FLOAT16: 1 + 2^-11 is a tie, rounded to even (1); MIN orders -0
     * below +0; a NaN wins MAX quieted, b's when both are */
    const uint16_t f16a[4] = { 0x3c00, 0x0000, 0x7c01, 0x7d00 };
    const uint16_t f16b[4] = { 0x1000, 0x8000, 0x3c00, 0x7c02 };
    FCT_OK(cuMemcpyHtoD(a, f16a, 8));
    FCT_OK(cuMemcpyHtoD(b, f16b, 8));
    FCT_OK(cuModuleGetFunction(&f, m, "weft_reduce_f16"));
    arg = 0;
    FCT_OK(cuLaunchKernel(f, 1, 1, 1, 32, 1, 1, 0, NULL, args, NULL));
    uint16_t r16[4];
    FCT_OK(cuMemcpyDtoH(r16, out, 8));
    FCT_TRUE(r16[0] == 0x3c00 && r16[1] == 0x0000 && r16[2] == 0x7e01 && r16[3] == 0x7e02);
    arg = 2;
    FCT_OK(cuLaunchKernel(f, 1, 1, 1, 32, 1, 1, 0, NULL, args, NULL));
    FCT_OK(cuMemcpyDtoH(r16, out, 8));
    FCT_TRUE(r16[1] == 0x8000 && r16[2] == 0x7e01 && r16[3] == 0x7e02);

    /* AVG's finish truncates toward zero */
    const int32_t i32[4] = { -7, 7, -8, 2147483647 };
    FCT_OK(cuMemcpyHtoD(a, i32, 16));
    FCT_OK(cuModuleGetFunction(&f, m, "weft_avg_i32"));
    int nranks = 2;
    void *avg[] = { &a, &n, &nranks };
    FCT_OK(cuLaunchKernel(f, 1, 1, 1, 32, 1, 1, 0, NULL, avg, NULL));
    int32_t r32[4];
    FCT_OK(cuMemcpyDtoH(r32, a, 16));
    FCT_TRUE(r32[0] == -3 && r32[1] == 3 && r32[2] == -4 && r32[3] == 1073741823);

    /* PREMUL_SUM's scaling: k * v, the scalar passed as the dtype */
    const float f32[4] = { 1.5f, -2.0f, 0.0f, 3.0f };
    float k = 2.0f, r[4];
    FCT_OK(cuMemcpyHtoD(a, f32, 16));
    FCT_OK(cuModuleGetFunction(&f, m, "weft_scale_f32"));
    void *scale[] = { &out, &a, &n, &k };
    FCT_OK(cuLaunchKernel(f, 1, 1, 1, 32, 1, 1, 0, NULL, scale, NULL));
    FCT_OK(cuMemcpyDtoH(r, out, 16));
    FCT_TRUE(r[0] == 3.0f && r[1] == -4.0f && r[2] == 0.0f && r[3] == 6.0f);

    /* an operator a dtype does not have leaves dst alone */
    FCT_OK(cuMemsetD8(out, 0x5a, 16));
    FCT_OK(cuModuleGetFunction(&f, m, "weft_reduce_f32"));
    arg = 5; /* BAND */
    FCT_OK(cuLaunchKernel(f, 1, 1, 1, 32, 1, 1, 0, NULL, args, NULL));
    FCT_OK(cuMemcpyDtoH(h, out, 16));
    FCT_TRUE(h[0] == 0x5a && h[15] == 0x5a);

    /* page-locked host memory is reachable from a kernel */
    int32_t *pinned;
    FCT_OK(cuMemAllocHost((void **)&pinned, 16));
    memcpy(pinned, i32, 16);
    CUdeviceptr p = DEV(pinned);
    void *avg_host[] = { &p, &n, &nranks };
    FCT_OK(cuModuleGetFunction(&f, m, "weft_avg_i32"));
    FCT_OK(cuLaunchKernel(f, 1, 1, 1, 32, 1, 1, 0, NULL, avg_host, NULL));
    FCT_OK(cuCtxSynchronize());
    FCT_TRUE(pinned[0] == -3 && pinned[3] == 1073741823);
}

static void test_results(void **state)
{
    assert_int_equal(fct_child(results_child), 0);
}

static void nolaunch_child(void)
{
    setenv("WEFT_FAKECUDA_FAULTS", "nolaunch", 1);
    fct_up(0);
    CUmodule m;
    CUfunction f;
    FCT_EXPECT(cuModuleLoadData(&m, make_fatbin(2, 90)), CUDA_ERROR_NOT_SUPPORTED);
    FCT_EXPECT(cuModuleGetFunction(&f, (CUmodule)&m, "weft_reduce_f32"), CUDA_ERROR_NOT_SUPPORTED);
    FCT_EXPECT(cuModuleUnload((CUmodule)&m), CUDA_ERROR_NOT_SUPPORTED);
    FCT_EXPECT(cuLaunchKernel((CUfunction)&f, 1, 1, 1, 1, 1, 1, 0, NULL, NULL, NULL),
               CUDA_ERROR_NOT_SUPPORTED);
}

static void test_nolaunch(void **state)
{
    assert_int_equal(fct_child(nolaunch_child), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_images),
        cmocka_unit_test(test_functions),
        cmocka_unit_test(test_launch_checks),
        cmocka_unit_test(test_order),
        cmocka_unit_test(test_results),
        cmocka_unit_test(test_nolaunch),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
