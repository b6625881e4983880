/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * device.c: the device list, opening and closing a device, and the
 * queries of device, port, GID and P_Key.
 *
 * An opened context is an extended one (struct verbs_context, abi_compat
 * set to __VERBS_ABI_IS_EXTENDED) as every rdma-core provider's is: the
 * inline functions of verbs.h find post_send, post_recv, poll_cq and
 * req_notify_cq in context->ops, and ibv_query_port() and
 * ibv_query_device_ex() find theirs through verbs_get_ctx_op(). The
 * exported ibv_query_port fills the shorter struct of the 1.1 ABI (no
 * port_cap_flags2), which is what a caller that resolved it with dlvsym
 * gets on a real libibverbs too.
 */
#include "config.h"

#include <arpa/inet.h>
#include <endian.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "tests/swrdma/swrdma.h"

/* The 1.1 ABI's port attributes: struct ibv_port_attr less its last field. */
struct _compat_ibv_port_attr {
    enum ibv_port_state state;
    enum ibv_mtu max_mtu;
    enum ibv_mtu active_mtu;
    int gid_tbl_len;
    uint32_t port_cap_flags;
    uint32_t max_msg_sz;
    uint32_t bad_pkey_cntr;
    uint32_t qkey_viol_cntr;
    uint16_t pkey_tbl_len;
    uint16_t lid;
    uint16_t sm_lid;
    uint8_t lmc;
    uint8_t max_vl_num;
    uint8_t sm_sl;
    uint8_t subnet_timeout;
    uint8_t init_type_reply;
    uint8_t active_width;
    uint8_t active_speed;
    uint8_t phys_state;
    uint8_t link_layer;
    uint8_t flags;
};

struct sw_context *sw_ctx(struct ibv_context *c)
{
    return SW_CONTAINER(SW_CONTAINER(c, struct verbs_context, context), struct sw_context, vctx);
}

/* A context of this process, not one inherited over fork(). */
bool sw_ctx_ok(struct ibv_context *c)
{
    if (!c || !sw.dev || c->device != &sw.dev->dev)
        return false;
    if (sw_ctx(c)->pid != getpid()) {
        sw_check_report("a verbs object of process %d used in its child %d after fork()",
                        (int)sw_ctx(c)->pid, (int)getpid());
        return false;
    }
    return true;
}

static const struct sw_reg_host *my_host(void)
{
    return &sw.reg->host[sw.host];
}

SW_DEFAULT(ibv_get_device_list) struct ibv_device **sw_get_device_list(int *num);
struct ibv_device **sw_get_device_list(int *num)
{
    pthread_mutex_lock(&sw.lock);
    if (!sw.attached && sw_attach() < 0) {
        pthread_mutex_unlock(&sw.lock);
        errno = ENOSYS;
        return NULL;
    }
    if (!sw.dev) {
        struct sw_device *d = calloc(1, sizeof(*d));
        if (!d) {
            pthread_mutex_unlock(&sw.lock);
            errno = ENOMEM;
            return NULL;
        }
        d->host = sw.host;
        d->guid = my_host()->guid;
        d->dev.node_type = IBV_NODE_CA;
        d->dev.transport_type = IBV_TRANSPORT_IB;
        snprintf(d->dev.name, sizeof(d->dev.name), "swrdma0");
        snprintf(d->dev.dev_name, sizeof(d->dev.dev_name), "uverbs0");
        snprintf(d->dev.dev_path, sizeof(d->dev.dev_path), "/sys/class/infiniband_verbs/uverbs0");
        snprintf(d->dev.ibdev_path, sizeof(d->dev.ibdev_path), "/sys/class/infiniband/swrdma0");
        sw.dev = d;
    }
    struct ibv_device **list = calloc(2, sizeof(*list));
    if (!list) {
        pthread_mutex_unlock(&sw.lock);
        errno = ENOMEM;
        return NULL;
    }
    list[0] = &sw.dev->dev;
    sw.lists_out++;
    pthread_mutex_unlock(&sw.lock);
    if (num)
        *num = 1;
    return list;
}

SW_DEFAULT(ibv_free_device_list) void sw_free_device_list(struct ibv_device **list);
void sw_free_device_list(struct ibv_device **list)
{
    pthread_mutex_lock(&sw.lock);
    if (list && sw.lists_out > 0)
        sw.lists_out--;
    pthread_mutex_unlock(&sw.lock);
    free(list);
}

SW_DEFAULT(ibv_get_device_name) const char *sw_get_device_name(struct ibv_device *device);
const char *sw_get_device_name(struct ibv_device *device)
{
    return device ? device->name : NULL;
}

SW_DEFAULT(ibv_get_device_guid) __be64 sw_get_device_guid(struct ibv_device *device);
__be64 sw_get_device_guid(struct ibv_device *device)
{
    if (!device || !sw.dev || device != &sw.dev->dev)
        return 0;
    return htobe64(sw.dev->guid);
}

int ibv_get_device_index(struct ibv_device *device)
{
    return device && sw.dev && device == &sw.dev->dev ? 0 : -1;
}

static int query_port_op(struct ibv_context *c, uint8_t port_num, struct ibv_port_attr *out,
                         size_t len);
static int query_device_ex_op(struct ibv_context *c, const struct ibv_query_device_ex_input *in,
                              struct ibv_device_attr_ex *attr, size_t attr_size);

SW_DEFAULT(ibv_open_device) struct ibv_context *sw_open_device(struct ibv_device *device);
struct ibv_context *sw_open_device(struct ibv_device *device)
{
    pthread_mutex_lock(&sw.lock);
    if (!sw.attached || !sw.dev || device != &sw.dev->dev) {
        pthread_mutex_unlock(&sw.lock);
        errno = ENODEV;
        return NULL;
    }
    if (sw.lists_out == 0 && !sw.dev_opened)
        sw_check_report("ibv_open_device() on a device whose list was freed: "
                        "its pointer is no longer valid (ibv_get_device_list(3))");
    struct sw_context *ctx = calloc(1, sizeof(*ctx));
    if (!ctx)
        goto err_nomem;
    struct ibv_context *c = &ctx->vctx.context;
    ctx->vctx.sz = sizeof(struct verbs_context);
    ctx->vctx.query_port = query_port_op;
    ctx->vctx.query_device_ex = query_device_ex_op;
    c->abi_compat = __VERBS_ABI_IS_EXTENDED;
    c->device = device;
    c->ops.post_send = sw_post_send;
    c->ops.post_recv = sw_post_recv;
    c->ops.poll_cq = sw_poll_cq;
    c->ops.req_notify_cq = sw_req_notify_cq;
    c->cmd_fd = -1;
    c->async_fd = eventfd(0, EFD_SEMAPHORE | EFD_CLOEXEC);
    if (c->async_fd < 0)
        goto err_free;
    c->num_comp_vectors = (int)my_host()->conf.lim.comp_vectors;
    pthread_mutex_init(&c->mutex, NULL);
    pthread_mutex_init(&ctx->lock, NULL);
    ctx->dev = sw.dev;
    ctx->pid = getpid();
    for (uint32_t p = 0; p < my_host()->conf.nports; p++) {
        ctx->port_gen_seen[p] = atomic_load(&my_host()->port[p].gen);
        ctx->port_state_seen[p] = atomic_load(&my_host()->port[p].state);
    }
    if (sw_nic_start() < 0)
        goto err_close;
    ctx->next = sw.contexts;
    sw.contexts = ctx;
    sw.dev_opened = true;
    pthread_mutex_unlock(&sw.lock);
    return c;
err_close:
    close(c->async_fd);
err_free:
    free(ctx);
err_nomem:
    pthread_mutex_unlock(&sw.lock);
    errno = ENOMEM;
    return NULL;
}

SW_DEFAULT(ibv_close_device) int sw_close_device(struct ibv_context *c);
int sw_close_device(struct ibv_context *c)
{
    if (!sw_ctx_ok(c))
        return EINVAL;
    struct sw_context *ctx = sw_ctx(c);
    sw_check_close(ctx);
    pthread_mutex_lock(&sw.nic_lock);
    pthread_mutex_lock(&sw.lock);
    for (struct sw_context **pp = &sw.contexts; *pp; pp = &(*pp)->next)
        if (*pp == ctx) {
            *pp = ctx->next;
            break;
        }
    pthread_mutex_unlock(&sw.lock);
    pthread_mutex_unlock(&sw.nic_lock);
    close(c->async_fd);
    while (ctx->ev_head) {
        struct sw_event_node *n = ctx->ev_head;
        ctx->ev_head = n->next;
        free(n);
    }
    pthread_mutex_destroy(&ctx->lock);
    free(ctx);
    return 0;
}

static void fill_device_attr(struct ibv_device_attr *a)
{
    const struct sw_reg_host *h = my_host();
    const struct sw_limits *l = &h->conf.lim;
    memset(a, 0, sizeof(*a));
    snprintf(a->fw_ver, sizeof(a->fw_ver), "swrdma 1.0");
    a->node_guid = htobe64(h->guid);
    a->sys_image_guid = htobe64(h->guid);
    a->max_mr_size = l->max_mr_size;
    a->page_size_cap = ~4095ull;
    a->max_qp = (int)l->max_qp;
    a->max_qp_wr = (int)l->max_qp_wr;
    a->device_cap_flags = IBV_DEVICE_RC_RNR_NAK_GEN | IBV_DEVICE_PORT_ACTIVE_EVENT |
                          IBV_DEVICE_SYS_IMAGE_GUID | IBV_DEVICE_CHANGE_PHY_PORT;
    a->max_sge = (int)l->max_sge;
    a->max_sge_rd = (int)l->max_sge;
    a->max_cq = (int)l->max_cq;
    a->max_cqe = (int)l->max_cqe;
    a->max_mr = (int)l->max_mr;
    a->max_pd = (int)l->max_pd;
    a->max_qp_rd_atom = (int)l->max_qp_rd_atom;
    a->max_res_rd_atom = (int)(l->max_qp_rd_atom * l->max_qp);
    a->max_qp_init_rd_atom = (int)l->max_qp_init_rd_atom;
    a->atomic_cap = IBV_ATOMIC_HCA;
    a->max_pkeys = 1;
    a->local_ca_ack_delay = 16;
    a->phys_port_cnt = (uint8_t)h->conf.nports;
}

SW_DEFAULT(ibv_query_device) int sw_query_device(struct ibv_context *c, struct ibv_device_attr *a);
int sw_query_device(struct ibv_context *c, struct ibv_device_attr *a)
{
    if (!sw_ctx_ok(c) || !a)
        return EINVAL;
    fill_device_attr(a);
    return 0;
}

static int query_device_ex_op(struct ibv_context *c, const struct ibv_query_device_ex_input *in,
                              struct ibv_device_attr_ex *attr, size_t attr_size)
{
    if (!sw_ctx_ok(c) || (in && in->comp_mask) || attr_size < sizeof(attr->orig_attr))
        return EINVAL;
    struct ibv_device_attr_ex tmp;
    memset(&tmp, 0, sizeof(tmp));
    fill_device_attr(&tmp.orig_attr);
    memcpy(attr, &tmp, SW_MIN(attr_size, sizeof(tmp)));
    return 0;
}

static int fill_port(uint8_t port_num, struct ibv_port_attr *a)
{
    const struct sw_reg_host *h = my_host();
    if (port_num < 1 || port_num > h->conf.nports)
        return EINVAL;
    const struct sw_reg_port *p = &h->port[port_num - 1];
    bool ib = p->link_layer == IBV_LINK_LAYER_INFINIBAND;
    memset(a, 0, sizeof(*a));
    a->state = atomic_load(&p->state);
    a->max_mtu = p->max_mtu;
    a->active_mtu = p->active_mtu;
    a->gid_tbl_len = SW_GID_TBL_LEN;
    a->port_cap_flags = ib ? IBV_PORT_CM_SUP : IBV_PORT_CM_SUP | IBV_PORT_IP_BASED_GIDS;
    a->max_msg_sz = 0x80000000u;
    a->pkey_tbl_len = 1;
    a->lid = ib ? (uint16_t)p->lid : 0;
    a->sm_lid = ib ? 1 : 0;
    a->max_vl_num = ib ? 4 : 1;
    a->subnet_timeout = ib ? 18 : 0;
    a->active_width = 2;       /* 4X */
    a->active_speed = 32;      /* EDR: 4 x 25 Gb/s */
    a->phys_state = a->state == IBV_PORT_ACTIVE ? 5 : 3;   /* LinkUp : Disabled */
    a->link_layer = (uint8_t)p->link_layer;
    a->flags = ib ? 0 : IBV_QPF_GRH_REQUIRED;
    return 0;
}

static int query_port_op(struct ibv_context *c, uint8_t port_num, struct ibv_port_attr *out,
                         size_t len)
{
    if (!sw_ctx_ok(c) || !out)
        return EINVAL;
    struct ibv_port_attr tmp;
    int rc = fill_port(port_num, &tmp);
    if (rc)
        return rc;
    memcpy(out, &tmp, SW_MIN(len, sizeof(tmp)));
    return 0;
}

SW_DEFAULT(ibv_query_port) int sw_query_port(struct ibv_context *c, uint8_t port_num,
                                             struct _compat_ibv_port_attr *out);
int sw_query_port(struct ibv_context *c, uint8_t port_num, struct _compat_ibv_port_attr *out)
{
    return query_port_op(c, port_num, (struct ibv_port_attr *)out, sizeof(*out));
}

static const struct sw_reg_gid *gid_entry(uint32_t port_num, uint32_t index, int *err)
{
    const struct sw_reg_host *h = my_host();
    if (port_num < 1 || port_num > h->conf.nports || index >= SW_GID_TBL_LEN) {
        *err = EINVAL;
        return NULL;
    }
    *err = 0;
    return &h->port[port_num - 1].gid[index];
}

static bool gid_is_empty(const struct sw_reg_gid *g)
{
    static const uint8_t zero[16];
    return !memcmp(g->raw, zero, 16);
}

SW_DEFAULT(ibv_query_gid) int sw_query_gid(struct ibv_context *c, uint8_t port_num, int index,
                                           union ibv_gid *gid);
int sw_query_gid(struct ibv_context *c, uint8_t port_num, int index, union ibv_gid *gid)
{
    int err;
    if (!sw_ctx_ok(c) || index < 0 || !gid) {
        errno = EINVAL;
        return -1;
    }
    const struct sw_reg_gid *g = gid_entry(port_num, (uint32_t)index, &err);
    if (!g) {
        errno = err;
        return -1;
    }
    memcpy(gid->raw, g->raw, 16);   /* an empty entry reads as zeros */
    return 0;
}

int _ibv_query_gid_ex(struct ibv_context *c, uint32_t port_num, uint32_t gid_index,
                      struct ibv_gid_entry *entry, uint32_t flags, size_t entry_size)
{
    int err;
    if (!sw_ctx_ok(c) || flags || !entry || entry_size < sizeof(*entry))
        return EINVAL;
    const struct sw_reg_gid *g = gid_entry(port_num, gid_index, &err);
    if (!g)
        return err;
    if (gid_is_empty(g))
        return ENODATA;
    memset(entry, 0, entry_size);
    memcpy(entry->gid.raw, g->raw, 16);
    entry->gid_index = gid_index;
    entry->port_num = port_num;
    entry->gid_type = g->type;
    entry->ndev_ifindex = g->ifindex;
    return 0;
}

ssize_t _ibv_query_gid_table(struct ibv_context *c, struct ibv_gid_entry *entries,
                             size_t max_entries, uint32_t flags, size_t entry_size)
{
    if (!sw_ctx_ok(c) || flags || !entries || entry_size < sizeof(*entries))
        return -EINVAL;
    size_t n = 0;
    const struct sw_reg_host *h = my_host();
    for (uint32_t p = 1; p <= h->conf.nports; p++)
        for (uint32_t i = 0; i < SW_GID_TBL_LEN; i++) {
            const struct sw_reg_gid *g = &h->port[p - 1].gid[i];
            if (gid_is_empty(g))
                continue;
            if (n == max_entries)
                return -EINVAL;     /* the table does not fit */
            struct ibv_gid_entry *e = (void *)((char *)entries + n * entry_size);
            memset(e, 0, entry_size);
            memcpy(e->gid.raw, g->raw, 16);
            e->gid_index = i;
            e->port_num = p;
            e->gid_type = g->type;
            e->ndev_ifindex = g->ifindex;
            n++;
        }
    return (ssize_t)n;
}

/* One P_Key per port, the default full-membership 0xffff. */
SW_DEFAULT(ibv_query_pkey) int sw_query_pkey(struct ibv_context *c, uint8_t port_num, int index,
                                             __be16 *pkey);
int sw_query_pkey(struct ibv_context *c, uint8_t port_num, int index, __be16 *pkey)
{
    if (!sw_ctx_ok(c) || port_num < 1 || port_num > my_host()->conf.nports || index != 0 || !pkey) {
        errno = EINVAL;
        return -1;
    }
    *pkey = htons(0xffff);
    return 0;
}

int ibv_get_pkey_index(struct ibv_context *c, uint8_t port_num, __be16 pkey)
{
    __be16 p;
    if (sw_query_pkey(c, port_num, 0, &p) < 0)
        return -1;
    if (p != pkey) {
        errno = ENOENT;
        return -1;
    }
    return 0;
}
