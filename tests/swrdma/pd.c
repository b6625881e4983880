/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * pd.c: protection domains. A PD is a number on the fabric: memory
 * regions and QPs carry it, and a NIC refuses a key whose region's PD is
 * not the PD of the QP it arrived on. Freeing a PD that regions, QPs or
 * address handles still use fails with EBUSY, as the kernel's does.
 */
#include "config.h"

#include <errno.h>
#include <stdlib.h>

#include "tests/swrdma/swrdma.h"

SW_DEFAULT(ibv_alloc_pd) struct ibv_pd *sw_alloc_pd(struct ibv_context *c);
struct ibv_pd *sw_alloc_pd(struct ibv_context *c)
{
    if (!sw_ctx_ok(c)) {
        errno = EINVAL;
        return NULL;
    }
    struct sw_reg_host *h = &sw.reg->host[sw.host];
    if (sw_reg_count(&h->n_pd, h->conf.lim.max_pd, 1) < 0) {
        errno = ENOMEM;
        return NULL;
    }
    struct sw_pd *pd = calloc(1, sizeof(*pd));
    if (!pd) {
        sw_reg_count(&h->n_pd, h->conf.lim.max_pd, -1);
        errno = ENOMEM;
        return NULL;
    }
    pd->id = sw_reg_new_pd();
    pd->pd.context = c;
    pd->pd.handle = pd->id;
    struct sw_context *ctx = sw_ctx(c);
    pthread_mutex_lock(&ctx->lock);
    ctx->n_pd++;
    pthread_mutex_unlock(&ctx->lock);
    return &pd->pd;
}

SW_DEFAULT(ibv_dealloc_pd) int sw_dealloc_pd(struct ibv_pd *ibpd);
int sw_dealloc_pd(struct ibv_pd *ibpd)
{
    if (!ibpd || !sw_ctx_ok(ibpd->context))
        return EINVAL;
    struct sw_pd *pd = SW_CONTAINER(ibpd, struct sw_pd, pd);
    uint32_t users = atomic_load(&pd->users);
    if (users) {
        sw_check_report("ibv_dealloc_pd() on a PD that %u memory regions, QPs or AHs still "
                        "use (it fails with EBUSY)", users);
        return EBUSY;
    }
    struct sw_context *ctx = sw_ctx(ibpd->context);
    pthread_mutex_lock(&ctx->lock);
    ctx->n_pd--;
    pthread_mutex_unlock(&ctx->lock);
    struct sw_reg_host *h = &sw.reg->host[sw.host];
    sw_reg_count(&h->n_pd, h->conf.lim.max_pd, -1);
    free(pd);
    return 0;
}
