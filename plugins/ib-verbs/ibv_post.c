/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * ibv_post.c: the send queue of each QP, counted. Every posted work
 * request has a record (what it stands for: a bounce slot, a staging
 * slot, a window's or a put's write); only every so often is one
 * signalled, and as an RC send queue completes in order, a signalled
 * completion retires every record before it. A queue therefore never
 * holds more than its depth, and a completion queue sized for the
 * signalled ones and the receives never overflows.
 */
#include "config.h"

#include <errno.h>
#include <string.h>

#include "plugins/ib-verbs/ibv.h"

int weft__ibv_sq_room(const struct wib_qpx *q)
{
    return q->depth - (int)(q->head - q->tail);
}

int weft__ibv_sq_post(struct wib_ctx *ctx, struct wib_qpx *q, struct ibv_send_wr *wr,
                      const struct wib_wr_rec *rec, int force)
{
    struct wib_wr_rec *r;
    struct ibv_send_wr *bad;
    /* Signalled at least every half queue, so records are retired before
     * the queue fills. */
    int sig = force || q->since_signal + 1 >= (uint32_t)q->depth / 2;
    int rc;

    if (q->dead)
        return EPIPE;
    if (weft__ibv_sq_room(q) <= 0)
        return EAGAIN;
    r = &q->recs[q->head % (uint32_t)q->depth];
    *r = *rec;
    r->signaled = (uint8_t)sig;
    wr->wr_id = (uintptr_t)&q->sq_id;
    wr->next = NULL;
    if (sig)
        wr->send_flags |= IBV_SEND_SIGNALED;
    rc = ibv_post_send(q->qp, wr, &bad);
    if (rc != 0) {
        r->kind = WIB_REC_NONE;
        return rc;
    }
    q->head++;
    q->since_signal = sig ? 0 : q->since_signal + 1;
    ctx->st.send_wrs++;
    ctx->st.signaled += sig;
    return 0;
}

int weft__ibv_sq_ping(struct wib_ctx *ctx, struct wib_peer *p, struct wib_qpx *q)
{
    struct wib_wr_rec rec = { WIB_REC_NONE, 0, -1, NULL };
    struct ibv_send_wr wr;

    memset(&wr, 0, sizeof(wr));
    wr.opcode = IBV_WR_RDMA_WRITE;
    wr.num_sge = 0;     /* no bytes: the peer's NIC only acknowledges it */
    wr.wr.rdma.remote_addr = p->its_block;
    wr.wr.rdma.rkey = p->its_rkey;
    return weft__ibv_sq_post(ctx, q, &wr, &rec, 1);
}

void weft__ibv_ctl_source(struct wib_ctx *ctx, struct wib_peer *p, struct wib_qpx *q,
                          struct ibv_send_wr *wr)
{
    unsigned char *copy;

    (void)ctx;
    if (wr->send_flags & IBV_SEND_INLINE)
        return;         /* copied when posted */
    /* The NIC may read a source until the completion covering its request
     * is polled (and again, to retransmit). CTS entries and the trailer
     * change as soon as the peer has acted on them, which can be earlier:
     * each goes from the copy of its send queue slot, which the next
     * request there reuses only after this one retired. */
    copy = p->ctl_src + (size_t)(q->head % (uint32_t)q->depth) * WIB_CTS_BYTES;
    memcpy(copy, (const void *)(uintptr_t)wr->sg_list[0].addr, wr->sg_list[0].length);
    wr->sg_list[0].addr = (uintptr_t)copy;
}

void weft__ibv_sq_retire(struct wib_ctx *ctx, struct wib_qpx *q, int failed)
{
    while (q->tail != q->head) {
        struct wib_wr_rec r = q->recs[q->tail % (uint32_t)q->depth];

        q->tail++;
        weft__ibv_rec_done(ctx, &r, failed);
        if (!failed && r.signaled)
            break;
    }
}
