/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * ibv_ud.c: knocks. Each rank has one UD QP on its first rail, whose
 * number is in its published address. A pair's set-up data goes through
 * the core's store (ibv_conn.c); what goes through here is only "look
 * there now" (KNOCK) and "I am at RTR" (READY), so a rank never polls the
 * store for peers that never called. Datagrams may be lost: ibv_conn.c
 * sends them again with back-off, and reads the store as a fall-back.
 */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "plugins/ib-verbs/ibv.h"

#define WIB_UD_GRH 40                   /* a UD receive starts with room for a GRH */

static unsigned char *rx_buf(struct wib_ctx *ctx, int i)
{
    return ctx->ud_mem + (size_t)i * WIB_UD_BUF;
}

static unsigned char *tx_buf(struct wib_ctx *ctx, int i)
{
    return ctx->ud_mem + (size_t)(WIB_UD_SLOTS + i) * WIB_UD_BUF;
}

static int post_rx(struct wib_ctx *ctx, int i)
{
    struct ibv_sge sge = {
        .addr = (uintptr_t)rx_buf(ctx, i),
        .length = WIB_UD_BUF,
        .lkey = ctx->ud_mr->lkey,
    };
    struct ibv_recv_wr wr, *bad;

    memset(&wr, 0, sizeof(wr));
    wr.wr_id = (uintptr_t)&ctx->ud_rx[i];
    wr.sg_list = &sge;
    wr.num_sge = 1;
    return ibv_post_recv(ctx->ud.qp, &wr, &bad);
}

weft_result_t weft__ibv_ud_setup(struct wib_ctx *ctx)
{
    struct wib_port_info *r0 = ctx->rail[0];
    struct wib_dev *d = &ctx->devs[r0->devi];
    struct ibv_qp_init_attr ia;
    struct ibv_qp_attr a;
    size_t bytes = 2 * WIB_UD_SLOTS * WIB_UD_BUF;
    int mask;

    if (posix_memalign((void **)&ctx->ud_mem, ctx->page, bytes) != 0) {
        weft__tp_error(&ctx->tp, "out of memory for the knock buffers");
        return WEFT_ERR_NO_MEMORY;
    }
    memset(ctx->ud_mem, 0, bytes);
    ctx->ud_mr = weft__ibv_reg_mr(&ctx->fns, d->pd, ctx->ud_mem, bytes, IBV_ACCESS_LOCAL_WRITE);
    if (!ctx->ud_mr)
        goto err_sys;
    ctx->ud.cqi = weft__ibv_cq_reserve(ctx, r0->devi, 2 * WIB_UD_SLOTS, -1);
    if (ctx->ud.cqi < 0)
        return WEFT_ERR_SYSTEM;
    memset(&ia, 0, sizeof(ia));
    ia.send_cq = ia.recv_cq = d->cqs[ctx->ud.cqi].cq;
    ia.qp_type = IBV_QPT_UD;
    ia.cap.max_send_wr = WIB_UD_SLOTS;
    ia.cap.max_recv_wr = WIB_UD_SLOTS;
    ia.cap.max_send_sge = ia.cap.max_recv_sge = 1;
    ctx->ud.qp = ctx->fns.create_qp(d->pd, &ia);
    if (!ctx->ud.qp)
        goto err_sys;
    ctx->ud.peer = -1;
    ctx->ud.lane = -1;
    ctx->ud.dev = r0->devi;
    ctx->ud.depth = WIB_UD_SLOTS;
    ctx->ud.sq_id.type = WIB_WRID_UD_SQ;
    ctx->ud.sq_id.q = &ctx->ud;
    weft__ibv_qp_init_attr(&a, &mask, r0->port, 0);
    if (ctx->fns.modify_qp(ctx->ud.qp, &a, mask) != 0)
        goto err_sys;
    memset(&a, 0, sizeof(a));
    a.qp_state = IBV_QPS_RTR;
    if (ctx->fns.modify_qp(ctx->ud.qp, &a, IBV_QP_STATE) != 0)
        goto err_sys;
    a.qp_state = IBV_QPS_RTS;
    a.sq_psn = weft__ibv_psn();
    if (ctx->fns.modify_qp(ctx->ud.qp, &a, IBV_QP_STATE | IBV_QP_SQ_PSN) != 0)
        goto err_sys;
    for (int i = 0; i < WIB_UD_SLOTS; i++) {
        ctx->ud_rx[i].type = WIB_WRID_UD_RX;
        ctx->ud_rx[i].index = (uint16_t)i;
        ctx->ud_rx[i].q = &ctx->ud;
        if (post_rx(ctx, i) != 0)
            goto err_sys;
    }
    ctx->self.ud_qpn = ctx->ud.qp->qp_num;
    return WEFT_SUCCESS;

err_sys:
    weft__tp_error(&ctx->tp, "%s: cannot set up the UD QP that connections knock on: %s",
                   d->name, strerror(errno ? errno : EIO));
    return WEFT_ERR_SYSTEM;
}

void weft__ibv_ud_fini(struct wib_ctx *ctx)
{
    if (ctx->ud.qp)
        ctx->fns.destroy_qp(ctx->ud.qp);
    ctx->ud.qp = NULL;
    if (ctx->ud_mr)
        ctx->fns.dereg_mr(ctx->ud_mr);
    ctx->ud_mr = NULL;
    free(ctx->ud_mem);
    ctx->ud_mem = NULL;
}

int weft__ibv_ud_send(struct wib_ctx *ctx, int peer, int type)
{
    struct wib_peer *p = &ctx->peers[peer];
    struct wib_knock k;
    struct ibv_sge sge;
    struct ibv_send_wr wr, *bad;
    int slot = ctx->ud_tx_next;

    if (!p->ah) {
        struct ibv_ah_attr ah;

        weft__ibv_ah_attr(&ah, &ctx->prm, &ctx->self.rail[0], ctx->rail[0]->gid.index,
                          &p->addr.rail[0]);
        p->ah = ctx->fns.create_ah(ctx->devs[ctx->ud.dev].pd, &ah);
        if (!p->ah) {
            snprintf(p->why, sizeof(p->why), "cannot make an address handle towards its "
                     "UD QP: %s", strerror(errno));
            return -1;
        }
    }
    /* Every knock is signalled, so at most WIB_UD_SLOTS are in flight. */
    if (ctx->ud.head - ctx->ud.tail >= (uint32_t)ctx->ud.depth)
        return 0;           /* sent again by the next timer */
    memset(&k, 0, sizeof(k));
    k.magic = WIB_ADDR_MAGIC;
    k.type = (uint16_t)type;
    k.from = (uint32_t)ctx->rank;
    k.gen = p->gen;
    k.nonce = ctx->self.nonce;
    memcpy(tx_buf(ctx, slot), &k, sizeof(k));
    ctx->ud_tx_next = (slot + 1) % WIB_UD_SLOTS;
    sge.addr = (uintptr_t)tx_buf(ctx, slot);
    sge.length = sizeof(k);
    sge.lkey = ctx->ud_mr->lkey;
    memset(&wr, 0, sizeof(wr));
    wr.wr_id = (uintptr_t)&ctx->ud.sq_id;
    wr.sg_list = &sge;
    wr.num_sge = 1;
    wr.opcode = IBV_WR_SEND;
    wr.send_flags = IBV_SEND_SIGNALED;
    wr.wr.ud.ah = p->ah;
    wr.wr.ud.remote_qpn = p->addr.ud_qpn;
    wr.wr.ud.remote_qkey = WIB_QKEY;
    if (ibv_post_send(ctx->ud.qp, &wr, &bad) != 0) {
        snprintf(p->why, sizeof(p->why), "cannot send a knock: %s", strerror(errno));
        return -1;
    }
    ctx->ud.head++;
    return 0;
}

void weft__ibv_ud_recv(struct wib_ctx *ctx, const struct ibv_wc *wc)
{
    const struct wib_wrid *id = (const struct wib_wrid *)(uintptr_t)wc->wr_id;
    struct wib_knock k;

    if (id->type == WIB_WRID_UD_SQ) {
        ctx->ud.tail++;
        if (wc->status != IBV_WC_SUCCESS && !ctx->finalizing)
            TP_INFO(ctx, "a knock was not sent: %s", weft__ibv_wc_status_name(wc->status));
        return;
    }
    if (wc->status == IBV_WC_SUCCESS && wc->byte_len >= WIB_UD_GRH + sizeof(k)) {
        memcpy(&k, rx_buf(ctx, id->index) + WIB_UD_GRH, sizeof(k));
        if (k.magic == WIB_ADDR_MAGIC && (int)k.from >= 0 && (int)k.from < ctx->size)
            weft__ibv_conn_knocked(ctx, &k);
    }
    if (!ctx->finalizing && wc->status != IBV_WC_WR_FLUSH_ERR && post_rx(ctx, id->index) != 0)
        TP_WARN(ctx, "cannot post a knock receive again: %s", strerror(errno));
}
