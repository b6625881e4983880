/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * qp.c: creating, querying and destroying queue pairs (RC and UD), and
 * the error states: ERR flushes both queues, SQE (UD) the send queue.
 *
 * The send queue lives in the process (only its NIC thread executes it);
 * the receive queue is a ring in the process's segment, consumed by
 * whichever NIC sends to the QP. Requested sizes are checked against the
 * device's limits and rounded up as mlx5 rounds them (work requests to a
 * power of two); the caller's cap is updated with what it got.
 */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "tests/swrdma/swrdma.h"

static uint32_t round_wr(uint32_t want, uint32_t max)
{
    uint32_t p = 1;
    while (p < want)
        p <<= 1;
    return p <= max ? p : SW_MAX(want, max);
}

static void count_mr_use(uint32_t lkey, int delta)
{
    pthread_mutex_lock(&sw.obj_lock);
    struct sw_mr *mr = (lkey >> 8) < SW_REG_MRS ? sw.mrs[lkey >> 8] : NULL;
    if (mr && mr->mr.lkey == lkey) {
        if (delta > 0)
            atomic_fetch_add(&mr->inflight, 1);
        else if (atomic_load(&mr->inflight))
            atomic_fetch_sub(&mr->inflight, 1);
    }
    pthread_mutex_unlock(&sw.obj_lock);
}

void sw_mr_use(const struct ibv_sge *sge, uint32_t n, int delta)
{
    for (uint32_t i = 0; i < n; i++)
        count_mr_use(sge[i].lkey, delta);
}

SW_DEFAULT(ibv_create_qp) struct ibv_qp *sw_create_qp(struct ibv_pd *ibpd,
                                                      struct ibv_qp_init_attr *init);
struct ibv_qp *sw_create_qp(struct ibv_pd *ibpd, struct ibv_qp_init_attr *init)
{
    int err = EINVAL;
    if (!ibpd || !sw_ctx_ok(ibpd->context) || !init)
        goto err;
    struct ibv_context *c = ibpd->context;
    struct sw_reg_host *h = &sw.reg->host[sw.host];
    const struct sw_limits *lim = &h->conf.lim;
    if (init->qp_type != IBV_QPT_RC && init->qp_type != IBV_QPT_UD) {
        sw_log("only RC and UD queue pairs are emulated (asked for type %d)", init->qp_type);
        err = EOPNOTSUPP;
        goto err;
    }
    if (init->srq || !init->send_cq || !init->recv_cq || init->send_cq->context != c ||
        init->recv_cq->context != c)
        goto err;
    struct ibv_qp_cap cap = init->cap;
    if (cap.max_send_wr > lim->max_qp_wr || cap.max_recv_wr > lim->max_qp_wr ||
        cap.max_send_sge > lim->max_sge || cap.max_recv_sge > lim->max_sge ||
        cap.max_inline_data > lim->max_inline)
        goto err;
    cap.max_send_wr = round_wr(SW_MAX(cap.max_send_wr, 1), lim->max_qp_wr);
    cap.max_recv_wr = round_wr(SW_MAX(cap.max_recv_wr, 1), lim->max_qp_wr);
    cap.max_send_sge = SW_MAX(cap.max_send_sge, 1);
    cap.max_recv_sge = SW_MAX(cap.max_recv_sge, 1);
    if (sw_reg_count(&h->n_qp, lim->max_qp, 1) < 0) {
        err = ENOMEM;
        goto err;
    }
    struct sw_qp *qp = calloc(1, sizeof(*qp));
    if (!qp) {
        err = ENOMEM;
        goto err_count;
    }
    qp->sq = calloc(cap.max_send_wr, sizeof(*qp->sq));
    qp->sge_pool = calloc((size_t)cap.max_send_wr * cap.max_send_sge, sizeof(struct ibv_sge));
    qp->inline_pool = calloc((size_t)cap.max_send_wr, SW_MAX(cap.max_inline_data, 1));
    if (!qp->sq || !qp->sge_pool || !qp->inline_pool) {
        err = ENOMEM;
        goto err_free;
    }
    for (uint32_t i = 0; i < cap.max_send_wr; i++) {
        qp->sq[i].sge = qp->sge_pool + (size_t)i * cap.max_send_sge;
        qp->sq[i].inl = qp->inline_pool + (size_t)i * SW_MAX(cap.max_inline_data, 1);
    }
    uint32_t slot;
    pthread_mutex_lock(&sw.obj_lock);
    for (slot = 0; slot < sw.seg->max_qp; slot++)
        if (!sw.qps[slot] && !sw_seg_qp(sw.seg, slot)->used)
            break;
    pthread_mutex_unlock(&sw.obj_lock);
    uint32_t qpn;
    if (slot == sw.seg->max_qp || sw_reg_qp_alloc(slot, &qpn) < 0) {
        err = ENOMEM;
        goto err_free;
    }
    struct sw_sqp *s = sw_seg_qp(sw.seg, slot);
    sw_shm_mutex_init(&s->lock);
    sw_shm_lock(&s->lock);
    uint32_t gen = s->gen + 1;
    memset((char *)s + offsetof(struct sw_sqp, used), 0, sizeof(*s) - offsetof(struct sw_sqp, used));
    s->gen = gen;
    s->qpn = qpn;
    s->state = IBV_QPS_RESET;
    s->pd = SW_CONTAINER(ibpd, struct sw_pd, pd)->id;
    struct sw_cq *rcq = SW_CONTAINER(init->recv_cq, struct sw_cq, cq);
    s->recv_cq_slot = rcq->slot;
    s->recv_cq_gen = rcq->gen;
    s->rq_cap = cap.max_recv_wr;
    s->rq_max_sge = cap.max_recv_sge;
    s->qp_type = init->qp_type;
    s->used = 1;
    sw_shm_unlock(&s->lock);

    qp->slot = slot;
    qp->gen = gen;
    qp->s = s;
    qp->pd = SW_CONTAINER(ibpd, struct sw_pd, pd);
    qp->scq = SW_CONTAINER(init->send_cq, struct sw_cq, cq);
    qp->rcq = rcq;
    qp->sq_sig_all = init->sq_sig_all;
    qp->cap = cap;
    qp->sq_cap = cap.max_send_wr;
    pthread_mutex_init(&qp->sq_lock, NULL);
    qp->qp.context = c;
    qp->qp.qp_context = init->qp_context;
    qp->qp.pd = ibpd;
    qp->qp.send_cq = init->send_cq;
    qp->qp.recv_cq = init->recv_cq;
    qp->qp.srq = NULL;
    qp->qp.handle = slot;
    qp->qp.qp_num = qpn;
    qp->qp.state = IBV_QPS_RESET;
    qp->qp.qp_type = init->qp_type;
    pthread_mutex_init(&qp->qp.mutex, NULL);
    pthread_cond_init(&qp->qp.cond, NULL);
    atomic_fetch_add(&qp->scq->users, 1);
    atomic_fetch_add(&qp->rcq->users, 1);
    atomic_fetch_add(&qp->pd->users, 1);
    pthread_mutex_lock(&sw.obj_lock);
    sw.qps[slot] = qp;
    pthread_mutex_unlock(&sw.obj_lock);
    struct sw_context *ctx = sw_ctx(c);
    pthread_mutex_lock(&ctx->lock);
    ctx->n_qp++;
    pthread_mutex_unlock(&ctx->lock);
    init->cap = cap;
    return &qp->qp;
err_free:
    free(qp->sq);
    free(qp->sge_pool);
    free(qp->inline_pool);
    free(qp);
err_count:
    sw_reg_count(&h->n_qp, lim->max_qp, -1);
err:
    errno = err;
    return NULL;
}

SW_DEFAULT(ibv_query_qp) int sw_query_qp(struct ibv_qp *ibqp, struct ibv_qp_attr *attr,
                                         int mask, struct ibv_qp_init_attr *init);
int sw_query_qp(struct ibv_qp *ibqp, struct ibv_qp_attr *attr, int mask,
                struct ibv_qp_init_attr *init)
{
    if (!ibqp || !sw_ctx_ok(ibqp->context) || !attr || !init)
        return EINVAL;
    struct sw_qp *qp = SW_CONTAINER(ibqp, struct sw_qp, qp);
    struct sw_sqp *s = qp->s;
    memset(attr, 0, sizeof(*attr));
    sw_shm_lock(&s->lock);
    attr->qp_state = s->state;
    attr->path_mtu = s->path_mtu;
    attr->rq_psn = s->epsn;
    attr->dest_qp_num = s->dest_qpn;
    attr->qp_access_flags = s->access;
    attr->max_dest_rd_atomic = (uint8_t)s->max_dest_rd_atomic;
    attr->min_rnr_timer = (uint8_t)s->min_rnr_timer;
    attr->port_num = (uint8_t)s->port;
    attr->qkey = s->qkey;
    sw_shm_unlock(&s->lock);
    attr->cur_qp_state = attr->qp_state;
    attr->path_mig_state = IBV_MIG_MIGRATED;
    pthread_mutex_lock(&qp->sq_lock);
    attr->sq_psn = qp->sq_psn;
    attr->sq_draining = attr->qp_state == IBV_QPS_SQD && qp->sq_exec != qp->sq_post;
    pthread_mutex_unlock(&qp->sq_lock);
    attr->cap = qp->cap;
    attr->ah_attr = qp->ah;
    attr->pkey_index = (uint16_t)qp->pkey_index;
    attr->en_sqd_async_notify = (uint8_t)qp->en_sqd_async_notify;
    attr->max_rd_atomic = (uint8_t)qp->max_rd_atomic;
    attr->timeout = (uint8_t)qp->timeout;
    attr->retry_cnt = (uint8_t)qp->retry_cnt;
    attr->rnr_retry = (uint8_t)qp->rnr_retry;
    memset(init, 0, sizeof(*init));
    init->qp_context = ibqp->qp_context;
    init->send_cq = ibqp->send_cq;
    init->recv_cq = ibqp->recv_cq;
    init->cap = qp->cap;
    init->qp_type = ibqp->qp_type;
    init->sq_sig_all = qp->sq_sig_all;
    return 0;
}

SW_DEFAULT(ibv_destroy_qp) int sw_destroy_qp(struct ibv_qp *ibqp);
int sw_destroy_qp(struct ibv_qp *ibqp)
{
    if (!ibqp || !sw_ctx_ok(ibqp->context))
        return EINVAL;
    struct sw_qp *qp = SW_CONTAINER(ibqp, struct sw_qp, qp);
    /* wait for the caller to acknowledge its events, as libibverbs does */
    bool told = false;
    pthread_mutex_lock(&ibqp->mutex);
    while (ibqp->events_completed != qp->events_reported) {
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        ts.tv_sec += 1;
        if (pthread_cond_timedwait(&ibqp->cond, &ibqp->mutex, &ts) == ETIMEDOUT && !told) {
            sw_check_report("ibv_destroy_qp() waits for %u async events to be acknowledged",
                            qp->events_reported - ibqp->events_completed);
            told = true;
        }
    }
    pthread_mutex_unlock(&ibqp->mutex);
    /* out of the NIC thread's sight before anything is freed */
    pthread_mutex_lock(&sw.nic_lock);
    pthread_mutex_lock(&sw.obj_lock);
    qp->dying = true;
    sw.qps[qp->slot] = NULL;
    pthread_mutex_unlock(&sw.obj_lock);
    pthread_mutex_unlock(&sw.nic_lock);
    /* events queued and not yet taken go with it, as the kernel drops them */
    sw_async_forget(sw_ctx(ibqp->context), ibqp, NULL);
    sw_shm_lock(&qp->s->lock);
    for (uint32_t i = qp->s->rq_polled; i != qp->s->rq_tail; i++) {
        struct sw_rwqe *r = sw_seg_rwqe(sw.seg, qp->slot, i % qp->s->rq_cap);
        sw_mr_use(r->sge, r->num_sge, -1);
    }
    qp->s->used = 0;
    qp->s->state = IBV_QPS_RESET;
    sw_shm_unlock(&qp->s->lock);
    sw_reg_qp_free(ibqp->qp_num);
    sw_cq_forget_qp(qp->scq, qp->slot, qp->gen);
    if (qp->rcq != qp->scq)
        sw_cq_forget_qp(qp->rcq, qp->slot, qp->gen);
    for (uint32_t i = qp->sq_retired; i != qp->sq_post; i++) {
        struct sw_swqe *w = &qp->sq[i % qp->sq_cap];
        if (!(w->flags & IBV_SEND_INLINE))
            sw_mr_use(w->sge, w->num_sge, -1);
        free(w->staging);
    }
    atomic_fetch_sub(&qp->scq->users, 1);
    atomic_fetch_sub(&qp->rcq->users, 1);
    atomic_fetch_sub(&qp->pd->users, 1);
    struct sw_context *ctx = sw_ctx(ibqp->context);
    pthread_mutex_lock(&ctx->lock);
    ctx->n_qp--;
    pthread_mutex_unlock(&ctx->lock);
    struct sw_reg_host *h = &sw.reg->host[sw.host];
    sw_reg_count(&h->n_qp, h->conf.lim.max_qp, -1);
    pthread_mutex_destroy(&qp->sq_lock);
    free(qp->sq);
    free(qp->sge_pool);
    free(qp->inline_pool);
    free(qp);
    return 0;
}

/* Completes every posted receive with IBV_WC_WR_FLUSH_ERR. With the QP
 * slot's lock; its recv CQ is in the same segment. */
void sw_rq_flush_locked(struct sw_seg *seg, struct sw_sqp *s, uint32_t slot)
{
    for (; s->rq_head != s->rq_tail; s->rq_head++) {
        struct sw_rwqe *r = sw_seg_rwqe(seg, slot, s->rq_head % s->rq_cap);
        struct sw_cqe e;
        memset(&e, 0, sizeof(e));
        e.wc.wr_id = r->wr_id;
        e.wc.status = IBV_WC_WR_FLUSH_ERR;
        e.wc.opcode = SW_WC_OPCODE_UNDEFINED;
        e.wc.qp_num = s->qpn;
        e.kind = SW_CQE_RECV;
        e.qp_slot = slot;
        e.qp_gen = s->gen;
        sw_cq_push(seg, s->recv_cq_slot, s->recv_cq_gen, &e, true);
    }
}

/* Moves QP SLOT of SEG to the error state, as a NIC does on a fatal
 * error of either side, with EVENT_TYPE raised to its owner (0: none).
 * The owner's NIC flushes its send queue when it next looks. */
void sw_qp_set_error(struct sw_seg *seg, uint32_t slot, uint32_t event_type)
{
    struct sw_sqp *s = sw_seg_qp(seg, slot);
    sw_shm_lock(&s->lock);
    bool changed = s->used && s->state != IBV_QPS_ERR && s->state != IBV_QPS_RESET;
    if (changed) {
        s->state = IBV_QPS_ERR;
        sw_rq_flush_locked(seg, s, slot);
    }
    uint32_t gen = s->gen;
    sw_shm_unlock(&s->lock);
    if (changed && event_type)
        sw_seg_post_event(seg, event_type, SW_EV_QP, slot, gen);
    else if (changed)
        sw_seg_wake(seg);
}

/* A send of UD QP QP completed in error: its send queue stops (SQE) and
 * flushes what follows, its receives go on, with no async event: the
 * error completion is the news, as the IBA has it. ibv_modify_qp() to RTS
 * resumes it. */
void sw_qp_set_sqe(struct sw_qp *qp)
{
    struct sw_sqp *s = qp->s;
    sw_shm_lock(&s->lock);
    if (s->state == IBV_QPS_RTS || s->state == IBV_QPS_SQD)
        s->state = IBV_QPS_SQE;
    sw_shm_unlock(&s->lock);
    sw_seg_wake(sw.seg);
}

/* Frees the send queue's slots up to sequence UPTO, the caller having
 * polled the completion of UPTO - 1. */
void sw_sq_retire(struct sw_qp *qp, uint32_t upto)
{
    pthread_mutex_lock(&qp->sq_lock);
    for (; qp->sq_retired != upto && qp->sq_retired != qp->sq_done; qp->sq_retired++) {
        struct sw_swqe *w = &qp->sq[qp->sq_retired % qp->sq_cap];
        if (w->sum && sw_check_sum(w) != w->sum)
            sw_check_report("QP 0x%x: the buffer of work request 0x%llx changed before its "
                            "completion was polled", qp->qp.qp_num,
                            (unsigned long long)w->wr_id);
        if (!(w->flags & IBV_SEND_INLINE))
            sw_mr_use(w->sge, w->num_sge, -1);
    }
    pthread_mutex_unlock(&qp->sq_lock);
}

/* A receive completion was polled: its slot may take a new receive. */
void sw_rq_polled(struct sw_qp *qp)
{
    struct sw_sqp *s = qp->s;
    sw_shm_lock(&s->lock);
    if (s->rq_polled != s->rq_head) {
        struct sw_rwqe *r = sw_seg_rwqe(sw.seg, qp->slot, s->rq_polled % s->rq_cap);
        sw_mr_use(r->sge, r->num_sge, -1);
        s->rq_polled++;
    }
    sw_shm_unlock(&s->lock);
}
