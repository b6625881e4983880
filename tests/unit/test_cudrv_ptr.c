/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_cudrv_ptr.c: buffer classification of plugins/cuda-common: the
 * decoding of each kind of memory from its attributes (managed first,
 * whatever memory type it reports), and the one cuPointerGetAttributes
 * call against the loader's fake libcuda: device memory, pinned host
 * memory, and plain host memory answered either way the documentation
 * allows (CUDA_SUCCESS with nothing set, CUDA_ERROR_INVALID_CONTEXT).
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

static void test_decode(void **state)
{
    struct wcu_ptr_attrs a;
    struct wcu_ptr p;

    (void)state;
    memset(&a, 0, sizeof(a));
    a.ordinal = 3;                      /* ignored: not CUDA's memory */
    a.size = 99;
    weft__cudrv_ptr_decode(&a, &p);
    assert_int_equal(p.mem, WCU_MEM_HOST);
    assert_int_equal(p.ordinal, -1);
    assert_int_equal(p.size, 0);

    a.memory_type = CU_MEMORYTYPE_DEVICE;
    a.ordinal = 1;
    a.buffer_id = 42;
    a.legacy_ipc = 1;
    a.handle_types = CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR;
    a.start = 0x7f0000000000ull;
    a.size = 1 << 20;
    weft__cudrv_ptr_decode(&a, &p);
    assert_int_equal(p.mem, WCU_MEM_DEVICE);
    assert_int_equal(p.ordinal, 1);
    assert_int_equal(p.buffer_id, 42);
    assert_true(p.legacy_ipc);
    assert_int_equal(p.handle_types, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR);
    assert_int_equal(p.start, 0x7f0000000000ull);
    assert_int_equal(p.size, 1 << 20);

    /* Managed memory reports where its pages are: still managed. */
    a.is_managed = 1;
    weft__cudrv_ptr_decode(&a, &p);
    assert_int_equal(p.mem, WCU_MEM_MANAGED);
    a.memory_type = CU_MEMORYTYPE_HOST;
    weft__cudrv_ptr_decode(&a, &p);
    assert_int_equal(p.mem, WCU_MEM_MANAGED);

    a.is_managed = 0;
    a.legacy_ipc = 0;
    weft__cudrv_ptr_decode(&a, &p);
    assert_int_equal(p.mem, WCU_MEM_PINNED);
    assert_false(p.legacy_ipc);
    assert_string_equal(weft__cudrv_ptr_mem_name(p.mem), "pinned host");
    assert_string_equal(weft__cudrv_ptr_mem_name(WCU_MEM_MANAGED), "managed");
}

static void test_query(void **state)
{
    struct wcu_drv d;
    struct wcu_ptr p;
    char why[512] = "", plain[64];
    CUdeviceptr dptr = 0;
    void *hptr = NULL;

    (void)state;
    unsetenv("FAKE_CUDA_PTR_CONTEXT_ERROR");
    if (weft__cudrv_sym_load(&d, FAKE(""), 0, why, sizeof(why)) != WCU_OK)
        fail_msg("%s", why);
    assert_int_equal(d.fn.cuMemAlloc(&dptr, 256), CUDA_SUCCESS);
    assert_int_equal(d.fn.cuMemAllocHost(&hptr, 256), CUDA_SUCCESS);

    assert_int_equal(weft__cudrv_ptr_query(&d, (char *)(uintptr_t)dptr + 16, &p, why,
                                           sizeof(why)), 0);
    assert_int_equal(p.mem, WCU_MEM_DEVICE);
    assert_int_equal(p.ordinal, 0);
    assert_int_equal(p.buffer_id, 11);
    assert_true(p.legacy_ipc);
    assert_int_equal(p.start, dptr);
    assert_int_equal(p.size, 4096);

    assert_int_equal(weft__cudrv_ptr_query(&d, hptr, &p, why, sizeof(why)), 0);
    assert_int_equal(p.mem, WCU_MEM_PINNED);
    assert_int_equal(p.buffer_id, 12);
    assert_false(p.legacy_ipc);

    assert_int_equal(weft__cudrv_ptr_query(&d, plain, &p, why, sizeof(why)), 0);
    assert_int_equal(p.mem, WCU_MEM_HOST);
    assert_int_equal(p.ordinal, -1);
    setenv("FAKE_CUDA_PTR_CONTEXT_ERROR", "1", 1);
    assert_int_equal(weft__cudrv_ptr_query(&d, plain, &p, why, sizeof(why)), 0);
    assert_int_equal(p.mem, WCU_MEM_HOST);
    unsetenv("FAKE_CUDA_PTR_CONTEXT_ERROR");
    weft__cudrv_sym_unload(&d);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_decode),
        cmocka_unit_test(test_query),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
