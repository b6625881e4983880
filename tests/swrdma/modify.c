/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * modify.c: the state machines of RC and UD queue pairs. Which
 * transitions exist, and which attributes each requires or allows,
 * follow the kernel's table (ib_modify_qp_is_ok()) that ibv_modify_qp(3)
 * summarises, one column per QP type: a
 * missing required attribute or one the transition does not take fails
 * the whole call with EINVAL and changes nothing, so do values out of
 * range (port, P_Key index, MTU above the port's active MTU, read and
 * atomic depths above the device's, a RoCE address vector without GRH or
 * with an empty source GID entry).
 *
 * A UD QP takes only P_Key index, port and Q_Key on the way to INIT,
 * nothing for RTR and the SQ PSN for RTS: an address vector, access
 * flags, MTU or any other connection attribute fails with EINVAL. Its
 * send errors leave it in SQE, from which RTS is allowed again.
 *
 * Moving to RESET drops every posted request without completions;
 * moving to ERR flushes them (IBV_WC_WR_FLUSH_ERR), the receive queue at
 * once, the send queue from the NIC thread, which owns it.
 */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "tests/swrdma/swrdma.h"

enum { NSTATES = IBV_QPS_ERR + 1 };

struct transition {
    bool valid;
    int req, opt;
};

#define A(x) IBV_QP_##x

static const struct transition rc_table[NSTATES][NSTATES] = {
    [IBV_QPS_RESET] = {
        [IBV_QPS_RESET] = { true, 0, 0 },
        [IBV_QPS_INIT] = { true, A(PKEY_INDEX) | A(PORT) | A(ACCESS_FLAGS), 0 },
        [IBV_QPS_ERR] = { true, 0, 0 },
    },
    [IBV_QPS_INIT] = {
        [IBV_QPS_RESET] = { true, 0, 0 },
        [IBV_QPS_ERR] = { true, 0, 0 },
        [IBV_QPS_INIT] = { true, 0, A(PKEY_INDEX) | A(PORT) | A(ACCESS_FLAGS) },
        [IBV_QPS_RTR] = { true,
                          A(AV) | A(PATH_MTU) | A(DEST_QPN) | A(RQ_PSN) |
                              A(MAX_DEST_RD_ATOMIC) | A(MIN_RNR_TIMER),
                          A(ALT_PATH) | A(ACCESS_FLAGS) | A(PKEY_INDEX) },
    },
    [IBV_QPS_RTR] = {
        [IBV_QPS_RESET] = { true, 0, 0 },
        [IBV_QPS_ERR] = { true, 0, 0 },
        [IBV_QPS_RTS] = { true,
                          A(SQ_PSN) | A(TIMEOUT) | A(RETRY_CNT) | A(RNR_RETRY) |
                              A(MAX_QP_RD_ATOMIC),
                          A(CUR_STATE) | A(ALT_PATH) | A(ACCESS_FLAGS) | A(MIN_RNR_TIMER) |
                              A(PATH_MIG_STATE) },
    },
    [IBV_QPS_RTS] = {
        [IBV_QPS_RESET] = { true, 0, 0 },
        [IBV_QPS_ERR] = { true, 0, 0 },
        [IBV_QPS_RTS] = { true, 0,
                          A(CUR_STATE) | A(ACCESS_FLAGS) | A(ALT_PATH) | A(PATH_MIG_STATE) |
                              A(MIN_RNR_TIMER) },
        [IBV_QPS_SQD] = { true, 0, A(EN_SQD_ASYNC_NOTIFY) },
    },
    [IBV_QPS_SQD] = {
        [IBV_QPS_RESET] = { true, 0, 0 },
        [IBV_QPS_ERR] = { true, 0, 0 },
        [IBV_QPS_RTS] = { true, 0,
                          A(CUR_STATE) | A(ALT_PATH) | A(ACCESS_FLAGS) | A(MIN_RNR_TIMER) |
                              A(PATH_MIG_STATE) },
        [IBV_QPS_SQD] = { true, 0,
                          A(PKEY_INDEX) | A(PORT) | A(AV) | A(ALT_PATH) | A(ACCESS_FLAGS) |
                              A(TIMEOUT) | A(RETRY_CNT) | A(RNR_RETRY) | A(MAX_QP_RD_ATOMIC) |
                              A(MAX_DEST_RD_ATOMIC) | A(MIN_RNR_TIMER) | A(PATH_MIG_STATE) },
    },
    [IBV_QPS_SQE] = {
        [IBV_QPS_RESET] = { true, 0, 0 },
        [IBV_QPS_ERR] = { true, 0, 0 },
    },
    [IBV_QPS_ERR] = {
        [IBV_QPS_RESET] = { true, 0, 0 },
        [IBV_QPS_ERR] = { true, 0, 0 },
    },
};

/* The UD column of the same table: the destination is in each work
 * request's AH, so there is no path to set up; the Q_Key may change on
 * the way and in every sending state. */
static const struct transition ud_table[NSTATES][NSTATES] = {
    [IBV_QPS_RESET] = {
        [IBV_QPS_RESET] = { true, 0, 0 },
        [IBV_QPS_INIT] = { true, A(PKEY_INDEX) | A(PORT) | A(QKEY), 0 },
        [IBV_QPS_ERR] = { true, 0, 0 },
    },
    [IBV_QPS_INIT] = {
        [IBV_QPS_RESET] = { true, 0, 0 },
        [IBV_QPS_ERR] = { true, 0, 0 },
        [IBV_QPS_INIT] = { true, 0, A(PKEY_INDEX) | A(PORT) | A(QKEY) },
        [IBV_QPS_RTR] = { true, 0, A(PKEY_INDEX) | A(QKEY) },
    },
    [IBV_QPS_RTR] = {
        [IBV_QPS_RESET] = { true, 0, 0 },
        [IBV_QPS_ERR] = { true, 0, 0 },
        [IBV_QPS_RTS] = { true, A(SQ_PSN), A(CUR_STATE) | A(QKEY) },
    },
    [IBV_QPS_RTS] = {
        [IBV_QPS_RESET] = { true, 0, 0 },
        [IBV_QPS_ERR] = { true, 0, 0 },
        [IBV_QPS_RTS] = { true, 0, A(CUR_STATE) | A(QKEY) },
        [IBV_QPS_SQD] = { true, 0, A(EN_SQD_ASYNC_NOTIFY) },
    },
    [IBV_QPS_SQD] = {
        [IBV_QPS_RESET] = { true, 0, 0 },
        [IBV_QPS_ERR] = { true, 0, 0 },
        [IBV_QPS_RTS] = { true, 0, A(CUR_STATE) | A(QKEY) },
        [IBV_QPS_SQD] = { true, 0, A(PKEY_INDEX) | A(QKEY) },
    },
    [IBV_QPS_SQE] = {
        [IBV_QPS_RESET] = { true, 0, 0 },
        [IBV_QPS_ERR] = { true, 0, 0 },
        [IBV_QPS_RTS] = { true, 0, A(CUR_STATE) | A(QKEY) },
    },
    [IBV_QPS_ERR] = {
        [IBV_QPS_RESET] = { true, 0, 0 },
        [IBV_QPS_ERR] = { true, 0, 0 },
    },
};

#define SW_QP_ACCESS (IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ | \
                      IBV_ACCESS_REMOTE_ATOMIC | IBV_ACCESS_MW_BIND)

static bool gid_empty(const uint8_t raw[16])
{
    static const uint8_t zero[16];
    return !memcmp(raw, zero, 16);
}

/* The address vector's values, for a QP bound to PORT (1-based). */
static int check_av(const struct ibv_ah_attr *ah, uint32_t port)
{
    const struct sw_reg_host *h = &sw.reg->host[sw.host];
    if (ah->port_num < 1 || ah->port_num > h->conf.nports || ah->port_num != port)
        return EINVAL;
    const struct sw_reg_port *p = &h->port[port - 1];
    if (ah->sl > 15)
        return EINVAL;
    if (p->link_layer == IBV_LINK_LAYER_ETHERNET && !ah->is_global)
        return EINVAL;          /* IBV_QPF_GRH_REQUIRED */
    if (ah->is_global) {
        if (ah->grh.sgid_index >= SW_GID_TBL_LEN || gid_empty(p->gid[ah->grh.sgid_index].raw))
            return EINVAL;
        if (ah->grh.dgid.raw[0] == 0xff)
            return EINVAL;      /* multicast, on a connected QP */
    }
    if (p->link_layer == IBV_LINK_LAYER_INFINIBAND && (ah->dlid == 0 || ah->dlid >= 0xc000))
        return EINVAL;
    return 0;
}

int sw_modify_qp(struct ibv_qp *ibqp, struct ibv_qp_attr *attr, int mask)
{
    struct sw_qp *qp = SW_CONTAINER(ibqp, struct sw_qp, qp);
    struct sw_sqp *s = qp->s;
    const struct sw_reg_host *h = &sw.reg->host[sw.host];
    const struct sw_limits *lim = &h->conf.lim;
    int rc = EINVAL;

    /* the NIC thread is between requests while the queue may be reset */
    pthread_mutex_lock(&sw.nic_lock);
    pthread_mutex_lock(&qp->sq_lock);
    sw_shm_lock(&s->lock);
    uint32_t cur = s->state;
    if ((mask & IBV_QP_CUR_STATE) && attr->cur_qp_state != cur)
        goto out;
    uint32_t next = mask & IBV_QP_STATE ? attr->qp_state : cur;
    if (next >= NSTATES)
        goto out;
    const struct transition *t =
        ibqp->qp_type == IBV_QPT_UD ? &ud_table[cur][next] : &rc_table[cur][next];
    if (!t->valid || (mask & t->req) != t->req || (mask & ~(t->req | t->opt | IBV_QP_STATE)))
        goto out;

    /* values, all checked before anything changes */
    uint32_t port = mask & IBV_QP_PORT ? attr->port_num : s->port;
    if ((mask & IBV_QP_PORT) && (port < 1 || port > h->conf.nports))
        goto out;
    if ((mask & IBV_QP_PKEY_INDEX) && attr->pkey_index != 0)
        goto out;
    if ((mask & IBV_QP_ACCESS_FLAGS) && (attr->qp_access_flags & ~SW_QP_ACCESS))
        goto out;
    if ((mask & IBV_QP_AV) && (rc = check_av(&attr->ah_attr, port)))
        goto out;
    rc = EINVAL;
    if ((mask & IBV_QP_PATH_MTU) &&
        (attr->path_mtu < IBV_MTU_256 || attr->path_mtu > h->port[port - 1].active_mtu))
        goto out;
    if ((mask & IBV_QP_DEST_QPN) && attr->dest_qp_num >> 24)
        goto out;
    if ((mask & IBV_QP_TIMEOUT) && attr->timeout > 31)
        goto out;
    if ((mask & IBV_QP_RETRY_CNT) && attr->retry_cnt > 7)
        goto out;
    if ((mask & IBV_QP_RNR_RETRY) && attr->rnr_retry > 7)
        goto out;
    if ((mask & IBV_QP_MIN_RNR_TIMER) && attr->min_rnr_timer > 31)
        goto out;
    if ((mask & IBV_QP_MAX_QP_RD_ATOMIC) && attr->max_rd_atomic > lim->max_qp_init_rd_atom)
        goto out;
    if ((mask & IBV_QP_MAX_DEST_RD_ATOMIC) && attr->max_dest_rd_atomic > lim->max_qp_rd_atom)
        goto out;
    if ((mask & IBV_QP_PATH_MIG_STATE) && attr->path_mig_state != IBV_MIG_MIGRATED)
        goto out;
    if (mask & IBV_QP_ALT_PATH)
        goto out;               /* no automatic path migration on this device */

    /* apply */
    if (mask & IBV_QP_PORT)
        s->port = port;
    if (mask & IBV_QP_PKEY_INDEX)
        qp->pkey_index = attr->pkey_index;
    if (mask & IBV_QP_QKEY)
        s->qkey = attr->qkey;
    if (mask & IBV_QP_ACCESS_FLAGS)
        s->access = attr->qp_access_flags;
    if (mask & IBV_QP_AV) {
        qp->ah = attr->ah_attr;
        s->is_global = attr->ah_attr.is_global;
        s->dlid = attr->ah_attr.dlid;
        s->sl = attr->ah_attr.sl;
        s->sgid_index = attr->ah_attr.grh.sgid_index;
        memcpy(s->dgid, attr->ah_attr.grh.dgid.raw, 16);
        qp->peer.valid = false;
    }
    if (mask & IBV_QP_PATH_MTU)
        s->path_mtu = attr->path_mtu;
    if (mask & IBV_QP_DEST_QPN) {
        s->dest_qpn = attr->dest_qp_num;
        qp->peer.valid = false;
    }
    if (mask & IBV_QP_RQ_PSN)
        s->epsn = attr->rq_psn & SW_PSN_MASK;
    if (mask & IBV_QP_SQ_PSN)
        qp->sq_psn = attr->sq_psn & SW_PSN_MASK;
    if (mask & IBV_QP_MAX_DEST_RD_ATOMIC)
        s->max_dest_rd_atomic = attr->max_dest_rd_atomic;
    if (mask & IBV_QP_MIN_RNR_TIMER)
        s->min_rnr_timer = attr->min_rnr_timer;
    if (mask & IBV_QP_TIMEOUT)
        qp->timeout = attr->timeout;
    if (mask & IBV_QP_RETRY_CNT)
        qp->retry_cnt = attr->retry_cnt;
    if (mask & IBV_QP_RNR_RETRY)
        qp->rnr_retry = attr->rnr_retry;
    if (mask & IBV_QP_MAX_QP_RD_ATOMIC)
        qp->max_rd_atomic = attr->max_rd_atomic;
    if (mask & IBV_QP_EN_SQD_ASYNC_NOTIFY)
        qp->en_sqd_async_notify = attr->en_sqd_async_notify;

    if (next == IBV_QPS_RESET && cur != IBV_QPS_RESET) {
        /* everything posted is dropped without a completion */
        s->rq_head = s->rq_tail = s->rq_polled = 0;
        for (uint32_t i = qp->sq_retired; i != qp->sq_post; i++) {
            struct sw_swqe *w = &qp->sq[i % qp->sq_cap];
            free(w->staging);
            w->staging = NULL;
        }
        qp->sq_post = qp->sq_exec = qp->sq_done = qp->sq_retired = 0;
        qp->reads_pending = 0;
        s->comm_est = 0;
        s->port = 0;
        s->access = 0;
        s->qkey = 0;
        qp->peer.valid = false;
    }
    if (next == IBV_QPS_ERR && cur != IBV_QPS_ERR)
        sw_rq_flush_locked(sw.seg, s, qp->slot);
    if (next == IBV_QPS_SQD && cur != IBV_QPS_SQD)
        qp->sqd_event_sent = 0;
    s->state = next;
    rc = 0;
out:
    sw_shm_unlock(&s->lock);
    pthread_mutex_unlock(&qp->sq_lock);
    pthread_mutex_unlock(&sw.nic_lock);
    if (rc == 0) {
        if (mask & IBV_QP_STATE)
            ibqp->state = attr->qp_state;
        /* the NIC flushes (ERR) or resumes (RTS) the send queue */
        sw_seg_wake(sw.seg);
    }
    return rc;
}

SW_DEFAULT(ibv_modify_qp) int sw_ibv_modify_qp(struct ibv_qp *qp, struct ibv_qp_attr *attr,
                                               int mask);
int sw_ibv_modify_qp(struct ibv_qp *qp, struct ibv_qp_attr *attr, int mask)
{
    if (!qp || !attr || !sw_ctx_ok(qp->context))
        return EINVAL;
    return sw_modify_qp(qp, attr, mask);
}
