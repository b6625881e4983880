/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * exec.c: what the wire and the responder's NIC do with one work request
 * of a reliable connection (a UD QP's datagrams go to ud.c), executed by the requester's NIC thread with
 * no help from the responder's process: the payload is read from the
 * requester's memory now (inline data was copied at post) and written
 * straight into the responder's registered memory with
 * process_vm_writev(), the receive queue entry is taken from the
 * responder's segment and its completion written to the responder's CQ.
 *
 * The checks are the responder's and the requester's, in the order a
 * NIC makes them, each ending the way the verbs documentation says:
 *  - no path (unknown GID or LID, unknown or destroyed QP number, a peer
 *    process gone or off the fabric, a port down), a responder not yet
 *    in RTR, or a PSN other than the one the responder expects: nothing
 *    answers, the request is sent again every local ACK timeout
 *    (4.096 us << timeout) and after retry_cnt retries completes with
 *    IBV_WC_RETRY_EXC_ERR; a timeout of 0 waits for ever. An ACK that
 *    cannot find its way back (the responder's own AV or destination QP
 *    do not name this QP) ends the same way, although the request
 *    executed.
 *  - no receive posted: RNR NAK, retried after the responder's
 *    min_rnr_timer, rnr_retry times (7: for ever), then
 *    IBV_WC_RNR_RETRY_EXC_ERR.
 *  - keys: a local key that is not this process's, not in the QP's PD,
 *    out of range or without local write where data lands: the request
 *    fails with IBV_WC_LOC_PROT_ERR. A remote key not live, not in the
 *    responder QP's PD, out of range, or lacking the access, or a QP not
 *    allowing it: IBV_WC_REM_ACCESS_ERR, and the responder QP goes to
 *    error with IBV_EVENT_QP_ACCESS_ERR.
 *  - a message larger than the receive buffers: the receive completes
 *    with IBV_WC_LOC_LEN_ERR, the request with IBV_WC_REM_INV_REQ_ERR,
 *    both QPs to error. Bad receive keys: IBV_WC_LOC_PROT_ERR there,
 *    IBV_WC_REM_OP_ERR here.
 *  - RDMA reads and atomics over the responder's max_dest_rd_atomic, or
 *    with none allowed: IBV_WC_REM_INV_REQ_ERR, responder to error with
 *    IBV_EVENT_QP_REQ_ERR.
 * Any error completion moves the requester QP to error too.
 *
 * RDMA reads and atomics fetch the responder's data when they execute
 * (so they see every earlier write of this QP) but place it in local
 * memory only when the NIC reaches the end of what is posted or a later
 * request carries IBV_SEND_FENCE: a request after an unfenced read may
 * go out before the read's data has landed, as on a real NIC.
 */
#define _GNU_SOURCE
#include "config.h"

#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>

#include "tests/swrdma/swrdma.h"

#define SW_MAX_MSG 0x80000000ull

/* The RNR NAK timer of IBTA table 45, in microseconds (entry 0 is the
 * longest, 655.36 ms). */
static const uint32_t rnr_us[32] = {
    655360, 10, 20, 30, 40, 60, 80, 120, 160, 240, 320, 480, 640, 960, 1280, 1920,
    2560, 3840, 5120, 7680, 10240, 15360, 20480, 30720, 40960, 61440, 81920, 122880,
    163840, 245760, 327680, 491520,
};

static bool is_read_like(uint32_t op)
{
    return op == IBV_WR_RDMA_READ || op == IBV_WR_ATOMIC_CMP_AND_SWP ||
           op == IBV_WR_ATOMIC_FETCH_AND_ADD;
}

static bool needs_recv(uint32_t op)
{
    return op == IBV_WR_SEND || op == IBV_WR_SEND_WITH_IMM || op == IBV_WR_RDMA_WRITE_WITH_IMM;
}

/* Translates local SGEs through this process's keys; busy marks stay set
 * until sw_exec_release_busy(). Returns an IBV_WC status. */
int sw_exec_local_iovs(struct sw_qp *qp, const struct ibv_sge *sge, uint32_t n, bool write,
                       struct sw_iovs *out)
{
    out->n = 0;
    out->len = 0;
    for (uint32_t i = 0; i < n; i++) {
        out->len += sge[i].length;
        if (sge[i].length == 0)
            continue;
        struct sw_reg_mr m;
        sw_busy_enter(i, sge[i].lkey);
        if (!sw_reg_mr_read(sge[i].lkey, &m) || m.proc != sw.proc || m.proc_gen != sw.proc_gen ||
            m.pd != qp->pd->id || sge[i].addr < m.iova ||
            sge[i].addr - m.iova + sge[i].length > m.length ||
            (write && !(m.access & IBV_ACCESS_LOCAL_WRITE)))
            return IBV_WC_LOC_PROT_ERR;
        uint64_t va = m.addr + (sge[i].addr - m.iova);
        if (!sw_mr_pages_ok(sw.proc, sw.pid, sw.seg, &m, va, sge[i].length))
            return -1;
        out->v[out->n].iov_base = (void *)(uintptr_t)va;
        out->v[out->n].iov_len = sge[i].length;
        out->n++;
    }
    if (out->len > SW_MAX_MSG)
        return IBV_WC_LOC_LEN_ERR;
    return IBV_WC_SUCCESS;
}

void sw_exec_release_busy(void)
{
    for (unsigned i = 0; i < SW_BUSY_KEYS; i++)
        sw_busy_leave(i);
}

/* Finds the responder: route, QP number, process, segment. */
static bool resolve(struct sw_qp *qp)
{
    struct sw_peer *p = &qp->peer;
    if (p->valid)
        return true;
    const struct sw_reg_host *h = &sw.reg->host[sw.host];
    uint32_t ll = h->port[qp->s->port - 1].link_layer;
    uint32_t host, port;
    if (!sw_host_route(&qp->ah, ll, &host, &port))
        return false;
    struct sw_reg_qp e;
    if (!sw_reg_qp_find(qp->s->dest_qpn, &e) || e.host != host)
        return false;
    pid_t pid;
    struct sw_seg *seg = sw_seg_map_peer(e.proc, e.proc_gen, &pid);
    if (!seg)
        return false;
    if (p->pidfd > 0 && p->pid != pid) {
        close(p->pidfd);
        p->pidfd = 0;
    }
    if (p->pidfd <= 0) {
        int fd = (int)syscall(SYS_pidfd_open, pid, 0);
        p->pidfd = fd > 0 ? fd : 0;
    }
    p->proc = e.proc;
    p->proc_gen = e.proc_gen;
    p->slot = e.slot;
    p->qpn = e.qpn;
    p->host = host;
    p->port = port;
    p->seg = seg;
    p->pid = pid;
    p->valid = true;
    return true;
}

/* Whether a packet from QP reaches its responder now. */
static bool reachable(struct sw_qp *qp)
{
    if (atomic_load(&sw.lost) || !sw_port_up(sw.host, qp->s->port))
        return false;
    if (!resolve(qp))
        return false;
    struct sw_peer *p = &qp->peer;
    struct sw_reg_proc *pr = &sw.reg->proc[p->proc];
    if (!pr->used || pr->gen != p->proc_gen || atomic_load(&pr->lost) ||
        !sw_port_up(p->host, p->port)) {
        p->valid = false;
        return false;
    }
    if (p->pidfd > 0) {
        struct pollfd pfd = { .fd = p->pidfd, .events = POLLIN };
        if (poll(&pfd, 1, 0) != 0) {
            p->valid = false;
            return false;
        }
    }
    struct sw_sqp *r = sw_seg_qp(p->seg, p->slot);
    if (!r->used || r->qpn != p->qpn) {
        p->valid = false;
        return false;
    }
    return true;
}

/* Whether the responder's ACKs come back to QP. With the responder's lock. */
static bool ack_path(struct sw_qp *qp, const struct sw_sqp *r)
{
    if (r->dest_qpn != qp->qp.qp_num)
        return false;
    struct ibv_ah_attr back;
    memset(&back, 0, sizeof(back));
    back.is_global = (uint8_t)r->is_global;
    back.dlid = (uint16_t)r->dlid;
    memcpy(back.grh.dgid.raw, r->dgid, 16);
    uint32_t ll = sw.reg->host[sw.host].port[qp->s->port - 1].link_layer;
    return sw_host_owns(sw.host, qp->s->port, &back, ll);
}

/* No answer: try again after the local ACK timeout, or give up. */
static int no_ack(struct sw_qp *qp, struct sw_swqe *w, uint64_t now, uint64_t *wake)
{
    if (qp->timeout == 0) {
        w->next_try_ns = now + 100000000ull;   /* for ever, looking now and then */
    } else {
        if (w->tries > qp->retry_cnt) {
            w->status = IBV_WC_RETRY_EXC_ERR;
            return 0;
        }
        w->tries++;
        w->next_try_ns = now + (4096ull << qp->timeout);
    }
    if (w->next_try_ns < *wake)
        *wake = w->next_try_ns;
    return 1;
}

static void responder_error(struct sw_qp *qp, uint32_t event)
{
    sw_qp_set_error(qp->peer.seg, qp->peer.slot, event);
}

static void fill_recv_cqe(struct sw_cqe *e, struct sw_qp *qp, const struct sw_sqp *r,
                          uint64_t wr_id, uint32_t slot)
{
    memset(e, 0, sizeof(*e));
    e->wc.wr_id = wr_id;
    e->wc.qp_num = r->qpn;
    e->kind = SW_CQE_RECV;
    e->qp_slot = slot;
    e->qp_gen = r->gen;
    (void)qp;
}

/* The responder's side of a request that takes a receive. With its lock
 * held; returns an IBV_WC status for the requester, fills IOVS with
 * where the data goes and *RWQE with the receive taken. */
static int take_recv(struct sw_qp *qp, struct sw_swqe *w, struct sw_sqp *r, struct sw_rwqe *rw,
                     struct sw_iovs *dst, bool *rnr)
{
    struct sw_peer *p = &qp->peer;
    *rnr = false;
    if (r->rq_head == r->rq_tail || sw_fault_rnr(w)) {
        *rnr = true;
        return IBV_WC_SUCCESS;
    }
    struct sw_rwqe *src = sw_seg_rwqe(p->seg, p->slot, r->rq_head % r->rq_cap);
    rw->wr_id = src->wr_id;
    rw->num_sge = src->num_sge;
    struct ibv_sge sge[SW_MAX_SGE_CAP];
    memcpy(sge, src->sge, sizeof(struct ibv_sge) * SW_MIN(src->num_sge, SW_MAX_SGE_CAP));
    r->rq_head++;
    dst->n = 0;
    dst->len = 0;
    if (w->opcode == IBV_WR_RDMA_WRITE_WITH_IMM)
        return IBV_WC_SUCCESS;     /* the data goes where the write says */
    uint64_t room = 0;
    for (uint32_t i = 0; i < rw->num_sge; i++) {
        if (sge[i].length == 0)
            continue;
        struct sw_reg_mr m;
        sw_busy_enter(SW_MAX_SGE_CAP + i, sge[i].lkey);
        if (!sw_reg_mr_read(sge[i].lkey, &m) || m.proc != p->proc || m.proc_gen != p->proc_gen ||
            m.pd != r->pd || !(m.access & IBV_ACCESS_LOCAL_WRITE) || sge[i].addr < m.iova ||
            sge[i].addr - m.iova + sge[i].length > m.length)
            return IBV_WC_REM_OP_ERR;
        dst->v[dst->n].iov_base = (void *)(uintptr_t)(m.addr + (sge[i].addr - m.iova));
        dst->v[dst->n].iov_len = sge[i].length;
        dst->n++;
        room += sge[i].length;
    }
    if (w->length > room)
        return IBV_WC_REM_INV_REQ_ERR;
    return IBV_WC_SUCCESS;
}

/* The responder's checks of a remote key. With its lock held. */
static int check_rkey(struct sw_qp *qp, struct sw_swqe *w, const struct sw_sqp *r,
                      unsigned need, struct sw_reg_mr *m)
{
    struct sw_peer *p = &qp->peer;
    if (!(r->access & need))
        return IBV_WC_REM_ACCESS_ERR;
    sw_busy_enter(SW_MAX_SGE_CAP, w->rkey);
    if (!sw_reg_mr_read(w->rkey, m) || m->proc != p->proc || m->proc_gen != p->proc_gen ||
        m->pd != r->pd || !(m->access & need) || w->remote_addr < m->iova ||
        w->remote_addr - m->iova + w->length > m->length)
        return IBV_WC_REM_ACCESS_ERR;
    return IBV_WC_SUCCESS;
}

void sw_exec_copy_out(pid_t pid, struct sw_iovs *src, struct sw_iovs *dst, uint64_t len)
{
    if (len == 0)
        return;
    ssize_t n = process_vm_writev(pid, src->v, src->n, dst->v, dst->n, 0);
    if (n != (ssize_t)len)
        sw_check_report("process %d: registered memory is no longer mapped (%zd of %llu "
                        "bytes written: %s): a NIC would have written the pages it pinned, "
                        "and this data is lost", (int)pid, n, (unsigned long long)len,
                        n < 0 ? strerror(errno) : "short write");
}

/* Trims IOVS to LEN bytes (a receive larger than the message). */
static void trim(struct sw_iovs *v, uint64_t len)
{
    uint64_t left = len;
    unsigned i;
    for (i = 0; i < v->n && left; i++) {
        if (v->v[i].iov_len > left)
            v->v[i].iov_len = left;
        left -= v->v[i].iov_len;
    }
    v->n = i;
}

void sw_exec_src_unchanged(struct sw_qp *qp, struct sw_swqe *w)
{
    if (!w->sum)
        return;
    uint64_t now = sw_check_sum(w);
    if (now == w->sum)
        return;
    sw_check_report("QP 0x%x: the buffer of work request 0x%llx changed between "
                    "ibv_post_send() and its execution by the NIC", qp->qp.qp_num,
                    (unsigned long long)w->wr_id);
    w->sum = now;
}

/* Executes W, the head of QP's send queue. Returns 0 when W is finished
 * (w->status says how; phase READ_PENDING when its data is still to be
 * placed), 1 when it must wait until *WAKE. */
int sw_exec(struct sw_qp *qp, struct sw_swqe *w, uint64_t now, uint64_t *wake)
{
    w->status = IBV_WC_SUCCESS;
    if (sw.env.fault.delay_us && !w->delayed) {
        w->delayed = 1;
        w->next_try_ns = now + sw.env.fault.delay_us * 1000ull;
        if (w->next_try_ns < *wake)
            *wake = w->next_try_ns;
        return 1;
    }
    uint32_t injected;
    if (sw_fault_fail_wr(w, &injected)) {
        w->status = injected;
        return 0;
    }
    if (qp->qp.qp_type == IBV_QPT_UD) {
        sw_ud_exec(qp, w);     /* a datagram: sent once, never waits */
        return 0;
    }
    if ((w->flags & IBV_SEND_FENCE) && qp->reads_pending)
        sw_exec_place_reads(qp);
    if (is_read_like(w->opcode)) {
        if (qp->max_rd_atomic == 0) {
            w->status = IBV_WC_LOC_QP_OP_ERR;
            return 0;
        }
        if (qp->reads_pending >= qp->max_rd_atomic)
            sw_exec_place_reads(qp);
    }

    /* the requester's own keys */
    struct sw_iovs src;
    int st;
    if (w->flags & IBV_SEND_INLINE) {
        src.n = w->length ? 1 : 0;
        src.v[0].iov_base = w->inl;
        src.v[0].iov_len = w->length;
        src.len = w->length;
        st = IBV_WC_SUCCESS;
    } else {
        st = sw_exec_local_iovs(qp, w->sge, w->num_sge, is_read_like(w->opcode), &src);
    }
    if (st != IBV_WC_SUCCESS) {
        sw_exec_release_busy();
        if (st < 0)
            return 0;      /* reported: the data goes to pages nobody sees */
        w->status = (uint32_t)st;
        return 0;
    }
    if ((w->opcode == IBV_WR_ATOMIC_CMP_AND_SWP || w->opcode == IBV_WR_ATOMIC_FETCH_AND_ADD) &&
        src.len != 8) {
        sw_exec_release_busy();
        w->status = IBV_WC_LOC_LEN_ERR;
        return 0;
    }
    if (!is_read_like(w->opcode))
        sw_exec_src_unchanged(qp, w);

    if (!reachable(qp)) {
        sw_exec_release_busy();
        return no_ack(qp, w, now, wake);
    }
    struct sw_peer *p = &qp->peer;
    struct sw_sqp *r = sw_seg_qp(p->seg, p->slot);
    unsigned mtu = sw_mtu_bytes(qp->s->path_mtu);
    uint32_t npkts = w->length ? (uint32_t)((w->length + mtu - 1) / mtu) : 1;

    sw_shm_lock(&r->lock);
    if (!r->used || r->qpn != p->qpn || r->qp_type != IBV_QPT_RC ||
        (r->state != IBV_QPS_RTR && r->state != IBV_QPS_RTS && r->state != IBV_QPS_SQD) ||
        r->epsn != qp->sq_psn) {
        /* dropped: not there, not a connection, not ready, or out of sequence */
        sw_shm_unlock(&r->lock);
        sw_exec_release_busy();
        return no_ack(qp, w, now, wake);
    }
    unsigned rmtu = sw_mtu_bytes(r->path_mtu);
    if (w->length > rmtu && rmtu < mtu) {
        /* packets longer than the responder's path MTU are malformed */
        sw_shm_unlock(&r->lock);
        sw_exec_release_busy();
        responder_error(qp, IBV_EVENT_QP_REQ_ERR);
        w->status = IBV_WC_REM_INV_REQ_ERR;
        return 0;
    }
    struct sw_reg_mr m;
    struct sw_rwqe rw;
    struct sw_iovs dst = { .n = 0 };
    bool rnr = false;
    uint32_t rslot = p->slot;
    switch (w->opcode) {
    case IBV_WR_SEND:
    case IBV_WR_SEND_WITH_IMM:
        st = take_recv(qp, w, r, &rw, &dst, &rnr);
        break;
    case IBV_WR_RDMA_WRITE:
    case IBV_WR_RDMA_WRITE_WITH_IMM:
        st = w->length ? check_rkey(qp, w, r, IBV_ACCESS_REMOTE_WRITE, &m) : IBV_WC_SUCCESS;
        if (st == IBV_WC_SUCCESS && w->length) {
            dst.n = 1;
            dst.v[0].iov_base = (void *)(uintptr_t)(m.addr + (w->remote_addr - m.iova));
            dst.v[0].iov_len = w->length;
        }
        if (st == IBV_WC_SUCCESS && w->opcode == IBV_WR_RDMA_WRITE_WITH_IMM) {
            struct sw_iovs unused;
            st = take_recv(qp, w, r, &rw, &unused, &rnr);
        }
        break;
    case IBV_WR_RDMA_READ:
    default: {
        bool atomic = w->opcode != IBV_WR_RDMA_READ;
        if (r->max_dest_rd_atomic == 0 || qp->reads_pending + 1 > r->max_dest_rd_atomic) {
            st = IBV_WC_REM_INV_REQ_ERR;
            break;
        }
        if (atomic && (w->remote_addr & 7)) {
            st = IBV_WC_REM_INV_REQ_ERR;
            break;
        }
        uint64_t len = atomic ? 8 : w->length;
        uint64_t saved = w->length;
        w->length = len;
        st = len ? check_rkey(qp, w, r, atomic ? IBV_ACCESS_REMOTE_ATOMIC : IBV_ACCESS_REMOTE_READ,
                              &m)
                 : IBV_WC_SUCCESS;
        w->length = saved;
        if (st == IBV_WC_SUCCESS && len) {
            dst.n = 1;
            dst.v[0].iov_base = (void *)(uintptr_t)(m.addr + (w->remote_addr - m.iova));
            dst.v[0].iov_len = len;
        }
        break;
    }
    }
    if (rnr) {
        sw_shm_unlock(&r->lock);
        sw_exec_release_busy();
        if (qp->rnr_retry != 7 && w->rnr_tries >= qp->rnr_retry) {
            w->status = IBV_WC_RNR_RETRY_EXC_ERR;
            return 0;
        }
        w->rnr_tries++;
        w->next_try_ns = now + rnr_us[r->min_rnr_timer & 31] * 1000ull;
        if (w->next_try_ns < *wake)
            *wake = w->next_try_ns;
        return 1;
    }
    if (st != IBV_WC_SUCCESS) {
        struct sw_cqe e;
        bool recv_err = needs_recv(w->opcode) && w->opcode != IBV_WR_RDMA_WRITE_WITH_IMM &&
                        (st == IBV_WC_REM_OP_ERR || st == IBV_WC_REM_INV_REQ_ERR);
        if (recv_err) {
            /* the receive taken completes in error on the responder */
            fill_recv_cqe(&e, qp, r, rw.wr_id, rslot);
            e.wc.status = st == IBV_WC_REM_OP_ERR ? IBV_WC_LOC_PROT_ERR : IBV_WC_LOC_LEN_ERR;
            e.wc.opcode = SW_WC_OPCODE_UNDEFINED;
        }
        uint32_t rcq = r->recv_cq_slot, rcq_gen = r->recv_cq_gen;
        sw_shm_unlock(&r->lock);
        sw_exec_release_busy();
        if (recv_err)
            sw_cq_push(p->seg, rcq, rcq_gen, &e, true);
        responder_error(qp, st == IBV_WC_REM_ACCESS_ERR ? IBV_EVENT_QP_ACCESS_ERR
                            : recv_err ? 0 : IBV_EVENT_QP_REQ_ERR);
        w->status = (uint32_t)st;
        return 0;
    }
    /* accepted: the responder moves on whatever becomes of the ACK */
    r->epsn = (r->epsn + npkts) & SW_PSN_MASK;
    bool comm_est = r->state == IBV_QPS_RTR && !r->comm_est;
    if (comm_est)
        r->comm_est = 1;
    bool acked = ack_path(qp, r);
    uint32_t rcq = r->recv_cq_slot, rcq_gen = r->recv_cq_gen;
    struct sw_cqe e;
    if (needs_recv(w->opcode))
        fill_recv_cqe(&e, qp, r, rw.wr_id, rslot);
    sw_shm_unlock(&r->lock);
    if (comm_est)
        sw_seg_post_event(p->seg, IBV_EVENT_COMM_EST, SW_EV_QP, rslot, r->gen);

    bool pages_ok = true;
    if (w->opcode != IBV_WR_SEND && w->opcode != IBV_WR_SEND_WITH_IMM && dst.n)
        pages_ok = sw_mr_pages_ok(p->proc, p->pid, p->seg, &m, (uint64_t)(uintptr_t)dst.v[0].iov_base,
                                  dst.v[0].iov_len);
    if (is_read_like(w->opcode)) {
        uint64_t len = dst.n ? dst.v[0].iov_len : 0;
        w->staging = len ? malloc(len) : NULL;
        if (len && w->staging) {
            struct iovec l = { w->staging, len };
            if (w->opcode == IBV_WR_RDMA_READ) {
                if (!pages_ok || process_vm_readv(p->pid, &l, 1, dst.v, 1, 0) != (ssize_t)len)
                    memset(w->staging, 0, len);
            } else {
                /* the fabric's atomics are serialised, as one HCA's are */
                uint64_t old = 0, val;
                struct iovec o = { &old, 8 }, nv = { &val, 8 };
                sw_shm_lock(&sw.reg->atomic_lock);
                process_vm_readv(p->pid, &o, 1, dst.v, 1, 0);
                if (w->opcode == IBV_WR_ATOMIC_FETCH_AND_ADD)
                    val = old + w->compare_add;
                else
                    val = old == w->compare_add ? w->swap : old;
                if (pages_ok)
                    process_vm_writev(p->pid, &nv, 1, dst.v, 1, 0);
                sw_shm_unlock(&sw.reg->atomic_lock);
                memcpy(w->staging, &old, 8);
            }
        }
    } else if (pages_ok) {
        uint64_t len = w->length;
        if (w->opcode == IBV_WR_SEND || w->opcode == IBV_WR_SEND_WITH_IMM)
            trim(&dst, len);
        sw_exec_copy_out(p->pid, &src, &dst, len);
    }
    sw_exec_release_busy();

    if (needs_recv(w->opcode)) {
        e.wc.status = IBV_WC_SUCCESS;
        e.wc.byte_len = (uint32_t)w->length;
        e.wc.src_qp = qp->qp.qp_num;
        e.wc.sl = qp->ah.sl;
        e.wc.slid = sw.reg->host[sw.host].port[qp->s->port - 1].lid;
        if (w->opcode == IBV_WR_RDMA_WRITE_WITH_IMM) {
            e.wc.opcode = IBV_WC_RECV_RDMA_WITH_IMM;
            e.wc.wc_flags = IBV_WC_WITH_IMM;
            e.wc.imm_data = w->imm;
        } else {
            e.wc.opcode = IBV_WC_RECV;
            if (w->opcode == IBV_WR_SEND_WITH_IMM) {
                e.wc.wc_flags = IBV_WC_WITH_IMM;
                e.wc.imm_data = w->imm;
            }
        }
        if (sw_cq_push(p->seg, rcq, rcq_gen, &e, w->flags & IBV_SEND_SOLICITED) < 0)
            sw_qp_set_error(p->seg, rslot, IBV_EVENT_QP_FATAL);
    }
    if (!acked) {
        /* executed, but the ACK (or read response) goes astray: retried
         * requests are now duplicates nobody answers */
        free(w->staging);
        w->staging = NULL;
        return no_ack(qp, w, now, wake);
    }
    qp->sq_psn = (qp->sq_psn + npkts) & SW_PSN_MASK;
    if (is_read_like(w->opcode)) {
        w->phase = SW_WQE_READ_PENDING;
        qp->reads_pending++;
    }
    return 0;
}

/* Lands the data of every executed read and atomic of QP in its local
 * buffers. NIC thread, without sq_lock. */
void sw_exec_place_reads(struct sw_qp *qp)
{
    for (uint32_t i = qp->sq_done; i != qp->sq_exec && qp->reads_pending; i++) {
        struct sw_swqe *w = &qp->sq[i % qp->sq_cap];
        if (w->phase != SW_WQE_READ_PENDING)
            continue;
        struct sw_iovs dst;
        int st = sw_exec_local_iovs(qp, w->sge, w->num_sge, true, &dst);
        if (st == IBV_WC_SUCCESS && w->staging) {
            uint64_t len = w->opcode == IBV_WR_RDMA_READ ? w->length : 8;
            struct iovec from = { w->staging, len };
            trim(&dst, len);
            process_vm_writev(sw.pid, &from, 1, dst.v, dst.n, 0);
            if (sw.env.check != SW_CHECK_OFF)
                w->sum = sw_check_sum(w);
        } else if (st > 0) {
            w->status = (uint32_t)st;
        }
        sw_exec_release_busy();
        free(w->staging);
        w->staging = NULL;
        w->phase = SW_WQE_DONE;
        qp->reads_pending--;
    }
    /* Requests not yet executed may read what just landed (a fenced send
     * of the read's buffer): that change is the NIC's, not the caller's. */
    if (sw.env.check == SW_CHECK_OFF)
        return;
    pthread_mutex_lock(&qp->sq_lock);
    uint32_t posted = qp->sq_post;
    pthread_mutex_unlock(&qp->sq_lock);
    for (uint32_t i = qp->sq_exec; i != posted; i++) {
        struct sw_swqe *w = &qp->sq[i % qp->sq_cap];
        if (w->sum)
            w->sum = sw_check_sum(w);
    }
}
