/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * ibv_conn.c: pairs, connected on first use (ibv.h, Connections).
 *
 *   IDLE --first send, or its KNOCK--> WAIT_INFO: QPs created and at
 *     INIT, every receive posted, our record stored under
 *     ib-verbs/c/<me>/<peer>/<gen>, KNOCK sent
 *   WAIT_INFO --its record read--> WAIT_READY: RTR, RTS, READY sent
 *   WAIT_READY --its READY or READY_ACK--> UP: sends may go
 *
 * Receives are posted before the record is stored, and nothing is sent
 * before the peer said it reached RTR, so no packet ever meets a QP that
 * cannot take it. KNOCK and READY are sent again with back-off (10 ms
 * doubling to 1 s) and the store is read as a fall-back, until
 * WEFT_TIMEOUT; a side that is UP answers a READY with READY_ACK, which
 * nobody answers, so the exchange ends. A knock of a newer generation
 * starts the pair over (the peer lost its side); older ones are stale.
 */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "plugins/ib-verbs/ibv.h"

#define WIB_BACKOFF_START_MS 10
#define WIB_BACKOFF_MAX_MS 1000
#define WIB_KEY_MAX 96

int64_t weft__ibv_now_ms(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int weft__ibv_addr_valid(const void *blob, size_t len)
{
    struct wib_addr a;

    if (!blob || len != sizeof(a))
        return 0;
    memcpy(&a, blob, sizeof(a));
    return a.magic == WIB_ADDR_MAGIC && a.version == WIB_WIRE_VERSION && a.nrails >= 1 &&
           a.nrails <= WIB_RAILS_MAX && a.qps >= 1 && a.qps <= WIB_QPS_MAX;
}

int weft__ibv_pair_rails(const struct wib_addr *a, const struct wib_addr *b)
{
    int n = a->nrails < b->nrails ? a->nrails : b->nrails, i;

    for (i = 0; i < n; i++)
        if (a->rail[i].link_layer != b->rail[i].link_layer)
            break;
    return i;
}

static void rec_key(char *buf, size_t cap, int from, int to, uint32_t gen)
{
    snprintf(buf, cap, WIB_NAME "/c/%d/%d/%u", from, to, gen);
}

void weft__ibv_peer_activate(struct wib_ctx *ctx, int peer)
{
    struct wib_peer *p = &ctx->peers[peer];

    if (p->active)
        return;
    p->active = 1;
    p->anext = ctx->active;
    ctx->active = p;
}

/* ------------------------------------------------------------ receives */

int weft__ibv_post_lane_rx(struct wib_ctx *ctx, struct wib_qpx *q, int n)
{
    struct ibv_recv_wr wr, *bad;

    memset(&wr, 0, sizeof(wr));
    wr.wr_id = (uintptr_t)&q->rq_id;
    wr.num_sge = 0;     /* consumed only by WRITE_WITH_IMM, which brings no bytes */
    for (int i = 0; i < n; i++)
        if (ibv_post_recv(q->qp, &wr, &bad) != 0)
            return -1;
    ctx->st.recv_wrs += (unsigned)n;
    return 0;
}

int weft__ibv_post_ctl_rx(struct wib_ctx *ctx, struct wib_peer *p, int index)
{
    struct ibv_sge sge = {
        .addr = (uintptr_t)(p->rx + (size_t)index * ctx->prm.eager_size),
        .length = (uint32_t)ctx->prm.eager_size,
        .lkey = p->mem_mr->lkey,
    };
    struct ibv_recv_wr wr, *bad;

    memset(&wr, 0, sizeof(wr));
    wr.wr_id = (uintptr_t)&p->ctl_rx[index];
    wr.sg_list = &sge;
    wr.num_sge = 1;
    ctx->st.recv_wrs++;
    return ibv_post_recv(p->ctl.qp, &wr, &bad);
}

/* ------------------------------------------------------------ QPs */

/* Makes q, on CQ cq_on of its device (-1: any with room), which must
 * have room for cq_room more completions after q's. */
static int qp_make(struct wib_ctx *ctx, struct wib_peer *p, struct wib_qpx *q, int peer,
                   int lane, int rail, int rq_depth, int rq_sge, int cq_on, int cq_room)
{
    struct wib_port_info *port = ctx->rail[rail];
    struct wib_dev *d = &ctx->devs[port->devi];
    struct ibv_qp_init_attr ia;
    struct ibv_qp_attr a;
    int mask;

    memset(q, 0, sizeof(*q));
    q->peer = peer;
    q->lane = lane;
    q->rail = rail;
    q->dev = port->devi;
    q->depth = ctx->prm.sq_depth;
    q->rq_depth = rq_depth;
    q->psn = weft__ibv_psn();
    q->sq_id.type = WIB_WRID_SQ;
    q->sq_id.q = q;
    q->rq_id.type = lane < 0 ? WIB_WRID_CTL_RX : WIB_WRID_LANE_RX;
    q->rq_id.q = q;
    q->recs = calloc((size_t)q->depth, sizeof(*q->recs));
    if (!q->recs) {
        snprintf(p->why, sizeof(p->why), "out of memory for its queues");
        return -1;
    }
    /* Signalled sends (one in every half queue at worst, and the last of
     * each window or eager burst) and every receive. */
    q->cqi = weft__ibv_cq_reserve(ctx, q->dev, q->depth + rq_depth + cq_room, cq_on);
    if (q->cqi >= 0 && cq_room)
        weft__ibv_cq_release(ctx, q->dev, q->cqi, cq_room);
    if (q->cqi < 0) {
        snprintf(p->why, sizeof(p->why), "%s", "no completion queue can take its QP");
        free(q->recs);
        q->recs = NULL;
        return -1;
    }
    memset(&ia, 0, sizeof(ia));
    ia.send_cq = ia.recv_cq = d->cqs[q->cqi].cq;
    ia.qp_type = IBV_QPT_RC;
    ia.sq_sig_all = 0;
    ia.cap.max_send_wr = (uint32_t)q->depth;
    ia.cap.max_recv_wr = (uint32_t)rq_depth;
    ia.cap.max_send_sge = 2;
    ia.cap.max_recv_sge = (uint32_t)(rq_sge ? rq_sge : 1);
    /* A device says how much inline data a QP takes only by refusing more
     * (EINVAL): ask for room for a small eager message, then for less. */
    for (uint32_t inl = sizeof(struct wib_hdr) + 64;; inl = inl > 64 ? 64 : inl / 2) {
        ia.cap.max_inline_data = inl;
        q->qp = ctx->fns.create_qp(d->pd, &ia);
        if (q->qp || errno != EINVAL || inl == 0)
            break;
    }
    if (!q->qp) {
        snprintf(p->why, sizeof(p->why), "%s: cannot create a QP: %s", d->name,
                 strerror(errno));
        weft__ibv_cq_release(ctx, q->dev, q->cqi, q->depth + rq_depth);
        free(q->recs);
        q->recs = NULL;
        return -1;
    }
    if (lane < 0 && (ctx->max_inline < 0 || (int)ia.cap.max_inline_data < ctx->max_inline))
        ctx->max_inline = (int)ia.cap.max_inline_data;
    weft__ibv_qp_init_attr(&a, &mask, port->port, 1);
    if (ctx->fns.modify_qp(q->qp, &a, mask) != 0) {
        snprintf(p->why, sizeof(p->why), "%s: cannot move a QP to INIT: %s", d->name,
                 strerror(errno));
        return -1;
    }
    return 0;
}

static void qp_destroy(struct wib_ctx *ctx, struct wib_qpx *q)
{
    if (q->qp) {
        weft__ibv_sq_retire(ctx, q, 1);
        ctx->fns.destroy_qp(q->qp);
        weft__ibv_cq_release(ctx, q->dev, q->cqi, q->depth + q->rq_depth);
    }
    free(q->recs);
    memset(q, 0, sizeof(*q));
}

static void qp_error(struct wib_ctx *ctx, struct wib_qpx *q)
{
    struct ibv_qp_attr a;

    if (!q->qp || q->dead)
        return;
    /* In error, everything posted completes flushed: the completions
     * give back what the work requests held. */
    memset(&a, 0, sizeof(a));
    a.qp_state = IBV_QPS_ERR;
    ctx->fns.modify_qp(q->qp, &a, IBV_QP_STATE);
    q->dead = 1;
}

/* The slots both sides use: the fewer of the two. */
static int pair_slots(const struct wib_ctx *ctx, const struct wib_peer *p)
{
    return (int)p->its_slots < ctx->prm.cts_slots ? (int)p->its_slots : ctx->prm.cts_slots;
}

/* Memory of the pair: control block in and out, control receives,
 * sources of control writes. */
static int pair_memory(struct wib_ctx *ctx, struct wib_peer *p)
{
    size_t block = (size_t)(ctx->prm.cts_slots + 1) * WIB_CTS_BYTES;
    size_t rx = (size_t)ctx->prm.eager_credits * ctx->prm.eager_size;
    struct wib_dev *d0 = &ctx->devs[ctx->rail[0]->devi];

    size_t ctl_src = (size_t)ctx->prm.sq_depth * WIB_CTS_BYTES;

    p->mem_len = (2 * block + rx + ctl_src + ctx->page - 1) & ~(ctx->page - 1);
    if (posix_memalign((void **)&p->mem, ctx->page, p->mem_len) != 0) {
        p->mem = NULL;
        snprintf(p->why, sizeof(p->why), "out of memory for its buffers");
        return -1;
    }
    memset(p->mem, 0, 2 * block);
    p->in = p->mem;
    p->out = p->mem + block;
    p->rx = p->mem + 2 * block;
    p->ctl_src = p->rx + rx;
    p->mem_mr = weft__ibv_reg_mr(&ctx->fns, d0->pd, p->mem, p->mem_len,
                                 IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
    if (!p->mem_mr) {
        snprintf(p->why, sizeof(p->why), "cannot register its %zu bytes of buffers: %s",
                 p->mem_len, strerror(errno));
        return -1;
    }
    p->ctl_rx = calloc((size_t)ctx->prm.eager_credits, sizeof(*p->ctl_rx));
    p->rwin = calloc((size_t)ctx->prm.cts_slots, sizeof(*p->rwin));
    p->slot_free = calloc((size_t)ctx->prm.cts_slots, sizeof(*p->slot_free));
    p->use_out = calloc((size_t)ctx->prm.cts_slots, sizeof(*p->use_out));
    p->use_in = calloc((size_t)ctx->prm.cts_slots, sizeof(*p->use_in));
    if (!p->ctl_rx || !p->rwin || !p->slot_free || !p->use_out || !p->use_in) {
        snprintf(p->why, sizeof(p->why), "out of memory for its windows");
        return -1;
    }
    return 0;
}

static void fill_record(struct wib_ctx *ctx, int peer, const struct wib_peer *p,
                        struct wib_conn_rec *r)
{
    memset(r, 0, sizeof(*r));
    r->magic = WIB_REC_MAGIC;
    r->version = WIB_WIRE_VERSION;
    r->nrails = (uint8_t)p->nrails;
    r->nlanes = (uint8_t)p->nlanes;
    r->from = (uint32_t)ctx->rank;
    r->to = (uint32_t)peer;
    r->gen = p->gen;
    r->nonce = ctx->self.nonce;
    r->credits = (uint32_t)ctx->prm.eager_credits;
    r->eager_size = (uint32_t)ctx->prm.eager_size;
    r->slots = (uint32_t)ctx->prm.cts_slots;
    r->ctl_qpn = p->ctl.qp->qp_num;
    r->ctl_psn = p->ctl.psn;
    for (int l = 0; l < p->nlanes; l++) {
        r->lane_qpn[l] = p->lane[l].qp->qp_num;
        r->lane_psn[l] = p->lane[l].psn;
    }
    r->block_addr = (uint64_t)(uintptr_t)p->in;
    r->block_rkey = p->mem_mr->rkey;
    memcpy(r->rail, ctx->self.rail, sizeof(r->rail));
}

/* RTR and RTS of every QP of the pair from its record. */
static int pair_rtr(struct wib_ctx *ctx, int peer, const struct wib_conn_rec *r)
{
    struct wib_peer *p = &ctx->peers[peer];
    struct ibv_qp_attr a;
    int mask;

    if (r->nrails != p->nrails || r->nlanes != p->nlanes || r->credits < 1 ||
        r->eager_size < sizeof(struct wib_hdr) || r->slots < 1) {
        snprintf(p->why, sizeof(p->why), "its record disagrees (%u rails, %u lanes; we "
                 "expect %d and %d): different weft versions or parameters?", r->nrails,
                 r->nlanes, p->nrails, p->nlanes);
        return -1;
    }
    p->its_block = r->block_addr;
    p->its_rkey = r->block_rkey;
    p->its_credits = r->credits;
    p->its_eager = r->eager_size;
    p->its_slots = r->slots;
    p->its_nonce = r->nonce;
    for (int l = -1; l < p->nlanes; l++) {
        struct wib_qpx *q = l < 0 ? &p->ctl : &p->lane[l];
        int rail = q->rail;

        weft__ibv_qp_rtr_attr(&a, &mask, &ctx->prm, &ctx->self.rail[rail],
                              ctx->rail[rail]->gid.index, &r->rail[rail],
                              l < 0 ? r->ctl_qpn : r->lane_qpn[l],
                              l < 0 ? r->ctl_psn : r->lane_psn[l]);
        if (ctx->fns.modify_qp(q->qp, &a, mask) != 0) {
            snprintf(p->why, sizeof(p->why), "cannot move a QP to RTR: %s (path MTU %d, "
                     "remote QP 0x%x)", strerror(errno), weft__ibv_mtu_bytes(a.path_mtu),
                     a.dest_qp_num);
            return -1;
        }
        weft__ibv_qp_rts_attr(&a, &mask, &ctx->prm, q->psn);
        if (ctx->fns.modify_qp(q->qp, &a, mask) != 0) {
            snprintf(p->why, sizeof(p->why), "cannot move a QP to RTS: %s", strerror(errno));
            return -1;
        }
    }
    /* Windows: the slots of its block we may use, all free. */
    p->nslot_free = 0;
    for (int s = pair_slots(ctx, p) - 1; s >= 0; s--)
        p->slot_free[p->nslot_free++] = s;
    p->tx_sent = p->tx_returned = 0;
    return 0;
}

static void go_up(struct wib_ctx *ctx, int peer)
{
    struct wib_peer *p = &ctx->peers[peer];

    p->state = WIB_P_UP;
    TP_INFO(ctx, "rank %d connected: %d rail%s, %d lane%s, %u eager credits", peer,
            p->nrails, p->nrails > 1 ? "s" : "", p->nlanes, p->nlanes > 1 ? "s" : "",
            p->its_credits);
    weft__ibv_pump(ctx, p);
}

/* Reads its record from the store without waiting; on success the pair
 * goes to WAIT_READY (or UP, to itself). 1 done, 0 not there yet, -1
 * failed (the pair is failed). */
static int try_record(struct wib_ctx *ctx, int peer)
{
    struct wib_peer *p = &ctx->peers[peer];
    struct wib_conn_rec r;
    char key[WIB_KEY_MAX];
    size_t len = 0;
    weft_result_t rc;

    rec_key(key, sizeof(key), peer, ctx->rank, p->gen);
    rc = ctx->core->oob_get(ctx->core->core_ctx, key, &r, sizeof(r), &len, 0);
    if (rc == WEFT_ERR_TIMEOUT)
        return 0;
    if (rc != WEFT_SUCCESS || len != sizeof(r) || r.magic != WIB_REC_MAGIC ||
        r.version != WIB_WIRE_VERSION || (int)r.from != peer || (int)r.to != ctx->rank) {
        char why[200];

        snprintf(why, sizeof(why), "its connection record %s", rc != WEFT_SUCCESS ?
                 "cannot be read from the store" : "is not one of this weft");
        weft__ibv_conn_fail(ctx, peer, WEFT_ERR_PEER_LOST, why);
        return -1;
    }
    if (pair_rtr(ctx, peer, &r) != 0) {
        weft__ibv_conn_fail(ctx, peer, WEFT_ERR_PEER_LOST, p->why);
        return -1;
    }
    p->state = WIB_P_WAIT_READY;
    p->backoff_ms = WIB_BACKOFF_START_MS;
    p->next_try_ms = weft__ibv_now_ms() + p->backoff_ms;
    weft__ibv_ud_send(ctx, peer, WIB_READY);
    if (p->got_ready)
        go_up(ctx, peer);
    return 1;
}

int weft__ibv_conn_start(struct wib_ctx *ctx, int peer)
{
    struct wib_peer *p = &ctx->peers[peer];
    struct wib_conn_rec r;
    char key[WIB_KEY_MAX];
    weft_result_t rc;
    int qps;

    if (p->state != WIB_P_IDLE)
        return p->state == WIB_P_FAILED ? -1 : 0;
    weft__ibv_peer_activate(ctx, peer);
    p->why[0] = '\0';
    p->got_ready = 0;
    p->nrails = weft__ibv_pair_rails(&ctx->self, &p->addr);
    qps = ctx->self.qps < p->addr.qps ? ctx->self.qps : p->addr.qps;
    p->nlanes = p->nrails * qps;
    p->its_slots = (uint32_t)ctx->prm.cts_slots;
    if (p->nrails == 0) {
        weft__ibv_conn_fail(ctx, peer, WEFT_ERR_PEER_LOST, "no rail of the same link layer");
        return -1;
    }
    /* The control QP (eager messages) and lane 0 (credits, goodbye) share
     * a CQ, so that a peer reads a goodbye after the messages before it. */
    if (pair_memory(ctx, p) != 0 ||
        qp_make(ctx, p, &p->ctl, peer, -1, 0, ctx->prm.eager_credits, 1, -1,
                ctx->prm.sq_depth + WIB_LANE_RQ(ctx->prm.cts_slots)) != 0)
        goto err_fail;
    for (int l = 0; l < p->nlanes; l++)
        if (qp_make(ctx, p, &p->lane[l], peer, l, l % p->nrails,
                    WIB_LANE_RQ(ctx->prm.cts_slots), 0, l == 0 ? p->ctl.cqi : -1, 0) != 0)
            goto err_fail;
    for (int i = 0; i < ctx->prm.eager_credits; i++) {
        p->ctl_rx[i].type = WIB_WRID_CTL_RX;
        p->ctl_rx[i].index = (uint16_t)i;
        p->ctl_rx[i].q = &p->ctl;
        if (weft__ibv_post_ctl_rx(ctx, p, i) != 0) {
            snprintf(p->why, sizeof(p->why), "cannot post its receives: %s", strerror(errno));
            goto err_fail;
        }
    }
    for (int l = 0; l < p->nlanes; l++)
        if (weft__ibv_post_lane_rx(ctx, &p->lane[l], p->lane[l].rq_depth) != 0) {
            snprintf(p->why, sizeof(p->why), "cannot post its receives: %s", strerror(errno));
            goto err_fail;
        }
    p->rx_reposted = p->rx_told = 0;
    fill_record(ctx, peer, p, &r);
    p->state = WIB_P_WAIT_INFO;
    p->deadline_ms = weft__ibv_now_ms() + ctx->prm.timeout_ms;
    if (peer == ctx->rank) {
        /* To itself: each QP is connected to itself. */
        if (pair_rtr(ctx, peer, &r) != 0)
            goto err_fail;
        go_up(ctx, peer);
        return 0;
    }
    rec_key(key, sizeof(key), ctx->rank, peer, p->gen);
    rc = ctx->core->oob_put(ctx->core->core_ctx, key, &r, sizeof(r));
    if (rc != WEFT_SUCCESS) {
        /* weft_strerror is libweft's, which a plugin does not link. */
        snprintf(p->why, sizeof(p->why), "cannot store its connection record in the "
                 "out-of-band store (weft result %d)", (int)rc);
        goto err_fail;
    }
    p->backoff_ms = WIB_BACKOFF_START_MS;
    p->next_try_ms = weft__ibv_now_ms() + p->backoff_ms;
    if (weft__ibv_ud_send(ctx, peer, WIB_KNOCK) != 0)
        goto err_fail;
    /* It may have started first: its record is then there already. */
    try_record(ctx, peer);
    return p->state == WIB_P_FAILED ? -1 : 0;

err_fail:
    weft__ibv_conn_fail(ctx, peer, WEFT_ERR_PEER_LOST, p->why);
    return -1;
}

void weft__ibv_conn_knocked(struct wib_ctx *ctx, const struct wib_knock *k)
{
    int peer = (int)k->from;
    struct wib_peer *p = &ctx->peers[peer];

    if (!p->known || peer == ctx->rank)
        return;
    if (k->gen < p->gen)
        return;                         /* of a pair since restarted */
    if (k->gen > p->gen || (p->state >= WIB_P_WAIT_READY && k->nonce != p->its_nonce)) {
        /* It started the pair over (or is a new process): so do we. */
        weft__ibv_conn_fail(ctx, peer, WEFT_ERR_PEER_LOST, "it restarted the connection");
        weft__ibv_conn_destroy(ctx, peer);
        p->lost = 0;
        p->gen = k->gen;
    }
    switch (p->state) {
    case WIB_P_IDLE:
        weft__ibv_conn_start(ctx, peer);
        break;
    case WIB_P_WAIT_INFO:
        if (k->type == WIB_READY || k->type == WIB_READY_ACK)
            p->got_ready = 1;
        try_record(ctx, peer);
        break;
    case WIB_P_WAIT_READY:
        if (k->type == WIB_READY || k->type == WIB_READY_ACK) {
            if (k->type == WIB_READY)
                weft__ibv_ud_send(ctx, peer, WIB_READY_ACK);
            go_up(ctx, peer);
        } else {
            weft__ibv_ud_send(ctx, peer, WIB_READY);
        }
        break;
    case WIB_P_UP:
        /* It missed our READY: tell it again, once. */
        if (k->type == WIB_KNOCK)
            weft__ibv_ud_send(ctx, peer, WIB_READY);
        else if (k->type == WIB_READY)
            weft__ibv_ud_send(ctx, peer, WIB_READY_ACK);
        break;
    default:
        break;
    }
}

void weft__ibv_conn_timers(struct wib_ctx *ctx)
{
    int64_t now = weft__ibv_now_ms();

    for (struct wib_peer *p = ctx->active; p; p = p->anext) {
        int peer = (int)(p - ctx->peers);

        if (p->state != WIB_P_WAIT_INFO && p->state != WIB_P_WAIT_READY)
            continue;
        if (now >= p->deadline_ms) {
            char why[200];

            snprintf(why, sizeof(why), "no answer within WEFT_TIMEOUT (%d s) while %s: is it "
                     "still running and calling weft?", ctx->prm.timeout_ms / 1000,
                     p->state == WIB_P_WAIT_INFO ? "waiting for its connection record"
                                                 : "waiting for it to be ready");
            weft__ibv_conn_fail(ctx, peer, WEFT_ERR_PEER_LOST, why);
            continue;
        }
        if (now < p->next_try_ms)
            continue;
        p->backoff_ms = p->backoff_ms * 2 > WIB_BACKOFF_MAX_MS ? WIB_BACKOFF_MAX_MS
                                                               : p->backoff_ms * 2;
        p->next_try_ms = now + p->backoff_ms;
        if (p->state == WIB_P_WAIT_INFO) {
            if (try_record(ctx, peer) == 0)
                weft__ibv_ud_send(ctx, peer, WIB_KNOCK);
        } else {
            weft__ibv_ud_send(ctx, peer, WIB_READY);
        }
    }
}

void weft__ibv_conn_fail(struct wib_ctx *ctx, int peer, weft_result_t status, const char *why)
{
    struct wib_peer *p = &ctx->peers[peer];

    if (p->state == WIB_P_FAILED)
        return;
    if (why != p->why)
        snprintf(p->why, sizeof(p->why), "%s", why ? why : "?");
    if (!ctx->finalizing && !p->departed)
        TP_WARN(ctx, "connection to rank %d lost: %s", peer, p->why);
    p->state = WIB_P_FAILED;
    p->lost = !p->departed;
    qp_error(ctx, &p->ctl);
    for (int l = 0; l < p->nlanes; l++)
        qp_error(ctx, &p->lane[l]);
    weft__ibv_sends_fail(ctx, peer, status, 0);
    weft__ibv_msgs_fail(ctx, peer, status);
    /* Receives from any source fail only for a crash, as with sockets. */
    weft__tp_match_fail_peer(&ctx->tp, peer, !p->departed, status);
}

void weft__ibv_conn_destroy(struct wib_ctx *ctx, int peer)
{
    struct wib_peer *p = &ctx->peers[peer];

    if (p->state != WIB_P_IDLE && p->state != WIB_P_FAILED)
        weft__ibv_conn_fail(ctx, peer, WEFT_ERR_ABORTED, "disconnected");
    for (int l = 0; l < p->nlanes; l++)
        qp_destroy(ctx, &p->lane[l]);
    qp_destroy(ctx, &p->ctl);
    if (p->ah)
        ctx->fns.destroy_ah(p->ah);
    p->ah = NULL;
    if (p->mem_mr)
        ctx->fns.dereg_mr(p->mem_mr);
    p->mem_mr = NULL;
    free(p->mem);
    free(p->ctl_rx);
    free(p->rwin);
    free(p->slot_free);
    free(p->use_out);
    free(p->use_in);
    p->mem = NULL;
    p->ctl_rx = NULL;
    p->rwin = NULL;
    p->slot_free = NULL;
    p->use_out = p->use_in = NULL;
    p->nslot_free = 0;
    p->state = WIB_P_IDLE;
    p->gen++;
    p->send_seq = p->recv_seq = 0;
}
