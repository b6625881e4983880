/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * mctx.c: matching contexts: their set-up and abort (mctx.h).
 */
#include "config.h"

#include "core/progress/mctx.h"
#include "core/progress/request.h"

void weft__mctx_init(weft__mctx_t *ctx, weft__instance_t *inst, uint32_t context_id, int n,
                     const int *world_ranks, const int *member_of)
{
    *ctx = (weft__mctx_t){ 0 };
    ctx->inst = inst;
    ctx->context_id = context_id;
    ctx->size = n;
    ctx->world_ranks = world_ranks;
    ctx->member_of = member_of;
    ctx->single_plugin = inst->wire.peers[world_ranks[0]].plugin;
    for (int r = 1; r < n; r++)
        if (inst->wire.peers[world_ranks[r]].plugin != ctx->single_plugin)
            ctx->single_plugin = NULL;
}

void weft__mctx_abort(weft__mctx_t *ctx)
{
    ctx->aborted = 1;
    weft__request_cancel_all(ctx, WEFT_ERR_ABORTED);
    if (ctx->sibling) {
        ctx->sibling->aborted = 1;
        weft__request_cancel_all(ctx->sibling, WEFT_ERR_ABORTED);
    }
}

void weft__mctx_abort_pending(weft__mctx_t *ctx)
{
    /* Acquire: pairs with the release of the thread that read the notice.
     * Cleared first: a second notice (another member aborting too) that
     * sets it again finds the context aborted and changes nothing. */
    if (!__atomic_load_n(&ctx->abort_pending, __ATOMIC_ACQUIRE))
        return;
    __atomic_store_n(&ctx->abort_pending, 0, __ATOMIC_RELAXED);
    if (ctx->sibling)
        __atomic_store_n(&ctx->sibling->abort_pending, 0, __ATOMIC_RELAXED);
    if (!ctx->aborted)
        weft__mctx_abort(ctx);
}

void weft__mctx_mark_aborted(weft__mctx_t *ctx)
{
    /* Release: the context's thread reads the flag, then its requests.
     * Both contexts, so that a wait on a collective's round sees it too. */
    if (ctx->sibling)
        __atomic_store_n(&ctx->sibling->abort_pending, 1, __ATOMIC_RELEASE);
    __atomic_store_n(&ctx->abort_pending, 1, __ATOMIC_RELEASE);
}
