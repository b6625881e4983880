/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * ud.c: what the wire and the target's NIC do with one datagram of an
 * unreliable-datagram QP, executed by the sender's NIC thread with no
 * help from the target's process, as exec.c does for a connection.
 *
 * A datagram is sent once and nothing answers it, so the sender's
 * completion says only that it left: IBV_WC_SUCCESS whether it arrived
 * or not. The sender's own checks fail the request, and move its QP to
 * the send-queue-error state (SQE, nic.c; receives go on): a local key
 * that is not this process's, not in the QP's PD or out of range
 * (IBV_WC_LOC_PROT_ERR), and a message longer than the port's active MTU
 * (IBV_WC_LOC_LEN_ERR), as a UD message is one packet.
 *
 * Silently lost, as on a real fabric: no route to the AH's GID or LID
 * (or a multicast one: no multicast here), a destination QP number that
 * is unknown, not on that host and port, not UD, or not yet at RTR, a
 * Q_Key other than the target QP's (a WR's Q_Key with the high bit set
 * means the sending QP's own, as the IBA says), no receive posted (UD
 * has no RNR), a port down, a process gone or off the fabric (fault
 * injection).
 *
 * At the target each datagram takes the oldest posted receive. Its
 * first 40 bytes are the GRH's (ibv_post_recv(3)) and wc.byte_len
 * counts them, GRH or not. A receive too small for 40 bytes
 * plus the payload, or with a bad key, completes there with
 * IBV_WC_LOC_LEN_ERR or IBV_WC_LOC_PROT_ERR and moves that QP to error,
 * as an error of a receive queue does in the IBA; the sender still
 * sees success.
 *
 * What the 40 bytes hold. An InfiniBand port writes a GRH only for an
 * AH with is_global (IBV_WC_GRH set); a RoCE port always does. The GRH
 * is the IPv6-shaped IBA header: version 6, traffic class, flow label,
 * payload length (BTH, DETH, payload and ICRC), next header 0x1b (17,
 * UDP, for RoCE v2 over IPv6), hop limit, source and destination GID.
 * For RoCE v2 between IPv4 addresses (::ffff:a.b.c.d GIDs) the packet
 * has an IPv4 header instead: ConnectX writes it into the last 20 bytes
 * and leaves the first 20 undefined; here they are zeros. The IPv4
 * header is complete (version 4, IHL 5, TOS, total length, DF, TTL,
 * protocol UDP, checksum, addresses), so ibv_init_ah_from_wc() and
 * programs that parse it find what they would on the wire.
 */
#include "config.h"

#include <arpa/inet.h>
#include <string.h>
#include <sys/uio.h>

#include "tests/swrdma/swrdma.h"

/* BTH and DETH before the payload, the ICRC after it. */
#define SW_UD_HDRS (12 + 8 + 4)

static bool v4_mapped(const uint8_t raw[16])
{
    static const uint8_t prefix[12] = { 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff };
    return !memcmp(raw, prefix, 12);
}

static uint16_t ip_checksum(const uint8_t *h, unsigned len)
{
    uint32_t sum = 0;
    for (unsigned i = 0; i < len; i += 2)
        sum += (uint32_t)h[i] << 8 | h[i + 1];
    while (sum >> 16)
        sum = (sum & 0xffff) + (sum >> 16);
    return (uint16_t)~sum;
}

/* The 40 bytes a GRH-carrying datagram puts before its payload. */
static void build_grh(uint8_t grh[SW_GRH_BYTES], const struct sw_reg_gid *sgid,
                      const struct ibv_global_route *g, uint64_t len)
{
    memset(grh, 0, SW_GRH_BYTES);
    if (sgid->type == IBV_GID_TYPE_ROCE_V2 && v4_mapped(sgid->raw) && v4_mapped(g->dgid.raw)) {
        uint8_t *ip = grh + 20;
        uint16_t total = (uint16_t)(20 + 8 + SW_UD_HDRS + len);
        ip[0] = 0x45;
        ip[1] = g->traffic_class;
        ip[2] = (uint8_t)(total >> 8);
        ip[3] = (uint8_t)total;
        ip[6] = 0x40;                   /* don't fragment */
        ip[8] = g->hop_limit;
        ip[9] = 17;                     /* UDP, port 4791 */
        memcpy(ip + 12, sgid->raw + 12, 4);
        memcpy(ip + 16, g->dgid.raw + 12, 4);
        uint16_t sum = ip_checksum(ip, 20);
        ip[10] = (uint8_t)(sum >> 8);
        ip[11] = (uint8_t)sum;
        return;
    }
    bool udp = sgid->type == IBV_GID_TYPE_ROCE_V2;
    uint32_t vtf = 6u << 28 | (uint32_t)g->traffic_class << 20 | (g->flow_label & 0xfffff);
    uint16_t paylen = (uint16_t)((udp ? 8 : 0) + SW_UD_HDRS + len);
    vtf = htonl(vtf);
    memcpy(grh, &vtf, 4);
    grh[4] = (uint8_t)(paylen >> 8);
    grh[5] = (uint8_t)paylen;
    grh[6] = udp ? 17 : 0x1b;
    grh[7] = g->hop_limit;
    memcpy(grh + 8, sgid->raw, 16);
    memcpy(grh + 24, g->dgid.raw, 16);
}

/* The receive's scatter list from byte SKIP on, LEN bytes of it. */
static void window(const struct sw_iovs *all, uint64_t skip, uint64_t len, struct sw_iovs *out)
{
    out->n = 0;
    out->len = 0;
    for (unsigned i = 0; i < all->n && out->len < len; i++) {
        uint64_t n = all->v[i].iov_len;
        if (skip >= n) {
            skip -= n;
            continue;
        }
        uint64_t take = SW_MIN(n - skip, len - out->len);
        out->v[out->n].iov_base = (char *)all->v[i].iov_base + skip;
        out->v[out->n].iov_len = take;
        out->n++;
        out->len += take;
        skip = 0;
    }
}

/* The target's checks of the receive it took. With its QP slot's lock;
 * returns an IBV_WC status for the receive. */
static int scatter_list(const struct sw_reg_qp *e, const struct sw_sqp *r,
                        const struct sw_rwqe *rw, uint64_t need, struct sw_iovs *dst)
{
    dst->n = 0;
    dst->len = 0;
    for (uint32_t i = 0; i < rw->num_sge && i < SW_MAX_SGE_CAP; i++) {
        const struct ibv_sge *sge = &rw->sge[i];
        if (sge->length == 0)
            continue;
        struct sw_reg_mr m;
        sw_busy_enter(SW_MAX_SGE_CAP + i, sge->lkey);
        if (!sw_reg_mr_read(sge->lkey, &m) || m.proc != e->proc || m.proc_gen != e->proc_gen ||
            m.pd != r->pd || !(m.access & IBV_ACCESS_LOCAL_WRITE) || sge->addr < m.iova ||
            sge->addr - m.iova + sge->length > m.length)
            return IBV_WC_LOC_PROT_ERR;
        dst->v[dst->n].iov_base = (void *)(uintptr_t)(m.addr + (sge->addr - m.iova));
        dst->v[dst->n].iov_len = sge->length;
        dst->n++;
        dst->len += sge->length;
    }
    return dst->len < need ? IBV_WC_LOC_LEN_ERR : IBV_WC_SUCCESS;
}

/* Puts the datagram W of QP, its payload in SRC, into the receive queue
 * of the QP it names, or loses it. */
static void deliver(struct sw_qp *qp, struct sw_swqe *w, struct sw_iovs *src)
{
    const struct sw_reg_host *h = &sw.reg->host[sw.host];
    sw_shm_lock(&qp->s->lock);
    uint32_t my_port = qp->s->port, my_qkey = qp->s->qkey;
    sw_shm_unlock(&qp->s->lock);
    const struct sw_reg_port *mp = &h->port[my_port - 1];
    if (atomic_load(&sw.lost) || !sw_port_up(sw.host, my_port))
        return;
    uint32_t host, port;
    struct sw_reg_qp e;
    if (!sw_host_route(&w->av, mp->link_layer, &host, &port) ||
        !sw_reg_qp_find(w->remote_qpn, &e) || e.host != host || !sw_port_up(host, port))
        return;
    struct sw_reg_proc *pr = &sw.reg->proc[e.proc];
    if (atomic_load(&pr->lost) || !sw_proc_alive(e.proc, e.proc_gen))
        return;
    pid_t pid;
    struct sw_seg *seg = sw_seg_map_peer(e.proc, e.proc_gen, &pid);
    if (!seg)
        return;
    uint32_t qkey = w->remote_qkey & SW_QKEY_USE_QP ? my_qkey : w->remote_qkey;

    struct sw_sqp *r = sw_seg_qp(seg, e.slot);
    sw_shm_lock(&r->lock);
    if (!r->used || r->qpn != e.qpn || r->qp_type != IBV_QPT_UD || r->port != port ||
        (r->state != IBV_QPS_RTR && r->state != IBV_QPS_RTS && r->state != IBV_QPS_SQD &&
         r->state != IBV_QPS_SQE) ||
        r->qkey != qkey || r->rq_head == r->rq_tail) {
        sw_shm_unlock(&r->lock);
        return;
    }
    const struct sw_rwqe *rw = sw_seg_rwqe(seg, e.slot, r->rq_head % r->rq_cap);
    struct sw_iovs dst;
    int st = scatter_list(&e, r, rw, SW_GRH_BYTES + w->length, &dst);
    r->rq_head++;
    struct sw_cqe c;
    memset(&c, 0, sizeof(c));
    c.wc.wr_id = rw->wr_id;
    c.wc.qp_num = r->qpn;
    c.kind = SW_CQE_RECV;
    c.qp_slot = e.slot;
    c.qp_gen = r->gen;
    uint32_t rcq = r->recv_cq_slot, rcq_gen = r->recv_cq_gen;
    sw_shm_unlock(&r->lock);
    if (st != IBV_WC_SUCCESS) {
        c.wc.status = (enum ibv_wc_status)st;
        c.wc.opcode = SW_WC_OPCODE_UNDEFINED;
        sw_cq_push(seg, rcq, rcq_gen, &c, true);
        sw_qp_set_error(seg, e.slot, 0);
        return;
    }

    bool has_grh = mp->link_layer == IBV_LINK_LAYER_ETHERNET || w->av.is_global;
    if (has_grh) {
        uint8_t grh[SW_GRH_BYTES];
        build_grh(grh, &mp->gid[w->av.grh.sgid_index % SW_GID_TBL_LEN], &w->av.grh, w->length);
        struct sw_iovs from = { .v = { { grh, SW_GRH_BYTES } }, .n = 1, .len = SW_GRH_BYTES };
        struct sw_iovs to;
        window(&dst, 0, SW_GRH_BYTES, &to);
        sw_exec_copy_out(pid, &from, &to, SW_GRH_BYTES);
    }
    struct sw_iovs to;
    window(&dst, SW_GRH_BYTES, w->length, &to);
    sw_exec_copy_out(pid, src, &to, w->length);

    c.wc.status = IBV_WC_SUCCESS;
    c.wc.opcode = IBV_WC_RECV;
    c.wc.byte_len = (uint32_t)(SW_GRH_BYTES + w->length);
    c.wc.src_qp = qp->qp.qp_num;
    c.wc.slid = (uint16_t)mp->lid;
    c.wc.sl = w->av.sl;
    c.wc.pkey_index = 0;           /* the only P_Key there is */
    c.wc.wc_flags = has_grh ? IBV_WC_GRH : 0;
    if (w->opcode == IBV_WR_SEND_WITH_IMM) {
        c.wc.wc_flags |= IBV_WC_WITH_IMM;
        c.wc.imm_data = w->imm;
    }
    if (sw_cq_push(seg, rcq, rcq_gen, &c, w->flags & IBV_SEND_SOLICITED) < 0)
        sw_qp_set_error(seg, e.slot, IBV_EVENT_QP_FATAL);
}

/* Executes W, a send of the UD QP QP: finished on return, w->status
 * says how. NIC thread. */
void sw_ud_exec(struct sw_qp *qp, struct sw_swqe *w)
{
    struct sw_iovs src;
    int st = IBV_WC_SUCCESS;
    if (w->flags & IBV_SEND_INLINE) {
        src.n = w->length ? 1 : 0;
        src.v[0].iov_base = w->inl;
        src.v[0].iov_len = w->length;
        src.len = w->length;
    } else {
        st = sw_exec_local_iovs(qp, w->sge, w->num_sge, false, &src);
    }
    if (st == IBV_WC_SUCCESS) {
        const struct sw_reg_port *mp = &sw.reg->host[sw.host].port[qp->s->port - 1];
        if (w->length > sw_mtu_bytes(mp->active_mtu))
            st = IBV_WC_LOC_LEN_ERR;
    }
    if (st == IBV_WC_SUCCESS) {
        sw_exec_src_unchanged(qp, w);
        deliver(qp, w, &src);
        qp->sq_psn = (qp->sq_psn + 1) & SW_PSN_MASK;
    }
    sw_exec_release_busy();
    /* < 0: pages gone from under a registration, reported; the datagram
     * went nowhere, and the sender cannot tell */
    w->status = st > 0 ? (uint32_t)st : IBV_WC_SUCCESS;
}
