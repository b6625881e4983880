/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * ibv_qp.c: the attributes of each QP state transition, as pure
 * functions of the parameters and of what the two sides published, so
 * that they are tested without a device (ibv_conn.c applies them).
 *
 * RC QPs go RESET -> INIT (port, remote read and write allowed) -> RTR
 * (the peer's QP number and first PSN, the path, the smaller of the two
 * MTUs) -> RTS (our first PSN, timeouts and retries). The UD QP of the
 * connection knock goes RESET -> INIT (Q_Key) -> RTR -> RTS.
 */
#include "config.h"

#include <string.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#include "plugins/ib-verbs/ibv.h"

void weft__ibv_qp_init_attr(struct ibv_qp_attr *a, int *mask, int port, int rdma)
{
    memset(a, 0, sizeof(*a));
    a->qp_state = IBV_QPS_INIT;
    a->pkey_index = 0;
    a->port_num = (uint8_t)port;
    *mask = IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT;
    if (rdma) {
        /* Remote read: the 1-byte read that flushes GPU-bound data. */
        a->qp_access_flags = IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ;
        *mask |= IBV_QP_ACCESS_FLAGS;
    } else {
        a->qkey = WIB_QKEY;
        *mask |= IBV_QP_QKEY;
    }
}

/* Whether two InfiniBand ports are in different subnets: then packets
 * need a global route header to cross the router. */
static int ib_other_subnet(const struct wib_wire_rail *a, const struct wib_wire_rail *b)
{
    return memcmp(a->gid, b->gid, 8) != 0;
}

void weft__ibv_ah_attr(struct ibv_ah_attr *ah, const struct wib_params *p,
                       const struct wib_wire_rail *local, int local_gid_index,
                       const struct wib_wire_rail *remote)
{
    int global = remote->link_layer == IBV_LINK_LAYER_ETHERNET || p->gid_index >= 0 ||
                 ib_other_subnet(local, remote);

    memset(ah, 0, sizeof(*ah));
    ah->port_num = local->port;
    ah->sl = (uint8_t)p->sl;
    ah->src_path_bits = 0;
    ah->static_rate = 0;
    if (remote->link_layer != IBV_LINK_LAYER_ETHERNET)
        ah->dlid = remote->lid;
    if (!global)
        return;
    ah->is_global = 1;
    memcpy(ah->grh.dgid.raw, remote->gid, 16);
    ah->grh.sgid_index = (uint8_t)(local_gid_index >= 0 ? local_gid_index : 0);
    ah->grh.hop_limit = 255;
    ah->grh.traffic_class = (uint8_t)p->traffic_class;
    ah->grh.flow_label = 0;
}

void weft__ibv_qp_rtr_attr(struct ibv_qp_attr *a, int *mask, const struct wib_params *p,
                           const struct wib_wire_rail *local, int local_gid_index,
                           const struct wib_wire_rail *remote, uint32_t remote_qpn,
                           uint32_t remote_psn)
{
    memset(a, 0, sizeof(*a));
    a->qp_state = IBV_QPS_RTR;
    /* Both ends must agree on the MTU: the smaller of the two. */
    a->path_mtu = (enum ibv_mtu)(local->mtu < remote->mtu ? local->mtu : remote->mtu);
    a->dest_qp_num = remote_qpn & 0xffffff;
    a->rq_psn = remote_psn & 0xffffff;
    a->max_dest_rd_atomic = 1;
    a->min_rnr_timer = (uint8_t)p->min_rnr_timer;
    weft__ibv_ah_attr(&a->ah_attr, p, local, local_gid_index, remote);
    *mask = IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
            IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER;
}

void weft__ibv_qp_rts_attr(struct ibv_qp_attr *a, int *mask, const struct wib_params *p,
                           uint32_t psn)
{
    memset(a, 0, sizeof(*a));
    a->qp_state = IBV_QPS_RTS;
    a->timeout = (uint8_t)p->timeout;
    a->retry_cnt = (uint8_t)p->retry_cnt;
    a->rnr_retry = (uint8_t)p->rnr_retry;
    a->sq_psn = psn & 0xffffff;
    a->max_rd_atomic = 1;
    *mask = IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
            IBV_QP_SQ_PSN | IBV_QP_MAX_QP_RD_ATOMIC;
}

uint32_t weft__ibv_psn(void)
{
    uint32_t v;

    /* A random start PSN keeps a late packet of an earlier QP with the
     * same number from being taken for a new one. */
    if (getrandom(&v, sizeof(v), GRND_NONBLOCK) != (ssize_t)sizeof(v)) {
        struct timespec ts;

        clock_gettime(CLOCK_MONOTONIC, &ts);
        v = (uint32_t)ts.tv_nsec * 2654435761u ^ (uint32_t)getpid();
    }
    return v & 0xffffff;
}
