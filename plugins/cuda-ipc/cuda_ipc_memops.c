/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * cuda_ipc_memops.c: whether stream memory operations work here, found
 * by trying them.
 *
 * Since CUDA 12 the v2 cuStreamWriteValue32/WaitValue32 have no device
 * attribute of their own (CAN_USE_STREAM_MEM_OPS_V1 is documented as
 * deprecated), yet a driver may still refuse them, with
 * CUDA_ERROR_NOT_SUPPORTED when they are enqueued: under some
 * virtualisation, or a test double told to. So init enqueues, on a
 * non-blocking stream of its own (the legacy stream would wait for the
 * program's work on the context), what the core will: a wait on a
 * page-locked host word that is already satisfied, then a write to it,
 * and checks the word once the stream is done. The probe costs one
 * allocation and one round trip, once per process.
 */
#include "config.h"

#include <stdio.h>

#include "plugins/cuda-ipc/cuda_ipc.h"

static void say(const struct cipc_ctx *c, CUresult rc, const char *call, char *why, size_t cap)
{
    char err[160];

    weft__cudrv_err_text(&c->drv, rc, err, sizeof(err));
    snprintf(why, cap, "%s failed: %s", call, err);
}

int weft__cuda_ipc_memops_probe(const struct cipc_ctx *c, char *why, size_t cap)
{
    const struct wcu_fns *f = &c->drv.fn;
    CUdeviceptr addr;
    uint32_t *flag;
    void *mem;
    CUstream s;
    CUresult rc, sync_rc;
    uint32_t seen;
    int ok = 0;

    rc = f->cuMemAllocHost(&mem, sizeof(*flag));
    if (rc != CUDA_SUCCESS) {
        say(c, rc, "cuMemAllocHost", why, cap);
        return 0;
    }
    flag = mem;
    __atomic_store_n(flag, 0, __ATOMIC_SEQ_CST);
    /* Page-locked memory has one address for host and device under
     * unified addressing, which init made sure the device has. */
    addr = (CUdeviceptr)(uintptr_t)mem;
    rc = f->cuStreamCreate(&s, CU_STREAM_NON_BLOCKING);
    if (rc != CUDA_SUCCESS) {
        say(c, rc, "cuStreamCreate", why, cap);
        goto out_free_flag;
    }
    rc = f->cuStreamWaitValue32(s, addr, 0, CU_STREAM_WAIT_VALUE_GEQ);
    if (rc != CUDA_SUCCESS)
        say(c, rc, "cuStreamWaitValue32", why, cap);
    else if ((rc = f->cuStreamWriteValue32(s, addr, 1, CU_STREAM_WRITE_VALUE_DEFAULT)) !=
             CUDA_SUCCESS)
        say(c, rc, "cuStreamWriteValue32", why, cap);
    /* Whatever was enqueued may still read the word: wait for it before
     * the word is freed. */
    sync_rc = f->cuStreamSynchronize(s);
    if (rc == CUDA_SUCCESS && sync_rc != CUDA_SUCCESS)
        say(c, sync_rc, "cuStreamSynchronize", why, cap);
    else if (rc == CUDA_SUCCESS && (seen = __atomic_load_n(flag, __ATOMIC_SEQ_CST)) != 1)
        snprintf(why, cap, "cuStreamWriteValue32 left the word at %u, not 1", seen);
    else
        ok = rc == CUDA_SUCCESS;
    f->cuStreamDestroy(s);
out_free_flag:
    f->cuMemFreeHost(mem);
    return ok;
}
