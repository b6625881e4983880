/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * shm_cuda_none.c: the shm transport built without CUDA's headers: host
 * memory only, as plugins/common registers it, and no device buffer ever
 * reaches the paths below (ctx->cuda stays NULL, so nothing calls them).
 */
#include "config.h"

#include <string.h>

#include "plugins/common/tp_mem.h"
#include "plugins/shm/shm.h"

void weft__shm_cuda_setup(struct shm_ctx *ctx, int on)
{
    (void)on;
    TP_INFO(ctx, "cuda: off: built without CUDA");
}

int weft__shm_cuda_announce(const struct shm_ctx *ctx)
{
    (void)ctx;
    return 0;
}

weft_result_t weft__shm_mem_register(void *vctx, void *buf, size_t len, int mem_type,
                                     void **mh)
{
    return weft__tp_mem_register(vctx, buf, len, mem_type, mh);
}

weft_result_t weft__shm_mem_deregister(void *vctx, void *mh)
{
    return weft__tp_mem_deregister(vctx, mh);
}

int weft__shm_cuda_copy(void *vctx, void *dst, const void *src, size_t n)
{
    (void)vctx;
    memcpy(dst, src, n);
    return 0;
}

int weft__shm_cuda_ipc_rts(struct shm_ctx *ctx, int peer, const void *mh, const void *buf,
                           struct shm_ipc_rts *rts)
{
    return 0;
}

int weft__shm_cuda_ipc_read(struct shm_ctx *ctx, int peer, const struct shm_ipc_rts *rts,
                            void *dst, size_t n)
{
    weft__tp_error(&ctx->tp, "rank %d sent GPU memory, and this build has no CUDA", peer);
    return -1;
}

void weft__shm_cuda_forget_peer(struct shm_ctx *ctx, int peer)
{
}

void weft__shm_cuda_fini(struct shm_ctx *ctx)
{
}
