/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * ibv_fake.c: a stand-in libibverbs for the ib-verbs transport's unit
 * tests, built in several variants (tests/unit/ib_verbs.mk): with
 * rdma-core's symbol versions, with only IBVERBS_1.0 and 1.1, without
 * versions, with one required symbol missing, and with every symbol at
 * the wrong version. It knows devices and ports, not traffic: enough for
 * the loader, the enumeration of ports and GIDs, and init to run; every
 * data-moving verb fails. Never installed.
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

static int fake_poll_cq(struct ibv_cq *cq, int n, struct ibv_wc *wc)
{
    (void)cq; (void)n; (void)wc;
    return 0;
}

static int fake_notify_cq(struct ibv_cq *cq, int solicited)
{
    (void)cq; (void)solicited;
    return 0;
}

static int fake_post_send(struct ibv_qp *qp, struct ibv_send_wr *wr, struct ibv_send_wr **bad)
{
    (void)qp;
    *bad = wr;
    return ENOSYS;
}

static int fake_post_recv(struct ibv_qp *qp, struct ibv_recv_wr *wr, struct ibv_recv_wr **bad)
{
    (void)qp; (void)wr; (void)bad;
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
    struct ibv_mr *mr = calloc(1, sizeof(*mr));
    static uint32_t keys = 0x100;

    fake_ibv_last_reg = fn;
    fake_ibv_last_access = access;
    if (!mr)
        return NULL;
    mr->context = pd->context;
    mr->pd = pd;
    mr->addr = addr;
    mr->length = len;
    mr->lkey = mr->rkey = keys++;
    fake_ibv_live_mrs++;
    return mr;
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
    free(mr);
    fake_ibv_live_mrs--;
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
    struct ibv_cq *cq = calloc(1, sizeof(*cq));

    (void)vector;
    if (!cq)
        return NULL;
    cq->context = ctx;
    cq->channel = ch;
    cq->cq_context = cq_ctx;
    cq->cqe = cqe;
    return cq;
}

int ibv_resize_cq(struct ibv_cq *cq, int cqe)
{
    cq->cqe = cqe;
    return 0;
}

int ibv_destroy_cq(struct ibv_cq *cq)
{
    free(cq);
    return 0;
}

int ibv_get_cq_event(struct ibv_comp_channel *ch, struct ibv_cq **cq, void **cq_ctx)
{
    (void)ch; (void)cq; (void)cq_ctx;
    errno = EAGAIN;
    return -1;
}

void ibv_ack_cq_events(struct ibv_cq *cq, unsigned int n)
{
    (void)cq; (void)n;
}

#ifndef FAKE_NO_CREATE_QP
struct ibv_qp *ibv_create_qp(struct ibv_pd *pd, struct ibv_qp_init_attr *attr)
{
    struct ibv_qp *qp = calloc(1, sizeof(*qp));
    static uint32_t qpns = 0x40;

    if (!qp)
        return NULL;
    qp->context = pd->context;
    qp->pd = pd;
    qp->send_cq = attr->send_cq;
    qp->recv_cq = attr->recv_cq;
    qp->qp_num = qpns++;
    qp->qp_type = attr->qp_type;
    qp->state = IBV_QPS_RESET;
    return qp;
}
#endif

int ibv_modify_qp(struct ibv_qp *qp, struct ibv_qp_attr *attr, int mask)
{
    if (mask & IBV_QP_STATE)
        qp->state = attr->qp_state;
    return 0;
}

int ibv_destroy_qp(struct ibv_qp *qp)
{
    free(qp);
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
