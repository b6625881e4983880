/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * ibv_send.c: the sending side. Sends wait in their peer's queue, in
 * order, until the pair is up and the message can go: an eager one as a
 * SEND that needs a credit (inline, or from a bounce slot; the send is
 * done once posted, its bytes being copied), a large one as an RTS that
 * needs a credit too, after which it waits for clear-to-send entries.
 * Each entry is a window written in chunks over the pair's lanes; the
 * send is done when the window marked last has been written and every
 * write completed (on RC, a completed write has been placed remotely).
 * Puts are windows the sender makes itself, without immediates.
 *
 * The bytes of a CUDA buffer are never read by the CPU: an eager one is
 * copied into its bounce slot by the driver (never inline, which the CPU
 * copies at the post), a large one is written from its registered region
 * (or, unregistered, copied into staging by the driver).
 */
#include "config.h"

#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "plugins/ib-verbs/ibv.h"

/* Credits are counted modulo 2^32: compare by difference. */
static int serial_after(uint32_t a, uint32_t b)
{
    return (int32_t)(a - b) > 0;
}

static struct wib_trailer *in_trailer(struct wib_ctx *ctx, struct wib_peer *p)
{
    return (struct wib_trailer *)(p->in + (size_t)ctx->prm.cts_slots * WIB_CTS_BYTES);
}

static struct wib_trailer *out_trailer(struct wib_ctx *ctx, struct wib_peer *p)
{
    return (struct wib_trailer *)(p->out + (size_t)ctx->prm.cts_slots * WIB_CTS_BYTES);
}

/* Signal what holds a pooled slot once the pool is half spent: a slot
 * comes back only with a signalled completion after it. */
static int pool_low(int nfree, int n)
{
    return nfree < n / 2;
}

static void fail_pair(struct wib_ctx *ctx, struct wib_peer *p, const char *what, int err)
{
    char why[200];

    snprintf(why, sizeof(why), "cannot post %s: %s", what, strerror(err));
    weft__ibv_conn_fail(ctx, (int)(p - ctx->peers), WEFT_ERR_PEER_LOST, why);
}

/* ------------------------------------------------------------ completion */

static void send_done(struct wib_ctx *ctx, struct wib_peer *p, struct wib_req *r,
                      weft_result_t status)
{
    weft__tp_queue_remove(&p->rts, &r->tp);
    weft__ibv_mem_done(ctx, r->sreg, r->own_sreg);
    r->sreg = NULL;
    r->own_sreg = 0;
    weft__tp_req_complete(&r->tp, status);
}

static void swin_unlink(struct wib_peer *p, struct wib_swin *w)
{
    struct wib_swin **pp = &p->sw_head, *prev = NULL;

    while (*pp && *pp != w) {
        prev = *pp;
        pp = &(*pp)->next;
    }
    if (!*pp)
        return;
    *pp = w->next;
    if (p->sw_tail == w)
        p->sw_tail = prev;
}

static void window_done(struct wib_ctx *ctx, struct wib_swin *w)
{
    struct wib_req *r = w->r;
    struct wib_peer *p = &ctx->peers[r->peer];

    swin_unlink(p, w);
    if (w->cts.flags & WIB_CTS_LAST)
        r->last_done = 1;
    r->windows--;
    free(w);
    if (r->last_done && r->windows == 0)
        send_done(ctx, p, r, WEFT_SUCCESS);
}

void weft__ibv_rec_done(struct wib_ctx *ctx, const struct wib_wr_rec *rec, int failed)
{
    switch (rec->kind) {
    case WIB_REC_BOUNCE:
        weft__ibv_bounce_put(ctx, rec->slot);
        break;
    case WIB_REC_WIN:
    case WIB_REC_PUT: {
        struct wib_swin *w = rec->owner;

        if (rec->slot >= 0)
            weft__ibv_stage_put(ctx, rec->slot);
        w->outstanding--;
        if (w->orphan) {
            if (w->outstanding == 0)
                free(w);
        } else if (!failed && w->outstanding == 0 && w->posted == w->total) {
            window_done(ctx, w);
        }
        /* A failed pair's windows are taken care of by
         * weft__ibv_sends_fail, which orphans those still written. */
        break;
    }
    case WIB_REC_FLUSH:
        /* Failed, it flushed nothing, but the bytes are there and no
         * one else finishes the receive (its sender's pair is not this
         * one). */
        weft__ibv_bounce_put(ctx, rec->slot);
        weft__ibv_flush_done(ctx, rec->owner);
        break;
    default:
        break;
    }
}

/* ------------------------------------------------------------ eager and RTS */

static int credits_left(const struct wib_peer *p)
{
    return (int)p->its_credits - (int)(p->tx_sent - p->tx_returned);
}

/* Posts r's SEND (eager or RTS): 1 posted, 0 not now, -1 the pair
 * failed, -2 r failed (its bytes could not be copied; the error set). */
static int post_ctl_send(struct wib_ctx *ctx, struct wib_peer *p, struct wib_req *r, int rts)
{
    struct wib_hdr h;
    struct ibv_sge sge[2];
    struct ibv_send_wr wr;
    struct wib_wr_rec rec = { WIB_REC_NONE, 0, -1, NULL };
    size_t payload = rts ? 0 : r->len;
    int force = 0, rc;

    if (credits_left(p) <= 0 || weft__ibv_sq_room(&p->ctl) <= 0)
        return 0;
    memset(&h, 0, sizeof(h));
    h.type = rts ? WIB_MSG_RTS : WIB_MSG_EAGER;
    h.credits = p->rx_reposted;
    h.tag = r->tag;
    h.len = r->len;
    h.seq = p->send_seq;
    memset(&wr, 0, sizeof(wr));
    wr.opcode = IBV_WR_SEND;
    wr.sg_list = sge;
    if ((int)(sizeof(h) + payload) <= ctx->max_inline && (!r->cuda || !payload)) {
        /* Inline: the bytes are copied at the post, from where they are. */
        sge[0].addr = (uintptr_t)&h;
        sge[0].length = sizeof(h);
        sge[0].lkey = 0;
        sge[1].addr = (uintptr_t)r->buf;
        sge[1].length = (uint32_t)payload;
        sge[1].lkey = 0;
        wr.num_sge = payload ? 2 : 1;
        wr.send_flags = IBV_SEND_INLINE;
    } else {
        int slot = weft__ibv_bounce_get(ctx);
        unsigned char *b;

        if (slot < 0)
            return 0;
        b = ctx->bounce + (size_t)slot * ctx->prm.eager_size;
        memcpy(b, &h, sizeof(h));
        if (weft__ibv_mem_copy(ctx, b + sizeof(h), r->buf, payload, r->cuda) != 0) {
            weft__ibv_bounce_put(ctx, slot);
            return -2;
        }
        sge[0].addr = (uintptr_t)b;
        sge[0].length = (uint32_t)(sizeof(h) + payload);
        sge[0].lkey = ctx->bounce_mr->lkey;
        wr.num_sge = 1;
        rec.kind = WIB_REC_BOUNCE;
        rec.slot = slot;
        force = pool_low(ctx->nbounce_free, ctx->nbounce);
    }
    rc = weft__ibv_sq_post(ctx, &p->ctl, &wr, &rec, force);
    if (rc != 0) {
        if (rec.kind == WIB_REC_BOUNCE)
            weft__ibv_bounce_put(ctx, rec.slot);
        if (rc == EAGAIN)
            return 0;
        fail_pair(ctx, p, rts ? "an RTS" : "an eager send", rc);
        return -1;
    }
    r->seq = p->send_seq++;
    p->tx_sent++;
    p->rx_told = p->rx_reposted;
    return 1;
}

/* The sends at the head of p's queue, as far as credits and room go. */
static void pump_sends(struct wib_ctx *ctx, struct wib_peer *p)
{
    struct tp_req *t;

    while ((t = p->sq.head) && p->state == WIB_P_UP) {
        struct wib_req *r = (struct wib_req *)t;
        int rc;

        if (r->op == WIB_OP_PUT) {
            struct wib_swin *w = calloc(1, sizeof(*w));

            if (!w)
                return;
            weft__tp_queue_remove(&p->sq, t);
            weft__tp_queue_append(&p->rts, t);
            w->r = r;
            w->put = 1;
            w->slot = -1;
            w->cts.addr = r->raddr;
            w->cts.size = r->len;
            w->cts.flags = WIB_CTS_LAST;
            w->cts.nlanes = (uint8_t)p->nlanes;
            memcpy(w->cts.rkey, r->rkey, sizeof(w->cts.rkey));
            w->nchunks = (uint32_t)((r->len + ctx->prm.chunk - 1) / ctx->prm.chunk);
            w->total = w->nchunks;
            w->start_lane = p->lane_rr++ % p->nlanes;
            r->windows++;
            if (w->total == 0) {
                free(w);
                r->windows--;
                send_done(ctx, p, r, WEFT_SUCCESS);
                continue;
            }
            if (p->sw_tail)
                p->sw_tail->next = w;
            else
                p->sw_head = w;
            p->sw_tail = w;
            continue;
        }
        if (r->op == 0) {
            size_t limit = ctx->prm.eager_size < p->its_eager ? ctx->prm.eager_size
                                                              : p->its_eager;

            r->op = sizeof(struct wib_hdr) + r->len <= limit ? WIB_OP_EAGER : WIB_OP_RNDV;
        }
        if (r->op == WIB_OP_RNDV && !r->sreg && !r->rts_posted)
            r->sreg = weft__ibv_mem_for(ctx, r->buf, r->len, r->mh, &r->own_sreg);
        rc = post_ctl_send(ctx, p, r, r->op == WIB_OP_RNDV);
        if (rc == -2) {
            weft__tp_queue_remove(&p->sq, t);
            weft__ibv_mem_done(ctx, r->sreg, r->own_sreg);
            r->sreg = NULL;
            r->own_sreg = 0;
            weft__tp_req_complete(t, WEFT_ERR_SYSTEM);
            continue;
        }
        if (rc <= 0)
            return;
        weft__tp_queue_remove(&p->sq, t);
        if (r->op == WIB_OP_EAGER) {
            weft__tp_req_complete(t, WEFT_SUCCESS);
        } else {
            r->rts_posted = 1;
            weft__tp_queue_append(&p->rts, t);
        }
    }
}

/* ------------------------------------------------------------ windows */

/* Posts what it can of window w: 1 all posted, 0 stopped (no room or no
 * staging slot), -1 failed. */
static int write_window(struct wib_ctx *ctx, struct wib_peer *p, struct wib_swin *w)
{
    struct wib_req *r = w->r;
    uint32_t nl = w->cts.nlanes;

    while (w->posted < w->total) {
        uint32_t k = w->posted;
        int lane = (int)((w->start_lane + k % nl) % (uint32_t)p->nlanes);
        struct wib_qpx *q = &p->lane[lane];
        uint64_t off = (uint64_t)k * ctx->prm.chunk;
        size_t n = k < w->nchunks ? (size_t)(w->cts.size - off < ctx->prm.chunk
                                             ? w->cts.size - off : ctx->prm.chunk) : 0;
        int last = k + nl >= w->total;
        struct wib_wr_rec rec = { w->put ? WIB_REC_PUT : WIB_REC_WIN, 0, -1, w };
        struct ibv_sge sge;
        struct ibv_send_wr wr;
        int force = last && !w->put, rc;

        if (weft__ibv_sq_room(q) <= 0)
            return 0;
        memset(&wr, 0, sizeof(wr));
        if (n) {
            const unsigned char *src = r->buf + w->cts.off + off;

            if (r->sreg) {
                sge.addr = (uintptr_t)src;
                sge.lkey = weft__ibv_mem_lkey(r->sreg, q->dev);
            } else {
                rec.slot = weft__ibv_stage_get(ctx, 0);
                if (rec.slot < 0)
                    return 0;
                if (weft__ibv_mem_copy(ctx, ctx->stage + (size_t)rec.slot * ctx->prm.chunk,
                                       src, n, r->cuda) != 0) {
                    weft__ibv_stage_put(ctx, rec.slot);
                    /* The receiver waits for this window: the pair cannot
                     * go on. */
                    weft__ibv_conn_fail(ctx, (int)(p - ctx->peers), WEFT_ERR_SYSTEM,
                                        "cannot copy a window out of GPU memory");
                    return -1;
                }
                sge.addr = (uintptr_t)(ctx->stage + (size_t)rec.slot * ctx->prm.chunk);
                sge.lkey = ctx->stage_mr[q->dev]->lkey;
                force |= weft__ibv_stage_low(ctx);
            }
            sge.length = (uint32_t)n;
            wr.sg_list = &sge;
            wr.num_sge = 1;
        }
        /* The last write of each lane carries the immediate that tells
         * the receiver this lane's part of the window has landed. */
        if (last && !w->put) {
            wr.opcode = IBV_WR_RDMA_WRITE_WITH_IMM;
            wr.imm_data = htonl(WIB_IMM_DATA | (uint32_t)w->slot);
        } else {
            wr.opcode = IBV_WR_RDMA_WRITE;
        }
        if (last)
            force = 1;
        wr.wr.rdma.remote_addr = w->cts.addr + off;
        wr.wr.rdma.rkey = w->cts.rkey[q->rail];
        rc = weft__ibv_sq_post(ctx, q, &wr, &rec, force);
        if (rc != 0) {
            if (rec.slot >= 0)
                weft__ibv_stage_put(ctx, rec.slot);
            if (rc == EAGAIN)
                return 0;
            fail_pair(ctx, p, "an RDMA write", rc);
            return -1;
        }
        w->posted++;
        w->outstanding++;
    }
    return 1;
}

static void pump_windows(struct wib_ctx *ctx, struct wib_peer *p)
{
    for (struct wib_swin *w = p->sw_head; w && p->state == WIB_P_UP; w = w->next)
        if (w->posted < w->total && write_window(ctx, p, w) <= 0)
            return;     /* windows go in order: a stopped one holds the rest */
}

void weft__ibv_cts_arrived(struct wib_ctx *ctx, int peer, int slot)
{
    struct wib_peer *p = &ctx->peers[peer];
    struct wib_cts e;
    struct wib_swin *w;
    struct tp_req *t;

    if (slot >= ctx->prm.cts_slots) {
        weft__ibv_conn_fail(ctx, peer, WEFT_ERR_PEER_LOST, "clear-to-send in no slot");
        return;
    }
    /* The immediate's completion comes after the write's bytes. */
    __atomic_thread_fence(__ATOMIC_ACQUIRE);
    memcpy(&e, p->in + (size_t)slot * WIB_CTS_BYTES, sizeof(e));
    for (t = p->rts.head; t && ((struct wib_req *)t)->seq != e.seq; t = t->qnext)
        ;
    if (e.use != ++p->use_in[slot] || !t || e.tag != t->tag || e.nlanes < 1 ||
        e.nlanes > p->nlanes || e.off + e.size > t->len) {
        char why[200];

        snprintf(why, sizeof(why), "clear-to-send in slot %d makes no sense (use %u of %u, "
                 "message %llu%s)", slot, e.use, p->use_in[slot], (unsigned long long)e.seq,
                 t ? "" : " unknown");
        weft__ibv_conn_fail(ctx, peer, WEFT_ERR_PEER_LOST, why);
        return;
    }
    w = calloc(1, sizeof(*w));
    if (!w) {
        weft__ibv_conn_fail(ctx, peer, WEFT_ERR_NO_MEMORY, "out of memory for a window");
        return;
    }
    w->r = (struct wib_req *)t;
    w->cts = e;
    w->slot = slot;
    w->nchunks = (uint32_t)((e.size + ctx->prm.chunk - 1) / ctx->prm.chunk);
    /* Lanes without a chunk still end with an (empty) immediate. */
    w->total = w->nchunks > e.nlanes ? w->nchunks : e.nlanes;
    w->start_lane = p->lane_rr++ % p->nlanes;
    w->r->windows++;
    if (p->sw_tail)
        p->sw_tail->next = w;
    else
        p->sw_head = w;
    p->sw_tail = w;
    pump_windows(ctx, p);
}

/* ------------------------------------------------------------ credits */

/* Writes the trailer (credits, bye) into its block with an immediate. */
static int write_trailer(struct wib_ctx *ctx, struct wib_peer *p, int bye)
{
    struct wib_trailer *t = out_trailer(ctx, p);
    struct wib_wr_rec rec = { WIB_REC_NONE, 0, -1, NULL };
    struct ibv_sge sge;
    struct ibv_send_wr wr;
    struct wib_qpx *q = &p->lane[0];

    if (weft__ibv_sq_room(q) <= 0)
        return EAGAIN;
    t->credits = p->rx_reposted;
    t->bye = (uint32_t)bye;
    sge.addr = (uintptr_t)t;
    sge.length = sizeof(*t);
    sge.lkey = p->mem_mr->lkey;
    memset(&wr, 0, sizeof(wr));
    wr.opcode = IBV_WR_RDMA_WRITE_WITH_IMM;
    wr.imm_data = htonl(WIB_IMM_CREDIT | (bye ? WIB_CREDIT_BYE : 0));
    wr.sg_list = &sge;
    wr.num_sge = 1;
    if ((int)sizeof(*t) <= ctx->max_inline)
        wr.send_flags = IBV_SEND_INLINE;
    wr.wr.rdma.remote_addr = p->its_block + (uint64_t)p->its_slots * WIB_CTS_BYTES;
    wr.wr.rdma.rkey = p->its_rkey;
    weft__ibv_ctl_source(ctx, p, q, &wr);
    return weft__ibv_sq_post(ctx, q, &wr, &rec, bye);
}

void weft__ibv_credits_return(struct wib_ctx *ctx, struct wib_peer *p, int force)
{
    uint32_t owed = p->rx_reposted - p->rx_told;
    int rc;

    if (p->state != WIB_P_UP || owed == 0 ||
        (!force && owed < (uint32_t)ctx->prm.eager_credits / 2))
        return;
    rc = write_trailer(ctx, p, 0);
    if (rc == 0)
        p->rx_told = p->rx_reposted;
    else if (rc != EAGAIN)
        fail_pair(ctx, p, "a credit return", rc);
}

int weft__ibv_say_bye(struct wib_ctx *ctx, struct wib_peer *p)
{
    if (p->state != WIB_P_UP || p->departed)
        return -1;
    return write_trailer(ctx, p, 1) == 0 ? 0 : -1;
}

/* ------------------------------------------------------------ entry points */

void weft__ibv_pump(struct wib_ctx *ctx, struct wib_peer *p)
{
    uint32_t returned;

    if (p->state != WIB_P_UP)
        return;
    returned = __atomic_load_n(&in_trailer(ctx, p)->credits, __ATOMIC_ACQUIRE);
    if (serial_after(returned, p->tx_returned))
        p->tx_returned = returned;
    pump_sends(ctx, p);
    pump_windows(ctx, p);
    weft__ibv_windows_pump(ctx, p);
    weft__ibv_credits_return(ctx, p, 0);
}

weft_result_t weft__ibv_isend(void *vctx, int peer, const void *buf, size_t len, uint64_t tag,
                              void *mh, void **out)
{
    struct wib_ctx *ctx = vctx;
    weft_result_t rc;
    struct tp_req *t = weft__tp_isend_new(&ctx->tp, peer, buf, len, tag, out, &rc);
    struct wib_peer *p;

    if (!t)
        return rc;
    ctx->st.sends++;
    ctx->st.send_bytes += len;
    if (t->done)
        return WEFT_SUCCESS;
    p = &ctx->peers[peer];
    ((struct wib_req *)t)->mh = mh;
    ((struct wib_req *)t)->cuda = len && weft__ibv_mem_is_cuda(ctx, buf, mh);
    weft__tp_queue_append(&p->sq, t);
    if (p->state == WIB_P_IDLE)
        weft__ibv_conn_start(ctx, peer);
    else
        weft__ibv_pump(ctx, p);
    return WEFT_SUCCESS;
}

weft_result_t weft__ibv_put(void *vctx, int peer, const void *buf, size_t len, void *mh,
                            uint64_t raddr, const void *rkey, size_t rkey_len, void **out)
{
    struct wib_ctx *ctx = vctx;
    struct wib_rkey k;
    weft_result_t rc;
    struct tp_req *t;
    struct wib_req *r;
    struct wib_peer *p;

    if (!rkey || rkey_len != sizeof(k)) {
        weft__tp_error(&ctx->tp, "put to rank %d: the rkey is not one of mem_export", peer);
        return WEFT_ERR_INVALID_ARG;
    }
    memcpy(&k, rkey, sizeof(k));
    if (k.magic != WIB_RKEY_MAGIC || raddr < k.addr || raddr + len > k.addr + k.len) {
        weft__tp_error(&ctx->tp, "put to rank %d: %zu bytes at 0x%llx are not in the region "
                       "of the rkey", peer, len, (unsigned long long)raddr);
        return WEFT_ERR_INVALID_ARG;
    }
    t = weft__tp_isend_new(&ctx->tp, peer, buf, len, 0, out, &rc);
    if (!t)
        return rc;
    if (t->done)
        return WEFT_SUCCESS;
    p = &ctx->peers[peer];
    r = (struct wib_req *)t;
    r->op = WIB_OP_PUT;
    r->mh = mh;
    r->cuda = len && weft__ibv_mem_is_cuda(ctx, buf, mh);
    r->raddr = raddr;
    memcpy(r->rkey, k.rkey, sizeof(r->rkey));
    r->sreg = weft__ibv_mem_for(ctx, (void *)buf, len, mh, &r->own_sreg);
    weft__tp_queue_append(&p->sq, t);
    if (p->state == WIB_P_IDLE)
        weft__ibv_conn_start(ctx, peer);
    else
        weft__ibv_pump(ctx, p);
    if (p->state == WIB_P_UP && k.nrails < (uint32_t)p->nrails)
        TP_WARN(ctx, "put to rank %d: its rkey covers %u rails, the pair uses %d", peer,
                k.nrails, p->nrails);
    return WEFT_SUCCESS;
}

void weft__ibv_send_cancel(struct tp_ctx *tp, struct tp_req *t)
{
    struct wib_ctx *ctx = (struct wib_ctx *)tp;
    struct wib_req *r = (struct wib_req *)t;
    struct wib_peer *p = &ctx->peers[t->peer];

    /* Not on the wire yet: it goes. Otherwise the receiver is waiting for
     * it, and it finishes, reporting the cancel. */
    if (t->queued && !r->rts_posted && r->op != WIB_OP_PUT) {
        weft__tp_queue_remove(&p->sq, t);
        weft__ibv_mem_done(ctx, r->sreg, r->own_sreg);
        r->sreg = NULL;
        weft__tp_req_complete(t, WEFT_ERR_ABORTED);
        return;
    }
    t->cancelled = 1;
}

/* 1 when r may still finish: its peer left on purpose, and every window
 * of r it asked for, the last included, is posted (so it got them all
 * before it left, or the writes fail). */
static int send_finishes(const struct wib_peer *p, const struct wib_req *r, int departed)
{
    int last = r->last_done;

    if (!departed)
        return 0;
    for (const struct wib_swin *w = p->sw_head; w; w = w->next) {
        if (w->r != r)
            continue;
        if (w->posted < w->total)
            return 0;
        last |= (w->cts.flags & WIB_CTS_LAST) != 0;
    }
    return last;
}

void weft__ibv_sends_fail(struct wib_ctx *ctx, int peer, weft_result_t status, int departed)
{
    struct wib_peer *p = &ctx->peers[peer];
    struct wib_swin **pp = &p->sw_head, *prev = NULL;
    struct tp_req *t, *next;

    /* Windows of sends that cannot finish leave the list: freed, or, with
     * writes still posted, orphaned until those complete. */
    while (*pp) {
        struct wib_swin *w = *pp;

        if (!w->orphan && send_finishes(p, w->r, departed)) {
            prev = w;
            pp = &w->next;
            continue;
        }
        *pp = w->next;
        if (w->outstanding == 0) {
            free(w);
        } else {
            w->orphan = 1;
            w->r = NULL;
            w->next = NULL;
        }
    }
    p->sw_tail = prev;
    while ((t = p->sq.head)) {
        weft__tp_queue_remove(&p->sq, t);
        weft__ibv_mem_done(ctx, ((struct wib_req *)t)->sreg, ((struct wib_req *)t)->own_sreg);
        ((struct wib_req *)t)->sreg = NULL;
        weft__tp_req_complete(t, status);
    }
    for (t = p->rts.head; t; t = next) {
        struct wib_req *r = (struct wib_req *)t;
        int kept = 0;

        next = t->qnext;
        for (struct wib_swin *w = p->sw_head; w; w = w->next)
            kept |= w->r == r;
        if (!kept)
            send_done(ctx, p, r, status);
    }
}
