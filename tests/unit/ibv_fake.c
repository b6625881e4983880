/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * ibv_fake.c: a stand-in libibverbs for the ib-verbs transport's unit
 * tests, built in several variants (tests/unit/ib_verbs.mk): with
 * rdma-core's symbol versions, with only IBVERBS_1.0 and 1.1, without
 * versions, with one required symbol missing, and with every symbol at
 * the wrong version. Never installed.
 *
 * It knows devices and ports, and moves data between QPs of one process
 * at once, when a work request is posted: RC SEND, RDMA WRITE (with
 * immediate) and RDMA READ, UD SEND, completion queues and their events.
 * It is stricter than hardware where that finds protocol bugs: a send to
 * a QP below RTR, or one that finds no receive posted, fails at once
 * (IBV_WC_RETRY_EXC_ERR, IBV_WC_RNR_RETRY_EXC_ERR) instead of being
 * retried, and is counted (fake_ibv_not_ready, fake_ibv_rnr), as are
 * overflowing completion queues (fake_ibv_cq_overflows).
 *
 * FAKE_IBV_DEVICES describes the devices: "name=PORT/PORT;name=PORT",
 * each PORT "ACTIVE.ETH", "DOWN.IB", ... An Ethernet port of device k
 * shows RoCE v1 and v2 GIDs of fe80::k and of 10.<k>.0.1; an InfiniBand
 * port one GID and the LID 10 + k (0 with state "NOLID").
 */
#include "config.h"

#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <infiniband/verbs.h>

/* verbs.h makes these macros over inline wrappers: here are the
 * exported functions themselves. */
#undef ibv_query_port
#undef ibv_reg_mr

#define FAKE_DEVS 8
#define FAKE_PORTS 4

struct fake_port {
    int state, ll, nolid;
};

struct fake_dev {
    struct ibv_device dev;              /* first: what the library hands out */
    int nports;
    struct fake_port port[FAKE_PORTS];
};

static struct fake_dev devs[FAKE_DEVS];
static struct ibv_device *list[FAKE_DEVS + 1];
static int ndevs;

/* What the tests read back through dlsym on the handle. */
const char *fake_ibv_last_reg;
int fake_ibv_last_access;
int fake_ibv_fork_inits;
int fake_ibv_open_contexts;
int fake_ibv_live_mrs;

static void parse_devices(void)
{
    const char *s = getenv("FAKE_IBV_DEVICES");

    ndevs = 0;
    while (s && *s && ndevs < FAKE_DEVS) {
        struct fake_dev *d = &devs[ndevs];
        const char *eq = strchr(s, '='), *end = strchr(s, ';');
        size_t n;

        if (!end)
            end = s + strlen(s);
        if (!eq || eq > end)
            break;
        memset(d, 0, sizeof(*d));
        n = (size_t)(eq - s) < sizeof(d->dev.name) - 1 ? (size_t)(eq - s) : sizeof(d->dev.name) - 1;
        memcpy(d->dev.name, s, n);
        memcpy(d->dev.ibdev_path, "/nonexistent/", 13);
        memcpy(d->dev.ibdev_path + 13, d->dev.name, n + 1);
        for (const char *p = eq + 1; p < end && d->nports < FAKE_PORTS;) {
            struct fake_port *pt = &d->port[d->nports++];

            pt->state = !strncmp(p, "ACTIVE", 6) ? IBV_PORT_ACTIVE :
                        !strncmp(p, "NOLID", 5) ? IBV_PORT_ACTIVE : IBV_PORT_DOWN;
            pt->nolid = !strncmp(p, "NOLID", 5);
            p = strchr(p, '.');
            if (!p || p > end)
                break;
            pt->ll = !strncmp(p + 1, "ETH", 3) ? IBV_LINK_LAYER_ETHERNET
                                               : IBV_LINK_LAYER_INFINIBAND;
            p = strchr(p, '/');
            if (!p || p > end)
                break;
            p++;
        }
        list[ndevs++] = &d->dev;
        s = *end ? end + 1 : end;
    }
    list[ndevs] = NULL;
}

static struct fake_dev *dev_of(struct ibv_context *ctx)
{
    return (struct fake_dev *)ctx->device;
}

/* ------------------------------------------------------------ devices */

struct ibv_device **ibv_get_device_list(int *num)
{
    parse_devices();
    if (num)
        *num = ndevs;
    return list;
}

void ibv_free_device_list(struct ibv_device **l)
{
    (void)l;
}

const char *ibv_get_device_name(struct ibv_device *dev)
{
    return dev->name;
}

/* ------------------------------------------------------------ traffic */

#define FAKE_QPS 4096
#define FAKE_MRS 65536
#define FAKE_SGE 4

int fake_ibv_not_ready;
int fake_ibv_rnr;
int fake_ibv_cq_overflows;
int fake_ibv_rem_access;

struct fake_cq {
    struct ibv_cq cq;                   /* first: what the library hands out */
    struct ibv_wc *wc;
    int cap, head, n;
    int armed;
};

struct fake_rwr {
    uint64_t wr_id;
    int nsge;
    struct ibv_sge sge[FAKE_SGE];
};

struct fake_qp {
    struct ibv_qp qp;                   /* first */
    struct fake_cq *scq, *rcq;
    int sig_all;
    uint32_t dest;                      /* RC: the peer QP's number, from RTR */
    struct fake_rwr *rq;
    int rq_cap, rq_head, rq_n;
};

struct fake_mr {
    struct ibv_mr mr;                   /* first */
    int access;
};

static struct fake_qp *qps[FAKE_QPS];
static struct fake_mr *mrs[FAKE_MRS];   /* by rkey - 0x100 */
#ifndef FAKE_NO_CREATE_QP
static uint32_t next_qpn = 0x40;
#endif

static void cq_push(struct fake_cq *cq, const struct ibv_wc *wc)
{
    uint64_t one = 1;

    if (cq->n == cq->cap) {
        fake_ibv_cq_overflows++;
        return;
    }
    cq->wc[(cq->head + cq->n) % cq->cap] = *wc;
    cq->n++;
    if (cq->armed && cq->cq.channel) {
        cq->armed = 0;
        if (write(cq->cq.channel->fd, &one, sizeof(one)) < 0)
            fake_ibv_cq_overflows++;
    }
}

static int fake_poll_cq(struct ibv_cq *vcq, int n, struct ibv_wc *wc)
{
    struct fake_cq *cq = (struct fake_cq *)vcq;
    int k = 0;

    while (k < n && cq->n) {
        wc[k++] = cq->wc[cq->head];
        cq->head = (cq->head + 1) % cq->cap;
        cq->n--;
    }
    return k;
}

static int fake_notify_cq(struct ibv_cq *vcq, int solicited)
{
    struct fake_cq *cq = (struct fake_cq *)vcq;

    (void)solicited;
    cq->armed = 1;
    return 0;
}

static struct fake_qp *qp_by_num(uint32_t qpn)
{
    return qpn >= 0x40 && qpn - 0x40 < FAKE_QPS ? qps[qpn - 0x40] : NULL;
}

/* The region an rkey names, if it covers [addr, addr + len) with access. */
static struct fake_mr *mr_check(uint32_t rkey, uint64_t addr, size_t len, int access)
{
    struct fake_mr *m = rkey >= 0x100 && rkey - 0x100 < FAKE_MRS ? mrs[rkey - 0x100] : NULL;

    if (!m || !(m->access & access) || addr < (uintptr_t)m->mr.addr ||
        addr + len > (uintptr_t)m->mr.addr + m->mr.length)
        return NULL;
    return m;
}

static size_t sge_len(const struct ibv_sge *sg, int n)
{
    size_t len = 0;

    for (int i = 0; i < n; i++)
        len += sg[i].length;
    return len;
}

/* The bytes of a gather list into one buffer. */
static void gather(unsigned char *dst, const struct ibv_sge *sg, int n)
{
    for (int i = 0; i < n; i++) {
        memcpy(dst, (const void *)(uintptr_t)sg[i].addr, sg[i].length);
        dst += sg[i].length;
    }
}

/* len bytes into a receive's scatter list, from offset skip. */
static void scatter(const struct fake_rwr *r, size_t skip, const unsigned char *src, size_t len)
{
    for (int i = 0; i < r->nsge && len; i++) {
        size_t room = r->sge[i].length;
        unsigned char *d = (unsigned char *)(uintptr_t)r->sge[i].addr;

        if (skip >= room) {
            skip -= room;
            continue;
        }
        d += skip;
        room -= skip;
        skip = 0;
        if (room > len)
            room = len;
        memcpy(d, src, room);
        src += room;
        len -= room;
    }
}

static void qp_flush(struct fake_qp *q)
{
    struct ibv_wc wc;

    while (q->rq_n) {
        memset(&wc, 0, sizeof(wc));
        wc.wr_id = q->rq[q->rq_head].wr_id;
        wc.status = IBV_WC_WR_FLUSH_ERR;
        wc.qp_num = q->qp.qp_num;
        q->rq_head = (q->rq_head + 1) % q->rq_cap;
        q->rq_n--;
        cq_push(q->rcq, &wc);
    }
}

static void qp_fail(struct fake_qp *q)
{
    q->qp.state = IBV_QPS_ERR;
    qp_flush(q);
}

static int rq_pop(struct fake_qp *q, struct fake_rwr *out)
{
    if (!q->rq_n)
        return -1;
    *out = q->rq[q->rq_head];
    q->rq_head = (q->rq_head + 1) % q->rq_cap;
    q->rq_n--;
    return 0;
}

/* Executes one work request of q: the status of its completion. */
static enum ibv_wc_status execute(struct fake_qp *q, const struct ibv_send_wr *wr,
                                  unsigned char *data, size_t len)
{
    struct fake_qp *r = q->qp.qp_type == IBV_QPT_UD ? qp_by_num(wr->wr.ud.remote_qpn)
                                                     : qp_by_num(q->dest);
    struct fake_rwr rwr;
    struct ibv_wc wc;

    if (!r || (r->qp.state != IBV_QPS_RTR && r->qp.state != IBV_QPS_RTS)) {
        if (q->qp.qp_type == IBV_QPT_UD)
            return IBV_WC_SUCCESS;      /* a datagram to nobody is lost */
        /* A QP destroyed is a peer gone (both finalizing at once); one
         * that exists below RTR was sent to too early. */
        if (r && r->qp.state != IBV_QPS_ERR)
            fake_ibv_not_ready++;
        return IBV_WC_RETRY_EXC_ERR;
    }
    memset(&wc, 0, sizeof(wc));
    wc.qp_num = r->qp.qp_num;
    wc.src_qp = q->qp.qp_num;
    switch (wr->opcode) {
    case IBV_WR_SEND:
        if (rq_pop(r, &rwr) != 0) {
            if (q->qp.qp_type == IBV_QPT_UD)
                return IBV_WC_SUCCESS;
            fake_ibv_rnr++;
            return IBV_WC_RNR_RETRY_EXC_ERR;
        }
        if (q->qp.qp_type == IBV_QPT_UD) {
            if (len + 40 > sge_len(rwr.sge, rwr.nsge))
                return IBV_WC_SUCCESS;
            scatter(&rwr, 40, data, len);
            wc.byte_len = (uint32_t)(len + 40);
        } else {
            if (len > sge_len(rwr.sge, rwr.nsge)) {
                wc.wr_id = rwr.wr_id;
                wc.status = IBV_WC_LOC_LEN_ERR;
                cq_push(r->rcq, &wc);
                qp_fail(r);
                return IBV_WC_REM_INV_REQ_ERR;
            }
            scatter(&rwr, 0, data, len);
            wc.byte_len = (uint32_t)len;
        }
        wc.wr_id = rwr.wr_id;
        wc.opcode = IBV_WC_RECV;
        cq_push(r->rcq, &wc);
        return IBV_WC_SUCCESS;
    case IBV_WR_RDMA_WRITE:
    case IBV_WR_RDMA_WRITE_WITH_IMM:
        if (len && !mr_check(wr->wr.rdma.rkey, wr->wr.rdma.remote_addr, len,
                             IBV_ACCESS_REMOTE_WRITE)) {
            fake_ibv_rem_access++;
            return IBV_WC_REM_ACCESS_ERR;
        }
        if (wr->opcode == IBV_WR_RDMA_WRITE_WITH_IMM && rq_pop(r, &rwr) != 0) {
            fake_ibv_rnr++;
            return IBV_WC_RNR_RETRY_EXC_ERR;
        }
        if (len)
            memcpy((void *)(uintptr_t)wr->wr.rdma.remote_addr, data, len);
        if (wr->opcode == IBV_WR_RDMA_WRITE_WITH_IMM) {
            wc.wr_id = rwr.wr_id;
            wc.opcode = IBV_WC_RECV_RDMA_WITH_IMM;
            wc.wc_flags = IBV_WC_WITH_IMM;
            wc.imm_data = wr->imm_data;
            wc.byte_len = (uint32_t)len;
            cq_push(r->rcq, &wc);
        }
        return IBV_WC_SUCCESS;
    case IBV_WR_RDMA_READ: {
        size_t n = sge_len(wr->sg_list, wr->num_sge);
        const unsigned char *src = (const unsigned char *)(uintptr_t)wr->wr.rdma.remote_addr;

        if (!mr_check(wr->wr.rdma.rkey, wr->wr.rdma.remote_addr, n, IBV_ACCESS_REMOTE_READ)) {
            fake_ibv_rem_access++;
            return IBV_WC_REM_ACCESS_ERR;
        }
        for (int i = 0; i < wr->num_sge; i++) {
            memcpy((void *)(uintptr_t)wr->sg_list[i].addr, src, wr->sg_list[i].length);
            src += wr->sg_list[i].length;
        }
        return IBV_WC_SUCCESS;
    }
    default:
        return IBV_WC_LOC_QP_OP_ERR;
    }
}

static int fake_post_send(struct ibv_qp *vqp, struct ibv_send_wr *wr, struct ibv_send_wr **bad)
{
    struct fake_qp *q = (struct fake_qp *)vqp;

    for (; wr; wr = wr->next) {
        size_t len = wr->opcode == IBV_WR_RDMA_READ ? 0 : sge_len(wr->sg_list, wr->num_sge);
        unsigned char *data = malloc(len ? len : 1);
        enum ibv_wc_status st;
        struct ibv_wc wc;

        if (q->qp.state != IBV_QPS_RTS || !data) {
            free(data);
            *bad = wr;
            return EINVAL;
        }
        gather(data, wr->sg_list, wr->opcode == IBV_WR_RDMA_READ ? 0 : wr->num_sge);
        st = execute(q, wr, data, len);
        free(data);
        if (st == IBV_WC_SUCCESS && !(wr->send_flags & IBV_SEND_SIGNALED) && !q->sig_all)
            continue;
        memset(&wc, 0, sizeof(wc));
        wc.wr_id = wr->wr_id;
        wc.status = st;
        wc.qp_num = q->qp.qp_num;
        wc.opcode = wr->opcode == IBV_WR_RDMA_READ ? IBV_WC_RDMA_READ :
                    wr->opcode == IBV_WR_SEND ? IBV_WC_SEND : IBV_WC_RDMA_WRITE;
        cq_push(q->scq, &wc);
        if (st != IBV_WC_SUCCESS)
            qp_fail(q);
    }
    return 0;
}

static int fake_post_recv(struct ibv_qp *vqp, struct ibv_recv_wr *wr, struct ibv_recv_wr **bad)
{
    struct fake_qp *q = (struct fake_qp *)vqp;

    for (; wr; wr = wr->next) {
        struct fake_rwr *r;

        if (q->rq_n == q->rq_cap || wr->num_sge > FAKE_SGE || q->qp.state == IBV_QPS_ERR) {
            *bad = wr;
            return ENOMEM;
        }
        r = &q->rq[(q->rq_head + q->rq_n) % q->rq_cap];
        r->wr_id = wr->wr_id;
        r->nsge = wr->num_sge;
        if (wr->num_sge) /* a receive of no SGE may pass sg_list NULL */
            memcpy(r->sge, wr->sg_list, (size_t)wr->num_sge * sizeof(*r->sge));
        q->rq_n++;
    }
    return 0;
}

struct ibv_comp_channel *ibv_create_comp_channel(struct ibv_context *ctx)
{
    struct ibv_comp_channel *ch = calloc(1, sizeof(*ch));

    if (!ch)
        return NULL;
    ch->context = ctx;
    ch->fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    return ch;
}

int ibv_destroy_comp_channel(struct ibv_comp_channel *ch)
{
    close(ch->fd);
    free(ch);
    return 0;
}

struct ibv_cq *ibv_create_cq(struct ibv_context *ctx, int cqe, void *cq_ctx,
                             struct ibv_comp_channel *ch, int vector)
{
    struct fake_cq *cq = calloc(1, sizeof(*cq));

    (void)vector;
    if (!cq)
        return NULL;
    cq->wc = calloc((size_t)cqe, sizeof(*cq->wc));
    if (!cq->wc) {
        free(cq);
        return NULL;
    }
    cq->cap = cqe;
    cq->cq.context = ctx;
    cq->cq.channel = ch;
    cq->cq.cq_context = cq_ctx;
    cq->cq.cqe = cqe;
    return &cq->cq;
}

int ibv_resize_cq(struct ibv_cq *vcq, int cqe)
{
    struct fake_cq *cq = (struct fake_cq *)vcq;
    struct ibv_wc *wc;

    if (cqe < cq->n)
        return EINVAL;
    wc = calloc((size_t)cqe, sizeof(*wc));
    if (!wc)
        return ENOMEM;
    for (int i = 0; i < cq->n; i++)
        wc[i] = cq->wc[(cq->head + i) % cq->cap];
    free(cq->wc);
    cq->wc = wc;
    cq->head = 0;
    cq->cap = cqe;
    cq->cq.cqe = cqe;
    return 0;
}

int ibv_destroy_cq(struct ibv_cq *vcq)
{
    struct fake_cq *cq = (struct fake_cq *)vcq;

    free(cq->wc);
    free(cq);
    return 0;
}

int ibv_get_cq_event(struct ibv_comp_channel *ch, struct ibv_cq **cq, void **cq_ctx)
{
    uint64_t v;

    (void)cq;
    (void)cq_ctx;
    if (read(ch->fd, &v, sizeof(v)) != (ssize_t)sizeof(v))
        return -1;
    /* The plugin has one CQ per channel; the caller knows it. */
    *cq = NULL;
    return 0;
}

void ibv_ack_cq_events(struct ibv_cq *cq, unsigned int n)
{
    (void)cq; (void)n;
}

#ifndef FAKE_NO_CREATE_QP
struct ibv_qp *ibv_create_qp(struct ibv_pd *pd, struct ibv_qp_init_attr *attr)
{
    struct fake_qp *q;

    if (next_qpn - 0x40 >= FAKE_QPS)
        return NULL;
    q = calloc(1, sizeof(*q));
    if (!q)
        return NULL;
    q->rq_cap = (int)attr->cap.max_recv_wr;
    q->rq = calloc((size_t)(q->rq_cap ? q->rq_cap : 1), sizeof(*q->rq));
    if (!q->rq) {
        free(q);
        return NULL;
    }
    q->qp.context = pd->context;
    q->qp.pd = pd;
    q->qp.send_cq = attr->send_cq;
    q->qp.recv_cq = attr->recv_cq;
    q->scq = (struct fake_cq *)attr->send_cq;
    q->rcq = (struct fake_cq *)attr->recv_cq;
    q->sig_all = attr->sq_sig_all;
    q->qp.qp_num = next_qpn++;
    q->qp.qp_type = attr->qp_type;
    q->qp.state = IBV_QPS_RESET;
    /* What real devices give at least. */
    attr->cap.max_inline_data = attr->cap.max_inline_data < 64 ? attr->cap.max_inline_data : 64;
    qps[q->qp.qp_num - 0x40] = q;
    return &q->qp;
}
#endif

int ibv_modify_qp(struct ibv_qp *vqp, struct ibv_qp_attr *attr, int mask)
{
    struct fake_qp *q = (struct fake_qp *)vqp;

    if (mask & IBV_QP_DEST_QPN)
        q->dest = attr->dest_qp_num;
    if (mask & IBV_QP_STATE) {
        q->qp.state = attr->qp_state;
        if (attr->qp_state == IBV_QPS_ERR)
            qp_flush(q);
    }
    return 0;
}

int ibv_destroy_qp(struct ibv_qp *vqp)
{
    struct fake_qp *q = (struct fake_qp *)vqp;

    qps[q->qp.qp_num - 0x40] = NULL;
    free(q->rq);
    free(q);
    return 0;
}

struct ibv_context *ibv_open_device(struct ibv_device *dev)
{
    struct ibv_context *ctx = calloc(1, sizeof(*ctx));

    if (!ctx)
        return NULL;
    ctx->device = dev;
    ctx->async_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    ctx->cmd_fd = -1;
    ctx->ops.poll_cq = fake_poll_cq;
    ctx->ops.req_notify_cq = fake_notify_cq;
    ctx->ops.post_send = fake_post_send;
    ctx->ops.post_recv = fake_post_recv;
    fake_ibv_open_contexts++;
    return ctx;
}

int ibv_close_device(struct ibv_context *ctx)
{
    close(ctx->async_fd);
    free(ctx);
    fake_ibv_open_contexts--;
    return 0;
}

int ibv_query_device(struct ibv_context *ctx, struct ibv_device_attr *a)
{
    memset(a, 0, sizeof(*a));
    a->phys_port_cnt = (uint8_t)dev_of(ctx)->nports;
    a->max_qp_wr = 16384;
    a->max_sge = 30;
    a->max_cqe = 1 << 20;
    a->max_mr_size = ~0ull;
    a->max_qp = 1 << 16;
    return 0;
}

int ibv_query_port(struct ibv_context *ctx, uint8_t num, struct _compat_ibv_port_attr *out)
{
    struct fake_dev *d = dev_of(ctx);
    struct ibv_port_attr *a = (struct ibv_port_attr *)out;
    struct fake_port *p;

    if (num < 1 || num > d->nports)
        return EINVAL;
    p = &d->port[num - 1];
    /* The compat struct is ibv_port_attr up to flags (rdma-core's
     * ibverbs.h): only that part is written. */
    memset(a, 0, offsetof(struct ibv_port_attr, flags));
    a->state = p->state;
    a->link_layer = (uint8_t)p->ll;
    a->lid = p->ll == IBV_LINK_LAYER_INFINIBAND && !p->nolid ? (uint16_t)(10 + (d - devs)) : 0;
    a->active_mtu = IBV_MTU_4096;
    a->max_mtu = IBV_MTU_4096;
    a->gid_tbl_len = p->ll == IBV_LINK_LAYER_ETHERNET ? 8 : 1;
    a->active_speed = 64;
    a->active_width = 2;
    return 0;
}

/* The table of port num of d: see the head of the file. */
static int fake_gid(struct fake_dev *d, uint8_t num, uint32_t index, union ibv_gid *g, int *type)
{
    int k = (int)(d - devs);

    if (num < 1 || num > d->nports)
        return EINVAL;
    memset(g, 0, sizeof(*g));
    if (d->port[num - 1].ll == IBV_LINK_LAYER_INFINIBAND) {
        if (index != 0)
            return ENODATA;
        g->raw[0] = 0xfe;
        g->raw[1] = 0x80;
        g->raw[15] = (uint8_t)(10 + k);
        *type = IBV_GID_TYPE_IB;
        return 0;
    }
    switch (index) {
    case 0:
    case 1:
        g->raw[0] = 0xfe;
        g->raw[1] = 0x80;
        g->raw[15] = (uint8_t)k;
        break;
    case 2:
    case 3:
        g->raw[10] = g->raw[11] = 0xff;
        g->raw[12] = 10;
        g->raw[13] = (uint8_t)k;
        g->raw[15] = 1;
        break;
    default:
        return ENODATA;
    }
    *type = index % 2 ? IBV_GID_TYPE_ROCE_V2 : IBV_GID_TYPE_ROCE_V1;
    return 0;
}

int ibv_query_gid(struct ibv_context *ctx, uint8_t num, int index, union ibv_gid *gid)
{
    int type;

    if (fake_gid(dev_of(ctx), num, (uint32_t)index, gid, &type) != 0)
        memset(gid, 0, sizeof(*gid));   /* the classic call shows empty entries as zero */
    return 0;
}

#ifndef FAKE_OLD
int _ibv_query_gid_ex(struct ibv_context *ctx, uint32_t num, uint32_t index,
                      struct ibv_gid_entry *e, uint32_t flags, size_t size)
{
    int type, rc;

    (void)flags;
    if (size < sizeof(*e))
        return EINVAL;
    rc = fake_gid(dev_of(ctx), (uint8_t)num, index, &e->gid, &type);
    if (rc)
        return rc;
    e->gid_index = index;
    e->port_num = num;
    e->gid_type = (uint32_t)type;
    return 0;
}
#endif

/* ------------------------------------------------------------ resources */

struct ibv_pd *ibv_alloc_pd(struct ibv_context *ctx)
{
    struct ibv_pd *pd = calloc(1, sizeof(*pd));

    if (pd)
        pd->context = ctx;
    return pd;
}

int ibv_dealloc_pd(struct ibv_pd *pd)
{
    free(pd);
    return 0;
}

static struct ibv_mr *new_mr(struct ibv_pd *pd, void *addr, size_t len, const char *fn,
                             int access)
{
    struct fake_mr *m;
    static uint32_t keys = 0x100;

    fake_ibv_last_reg = fn;
    fake_ibv_last_access = access;
    if (keys - 0x100 >= FAKE_MRS)
        keys = 0x100;
    while (mrs[keys - 0x100] && keys - 0x100 < FAKE_MRS - 1)
        keys++;
    m = calloc(1, sizeof(*m));
    if (!m || mrs[keys - 0x100]) {
        free(m);
        errno = ENOMEM;
        return NULL;
    }
    m->mr.context = pd->context;
    m->mr.pd = pd;
    m->mr.addr = addr;
    m->mr.length = len;
    m->mr.lkey = m->mr.rkey = keys;
    m->access = access;
    mrs[keys++ - 0x100] = m;
    fake_ibv_live_mrs++;
    return &m->mr;
}

struct ibv_mr *ibv_reg_mr(struct ibv_pd *pd, void *addr, size_t len, int access)
{
    /* The real one refuses the optional flags' range. */
    if (access & IBV_ACCESS_OPTIONAL_RANGE) {
        errno = EINVAL;
        return NULL;
    }
    return new_mr(pd, addr, len, "ibv_reg_mr", access);
}

#ifndef FAKE_OLD
struct ibv_mr *ibv_reg_mr_iova2(struct ibv_pd *pd, void *addr, size_t len, uint64_t iova,
                                unsigned int access)
{
    (void)iova;
    return new_mr(pd, addr, len, "ibv_reg_mr_iova2", (int)access);
}

struct ibv_mr *ibv_reg_dmabuf_mr(struct ibv_pd *pd, uint64_t offset, size_t len, uint64_t iova,
                                 int fd, int access)
{
    (void)offset; (void)iova; (void)fd;
    return new_mr(pd, NULL, len, "ibv_reg_dmabuf_mr", access);
}

enum ibv_fork_status ibv_is_fork_initialized(void)
{
    return getenv("FAKE_IBV_FORK_UNNEEDED") ? IBV_FORK_UNNEEDED : IBV_FORK_DISABLED;
}
#endif

int ibv_dereg_mr(struct ibv_mr *mr)
{
    mrs[mr->rkey - 0x100] = NULL;
    free(mr);
    fake_ibv_live_mrs--;
    return 0;
}

struct ibv_ah *ibv_create_ah(struct ibv_pd *pd, struct ibv_ah_attr *attr)
{
    struct ibv_ah *ah = calloc(1, sizeof(*ah));

    (void)attr;
    if (ah) {
        ah->context = pd->context;
        ah->pd = pd;
    }
    return ah;
}

int ibv_destroy_ah(struct ibv_ah *ah)
{
    free(ah);
    return 0;
}

int ibv_get_async_event(struct ibv_context *ctx, struct ibv_async_event *ev)
{
    (void)ctx; (void)ev;
    errno = EAGAIN;
    return -1;
}

void ibv_ack_async_event(struct ibv_async_event *ev)
{
    (void)ev;
}

int ibv_fork_init(void)
{
    fake_ibv_fork_inits++;
    return 0;
}
