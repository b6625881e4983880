/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_cuda_ipc.c: the cuda-ipc transport (plugins/cuda-ipc) against
 * weft's CUDA test double (tests/fakecuda): init lists the GPUs and
 * retains the chosen device's primary context (finalize releases it),
 * its refusals and bad parameters; the table declines every peer; and
 * the device memory services: buffers classified, copies both ways,
 * page-locked memory, streams checked, a copy done before the flag
 * written after it, a wait that holds the stream until the CPU writes
 * the flag, memops off where the driver or WEFT_CUDA_MEMOPS says so,
 * driver errors reported, and calls from threads with no context
 * current, or several at once.
 *
 * The double reads its environment (WEFT_FAKECUDA_*) once, at cuInit, so
 * each case runs in a child process of its own that sets it first, as
 * tests/fakecuda's own tests do; the parent never touches the driver.
 * A failed check in the child prints its line and exits 1; the parent's
 * cmocka assertion on the exit status reports the case.
 */
#include "config.h"

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "plugins/cuda-common/cudrv.h"
#include "tests/unit/cipc_test.h"
#include "weft/transport.h"

#define NAP_US 50000                    /* long enough for the double's workers to
                                         * have run anything not held back */
#define DEADLINE_MS 10000

/* The plugin's table, linked from its convenience library. */
extern const weft_transport_v1_t weft_transport_v1;
static const weft_transport_v1_t *const tp = &weft_transport_v1;

/* A case's child may hang on a stream waiting forever: the alarm ends it. */
static int in_child(void (*fn)(void))
{
    return cipc_in_child(fn, 60);
}

/* The plugin started, and the driver as the test uses it, with device
 * ordinal's primary context current on this thread. */
struct rig {
    void *ctx;
    const weft_transport_device_t *dev;
    struct wcu_drv drv;
    CUdevice cudev;
    CUcontext primary;
};

static void rig_up(struct rig *r, int ordinal)
{
    char why[WCU_WHY_MAX];

    memset(r, 0, sizeof(*r));
    CHECK_OK(tp->init(&core, &r->ctx));
    r->dev = tp->device;
    CHECK(r->dev != NULL);
    CHECK_EQ(weft__cudrv_open(&r->drv, &quiet_core, "test", why, sizeof(why)), WCU_OK);
    CHECK_CU(r->drv.fn.cuDeviceGet(&r->cudev, ordinal));
    CHECK_CU(r->drv.fn.cuDevicePrimaryCtxRetain(&r->primary, r->cudev));
    CHECK_CU(r->drv.fn.cuCtxSetCurrent(r->primary));
}

static void rig_down(struct rig *r)
{
    CHECK_OK(tp->finalize(r->ctx));
    CHECK_CU(r->drv.fn.cuDevicePrimaryCtxRelease(r->cudev));
    weft__cudrv_close(&r->drv);
}

static CUdeviceptr dev_alloc(struct rig *r, size_t len)
{
    CUdeviceptr p;

    CHECK_CU(r->drv.fn.cuMemAlloc(&p, len));
    return p;
}

static void *vp(CUdeviceptr p)
{
    return (void *)(uintptr_t)p;
}

static void fill(unsigned char *p, size_t len, unsigned seed)
{
    for (size_t i = 0; i < len; i++)
        p[i] = (unsigned char)(i * 31 + seed);
}

static uint32_t load(const uint32_t *w)
{
    return __atomic_load_n(w, __ATOMIC_ACQUIRE);
}

static void store(uint32_t *w, uint32_t v)
{
    __atomic_store_n(w, v, __ATOMIC_RELEASE);
}

/* 1 once *w == want, 0 when DEADLINE_MS passes first. */
static int await_word(const uint32_t *w, uint32_t want)
{
    for (int i = 0; i < DEADLINE_MS * 10; i++) {
        if (load(w) == want)
            return 1;
        usleep(100);
    }
    return load(w) == want;
}

/* ------------------------------------------------------------ init and the table */

static void table_child(void)
{
    weft_transport_caps_t caps;
    weft_transport_reach_t reach = WEFT_TRANSPORT_REACH_NODE;
    unsigned char addr[WEFT_TRANSPORT_ADDR_MAX];
    size_t len = sizeof(addr);
    void *ctx, *mh = &len, *req = NULL;
    int fd = 7;

    use_double("2", NULL);
    CHECK_EQ(tp->abi_version, WEFT_TRANSPORT_ABI_VERSION);
    CHECK_EQ(tp->struct_size, sizeof(weft_transport_v1_t));
    CHECK(!strcmp(tp->name, "cuda-ipc"));
    CHECK_EQ(tp->needs, WEFT_TRANSPORT_NEED_CUDA_GPU);
    CHECK(tp->device != NULL);
    CHECK_EQ(tp->device->struct_size, sizeof(weft_transport_device_t));

    CHECK_OK(tp->init(&core, &ctx));
    /* One line per GPU, as weft-info shows them. */
    CHECK_EQ(count_logs(WEFT_TRANSPORT_LOG_INFO, "cuda0 GPU-"), 1);
    CHECK_EQ(count_logs(WEFT_TRANSPORT_LOG_INFO, "cuda1 GPU-"), 1);
    CHECK_EQ(count_logs(WEFT_TRANSPORT_LOG_INFO, ", sm_90, PCI "), 2);
    CHECK_EQ(count_logs(WEFT_TRANSPORT_LOG_INFO, "uses cuda0"), 1);
    CHECK_EQ(count_logs(WEFT_TRANSPORT_LOG_INFO, "stream memory operations on"), 1);

    memset(&caps, 0xff, sizeof(caps));
    caps.struct_size = sizeof(caps);
    CHECK_OK(tp->query(ctx, &caps));
    CHECK_EQ(caps.mem_types, 1u << WEFT_TRANSPORT_MEM_HOST);
    CHECK_EQ(caps.flags, 0);

    CHECK_OK(tp->get_address(ctx, addr, &len));
    CHECK_EQ(len, 1);
    CHECK_EQ(addr[0], 1);
    len = 0;
    CHECK_EQ(tp->get_address(ctx, addr, &len), WEFT_ERR_INVALID_ARG);

    /* Every pair declined, said once. */
    CHECK_OK(tp->reach(ctx, addr, 1, &reach));
    CHECK_EQ(reach, WEFT_TRANSPORT_REACH_NONE);
    reach = WEFT_TRANSPORT_REACH_NETWORK;
    CHECK_OK(tp->reach(ctx, addr, 1, &reach));
    CHECK_EQ(reach, WEFT_TRANSPORT_REACH_NONE);
    CHECK_EQ(count_logs(WEFT_TRANSPORT_LOG_INFO, "declines every pair"), 1);

    CHECK_OK(tp->connect(ctx, 0, addr, 1));
    CHECK_OK(tp->disconnect(ctx, 0));
    CHECK_EQ(tp->isend(ctx, 0, addr, 1, 5, NULL, &req), WEFT_ERR_UNSUPPORTED);
    CHECK_ERROR_SAYS("moves no messages");
    CHECK_EQ(tp->irecv(ctx, 0, addr, 1, 5, 0, NULL, &req), WEFT_ERR_UNSUPPORTED);
    CHECK(req == NULL);
    CHECK_OK(tp->progress(ctx));
    CHECK_OK(tp->get_wait_fd(ctx, &fd));
    CHECK_EQ(fd, -1);
    CHECK_OK(tp->mem_register(ctx, addr, sizeof(addr), WEFT_TRANSPORT_MEM_HOST, &mh));
    CHECK(mh == NULL);
    CHECK_OK(tp->mem_deregister(ctx, mh));
    CHECK_EQ(tp->mem_register(ctx, addr, sizeof(addr), WEFT_TRANSPORT_MEM_CUDA, &mh),
             WEFT_ERR_UNSUPPORTED);
    CHECK_OK(tp->finalize(ctx));
}

static void test_table(void **state)
{
    assert_int_equal(in_child(table_child), 0);
}

/* init leaves the calling thread's context as it found it, and
 * finalize releases the primary context it retained: made current here
 * by a service and released by no one else, it is then destroyed. */
static void context_life_child(void)
{
    char why[WCU_WHY_MAX];
    struct wcu_drv drv;
    CUcontext cur = (CUcontext)&cur;
    CUdeviceptr p;
    int type, dev;
    void *ctx;

    use_double("1", NULL);
    CHECK_EQ(weft__cudrv_open(&drv, &quiet_core, "test", why, sizeof(why)), WCU_OK);
    CHECK_OK(tp->init(&core, &ctx));
    CHECK_CU(drv.fn.cuCtxGetCurrent(&cur));
    CHECK(cur == NULL);
    CHECK_OK(tp->device->mem_query(ctx, why, &type, &dev));
    CHECK_CU(drv.fn.cuCtxGetCurrent(&cur));
    CHECK(cur != NULL);
    CHECK_CU(drv.fn.cuMemAlloc(&p, 64));
    CHECK_CU(drv.fn.cuMemFree(p));
    CHECK_OK(tp->finalize(ctx));
    CHECK_EQ(drv.fn.cuMemAlloc(&p, 64), CUDA_ERROR_CONTEXT_IS_DESTROYED);
    weft__cudrv_close(&drv);
}

static void test_context_life(void **state)
{
    assert_int_equal(in_child(context_life_child), 0);
}

/* Refusals are WEFT_ERR_UNSUPPORTED with the reason, which the core shows
 * after "not applicable: "; malformed parameters WEFT_ERR_INVALID_ARG
 * naming the variable. */
static void expect_init(weft_result_t want, const char *says)
{
    void *ctx = NULL;

    last_error[0] = '\0';
    CHECK_EQ(tp->init(&core, &ctx), want);
    CHECK_ERROR_SAYS(says);
    if (want == WEFT_SUCCESS)
        CHECK_OK(tp->finalize(ctx));
}

static void refusals_child(void)
{
    use_double("1", NULL);
    unsetenv("WEFT_CUDA_ALLOW_TEST_DRIVER");
    expect_init(WEFT_ERR_UNSUPPORTED, "WEFT_CUDA_ALLOW_TEST_DRIVER");
    setenv("WEFT_CUDA_ALLOW_TEST_DRIVER", "yes", 1);
    expect_init(WEFT_ERR_INVALID_ARG, "WEFT_CUDA_ALLOW_TEST_DRIVER=yes");
    setenv("WEFT_CUDA_ALLOW_TEST_DRIVER", "1", 1);
    setenv("WEFT_CUDA_DRIVER", WEFT_TEST_BUILDDIR "/no/such/libcuda.so", 1);
    expect_init(WEFT_ERR_UNSUPPORTED, "no/such/libcuda.so");
    setenv("WEFT_CUDA_DRIVER", FAKECUDA, 1);
    setenv("WEFT_CUDA_MEMOPS", "2", 1);
    expect_init(WEFT_ERR_INVALID_ARG, "WEFT_CUDA_MEMOPS=2");
    unsetenv("WEFT_CUDA_MEMOPS");
    setenv("WEFT_CUDA_DEVICE", "5", 1);
    expect_init(WEFT_ERR_INVALID_ARG, "WEFT_CUDA_DEVICE=5");
    setenv("WEFT_CUDA_DEVICE", "1", 1);
    expect_init(WEFT_ERR_INVALID_ARG, "WEFT_CUDA_DEVICE=1");
    setenv("WEFT_CUDA_DEVICE", "-1", 1);
    expect_init(WEFT_ERR_INVALID_ARG, "WEFT_CUDA_DEVICE=-1");
    setenv("WEFT_CUDA_DEVICE", "0x0", 1);
    expect_init(WEFT_ERR_INVALID_ARG, "WEFT_CUDA_DEVICE=0x0");
    setenv("WEFT_CUDA_DEVICE", "0", 1);
    expect_init(WEFT_SUCCESS, "");
}

static void test_refusals(void **state)
{
    assert_int_equal(in_child(refusals_child), 0);
}

static void no_device_child(void)
{
    use_double("0", NULL);
    expect_init(WEFT_ERR_UNSUPPORTED, "no CUDA device");
}

static void test_no_device(void **state)
{
    assert_int_equal(in_child(no_device_child), 0);
}

static void stub_child(void)
{
    use_double("1", NULL);
    setenv("WEFT_CUDA_DRIVER", WEFT_TEST_CUDA_STUB, 1);
    expect_init(WEFT_ERR_UNSUPPORTED, "stub library");
}

static void test_stub(void **state)
{
    if (access(WEFT_TEST_CUDA_STUB, R_OK) != 0) {
        print_message("skipped: %s: %s\n", WEFT_TEST_CUDA_STUB, strerror(errno));
        skip();
    }
    assert_int_equal(in_child(stub_child), 0);
}

/* ------------------------------------------------------------ buffers and copies */

static void mem_query_child(void)
{
    struct rig r;
    CUdeviceptr d;
    void *pinned, *staged;
    char *plain = malloc(256);
    int type = -5, dev = -5;

    use_double("1", NULL);
    rig_up(&r, 0);
    d = dev_alloc(&r, 1 << 20);
    CHECK_CU(r.drv.fn.cuMemAllocHost(&pinned, 4096));
    CHECK_OK(r.dev->host_alloc(r.ctx, 4096, &staged));
    CHECK(staged != NULL);

    CHECK_OK(r.dev->mem_query(r.ctx, vp(d + 4096), &type, &dev));
    CHECK_EQ(type, WEFT_TRANSPORT_MEM_CUDA);
    CHECK_EQ(dev, 0);
    CHECK_OK(r.dev->mem_query(r.ctx, plain, &type, &dev));
    CHECK_EQ(type, WEFT_TRANSPORT_MEM_HOST);
    CHECK_EQ(dev, -1);
    type = dev = -5;
    CHECK_OK(r.dev->mem_query(r.ctx, staged, &type, &dev));
    CHECK_EQ(type, WEFT_TRANSPORT_MEM_HOST);
    CHECK_EQ(dev, -1);
    type = dev = -5;
    CHECK_OK(r.dev->mem_query(r.ctx, pinned, &type, &dev));
    CHECK_EQ(type, WEFT_TRANSPORT_MEM_HOST);
    CHECK_EQ(dev, -1);
    /* host_alloc memory is the host's to write. */
    memset(staged, 0x3c, 4096);

    CHECK_OK(r.dev->host_free(r.ctx, staged));
    CHECK_OK(r.dev->host_free(r.ctx, NULL));
    CHECK_EQ(r.dev->host_free(r.ctx, plain), WEFT_ERR_INVALID_ARG);
    CHECK_ERROR_SAYS("cuMemFreeHost failed");
    CHECK_CU(r.drv.fn.cuMemFreeHost(pinned));
    CHECK_CU(r.drv.fn.cuMemFree(d));
    free(plain);
    rig_down(&r);
}

static void test_mem_query(void **state)
{
    assert_int_equal(in_child(mem_query_child), 0);
}

static void copy_child(void)
{
    enum { N = 3 << 20 };
    unsigned char *src = malloc(N), *back = calloc(1, N);
    struct rig r;
    CUdeviceptr d, d2;

    use_double("1", NULL);
    rig_up(&r, 0);
    d = dev_alloc(&r, N);
    d2 = dev_alloc(&r, N);
    fill(src, N, 7);
    CHECK_OK(r.dev->copy(r.ctx, vp(d), src, N));
    CHECK_OK(r.dev->copy(r.ctx, vp(d2), vp(d), N));
    CHECK_OK(r.dev->copy(r.ctx, back, vp(d2), N));
    CHECK_EQ(memcmp(src, back, N), 0);
    CHECK_OK(r.dev->copy(r.ctx, back, vp(d), 0));
    /* A range past the allocation is the driver's to refuse. */
    CHECK_EQ(r.dev->copy(r.ctx, vp(d + N - 8), src, 64), WEFT_ERR_INVALID_ARG);
    CHECK_ERROR_SAYS("cuMemcpy failed: CUDA_ERROR_INVALID_VALUE");
    CHECK_CU(r.drv.fn.cuMemFree(d2));
    CHECK_CU(r.drv.fn.cuMemFree(d));
    free(src);
    free(back);
    rig_down(&r);
}

static void test_copy(void **state)
{
    assert_int_equal(in_child(copy_child), 0);
}

/* ------------------------------------------------------------ streams */

static void stream_check_child(void)
{
    uint64_t junk[16];
    struct rig r;
    CUstream s;
    int memops = -5;

    use_double("1", NULL);
    rig_up(&r, 0);
    CHECK_CU(r.drv.fn.cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    CHECK_OK(r.dev->stream_check(r.ctx, s, &memops));
    CHECK_EQ(memops, 1);
    memops = -5;
    CHECK_OK(r.dev->stream_check(r.ctx, NULL, &memops));
    CHECK_EQ(memops, 1);
    memset(junk, 0x5a, sizeof(junk));
    memops = -5;
    CHECK_EQ(r.dev->stream_check(r.ctx, junk, &memops), WEFT_ERR_INVALID_ARG);
    CHECK_EQ(memops, -5);
    CHECK_ERROR_SAYS("cuda_stream: ");
    CHECK_ERROR_SAYS("CUDA_ERROR_INVALID_HANDLE");
    CHECK_CU(r.drv.fn.cuStreamDestroy(s));
    rig_down(&r);
}

static void test_stream_check(void **state)
{
    assert_int_equal(in_child(stream_check_child), 0);
}

/* A copy enqueued before a flag write is done when the CPU sees the
 * flag. The stream is held by a wait until both are enqueued, so a copy
 * or write done at once, or on another stream, shows before the gate
 * opens. */
static void stream_order_child(void)
{
    enum { N = 4 << 20 };
    unsigned char *src = malloc(N), *dst;
    uint32_t *words, *gate, *flag;
    struct rig r;
    CUdeviceptr d;
    CUstream s;

    use_double("1", NULL);
    setenv("WEFT_FAKECUDA_DELAY_US", "2000", 1);
    rig_up(&r, 0);
    CHECK_CU(r.drv.fn.cuStreamCreate(&s, 0));
    d = dev_alloc(&r, N);
    fill(src, N, 3);
    CHECK_OK(r.dev->copy(r.ctx, vp(d), src, N));
    CHECK_OK(r.dev->host_alloc(r.ctx, N, (void **)&dst));
    CHECK_OK(r.dev->host_alloc(r.ctx, 64, (void **)&words));
    memset(dst, 0, N);
    gate = &words[0];
    flag = &words[1];
    store(gate, 0);
    store(flag, 0);

    CHECK_OK(r.dev->stream_wait(r.ctx, s, gate, 1));
    CHECK_OK(r.dev->stream_copy(r.ctx, s, dst, vp(d), N));
    CHECK_OK(r.dev->stream_write(r.ctx, s, flag, 1));
    usleep(NAP_US);
    CHECK_EQ(load(flag), 0);
    CHECK_EQ(dst[0], 0);
    CHECK_EQ(dst[N - 1], 0);
    store(gate, 1);
    CHECK(await_word(flag, 1));
    CHECK_EQ(memcmp(dst, src, N), 0);

    /* Zero bytes: nothing to enqueue, still a success. */
    CHECK_OK(r.dev->stream_copy(r.ctx, s, dst, vp(d), 0));
    CHECK_OK(r.dev->stream_sync(r.ctx, s));
    CHECK_OK(r.dev->host_free(r.ctx, words));
    CHECK_OK(r.dev->host_free(r.ctx, dst));
    CHECK_CU(r.drv.fn.cuMemFree(d));
    CHECK_CU(r.drv.fn.cuStreamDestroy(s));
    free(src);
    rig_down(&r);
}

static void test_stream_order(void **state)
{
    assert_int_equal(in_child(stream_order_child), 0);
}

/* stream_wait holds later work until (int32_t)(flag - value) >= 0: a
 * smaller value keeps it waiting, a larger one releases it (a wait for
 * equality would not), and the comparison wraps around 2^32. */
static void stream_wait_child(void)
{
    uint32_t *words, *gate, *flag;
    struct rig r;
    CUstream s;

    use_double("1", NULL);
    rig_up(&r, 0);
    CHECK_CU(r.drv.fn.cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    CHECK_OK(r.dev->host_alloc(r.ctx, 64, (void **)&words));
    gate = &words[0];
    flag = &words[1];
    store(gate, 0);
    store(flag, 0);

    CHECK_OK(r.dev->stream_wait(r.ctx, s, gate, 5));
    CHECK_OK(r.dev->stream_write(r.ctx, s, flag, 7));
    usleep(NAP_US);
    CHECK_EQ(load(flag), 0);
    store(gate, 4);
    usleep(NAP_US);
    CHECK_EQ(load(flag), 0);
    store(gate, 6);
    CHECK(await_word(flag, 7));

    /* 3 is 0xfffffff0 + 19 modulo 2^32: already reached. */
    store(gate, 3);
    CHECK_OK(r.dev->stream_wait(r.ctx, s, gate, 0xfffffff0u));
    CHECK_OK(r.dev->stream_write(r.ctx, s, flag, 8));
    CHECK(await_word(flag, 8));
    /* 0xfffffff0 is 19 short of 3: not reached. */
    store(gate, 0xfffffff0u);
    CHECK_OK(r.dev->stream_wait(r.ctx, s, gate, 3));
    CHECK_OK(r.dev->stream_write(r.ctx, s, flag, 9));
    usleep(NAP_US);
    CHECK_EQ(load(flag), 8);
    store(gate, 3);
    CHECK(await_word(flag, 9));

    CHECK_OK(r.dev->stream_sync(r.ctx, s));
    CHECK_OK(r.dev->host_free(r.ctx, words));
    CHECK_CU(r.drv.fn.cuStreamDestroy(s));
    rig_down(&r);
}

static void test_stream_wait(void **state)
{
    assert_int_equal(in_child(stream_wait_child), 0);
}

/* Where the driver refuses stream memory operations, init's probe finds
 * out and stream_check says so; the calls themselves report the driver's
 * refusal. */
static void nomemops_child(void)
{
    uint32_t *word;
    struct rig r;
    int memops = -5;

    use_double("1", NULL);
    setenv("WEFT_FAKECUDA_FAULTS", "nomemops", 1);
    rig_up(&r, 0);
    CHECK_EQ(count_logs(WEFT_TRANSPORT_LOG_INFO, "stream memory operations off "
                        "(cuStreamWaitValue32 failed: CUDA_ERROR_NOT_SUPPORTED"), 1);
    CHECK_OK(r.dev->stream_check(r.ctx, NULL, &memops));
    CHECK_EQ(memops, 0);
    CHECK_OK(r.dev->host_alloc(r.ctx, 4, (void **)&word));
    CHECK_EQ(r.dev->stream_write(r.ctx, NULL, word, 1), WEFT_ERR_UNSUPPORTED);
    CHECK_ERROR_SAYS("cuStreamWriteValue32 failed: CUDA_ERROR_NOT_SUPPORTED");
    CHECK_EQ(r.dev->stream_wait(r.ctx, NULL, word, 1), WEFT_ERR_UNSUPPORTED);
    CHECK_ERROR_SAYS("cuStreamWaitValue32 failed: CUDA_ERROR_NOT_SUPPORTED");
    CHECK_OK(r.dev->host_free(r.ctx, word));
    rig_down(&r);
}

static void test_nomemops(void **state)
{
    assert_int_equal(in_child(nomemops_child), 0);
}

static void memops_off_child(void)
{
    struct rig r;
    int memops = -5;

    use_double("1", NULL);
    setenv("WEFT_CUDA_MEMOPS", "0", 1);
    rig_up(&r, 0);
    CHECK_EQ(count_logs(WEFT_TRANSPORT_LOG_INFO, "off (WEFT_CUDA_MEMOPS=0)"), 1);
    CHECK_OK(r.dev->stream_check(r.ctx, NULL, &memops));
    CHECK_EQ(memops, 0);
    rig_down(&r);
}

static void test_memops_off(void **state)
{
    assert_int_equal(in_child(memops_off_child), 0);
}

/* Driver failures come back as weft results with the call and the
 * driver's error named. WEFT_CUDA_MEMOPS=0 keeps init's probe from
 * counting among the calls. */
static void driver_errors_child(void)
{
    struct rig r;
    char buf[64];
    void *p = buf;
    int type = -5, dev = -5;
    CUdeviceptr d;

    use_double("1", NULL);
    setenv("WEFT_CUDA_MEMOPS", "0", 1);
    setenv("WEFT_FAKECUDA_FAULTS", "fail=cuPointerGetAttributes@1:CUDA_ERROR_UNKNOWN,"
           "fail=cuMemcpy@1:CUDA_ERROR_MAP_FAILED,"
           "fail=cuMemAllocHost_v2@1:CUDA_ERROR_OUT_OF_MEMORY,"
           "fail=cuStreamSynchronize@1:CUDA_ERROR_ILLEGAL_ADDRESS", 1);
    rig_up(&r, 0);
    d = dev_alloc(&r, 64);
    CHECK_EQ(r.dev->mem_query(r.ctx, vp(d), &type, &dev), WEFT_ERR_SYSTEM);
    CHECK_ERROR_SAYS("cuPointerGetAttributes");
    CHECK_ERROR_SAYS("CUDA_ERROR_UNKNOWN");
    CHECK_EQ(type, -5);
    CHECK_EQ(dev, -5);
    CHECK_EQ(r.dev->copy(r.ctx, vp(d), buf, 8), WEFT_ERR_SYSTEM);
    CHECK_ERROR_SAYS("cuMemcpy failed: CUDA_ERROR_MAP_FAILED");
    CHECK_EQ(r.dev->host_alloc(r.ctx, 64, &p), WEFT_ERR_NO_MEMORY);
    CHECK_ERROR_SAYS("cuMemAllocHost failed: CUDA_ERROR_OUT_OF_MEMORY");
    CHECK(p == buf);
    CHECK_EQ(r.dev->stream_sync(r.ctx, NULL), WEFT_ERR_SYSTEM);
    CHECK_ERROR_SAYS("cuStreamSynchronize failed: CUDA_ERROR_ILLEGAL_ADDRESS");
    /* Each fault was for one call: the next ones work. */
    CHECK_OK(r.dev->mem_query(r.ctx, vp(d), &type, &dev));
    CHECK_EQ(type, WEFT_TRANSPORT_MEM_CUDA);
    CHECK_OK(r.dev->copy(r.ctx, vp(d), buf, 8));
    CHECK_OK(r.dev->stream_sync(r.ctx, NULL));
    CHECK_CU(r.drv.fn.cuMemFree(d));
    rig_down(&r);
}

static void test_driver_errors(void **state)
{
    assert_int_equal(in_child(driver_errors_child), 0);
}

/* ------------------------------------------------------------ threads */

/* WEFT_CUDA_DEVICE=1 of 2: the plugin's context is device 1's. */
static struct rig trig;
static CUdeviceptr tbuf[2];             /* 1 MiB on device 0 and on device 1 */
static CUcontext tctx[2];               /* their primary contexts */

struct worker {
    pthread_t th;
    int own_ctx;                        /* -1: none current; else the device whose
                                         * primary context the thread makes current */
    int seed;
};

/* A round trip through device memory and the services' other calls, on
 * a thread that either has no context current, and must be given the
 * plugin's, or has its own, which it keeps. */
static void *worker(void *arg)
{
    enum { N = 64 << 10 };
    struct worker *w = arg;
    unsigned char *src = malloc(N), *back = malloc(N);
    int dev = w->own_ctx < 0 ? 1 : w->own_ctx;
    CUdeviceptr slice = tbuf[dev] + (CUdeviceptr)w->seed * N;
    CUcontext cur = (CUcontext)&cur;
    int type, ordinal, memops;

    CHECK_CU(trig.drv.fn.cuCtxGetCurrent(&cur));
    CHECK(cur == NULL);
    if (w->own_ctx >= 0)
        CHECK_CU(trig.drv.fn.cuCtxSetCurrent(tctx[w->own_ctx]));
    for (int i = 0; i < 20; i++) {
        fill(src, N, (unsigned)(w->seed * 100 + i));
        memset(back, 0, N);
        CHECK_OK(trig.dev->mem_query(trig.ctx, vp(slice), &type, &ordinal));
        CHECK_EQ(type, WEFT_TRANSPORT_MEM_CUDA);
        CHECK_EQ(ordinal, dev);
        CHECK_OK(trig.dev->copy(trig.ctx, vp(slice), src, N));
        CHECK_OK(trig.dev->copy(trig.ctx, back, vp(slice), N));
        CHECK_EQ(memcmp(src, back, N), 0);
        CHECK_OK(trig.dev->stream_check(trig.ctx, NULL, &memops));
        CHECK_OK(trig.dev->stream_sync(trig.ctx, NULL));
    }
    CHECK_CU(trig.drv.fn.cuCtxGetCurrent(&cur));
    CHECK(cur == tctx[w->own_ctx < 0 ? 1 : w->own_ctx]);
    free(src);
    free(back);
    return NULL;
}

static void threads_child(void)
{
    struct worker w[6];
    CUdevice d0;

    use_double("2", NULL);
    setenv("WEFT_CUDA_DEVICE", "1", 1);
    rig_up(&trig, 1);
    CHECK_EQ(count_logs(WEFT_TRANSPORT_LOG_INFO, "uses cuda1"), 1);
    tctx[1] = trig.primary;
    tbuf[1] = dev_alloc(&trig, 1 << 20);
    CHECK_CU(trig.drv.fn.cuDeviceGet(&d0, 0));
    CHECK_CU(trig.drv.fn.cuDevicePrimaryCtxRetain(&tctx[0], d0));
    CHECK_CU(trig.drv.fn.cuCtxSetCurrent(tctx[0]));
    tbuf[0] = dev_alloc(&trig, 1 << 20);

    /* Alone first, then several at once. */
    w[0] = (struct worker){ .own_ctx = -1, .seed = 0 };
    CHECK_EQ(pthread_create(&w[0].th, NULL, worker, &w[0]), 0);
    CHECK_EQ(pthread_join(w[0].th, NULL), 0);
    for (int i = 0; i < 6; i++) {
        w[i] = (struct worker){ .own_ctx = i % 3 == 2 ? 0 : -1, .seed = i };
        CHECK_EQ(pthread_create(&w[i].th, NULL, worker, &w[i]), 0);
    }
    for (int i = 0; i < 6; i++)
        CHECK_EQ(pthread_join(w[i].th, NULL), 0);

    CHECK_CU(trig.drv.fn.cuMemFree(tbuf[0]));
    CHECK_CU(trig.drv.fn.cuCtxSetCurrent(tctx[1]));
    CHECK_CU(trig.drv.fn.cuMemFree(tbuf[1]));
    CHECK_CU(trig.drv.fn.cuDevicePrimaryCtxRelease(d0));
    rig_down(&trig);
}

static void test_threads(void **state)
{
    assert_int_equal(in_child(threads_child), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_table),
        cmocka_unit_test(test_context_life),
        cmocka_unit_test(test_refusals),
        cmocka_unit_test(test_no_device),
        cmocka_unit_test(test_stub),
        cmocka_unit_test(test_mem_query),
        cmocka_unit_test(test_copy),
        cmocka_unit_test(test_stream_check),
        cmocka_unit_test(test_stream_order),
        cmocka_unit_test(test_stream_wait),
        cmocka_unit_test(test_nomemops),
        cmocka_unit_test(test_memops_off),
        cmocka_unit_test(test_driver_errors),
        cmocka_unit_test(test_threads),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
