/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * ibv_gdr_none.c: GPU memory where weft is built without CUDA's headers
 * (ibv_gdr.c elsewhere). Without the driver the transport could not copy
 * the bytes of a small message out of device memory, so it announces no
 * CUDA memory, even where nvidia-peermem would let the NIC reach it: the
 * core stages device buffers through host memory instead.
 */
#include "config.h"

#include <string.h>

#include "plugins/ib-verbs/ibv.h"

void weft__ibv_gdr_setup(struct wib_ctx *ctx)
{
    ctx->gdr_mode = WIB_GDR_OFF;
    ctx->gdr = NULL;
    TP_INFO(ctx, "gdr: off: %s", ctx->prm.gdr ? "weft was built without CUDA"
                                              : "WEFT_IB_GDR=0");
}

void weft__ibv_gdr_fini(struct wib_ctx *ctx)
{
    (void)ctx;
}

weft_result_t weft__ibv_gdr_register(struct wib_ctx *ctx, struct wib_mreg *m)
{
    (void)ctx;
    m->gdr = NULL;
    return WEFT_SUCCESS;
}

void weft__ibv_gdr_release(struct wib_ctx *ctx, struct wib_mreg *m)
{
    (void)ctx;
    m->gdr = NULL;
}

struct ibv_mr *weft__ibv_gdr_mr(const struct wib_gdr_ent *e, int dev)
{
    (void)e;
    (void)dev;
    return NULL;
}

/* Only memory registered as CUDA without CUDA being announced comes
 * here, which can only be host memory (unit tests do so). */
int weft__ibv_gdr_copy(struct wib_ctx *ctx, void *dst, const void *src, size_t n)
{
    (void)ctx;
    memcpy(dst, src, n);
    return 0;
}
