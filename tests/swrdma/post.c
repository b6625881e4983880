/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * post.c: ibv_post_send() and ibv_post_recv(), reached through the
 * context's ops as verbs.h inlines them.
 *
 * What a post checks at once is what the hardware's doorbell path
 * checks: the QP's state (sends only from RTS on, receives from INIT on;
 * posts to a QP in error are taken and flushed), the opcode for an RC
 * QP, the flags, the number of SGEs, inline data within max_inline_data
 * (ENOMEM, as mlx5 says), and room in the queue: a slot is free again
 * only when the completion of its request, or of a later signaled one,
 * has been polled; a full queue gives ENOMEM. Keys, lengths and the
 * peer are checked when the request executes, and fail it then.
 *
 * A UD QP sends only SEND and SEND with immediate, each with an AH of
 * this device. Another opcode, or no AH, fails the post with EINVAL: the
 * IBA lists an opcode the service type does not support among the
 * immediate errors of Post Send, and the kernel's software
 * providers check it there (mlx5 would post it and fail it in the
 * hardware). The AH's address vector, the remote QP number and Q_Key
 * are copied into the WQE: the AH may go once the post has returned.
 * Sends are accepted in SQE as in ERR, and flushed.
 */
#include "config.h"

#include <errno.h>
#include <string.h>

#include "tests/swrdma/swrdma.h"

static int check_send_wr(const struct sw_qp *qp, const struct ibv_send_wr *wr)
{
    if (qp->qp.qp_type == IBV_QPT_UD) {
        if (wr->opcode != IBV_WR_SEND && wr->opcode != IBV_WR_SEND_WITH_IMM)
            return EINVAL;
        if (!wr->wr.ud.ah || wr->wr.ud.ah->context != qp->qp.context)
            return EINVAL;
    }
    switch (wr->opcode) {
    case IBV_WR_SEND:
    case IBV_WR_SEND_WITH_IMM:
    case IBV_WR_RDMA_WRITE:
    case IBV_WR_RDMA_WRITE_WITH_IMM:
    case IBV_WR_RDMA_READ:
    case IBV_WR_ATOMIC_CMP_AND_SWP:
    case IBV_WR_ATOMIC_FETCH_AND_ADD:
        break;
    default:
        return EINVAL;      /* memory windows, invalidation, TSO: not on this device */
    }
    unsigned known = IBV_SEND_FENCE | IBV_SEND_SIGNALED | IBV_SEND_SOLICITED | IBV_SEND_INLINE;
    if (wr->send_flags & ~known)
        return EINVAL;
    if (wr->num_sge < 0 || (uint32_t)wr->num_sge > qp->cap.max_send_sge)
        return EINVAL;
    if (wr->num_sge && !wr->sg_list)
        return EINVAL;
    if (wr->send_flags & IBV_SEND_INLINE) {
        if (wr->opcode != IBV_WR_SEND && wr->opcode != IBV_WR_SEND_WITH_IMM &&
            wr->opcode != IBV_WR_RDMA_WRITE && wr->opcode != IBV_WR_RDMA_WRITE_WITH_IMM)
            return EINVAL;
        uint64_t len = 0;
        for (int i = 0; i < wr->num_sge; i++)
            len += wr->sg_list[i].length;
        if (len > qp->cap.max_inline_data)
            return ENOMEM;
    }
    return 0;
}

int sw_post_send(struct ibv_qp *ibqp, struct ibv_send_wr *wr, struct ibv_send_wr **bad)
{
    struct sw_qp *qp = SW_CONTAINER(ibqp, struct sw_qp, qp);
    int rc = 0;
    pthread_mutex_lock(&qp->sq_lock);
    sw_shm_lock(&qp->s->lock);
    uint32_t state = qp->s->state;
    sw_shm_unlock(&qp->s->lock);
    for (; wr; wr = wr->next) {
        if (state == IBV_QPS_RESET || state == IBV_QPS_INIT || state == IBV_QPS_RTR) {
            rc = EINVAL;
            break;
        }
        if ((rc = check_send_wr(qp, wr)))
            break;
        if (qp->sq_post - qp->sq_retired >= qp->sq_cap) {
            rc = ENOMEM;
            break;
        }
        struct sw_swqe *w = &qp->sq[qp->sq_post % qp->sq_cap];
        struct ibv_sge *sge = w->sge;
        uint8_t *inl = w->inl;
        memset(w, 0, sizeof(*w));
        w->sge = sge;
        w->inl = inl;
        w->wr_id = wr->wr_id;
        w->opcode = wr->opcode;
        w->flags = wr->send_flags;
        w->signaled = qp->sq_sig_all || (wr->send_flags & IBV_SEND_SIGNALED);
        w->imm = wr->imm_data;
        if (ibqp->qp_type == IBV_QPT_UD) {
            w->av = SW_CONTAINER(wr->wr.ud.ah, struct sw_ah, ah)->attr;
            w->remote_qpn = wr->wr.ud.remote_qpn & 0xffffff;
            w->remote_qkey = wr->wr.ud.remote_qkey;
        } else if (wr->opcode == IBV_WR_ATOMIC_CMP_AND_SWP ||
                   wr->opcode == IBV_WR_ATOMIC_FETCH_AND_ADD) {
            w->remote_addr = wr->wr.atomic.remote_addr;
            w->rkey = wr->wr.atomic.rkey;
            w->compare_add = wr->wr.atomic.compare_add;
            w->swap = wr->wr.atomic.swap;
        } else {
            w->remote_addr = wr->wr.rdma.remote_addr;
            w->rkey = wr->wr.rdma.rkey;
        }
        w->phase = SW_WQE_QUEUED;
        uint64_t len = 0;
        if (wr->send_flags & IBV_SEND_INLINE) {
            /* the data is the WQE's from now on: the buffer may be reused */
            for (int i = 0; i < wr->num_sge; i++) {
                memcpy(inl + len, (void *)(uintptr_t)wr->sg_list[i].addr, wr->sg_list[i].length);
                len += wr->sg_list[i].length;
            }
            w->num_sge = 0;
        } else {
            w->num_sge = (uint32_t)wr->num_sge;
            for (int i = 0; i < wr->num_sge; i++) {
                sge[i] = wr->sg_list[i];
                len += wr->sg_list[i].length;
            }
            sw_mr_use(sge, w->num_sge, 1);
        }
        w->length = len;
        w->seqno = atomic_fetch_add(&sw.wr_count, 1) + 1;
        if (sw.env.check != SW_CHECK_OFF && !(wr->send_flags & IBV_SEND_INLINE) &&
            (wr->opcode == IBV_WR_SEND || wr->opcode == IBV_WR_SEND_WITH_IMM ||
             wr->opcode == IBV_WR_RDMA_WRITE || wr->opcode == IBV_WR_RDMA_WRITE_WITH_IMM))
            w->sum = sw_check_sum(w);
        qp->sq_post++;
    }
    pthread_mutex_unlock(&qp->sq_lock);
    if (rc && bad)
        *bad = wr;
    sw_seg_wake(sw.seg);
    return rc;
}

int sw_post_recv(struct ibv_qp *ibqp, struct ibv_recv_wr *wr, struct ibv_recv_wr **bad)
{
    struct sw_qp *qp = SW_CONTAINER(ibqp, struct sw_qp, qp);
    struct sw_sqp *s = qp->s;
    int rc = 0;
    sw_shm_lock(&s->lock);
    for (; wr; wr = wr->next) {
        if (s->state == IBV_QPS_RESET) {
            rc = EINVAL;
            break;
        }
        if (wr->num_sge < 0 || (uint32_t)wr->num_sge > s->rq_max_sge || (wr->num_sge && !wr->sg_list)) {
            rc = EINVAL;
            break;
        }
        if (s->rq_tail - s->rq_polled >= s->rq_cap) {
            rc = ENOMEM;
            break;
        }
        struct sw_rwqe *r = sw_seg_rwqe(sw.seg, qp->slot, s->rq_tail % s->rq_cap);
        r->wr_id = wr->wr_id;
        r->num_sge = (uint32_t)wr->num_sge;
        if (wr->num_sge)        /* sg_list may be NULL then */
            memcpy(r->sge, wr->sg_list, sizeof(struct ibv_sge) * (size_t)wr->num_sge);
        sw_mr_use(r->sge, r->num_sge, 1);
        s->rq_tail++;
    }
    if (s->state == IBV_QPS_ERR)
        sw_rq_flush_locked(sw.seg, s, qp->slot);
    sw_shm_unlock(&s->lock);
    if (rc && bad)
        *bad = wr;
    return rc;
}
