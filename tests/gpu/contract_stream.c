/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * contract_stream.c: the contract test's checks of streams, events and
 * stream memory operations, by which weft orders a collective on a
 * user's stream: a 32-bit write the host sees, and a wait that holds the
 * work queued after it until the host writes a word.
 *
 * The words live in page-locked host memory (cuMemAllocHost), which a
 * device reaches by the same address under unified addressing. The host
 * reads and writes them with atomics: the device's side is another agent.
 * A wait holds a stream until the host lets it go, and every path lets
 * it go before the next driver call that could wait for that stream,
 * so a failed check cannot wedge the program (the watchdog in contract.c
 * backs that up). The streams are CU_STREAM_NON_BLOCKING so that the
 * synchronous calls of other checks, on the legacy stream, never wait
 * for a held one.
 *
 * Informational: cuEventQuery of an event never recorded (the reference
 * of this toolkit no longer says), and a misaligned memop address (the
 * reference names no rule; a driver that takes it may break the
 * context, so that check runs last of all).
 */
#define _GNU_SOURCE
#include "config.h"

#include <stdint.h>
#include <string.h>
#include <time.h>

#include "tests/gpu/contract.h"

/* How long a held stream must stay held, and how long a released one may
 * take to move on. */
#define CT_HOLD_MS 200
#define CT_RELEASE_MS 10000

/* The words in the page of flags. */
enum { W_WRITE, W_GATE, W_AFTER_GATE, W_AFTER_EVENT, W_CYCLIC, W_AFTER_CYCLIC, W_COUNT };

static uint32_t load32(volatile uint32_t *p)
{
    return __atomic_load_n(p, __ATOMIC_ACQUIRE);
}

static void store32(volatile uint32_t *p, uint32_t v)
{
    __atomic_store_n(p, v, __ATOMIC_SEQ_CST);
}

/* Polls until *P is WANT, for at most MS milliseconds: whether it got so. */
static int wait_for(volatile uint32_t *p, uint32_t want, int ms)
{
    struct timespec tick = { 0, 1000000 };

    for (int i = 0; i <= ms; i++) {
        if (load32(p) == want)
            return 1;
        nanosleep(&tick, NULL);
    }
    return load32(p) == want;
}

static CUresult first_err(const CUresult *r, int n)
{
    for (int i = 0; i < n; i++)
        if (r[i] != CUDA_SUCCESS)
            return r[i];
    return CUDA_SUCCESS;
}

static const char *held_result(int held, int released)
{
    return !held ? "not_blocked" : released ? "blocked_then_released" : "never_released";
}

/* HtoD and DtoH on a stream, between page-locked buffers, then a sync. */
static void async_copies(CUstream s)
{
    size_t n = 65536 + 12;
    unsigned char *a = NULL, *b = NULL;
    CUdeviceptr d = 0;
    CUresult r[5];
    long bad;

    r[0] = cu.cuMemAllocHost((void **)&a, n);
    r[1] = cu.cuMemAllocHost((void **)&b, n);
    r[2] = cu.cuMemAlloc(&d, n);
    if (first_err(r, 3)) {
        ct_check("stream-async-copy", "ok", "%s", ct_err(first_err(r, 3)));
        goto out_free;
    }
    ct_pattern(a, n, 3);
    memset(b, 0, n);
    r[2] = cu.cuMemcpyHtoDAsync(d, a, n, s);
    r[3] = cu.cuMemcpyDtoHAsync(b, d, n, s);
    r[4] = cu.cuStreamSynchronize(s);
    if (first_err(r, 5))
        ct_check("stream-async-copy", "ok", "%s", ct_err(first_err(r, 5)));
    else if ((bad = ct_pattern_bad(b, n, 3)) >= 0)
        ct_check("stream-async-copy", "ok", "mismatch at %ld", bad);
    else
        ct_check("stream-async-copy", "ok", "ok");
out_free:
    if (d)
        cu.cuMemFree(d);
    if (a)
        cu.cuMemFreeHost(a);
    if (b)
        cu.cuMemFreeHost(b);
}

/* cuStreamWriteValue32 to host memory, seen by the host after a sync,
 * and to device memory, seen by a copy. */
static void memop_write(CUstream s, volatile uint32_t *w)
{
    uint32_t got = 0;
    CUdeviceptr d;
    CUresult r;

    store32(&w[W_WRITE], 0);
    r = cu.cuStreamWriteValue32(s, (CUdeviceptr)(uintptr_t)&w[W_WRITE], 0x1234abcd, 0);
    if (!r)
        r = cu.cuStreamSynchronize(s);
    ct_check("memop-write-host", "visible", "%s",
             r ? ct_err(r) : load32(&w[W_WRITE]) == 0x1234abcd ? "visible" : "not-visible");

    if ((r = cu.cuMemAlloc(&d, 64))) {
        ct_check("memop-write-device", "ok", "cuMemAlloc %s", ct_err(r));
        return;
    }
    /* a memset of device memory may return before it is done: the sync
     * keeps it from landing after the write */
    if (!(r = cu.cuMemsetD8(d, 0, 64)) && !(r = cu.cuStreamSynchronize(NULL)) &&
        !(r = cu.cuStreamWriteValue32(s, d + 8, 0xcafe0001, 0)) &&
        !(r = cu.cuStreamSynchronize(s)))
        r = cu.cuMemcpyDtoH(&got, d + 8, sizeof(got));
    ct_check("memop-write-device", "ok", "%s",
             r ? ct_err(r) : got == 0xcafe0001 ? "ok" : "mismatch");
    cu.cuMemFree(d);
}

/* A wait (GEQ) holds the write queued after it, an event recorded after
 * both, and the work of another stream that waits for that event, until
 * the host writes the awaited value. */
static void memop_wait(CUstream s, CUstream s2, volatile uint32_t *w)
{
    CUdeviceptr gate = (CUdeviceptr)(uintptr_t)&w[W_GATE];
    int held, held2, released, released2;
    CUresult r[5], qs, qe, sync[3], eq;
    CUevent e;

    store32(&w[W_GATE], 0);
    store32(&w[W_AFTER_GATE], 0);
    store32(&w[W_AFTER_EVENT], 0);
    r[0] = cu.cuEventCreate(&e, CU_EVENT_DISABLE_TIMING);
    ct_check("event-create", "CUDA_SUCCESS", "%s", ct_err(r[0]));
    if (r[0])
        return;
    ct_info("event-query-unrecorded", "%s", ct_err(cu.cuEventQuery(e)));

    r[0] = cu.cuStreamWaitValue32(s, gate, 1, CU_STREAM_WAIT_VALUE_GEQ);
    r[1] = cu.cuStreamWriteValue32(s, (CUdeviceptr)(uintptr_t)&w[W_AFTER_GATE], 7, 0);
    r[2] = cu.cuEventRecord(e, s);
    r[3] = cu.cuStreamWaitEvent(s2, e, 0);
    r[4] = cu.cuStreamWriteValue32(s2, (CUdeviceptr)(uintptr_t)&w[W_AFTER_EVENT], 9, 0);
    ct_check("memop-wait-enqueue", "CUDA_SUCCESS", "%s", ct_err(first_err(r, 5)));
    held = !wait_for(&w[W_AFTER_GATE], 7, CT_HOLD_MS);
    held2 = load32(&w[W_AFTER_EVENT]) == 0;
    qs = cu.cuStreamQuery(s);
    qe = cu.cuEventQuery(e);
    /* let go, whatever happened above */
    store32(&w[W_GATE], 1);
    released = wait_for(&w[W_AFTER_GATE], 7, CT_RELEASE_MS);
    released2 = wait_for(&w[W_AFTER_EVENT], 9, CT_RELEASE_MS);
    sync[0] = cu.cuStreamSynchronize(s);
    sync[1] = cu.cuStreamSynchronize(s2);
    sync[2] = cu.cuEventSynchronize(e);
    eq = cu.cuEventQuery(e);

    ct_check("memop-wait", "blocked_then_released", "%s", held_result(held, released));
    ct_check("stream-query-held", "CUDA_ERROR_NOT_READY", "%s", ct_err(qs));
    ct_check("event-query-pending", "CUDA_ERROR_NOT_READY", "%s", ct_err(qe));
    ct_check("stream-wait-event", "blocked_then_released", "%s", held_result(held2, released2));
    ct_check("stream-synchronize", "CUDA_SUCCESS", "%s", ct_err(first_err(sync, 2)));
    ct_check("event-synchronize", "CUDA_SUCCESS", "%s", ct_err(sync[2]));
    ct_check("event-query-done", "CUDA_SUCCESS", "%s", ct_err(eq));
    ct_check("event-destroy", "CUDA_SUCCESS", "%s", ct_err(cu.cuEventDestroy(e)));
}

/* GEQ is cyclic, (int32_t)(*addr - value) >= 0: 5 comes after
 * 0xfffffff0, so the wait passes at once. A plain unsigned comparison
 * would hold it; 0xfffffff5 lets it go under either reading. */
static void memop_wait_cyclic(CUstream s, volatile uint32_t *w)
{
    CUresult r[3];
    int passed;

    store32(&w[W_CYCLIC], 5);
    store32(&w[W_AFTER_CYCLIC], 0);
    r[0] = cu.cuStreamWaitValue32(s, (CUdeviceptr)(uintptr_t)&w[W_CYCLIC], 0xfffffff0u,
                                  CU_STREAM_WAIT_VALUE_GEQ);
    r[1] = cu.cuStreamWriteValue32(s, (CUdeviceptr)(uintptr_t)&w[W_AFTER_CYCLIC], 1, 0);
    passed = wait_for(&w[W_AFTER_CYCLIC], 1, 2000);
    store32(&w[W_CYCLIC], 0xfffffff5u);
    r[2] = cu.cuStreamSynchronize(s);
    ct_check("memop-wait-geq-cyclic", "passes", "%s",
             first_err(r, 3) ? ct_err(first_err(r, 3)) : passed ? "passes" : "held");
}

void ct_check_streams(void)
{
    CUstream s = NULL, s2 = NULL;
    uint32_t *w = NULL;
    CUresult r;

    r = cu.cuStreamCreate(&s, CU_STREAM_NON_BLOCKING);
    ct_check("stream-create", "CUDA_SUCCESS", "%s", ct_err(r));
    if (r)
        return;
    if ((r = cu.cuStreamCreate(&s2, CU_STREAM_NON_BLOCKING)) ||
        (r = cu.cuMemAllocHost((void **)&w, 4096))) {
        ct_fail("streams", ct_err(r));
        goto out_destroy;
    }
    memset(w, 0, 4096);
    ct_check("stream-query-idle", "CUDA_SUCCESS", "%s", ct_err(cu.cuStreamQuery(s)));
    async_copies(s);
    memop_write(s, w);
    memop_wait(s, s2, w);
    memop_wait_cyclic(s, w);
    cu.cuMemFreeHost(w);
out_destroy:
    if (s2)
        cu.cuStreamDestroy(s2);
    ct_check("stream-destroy", "CUDA_SUCCESS", "%s", ct_err(cu.cuStreamDestroy(s)));
}

/* Nothing is freed: a driver that took the write may have broken the
 * context, and the program ends next. */
void ct_check_misaligned(void)
{
    unsigned char *h;
    CUstream s;
    CUresult r;

    if (cu.cuStreamCreate(&s, CU_STREAM_NON_BLOCKING) || cu.cuMemAllocHost((void **)&h, 64))
        return;
    r = cu.cuStreamWriteValue32(s, (CUdeviceptr)(uintptr_t)(h + 2), 1, 0);
    ct_info("memop-write-misaligned", "%s", ct_err(r));
    if (r == CUDA_SUCCESS)
        ct_info("memop-write-misaligned-sync", "%s", ct_err(cu.cuStreamSynchronize(s)));
}
