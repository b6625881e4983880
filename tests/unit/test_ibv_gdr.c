/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_ibv_gdr.c: the ib-verbs transport moving CUDA device memory
 * itself, on the two test doubles: two contexts in one process, rank 0
 * and rank 1, over the software RDMA device (tests/swrdma), with device
 * memory of the CUDA test double (tests/fakecuda), whose device pointers
 * fault when the CPU touches them: every byte that arrives right is one
 * the transport moved through the driver or the NIC, not the CPU.
 *
 * Checked: GPU memory is announced (dma-buf) and refused for the reasons
 * it should be; eager and rendezvous messages device to device, device to
 * host and host to device, expected and unexpected, truncated, to the
 * rank itself; puts into device memory; a thread without a CUDA context;
 * the dma-buf regions the device holds (its mappings of the double's
 * memory), one per allocation however often it is registered, never
 * reused for memory freed and allocated again at the same address, and
 * at most 64 of them kept unreferenced. Nothing here is a GPU result.
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
#include <unistd.h>

#include <cmocka.h>

#include "plugins/cuda-common/cudrv.h"
#include "plugins/ib-verbs/ibv.h"
#include "tests/unit/oob_store.h"

#define SWRDMA WEFT_TEST_BUILDDIR "/tests/swrdma/.libs/libibverbs.so.1"
#define SWRDMA_NO_DMABUF WEFT_TEST_BUILDDIR "/tests/swrdma/no-1.12/.libs/libibverbs.so.1"
#define FAKECUDA WEFT_TEST_BUILDDIR "/tests/fakecuda/.libs/libfakecuda.so"
#define SPINS 400000

extern const weft_transport_v1_t weft_transport_v1;
static const weft_transport_v1_t *T = &weft_transport_v1;

static char last_error[1024];
static char gdr_line[2][1024];           /* each rank's "gdr: ..." line */
static int regions_made;                /* "gdr: dma-buf region ... registered" lines */

static void fake_set_error(const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(last_error, sizeof(last_error), fmt, ap);
    va_end(ap);
}

static int log_rank;

static void fake_log(int level, const char *plugin, const char *fmt, ...)
{
    char line[1024];
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(line, sizeof(line), fmt, ap);
    va_end(ap);
    if (!strncmp(line, "gdr: on", 7) || !strncmp(line, "gdr: off", 8))
        snprintf(gdr_line[log_rank], sizeof(gdr_line[0]), "%s", line);
    if (strstr(line, "gdr: dma-buf region") && strstr(line, "registered"))
        regions_made++;
    if (getenv("TEST_VERBOSE"))
        fprintf(stderr, "[%d] %s: %s (level %d)\n", log_rank, plugin, line, level);
}

static const char *fake_param(const char *name)
{
    return getenv(name);
}

/* ------------------------------------------------------------ the double */

/* The test's own handle on the CUDA double: the same library the plugin
 * opens, so the same devices and memory. */
static struct wcu_drv cu;
static CUcontext cu_ctx;

static void cuda_up(void)
{
    char why[WCU_WHY_MAX];
    CUdevice dev;

    if (cu.dl)
        return;
    if (weft__cudrv_sym_load(&cu, FAKECUDA, 1, why, sizeof(why)) != WCU_OK)
        fail_msg("%s", why);
    assert_int_equal(cu.fn.cuInit(0), CUDA_SUCCESS);
    assert_int_equal(cu.fn.cuDeviceGet(&dev, 0), CUDA_SUCCESS);
    assert_int_equal(cu.fn.cuDevicePrimaryCtxRetain(&cu_ctx, dev), CUDA_SUCCESS);
}

static unsigned char *dev_alloc(size_t n)
{
    CUdeviceptr p;

    assert_int_equal(cu.fn.cuMemAlloc(&p, n ? n : 1), CUDA_SUCCESS);
    return (unsigned char *)(uintptr_t)p;
}

static void dev_free(void *p)
{
    assert_int_equal(cu.fn.cuMemFree((CUdeviceptr)(uintptr_t)p), CUDA_SUCCESS);
}

static void to_dev(void *d, const void *h, size_t n)
{
    if (n)
        assert_int_equal(cu.fn.cuMemcpyHtoD((CUdeviceptr)(uintptr_t)d, h, n), CUDA_SUCCESS);
}

static void from_dev(void *h, const void *d, size_t n)
{
    if (n)
        assert_int_equal(cu.fn.cuMemcpyDtoH(h, (CUdeviceptr)(uintptr_t)d, n), CUDA_SUCCESS);
}

static unsigned long long buffer_id(const void *d)
{
    unsigned long long id = 0;

    assert_int_equal(cu.fn.cuPointerGetAttribute(&id, CU_POINTER_ATTRIBUTE_BUFFER_ID,
                                                 (CUdeviceptr)(uintptr_t)d), CUDA_SUCCESS);
    return id;
}

/* Mappings of the double's allocation id in this process: the double's
 * own, plus one per dma-buf region the software device registered. */
static int maps_of(unsigned long long id)
{
    char want[64], line[512];
    FILE *f = fopen("/proc/self/maps", "r");
    int n = 0;

    assert_non_null(f);
    snprintf(want, sizeof(want), "/memfd:fakecuda:%llu ", id);
    while (fgets(line, sizeof(line), f))
        n += strstr(line, want) != NULL;
    fclose(f);
    return n;
}

/* ------------------------------------------------------------ two ranks */

static weft_transport_core_t core[2];
static void *ctx[2];

static void progress(void)
{
    for (int r = 0; r < 2; r++)
        if (ctx[r]) {
            log_rank = r;
            assert_int_equal(T->progress(ctx[r]), WEFT_SUCCESS);
        }
}

static weft_transport_completion_t wait_req(int r, void *req)
{
    weft_transport_completion_t c;
    int done = 0;

    memset(&c, 0, sizeof(c));
    for (int i = 0; i < SPINS && !done; i++) {
        progress();
        assert_int_equal(T->test(ctx[r], req, &done, &c), WEFT_SUCCESS);
    }
    if (!done)
        fail_msg("rank %d: request not done after %d rounds (%s)", r, SPINS, last_error);
    return c;
}

static void env_defaults(void)
{
    char reg[64];

    snprintf(reg, sizeof(reg), "weft-test-ibv-gdr-%d", (int)getpid());
    setenv("WEFT_SWRDMA_REGISTRY", reg, 1);
    setenv("WEFT_SWRDMA_CHECK", "abort", 1);
    setenv("WEFT_IBVERBS_LIB", SWRDMA, 1);
    setenv("WEFT_CUDA_DRIVER", FAKECUDA, 1);
    setenv("WEFT_CUDA_ALLOW_TEST_DRIVER", "1", 1);
    setenv("WEFT_IB_CHUNK", "65536", 1);
    setenv("WEFT_IB_STAGING", "524288", 1);
    setenv("WEFT_IB_EAGER_CREDITS", "8", 1);
    setenv("WEFT_IB_CTS_SLOTS", "4", 1);
    unsetenv("WEFT_IB_GDR");
}

static weft_result_t init_rank(int r)
{
    memset(&core[r], 0, sizeof(core[r]));
    core[r].struct_size = sizeof(core[r]);
    core[r].rank = r;
    core[r].size = 2;
    core[r].job_id = "gdr";
    core[r].master_addr = "127.0.0.1";
    core[r].log = fake_log;
    core[r].set_error = fake_set_error;
    core[r].get_param = fake_param;
    core[r].oob_put = oob_store_put;
    core[r].oob_get = oob_store_get;
    gdr_line[r][0] = '\0';
    log_rank = r;
    return T->init(&core[r], &ctx[r]);
}

static uint32_t mem_types(int r)
{
    weft_transport_caps_t caps;

    memset(&caps, 0, sizeof(caps));
    caps.struct_size = sizeof(caps);
    assert_int_equal(T->query(ctx[r], &caps), WEFT_SUCCESS);
    return caps.mem_types;
}

static int setup(void **state)
{
    unsigned char addr[2][WEFT_TRANSPORT_ADDR_MAX];
    size_t len[2];

    (void)state;
    oob_store_clear();
    regions_made = 0;
    env_defaults();
    cuda_up();
    assert_int_equal(cu.fn.cuCtxSetCurrent(cu_ctx), CUDA_SUCCESS);
    for (int r = 0; r < 2; r++) {
        if (init_rank(r) != WEFT_SUCCESS)
            fail_msg("init of rank %d: %s", r, last_error);
        len[r] = sizeof(addr[r]);
        assert_int_equal(T->get_address(ctx[r], addr[r], &len[r]), WEFT_SUCCESS);
    }
    for (int r = 0; r < 2; r++)
        for (int p = 0; p < 2; p++)
            assert_int_equal(T->connect(ctx[r], p, addr[p], len[p]), WEFT_SUCCESS);
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    for (int r = 0; r < 2; r++)
        if (ctx[r]) {
            log_rank = r;
            T->finalize(ctx[r]);
            ctx[r] = NULL;
        }
    return 0;
}

static void fill(unsigned char *b, size_t n, unsigned seed)
{
    for (size_t i = 0; i < n; i++)
        b[i] = (unsigned char)(seed + i * 7 + (i >> 8));
}

/* A buffer of n bytes (at least one) on the device or the host, and the
 * handle mem_register gave it (NULL for host memory, which the core does
 * not register for point-to-point). */
struct buf {
    unsigned char *p;
    int dev;
    void *mh;
    int rank;
};

static struct buf buf_new(int rank, size_t n, int dev)
{
    struct buf b = { NULL, dev, NULL, rank };

    if (dev) {
        b.p = dev_alloc(n);
        if (T->mem_register(ctx[rank], b.p, n ? n : 1, WEFT_TRANSPORT_MEM_CUDA, &b.mh) !=
            WEFT_SUCCESS)
            fail_msg("mem_register of %zu bytes of device memory: %s", n, last_error);
    } else {
        b.p = calloc(1, n ? n : 1);
        assert_non_null(b.p);
    }
    return b;
}

static void buf_free(struct buf *b)
{
    if (b->dev) {
        assert_int_equal(T->mem_deregister(ctx[b->rank], b->mh), WEFT_SUCCESS);
        dev_free(b->p);
    } else {
        free(b->p);
    }
}

static void buf_set(struct buf *b, const unsigned char *h, size_t n)
{
    if (b->dev)
        to_dev(b->p, h, n);
    else
        memcpy(b->p, h, n);
}

static void buf_get(const struct buf *b, unsigned char *h, size_t n)
{
    if (b->dev)
        from_dev(h, b->p, n);
    else
        memcpy(h, b->p, n);
}

/* from sends n bytes to `to`, which receives into room bytes; device or
 * host memory on each side; the receive posted first or after. */
static void exchange(int from, int to, size_t n, size_t room, int sdev, int rdev,
                     int recv_first, weft_result_t want)
{
    struct buf s = buf_new(from, n, sdev), d = buf_new(to, room, rdev);
    unsigned char *h = malloc(n ? n : 1), *got = calloc(1, room ? room : 1);
    void *sr, *rr;
    weft_transport_completion_t c;

    assert_non_null(h);
    assert_non_null(got);
    fill(h, n, (unsigned)n + 3u * (unsigned)sdev + (unsigned)rdev);
    buf_set(&s, h, n);
    buf_set(&d, got, room);
    if (recv_first)
        assert_int_equal(T->irecv(ctx[to], from, d.p, room, 42, 0, d.mh, &rr), WEFT_SUCCESS);
    assert_int_equal(T->isend(ctx[from], to, s.p, n, 42, s.mh, &sr), WEFT_SUCCESS);
    if (!recv_first) {
        for (int i = 0; i < 300; i++)
            progress();
        assert_int_equal(T->irecv(ctx[to], from, d.p, room, 42, 0, d.mh, &rr), WEFT_SUCCESS);
    }
    c = wait_req(to, rr);
    if (c.status != want)
        fail_msg("%zu bytes from %s into %zu of %s (%s): status %d, want %d (%s)", n,
                 sdev ? "device" : "host", room, rdev ? "device" : "host",
                 recv_first ? "expected" : "unexpected", c.status, want, last_error);
    assert_int_equal(c.len, n);
    buf_get(&d, got, room);
    if (memcmp(got, h, n < room ? n : room) != 0)
        fail_msg("%zu bytes from %s into %zu of %s (%s): wrong bytes", n,
                 sdev ? "device" : "host", room, rdev ? "device" : "host",
                 recv_first ? "expected" : "unexpected");
    assert_int_equal(wait_req(from, sr).status, WEFT_SUCCESS);
    buf_free(&s);
    buf_free(&d);
    free(h);
    free(got);
}

/* ------------------------------------------------------------ tests */

static void test_announced(void **state)
{
    (void)state;
    for (int r = 0; r < 2; r++) {
        assert_true(mem_types(r) & (1u << WEFT_TRANSPORT_MEM_CUDA));
        assert_int_equal(((struct wib_ctx *)ctx[r])->gdr_mode, WIB_GDR_DMABUF);
        if (strncmp(gdr_line[r], "gdr: on: dma-buf", 16) != 0)
            fail_msg("rank %d says \"%s\"", r, gdr_line[r]);
    }
}

static const size_t sizes[] = { 0, 1, 100, 4000, 8100, 8200, 65537, 300000, 2u << 20 };
#define NSIZES (sizeof(sizes) / sizeof(sizes[0]))

static void test_device_to_device(void **state)
{
    struct wib_ctx *c1 = ctx[1];

    (void)state;
    for (size_t i = 0; i < NSIZES; i++) {
        exchange(0, 1, sizes[i], sizes[i], 1, 1, 1, WEFT_SUCCESS);
        exchange(1, 0, sizes[i], sizes[i], 1, 1, 0, WEFT_SUCCESS);
    }
    /* Large ones were written in place and flushed through the own pair. */
    assert_true(c1->windows_in_place > 0);
    assert_int_equal(c1->windows_staged, 0);
    assert_int_equal(c1->peers[1].state, WIB_P_UP);
    assert_int_equal(c1->st.flushes, 4);
    assert_null(c1->flush_head);
}

static void test_mixed(void **state)
{
    (void)state;
    for (size_t i = 0; i < NSIZES; i++) {
        exchange(0, 1, sizes[i], sizes[i], 1, 0, 1, WEFT_SUCCESS);
        exchange(0, 1, sizes[i], sizes[i], 0, 1, 1, WEFT_SUCCESS);
        exchange(1, 0, sizes[i], sizes[i], 1, 0, 0, WEFT_SUCCESS);
        exchange(1, 0, sizes[i], sizes[i], 0, 1, 0, WEFT_SUCCESS);
    }
}

static void test_truncated(void **state)
{
    (void)state;
    exchange(0, 1, 5000, 1000, 1, 1, 1, WEFT_ERR_TRUNCATED);
    exchange(0, 1, 5000, 1000, 1, 1, 0, WEFT_ERR_TRUNCATED);
    exchange(0, 1, 300000, 70000, 1, 1, 1, WEFT_ERR_TRUNCATED);
    exchange(0, 1, 300000, 70000, 1, 1, 0, WEFT_ERR_TRUNCATED);
    exchange(1, 0, 300000, 1000, 0, 1, 0, WEFT_ERR_TRUNCATED);
}

static void test_self(void **state)
{
    (void)state;
    exchange(0, 0, 100, 100, 1, 1, 1, WEFT_SUCCESS);
    exchange(0, 0, 100, 100, 1, 0, 0, WEFT_SUCCESS);
    exchange(0, 0, 300000, 300000, 1, 1, 1, WEFT_SUCCESS);
    exchange(0, 0, 300000, 300000, 0, 1, 0, WEFT_SUCCESS);
}

/* A thread with no current context: the transport makes the device's
 * primary context current itself to copy. */
static void test_no_context(void **state)
{
    struct buf s = buf_new(0, 64, 1), d = buf_new(1, 64, 1);
    unsigned char h[64], got[64];
    CUcontext cur = NULL;
    void *sr, *rr;

    (void)state;
    fill(h, sizeof(h), 9);
    to_dev(s.p, h, sizeof(h));
    assert_int_equal(cu.fn.cuCtxSetCurrent(NULL), CUDA_SUCCESS);
    assert_int_equal(T->irecv(ctx[1], 0, d.p, 64, 1, 0, d.mh, &rr), WEFT_SUCCESS);
    assert_int_equal(T->isend(ctx[0], 1, s.p, 64, 1, s.mh, &sr), WEFT_SUCCESS);
    assert_int_equal(wait_req(1, rr).status, WEFT_SUCCESS);
    assert_int_equal(wait_req(0, sr).status, WEFT_SUCCESS);
    assert_int_equal(cu.fn.cuCtxGetCurrent(&cur), CUDA_SUCCESS);
    assert_ptr_equal(cur, cu_ctx);
    from_dev(got, d.p, sizeof(got));
    assert_memory_equal(got, h, sizeof(h));
    buf_free(&s);
    buf_free(&d);
}

static void test_put(void **state)
{
    size_t n = 1u << 20;
    struct buf d = buf_new(1, n + 4096, 1), s = buf_new(0, n, 1);
    unsigned char *h = malloc(n), *got = malloc(n);
    unsigned char rkey[WEFT_TRANSPORT_ADDR_MAX];
    size_t rlen = sizeof(rkey);
    void *req;

    (void)state;
    fill(h, n, 11);
    to_dev(s.p, h, n);
    assert_int_equal(T->mem_export(ctx[1], d.mh, rkey, &rlen), WEFT_SUCCESS);
    assert_int_equal(T->put(ctx[0], 1, s.p, n, s.mh, (uintptr_t)(d.p + 4096), rkey, rlen,
                            &req), WEFT_SUCCESS);
    assert_int_equal(wait_req(0, req).status, WEFT_SUCCESS);
    from_dev(got, d.p + 4096, n);
    assert_memory_equal(got, h, n);
    /* From host memory, not registered: staged on the way. */
    fill(h, n, 12);
    assert_int_equal(T->put(ctx[0], 1, h, n, NULL, (uintptr_t)d.p, rkey, rlen, &req),
                     WEFT_SUCCESS);
    assert_int_equal(wait_req(0, req).status, WEFT_SUCCESS);
    from_dev(got, d.p, n);
    assert_memory_equal(got, h, n);
    buf_free(&s);
    buf_free(&d);
    free(h);
    free(got);
}

/* One region per allocation, however many buffers in it register, and
 * the software device holds it (a mapping of the double's memory). */
static void test_one_region(void **state)
{
    size_t n = 1u << 20;
    unsigned char *p = dev_alloc(n);
    unsigned long long id = buffer_id(p);
    void *mh[4];
    int before = regions_made;

    (void)state;
    assert_int_equal(maps_of(id), 1);
    for (int i = 0; i < 4; i++)
        assert_int_equal(T->mem_register(ctx[0], p + (size_t)i * 4096 + 8, 1000,
                                         WEFT_TRANSPORT_MEM_CUDA, &mh[i]), WEFT_SUCCESS);
    assert_int_equal(regions_made, before + 1);
    assert_int_equal(maps_of(id), 2);
    for (int i = 0; i < 4; i++)
        assert_int_equal(T->mem_deregister(ctx[0], mh[i]), WEFT_SUCCESS);
    /* Kept for the next use. */
    assert_int_equal(maps_of(id), 2);
    assert_int_equal(T->mem_register(ctx[0], p, n, WEFT_TRANSPORT_MEM_CUDA, &mh[0]),
                     WEFT_SUCCESS);
    assert_int_equal(regions_made, before + 1);
    assert_int_equal(T->mem_deregister(ctx[0], mh[0]), WEFT_SUCCESS);
    /* Past the end of its allocation: refused, so the core stages. */
    assert_int_not_equal(T->mem_register(ctx[0], p + n - 10, 20, WEFT_TRANSPORT_MEM_CUDA,
                                         &mh[0]), WEFT_SUCCESS);
    dev_free(p);
}

/* Freed and allocated again at the same address with other bytes: the
 * new bytes arrive, through a new region; the old one is gone. */
static void test_stale(void **state)
{
    size_t n = 300000;
    unsigned char *h = malloc(n), *got = malloc(n);
    unsigned long long old_id = 0;
    unsigned char *first = NULL;
    int before = regions_made;
    struct buf d = buf_new(1, n, 1);

    (void)state;
    for (int round = 0; round < 3; round++) {
        struct buf s = buf_new(0, n, 1);
        void *sr, *rr;

        if (round > 0) {
            assert_int_not_equal(buffer_id(s.p), old_id);
            assert_int_equal(maps_of(old_id), 0);
        }
        old_id = buffer_id(s.p);
        fill(h, n, 100u + (unsigned)round);
        to_dev(s.p, h, n);
        assert_int_equal(T->irecv(ctx[1], 0, d.p, n, 5, 0, d.mh, &rr), WEFT_SUCCESS);
        assert_int_equal(T->isend(ctx[0], 1, s.p, n, 5, s.mh, &sr), WEFT_SUCCESS);
        assert_int_equal(wait_req(1, rr).status, WEFT_SUCCESS);
        assert_int_equal(wait_req(0, sr).status, WEFT_SUCCESS);
        from_dev(got, d.p, n);
        assert_memory_equal(got, h, n);
        /* The double hands the freed range out again. */
        if (round == 0)
            first = s.p;
        else
            assert_ptr_equal(s.p, first);
        buf_free(&s);
    }
    /* A region for the receiver, and one per round for the sender. */
    assert_int_equal(regions_made, before + 1 + 3);
    buf_free(&d);
    free(h);
    free(got);
}

/* Unreferenced regions beyond 64 go, least recently used first. */
static void test_bound(void **state)
{
    enum { N = 70 };
    unsigned char *p[N];
    int held = 0;

    (void)state;
    for (int i = 0; i < N; i++) {
        void *mh;

        p[i] = dev_alloc(4096);
        assert_int_equal(T->mem_register(ctx[0], p[i], 4096, WEFT_TRANSPORT_MEM_CUDA, &mh),
                         WEFT_SUCCESS);
        assert_int_equal(T->mem_deregister(ctx[0], mh), WEFT_SUCCESS);
    }
    for (int i = 0; i < N; i++)
        held += maps_of(buffer_id(p[i])) == 2;
    assert_int_equal(held, 64);
    assert_int_equal(maps_of(buffer_id(p[0])), 1);
    assert_int_equal(maps_of(buffer_id(p[N - 1])), 2);
    for (int i = 0; i < N; i++)
        dev_free(p[i]);
}

/* ------------------------------------------------------------ refusals */

/* Rank 0 alone, initialised with what the caller set: its gdr line. */
static const char *gdr_alone(void)
{
    oob_store_clear();
    if (init_rank(0) != WEFT_SUCCESS)
        fail_msg("init: %s", last_error);
    assert_false(mem_types(0) & (1u << WEFT_TRANSPORT_MEM_CUDA));
    assert_int_equal(((struct wib_ctx *)ctx[0])->gdr_mode, WIB_GDR_OFF);
    T->finalize(ctx[0]);
    ctx[0] = NULL;
    return gdr_line[0];
}

static void test_off(void **state)
{
    (void)state;
    env_defaults();
    setenv("WEFT_IB_GDR", "0", 1);
    assert_string_equal(gdr_alone(), "gdr: off: WEFT_IB_GDR=0");
    env_defaults();
    unsetenv("WEFT_CUDA_ALLOW_TEST_DRIVER");
    assert_non_null(strstr(gdr_alone(), "WEFT_CUDA_ALLOW_TEST_DRIVER"));
    env_defaults();
    setenv("WEFT_CUDA_DRIVER", "/nonexistent/libcuda.so.1", 1);
    assert_non_null(strstr(gdr_alone(), "gdr: off: cannot open /nonexistent/libcuda.so.1"));
    env_defaults();
    setenv("WEFT_IBVERBS_LIB", SWRDMA_NO_DMABUF, 1);
    assert_non_null(strstr(gdr_alone(), "has no ibv_reg_dmabuf_mr"));
    /* A bad value is refused like any other parameter. */
    env_defaults();
    setenv("WEFT_IB_GDR", "2", 1);
    oob_store_clear();
    assert_int_equal(init_rank(0), WEFT_ERR_INVALID_ARG);
    assert_non_null(strstr(last_error, "WEFT_IB_GDR=2"));
    ctx[0] = NULL;
    env_defaults();
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_announced, setup, teardown),
        cmocka_unit_test_setup_teardown(test_device_to_device, setup, teardown),
        cmocka_unit_test_setup_teardown(test_mixed, setup, teardown),
        cmocka_unit_test_setup_teardown(test_truncated, setup, teardown),
        cmocka_unit_test_setup_teardown(test_self, setup, teardown),
        cmocka_unit_test_setup_teardown(test_no_context, setup, teardown),
        cmocka_unit_test_setup_teardown(test_put, setup, teardown),
        cmocka_unit_test_setup_teardown(test_one_region, setup, teardown),
        cmocka_unit_test_setup_teardown(test_stale, setup, teardown),
        cmocka_unit_test_setup_teardown(test_bound, setup, teardown),
        cmocka_unit_test(test_off),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
