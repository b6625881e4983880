/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * ibv_mem.c: memory regions. mem_register gives the caller real regions,
 * one per device a rail uses, from the rc_user caches; buffers the core
 * did not register are registered on the fly from the rc_fly caches
 * where that cannot go stale, and staged otherwise (ibv.h, Registration).
 * CUDA memory registers through ibv_gdr.c's dma-buf regions, or by
 * address where only peermem reaches it. Also the eager bounce slots and
 * the staging windows, registered once at init, and the copies the
 * protocols make, which must not touch device memory with the CPU.
 */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "plugins/ib-verbs/ibv.h"

/* Access of every region: the peer writes into it and reads it (GPU
 * flush, puts), and relaxed ordering where the library can ask for it. */
#define WIB_ACCESS (IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ | \
                    IBV_ACCESS_RELAXED_ORDERING)
/* Regions made on the fly without ODP that the cache may keep. */
#define WIB_FLY_ENTRIES 4096

/* ------------------------------------------------------------ the caches' registration */

static int rc_reg(void *arg, uintptr_t start, size_t len, void **mr)
{
    struct wib_regarg *ra = arg;
    struct ibv_mr *m = weft__ibv_reg_mr(ra->fns, ra->pd, (void *)start, len, ra->access);

    if (!m)
        return errno ? errno : ENOMEM;
    *mr = m;
    return 0;
}

static void rc_dereg(void *arg, void *mr)
{
    struct wib_regarg *ra = arg;

    ra->fns->dereg_mr(mr);
}

static const struct wib_rc_ops rc_ops = { rc_reg, rc_dereg };

/* ------------------------------------------------------------ pools */

static int *free_stack(int n)
{
    int *s = malloc((size_t)n * sizeof(*s));

    for (int i = 0; s && i < n; i++)
        s[i] = n - 1 - i;
    return s;
}

int weft__ibv_bounce_get(struct wib_ctx *ctx)
{
    return ctx->nbounce_free ? ctx->bounce_free[--ctx->nbounce_free] : -1;
}

void weft__ibv_bounce_put(struct wib_ctx *ctx, int slot)
{
    ctx->bounce_free[ctx->nbounce_free++] = slot;
}

int weft__ibv_stage_get(struct wib_ctx *ctx, int for_recv)
{
    int recv_max = ctx->nstage / 2, send_max = ctx->nstage - recv_max;
    int held_send = ctx->nstage - ctx->nstage_free - ctx->nstage_recv, slot;

    if (!ctx->nstage_free || (for_recv ? ctx->nstage_recv >= recv_max : held_send >= send_max))
        return -1;
    slot = ctx->stage_free[--ctx->nstage_free];
    ctx->stage_recv[slot] = (unsigned char)(for_recv != 0);
    ctx->nstage_recv += for_recv != 0;
    return slot;
}

int weft__ibv_stage_low(const struct wib_ctx *ctx)
{
    int send_max = ctx->nstage - ctx->nstage / 2;
    int held_send = ctx->nstage - ctx->nstage_free - ctx->nstage_recv;

    return held_send * 2 >= send_max;
}

void weft__ibv_stage_put(struct wib_ctx *ctx, int slot)
{
    ctx->nstage_recv -= ctx->stage_recv[slot];
    ctx->stage_recv[slot] = 0;
    ctx->stage_free[ctx->nstage_free++] = slot;
}

weft_result_t weft__ibv_mem_setup(struct wib_ctx *ctx)
{
    int d0 = ctx->rail[0]->devi;
    size_t bytes;

    for (int i = 0; i < ctx->ndevs; i++) {
        struct wib_dev *d = &ctx->devs[i];

        if (!d->used)
            continue;
        d->ra_user.fns = d->ra_fly.fns = &ctx->fns;
        d->ra_user.pd = d->ra_fly.pd = d->pd;
        d->ra_user.access = WIB_ACCESS;
        d->ra_fly.access = WIB_ACCESS | (d->odp ? IBV_ACCESS_ON_DEMAND : 0);
        /* A region of mem_register goes with its last user: kept, it
         * could outlive the memory (max_bytes 0). */
        weft__ibv_rc_init(&d->rc_user, &rc_ops, &d->ra_user, ctx->page, 0, 1);
        weft__ibv_rc_init(&d->rc_fly, &rc_ops, &d->ra_fly, ctx->page, ctx->prm.rcache_max,
                          WIB_FLY_ENTRIES);
    }
    ctx->nbounce = ctx->prm.sq_depth;
    bytes = (size_t)ctx->nbounce * ctx->prm.eager_size;
    if (posix_memalign((void **)&ctx->bounce, ctx->page, bytes) != 0)
        goto err_nomem;
    ctx->bounce_mr = weft__ibv_reg_mr(&ctx->fns, ctx->devs[d0].pd, ctx->bounce, bytes,
                                      WIB_ACCESS);
    if (!ctx->bounce_mr)
        goto err_reg;
    ctx->bounce_free = free_stack(ctx->nbounce);
    ctx->nbounce_free = ctx->nbounce;
    ctx->nstage = (int)(ctx->prm.staging / ctx->prm.chunk);
    bytes = (size_t)ctx->nstage * ctx->prm.chunk;
    if (posix_memalign((void **)&ctx->stage, ctx->page, bytes) != 0)
        goto err_nomem;
    for (int i = 0; i < ctx->ndevs; i++) {
        if (!ctx->devs[i].used)
            continue;
        ctx->stage_mr[i] = weft__ibv_reg_mr(&ctx->fns, ctx->devs[i].pd, ctx->stage, bytes,
                                            WIB_ACCESS);
        if (!ctx->stage_mr[i])
            goto err_reg;
    }
    ctx->stage_free = free_stack(ctx->nstage);
    ctx->nstage_free = ctx->nstage;
    ctx->stage_recv = calloc((size_t)ctx->nstage, 1);
    ctx->nstage_recv = 0;
    if (!ctx->bounce_free || !ctx->stage_free || !ctx->stage_recv)
        goto err_nomem;
    return WEFT_SUCCESS;

err_reg:
    weft__tp_error(&ctx->tp, "cannot register %zu bytes of bounce and staging buffers: %s%s",
                   bytes, strerror(errno ? errno : ENOMEM),
                   errno == ENOMEM || errno == EAGAIN ? " (RLIMIT_MEMLOCK too low? see "
                   "weft-ib-verbs(7))" : "");
    return WEFT_ERR_SYSTEM;
err_nomem:
    weft__tp_error(&ctx->tp, "out of memory for bounce and staging buffers");
    return WEFT_ERR_NO_MEMORY;
}

void weft__ibv_mem_fini(struct wib_ctx *ctx)
{
    /* Handles the program never deregistered: their cache entries go
     * with the caches below. */
    while (ctx->user_regs) {
        struct wib_mreg *m = ctx->user_regs;

        ctx->user_regs = m->next;
        for (int i = 0; i < ctx->ndevs; i++)
            if (m->own[i])
                ctx->fns.dereg_mr(m->own[i]);
        if (m->gdr)
            weft__ibv_gdr_release(ctx, m);
        free(m);
    }
    for (int i = 0; i < ctx->ndevs; i++) {
        struct wib_dev *d = &ctx->devs[i];

        if (ctx->stage_mr[i])
            ctx->fns.dereg_mr(ctx->stage_mr[i]);
        ctx->stage_mr[i] = NULL;
        if (d->rc_user.ops)
            weft__ibv_rc_fini(&d->rc_user);
        if (d->rc_fly.ops)
            weft__ibv_rc_fini(&d->rc_fly);
    }
    if (ctx->bounce_mr)
        ctx->fns.dereg_mr(ctx->bounce_mr);
    ctx->bounce_mr = NULL;
    free(ctx->bounce);
    free(ctx->stage);
    free(ctx->bounce_free);
    free(ctx->stage_free);
    free(ctx->stage_recv);
    ctx->stage_recv = NULL;
    ctx->bounce = ctx->stage = NULL;
    ctx->bounce_free = ctx->stage_free = NULL;
}

/* ------------------------------------------------------------ handles */

static void mreg_free(struct wib_ctx *ctx, struct wib_mreg *m)
{
    /* A handle that failed half-made was never on the list. */
    if (m->user && (m->prev || ctx->user_regs == m)) {
        if (m->prev)
            m->prev->next = m->next;
        else
            ctx->user_regs = m->next;
        if (m->next)
            m->next->prev = m->prev;
        if (m->mem_type == WEFT_TRANSPORT_MEM_CUDA)
            ctx->cuda_regs--;
    }
    if (m->gdr)
        weft__ibv_gdr_release(ctx, m);
    for (int i = 0; i < ctx->ndevs; i++) {
        struct wib_dev *d = &ctx->devs[i];

        if (m->ent[i])
            weft__ibv_rc_put(m->user ? &d->rc_user : &d->rc_fly, m->ent[i]);
        if (m->own[i])
            ctx->fns.dereg_mr(m->own[i]);
    }
    free(m);
}

/* A handle with an entry of cache kind (user or not) on every used
 * device; NULL with errno set. */
static struct wib_mreg *mreg_new(struct wib_ctx *ctx, void *buf, size_t len, int mem_type,
                                 int user)
{
    struct wib_mreg *m = calloc(1, sizeof(*m));

    if (!m) {
        errno = ENOMEM;
        return NULL;
    }
    m->addr = buf;
    m->len = len;
    m->mem_type = mem_type;
    m->user = user;
    for (int i = 0; i < ctx->ndevs; i++) {
        struct wib_dev *d = &ctx->devs[i];
        int rc;

        if (!d->used)
            continue;
        rc = weft__ibv_rc_get(user ? &d->rc_user : &d->rc_fly, buf, len, &m->ent[i]);
        if (rc != 0) {
            mreg_free(ctx, m);
            errno = rc;
            return NULL;
        }
    }
    return m;
}

/* A handle of mem_register joins the list receives are looked up in. */
static void user_link(struct wib_ctx *ctx, struct wib_mreg *m)
{
    m->next = ctx->user_regs;
    if (m->next)
        m->next->prev = m;
    ctx->user_regs = m;
    if (m->mem_type == WEFT_TRANSPORT_MEM_CUDA)
        ctx->cuda_regs++;
}

/* CUDA memory through a dma-buf region: 1 done (*out set), 0 register it
 * by address instead (peermem), -1 failed (the error set, *rc). */
static int cuda_register(struct wib_ctx *ctx, void *buf, size_t len, struct wib_mreg **out,
                         weft_result_t *rc)
{
    struct wib_mreg *m = calloc(1, sizeof(*m));

    if (!m) {
        weft__tp_error(&ctx->tp, "out of memory for a registration");
        *rc = WEFT_ERR_NO_MEMORY;
        return -1;
    }
    m->addr = buf;
    m->len = len;
    m->mem_type = WEFT_TRANSPORT_MEM_CUDA;
    m->user = 1;
    *rc = weft__ibv_gdr_register(ctx, m);
    if (*rc != WEFT_SUCCESS || !m->gdr) {
        free(m);
        return *rc != WEFT_SUCCESS ? -1 : 0;
    }
    *out = m;
    return 1;
}

weft_result_t weft__ibv_mem_register(void *vctx, void *buf, size_t len, int mem_type,
                                     void **mhandle)
{
    struct wib_ctx *ctx = vctx;
    struct wib_mreg *m = NULL;
    weft_result_t rc;

    if (!mhandle || (!buf && len)) {
        weft__tp_error(&ctx->tp, "mem_register: %s is NULL", mhandle ? "buf" : "mhandle");
        return WEFT_ERR_INVALID_ARG;
    }
    if (mem_type != WEFT_TRANSPORT_MEM_HOST && mem_type != WEFT_TRANSPORT_MEM_CUDA) {
        weft__tp_error(&ctx->tp, "memory type %d is neither host nor CUDA memory", mem_type);
        return WEFT_ERR_UNSUPPORTED;
    }
    if (mem_type == WEFT_TRANSPORT_MEM_CUDA && ctx->gdr_mode != WIB_GDR_OFF) {
        switch (cuda_register(ctx, buf, len, &m, &rc)) {
        case 1:
            user_link(ctx, m);
            *mhandle = m;
            return WEFT_SUCCESS;
        case -1:
            return rc;
        default:
            break;
        }
    }
    m = mreg_new(ctx, buf, len, mem_type, 1);
    if (!m) {
        int err = errno;

        if (mem_type == WEFT_TRANSPORT_MEM_CUDA)
            weft__tp_error(&ctx->tp, "cannot register %zu bytes of GPU memory at %p: %s "
                           "(by address, GPU memory needs the nvidia-peermem module)", len,
                           buf, strerror(err));
        else
            weft__tp_error(&ctx->tp, "cannot register %zu bytes at %p: %s%s", len, buf,
                           strerror(err), err == ENOMEM || err == EAGAIN ?
                           " (RLIMIT_MEMLOCK too low? see weft-ib-verbs(7))" : "");
        return err == ENOMEM ? WEFT_ERR_NO_MEMORY : WEFT_ERR_SYSTEM;
    }
    user_link(ctx, m);
    *mhandle = m;
    return WEFT_SUCCESS;
}

weft_result_t weft__ibv_mem_deregister(void *vctx, void *mhandle)
{
    if (mhandle)
        mreg_free(vctx, mhandle);
    return WEFT_SUCCESS;
}

weft_result_t weft__ibv_mem_export(void *vctx, void *mhandle, void *rkey, size_t *len)
{
    struct wib_ctx *ctx = vctx;
    const struct wib_mreg *m = mhandle;
    struct wib_rkey k;

    if (!m || !rkey || !len || *len < sizeof(k)) {
        weft__tp_error(&ctx->tp, "mem_export needs a handle and %zu bytes", sizeof(k));
        return WEFT_ERR_INVALID_ARG;
    }
    memset(&k, 0, sizeof(k));
    k.magic = WIB_RKEY_MAGIC;
    k.nrails = (uint32_t)ctx->nrails;
    k.addr = (uint64_t)(uintptr_t)m->addr;
    k.len = m->len;
    for (int r = 0; r < ctx->nrails; r++)
        k.rkey[r] = weft__ibv_mem_rkey(m, ctx->rail[r]->devi);
    memcpy(rkey, &k, sizeof(k));
    *len = sizeof(k);
    return WEFT_SUCCESS;
}

struct wib_mreg *weft__ibv_mem_for(struct wib_ctx *ctx, void *buf, size_t len, void *mh,
                                   int *own)
{
    struct wib_mreg *m = mh;

    *own = 0;
    if (m && (uintptr_t)buf >= (uintptr_t)m->addr &&
        (uintptr_t)buf + len <= (uintptr_t)m->addr + m->len)
        return m;
    /* The program registered it without saying so here (a receive): the
     * handle lives until mem_deregister, which must come after. */
    for (m = ctx->user_regs; m; m = m->next)
        if ((uintptr_t)buf >= (uintptr_t)m->addr &&
            (uintptr_t)buf + len <= (uintptr_t)m->addr + m->len)
            return m;
    if (!ctx->reg_fly || len < ctx->prm.reg_min)
        return NULL;
    m = mreg_new(ctx, buf, len, WEFT_TRANSPORT_MEM_HOST, 0);
    if (!m) {
        /* Staging still works: say it once per cause, at INFO. */
        TP_INFO(ctx, "cannot register %zu bytes on the fly (%s): staged instead", len,
                strerror(errno));
        return NULL;
    }
    *own = 1;
    return m;
}

void weft__ibv_mem_done(struct wib_ctx *ctx, struct wib_mreg *m, int own)
{
    if (m && own)
        mreg_free(ctx, m);
}

static const struct ibv_mr *mreg_mr(const struct wib_mreg *m, int dev)
{
    if (m->own[dev])
        return m->own[dev];
    if (m->gdr)
        return weft__ibv_gdr_mr(m->gdr, dev);
    return m->ent[dev] ? m->ent[dev]->mr : NULL;
}

uint32_t weft__ibv_mem_lkey(const struct wib_mreg *m, int dev)
{
    const struct ibv_mr *mr = mreg_mr(m, dev);

    return mr ? mr->lkey : 0;
}

uint32_t weft__ibv_mem_rkey(const struct wib_mreg *m, int dev)
{
    const struct ibv_mr *mr = mreg_mr(m, dev);

    return mr ? mr->rkey : 0;
}

weft_result_t weft__ibv_mem_dmabuf(struct wib_ctx *ctx, int fd, uint64_t offset, size_t len,
                                   uint64_t iova, struct ibv_mr *mr[WIB_DEVS_MAX])
{
    if (!ctx->fns.reg_dmabuf_mr) {
        weft__tp_error(&ctx->tp, "%s has no ibv_reg_dmabuf_mr (rdma-core 34 or later "
                       "registers dma-buf memory)", ctx->fns.path);
        return WEFT_ERR_UNSUPPORTED;
    }
    for (int i = 0; i < ctx->ndevs; i++) {
        mr[i] = NULL;
        if (!ctx->devs[i].used)
            continue;
        /* The iova is the address the peers write to: the GPU pointer. */
        mr[i] = ctx->fns.reg_dmabuf_mr(ctx->devs[i].pd, offset, len, iova, fd,
                                       WIB_ACCESS & ~IBV_ACCESS_RELAXED_ORDERING);
        if (!mr[i]) {
            int err = errno;

            weft__tp_error(&ctx->tp, "%s: cannot register dma-buf %d (%zu bytes at 0x%llx): "
                           "%s", ctx->devs[i].name, fd, len, (unsigned long long)iova,
                           strerror(err));
            while (i-- > 0)
                if (mr[i]) {
                    ctx->fns.dereg_mr(mr[i]);
                    mr[i] = NULL;
                }
            return err == ENOMEM ? WEFT_ERR_NO_MEMORY : WEFT_ERR_SYSTEM;
        }
    }
    return WEFT_SUCCESS;
}

int weft__ibv_mem_is_cuda(const struct wib_ctx *ctx, const void *buf, void *mh)
{
    const struct wib_mreg *m = mh;

    if (m)
        return m->mem_type == WEFT_TRANSPORT_MEM_CUDA;
    if (!ctx->cuda_regs || !buf)
        return 0;
    for (m = ctx->user_regs; m; m = m->next)
        if (m->mem_type == WEFT_TRANSPORT_MEM_CUDA && (uintptr_t)buf >= (uintptr_t)m->addr &&
            (uintptr_t)buf < (uintptr_t)m->addr + m->len)
            return 1;
    return 0;
}

int weft__ibv_mem_copy(struct wib_ctx *ctx, void *dst, const void *src, size_t n, int cuda)
{
    if (!n)
        return 0;
    if (cuda) {
        if (weft__ibv_gdr_copy(ctx, dst, src, n) != 0)
            return -1;
        ctx->st.copied_cuda += n;
        return 0;
    }
    memcpy(dst, src, n);
    ctx->st.copied += n;
    return 0;
}
