/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * ibv_dev.c: the devices and ports of this node as libibverbs shows them:
 * every port of every device is looked at and judged (ibv_port.c), so
 * that a refusal, the log and weft-info can say of each port why it is
 * or is not used; the devices that carry a rail get a protection domain,
 * a completion channel and a completion queue, and the others are closed
 * again.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <unistd.h>

#include "plugins/ib-verbs/ibv.h"

/* Completions a CQ starts with; it grows as pairs connect. */
#define WIB_CQ_START 1024

void weft__ibv_port_line(const struct wib_port_info *p, char *buf, size_t cap)
{
    size_t o = (size_t)snprintf(buf, cap, "%s:%d %s", p->dev, p->port,
                                weft__ibv_link_layer_name(p->link_layer));

    if (o < cap && p->state == IBV_PORT_ACTIVE)
        o += (size_t)snprintf(buf + o, cap - o, " %.0f Gb/s MTU %d", p->gbps,
                              weft__ibv_mtu_bytes(p->mtu));
    if (o < cap && p->usable && p->link_layer == IBV_LINK_LAYER_INFINIBAND)
        o += (size_t)snprintf(buf + o, cap - o, " LID %u", p->lid);
    if (o < cap && p->usable && p->gid.index >= 0)
        o += (size_t)snprintf(buf + o, cap - o, ", GID %s", p->gid.why);
    if (o < cap && p->usable)
        o += (size_t)snprintf(buf + o, cap - o, ", %s", weft__ibv_near_name(p->near));
    if (o < cap && p->rail >= 0)
        snprintf(buf + o, cap - o, ": rail %d", p->rail);
    else if (o < cap)
        snprintf(buf + o, cap - o, ": not used, %s", p->why[0] ? p->why : "?");
}

/* ------------------------------------------------------------ looking */

/* A device name into a port record: both live in the context, which
 * snprintf's overlap check cannot tell apart. */
static void copy_name(char *dst, size_t cap, const char *src)
{
    size_t n = strnlen(src, cap - 1);

    memcpy(dst, src, n);
    dst[n] = '\0';
}

static void on_demand_paging(struct wib_ctx *ctx, struct wib_dev *d)
{
    struct verbs_context *vctx = verbs_get_ctx_op(d->vctx, query_device_ex);
    struct ibv_device_attr_ex ax;
    uint32_t need = IBV_ODP_SUPPORT_SEND | IBV_ODP_SUPPORT_RECV | IBV_ODP_SUPPORT_WRITE |
                    IBV_ODP_SUPPORT_READ;

    d->odp = 0;
    if (!vctx)
        return;
    memset(&ax, 0, sizeof(ax));
    /* query_device_ex is inline in verbs.h, through the context. */
    if (vctx->query_device_ex(d->vctx, NULL, &ax, sizeof(ax)) != 0)
        return;
    d->odp = (ax.odp_caps.general_caps & IBV_ODP_SUPPORT) &&
             (ax.odp_caps.per_transport_caps.rc_odp_caps & need) == need;
}

/* Fills p from port num of device d. */
static void look_at_port(struct wib_ctx *ctx, int di, int num, struct wib_port_info *p)
{
    struct wib_dev *d = &ctx->devs[di];
    struct ibv_port_attr a;
    int numa = weft__ibv_dev_numa(d->sysfs);

    memset(p, 0, sizeof(*p));
    copy_name(p->dev, sizeof(p->dev), d->name);
    p->devi = di;
    p->port = num;
    p->gid.index = -1;
    p->rail = -1;
    p->numa = numa;
    p->near = weft__ibv_dev_near(ctx->tp.core, d->name, d->sysfs, ctx->rank_numa);
    if (weft__ibv_query_port(&ctx->fns, d->vctx, (uint8_t)num, &a) != 0) {
        p->state = IBV_PORT_NOP;
        snprintf(p->why, sizeof(p->why), "ibv_query_port failed: %s", strerror(errno));
        return;
    }
    p->state = a.state;
    p->link_layer = a.link_layer;
    p->lid = a.lid;
    p->mtu = a.active_mtu;
    p->gbps = weft__ibv_port_gbps(a.active_speed, a.active_width);
    p->gid_tbl_len = a.gid_tbl_len;
    if (a.state != IBV_PORT_ACTIVE)
        return;
    if (a.link_layer == IBV_LINK_LAYER_ETHERNET || ctx->prm.gid_index >= 0) {
        struct wib_gid_cand *c = calloc(WIB_GIDS_MAX, sizeof(*c));
        int n;

        if (!c) {
            snprintf(p->gid.why, sizeof(p->gid.why), "out of memory for the GID table");
            return;
        }
        n = weft__ibv_gid_read(&ctx->fns, d->vctx, d->sysfs, (uint8_t)num, a.gid_tbl_len, c,
                               WIB_GIDS_MAX);
        if (a.link_layer == IBV_LINK_LAYER_ETHERNET)
            weft__ibv_gid_choose(c, n, &ctx->boot, ctx->prm.gid_index, &p->gid);
        else if (weft__ibv_gid_choose(c, n, NULL, ctx->prm.gid_index, &p->gid) != 0)
            /* InfiniBand works by LID without it: note it, use GID 0. */
            p->gid.index = -1;
        free(c);
    }
    if (a.link_layer != IBV_LINK_LAYER_ETHERNET) {
        union ibv_gid g;

        if (ctx->fns.query_gid(d->vctx, (uint8_t)num, 0, &g) == 0)
            memcpy(&p->subnet_prefix, g.raw, 8);
    }
}

/* "no usable port: mlx5_0:1 port DOWN; mlx5_1:1 left out by WEFT_IB_HCA" */
static void why_no_port(struct wib_ctx *ctx, char *buf, size_t cap)
{
    size_t o = (size_t)snprintf(buf, cap, "no usable RDMA port:");

    for (int i = 0; i < ctx->nports && o < cap; i++)
        o += (size_t)snprintf(buf + o, cap - o, "%s %s:%d %s", i ? ";" : "", ctx->ports[i].dev,
                              ctx->ports[i].port, ctx->ports[i].why);
}

weft_result_t weft__ibv_dev_open(struct wib_ctx *ctx)
{
    struct ibv_device **list;
    int n = 0;
    char why[1024];

    errno = 0;
    list = ctx->fns.get_device_list(&n);
    if (!list) {
        weft__tp_error(&ctx->tp, "ibv_get_device_list: %s%s", strerror(errno),
                       errno == ENOSYS ? " (no RDMA support in the kernel: ib_uverbs not "
                       "loaded?)" : "");
        return WEFT_ERR_UNSUPPORTED;
    }
    if (n == 0) {
        ctx->fns.free_device_list(list);
        weft__tp_error(&ctx->tp, "no RDMA device (%s finds none)", ctx->fns.path);
        return WEFT_ERR_UNSUPPORTED;
    }
    for (int i = 0; i < n && ctx->ndevs < WIB_DEVS_MAX; i++) {
        struct wib_dev *d = &ctx->devs[ctx->ndevs];
        const char *name = ctx->fns.get_device_name(list[i]);

        memset(d, 0, sizeof(*d));
        snprintf(d->name, sizeof(d->name), "%s", name ? name : "?");
        snprintf(d->sysfs, sizeof(d->sysfs), "%s", list[i]->ibdev_path);
        d->vctx = ctx->fns.open_device(list[i]);
        if (!d->vctx || ctx->fns.query_device(d->vctx, &d->attr) != 0) {
            struct wib_port_info *p = &ctx->ports[ctx->nports];

            if (ctx->nports < WIB_PORTS_MAX) {
                memset(p, 0, sizeof(*p));
                copy_name(p->dev, sizeof(p->dev), d->name);
                p->rail = -1;
                snprintf(p->why, sizeof(p->why), "cannot open the device: %s",
                         strerror(errno ? errno : EIO));
                ctx->nports++;
            }
            if (d->vctx)
                ctx->fns.close_device(d->vctx);
            d->vctx = NULL;
            continue;
        }
        on_demand_paging(ctx, d);
        for (int port = 1; port <= d->attr.phys_port_cnt && ctx->nports < WIB_PORTS_MAX;
             port++) {
            struct wib_port_info *p = &ctx->ports[ctx->nports++];

            look_at_port(ctx, ctx->ndevs, port, p);
            if (!p->why[0])
                weft__ibv_port_judge(p, &ctx->hca);
        }
        ctx->ndevs++;
    }
    ctx->fns.free_device_list(list);
    weft__ibv_port_sort(ctx->ports, ctx->nports);
    ctx->nrails = weft__ibv_port_rails(ctx->ports, ctx->nports, ctx->prm.rails);
    for (int i = 0; i < ctx->nports; i++) {
        char line[512];

        weft__ibv_port_line(&ctx->ports[i], line, sizeof(line));
        TP_INFO(ctx, "%s", line);
        if (ctx->ports[i].rail >= 0) {
            ctx->rail[ctx->ports[i].rail] = &ctx->ports[i];
            ctx->devs[ctx->ports[i].devi].used = 1;
        }
    }
    if (ctx->nrails == 0) {
        why_no_port(ctx, why, sizeof(why));
        weft__tp_error(&ctx->tp, "%s", why);
        return WEFT_ERR_UNSUPPORTED;
    }
    /* Devices without a rail are of no further use. */
    for (int i = 0; i < ctx->ndevs; i++)
        if (!ctx->devs[i].used && ctx->devs[i].vctx) {
            ctx->fns.close_device(ctx->devs[i].vctx);
            ctx->devs[i].vctx = NULL;
        }
    return WEFT_SUCCESS;
}

/* ------------------------------------------------------------ using */

static int watch_fd(struct wib_ctx *ctx, int fd, uint64_t what)
{
    struct epoll_event ev;
    int fl = fcntl(fd, F_GETFL);

    /* Read from progress() only: never block there. */
    if (fl < 0 || fcntl(fd, F_SETFL, fl | O_NONBLOCK) != 0)
        return -1;
    memset(&ev, 0, sizeof(ev));
    ev.events = EPOLLIN;
    ev.data.u64 = what;
    return epoll_ctl(ctx->epfd, EPOLL_CTL_ADD, fd, &ev);
}

/* Adds a CQ of at least need completions (WIB_CQ_START at least, the
 * device's max_cqe at most) to d: its index, or -1 with the error set. */
static int new_cq(struct wib_ctx *ctx, struct wib_dev *d, int need)
{
    int max = d->attr.max_cqe > 0 ? d->attr.max_cqe : INT_MAX;
    int size = need > WIB_CQ_START ? need : WIB_CQ_START;
    struct wib_cq *q;

    if (size > max)
        size = max;
    if (d->ncqs == WIB_CQS_MAX) {
        weft__tp_error(&ctx->tp, "%s: all %d completion queues are full: lower "
                       "WEFT_IB_SQ_DEPTH, WEFT_IB_EAGER_CREDITS or WEFT_IB_CTS_SLOTS", d->name,
                       WIB_CQS_MAX);
        return -1;
    }
    q = &d->cqs[d->ncqs];
    memset(q, 0, sizeof(*q));
    q->cq = ctx->fns.create_cq(d->vctx, size, q, d->ch, 0);
    if (!q->cq) {
        weft__tp_error(&ctx->tp, "%s: cannot create a completion queue of %d: %s", d->name,
                       size, strerror(errno ? errno : ENOMEM));
        return -1;
    }
    q->size = q->cq->cqe > size ? q->cq->cqe : size;
    return d->ncqs++;
}

weft_result_t weft__ibv_dev_setup(struct wib_ctx *ctx)
{
    for (int i = 0; i < ctx->ndevs; i++) {
        struct wib_dev *d = &ctx->devs[i];

        if (!d->used)
            continue;
        d->pd = ctx->fns.alloc_pd(d->vctx);
        d->ch = d->pd ? ctx->fns.create_comp_channel(d->vctx) : NULL;
        if (!d->ch) {
            weft__tp_error(&ctx->tp, "%s: cannot create its %s: %s", d->name,
                           !d->pd ? "protection domain" : "completion channel",
                           strerror(errno ? errno : ENOMEM));
            return WEFT_ERR_SYSTEM;
        }
        d->ncqs = 0;
        if (new_cq(ctx, d, WIB_CQ_START) < 0)
            return WEFT_ERR_SYSTEM;
        /* Event tags: 2i + 1 completions, 2i + 2 asynchronous events. */
        if (watch_fd(ctx, d->ch->fd, 2 * (uint64_t)i + 1) != 0 ||
            watch_fd(ctx, d->vctx->async_fd, 2 * (uint64_t)i + 2) != 0) {
            weft__tp_error(&ctx->tp, "%s: cannot watch its descriptors: %s", d->name,
                           strerror(errno));
            return WEFT_ERR_SYSTEM;
        }
    }
    return WEFT_SUCCESS;
}

void weft__ibv_dev_close(struct wib_ctx *ctx)
{
    for (int i = 0; i < ctx->ndevs; i++) {
        struct wib_dev *d = &ctx->devs[i];

        for (int c = 0; c < d->ncqs; c++)
            ctx->fns.destroy_cq(d->cqs[c].cq);
        d->ncqs = 0;
        if (d->ch)
            ctx->fns.destroy_comp_channel(d->ch);
        if (d->pd)
            ctx->fns.dealloc_pd(d->pd);
        if (d->vctx)
            ctx->fns.close_device(d->vctx);
        memset(d, 0, sizeof(*d));
    }
    ctx->ndevs = 0;
}

int weft__ibv_cq_reserve(struct wib_ctx *ctx, int di, int need, int on)
{
    struct wib_dev *d = &ctx->devs[di];
    int max = d->attr.max_cqe > 0 ? d->attr.max_cqe : INT_MAX, c;

    if (need > max) {
        weft__tp_error(&ctx->tp, "%s: a QP needs %d completions, more than a completion "
                       "queue holds (%d): lower WEFT_IB_SQ_DEPTH, WEFT_IB_EAGER_CREDITS or "
                       "WEFT_IB_CTS_SLOTS", d->name, need, max);
        return -1;
    }
    for (c = on >= 0 ? on : 0; c < d->ncqs; c++) {
        struct wib_cq *q = &d->cqs[c];
        int want = q->need + need, size = q->size;

        if (want <= size)
            break;
        while (size < want && size < max)
            size = size > max / 2 ? max : 2 * size;
        if (size >= want && ctx->fns.resize_cq(q->cq, size) == 0) {
            /* The device may round up: it says what it made. */
            q->size = q->cq->cqe > size ? q->cq->cqe : size;
            break;
        }
        if (on >= 0) {
            weft__tp_error(&ctx->tp, "%s: its completion queue %d cannot hold %d more "
                           "completions (at most %d)", d->name, on, need, max);
            return -1;
        }
    }
    if (c == d->ncqs && new_cq(ctx, d, need) < 0)
        return -1;
    d->cqs[c].need += need;
    return c;
}

void weft__ibv_cq_release(struct wib_ctx *ctx, int di, int cqi, int need)
{
    ctx->devs[di].cqs[cqi].need -= need;
}
