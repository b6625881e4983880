/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * ibv_alive.c: a dead peer noticed while we wait for it. A rank that
 * waits for a message has nothing in flight towards its sender, so no
 * retry of ours would ever run out if the sender died, lost its port or
 * fell off the fabric. While this rank waits for anything (a posted
 * receive, a send not yet done), each pair that is up gets a zero-length
 * RDMA write every WEFT_IB_KEEPALIVE ms. The peer's NIC acknowledges it
 * without the peer's CPU, so a busy peer is never mistaken for a dead
 * one; a dead peer's QPs are gone and nothing answers, so the write ends
 * in IBV_WC_RETRY_EXC_ERR after WEFT_IB_TIMEOUT x WEFT_IB_RETRY_CNT and
 * fails the pair with WEFT_ERR_PEER_LOST like any error completion. A
 * pair whose send queue is full is not probed: its own traffic will tell.
 */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "plugins/ib-verbs/ibv.h"

static int waited_on(const struct wib_ctx *ctx, const struct wib_peer *p)
{
    return ctx->tp.posted.head || p->sq.head || p->rts.head || p->rv_head || p->sw_head;
}

static void probe(struct wib_ctx *ctx, struct wib_peer *p)
{
    struct wib_qpx *q = &p->lane[0];
    int rc;

    if (weft__ibv_sq_room(q) <= 1)
        return;
    /* Signalled: its slot comes back even if nothing follows it. */
    rc = weft__ibv_sq_ping(ctx, p, q);
    if (rc != 0 && rc != EAGAIN) {
        char why[96];

        snprintf(why, sizeof(why), "cannot post a keepalive probe: %s", strerror(rc));
        weft__ibv_conn_fail(ctx, (int)(p - ctx->peers), WEFT_ERR_PEER_LOST, why);
    }
}

int64_t weft__ibv_keepalive_due(const struct wib_ctx *ctx)
{
    if (ctx->prm.keepalive_ms <= 0)
        return 0;
    for (const struct wib_peer *p = ctx->active; p; p = p->anext)
        if (p->state == WIB_P_UP && waited_on(ctx, p))
            return ctx->next_keepalive_ms;
    return 0;
}

void weft__ibv_keepalive(struct wib_ctx *ctx)
{
    int64_t now;

    if (ctx->prm.keepalive_ms <= 0)
        return;
    now = weft__ibv_now_ms();
    if (now < ctx->next_keepalive_ms)
        return;
    ctx->next_keepalive_ms = now + ctx->prm.keepalive_ms;
    for (struct wib_peer *p = ctx->active; p; p = p->anext)
        if (p->state == WIB_P_UP && !p->lost && !p->departed && waited_on(ctx, p))
            probe(ctx, p);
}
