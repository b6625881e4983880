/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_cudrv_fds.c: the VMM descriptor server of plugins/cuda-common
 * (cudrv_fds.h) against weft's CUDA test double: a descriptor of a live
 * VMM allocation is handed over (and is the allocation: what is written
 * through the original mapping reads back through a second one made from
 * the descriptor); a wrong buffer id, an address that is not an
 * allocation's start and a freed allocation are refused with
 * CUDA_ERROR_INVALID_HANDLE; a server that does not exist is
 * CUDA_ERROR_OPERATING_SYSTEM; a process of another user gets no answer;
 * the server stops and its name is free again.
 */
#include "config.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "plugins/cuda-common/cudrv_fds.h"

#define FAKECUDA WEFT_TEST_BUILDDIR "/tests/fakecuda/.libs/libfakecuda.so"
#define GRAIN (2u << 20)

static weft_transport_core_t core;
static struct wcu_drv drv;

static void quiet_log(int level, const char *plugin, const char *fmt, ...)
{
    (void)level, (void)plugin, (void)fmt;
}

static const char *env_param(const char *name)
{
    return getenv(name);
}

static void make_current(void *arg)
{
    CUcontext ctx = arg;

    drv.fn.cuCtxSetCurrent(ctx);
}

/* A VMM allocation of GRAIN bytes on device 0, mapped read-write. */
static CUdeviceptr vmm_map(CUmemGenericAllocationHandle h)
{
    CUmemAccessDesc acc;
    CUdeviceptr va;

    assert_int_equal(drv.fn.cuMemAddressReserve(&va, GRAIN, 0, 0, 0), CUDA_SUCCESS);
    assert_int_equal(drv.fn.cuMemMap(va, GRAIN, 0, h, 0), CUDA_SUCCESS);
    memset(&acc, 0, sizeof(acc));
    acc.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    acc.location.id = 0;
    acc.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
    assert_int_equal(drv.fn.cuMemSetAccess(va, GRAIN, &acc, 1), CUDA_SUCCESS);
    return va;
}

static CUdeviceptr vmm_alloc(void)
{
    CUmemGenericAllocationHandle h;
    CUmemAllocationProp prop;
    CUdeviceptr va;

    memset(&prop, 0, sizeof(prop));
    prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
    prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    prop.location.id = 0;
    prop.requestedHandleTypes = CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR;
    assert_int_equal(drv.fn.cuMemCreate(&h, GRAIN, &prop, 0), CUDA_SUCCESS);
    va = vmm_map(h);
    assert_int_equal(drv.fn.cuMemRelease(h), CUDA_SUCCESS);
    return va;
}

static void vmm_free(CUdeviceptr va)
{
    assert_int_equal(drv.fn.cuMemUnmap(va, GRAIN), CUDA_SUCCESS);
    assert_int_equal(drv.fn.cuMemAddressFree(va, GRAIN), CUDA_SUCCESS);
}

static unsigned long long buffer_id(CUdeviceptr va)
{
    struct wcu_ptr p;
    char why[WCU_WHY_MAX];

    assert_int_equal(weft__cudrv_ptr_query(&drv, (void *)(uintptr_t)va, &p, why, sizeof(why)),
                     0);
    return p.buffer_id;
}

static void test_server(void **state)
{
    struct wcu_fds_server s;
    char why[256] = "", name[WCU_FDS_NAME];
    CUmemGenericAllocationHandle h;
    CUcontext ctx;
    CUdevice dev;
    CUdeviceptr a, b;
    unsigned long long id;
    uint32_t word = 0x5eed1234, back = 0;
    CUresult rc;
    int fd;

    (void)state;
    assert_int_equal(drv.fn.cuDeviceGet(&dev, 0), CUDA_SUCCESS);
    assert_int_equal(drv.fn.cuDevicePrimaryCtxRetain(&ctx, dev), CUDA_SUCCESS);
    assert_int_equal(drv.fn.cuCtxSetCurrent(ctx), CUDA_SUCCESS);
    weft__cudrv_fds_init(&s);
    assert_int_equal(weft__cudrv_fds_start(&s, &drv, "test", make_current, ctx, why,
                                           sizeof(why)), 0);
    assert_non_null(strstr(s.name, "-test"));
    a = vmm_alloc();
    id = buffer_id(a);

    /* the descriptor is the allocation itself */
    fd = weft__cudrv_fds_fetch(s.name, a, id, &rc);
    assert_true(fd >= 0);
    assert_int_equal(drv.fn.cuMemImportFromShareableHandle(
                         &h, (void *)(intptr_t)fd, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR),
                     CUDA_SUCCESS);
    close(fd);
    b = vmm_map(h);
    assert_int_equal(drv.fn.cuMemRelease(h), CUDA_SUCCESS);
    assert_int_equal(drv.fn.cuMemcpyHtoD(a + 4096, &word, sizeof(word)), CUDA_SUCCESS);
    assert_int_equal(drv.fn.cuMemcpyDtoH(&back, b + 4096, sizeof(back)), CUDA_SUCCESS);
    assert_int_equal(back, word);
    vmm_free(b);

    /* refusals */
    assert_int_equal(weft__cudrv_fds_fetch(s.name, a, id + 1, &rc), -1);
    assert_int_equal(rc, CUDA_ERROR_INVALID_HANDLE);
    assert_int_equal(weft__cudrv_fds_fetch(s.name, a + 4096, id, &rc), -1);
    assert_int_equal(rc, CUDA_ERROR_INVALID_HANDLE);
    snprintf(name, sizeof(name), "%s-none", s.name);
    assert_int_equal(weft__cudrv_fds_fetch(name, a, id, &rc), -1);
    assert_int_equal(rc, CUDA_ERROR_OPERATING_SYSTEM);
    if (getuid() == 0) {
        pid_t pid = fork();
        int status;

        assert_true(pid >= 0);
        if (pid == 0) {
            /* another user: the server closes without a word */
            if (setgid(65534) != 0 || setuid(65534) != 0)
                _exit(2);
            _exit(weft__cudrv_fds_fetch(s.name, a, id, &rc) == -1 &&
                          rc == CUDA_ERROR_OPERATING_SYSTEM
                      ? 0
                      : 1);
        }
        assert_int_equal(waitpid(pid, &status, 0), pid);
        assert_true(WIFEXITED(status));
        assert_int_equal(WEXITSTATUS(status), 0);
    }
    vmm_free(a);
    assert_int_equal(weft__cudrv_fds_fetch(s.name, a, id, &rc), -1);
    assert_int_equal(rc, CUDA_ERROR_INVALID_HANDLE);

    assert_int_equal(s.served, 1);
    weft__cudrv_fds_stop(&s);
    assert_int_equal(s.fd, -1);
    assert_int_equal(weft__cudrv_fds_fetch(s.name, a, id, &rc), -1);
    assert_int_equal(rc, CUDA_ERROR_OPERATING_SYSTEM);
    /* the name is free again */
    assert_int_equal(weft__cudrv_fds_start(&s, &drv, "test", make_current, ctx, why,
                                           sizeof(why)), 0);
    weft__cudrv_fds_stop(&s);
    drv.fn.cuDevicePrimaryCtxRelease(dev);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_server),
    };
    char why[WCU_WHY_MAX] = "";

    memset(&core, 0, sizeof(core));
    core.struct_size = sizeof(core);
    core.log = quiet_log;
    core.get_param = env_param;
    setenv("WEFT_CUDA_DRIVER", FAKECUDA, 1);
    setenv("WEFT_CUDA_ALLOW_TEST_DRIVER", "1", 1);
    if (weft__cudrv_open(&drv, &core, "cuda-test", why, sizeof(why)) != WCU_OK) {
        fprintf(stderr, "the CUDA test double does not open: %s\n", why);
        return 1;
    }
    return cmocka_run_group_tests(tests, NULL, NULL);
}
