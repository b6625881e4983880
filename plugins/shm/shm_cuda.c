/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * shm_cuda.c: CUDA device buffers in the shm transport. Built where
 * configure found CUDA's headers (shm_cuda_none.c stands in elsewhere);
 * the driver comes from plugins/cuda-common, opened at run time.
 *
 * The CPU never reads or writes device memory here: the ring's records
 * are filled and emptied with cuMemcpy, and a large message in memory
 * cuIpcGetMemHandle can export crosses as an RTS_IPC that the receiver
 * answers by mapping the sender's allocation (cuIpcOpenMemHandle) and
 * copying from it, GPU to GPU, before sending FIN as for cross memory
 * attach. A VMM allocation exportable as a POSIX descriptor crosses the
 * same way, its descriptor handed over by this process's descriptor
 * server (plugins/cuda-common/cudrv_fds.h) to a receiver that misses its
 * cache. Memory that cannot be exported (VMM allocations without that
 * handle type, a device without legacy IPC) goes through the ring.
 *
 * Handles and mappings are cached as plugins/cuda-common/cudrv_ipc.h
 * says: by allocation, checked against CUDA's buffer id, the mappings
 * bounded by SHM_IPC_KEEP and SHM_IPC_KEEP_BYTES.
 *
 * A handle cannot be opened in the process that made it (the driver
 * refuses): there the address is used as it is.
 *
 * Copies need a current context: a thread without one gets the primary
 * context of the device concerned and keeps it, as the CUDA runtime
 * would give it at its first call.
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "plugins/cuda-common/cudrv.h"
#include "plugins/cuda-common/cudrv_fds.h"
#include "plugins/cuda-common/cudrv_ipc.h"
#include "plugins/shm/shm.h"

/* Mappings of peers' memory kept. */
#define SHM_IPC_KEEP 64
#define SHM_IPC_KEEP_BYTES (4ull << 30)

struct shm_cuda_mh {
    uintptr_t base;                     /* the allocation */
    size_t size;
    unsigned long long buffer_id;
    int ordinal;
    int ipc;                            /* IPC may be used: handle valid, or vmm */
    int vmm;                            /* a VMM allocation: its descriptor is served */
    CUipcMemHandle handle;
};

_Static_assert(SHM_IPC_SOCK == WCU_FDS_NAME, "an RTS_IPC holds a descriptor server's name");

struct shm_cuda {
    struct wcu_drv drv;
    int ndev;                           /* at most SHM_GPU_MAX */
    CUcontext primary[SHM_GPU_MAX];     /* retained when first needed */
    uint32_t ipc_devs;                  /* bit per ordinal whose memory exports */
    unsigned char uuid[SHM_GPU_MAX][16];
    struct wcu_ipc_exports exp;
    struct wcu_ipc_imports imp;         /* owner: the peer's rank */
    struct wcu_fds_server fds;          /* VMM descriptors, from the first VMM send */
    unsigned long long ipc_bytes, drv_bytes;
};

/* ------------------------------------------------------------ contexts */

static int use_ctx(struct shm_ctx *ctx, int ord)
{
    struct shm_cuda *cu = ctx->cuda;
    CUcontext cur = NULL;
    char err[160];
    CUresult rc = CUDA_SUCCESS;
    CUdevice dev;

    if (cu->drv.fn.cuCtxGetCurrent(&cur) == CUDA_SUCCESS && cur)
        return 0;
    if (ord < 0 || ord >= cu->ndev)
        ord = 0;
    if (!cu->primary[ord]) {
        rc = cu->drv.fn.cuDeviceGet(&dev, ord);
        if (rc == CUDA_SUCCESS)
            rc = cu->drv.fn.cuDevicePrimaryCtxRetain(&cu->primary[ord], dev);
    }
    if (rc == CUDA_SUCCESS)
        rc = cu->drv.fn.cuCtxSetCurrent(cu->primary[ord]);
    if (rc != CUDA_SUCCESS) {
        weft__cudrv_err_text(&cu->drv, rc, err, sizeof(err));
        weft__tp_error(&ctx->tp, "no CUDA context on this thread, and none for device %d: "
                       "%s", ord, err);
        return -1;
    }
    return 0;
}

/* ------------------------------------------------------------ set-up */

/* 1 when memory of device ord exports: an allocation gets a handle. The
 * thread's context is left as it was. */
static int probe_ipc(struct shm_cuda *cu, int ord, char *why, size_t cap)
{
    CUcontext prev = NULL;
    CUdeviceptr p = 0;
    CUresult rc;
    CUipcMemHandle h;
    CUdevice dev;
    char err[160];

    cu->drv.fn.cuCtxGetCurrent(&prev);
    rc = cu->drv.fn.cuDeviceGet(&dev, ord);
    if (rc == CUDA_SUCCESS && !cu->primary[ord])
        rc = cu->drv.fn.cuDevicePrimaryCtxRetain(&cu->primary[ord], dev);
    if (rc == CUDA_SUCCESS)
        rc = cu->drv.fn.cuCtxSetCurrent(cu->primary[ord]);
    if (rc == CUDA_SUCCESS)
        rc = cu->drv.fn.cuMemAlloc(&p, 1u << 16);
    if (rc == CUDA_SUCCESS) {
        rc = cu->drv.fn.cuIpcGetMemHandle(&h, p);
        cu->drv.fn.cuMemFree(p);
    }
    cu->drv.fn.cuCtxSetCurrent(prev);
    if (rc != CUDA_SUCCESS) {
        weft__cudrv_err_text(&cu->drv, rc, err, sizeof(err));
        snprintf(why, cap, "device %d: %s", ord, err);
        return 0;
    }
    return 1;
}

void weft__shm_cuda_setup(struct shm_ctx *ctx, int on)
{
    struct shm_cuda *cu;
    char why[WCU_WHY_MAX], noipc[WCU_WHY_MAX] = "";
    enum wcu_status st;
    int nipc = 0;

    if (!on) {
        TP_INFO(ctx, "cuda: off: WEFT_SHM_CUDA_IPC=0");
        return;
    }
    cu = calloc(1, sizeof(*cu));
    if (!cu) {
        TP_INFO(ctx, "cuda: off: out of memory");
        return;
    }
    st = weft__cudrv_open(&cu->drv, ctx->core, SHM_NAME, why, sizeof(why));
    if (st != WCU_OK) {
        /* A malformed WEFT_CUDA_* is a mistake worth seeing; the rest
         * only says this node has no GPU memory to offer. */
        TP_LOG(ctx, st == WCU_BAD_PARAM ? WEFT_TRANSPORT_LOG_WARN : WEFT_TRANSPORT_LOG_INFO,
               "cuda: off: %s", why);
        free(cu);
        return;
    }
    weft__cudrv_ipc_imports_init(&cu->imp, SHM_IPC_KEEP, SHM_IPC_KEEP_BYTES);
    weft__cudrv_fds_init(&cu->fds);
    cu->ndev = cu->drv.ndev < SHM_GPU_MAX ? cu->drv.ndev : SHM_GPU_MAX;
    for (int i = 0; i < cu->ndev; i++) {
        CUdevice dev;
        CUuuid u;

        if (cu->drv.fn.cuDeviceGet(&dev, i) != CUDA_SUCCESS ||
            cu->drv.fn.cuDeviceGetUuid(&u, dev) != CUDA_SUCCESS)
            continue;
        memcpy(cu->uuid[i], u.bytes, 16);
        memcpy(ctx->self.gpu_uuid[i], u.bytes, 16);
        if (probe_ipc(cu, i, noipc, sizeof(noipc))) {
            cu->ipc_devs |= 1u << i;
            nipc++;
        }
    }
    ctx->self.ngpus = (uint32_t)cu->ndev;
    ctx->self.cuda_ipc = nipc > 0;
    ctx->cuda = cu;
    if (nipc)
        TP_INFO(ctx, "cuda: IPC on %d of %d device%s", nipc, cu->ndev,
                cu->ndev > 1 ? "s" : "");
    else
        TP_INFO(ctx, "cuda: no IPC (%s): device buffers go through the rings", noipc);
}

int weft__shm_cuda_announce(const struct shm_ctx *ctx)
{
    return ctx->cuda && ctx->cuda->ipc_devs;
}

/* ------------------------------------------------------------ registration */

/* The descriptor server's thread: the context of a device this
 * process uses (retained by then: a VMM export follows use_ctx). */
static void fds_thread_init(void *arg)
{
    struct shm_cuda *cu = arg;

    for (int i = 0; i < cu->ndev; i++)
        if (cu->primary[i]) {
            cu->drv.fn.cuCtxSetCurrent(cu->primary[i]);
            return;
        }
}

/* Whether VMM allocation m can be served to peers as a descriptor: the
 * server runs (started now if need be). */
static int export_vmm(struct shm_ctx *ctx, const struct wcu_ptr *p)
{
    struct shm_cuda *cu = ctx->cuda;
    char why[160];

    if (!(p->handle_types & CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR) ||
        !(cu->drv.features & (1u << WCU_FEAT_VMM)) || use_ctx(ctx, p->ordinal) != 0)
        return 0;
    if (weft__cudrv_fds_start(&cu->fds, &cu->drv, SHM_NAME, fds_thread_init, cu, why,
                              sizeof(why)) != 0) {
        TP_WARN(ctx, "cuda: %s: VMM memory goes through the rings", why);
        return 0;
    }
    return 1;
}

/* The export handle of allocation (base, id): 0, or -1 when the driver
 * will not export it. */
static int export_handle(struct shm_ctx *ctx, struct shm_cuda_mh *m)
{
    struct shm_cuda *cu = ctx->cuda;

    if (use_ctx(ctx, m->ordinal) != 0 ||
        weft__cudrv_ipc_export(&cu->drv, &cu->exp, m->base, m->buffer_id, &m->handle) !=
            CUDA_SUCCESS)
        return -1;
    return 0;
}

weft_result_t weft__shm_mem_register(void *vctx, void *buf, size_t len, int mem_type,
                                     void **mh)
{
    struct shm_ctx *ctx = vctx;
    struct shm_cuda *cu = ctx->cuda;
    struct shm_cuda_mh *m;
    struct wcu_ptr p;
    char why[256];

    if (!mh)
        return WEFT_ERR_INVALID_ARG;
    if (mem_type == WEFT_TRANSPORT_MEM_HOST || (mem_type == WEFT_TRANSPORT_MEM_CUDA && !len)) {
        *mh = NULL;
        return WEFT_SUCCESS;
    }
    if (mem_type != WEFT_TRANSPORT_MEM_CUDA || !cu) {
        weft__tp_error(&ctx->tp, "memory type %d is not %s", mem_type,
                       cu ? "host or CUDA memory" : "host memory (CUDA is off)");
        return WEFT_ERR_UNSUPPORTED;
    }
    if (weft__cudrv_ptr_query(&cu->drv, buf, &p, why, sizeof(why)) != 0) {
        weft__tp_error(&ctx->tp, "%s", why);
        return WEFT_ERR_SYSTEM;
    }
    /* The CPU reads and writes these as they are. */
    if (p.mem == WCU_MEM_HOST || p.mem == WCU_MEM_PINNED) {
        *mh = NULL;
        return WEFT_SUCCESS;
    }
    if ((uintptr_t)buf < p.start || (uintptr_t)buf + len > p.start + p.size) {
        weft__tp_error(&ctx->tp, "%zu bytes at %p run past their CUDA allocation (%zu bytes "
                       "at 0x%llx)", len, buf, p.size, (unsigned long long)p.start);
        return WEFT_ERR_INVALID_ARG;
    }
    m = calloc(1, sizeof(*m));
    if (!m) {
        weft__tp_error(&ctx->tp, "out of memory for a device buffer's handle");
        return WEFT_ERR_NO_MEMORY;
    }
    m->base = p.start;
    m->size = p.size;
    m->buffer_id = p.buffer_id;
    m->ordinal = p.ordinal;
    /* Memory that does not export is still carried, through the rings. */
    if (p.mem == WCU_MEM_DEVICE && p.ordinal >= 0 && p.ordinal < cu->ndev &&
        (cu->ipc_devs & (1u << p.ordinal))) {
        if (p.legacy_ipc)
            m->ipc = export_handle(ctx, m) == 0;
        else
            m->ipc = m->vmm = export_vmm(ctx, &p);
    }
    *mh = m;
    return WEFT_SUCCESS;
}

weft_result_t weft__shm_mem_deregister(void *vctx, void *mh)
{
    free(mh);
    return WEFT_SUCCESS;
}

/* ------------------------------------------------------------ copies */

int weft__shm_cuda_copy(void *vctx, void *dst, const void *src, size_t n)
{
    struct shm_ctx *ctx = vctx;
    struct shm_cuda *cu = ctx->cuda;
    char err[160];
    CUresult rc;

    if (!n)
        return 0;
    if (use_ctx(ctx, 0) != 0)
        return -1;
    rc = cu->drv.fn.cuMemcpy((CUdeviceptr)(uintptr_t)dst, (CUdeviceptr)(uintptr_t)src, n);
    if (rc != CUDA_SUCCESS) {
        weft__cudrv_err_text(&cu->drv, rc, err, sizeof(err));
        weft__tp_error(&ctx->tp, "cuMemcpy of %zu bytes from %p to %p failed: %s", n, src,
                       dst, err);
        TP_WARN(ctx, "cuda: cuMemcpy of %zu bytes from %p to %p failed: %s", n, src, dst,
                err);
        return -1;
    }
    cu->drv_bytes += n;
    return 0;
}

/* ------------------------------------------------------------ IPC */

static int dev_of_uuid(const struct shm_cuda *cu, const unsigned char *uuid)
{
    for (int i = 0; i < cu->ndev; i++)
        if (!memcmp(cu->uuid[i], uuid, 16))
            return i;
    return -1;
}

int weft__shm_cuda_ipc_rts(struct shm_ctx *ctx, int peer, const void *mh, const void *buf,
                           struct shm_ipc_rts *rts)
{
    const struct shm_cuda_mh *m = mh;
    const struct shm_addr *a = &ctx->peers[peer].addr;
    int seen = 0;

    if (!m->ipc || !a->cuda_ipc)
        return 0;
    for (uint32_t i = 0; i < a->ngpus && i < SHM_GPU_MAX && !seen; i++)
        seen = !memcmp(a->gpu_uuid[i], ctx->cuda->uuid[m->ordinal], 16);
    if (!seen)
        return 0;
    if (rts) {
        rts->vmm = (uint32_t)m->vmm;
        memcpy(rts->sock, ctx->cuda->fds.name, sizeof(rts->sock));
        memcpy(rts->handle, &m->handle, sizeof(rts->handle));
        rts->base = m->base;
        rts->size = m->size;
        rts->offset = (uintptr_t)buf - m->base;
        rts->buffer_id = m->buffer_id;
        memcpy(rts->uuid, ctx->cuda->uuid[m->ordinal], 16);
    }
    return 1;
}

/* wcu_ipc_source.fetch_fd: the sender's server hands over the
 * descriptor of the VMM allocation the RTS_IPC arg names. */
static int fetch_fd(void *arg, CUresult *rc)
{
    const struct shm_ipc_rts *rts = arg;
    char name[SHM_IPC_SOCK];

    memcpy(name, rts->sock, sizeof(name));
    name[sizeof(name) - 1] = '\0';
    return weft__cudrv_fds_fetch(name, rts->base, rts->buffer_id, rc);
}

/* peer's allocation as rts names it, mapped here, with a reference:
 * NULL with the error set. */
static struct wcu_ipc_map *imp_get(struct shm_ctx *ctx, int peer,
                                   const struct shm_ipc_rts *rts)
{
    struct shm_cuda *cu = ctx->cuda;
    struct wcu_ipc_source src = { 0 };
    struct wcu_ipc_map *e;
    CUipcMemHandle h;
    char err[160];
    CUresult rc;

    if (use_ctx(ctx, dev_of_uuid(cu, rts->uuid)) != 0)
        return NULL;
    memcpy(&h, rts->handle, sizeof(h));
    src.handle = rts->vmm ? NULL : &h;
    src.fetch_fd = fetch_fd;
    src.arg = (void *)rts;
    src.device = dev_of_uuid(cu, rts->uuid);
    e = weft__cudrv_ipc_get(&cu->drv, &cu->imp, (uint64_t)peer, rts->base, rts->size,
                            rts->buffer_id, &src, &rc);
    if (!e) {
        weft__cudrv_err_text(&cu->drv, rc, err, sizeof(err));
        weft__tp_error(&ctx->tp, "%s of rank %d's buffer %llu failed: %s",
                       rts->vmm ? "importing the VMM allocation" : "cuIpcOpenMemHandle", peer,
                       (unsigned long long)rts->buffer_id, err);
        TP_WARN(ctx, "cuda: %s of rank %d's buffer %llu failed: %s",
                rts->vmm ? "importing the VMM allocation" : "cuIpcOpenMemHandle", peer,
                (unsigned long long)rts->buffer_id, err);
    }
    return e;
}

int weft__shm_cuda_ipc_read(struct shm_ctx *ctx, int peer, const struct shm_ipc_rts *rts,
                            void *dst, size_t n)
{
    struct shm_cuda *cu = ctx->cuda;
    struct wcu_ipc_map *e = NULL;
    CUdeviceptr src;
    char err[160];
    CUresult rc;

    if (!cu) {
        weft__tp_error(&ctx->tp, "rank %d sent GPU memory, and CUDA is off here", peer);
        return -1;
    }
    if (rts->offset > rts->size || n > rts->size - rts->offset) {
        weft__tp_error(&ctx->tp, "rank %d's GPU buffer runs past its allocation", peer);
        return -1;
    }
    if (!n)
        return 0;
    if (ctx->peers[peer].addr.pid == (uint32_t)getpid()) {
        src = (CUdeviceptr)(rts->base + rts->offset);
        if (use_ctx(ctx, dev_of_uuid(cu, rts->uuid)) != 0)
            return -1;
    } else {
        e = imp_get(ctx, peer, rts);
        if (!e)
            return -1;
        src = e->mapped + rts->offset;
    }
    rc = cu->drv.fn.cuMemcpy((CUdeviceptr)(uintptr_t)dst, src, n);
    if (e)
        weft__cudrv_ipc_put(&cu->drv, &cu->imp, e);
    if (rc != CUDA_SUCCESS) {
        weft__cudrv_err_text(&cu->drv, rc, err, sizeof(err));
        weft__tp_error(&ctx->tp, "cuMemcpy of %zu bytes of rank %d's GPU memory failed: %s",
                       n, peer, err);
        return -1;
    }
    cu->ipc_bytes += n;
    return 0;
}

/* ------------------------------------------------------------ tear-down */

void weft__shm_cuda_forget_peer(struct shm_ctx *ctx, int peer)
{
    struct shm_cuda *cu = ctx->cuda;

    if (!cu)
        return;
    weft__cudrv_ipc_forget(&cu->drv, &cu->imp, (uint64_t)peer);
}

void weft__shm_cuda_fini(struct shm_ctx *ctx)
{
    struct shm_cuda *cu = ctx->cuda;

    if (!cu)
        return;
    weft__cudrv_fds_stop(&cu->fds);
    TP_INFO(ctx, "cuda: ipc_bytes=%llu copy_bytes=%llu ipc_opens=%llu ipc_hits=%llu "
            "vmm_opens=%llu vmm_fds_served=%llu", cu->ipc_bytes, cu->drv_bytes, cu->imp.opens,
            cu->imp.hits, cu->imp.vmm_opens, cu->fds.served);
    weft__cudrv_ipc_close_all(&cu->drv, &cu->imp);
    /* A thread it was made current on keeps it: the program, whose
     * memory is on that device, may use it there too. */
    for (int i = 0; i < cu->ndev; i++) {
        CUdevice dev;

        if (cu->primary[i] && cu->drv.fn.cuDeviceGet(&dev, i) == CUDA_SUCCESS)
            cu->drv.fn.cuDevicePrimaryCtxRelease(dev);
    }
    weft__cudrv_close(&cu->drv);
    free(cu);
    ctx->cuda = NULL;
}
