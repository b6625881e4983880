/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * mp_gpu.c: weft's calls on CUDA device buffers and on a CUDA stream.
 *
 *   mp_gpu coll     every collective on device buffers, blocking and
 *                   nonblocking, in place and not, a PREMUL_SUM, host and
 *                   device buffers mixed, along an axis
 *   mp_gpu p2p      send/recv, isend/irecv and a batch on device buffers
 *   mp_gpu stream   operations ordered on a stream: a producer copy
 *                   before and a consumer copy after each one, queued
 *                   without waiting (run with WEFT_FAKECUDA_DELAY_US on
 *                   the test double, so that a missing order shows)
 *   mp_gpu streamfail  an operation on the stream fails (a peer gives a
 *                   different count): the failure is kept and returned by
 *                   the next call
 *   mp_gpu ipcstale a device buffer freed and allocated again at the same
 *                   address with other contents: the receiver gets the new
 *                   ones (no stale mapping of the freed one is used)
 *   mp_gpu faults   (one rank, WEFT_FAKECUDA_FAULTS=fail=cuMemcpy@N) a copy
 *                   of the staging fails: the call returns the error, naming
 *                   the driver call, and the next one works
 *   mp_gpu enginefault  (WEFT_CUDA_COLL_MIN=0) rank 0's second kernel
 *                   launch fails (the double's fail=cuLaunchKernel@2, set
 *                   for rank 0 alone) amid allreduces that run GPU to GPU:
 *                   that call fails on every rank, rank 0's error naming the
 *                   launch and the others' naming rank 0, and the next
 *                   calls work
 *   mp_gpu vmm      (WEFT_CUDA_COLL_MIN=0) allreduce, in place and not,
 *                   allgather, broadcast, reduce_scatter and reduce on VMM
 *                   allocations (cuMemCreate) that export as POSIX
 *                   descriptors, which the ranks pass each other to run
 *                   GPU to GPU; and on one that exports as nothing, which
 *                   is staged; then 1 MiB sent round a ring from VMM to
 *                   VMM memory, which shm maps the same way. Skipped where
 *                   the driver has no VMM.
 *   mp_gpu peerlost [stream]  the last rank dies (SIGKILL) amid allreduces
 *                   on device buffers (on a stream): the others get an error
 *                   naming it within WEFT_TIMEOUT, their stream is let
 *                   through, and each leaves $WEFT_TEST_MARKER_DIR/
 *                   peerlost.<rank> (run.sh's expect=peerlost)
 *
 * The driver is the one weft's GPU plugin opens: the file WEFT_CUDA_DRIVER
 * names (the test double in make check), else libcuda.so.1. The program
 * takes its functions with dlsym, as it links no CUDA library. Every
 * result is copied back to the host and compared with what a serial
 * computation gives.
 */
#include "config.h"

#include <dlfcn.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cuda.h>

#include "tests/mp/mptest.h"

static struct {
    CUresult (*Init)(unsigned int);
    CUresult (*DeviceGet)(CUdevice *, int);
    CUresult (*PrimaryCtxRetain)(CUcontext *, CUdevice);
    CUresult (*CtxSetCurrent)(CUcontext);
    CUresult (*MemAlloc)(CUdeviceptr *, size_t);
    CUresult (*MemFree)(CUdeviceptr);
    CUresult (*MemcpyHtoD)(CUdeviceptr, const void *, size_t);
    CUresult (*MemcpyDtoH)(void *, CUdeviceptr, size_t);
    CUresult (*MemcpyHtoDAsync)(CUdeviceptr, const void *, size_t, CUstream);
    CUresult (*MemcpyDtoHAsync)(void *, CUdeviceptr, size_t, CUstream);
    CUresult (*MemAllocHost)(void **, size_t);
    CUresult (*MemFreeHost)(void *);
    CUresult (*StreamCreate)(CUstream *, unsigned int);
    CUresult (*StreamSynchronize)(CUstream);
    CUresult (*StreamDestroy)(CUstream);
    /* VMM, for mp_gpu vmm (NULL where the driver lacks them) */
    CUresult (*MemCreate)(CUmemGenericAllocationHandle *, size_t, const CUmemAllocationProp *,
                          unsigned long long);
    CUresult (*MemRelease)(CUmemGenericAllocationHandle);
    CUresult (*MemAddressReserve)(CUdeviceptr *, size_t, size_t, CUdeviceptr,
                                  unsigned long long);
    CUresult (*MemAddressFree)(CUdeviceptr, size_t);
    CUresult (*MemMap)(CUdeviceptr, size_t, size_t, CUmemGenericAllocationHandle,
                       unsigned long long);
    CUresult (*MemUnmap)(CUdeviceptr, size_t);
    CUresult (*MemSetAccess)(CUdeviceptr, size_t, const CUmemAccessDesc *, size_t);
} cu;

#define CU(call)                                                                   \
    do {                                                                           \
        CUresult cu_rc_ = (call);                                                  \
        MP_ASSERT(cu_rc_ == CUDA_SUCCESS, "%s: CUDA error %d", #call, (int)cu_rc_); \
    } while (0)

static void *sym(void *dl, const char *name)
{
    void *p = dlsym(dl, name);

    MP_ASSERT(p, "the CUDA driver has no %s", name);
    return p;
}

static void cuda_open(void)
{
    const char *path = getenv("WEFT_CUDA_DRIVER");
    void *dl = dlopen(path && *path ? path : "libcuda.so.1", RTLD_NOW | RTLD_GLOBAL);
    CUcontext ctx;
    CUdevice dev;

    if (!dl)
        mp_skip("no CUDA driver: %s", dlerror());
    *(void **)&cu.Init = sym(dl, "cuInit");
    *(void **)&cu.DeviceGet = sym(dl, "cuDeviceGet");
    *(void **)&cu.PrimaryCtxRetain = sym(dl, "cuDevicePrimaryCtxRetain");
    *(void **)&cu.CtxSetCurrent = sym(dl, "cuCtxSetCurrent");
    *(void **)&cu.MemAlloc = sym(dl, "cuMemAlloc_v2");
    *(void **)&cu.MemFree = sym(dl, "cuMemFree_v2");
    *(void **)&cu.MemcpyHtoD = sym(dl, "cuMemcpyHtoD_v2");
    *(void **)&cu.MemcpyDtoH = sym(dl, "cuMemcpyDtoH_v2");
    *(void **)&cu.MemcpyHtoDAsync = sym(dl, "cuMemcpyHtoDAsync_v2");
    *(void **)&cu.MemcpyDtoHAsync = sym(dl, "cuMemcpyDtoHAsync_v2");
    *(void **)&cu.MemAllocHost = sym(dl, "cuMemAllocHost_v2");
    *(void **)&cu.MemFreeHost = sym(dl, "cuMemFreeHost");
    *(void **)&cu.StreamCreate = sym(dl, "cuStreamCreate");
    *(void **)&cu.StreamSynchronize = sym(dl, "cuStreamSynchronize");
    *(void **)&cu.StreamDestroy = sym(dl, "cuStreamDestroy_v2");
    *(void **)&cu.MemCreate = dlsym(dl, "cuMemCreate");
    *(void **)&cu.MemRelease = dlsym(dl, "cuMemRelease");
    *(void **)&cu.MemAddressReserve = dlsym(dl, "cuMemAddressReserve");
    *(void **)&cu.MemAddressFree = dlsym(dl, "cuMemAddressFree");
    *(void **)&cu.MemMap = dlsym(dl, "cuMemMap");
    *(void **)&cu.MemUnmap = dlsym(dl, "cuMemUnmap");
    *(void **)&cu.MemSetAccess = dlsym(dl, "cuMemSetAccess");
    CU(cu.Init(0));
    CU(cu.DeviceGet(&dev, 0));
    CU(cu.PrimaryCtxRetain(&ctx, dev));
    CU(cu.CtxSetCurrent(ctx));
}

/* Device memory of bytes holding host's bytes (host NULL: zeros). */
static void *dev_from(const void *host, size_t bytes)
{
    CUdeviceptr d;
    void *zero = NULL;

    CU(cu.MemAlloc(&d, bytes ? bytes : 1));
    if (!host)
        host = zero = calloc(1, bytes ? bytes : 1);
    if (bytes)
        CU(cu.MemcpyHtoD(d, host, bytes));
    free(zero);
    return (void *)(uintptr_t)d;
}

static void dev_to(void *host, const void *dev, size_t bytes)
{
    if (bytes)
        CU(cu.MemcpyDtoH(host, (CUdeviceptr)(uintptr_t)dev, bytes));
}

static void dev_free(void *dev)
{
    CU(cu.MemFree((CUdeviceptr)(uintptr_t)dev));
}

/* The value rank r contributes at element i. */
static int32_t val(int r, size_t i)
{
    return (int32_t)((r + 1) * 1000 + (int)(i % 997));
}

static void fill(int32_t *buf, size_t n, int r)
{
    for (size_t i = 0; i < n; i++)
        buf[i] = val(r, i);
}

static void expect(const int32_t *got, const int32_t *want, size_t n, const char *what)
{
    for (size_t i = 0; i < n; i++)
        MP_ASSERT(got[i] == want[i], "%s: element %zu is %d, expected %d", what, i, got[i],
                  want[i]);
}

/* ------------------------------------------------------------- collectives */

static void test_allreduce(weft_comm_t w, int me, int n, size_t count, int nonblocking)
{
    size_t bytes = count * 4;
    int32_t *in = mp_alloc(bytes), *out = mp_alloc(bytes), *want = mp_alloc(bytes);
    void *din, *dout;

    fill(in, count, me);
    for (size_t i = 0; i < count; i++) {
        want[i] = 0;
        for (int r = 0; r < n; r++)
            want[i] += val(r, i);
    }
    din = dev_from(in, bytes);
    dout = dev_from(NULL, bytes);
    if (nonblocking) {
        weft_request_t req;

        MP_CHECK(weft_iallreduce(din, dout, count, WEFT_INT32, WEFT_SUM, w, &req));
        MP_CHECK(weft_wait(&req, NULL));
    } else {
        MP_CHECK(weft_allreduce(din, dout, count, WEFT_INT32, WEFT_SUM, w));
    }
    dev_to(out, dout, bytes);
    expect(out, want, count, "allreduce");
    dev_to(out, din, bytes);
    expect(out, in, count, "allreduce's input, left as it was");
    /* in place */
    MP_CHECK(weft_allreduce(WEFT_IN_PLACE, din, count, WEFT_INT32, WEFT_SUM, w));
    dev_to(out, din, bytes);
    expect(out, want, count, "allreduce in place");
    dev_free(din);
    dev_free(dout);
    free(in);
    free(out);
    free(want);
}

/* PREMUL_SUM scales the input, which must be staged first; and a host
 * input with a device output. */
static void test_premul_mixed(weft_comm_t w, int me, int n)
{
    enum { COUNT = 513 };
    float in[COUNT], out[COUNT], scale = 0.5f;
    weft_op_t op;
    void *din, *dout;

    for (int i = 0; i < COUNT; i++)
        in[i] = (float)(me + 1) * (float)(i % 7);
    din = dev_from(in, sizeof(in));
    dout = dev_from(NULL, sizeof(out));
    MP_CHECK(weft_op_create_premul_sum(&scale, WEFT_FLOAT32, &op));
    MP_CHECK(weft_allreduce(din, dout, COUNT, WEFT_FLOAT32, op, w));
    dev_to(out, dout, sizeof(out));
    for (int i = 0; i < COUNT; i++)
        MP_ASSERT(out[i] == 0.5f * (float)(n * (n + 1) / 2) * (float)(i % 7),
                  "premul_sum: element %d is %g", i, (double)out[i]);
    MP_CHECK(weft_op_free(op));
    /* host input, device output */
    MP_CHECK(weft_allreduce(in, dout, COUNT, WEFT_FLOAT32, WEFT_MAX, w));
    dev_to(out, dout, sizeof(out));
    for (int i = 0; i < COUNT; i++)
        MP_ASSERT(out[i] == (float)n * (float)(i % 7), "mixed max: element %d is %g", i,
                  (double)out[i]);
    dev_free(din);
    dev_free(dout);
}

static void test_rooted(weft_comm_t w, int me, int n, size_t count)
{
    size_t bytes = count * 4;
    int root = n - 1;
    int32_t *buf = mp_alloc(bytes * (size_t)n), *want = mp_alloc(bytes * (size_t)n);
    void *d = dev_from(NULL, bytes * (size_t)n), *d2;

    /* broadcast */
    fill(buf, count, me == root ? root : 99);
    dev_free(d);
    d = dev_from(buf, bytes);
    MP_CHECK(weft_broadcast(d, count, WEFT_INT32, root, w));
    dev_to(buf, d, bytes);
    fill(want, count, root);
    expect(buf, want, count, "broadcast");
    /* reduce (MAX) */
    fill(buf, count, me);
    d2 = dev_from(NULL, bytes);
    dev_free(d);
    d = dev_from(buf, bytes);
    MP_CHECK(weft_reduce(d, d2, count, WEFT_INT32, WEFT_MAX, root, w));
    if (me == root) {
        dev_to(buf, d2, bytes);
        fill(want, count, n - 1);
        expect(buf, want, count, "reduce max");
    }
    dev_free(d2);
    /* gather: each rank's block at the root */
    d2 = dev_from(NULL, bytes * (size_t)n);
    MP_CHECK(weft_gather(d, d2, count, WEFT_INT32, root, w));
    if (me == root) {
        dev_to(buf, d2, bytes * (size_t)n);
        for (int r = 0; r < n; r++) {
            fill(want, count, r);
            expect(buf + (size_t)r * count, want, count, "gather");
        }
    }
    /* scatter back from the root's gathered blocks */
    dev_free(d);
    d = dev_from(NULL, bytes);
    MP_CHECK(weft_scatter(d2, d, count, WEFT_INT32, root, w));
    dev_to(buf, d, bytes);
    fill(want, count, me);
    expect(buf, want, count, "scatter");
    dev_free(d);
    dev_free(d2);
    free(buf);
    free(want);
}

static void test_spread(weft_comm_t w, int me, int n, size_t count, int nonblocking)
{
    size_t bytes = count * 4, all = bytes * (size_t)n;
    int32_t *buf = mp_alloc(all), *want = mp_alloc(all), *got = mp_alloc(all);
    void *dsend, *drecv;
    weft_request_t req;

    /* allgather */
    fill(buf, count, me);
    dsend = dev_from(buf, bytes);
    drecv = dev_from(NULL, all);
    if (nonblocking) {
        MP_CHECK(weft_iallgather(dsend, drecv, count, WEFT_INT32, w, &req));
        MP_CHECK(weft_wait(&req, NULL));
    } else {
        MP_CHECK(weft_allgather(dsend, drecv, count, WEFT_INT32, w));
    }
    dev_to(got, drecv, all);
    for (int r = 0; r < n; r++) {
        fill(want, count, r);
        expect(got + (size_t)r * count, want, count, "allgather");
    }
    dev_free(dsend);
    dev_free(drecv);
    /* alltoall: block j of rank r is val(r * n + j) */
    for (int j = 0; j < n; j++)
        fill(buf + (size_t)j * count, count, me * n + j);
    dsend = dev_from(buf, all);
    drecv = dev_from(NULL, all);
    if (nonblocking) {
        MP_CHECK(weft_ialltoall(dsend, drecv, count, WEFT_INT32, w, &req));
        MP_CHECK(weft_wait(&req, NULL));
    } else {
        MP_CHECK(weft_alltoall(dsend, drecv, count, WEFT_INT32, w));
    }
    dev_to(got, drecv, all);
    for (int r = 0; r < n; r++) {
        fill(want, count, r * n + me);
        expect(got + (size_t)r * count, want, count, "alltoall");
    }
    /* reduce_scatter of the same input: block me summed over ranks */
    dev_free(drecv);
    drecv = dev_from(NULL, bytes);
    MP_CHECK(weft_reduce_scatter(dsend, drecv, count, WEFT_INT32, WEFT_SUM, w));
    dev_to(got, drecv, bytes);
    for (size_t i = 0; i < count; i++) {
        want[i] = 0;
        for (int r = 0; r < n; r++)
            want[i] += val(r * n + me, i);
    }
    expect(got, want, count, "reduce_scatter");
    /* scan */
    fill(buf, count, me);
    dev_free(dsend);
    dsend = dev_from(buf, bytes);
    MP_CHECK(weft_scan(dsend, drecv, count, WEFT_INT32, WEFT_SUM, w));
    dev_to(got, drecv, bytes);
    for (size_t i = 0; i < count; i++) {
        want[i] = 0;
        for (int r = 0; r <= me; r++)
            want[i] += val(r, i);
    }
    expect(got, want, count, "scan");
    dev_free(dsend);
    dev_free(drecv);
    free(buf);
    free(want);
    free(got);
}

/* allgatherv with gaps between the blocks: the gaps keep what they held */
static void test_gaps(weft_comm_t w, int me, int n)
{
    enum { COUNT = 37, GAP = 5 };
    size_t counts[64], displs[64], span = (size_t)n * (COUNT + GAP);
    int32_t *buf = mp_alloc(span * 4), *got = mp_alloc(span * 4), mine[COUNT];
    void *dsend, *drecv;

    MP_ASSERT(n <= 64, "at most 64 ranks");
    for (int r = 0; r < n; r++) {
        counts[r] = COUNT;
        displs[r] = (size_t)r * (COUNT + GAP);
    }
    for (size_t i = 0; i < span; i++)
        buf[i] = -7;
    fill(mine, COUNT, me);
    dsend = dev_from(mine, sizeof(mine));
    drecv = dev_from(buf, span * 4);
    MP_CHECK(weft_allgatherv(dsend, COUNT, drecv, counts, displs, WEFT_INT32, w));
    dev_to(got, drecv, span * 4);
    for (int r = 0; r < n; r++)
        for (size_t i = 0; i < COUNT + GAP; i++) {
            int32_t want = i < COUNT ? val(r, i) : -7;

            MP_ASSERT(got[displs[r] + i] == want, "allgatherv: element %zu of block %d is %d, "
                      "expected %d", i, r, got[displs[r] + i], want);
        }
    dev_free(dsend);
    dev_free(drecv);
    free(buf);
    free(got);
}

/* Along an axis with more than one outer slice, so that the blocks are
 * packed and unpacked by the host: allgather of 2 x 3 arrays along the
 * columns, and a reduce-scatter back. */
static void test_axis(weft_comm_t w, int me, int n)
{
    enum { ROWS = 2, COLS = 3 };
    size_t local[2] = { ROWS, COLS }, whole[2] = { ROWS, (size_t)COLS * n };
    size_t all = (size_t)ROWS * COLS * n;
    int32_t mine[ROWS * COLS], *got = mp_alloc(all * 4), *in = mp_alloc(all * 4);
    void *dsend, *drecv;

    fill(mine, ROWS * COLS, me);
    dsend = dev_from(mine, sizeof(mine));
    drecv = dev_from(NULL, all * 4);
    MP_CHECK(weft_allgather_axis(dsend, drecv, 2, local, 1, WEFT_INT32, w));
    dev_to(got, drecv, all * 4);
    for (int row = 0; row < ROWS; row++)
        for (int r = 0; r < n; r++)
            for (int j = 0; j < COLS; j++)
                MP_ASSERT(got[(size_t)row * COLS * n + (size_t)r * COLS + j] ==
                          val(r, (size_t)row * COLS + j), "allgather_axis: [%d][%d]", row,
                          r * COLS + j);
    /* reduce-scatter along the columns: element (row, c) is val(me, row * n * COLS + c) */
    fill(in, all, me);
    dev_free(dsend);
    dev_free(drecv);
    dsend = dev_from(in, all * 4);
    drecv = dev_from(NULL, sizeof(mine));
    MP_CHECK(weft_reduce_scatter_axis(dsend, drecv, 2, whole, 1, WEFT_INT32, WEFT_SUM, w));
    dev_to(mine, drecv, sizeof(mine));
    for (int row = 0; row < ROWS; row++)
        for (int j = 0; j < COLS; j++) {
            int32_t want = 0;

            for (int r = 0; r < n; r++)
                want += val(r, (size_t)row * COLS * n + (size_t)me * COLS + j);
            MP_ASSERT(mine[row * COLS + j] == want, "reduce_scatter_axis: [%d][%d] is %d, "
                      "expected %d", row, j, mine[row * COLS + j], want);
        }
    dev_free(dsend);
    dev_free(drecv);
    free(got);
    free(in);
}

static void run_coll(weft_comm_t w, int me, int n)
{
    static const size_t counts[] = { 1, 1000, 300000 };

    for (size_t k = 0; k < sizeof(counts) / sizeof(counts[0]); k++) {
        test_allreduce(w, me, n, counts[k], 0);
        test_allreduce(w, me, n, counts[k], 1);
        test_rooted(w, me, n, counts[k]);
        test_spread(w, me, n, counts[k] > 1000 ? counts[k] / n : counts[k], k % 2);
    }
    test_premul_mixed(w, me, n);
    test_gaps(w, me, n);
    test_axis(w, me, n);
    MP_CHECK(weft_barrier(w));
}

/* --------------------------------------------------------------------- p2p */

/* One side host memory, the other device memory, both ways round, at
 * sizes that go whole, in fragments and by rendezvous: each transport
 * path that meets a device buffer on one end only. */
static void test_p2p_mixed(weft_comm_t w, int me, int n)
{
    static const size_t counts[] = { 5, 3000, 1 << 19 };
    int right = (me + 1) % n, left = (me + n - 1) % n;

    for (size_t k = 0; k < sizeof(counts) / sizeof(counts[0]); k++)
        for (int send_on_device = 0; send_on_device < 2; send_on_device++) {
            size_t count = counts[k], bytes = count * 4;
            int32_t *src = mp_alloc(bytes), *dst = mp_alloc(bytes), *want = mp_alloc(bytes);
            void *dev = dev_from(NULL, bytes), *sbuf = src, *rbuf = dev;
            weft_request_t req;

            fill(src, count, me + 7 * (int)k);
            memset(dst, 0, bytes);
            if (send_on_device) {
                dev_free(dev);
                dev = dev_from(src, bytes);
                sbuf = dev;
                rbuf = dst;
            }
            MP_CHECK(weft_irecv(rbuf, count, WEFT_INT32, left, 20, w, &req));
            MP_CHECK(weft_send(sbuf, count, WEFT_INT32, right, 20, w));
            MP_CHECK(weft_wait(&req, NULL));
            if (!send_on_device)
                dev_to(dst, dev, bytes);
            fill(want, count, left + 7 * (int)k);
            expect(dst, want, count, send_on_device ? "device to host" : "host to device");
            dev_free(dev);
            free(src);
            free(dst);
            free(want);
        }
}

static void run_p2p(weft_comm_t w, int me, int n)
{
    test_p2p_mixed(w, me, n);
    static const size_t counts[] = { 0, 3, 4096, 1 << 20 };
    int right = (me + 1) % n, left = (me + n - 1) % n;

    for (size_t k = 0; k < sizeof(counts) / sizeof(counts[0]); k++) {
        size_t count = counts[k], bytes = count * 4;
        int32_t *buf = mp_alloc(bytes + 4), *want = mp_alloc(bytes + 4);
        void *dsend, *drecv;
        weft_request_t reqs[2];
        weft_status_t st;
        weft_p2p_op_t ops[2];

        fill(buf, count, me);
        dsend = dev_from(buf, bytes);
        drecv = dev_from(NULL, bytes);
        fill(want, count, left);
        /* blocking: even ranks send first */
        if (me % 2 == 0) {
            MP_CHECK(weft_send(dsend, count, WEFT_INT32, right, 5, w));
            MP_CHECK(weft_recv(drecv, count, WEFT_INT32, left, 5, w, &st));
        } else {
            MP_CHECK(weft_recv(drecv, count, WEFT_INT32, left, 5, w, &st));
            MP_CHECK(weft_send(dsend, count, WEFT_INT32, right, 5, w));
        }
        MP_ASSERT(st.source == left && st.count == count, "recv status: source %d count %zu",
                  st.source, st.count);
        dev_to(buf, drecv, bytes);
        expect(buf, want, count, "send/recv");
        /* nonblocking */
        dev_free(drecv);
        drecv = dev_from(NULL, bytes);
        MP_CHECK(weft_irecv(drecv, count, WEFT_INT32, WEFT_ANY_SOURCE, 6, w, &reqs[0]));
        MP_CHECK(weft_isend(dsend, count, WEFT_INT32, right, 6, w, &reqs[1]));
        MP_CHECK(weft_wait(&reqs[1], NULL));
        MP_CHECK(weft_wait(&reqs[0], &st));
        MP_ASSERT(st.source == left, "irecv from any source: source %d", st.source);
        dev_to(buf, drecv, bytes);
        expect(buf, want, count, "isend/irecv");
        /* a batch, the other way round */
        dev_free(drecv);
        drecv = dev_from(NULL, bytes);
        ops[0] = (weft_p2p_op_t){ WEFT_P2P_RECV, drecv, count, WEFT_INT32, right, 7 };
        ops[1] = (weft_p2p_op_t){ WEFT_P2P_SEND, dsend, count, WEFT_INT32, left, 7 };
        MP_CHECK(weft_batch_isend_irecv(2, ops, w, &reqs[0]));
        MP_CHECK(weft_wait(&reqs[0], NULL));
        fill(want, count, right);
        dev_to(buf, drecv, bytes);
        expect(buf, want, count, "batch");
        dev_free(dsend);
        dev_free(drecv);
        free(buf);
        free(want);
    }
    MP_CHECK(weft_barrier(w));
}

/* ------------------------------------------------------------------ stream */

/* Queues rounds of producer copy, allreduce, consumer copy on a stream
 * without waiting between them; then checks every round's result. */
static void run_stream(weft_comm_t w, int me, int n)
{
    enum { ROUNDS = 6, COUNT = 20000 };
    size_t bytes = COUNT * 4;
    int32_t *host_in, *host_out, *want = mp_alloc(bytes);
    void *dbuf[ROUNDS];
    CUstream s;
    weft_request_t req;

    CU(cu.StreamCreate(&s, 0));
    CU(cu.MemAllocHost((void **)&host_in, bytes * ROUNDS));
    CU(cu.MemAllocHost((void **)&host_out, bytes * ROUNDS));
    MP_CHECK(weft_comm_set_stream(w, s));
    for (int k = 0; k < ROUNDS; k++) {
        fill(host_in + (size_t)k * COUNT, COUNT, me + k);
        memset(host_out + (size_t)k * COUNT, 0xee, bytes);
        dbuf[k] = dev_from(NULL, bytes);
    }
    for (int k = 0; k < ROUNDS; k++) {
        CUdeviceptr d = (CUdeviceptr)(uintptr_t)dbuf[k];

        CU(cu.MemcpyHtoDAsync(d, host_in + (size_t)k * COUNT, bytes, s));
        if (k % 2)
            MP_CHECK(weft_allreduce(WEFT_IN_PLACE, dbuf[k], COUNT, WEFT_INT32, WEFT_SUM, w));
        else {
            MP_CHECK(weft_iallreduce(WEFT_IN_PLACE, dbuf[k], COUNT, WEFT_INT32, WEFT_SUM, w,
                                     &req));
            MP_CHECK(weft_wait(&req, NULL)); /* complete at once: the stream has it */
        }
        CU(cu.MemcpyDtoHAsync(host_out + (size_t)k * COUNT, d, bytes, s));
    }
    /* p2p on the stream too: each rank sends its round-0 input right */
    {
        int right = (me + 1) % n, left = (me + n - 1) % n;
        void *dsend = dev_from(NULL, bytes), *drecv = dev_from(NULL, bytes);
        weft_p2p_op_t ops[2] = {
            { WEFT_P2P_RECV, drecv, COUNT, WEFT_INT32, left, 3 },
            { WEFT_P2P_SEND, dsend, COUNT, WEFT_INT32, right, 3 },
        };

        CU(cu.MemcpyHtoDAsync((CUdeviceptr)(uintptr_t)dsend, host_in, bytes, s));
        MP_CHECK(weft_batch_isend_irecv(2, ops, w, &req));
        MP_CHECK(weft_wait(&req, NULL));
        CU(cu.MemcpyDtoHAsync(want, (CUdeviceptr)(uintptr_t)drecv, bytes, s));
        CU(cu.StreamSynchronize(s));
        for (size_t i = 0; i < COUNT; i++)
            MP_ASSERT(want[i] == val(left, i), "p2p on the stream: element %zu is %d", i,
                      want[i]);
        dev_free(dsend);
        dev_free(drecv);
    }
    CU(cu.StreamSynchronize(s));
    for (int k = 0; k < ROUNDS; k++) {
        for (size_t i = 0; i < COUNT; i++) {
            want[i] = 0;
            for (int r = 0; r < n; r++)
                want[i] += val(r + k, i);
        }
        expect(host_out + (size_t)k * COUNT, want, COUNT, "allreduce on the stream");
        dev_free(dbuf[k]);
    }
    /* communicator calls wait for the stream's work; then the stream goes */
    {
        weft_comm_t dup;

        MP_CHECK(weft_comm_dup(w, &dup));
        MP_CHECK(weft_comm_destroy(dup));
    }
    MP_CHECK(weft_comm_set_stream(w, NULL));
    MP_CHECK(weft_barrier(w));
    CU(cu.MemFreeHost(host_in));
    CU(cu.MemFreeHost(host_out));
    CU(cu.StreamDestroy(s));
    free(want);
}

/* A failure on the stream is kept: the last rank gives a different count,
 * which WEFT_CHECK=1 turns into WEFT_ERR_MISMATCH on every rank. */
static void run_streamfail(weft_comm_t w, int me, int n)
{
    weft_comm_t c;
    CUstream s;
    void *d = dev_from(NULL, 4096);
    weft_result_t rc;

    (void)n;
    MP_CHECK(weft_comm_dup(w, &c));
    CU(cu.StreamCreate(&s, 0));
    MP_CHECK(weft_comm_set_stream(c, s));
    rc = weft_allreduce(WEFT_IN_PLACE, d, me == n - 1 ? 8 : 16, WEFT_INT32, WEFT_SUM, c);
    CU(cu.StreamSynchronize(s));
    if (rc == WEFT_SUCCESS) /* queued: the failure comes with the next call */
        rc = weft_allreduce(WEFT_IN_PLACE, d, 16, WEFT_INT32, WEFT_SUM, c);
    MP_ASSERT(rc == WEFT_ERR_MISMATCH, "expected WEFT_ERR_MISMATCH, got %s (%s)",
              mp_rc_name(rc), weft_last_error());
    MP_ASSERT(strstr(weft_last_error(), "stream") || strstr(weft_last_error(), "WEFT_CHECK"),
              "the error says what failed: %s", weft_last_error());
    MP_CHECK(weft_comm_destroy(c));
    CU(cu.StreamDestroy(s));
    dev_free(d);
    MP_CHECK(weft_barrier(w));
}

/* calls allreduces (MAX) on device buffers, one of which fails as a fault
 * injected into the driver: that one's error names want, every other
 * result is right, and exactly one fails. */
static void allreduce_one_fails(weft_comm_t w, int me, int n, int calls, const char *want)
{
    enum { COUNT = 300 };
    int32_t in[COUNT], out[COUNT];
    void *din, *dout;
    int failed = 0;

    fill(in, COUNT, me);
    din = dev_from(in, sizeof(in));
    dout = dev_from(NULL, sizeof(out));
    for (int k = 0; k < calls; k++) {
        weft_result_t rc = weft_allreduce(din, dout, COUNT, WEFT_INT32, WEFT_MAX, w);

        if (rc != WEFT_SUCCESS) {
            MP_ASSERT(strstr(weft_last_error(), want), "the error names %s: %s", want,
                      weft_last_error());
            mp_log("call %d failed as injected: %s", k, weft_last_error());
            failed++;
            continue;
        }
        dev_to(out, dout, sizeof(out));
        for (int i = 0; i < COUNT; i++)
            MP_ASSERT(out[i] == val(n - 1, (size_t)i), "allreduce %d: element %d is %d", k, i,
                      out[i]);
    }
    MP_ASSERT(failed == 1, "%d calls failed; the fault was injected into one", failed);
    dev_free(din);
    dev_free(dout);
}

/* A copy of the staging fails once: that call fails, naming the driver
 * call, and the calls after it work. */
static void run_faults(weft_comm_t w, int me, int n)
{
    allreduce_one_fails(w, me, n, 6, "cuMemcpy");
}

static void write_marker(int rank, const char *text)
{
    const char *dir = getenv("WEFT_TEST_MARKER_DIR");
    char path[4096];
    FILE *f;

    MP_ASSERT(dir && *dir, "WEFT_TEST_MARKER_DIR is not set: run through tests/mp/run.sh");
    snprintf(path, sizeof(path), "%s/peerlost.%d", dir, rank);
    MP_ASSERT((f = fopen(path, "w")) != NULL, "cannot create %s", path);
    fputs(text, f);
    MP_ASSERT(fclose(f) == 0, "cannot write %s", path);
}

/* A receiver's cache of the sender's mapped buffers must not serve a
 * freed one: rank 0 sends from a device buffer, frees it, allocates one
 * of the same size (the test double hands the same address back, with a
 * new buffer id, as drivers may) with other contents, and sends again;
 * rank 1 must get the new contents every time. */
static void run_ipcstale(weft_comm_t w, int me, int n)
{
    enum { COUNT = 1 << 18, ROUNDS = 6 };
    size_t bytes = COUNT * 4;
    int32_t *host = mp_alloc(bytes), *want = mp_alloc(bytes);
    void *d = NULL, *prev = NULL;
    int reused = 0;

    if (me > 1) {
        MP_CHECK(weft_barrier(w));
        free(host);
        free(want);
        return;
    }
    for (int k = 0; k < ROUNDS; k++) {
        if (me == 0) {
            fill(host, COUNT, 100 + k);
            d = dev_from(host, bytes);
            reused += d == prev;
            MP_CHECK(weft_send(d, COUNT, WEFT_INT32, 1, 11, w));
            prev = d;
            dev_free(d);
        } else {
            d = dev_from(NULL, bytes);
            MP_CHECK(weft_recv(d, COUNT, WEFT_INT32, 0, 11, w, NULL));
            dev_to(host, d, bytes);
            fill(want, COUNT, 100 + k);
            expect(host, want, COUNT, "a send from a reallocated buffer");
            dev_free(d);
        }
    }
    if (me == 0)
        mp_log("%d of %d sends came from the address of the buffer freed before", reused,
               ROUNDS - 1);
    (void)n;
    MP_CHECK(weft_barrier(w));
    free(host);
    free(want);
}

/* The last rank dies amid allreduces on device buffers. */
static void run_peerlost(weft_comm_t w, int me, int n, int on_stream)
{
    enum { COUNT = 1 << 18 };
    void *d = dev_from(NULL, COUNT * 4);
    CUstream s = NULL;
    weft_result_t rc = WEFT_SUCCESS;
    double start;
    int k;

    signal(SIGTERM, SIG_IGN); /* weftrun's, once the last rank died */
    if (on_stream) {
        CU(cu.StreamCreate(&s, 0));
        MP_CHECK(weft_comm_set_stream(w, s));
    }
    for (k = 0; k < 5; k++)
        MP_CHECK(weft_allreduce(WEFT_IN_PLACE, d, COUNT, WEFT_INT32, WEFT_SUM, w));
    if (on_stream)
        CU(cu.StreamSynchronize(s));
    if (me == n - 1) {
        MP_CHECK(weft_allreduce(WEFT_IN_PLACE, d, COUNT, WEFT_INT32, WEFT_SUM, w));
        raise(SIGKILL);
    }
    start = mp_now();
    for (k = 0; k < 1000 && rc == WEFT_SUCCESS; k++) {
        rc = weft_allreduce(WEFT_IN_PLACE, d, COUNT, WEFT_INT32, WEFT_SUM, w);
        if (on_stream && rc == WEFT_SUCCESS && k % 4 == 3)
            CU(cu.StreamSynchronize(s)); /* never stuck: the stream is let through */
    }
    MP_ASSERT(rc != WEFT_SUCCESS, "1000 allreduces after rank %d died all succeeded", n - 1);
    MP_ASSERT(rc == WEFT_ERR_PEER_LOST || rc == WEFT_ERR_TIMEOUT || rc == WEFT_ERR_ABORTED,
              "%s: %s", mp_rc_name(rc), weft_last_error());
    mp_log("failed after %.1f s with %s: %s", mp_now() - start, mp_rc_name(rc),
           weft_last_error());
    if (on_stream) {
        CU(cu.StreamSynchronize(s));
        /* the failure is kept */
        rc = weft_allreduce(WEFT_IN_PLACE, d, COUNT, WEFT_INT32, WEFT_SUM, w);
        MP_ASSERT(rc != WEFT_SUCCESS, "the stream's failure was not kept");
    }
    if (on_stream) {
        MP_CHECK(weft_comm_set_stream(w, NULL));
        CU(cu.StreamDestroy(s));
    }
    dev_free(d);
    write_marker(me, weft_last_error());
}

/* A VMM allocation of at least bytes (2 MiB granularity, as the double
 * and current GPUs report), mapped read-write for device 0, exportable
 * as a POSIX descriptor where fd_export; its size in *size. */
#define VMM_GRAIN (2u << 20)
static void *vmm_alloc(size_t bytes, int fd_export, size_t *size)
{
    CUmemGenericAllocationHandle h;
    CUmemAllocationProp prop;
    CUmemAccessDesc acc;
    CUdeviceptr va;

    *size = (bytes + VMM_GRAIN - 1) / VMM_GRAIN * VMM_GRAIN;
    memset(&prop, 0, sizeof(prop));
    prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
    prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    prop.location.id = 0;
    prop.requestedHandleTypes = fd_export ? CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR
                                          : CU_MEM_HANDLE_TYPE_NONE;
    CU(cu.MemCreate(&h, *size, &prop, 0));
    CU(cu.MemAddressReserve(&va, *size, 0, 0, 0));
    CU(cu.MemMap(va, *size, 0, h, 0));
    CU(cu.MemRelease(h));
    memset(&acc, 0, sizeof(acc));
    acc.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    acc.location.id = 0;
    acc.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
    CU(cu.MemSetAccess(va, *size, &acc, 1));
    return (void *)(uintptr_t)va;
}

static void vmm_free(void *p, size_t size)
{
    CU(cu.MemUnmap((CUdeviceptr)(uintptr_t)p, size));
    CU(cu.MemAddressFree((CUdeviceptr)(uintptr_t)p, size));
}

static void put(void *dev, const void *host, size_t bytes)
{
    CU(cu.MemcpyHtoD((CUdeviceptr)(uintptr_t)dev, host, bytes));
}

/* 1 MiB from VMM memory to VMM memory round a ring: shm maps the sender's
 * allocation from a descriptor its server hands over. */
static void vmm_p2p(weft_comm_t w, int me, int n)
{
    enum { COUNT = 1 << 18 };
    size_t bytes = COUNT * sizeof(int32_t), ss, sr;
    int32_t *in = malloc(bytes), *out = malloc(bytes);
    int right = (me + 1) % n, left = (me + n - 1) % n;
    weft_request_t reqs[2];
    void *ds, *dr;

    MP_ASSERT(in && out, "out of memory");
    ds = vmm_alloc(bytes, 1, &ss);
    dr = vmm_alloc(bytes, 1, &sr);
    fill(in, COUNT, me);
    put(ds, in, bytes);
    for (int k = 0; k < 2; k++) { /* the second hits the receivers' caches */
        MP_CHECK(weft_irecv(dr, COUNT, WEFT_INT32, left, 30 + k, w, &reqs[0]));
        MP_CHECK(weft_isend(ds, COUNT, WEFT_INT32, right, 30 + k, w, &reqs[1]));
        MP_CHECK(weft_waitall(2, reqs, NULL));
        dev_to(out, dr, bytes);
        for (size_t i = 0; i < COUNT; i++)
            MP_ASSERT(out[i] == val(left, i), "vmm send/recv %d: element %zu is %d", k, i,
                      out[i]);
    }
    /* the receivers map before the senders free */
    MP_CHECK(weft_barrier(w));
    vmm_free(ds, ss);
    vmm_free(dr, sr);
    free(in);
    free(out);
}

/* Asserts that out holds, for each of its count elements, the sum over n
 * ranks of what fill() gives them. */
static void expect_sums(const int32_t *out, size_t count, int n, const char *what)
{
    for (size_t i = 0; i < count; i++) {
        int64_t sum = 0;

        for (int r = 0; r < n; r++)
            sum += val(r, i);
        MP_ASSERT(out[i] == (int32_t)sum, "%s: element %zu is %d, not %lld", what, i, out[i],
                  (long long)sum);
    }
}

static void run_vmm(weft_comm_t w, int me, int n)
{
    enum { COUNT = 5000 };
    size_t bytes = (size_t)n * COUNT * sizeof(int32_t), sin, sout, sx;
    int32_t *in = malloc(bytes), *out = malloc(bytes);
    void *din, *dout, *dx;

    MP_ASSERT(in && out, "out of memory");
    if (!cu.MemCreate || !cu.MemAddressReserve || !cu.MemMap || !cu.MemSetAccess ||
        !cu.MemUnmap || !cu.MemAddressFree || !cu.MemRelease)
        mp_skip("the CUDA driver has no VMM functions");
    din = vmm_alloc(bytes, 1, &sin);
    dout = vmm_alloc(bytes, 1, &sout);
    dx = vmm_alloc(bytes, 0, &sx);

    /* allreduce SUM, then MAX in place */
    fill(in, COUNT, me);
    put(din, in, COUNT * sizeof(int32_t));
    MP_CHECK(weft_allreduce(din, dout, COUNT, WEFT_INT32, WEFT_SUM, w));
    dev_to(out, dout, COUNT * sizeof(int32_t));
    expect_sums(out, COUNT, n, "vmm allreduce");
    MP_CHECK(weft_allreduce(WEFT_IN_PLACE, din, COUNT, WEFT_INT32, WEFT_MAX, w));
    dev_to(out, din, COUNT * sizeof(int32_t));
    for (size_t i = 0; i < COUNT; i++)
        MP_ASSERT(out[i] == val(n - 1, i), "vmm allreduce in place: element %zu is %d", i,
                  out[i]);

    /* allgather: block r from rank r */
    fill(in, COUNT, me);
    put(din, in, COUNT * sizeof(int32_t));
    MP_CHECK(weft_allgather(din, dout, COUNT, WEFT_INT32, w));
    dev_to(out, dout, bytes);
    for (int r = 0; r < n; r++)
        for (size_t i = 0; i < COUNT; i++)
            MP_ASSERT(out[(size_t)r * COUNT + i] == val(r, i),
                      "vmm allgather: block %d element %zu is %d", r, i,
                      out[(size_t)r * COUNT + i]);

    /* broadcast from the last rank */
    fill(in, COUNT, me);
    put(dout, in, COUNT * sizeof(int32_t));
    MP_CHECK(weft_broadcast(dout, COUNT, WEFT_INT32, n - 1, w));
    dev_to(out, dout, COUNT * sizeof(int32_t));
    for (size_t i = 0; i < COUNT; i++)
        MP_ASSERT(out[i] == val(n - 1, i), "vmm broadcast: element %zu is %d", i, out[i]);

    /* reduce_scatter MIN: block r of every rank's n blocks */
    for (int r = 0; r < n; r++)
        fill(in + (size_t)r * COUNT, COUNT, me + r);
    put(din, in, bytes);
    MP_CHECK(weft_reduce_scatter(din, dout, COUNT, WEFT_INT32, WEFT_MIN, w));
    dev_to(out, dout, COUNT * sizeof(int32_t));
    for (size_t i = 0; i < COUNT; i++)
        MP_ASSERT(out[i] == val(me, i), "vmm reduce_scatter: element %zu is %d", i, out[i]);

    /* reduce SUM to rank 0, and an allocation that exports as nothing:
     * staged on every rank, the same answer */
    fill(in, COUNT, me);
    put(dx, in, COUNT * sizeof(int32_t));
    MP_CHECK(weft_reduce(dx, dout, COUNT, WEFT_INT32, WEFT_SUM, 0, w));
    if (me == 0) {
        dev_to(out, dout, COUNT * sizeof(int32_t));
        expect_sums(out, COUNT, n, "vmm reduce (staged)");
    }
    vmm_free(din, sin);
    vmm_free(dout, sout);
    vmm_free(dx, sx);
    free(in);
    free(out);
    vmm_p2p(w, me, n);
}

/* Rank 0's second kernel launch fails: that call fails on every rank,
 * rank 0's error naming the launch, the others' naming rank 0. */
static void run_enginefault(weft_comm_t w, int me, int n)
{
    allreduce_one_fails(w, me, n, 4,
                        me == 0 ? "cuLaunchKernel" : "rank 0's device step failed");
}

int main(int argc, char **argv)
{
    weft_comm_t world;
    int me, n;

    if (argc < 2 || argc > 3)
        MP_FAIL("usage: mp_gpu coll|p2p|stream|streamfail|ipcstale|faults|enginefault|vmm|"
                "peerlost [stream]");
    /* Before the driver loads: the double reads its faults then. */
    if (!strcmp(argv[1], "enginefault") && getenv("RANK") && !strcmp(getenv("RANK"), "0"))
        setenv("WEFT_FAKECUDA_FAULTS", "fail=cuLaunchKernel@2", 1);
    cuda_open();
    mp_init_world(&world, &me, &n);
    if (!strcmp(argv[1], "coll"))
        run_coll(world, me, n);
    else if (!strcmp(argv[1], "p2p"))
        run_p2p(world, me, n);
    else if (!strcmp(argv[1], "stream"))
        run_stream(world, me, n);
    else if (!strcmp(argv[1], "streamfail"))
        run_streamfail(world, me, n);
    else if (!strcmp(argv[1], "ipcstale"))
        run_ipcstale(world, me, n);
    else if (!strcmp(argv[1], "faults"))
        run_faults(world, me, n);
    else if (!strcmp(argv[1], "enginefault"))
        run_enginefault(world, me, n);
    else if (!strcmp(argv[1], "vmm"))
        run_vmm(world, me, n);
    else if (!strcmp(argv[1], "peerlost"))
        run_peerlost(world, me, n, argc == 3 && !strcmp(argv[2], "stream"));
    else
        MP_FAIL("unknown test %s", argv[1]);
    MP_CHECK(weft_comm_destroy(world));
    return 0;
}
