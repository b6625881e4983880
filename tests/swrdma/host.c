/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * host.c: one host per network namespace, each with one device whose
 * ports are described in the registry, and the routing a fabric does:
 * from an address vector (a GID for RoCE, a LID for InfiniBand) to the
 * host and port it names.
 *
 * A RoCE port's GID table comes from the namespace's own interfaces, as
 * the kernel fills a real one from the netdev the port is bound to: a
 * link-local entry first (fe80:: from the interface, or EUI-64 from its
 * MAC), then each IPv4 address as ::ffff:a.b.c.d, then the other IPv6
 * addresses. All are RoCE v2 entries; gids=v1v2 precedes each with its
 * RoCE v1 twin, as ConnectX lists them, so that a program picking
 * entries by index rather than by type goes wrong here as it would
 * there. Loopback is used only when the namespace has nothing else.
 * The active MTU of a RoCE port follows the interface MTU less the
 * RoCE v2 headers, as the kernel derives it.
 */
#include "config.h"

#include <arpa/inet.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netpacket/packet.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tests/swrdma/swrdma.h"

uint64_t sw_netns_id(void)
{
    struct stat st;
    if (stat("/proc/self/ns/net", &st) < 0)
        return 1;
    return (uint64_t)st.st_ino;
}

unsigned sw_mtu_bytes(uint32_t mtu)
{
    return mtu >= IBV_MTU_256 && mtu <= IBV_MTU_4096 ? 128u << mtu : 0;
}

/* IB MTU that fits in a netdev MTU after IP/UDP/BTH/extension/ICRC headers. */
static uint32_t ib_mtu_for_netdev(int mtu)
{
    mtu -= 96;
    for (uint32_t m = IBV_MTU_4096; m > IBV_MTU_256; m--)
        if (mtu >= (int)sw_mtu_bytes(m))
            return m;
    return IBV_MTU_256;
}

struct iface {
    unsigned index;
    char name[IFNAMSIZ];
    bool loopback;
    int mtu;
    uint8_t mac[6];
    bool has_mac, has_ll;
    uint8_t ll[16];
};

static int netdev_mtu(const char *name)
{
    struct ifreq ifr;
    int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return 1500;
    memset(&ifr, 0, sizeof(ifr));
    snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), "%s", name);
    int mtu = ioctl(fd, SIOCGIFMTU, &ifr) == 0 ? ifr.ifr_mtu : 1500;
    close(fd);
    return mtu;
}

static void add_gid(struct sw_reg_port *port, unsigned *n, const uint8_t raw[16],
                    unsigned ifindex, bool v1)
{
    for (int pass = v1 ? 0 : 1; pass < 2 && *n < SW_GID_TBL_LEN; pass++) {
        struct sw_reg_gid *g = &port->gid[(*n)++];
        memcpy(g->raw, raw, 16);
        g->type = pass == 0 ? IBV_GID_TYPE_ROCE_V1 : IBV_GID_TYPE_ROCE_V2;
        g->ifindex = ifindex;
    }
}

/* Fills port 1 of a RoCE host from the interfaces of this namespace. */
static void roce_gids(struct sw_reg_port *port, const struct sw_conf *conf, uint32_t pconf_mtu)
{
    struct ifaddrs *ifa = NULL;
    struct iface ifs[16];
    unsigned nifs = 0, n = 0;
    if (getifaddrs(&ifa) < 0)
        ifa = NULL;
    /* interfaces that are up, with the MAC and link-local address of each */
    for (struct ifaddrs *a = ifa; a; a = a->ifa_next) {
        if (!a->ifa_addr || !(a->ifa_flags & IFF_UP))
            continue;
        unsigned idx = if_nametoindex(a->ifa_name);
        unsigned i;
        for (i = 0; i < nifs; i++)
            if (ifs[i].index == idx)
                break;
        if (i == nifs) {
            if (nifs == 16)
                continue;
            memset(&ifs[i], 0, sizeof(ifs[i]));
            ifs[i].index = idx;
            snprintf(ifs[i].name, sizeof(ifs[i].name), "%s", a->ifa_name);
            ifs[i].loopback = a->ifa_flags & IFF_LOOPBACK;
            ifs[i].mtu = netdev_mtu(a->ifa_name);
            nifs++;
        }
        if (a->ifa_addr->sa_family == AF_PACKET) {
            struct sockaddr_ll *ll = (struct sockaddr_ll *)a->ifa_addr;
            if (ll->sll_halen == 6) {
                memcpy(ifs[i].mac, ll->sll_addr, 6);
                ifs[i].has_mac = true;
            }
        } else if (a->ifa_addr->sa_family == AF_INET6) {
            struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)a->ifa_addr;
            if (IN6_IS_ADDR_LINKLOCAL(&s6->sin6_addr) && !ifs[i].has_ll) {
                memcpy(ifs[i].ll, &s6->sin6_addr, 16);
                ifs[i].has_ll = true;
            }
        }
    }
    bool any = false;
    for (unsigned i = 0; i < nifs; i++)
        any |= !ifs[i].loopback;
    int mtu = 0;
    for (unsigned i = 0; i < nifs; i++) {
        struct iface *f = &ifs[i];
        if (f->loopback == any)
            continue;
        /* does it carry an address at all? */
        bool has_addr = false;
        for (struct ifaddrs *a = ifa; a; a = a->ifa_next)
            if (a->ifa_addr && !strcmp(a->ifa_name, f->name) &&
                (a->ifa_addr->sa_family == AF_INET || a->ifa_addr->sa_family == AF_INET6))
                has_addr = true;
        if (!has_addr)
            continue;
        if (!mtu)
            mtu = f->mtu;
        uint8_t raw[16] = { 0xfe, 0x80 };
        if (f->has_ll) {
            add_gid(port, &n, f->ll, f->index, conf->roce_v1);
        } else if (f->has_mac) {
            raw[8] = f->mac[0] ^ 2;
            raw[9] = f->mac[1];
            raw[10] = f->mac[2];
            raw[11] = 0xff;
            raw[12] = 0xfe;
            raw[13] = f->mac[3];
            raw[14] = f->mac[4];
            raw[15] = f->mac[5];
            add_gid(port, &n, raw, f->index, conf->roce_v1);
        }
        for (struct ifaddrs *a = ifa; a; a = a->ifa_next) {
            if (!a->ifa_addr || strcmp(a->ifa_name, f->name) || a->ifa_addr->sa_family != AF_INET)
                continue;
            uint8_t v4[16] = { 0 };
            v4[10] = v4[11] = 0xff;
            memcpy(v4 + 12, &((struct sockaddr_in *)a->ifa_addr)->sin_addr, 4);
            add_gid(port, &n, v4, f->index, conf->roce_v1);
        }
        for (struct ifaddrs *a = ifa; a; a = a->ifa_next) {
            if (!a->ifa_addr || strcmp(a->ifa_name, f->name) || a->ifa_addr->sa_family != AF_INET6)
                continue;
            struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)a->ifa_addr;
            if (IN6_IS_ADDR_LINKLOCAL(&s6->sin6_addr))
                continue;
            add_gid(port, &n, (const uint8_t *)&s6->sin6_addr, f->index, conf->roce_v1);
        }
    }
    if (ifa)
        freeifaddrs(ifa);
    if (n == 0)
        sw_log("no interface with an address in this network namespace: "
               "the RoCE port has an empty GID table");
    port->active_mtu = pconf_mtu ? pconf_mtu : ib_mtu_for_netdev(mtu ? mtu : 1500);
}

int sw_host_build(struct sw_reg_host *h, const struct sw_conf *conf, uint64_t netns)
{
    h->netns = netns;
    h->conf = *conf;
    /* a locally administered EUI-64 per namespace */
    h->guid = 0x0200000000000000ull | (netns & 0xffffffffffull) << 8;
    for (uint32_t p = 0; p < conf->nports; p++) {
        struct sw_reg_port *port = &h->port[p];
        const struct sw_port_conf *pc = &conf->port[p];
        port->link_layer = pc->link_layer;
        port->max_mtu = pc->max_mtu;
        atomic_store(&port->state, IBV_PORT_ACTIVE);
        if (pc->link_layer == IBV_LINK_LAYER_INFINIBAND) {
            /* the registry plays subnet manager: LIDs unique on the fabric */
            port->lid = sw.reg->next_lid++;
            if (sw.reg->next_lid >= 0xc000)
                sw.reg->next_lid = 1;
            port->active_mtu = pc->active_mtu ? pc->active_mtu : IBV_MTU_4096;
            uint8_t raw[16] = { 0xfe, 0x80 };
            uint64_t port_guid = h->guid + p + 1;
            for (int b = 0; b < 8; b++)
                raw[8 + b] = (uint8_t)(port_guid >> (56 - 8 * b));
            memcpy(port->gid[0].raw, raw, 16);
            port->gid[0].type = IBV_GID_TYPE_IB;
        } else if (p == 0) {
            roce_gids(port, conf, pc->active_mtu);
        } else {
            /* further RoCE ports have no interface of their own here: a
             * link-local GID unique to the port keeps them apart */
            uint8_t raw[16] = { 0xfe, 0x80 };
            uint64_t port_guid = h->guid + p + 1;
            for (int b = 0; b < 8; b++)
                raw[8 + b] = (uint8_t)(port_guid >> (56 - 8 * b));
            unsigned n = 0;
            add_gid(port, &n, raw, 0, conf->roce_v1);
            port->active_mtu = pc->active_mtu ? pc->active_mtu : h->port[0].active_mtu;
        }
        if (port->active_mtu > port->max_mtu)
            port->active_mtu = port->max_mtu;
    }
    return 0;
}

static bool gid_empty(const uint8_t raw[16])
{
    static const uint8_t zero[16];
    return !memcmp(raw, zero, 16);
}

static bool port_has_gid(const struct sw_reg_port *port, const uint8_t raw[16])
{
    if (gid_empty(raw))
        return false;
    for (unsigned g = 0; g < SW_GID_TBL_LEN; g++)
        if (!memcmp(port->gid[g].raw, raw, 16))
            return true;
    return false;
}

static bool port_matches(const struct sw_reg_port *port, const struct ibv_ah_attr *ah,
                         uint32_t link_layer)
{
    if (port->link_layer != link_layer)
        return false;
    if (link_layer == IBV_LINK_LAYER_ETHERNET)
        return ah->is_global && port_has_gid(port, ah->grh.dgid.raw);
    if (port->lid != ah->dlid)
        return false;
    return !ah->is_global || port_has_gid(port, ah->grh.dgid.raw);
}

/* The host and port an address vector reaches, if any. */
bool sw_host_route(const struct ibv_ah_attr *ah, uint32_t link_layer, uint32_t *host,
                   uint32_t *port)
{
    bool found = false;
    sw_reg_lock();
    for (uint32_t h = 0; h < SW_REG_HOSTS && !found; h++) {
        const struct sw_reg_host *e = &sw.reg->host[h];
        if (!e->used)
            continue;
        for (uint32_t p = 0; p < e->conf.nports; p++)
            if (port_matches(&e->port[p], ah, link_layer)) {
                *host = h;
                *port = p + 1;
                found = true;
                break;
            }
    }
    sw_reg_unlock();
    return found;
}

/* Whether AH names (HOST, PORT): the path a responder's ACKs take back. */
bool sw_host_owns(uint32_t host, uint32_t port, const struct ibv_ah_attr *ah,
                  uint32_t link_layer)
{
    const struct sw_reg_host *e = &sw.reg->host[host];
    if (!e->used || port < 1 || port > e->conf.nports)
        return false;
    return port_matches(&e->port[port - 1], ah, link_layer);
}

bool sw_port_up(uint32_t host, uint32_t port)
{
    const struct sw_reg_host *e = &sw.reg->host[host];
    return e->used && port >= 1 && port <= e->conf.nports &&
           atomic_load(&e->port[port - 1].state) == IBV_PORT_ACTIVE;
}

void sw_port_set(uint32_t host, uint32_t port, enum ibv_port_state st)
{
    struct sw_reg_port *p = &sw.reg->host[host].port[port - 1];
    atomic_store(&p->state, st);
    atomic_fetch_add(&p->gen, 1);
    /* every NIC of the host raises the event in its own contexts */
    for (uint32_t i = 0; i < SW_REG_PROCS; i++) {
        struct sw_reg_proc *pr = &sw.reg->proc[i];
        if (!pr->used || pr->host != host)
            continue;
        pid_t pid;
        struct sw_seg *s = sw_seg_map_peer(i, pr->gen, &pid);
        if (s)
            sw_seg_wake(s);
    }
}
