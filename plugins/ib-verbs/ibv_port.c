/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * ibv_port.c: which ports the transport uses and in what order: a port
 * is usable when WEFT_IB_HCA selects it, it is ACTIVE and it can be
 * addressed (a LID on InfiniBand, a RoCE GID on Ethernet); usable ports
 * are ordered nearest to the rank first, then fastest, then by name so
 * that every rank of a node orders alike; the rails are the nearest ones.
 * Everything here works on ibv_port_info records, so it is tested
 * without a device; ibv_dev.c fills them.
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "plugins/ib-verbs/ibv.h"

const char *weft__ibv_link_layer_name(int ll)
{
    switch (ll) {
    case IBV_LINK_LAYER_INFINIBAND: return "InfiniBand";
    case IBV_LINK_LAYER_ETHERNET: return "Ethernet (RoCE)";
    default: return "link layer unknown";
    }
}

const char *weft__ibv_port_state_name(int state)
{
    switch (state) {
    case IBV_PORT_NOP: return "NOP";
    case IBV_PORT_DOWN: return "DOWN";
    case IBV_PORT_INIT: return "INIT";
    case IBV_PORT_ARMED: return "ARMED";
    case IBV_PORT_ACTIVE: return "ACTIVE";
    case IBV_PORT_ACTIVE_DEFER: return "ACTIVE_DEFER";
    default: return "?";
    }
}

int weft__ibv_mtu_bytes(int mtu)
{
    return mtu >= IBV_MTU_256 && mtu <= IBV_MTU_4096 ? 128 << mtu : 0;
}

double weft__ibv_port_gbps(int speed, int width)
{
    double lane, lanes;

    /* Data rate per lane of each signalling rate (IBTA encodings). */
    switch (speed) {
    case 1: lane = 2.0; break;          /* SDR */
    case 2: lane = 4.0; break;          /* DDR */
    case 4: lane = 8.0; break;          /* QDR */
    case 8: lane = 10.0; break;         /* FDR10 */
    case 16: lane = 13.64; break;       /* FDR */
    case 32: lane = 25.0; break;        /* EDR, and 25/100 GbE RoCE */
    case 64: lane = 50.0; break;        /* HDR */
    case 128: lane = 100.0; break;      /* NDR */
    case 256: lane = 200.0; break;      /* XDR */
    default: lane = 0.0; break;
    }
    switch (width) {
    case 1: lanes = 1; break;
    case 2: lanes = 4; break;
    case 4: lanes = 8; break;
    case 8: lanes = 12; break;
    case 16: lanes = 2; break;
    default: lanes = 0; break;
    }
    return lane * lanes;
}

void weft__ibv_port_judge(struct wib_port_info *p, const struct wib_hca_spec *hca)
{
    p->usable = 0;
    p->rail = -1;
    if (hca && !weft__ibv_hca_match(hca, p->dev, p->port)) {
        snprintf(p->why, sizeof(p->why), "left out by WEFT_IB_HCA");
        return;
    }
    if (p->state != IBV_PORT_ACTIVE) {
        snprintf(p->why, sizeof(p->why), "port %s", weft__ibv_port_state_name(p->state));
        return;
    }
    if (p->link_layer == IBV_LINK_LAYER_ETHERNET) {
        if (p->gid.index < 0) {
            snprintf(p->why, sizeof(p->why), "%s", p->gid.why);
            return;
        }
    } else if (p->link_layer == IBV_LINK_LAYER_INFINIBAND ||
               p->link_layer == IBV_LINK_LAYER_UNSPECIFIED) {
        if (p->lid == 0) {
            snprintf(p->why, sizeof(p->why), "no LID yet (is a subnet manager running?)");
            return;
        }
        /* UNSPECIFIED comes from old kernels, for InfiniBand. */
        p->link_layer = IBV_LINK_LAYER_INFINIBAND;
    } else {
        snprintf(p->why, sizeof(p->why), "link layer %d is neither InfiniBand nor Ethernet",
                 p->link_layer);
        return;
    }
    p->usable = 1;
    p->why[0] = '\0';
}

static int port_cmp(const void *va, const void *vb)
{
    const struct wib_port_info *a = va, *b = vb;
    int c;

    if (a->usable != b->usable)
        return b->usable - a->usable;
    if (a->near != b->near)
        return a->near - b->near;
    if (a->gbps != b->gbps)
        return a->gbps > b->gbps ? -1 : 1;
    c = strcmp(a->dev, b->dev);
    if (c)
        return c;
    return a->port - b->port;
}

void weft__ibv_port_sort(struct wib_port_info *p, int n)
{
    if (n > 1)
        qsort(p, (size_t)n, sizeof(*p), port_cmp);
}

int weft__ibv_port_rails(struct wib_port_info *p, int n, int max_rails)
{
    int rails = 0;

    for (int i = 0; i < n; i++) {
        p[i].rail = -1;
        if (!p[i].usable)
            continue;
        if (rails == 0) {
            p[i].rail = rails++;
            continue;
        }
        if (p[i].near != p[0].near) {
            snprintf(p[i].why, sizeof(p[i].why), "farther than %s:%d (%s)", p[0].dev,
                     p[0].port, weft__ibv_near_name(p[i].near));
        } else if (p[i].link_layer != p[0].link_layer) {
            snprintf(p[i].why, sizeof(p[i].why), "%s, the first rail %s",
                     weft__ibv_link_layer_name(p[i].link_layer),
                     weft__ibv_link_layer_name(p[0].link_layer));
        } else if (rails >= max_rails) {
            snprintf(p[i].why, sizeof(p[i].why), "beyond WEFT_IB_RAILS=%d", max_rails);
        } else {
            p[i].rail = rails++;
        }
    }
    return rails;
}
