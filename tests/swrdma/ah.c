/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * ah.c: address handles, the destinations of UD sends (ibv_create_ah(3),
 * ibv_destroy_ah(3)), and the handle that answers a datagram received
 * (ibv_init_ah_from_wc(3), ibv_create_ah_from_wc(3)).
 *
 * An AH belongs to a PD, which cannot be freed while it has one (EBUSY).
 * Its attributes are checked as the kernel checks them: a port of the
 * device, a service level below 16, a GRH on a RoCE port (there is no
 * LID to route by: EINVAL without is_global), a source GID index naming
 * a GID of the port, and on InfiniBand a LID other than 0 when there is
 * no GRH. Where the address leads is not checked: a GID or LID nobody
 * has makes an AH whose datagrams are lost, as on a real fabric.
 *
 * The handle of a reply is made from the completion (slid, sl) and the
 * first 40 bytes of the receive (ud.c says what they hold): the sender's
 * GID becomes the destination, and the source GID index is that of the
 * local GID the datagram was sent to, of the type its header shows
 * (RoCE v2 for an IPv4 header or a UDP next header, RoCE v1 or IB for
 * an IBA GRH).
 */
#include "config.h"

#include <arpa/inet.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "tests/swrdma/swrdma.h"

static bool gid_empty(const uint8_t raw[16])
{
    static const uint8_t zero[16];
    return !memcmp(raw, zero, 16);
}

static int check_attr(const struct ibv_ah_attr *a)
{
    const struct sw_reg_host *h = &sw.reg->host[sw.host];
    if (a->port_num < 1 || a->port_num > h->conf.nports || a->sl > 15)
        return EINVAL;
    const struct sw_reg_port *p = &h->port[a->port_num - 1];
    if (p->link_layer == IBV_LINK_LAYER_ETHERNET && !a->is_global)
        return EINVAL;
    if (a->is_global &&
        (a->grh.sgid_index >= SW_GID_TBL_LEN || gid_empty(p->gid[a->grh.sgid_index].raw)))
        return EINVAL;
    if (p->link_layer == IBV_LINK_LAYER_INFINIBAND && !a->is_global && a->dlid == 0)
        return EINVAL;
    return 0;
}

SW_DEFAULT(ibv_create_ah) struct ibv_ah *sw_create_ah(struct ibv_pd *pd, struct ibv_ah_attr *attr);
struct ibv_ah *sw_create_ah(struct ibv_pd *ibpd, struct ibv_ah_attr *attr)
{
    int err;
    if (!ibpd || !sw_ctx_ok(ibpd->context) || !attr) {
        errno = EINVAL;
        return NULL;
    }
    if ((err = check_attr(attr))) {
        errno = err;
        return NULL;
    }
    struct sw_ah *ah = calloc(1, sizeof(*ah));
    if (!ah) {
        errno = ENOMEM;
        return NULL;
    }
    struct sw_pd *pd = SW_CONTAINER(ibpd, struct sw_pd, pd);
    ah->attr = *attr;
    ah->ah.context = ibpd->context;
    ah->ah.pd = ibpd;
    ah->ah.handle = pd->id;
    atomic_fetch_add(&pd->users, 1);
    struct sw_context *ctx = sw_ctx(ibpd->context);
    pthread_mutex_lock(&ctx->lock);
    ctx->n_ah++;
    pthread_mutex_unlock(&ctx->lock);
    return &ah->ah;
}

SW_DEFAULT(ibv_destroy_ah) int sw_destroy_ah(struct ibv_ah *ah);
int sw_destroy_ah(struct ibv_ah *ibah)
{
    if (!ibah || !sw_ctx_ok(ibah->context))
        return EINVAL;
    struct sw_ah *ah = SW_CONTAINER(ibah, struct sw_ah, ah);
    struct sw_context *ctx = sw_ctx(ibah->context);
    pthread_mutex_lock(&ctx->lock);
    ctx->n_ah--;
    pthread_mutex_unlock(&ctx->lock);
    atomic_fetch_sub(&SW_CONTAINER(ibah->pd, struct sw_pd, pd)->users, 1);
    free(ah);
    return 0;
}

/* The local GID a datagram was sent to: its index in PORT's table, of
 * the type TYPE (any type on InfiniBand), or -1. */
static int local_gid(const struct sw_reg_port *p, const uint8_t raw[16], uint32_t type)
{
    for (int i = 0; i < SW_GID_TBL_LEN; i++)
        if (!gid_empty(p->gid[i].raw) && !memcmp(p->gid[i].raw, raw, 16) &&
            (p->link_layer == IBV_LINK_LAYER_INFINIBAND || p->gid[i].type == type))
            return i;
    return -1;
}

int ibv_init_ah_from_wc(struct ibv_context *context, uint8_t port_num, struct ibv_wc *wc,
                        struct ibv_grh *grh, struct ibv_ah_attr *ah_attr)
{
    if (!sw_ctx_ok(context) || !wc || !ah_attr)
        goto inval;
    const struct sw_reg_host *h = &sw.reg->host[sw.host];
    if (port_num < 1 || port_num > h->conf.nports)
        goto inval;
    const struct sw_reg_port *p = &h->port[port_num - 1];
    bool eth = p->link_layer == IBV_LINK_LAYER_ETHERNET;
    memset(ah_attr, 0, sizeof(*ah_attr));
    ah_attr->port_num = port_num;
    ah_attr->dlid = eth ? 0 : wc->slid;
    ah_attr->sl = wc->sl;
    ah_attr->src_path_bits = wc->dlid_path_bits;
    if (!(wc->wc_flags & IBV_WC_GRH) && !eth)
        return 0;
    if (!(wc->wc_flags & IBV_WC_GRH) || !grh)
        goto inval;                     /* RoCE always has one */

    const uint8_t *b = (const uint8_t *)grh;
    uint8_t remote[16], local[16];
    uint32_t type, tclass, flow = 0;
    if (b[0] >> 4 == 6) {
        /* an IBA GRH, or the IPv6 header of RoCE v2 */
        uint32_t vtf = ntohl(grh->version_tclass_flow);
        tclass = vtf >> 20 & 0xff;
        flow = vtf & 0xfffff;
        memcpy(remote, grh->sgid.raw, 16);
        memcpy(local, grh->dgid.raw, 16);
        type = !eth ? IBV_GID_TYPE_IB
               : grh->next_hdr == 17 ? IBV_GID_TYPE_ROCE_V2 : IBV_GID_TYPE_ROCE_V1;
    } else if (eth && b[20] == 0x45) {
        /* RoCE v2 over IPv4: the header sits in the last 20 bytes */
        static const uint8_t prefix[12] = { 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff };
        tclass = b[21];
        memcpy(remote, prefix, 12);
        memcpy(remote + 12, b + 32, 4);
        memcpy(local, prefix, 12);
        memcpy(local + 12, b + 36, 4);
        type = IBV_GID_TYPE_ROCE_V2;
    } else {
        goto inval;
    }
    int idx = local_gid(p, local, type);
    if (idx < 0)
        goto inval;
    ah_attr->is_global = 1;
    memcpy(ah_attr->grh.dgid.raw, remote, 16);
    ah_attr->grh.sgid_index = (uint8_t)idx;
    ah_attr->grh.flow_label = flow;
    ah_attr->grh.traffic_class = (uint8_t)tclass;
    ah_attr->grh.hop_limit = 0xff;     /* the reply may cross as many routers as there are */
    return 0;
inval:
    errno = EINVAL;
    return -1;
}

struct ibv_ah *ibv_create_ah_from_wc(struct ibv_pd *pd, struct ibv_wc *wc, struct ibv_grh *grh,
                                     uint8_t port_num)
{
    struct ibv_ah_attr a;
    if (!pd || ibv_init_ah_from_wc(pd->context, port_num, wc, grh, &a))
        return NULL;
    return sw_create_ah(pd, &a);
}
