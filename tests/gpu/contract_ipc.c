/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * contract_ipc.c: the contract test's checks of legacy CUDA IPC, by which
 * weft's cuda-ipc transport maps a peer's cuMemAlloc buffer: a handle is
 * made in one process and opened in another, which reads what the first
 * wrote and writes what the first then reads.
 *
 * The other process is this program again (contract.c), given the
 * handle's 64 bytes in hex and the buffer's size. Checked: the handle is
 * made, and the exporting process cannot open its own handle ("refused":
 * the reference speaks of memory "exported from another process"; which
 * error it is, is informational); in the child the open succeeds, the
 * bytes are the parent's, the memory is DEVICE memory, and the close
 * succeeds; the parent then sees the child's bytes. A second open of the
 * same handle in one context is informational: the reference now says
 * it counts a reference and returns the same address, older drivers
 * answered CUDA_ERROR_ALREADY_MAPPED.
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/gpu/contract.h"

#define CT_IPC_BYTES ((size_t)1 << 20)

static void to_hex(const CUipcMemHandle *h, char *out)
{
    const unsigned char *p = (const unsigned char *)h->reserved;

    for (size_t i = 0; i < sizeof(h->reserved); i++)
        sprintf(out + 2 * i, "%02x", p[i]);
}

static int from_hex(const char *s, CUipcMemHandle *h)
{
    unsigned char *p = (unsigned char *)h->reserved;

    if (strlen(s) != 2 * sizeof(h->reserved))
        return -1;
    for (size_t i = 0; i < sizeof(h->reserved); i++) {
        unsigned v;
        if (sscanf(s + 2 * i, "%2x", &v) != 1)
            return -1;
        p[i] = (unsigned char)v;
    }
    return 0;
}

void ct_check_ipc(void)
{
    char hex[2 * CU_IPC_HANDLE_SIZE + 1], size[32];
    const char *args[] = { "--ipc-child", hex, size, NULL };
    unsigned char *buf = malloc(CT_IPC_BYTES);
    CUipcMemHandle h;
    CUdeviceptr d, mine;
    long bad;
    int status;
    CUresult r;

    if (!buf) {
        ct_fail("ipc", "out of host memory");
        return;
    }
    if ((r = cu.cuMemAlloc(&d, CT_IPC_BYTES))) {
        ct_check("ipc-get", "CUDA_SUCCESS", "cuMemAlloc %s", ct_err(r));
        goto out_free;
    }
    ct_pattern(buf, CT_IPC_BYTES, 7);
    /* the copy may return before its DMA is done: the sync makes the
     * bytes the child reads the parent's */
    if ((r = cu.cuMemcpyHtoD(d, buf, CT_IPC_BYTES)) || (r = cu.cuStreamSynchronize(NULL))) {
        ct_fail("ipc", ct_err(r));
        goto out_free_device;
    }
    r = cu.cuIpcGetMemHandle(&h, d);
    ct_check("ipc-get", "CUDA_SUCCESS", "%s", ct_err(r));
    if (r)
        goto out_free_device;
    r = cu.cuIpcOpenMemHandle(&mine, h, CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS);
    ct_check("ipc-open-self", "refused", "%s", r ? "refused" : "opened");
    ct_info("ipc-open-self-result", "%s", ct_err(r));
    if (!r)
        cu.cuIpcCloseMemHandle(mine);

    to_hex(&h, hex);
    snprintf(size, sizeof(size), "%zu", (size_t)CT_IPC_BYTES);
    status = ct_spawn_child(args, "ipc-child");
    ct_check("ipc-child-exit", "0", "%d", status);
    memset(buf, 0, CT_IPC_BYTES);
    r = cu.cuMemcpyDtoH(buf, d, CT_IPC_BYTES);
    bad = r ? -1 : ct_pattern_bad(buf, CT_IPC_BYTES, 8);
    if (r)
        ct_check("ipc-child-write-seen", "ok", "%s", ct_err(r));
    else if (bad >= 0)
        ct_check("ipc-child-write-seen", "ok", "mismatch at %ld", bad);
    else
        ct_check("ipc-child-write-seen", "ok", "ok");
out_free_device:
    cu.cuMemFree(d);
out_free:
    free(buf);
}

/* --ipc-child HEX SIZE: opens the handle, reads the parent's bytes,
 * writes its own. */
int ct_ipc_child(int argc, char **argv)
{
    CUdeviceptr p = 0, again = 0;
    unsigned char *buf;
    struct ct_ptr a;
    CUipcMemHandle h;
    size_t n;
    long bad;
    CUresult r;

    if (argc != 2 || from_hex(argv[0], &h) || !(n = strtoul(argv[1], NULL, 10))) {
        fprintf(stderr, "contract: --ipc-child wants HANDLE_HEX SIZE\n");
        return 2;
    }
    if (ct_child_init() || !(buf = malloc(n)))
        return 1;
    r = cu.cuIpcOpenMemHandle(&p, h, CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS);
    ct_check("ipc-child-open", "CUDA_SUCCESS", "%s", ct_err(r));
    if (r)
        return 1;
    memset(buf, 0, n);
    r = cu.cuMemcpyDtoH(buf, p, n);
    bad = r ? -1 : ct_pattern_bad(buf, n, 7);
    if (r)
        ct_check("ipc-child-data", "ok", "%s", ct_err(r));
    else if (bad >= 0)
        ct_check("ipc-child-data", "ok", "mismatch at %ld", bad);
    else
        ct_check("ipc-child-data", "ok", "ok");
    r = ct_ptr_query(p, &a);
    ct_check("ipc-child-memory-type", "DEVICE", "%s",
             r ? ct_err(r) : ct_memory_type(a.memory_type));
    ct_info("ipc-child-legacy-ipc", "%u", a.legacy_ipc);

    r = cu.cuIpcOpenMemHandle(&again, h, CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS);
    ct_info("ipc-child-open-again", "%s%s", ct_err(r),
            r ? "" : again == p ? " same_address" : " other_address");
    if (!r)
        cu.cuIpcCloseMemHandle(again);

    ct_pattern(buf, n, 8);
    if ((r = cu.cuMemcpyHtoD(p, buf, n)) || (r = cu.cuStreamSynchronize(NULL)))
        ct_fail("ipc-child-write", ct_err(r));
    ct_check("ipc-child-close", "CUDA_SUCCESS", "%s", ct_err(cu.cuIpcCloseMemHandle(p)));
    free(buf);
    return ct_failed() ? 1 : 0;
}
