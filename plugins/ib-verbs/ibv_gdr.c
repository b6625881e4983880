/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * ibv_gdr.c: GPU memory for the ib-verbs transport (GPUDirect RDMA):
 * whether it is announced, the dma-buf regions of CUDA allocations, and
 * the copies the CPU cannot make. Built where configure found CUDA's
 * headers; ibv_gdr_none.c stands in elsewhere. The driver comes from
 * plugins/cuda-common, opened at run time: libweft links no CUDA.
 *
 * The driver is opened at init, as the capabilities the core reads are
 * fixed then. A missing driver, the toolkit's stub, a test double not
 * allowed, no device: no GPU memory, said once, and the transport works
 * on as before (the core stages device buffers through host memory).
 *
 * dma-buf regions: cuMemGetHandleForAddressRange wants a range aligned
 * to the host page inside one allocation, and a range that starts where
 * the allocation starts is what every exporter takes (the test double
 * takes nothing else). So a region covers its whole allocation, start
 * rounded down and end up to the page, registered once at the
 * allocation's address (iova = start) and shared by every buffer in it.
 * Regions are cached by (start, size, buffer id): CUDA never gives a
 * buffer id twice in a process, so memory freed and allocated again at
 * the same address misses the cache and never reaches the old region.
 * A region holds its pages through the exporter until deregistered, so
 * unreferenced regions are dropped when the driver no longer knows their
 * allocation (looked at on every miss, which registers anyway) and
 * beyond WIB_GDR_KEEP of them.
 *
 * Copies: cuMemcpy needs a current context. A thread without one gets
 * the primary context of the buffer's device, as the CUDA runtime would
 * give it at its first call, and keeps it: changing it back per copy
 * would cost more than the copy of a small message.
 */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "plugins/cuda-common/cudrv.h"
#include "plugins/ib-verbs/ibv.h"

/* Unreferenced regions the cache keeps. */
#define WIB_GDR_KEEP 64
/* Devices whose dma-buf support is remembered (a bit each). */
#define WIB_GDR_DEVS 32

struct wib_gdr_ent {
    struct wib_gdr_ent *prev, *next;    /* most recently used first */
    uintptr_t start;
    size_t len;
    unsigned long long buffer_id;
    int refs;
    struct ibv_mr *mr[WIB_DEVS_MAX];
};

struct wib_gdr {
    struct wcu_drv drv;
    uint32_t dmabuf_devs;               /* bit per ordinal whose memory has dma-bufs */
    int peermem;                        /* nvidia-peermem is loaded */
    CUcontext *primary;                 /* per ordinal: retained when first needed */
    struct wib_gdr_ent *head, *tail;
    int n;
    unsigned long hits, misses, dropped;
};

static int peermem_loaded(void)
{
    return access("/sys/module/nvidia_peermem", F_OK) == 0 ||
           access("/sys/module/nv_peer_mem", F_OK) == 0;
}

/* ------------------------------------------------------------ set-up */

/* The devices with dma-buf support, as bits: 0 with why filled when none. */
static uint32_t dmabuf_devices(struct wib_ctx *ctx, struct wib_gdr *g, char *why, size_t cap)
{
    uint32_t bits = 0;
    char err[WCU_WHY_MAX] = "";

    if (!ctx->fns.reg_dmabuf_mr) {
        snprintf(why, cap, "%s has no ibv_reg_dmabuf_mr", ctx->fns.path);
        return 0;
    }
    if (!(g->drv.features & (1u << WCU_FEAT_RANGE_HANDLE))) {
        snprintf(why, cap, "the CUDA driver has no cuMemGetHandleForAddressRange (%s)",
                 g->drv.feature_why[WCU_FEAT_RANGE_HANDLE]);
        return 0;
    }
    for (int i = 0; i < g->drv.ndev && i < WIB_GDR_DEVS; i++) {
        struct wcu_dev dev;

        if (weft__cudrv_dev_query(&g->drv, i, &dev, err, sizeof(err)) == 0 &&
            (dev.features & WCU_DEV_DMA_BUF))
            bits |= 1u << i;
    }
    if (!bits)
        snprintf(why, cap, "no CUDA device supports dma-buf%s%s", err[0] ? ": " : "", err);
    return bits;
}

void weft__ibv_gdr_setup(struct wib_ctx *ctx)
{
    struct wib_gdr *g;
    char why[WCU_WHY_MAX], nodma[WCU_WHY_MAX];
    enum wcu_status st;
    int ndma = 0;

    ctx->gdr_mode = WIB_GDR_OFF;
    if (!ctx->prm.gdr) {
        TP_INFO(ctx, "gdr: off: WEFT_IB_GDR=0");
        return;
    }
    g = calloc(1, sizeof(*g));
    if (!g) {
        TP_INFO(ctx, "gdr: off: out of memory");
        return;
    }
    st = weft__cudrv_open(&g->drv, ctx->core, WIB_NAME, why, sizeof(why));
    if (st != WCU_OK) {
        /* A malformed WEFT_CUDA_* is a mistake worth seeing; the rest
         * only says this node has no GPU memory to offer. */
        TP_LOG(ctx, st == WCU_BAD_PARAM ? WEFT_TRANSPORT_LOG_WARN : WEFT_TRANSPORT_LOG_INFO,
               "gdr: off: %s", why);
        free(g);
        return;
    }
    g->primary = calloc((size_t)g->drv.ndev, sizeof(*g->primary));
    if (!g->primary) {
        TP_INFO(ctx, "gdr: off: out of memory");
        goto err_close;
    }
    g->peermem = peermem_loaded();
    g->dmabuf_devs = dmabuf_devices(ctx, g, nodma, sizeof(nodma));
    for (int i = 0; i < WIB_GDR_DEVS; i++)
        ndma += (g->dmabuf_devs >> i) & 1;
    if (ndma) {
        ctx->gdr_mode = WIB_GDR_DMABUF;
        TP_INFO(ctx, "gdr: on: dma-buf (%d of %d CUDA device%s%s)", ndma, g->drv.ndev,
                g->drv.ndev > 1 ? "s" : "",
                ndma < g->drv.ndev && g->peermem ? "; peermem for the others" : "");
    } else if (g->peermem) {
        ctx->gdr_mode = WIB_GDR_PEERMEM;
        TP_INFO(ctx, "gdr: on: peermem (no dma-buf: %s)", nodma);
    } else {
        TP_INFO(ctx, "gdr: off: no dma-buf (%s) and no nvidia-peermem module", nodma);
        goto err_close;
    }
    ctx->gdr = g;
    return;

err_close:
    free(g->primary);
    weft__cudrv_close(&g->drv);
    free(g);
}

/* ------------------------------------------------------------ the cache */

static void ent_unlink(struct wib_gdr *g, struct wib_gdr_ent *e)
{
    if (e->prev)
        e->prev->next = e->next;
    else
        g->head = e->next;
    if (e->next)
        e->next->prev = e->prev;
    else
        g->tail = e->prev;
    e->prev = e->next = NULL;
}

static void ent_push(struct wib_gdr *g, struct wib_gdr_ent *e)
{
    e->prev = NULL;
    e->next = g->head;
    if (g->head)
        g->head->prev = e;
    else
        g->tail = e;
    g->head = e;
}

static void ent_drop(struct wib_ctx *ctx, struct wib_gdr *g, struct wib_gdr_ent *e)
{
    ent_unlink(g, e);
    for (int i = 0; i < ctx->ndevs; i++)
        if (e->mr[i])
            ctx->fns.dereg_mr(e->mr[i]);
    free(e);
    g->n--;
    g->dropped++;
}

/* Unreferenced regions beyond keep go, least recently used first. */
static void trim(struct wib_ctx *ctx, struct wib_gdr *g, int keep)
{
    for (struct wib_gdr_ent *e = g->tail, *prev; e && g->n > keep; e = prev) {
        prev = e->prev;
        if (!e->refs)
            ent_drop(ctx, g, e);
    }
}

/* Unreferenced regions whose allocation the driver no longer knows (or
 * knows by another buffer id) go: their pages would stay allocated. */
static void sweep_freed(struct wib_ctx *ctx, struct wib_gdr *g)
{
    char why[256];

    for (struct wib_gdr_ent *e = g->head, *next; e; e = next) {
        struct wcu_ptr p;

        next = e->next;
        if (e->refs)
            continue;
        if (weft__cudrv_ptr_query(&g->drv, (void *)e->start, &p, why, sizeof(why)) != 0 ||
            p.mem != WCU_MEM_DEVICE || p.buffer_id != e->buffer_id)
            ent_drop(ctx, g, e);
    }
}

/* A context current on this thread: its own, else the primary context of
 * the device of a (or of b, when a is not device memory). */
static int ctx_ready(struct wib_ctx *ctx, const void *a, const void *b)
{
    struct wib_gdr *g = ctx->gdr;
    CUcontext cur = NULL;
    struct wcu_ptr p;
    char why[256], err[160];
    CUresult rc;
    CUdevice dev;
    int ord = 0;

    if (g->drv.fn.cuCtxGetCurrent(&cur) == CUDA_SUCCESS && cur)
        return 0;
    if (weft__cudrv_ptr_query(&g->drv, a, &p, why, sizeof(why)) == 0 && p.ordinal >= 0)
        ord = p.ordinal;
    else if (b && weft__cudrv_ptr_query(&g->drv, b, &p, why, sizeof(why)) == 0 &&
             p.ordinal >= 0)
        ord = p.ordinal;
    if (ord >= g->drv.ndev)
        ord = 0;
    rc = g->drv.fn.cuDeviceGet(&dev, ord);
    if (rc == CUDA_SUCCESS && !g->primary[ord])
        rc = g->drv.fn.cuDevicePrimaryCtxRetain(&g->primary[ord], dev);
    if (rc == CUDA_SUCCESS)
        rc = g->drv.fn.cuCtxSetCurrent(g->primary[ord]);
    if (rc != CUDA_SUCCESS) {
        weft__cudrv_err_text(&g->drv, rc, err, sizeof(err));
        weft__tp_error(&ctx->tp, "no CUDA context on this thread, and none for device %d: "
                       "%s", ord, err);
        return -1;
    }
    return 0;
}

/* A new region of [start, start + len), not yet referenced, or NULL with
 * the error set (*rc). */
static struct wib_gdr_ent *ent_new(struct wib_ctx *ctx, struct wib_gdr *g, uintptr_t start,
                                   size_t len, unsigned long long buffer_id, weft_result_t *rc)
{
    struct wib_gdr_ent *e;
    char err[160];
    CUresult cr;
    int fd = -1;

    if (ctx_ready(ctx, (const void *)start, NULL) != 0) {
        *rc = WEFT_ERR_SYSTEM;
        return NULL;
    }
    cr = g->drv.fn.cuMemGetHandleForAddressRange(&fd, (CUdeviceptr)start, len,
                                                 CU_MEM_RANGE_HANDLE_TYPE_DMA_BUF_FD, 0);
    if (cr != CUDA_SUCCESS) {
        weft__cudrv_err_text(&g->drv, cr, err, sizeof(err));
        weft__tp_error(&ctx->tp, "cuMemGetHandleForAddressRange(0x%llx, %zu) failed: %s",
                       (unsigned long long)start, len, err);
        *rc = WEFT_ERR_SYSTEM;
        return NULL;
    }
    e = calloc(1, sizeof(*e));
    if (!e) {
        weft__tp_error(&ctx->tp, "out of memory for a GPU memory region");
        *rc = WEFT_ERR_NO_MEMORY;
        goto out_close;
    }
    *rc = weft__ibv_mem_dmabuf(ctx, fd, 0, len, start, e->mr);
    if (*rc != WEFT_SUCCESS) {
        free(e);
        e = NULL;
        goto out_close;
    }
    e->start = start;
    e->len = len;
    e->buffer_id = buffer_id;
    ent_push(g, e);
    g->n++;
    TP_TRACE(ctx, "gdr: dma-buf region 0x%llx+%zu (buffer %llu) registered",
             (unsigned long long)start, len, buffer_id);

out_close:
    /* The regions hold the dma-buf; the descriptor is no longer needed. */
    close(fd);
    return e;
}

weft_result_t weft__ibv_gdr_register(struct wib_ctx *ctx, struct wib_mreg *m)
{
    struct wib_gdr *g = ctx->gdr;
    struct wib_gdr_ent *e;
    struct wcu_ptr p;
    uintptr_t start, end;
    weft_result_t rc;
    char why[256];

    m->gdr = NULL;
    if (!g)
        return WEFT_SUCCESS;
    if (weft__cudrv_ptr_query(&g->drv, m->addr, &p, why, sizeof(why)) != 0) {
        weft__tp_error(&ctx->tp, "%s", why);
        return WEFT_ERR_SYSTEM;
    }
    /* Page-locked host memory is host memory: registered by address. */
    if (p.mem == WCU_MEM_PINNED)
        return WEFT_SUCCESS;
    if (p.mem != WCU_MEM_DEVICE) {
        weft__tp_error(&ctx->tp, "%p is %s memory, not CUDA device memory", m->addr,
                       weft__cudrv_ptr_mem_name(p.mem));
        return WEFT_ERR_UNSUPPORTED;
    }
    if ((uintptr_t)m->addr + m->len > p.start + p.size) {
        weft__tp_error(&ctx->tp, "%zu bytes at %p run past their CUDA allocation (%zu bytes "
                       "at 0x%llx)", m->len, m->addr, p.size, (unsigned long long)p.start);
        return WEFT_ERR_INVALID_ARG;
    }
    if (p.ordinal < 0 || p.ordinal >= WIB_GDR_DEVS ||
        !(g->dmabuf_devs & (1u << p.ordinal))) {
        if (g->peermem)
            return WEFT_SUCCESS;
        weft__tp_error(&ctx->tp, "CUDA device %d has no dma-buf support, and the "
                       "nvidia-peermem module is not loaded", p.ordinal);
        return WEFT_ERR_UNSUPPORTED;
    }
    start = p.start & ~(uintptr_t)(ctx->page - 1);
    end = (p.start + p.size + ctx->page - 1) & ~(uintptr_t)(ctx->page - 1);
    for (e = g->head; e; e = e->next)
        if (e->start == start && e->len == end - start && e->buffer_id == p.buffer_id)
            break;
    if (e) {
        g->hits++;
        ent_unlink(g, e);
        ent_push(g, e);
    } else {
        g->misses++;
        sweep_freed(ctx, g);
        e = ent_new(ctx, g, start, end - start, p.buffer_id, &rc);
        if (!e)
            return rc;
    }
    e->refs++;
    m->gdr = e;
    return WEFT_SUCCESS;
}

void weft__ibv_gdr_release(struct wib_ctx *ctx, struct wib_mreg *m)
{
    struct wib_gdr *g = ctx->gdr;
    struct wib_gdr_ent *e = m->gdr;

    m->gdr = NULL;
    if (!g || !e)
        return;
    if (--e->refs == 0)
        trim(ctx, g, WIB_GDR_KEEP);
}

struct ibv_mr *weft__ibv_gdr_mr(const struct wib_gdr_ent *e, int dev)
{
    return e->mr[dev];
}

/* ------------------------------------------------------------ copies */

int weft__ibv_gdr_copy(struct wib_ctx *ctx, void *dst, const void *src, size_t n)
{
    struct wib_gdr *g = ctx->gdr;
    char err[160];
    CUresult rc;

    if (!g) {
        memcpy(dst, src, n);
        return 0;
    }
    if (ctx_ready(ctx, dst, src) != 0)
        return -1;
    rc = g->drv.fn.cuMemcpy((CUdeviceptr)(uintptr_t)dst, (CUdeviceptr)(uintptr_t)src, n);
    if (rc != CUDA_SUCCESS) {
        weft__cudrv_err_text(&g->drv, rc, err, sizeof(err));
        weft__tp_error(&ctx->tp, "cuMemcpy of %zu bytes from %p to %p failed: %s", n, src,
                       dst, err);
        TP_WARN(ctx, "gdr: cuMemcpy of %zu bytes from %p to %p failed: %s", n, src, dst, err);
        return -1;
    }
    return 0;
}

/* ------------------------------------------------------------ tear-down */

void weft__ibv_gdr_fini(struct wib_ctx *ctx)
{
    struct wib_gdr *g = ctx->gdr;

    if (!g)
        return;
    TP_INFO(ctx, "gdr: dma-buf regions: %lu hits, %lu registered, %lu dropped, %d left",
            g->hits, g->misses, g->dropped, g->n);
    while (g->head)
        ent_drop(ctx, g, g->head);
    /* A thread it was made current on keeps it: the program, whose
     * memory is on that device, may hold it too and use it there. */
    for (int i = 0; i < g->drv.ndev; i++) {
        CUdevice dev;

        if (g->primary[i] && g->drv.fn.cuDeviceGet(&dev, i) == CUDA_SUCCESS)
            g->drv.fn.cuDevicePrimaryCtxRelease(dev);
    }
    free(g->primary);
    weft__cudrv_close(&g->drv);
    free(g);
    ctx->gdr = NULL;
    ctx->gdr_mode = WIB_GDR_OFF;
}
