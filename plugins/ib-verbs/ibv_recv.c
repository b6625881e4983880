/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * ibv_recv.c: the receiving side. Control SENDs arrive in the pair's
 * bounce buffers in send order, which is matching order: an eager
 * message goes straight into a posted receive or waits unexpected, an
 * RTS becomes a message that the common matcher binds or holds, and that
 * then gets clear-to-send windows as slots of the sender's block free up:
 * in place when the destination is registered (mem_register, or on the
 * fly where that is safe), else through staging windows copied out as
 * they land. A message that started unexpected lands in its own buffer
 * and is copied into the receive that takes it.
 *
 * A receive into CUDA memory (its buffer in a mem_register handle of
 * that type) gets every copy from the driver, never from the CPU; a copy
 * that fails fails the receive. Bytes written into GPU memory by the NIC
 * are flushed before the receive completes, through the rank's own pair:
 * a flush waits for that pair to come up, and for a bounce slot and
 * room, rather than being skipped.
 */
#include "config.h"

#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "plugins/ib-verbs/ibv.h"

/* Bytes of one in-place window: big enough that a large message needs
 * few round trips, small enough that several pipeline. */
#define WIB_WINDOW_MAX (64u << 20)

/* ------------------------------------------------------------ messages */

static struct wib_msg *msg_new(int peer, uint64_t tag, size_t total)
{
    struct wib_msg *m = calloc(1, sizeof(*m));

    if (!m)
        return NULL;
    m->peer = peer;
    m->tag = tag;
    m->total = total;
    return m;
}

static void rv_remove(struct wib_peer *p, struct wib_msg *m)
{
    struct wib_msg **pp = &p->rv_head, *prev = NULL;

    if (!m->queued)
        return;
    while (*pp && *pp != m) {
        prev = *pp;
        pp = &(*pp)->rnext;
    }
    if (*pp) {
        *pp = m->rnext;
        if (p->rv_tail == m)
            p->rv_tail = prev;
    }
    m->queued = 0;
    m->rnext = NULL;
}

/* What arrived moves to r's buffer. A large message whose windows have
 * not started lands in r's buffer directly; one already landing in its
 * own buffer keeps doing so and is copied once whole. */
static int msg_bind(struct tp_ctx *tp, struct tp_msg *tm, struct tp_req *r)
{
    struct wib_ctx *ctx = (struct wib_ctx *)tp;
    struct wib_msg *m = (struct wib_msg *)tm;

    if (m->rndv && !m->started) {
        free(m->ubuf);
        m->ubuf = NULL;
        m->want = tm->total < r->len ? tm->total : r->len;
        return 0;
    }
    if (tm->got < tm->total)
        return 0;
    if (tm->total && r->len &&
        weft__ibv_mem_copy(ctx, r->buf, m->ubuf, tp_min(tm->total, r->len),
                           weft__ibv_mem_is_cuda(ctx, r->buf, NULL)) != 0) {
        /* Bound (m->req is r): failing it completes r and frees m, and
         * the common code touches neither once bind says 0. */
        weft__tp_match_fail(tp, tm, WEFT_ERR_SYSTEM);
        return 0;
    }
    free(m->ubuf);
    m->ubuf = NULL;
    return 1;
}

static int msg_hold(struct tp_ctx *tp, struct tp_msg *tm)
{
    struct wib_msg *m = (struct wib_msg *)tm;

    m->ubuf = malloc(tm->total ? tm->total : 1);
    m->want = tm->total;
    return m->ubuf ? 0 : -1;
}

static void msg_release(struct tp_ctx *tp, struct tp_msg *tm)
{
    struct wib_ctx *ctx = (struct wib_ctx *)tp;
    struct wib_msg *m = (struct wib_msg *)tm;

    if (m->queued)
        rv_remove(&ctx->peers[tm->peer], m);
    weft__ibv_mem_done(ctx, m->dst, m->own_dst);
    free(m->ubuf);
    free(m);
}

const struct tp_match_ops weft__ibv_msg_ops = {
    .bind = msg_bind,
    .hold = msg_hold,
    .free = msg_release,
};

/* ------------------------------------------------------------ control arrivals */

static void protocol_error(struct wib_ctx *ctx, int peer, const char *what)
{
    char why[200];

    snprintf(why, sizeof(why), "it sent %s", what);
    weft__ibv_conn_fail(ctx, peer, WEFT_ERR_PEER_LOST, why);
}

static void eager_arrived(struct wib_ctx *ctx, int peer, const struct wib_hdr *h,
                          const unsigned char *payload)
{
    struct tp_req *r = weft__tp_match_take(&ctx->tp, peer, h->tag, h->len);
    struct wib_msg *m;

    if (r) {
        if (h->len && r->len &&
            weft__ibv_mem_copy(ctx, r->buf, payload, tp_min(r->len, h->len),
                               weft__ibv_mem_is_cuda(ctx, r->buf, NULL)) != 0) {
            weft__tp_req_complete(r, WEFT_ERR_SYSTEM);
            return;
        }
        weft__tp_req_complete(r, h->len > r->len ? WEFT_ERR_TRUNCATED : WEFT_SUCCESS);
        return;
    }
    m = msg_new(peer, h->tag, h->len);
    if (!m || weft__tp_match_arrive(&ctx->tp, &m->tp) != 0) {
        free(m);
        protocol_error(ctx, peer, "more than this rank has memory for");
        return;
    }
    /* Unexpected (no receive matched above): its own buffer. */
    weft__ibv_mem_copy(ctx, m->ubuf, payload, h->len, 0);
    m->got = h->len;
    weft__tp_match_done(&ctx->tp, &m->tp);
}

static void rts_arrived(struct wib_ctx *ctx, int peer, const struct wib_hdr *h)
{
    struct wib_peer *p = &ctx->peers[peer];
    struct wib_msg *m = msg_new(peer, h->tag, h->len);

    if (!m) {
        protocol_error(ctx, peer, "a message larger than this rank has memory for");
        return;
    }
    m->rndv = 1;
    m->seq = h->seq;
    m->want = h->len;
    if (weft__tp_match_arrive(&ctx->tp, &m->tp) != 0) {
        free(m);
        protocol_error(ctx, peer, "a message larger than this rank has memory for");
        return;
    }
    m->queued = 1;
    if (p->rv_tail)
        p->rv_tail->rnext = m;
    else
        p->rv_head = m;
    p->rv_tail = m;
    weft__ibv_windows_pump(ctx, p);
}

void weft__ibv_ctl_arrived(struct wib_ctx *ctx, struct wib_peer *p, int index, uint32_t len)
{
    int peer = (int)(p - ctx->peers);
    const unsigned char *b = p->rx + (size_t)index * ctx->prm.eager_size;
    struct wib_hdr h;

    if (len < sizeof(h)) {
        protocol_error(ctx, peer, "a control message shorter than its header");
        return;
    }
    memcpy(&h, b, sizeof(h));
    if ((int32_t)(h.credits - p->tx_returned) > 0)
        p->tx_returned = h.credits;
    if (h.seq != p->recv_seq) {
        protocol_error(ctx, peer, "messages out of order");
        return;
    }
    p->recv_seq++;
    if (h.type == WIB_MSG_EAGER && h.len == len - sizeof(h))
        eager_arrived(ctx, peer, &h, b + sizeof(h));
    else if (h.type == WIB_MSG_RTS && len == sizeof(h))
        rts_arrived(ctx, peer, &h);
    else
        protocol_error(ctx, peer, "a control message of unknown type or length");
    if (p->state != WIB_P_UP)
        return;
    if (weft__ibv_post_ctl_rx(ctx, p, index) != 0) {
        weft__ibv_conn_fail(ctx, peer, WEFT_ERR_PEER_LOST, "cannot post a receive again");
        return;
    }
    p->rx_reposted++;
    weft__ibv_pump(ctx, p);
}

/* ------------------------------------------------------------ windows */

/* Decides where m lands, once: in the receive's buffer (registered or
 * staged) when bound, in its own buffer (staged) when unexpected. */
static void msg_start(struct wib_ctx *ctx, struct wib_msg *m)
{
    struct tp_req *r = m->req;

    m->started = 1;
    if (!r) {
        m->to_ubuf = 1;
        return;
    }
    m->cuda = r->len && weft__ibv_mem_is_cuda(ctx, r->buf, NULL);
    if (m->want)
        m->dst = weft__ibv_mem_for(ctx, r->buf, m->want, NULL, &m->own_dst);
}

/* Issues the next window of the message at the head of p's list: 1 done,
 * 0 not now (no slot, staging slot or room). */
static int issue_window(struct wib_ctx *ctx, struct wib_peer *p, struct wib_msg *m)
{
    struct wib_rwin *w;
    struct wib_cts *e;
    struct wib_wr_rec rec = { WIB_REC_NONE, 0, -1, NULL };
    struct ibv_sge sge;
    struct ibv_send_wr wr;
    struct wib_qpx *q = &p->lane[0];
    uint64_t size;
    int slot, stage = -1, nl = 1, rc, in_place;

    if (!p->nslot_free || weft__ibv_sq_room(q) <= 0)
        return 0;
    if (!m->started)
        msg_start(ctx, m);
    /* A receive cancelled meanwhile takes no more bytes in place: the
     * rest is staged and dropped, so that the sender still finishes. */
    in_place = m->dst && m->req;
    size = m->want - m->issued;
    if (in_place) {
        uint64_t chunks;

        if (size > WIB_WINDOW_MAX)
            size = WIB_WINDOW_MAX;
        chunks = (size + ctx->prm.chunk - 1) / ctx->prm.chunk;
        nl = chunks < (uint64_t)p->nlanes ? (int)(chunks ? chunks : 1) : p->nlanes;
    } else if (size) {
        stage = weft__ibv_stage_get(ctx, 1);
        if (stage < 0)
            return 0;
        if (size > ctx->prm.chunk)
            size = ctx->prm.chunk;
    }
    slot = p->slot_free[--p->nslot_free];
    w = &p->rwin[slot];
    w->m = m;
    w->off = m->issued;
    w->size = size;
    w->nlanes = nl;
    w->got = 0;
    w->stage = stage;
    e = (struct wib_cts *)(p->out + (size_t)slot * WIB_CTS_BYTES);
    memset(e, 0, sizeof(*e));
    for (int rail = 0; rail < p->nrails; rail++) {
        int dev = ctx->rail[rail]->devi;

        e->rkey[rail] = in_place ? weft__ibv_mem_rkey(m->dst, dev) : ctx->stage_mr[dev]->rkey;
    }
    e->addr = in_place ? (uint64_t)(uintptr_t)(m->req->buf + w->off)
                     : (uint64_t)(uintptr_t)(ctx->stage + (size_t)(stage < 0 ? 0 : stage) *
                                             ctx->prm.chunk);
    e->off = w->off;
    e->size = size;
    e->seq = m->seq;
    e->tag = m->tag;
    e->use = ++p->use_out[slot];
    e->nlanes = (uint8_t)nl;
    e->flags = m->issued + size == m->want ? WIB_CTS_LAST : 0;
    sge.addr = (uintptr_t)e;
    sge.length = sizeof(*e);
    sge.lkey = p->mem_mr->lkey;
    memset(&wr, 0, sizeof(wr));
    wr.opcode = IBV_WR_RDMA_WRITE_WITH_IMM;
    wr.imm_data = htonl(WIB_IMM_CTS | (uint32_t)slot);
    wr.sg_list = &sge;
    wr.num_sge = 1;
    if ((int)sizeof(*e) <= ctx->max_inline)
        wr.send_flags = IBV_SEND_INLINE;
    wr.wr.rdma.remote_addr = p->its_block + (uint64_t)slot * WIB_CTS_BYTES;
    wr.wr.rdma.rkey = p->its_rkey;
    weft__ibv_ctl_source(ctx, p, q, &wr);
    rc = weft__ibv_sq_post(ctx, q, &wr, &rec, 0);
    if (rc != 0) {
        w->m = NULL;
        p->slot_free[p->nslot_free++] = slot;
        p->use_out[slot]--;
        if (stage >= 0)
            weft__ibv_stage_put(ctx, stage);
        if (rc != EAGAIN)
            weft__ibv_conn_fail(ctx, (int)(p - ctx->peers), WEFT_ERR_PEER_LOST,
                                "cannot post a clear-to-send");
        return 0;
    }
    m->issued += size;
    m->windows++;
    if (in_place)
        ctx->windows_in_place++;
    else
        ctx->windows_staged++;
    if (m->issued == m->want)
        rv_remove(p, m);
    return 1;
}

void weft__ibv_windows_pump(struct wib_ctx *ctx, struct wib_peer *p)
{
    while (p->rv_head && p->state == WIB_P_UP)
        if (!issue_window(ctx, p, p->rv_head))
            return;
}

/* Every byte m is to get has landed. */
static void msg_whole(struct wib_ctx *ctx, struct wib_msg *m)
{
    struct tp_req *r = m->req;

    if (!m->err && m->dst && m->dst->mem_type == WEFT_TRANSPORT_MEM_CUDA &&
        weft__ibv_flush_start(ctx, m) == 1)
        return;
    weft__ibv_mem_done(ctx, m->dst, m->own_dst);
    m->dst = NULL;
    m->own_dst = 0;
    if (m->to_ubuf && r) {
        if (m->total && r->len &&
            weft__ibv_mem_copy(ctx, r->buf, m->ubuf, tp_min(m->total, r->len),
                               weft__ibv_mem_is_cuda(ctx, r->buf, NULL)) != 0)
            m->err = WEFT_ERR_SYSTEM;
        free(m->ubuf);
        m->ubuf = NULL;
    }
    if (m->err) {
        weft__tp_match_fail(&ctx->tp, &m->tp, m->err);
        return;
    }
    m->got = m->total;
    weft__tp_match_done(&ctx->tp, &m->tp);
}

void weft__ibv_flush_done(struct wib_ctx *ctx, struct wib_msg *m)
{
    weft__ibv_mem_done(ctx, m->dst, m->own_dst);
    m->dst = NULL;
    m->own_dst = 0;
    m->got = m->total;
    weft__tp_match_done(&ctx->tp, &m->tp);
}

void weft__ibv_data_arrived(struct wib_ctx *ctx, int peer, int slot)
{
    struct wib_peer *p = &ctx->peers[peer];
    struct wib_rwin *w = slot < ctx->prm.cts_slots ? &p->rwin[slot] : NULL;
    struct wib_msg *m;

    if (!w || !w->m) {
        protocol_error(ctx, peer, "data for no window");
        return;
    }
    if (++w->got < w->nlanes)
        return;
    m = w->m;
    if (w->stage >= 0) {
        const unsigned char *src = ctx->stage + (size_t)w->stage * ctx->prm.chunk;

        /* Past a cancelled receive, the bytes go nowhere. */
        if (m->to_ubuf)
            weft__ibv_mem_copy(ctx, m->ubuf + w->off, src, w->size, 0);
        else if (m->req && !m->err &&
                 weft__ibv_mem_copy(ctx, m->req->buf + w->off, src, w->size, m->cuda) != 0)
            m->err = WEFT_ERR_SYSTEM;
        weft__ibv_stage_put(ctx, w->stage);
    }
    w->m = NULL;
    p->slot_free[p->nslot_free++] = slot;
    m->windows--;
    m->got += w->size;
    if (m->issued == m->want && m->windows == 0)
        msg_whole(ctx, m);
    weft__ibv_windows_pump(ctx, p);
}

void weft__ibv_credit_arrived(struct wib_ctx *ctx, int peer, int bye)
{
    struct wib_peer *p = &ctx->peers[peer];

    if (bye && !p->departed) {
        /* It finalized: whatever it sent is here; nothing more comes. */
        p->departed = 1;
        TP_INFO(ctx, "rank %d finalized", peer);
        weft__ibv_sends_fail(ctx, peer, WEFT_ERR_PEER_LOST, 1);
        weft__tp_match_fail_peer(&ctx->tp, peer, 0, WEFT_ERR_PEER_LOST);
        return;
    }
    weft__ibv_pump(ctx, p);
}

void weft__ibv_msgs_fail(struct wib_ctx *ctx, int peer, weft_result_t status)
{
    struct wib_peer *p = &ctx->peers[peer];
    struct wib_msg *failing = NULL;

    /* A message may be in several windows and on the list: fail it once. */
    for (int s = 0; p->rwin && s < ctx->prm.cts_slots; s++) {
        struct wib_rwin *w = &p->rwin[s];

        if (!w->m)
            continue;
        if (w->stage >= 0)
            weft__ibv_stage_put(ctx, w->stage);
        if (!w->m->failing) {
            w->m->failing = 1;
            w->m->rnext = failing;
            failing = w->m;
        }
        w->m = NULL;
    }
    while (p->rv_head) {
        struct wib_msg *m = p->rv_head;

        p->rv_head = m->rnext;
        m->queued = 0;
        if (!m->failing) {
            m->failing = 1;
            m->rnext = failing;
            failing = m;
        }
    }
    p->rv_tail = NULL;
    while (failing) {
        struct wib_msg *m = failing;

        failing = m->rnext;
        m->rnext = NULL;
        weft__tp_match_fail(&ctx->tp, &m->tp, status);
    }
}

/* ------------------------------------------------------------ GPU flush */

static void flush_wait(struct wib_ctx *ctx, struct wib_msg *m)
{
    m->fnext = NULL;
    if (ctx->flush_tail)
        ctx->flush_tail->fnext = m;
    else
        ctx->flush_head = m;
    ctx->flush_tail = m;
    weft__ibv_busy(ctx);
}

/* Posts m's flush read: 1 posted, 0 not now (no slot or room), -1
 * cannot be (the pair failed, or the read was refused). */
static int flush_post(struct wib_ctx *ctx, struct wib_msg *m)
{
    struct wib_peer *self = &ctx->peers[ctx->rank];
    struct wib_wr_rec rec = { WIB_REC_FLUSH, 0, -1, m };
    struct ibv_sge sge;
    struct ibv_send_wr wr;
    struct wib_qpx *q = &self->lane[0];
    int rc;

    if (weft__ibv_sq_room(q) <= 0)
        return 0;
    rec.slot = weft__ibv_bounce_get(ctx);
    if (rec.slot < 0)
        return 0;
    sge.addr = (uintptr_t)(ctx->bounce + (size_t)rec.slot * ctx->prm.eager_size);
    sge.length = 1;
    sge.lkey = ctx->bounce_mr->lkey;
    memset(&wr, 0, sizeof(wr));
    wr.opcode = IBV_WR_RDMA_READ;
    wr.sg_list = &sge;
    wr.num_sge = 1;
    wr.wr.rdma.remote_addr = (uint64_t)(uintptr_t)(m->req->buf + m->want - 1);
    wr.wr.rdma.rkey = weft__ibv_mem_rkey(m->dst, q->dev);
    rc = weft__ibv_sq_post(ctx, q, &wr, &rec, 1);
    if (rc != 0) {
        weft__ibv_bounce_put(ctx, rec.slot);
        return rc == EAGAIN ? 0 : -1;
    }
    ctx->st.flushes++;
    return 1;
}

int weft__ibv_flush_start(struct wib_ctx *ctx, struct wib_msg *m)
{
    struct wib_peer *self = &ctx->peers[ctx->rank];

    /* A read through the NIC of the last byte written makes the PCIe
     * writes before it visible to the GPU: through the rank's own pair,
     * whose lane 0 is on rail 0's device, where the bounce slots are. */
    if (!m->req || !m->want)
        return 0;
    if (self->state == WIB_P_IDLE)
        weft__ibv_conn_start(ctx, ctx->rank);
    if (self->state == WIB_P_FAILED || self->state == WIB_P_IDLE)
        return 0;
    switch (self->state == WIB_P_UP ? flush_post(ctx, m) : 0) {
    case 1:
        return 1;
    case 0:
        flush_wait(ctx, m);
        return 1;
    default:
        return 0;
    }
}

void weft__ibv_flush_retry(struct wib_ctx *ctx)
{
    struct wib_peer *self = &ctx->peers[ctx->rank];
    struct wib_msg *m;

    while ((m = ctx->flush_head)) {
        int rc = 1;

        /* A receive cancelled meanwhile wants no flush; a pair that
         * failed cannot give one, and the bytes are there all the same. */
        if (m->req && self->state != WIB_P_FAILED && self->state != WIB_P_IDLE) {
            if (self->state != WIB_P_UP)
                return;
            rc = flush_post(ctx, m);
            if (rc == 0)
                return;
        }
        ctx->flush_head = m->fnext;
        if (!ctx->flush_head)
            ctx->flush_tail = NULL;
        m->fnext = NULL;
        if (rc != 1 || !m->req)
            weft__ibv_flush_done(ctx, m);
    }
}

void weft__ibv_flush_drop(struct wib_ctx *ctx)
{
    struct wib_msg *m;

    while ((m = ctx->flush_head)) {
        ctx->flush_head = m->fnext;
        m->fnext = NULL;
        weft__ibv_flush_done(ctx, m);
    }
    ctx->flush_tail = NULL;
}
