/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * sockets_iface.c: which local address the sockets transport listens on.
 *
 * WEFT_SOCKET_IFNAME names interfaces: a comma-separated list of names,
 * each also selecting the interfaces whose names it starts ("eth" selects
 * eth0 and eth1), or after a leading '^' the interfaces to avoid
 * ("^docker,lo"). Without it, the address this host uses to reach the
 * rendezvous host (master_addr) is taken, so ranks talk over the network
 * their launcher already uses; failing that the first interface that is up
 * and not loopback, and loopback last.
 */
#include "config.h"

#include <errno.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netdb.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "plugins/sockets/sockets.h"

/* 1 when spec (see above) selects ifname. Blanks around names are ignored,
 * so are empty names; "^" alone excludes nothing. */
int weft__sock_ifname_match(const char *spec, const char *ifname)
{
    int deny, hit = 0;
    const char *p;

    if (!spec || !ifname)
        return 0;
    while (*spec == ' ')
        spec++;
    deny = *spec == '^';
    p = spec + deny;
    while (*p && !hit) {
        size_t n = strcspn(p, ",");
        const char *name = p;

        p += n;
        if (*p == ',')
            p++;
        while (n && *name == ' ') {
            name++;
            n--;
        }
        while (n && name[n - 1] == ' ')
            n--;
        if (n && !strncmp(ifname, name, n))
            hit = 1;
    }
    return deny ? !hit : hit;
}

static int ipv6_link_local(const struct sockaddr *sa)
{
    return sa->sa_family == AF_INET6 &&
           IN6_IS_ADDR_LINKLOCAL(&((const struct sockaddr_in6 *)sa)->sin6_addr);
}

/* Lower is better: running beats merely up, a real interface beats
 * loopback, IPv4 beats IPv6. -1: unusable. Link-local IPv6 would need a
 * scope id that means nothing on the peer's host: left out. */
static int iface_score(const struct ifaddrs *i)
{
    if (!i->ifa_addr || !(i->ifa_flags & IFF_UP) ||
        (i->ifa_addr->sa_family != AF_INET && i->ifa_addr->sa_family != AF_INET6) ||
        ipv6_link_local(i->ifa_addr))
        return -1;
    return (i->ifa_flags & IFF_RUNNING ? 0 : 4) + (i->ifa_flags & IFF_LOOPBACK ? 2 : 0) +
           (i->ifa_addr->sa_family == AF_INET6 ? 1 : 0);
}

/* The best entry of list that spec (NULL or "": any) selects; list order
 * breaks ties. */
const struct ifaddrs *weft__sock_iface_pick(const struct ifaddrs *list, const char *spec)
{
    const struct ifaddrs *best = NULL;
    int best_score = 0;

    for (const struct ifaddrs *i = list; i; i = i->ifa_next) {
        int score = iface_score(i);

        if (score < 0 || (spec && *spec && !weft__sock_ifname_match(spec, i->ifa_name)))
            continue;
        if (!best || score < best_score) {
            best = i;
            best_score = score;
        }
    }
    return best;
}

/* The local address the kernel would use towards host (a name, an IPv4 or
 * an IPv6 literal): connecting a UDP socket sends nothing but fixes the
 * route. 0 on success. */
int weft__sock_route_to(const char *host, struct sockaddr_storage *ss, socklen_t *len)
{
    struct addrinfo hints, *res, *ai;
    int found = 0;

    memset(&hints, 0, sizeof(hints));
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_DGRAM;
    /* Any port will do: nothing is sent. */
    if (!host || !*host || getaddrinfo(host, "9", &hints, &res) != 0)
        return -1;
    for (ai = res; ai && !found; ai = ai->ai_next) {
        int fd = socket(ai->ai_family, SOCK_DGRAM | SOCK_CLOEXEC, 0);
        socklen_t l = sizeof(*ss);

        if (fd < 0)
            continue;
        if (connect(fd, ai->ai_addr, ai->ai_addrlen) == 0 &&
            getsockname(fd, (struct sockaddr *)ss, &l) == 0 &&
            !ipv6_link_local((struct sockaddr *)ss)) {
            *len = l;
            found = 1;
        }
        close(fd);
    }
    freeaddrinfo(res);
    return found ? 0 : -1;
}

static int same_ip(const struct sockaddr *a, const struct sockaddr *b)
{
    if (a->sa_family != b->sa_family)
        return 0;
    if (a->sa_family == AF_INET)
        return !memcmp(&((const struct sockaddr_in *)a)->sin_addr,
                       &((const struct sockaddr_in *)b)->sin_addr, sizeof(struct in_addr));
    if (a->sa_family == AF_INET6)
        return !memcmp(&((const struct sockaddr_in6 *)a)->sin6_addr,
                       &((const struct sockaddr_in6 *)b)->sin6_addr, sizeof(struct in6_addr));
    return 0;
}

static socklen_t sa_len(const struct sockaddr *sa)
{
    return sa->sa_family == AF_INET6 ? sizeof(struct sockaddr_in6) : sizeof(struct sockaddr_in);
}

/* The address without its port, for messages. */
static void ip_str(const struct sockaddr *sa, char *buf, size_t cap)
{
    char *colon;

    weft__sock_sa_str(sa, buf, cap);
    colon = strrchr(buf, ':');
    if (colon)
        *colon = '\0';
}

weft_result_t weft__sock_pick_address(const weft_transport_core_t *core,
                                      struct sockaddr_storage *ss, socklen_t *len,
                                      char *desc, size_t desc_cap)
{
    const char *spec = core->get_param ? core->get_param("WEFT_SOCKET_IFNAME") : NULL;
    const char *master = core->master_addr;
    struct ifaddrs *ifs = NULL;
    const struct ifaddrs *pick;
    char ip[INET6_ADDRSTRLEN + 8];
    int list_err = 0;

    if (spec && !*spec)
        spec = NULL;
    if (master && !*master)
        master = NULL;
    if (getifaddrs(&ifs) != 0) {
        list_err = errno;
        ifs = NULL;
    }
    if (!spec && master && weft__sock_route_to(master, ss, len) == 0) {
        const char *ifname = "?";

        for (const struct ifaddrs *i = ifs; i; i = i->ifa_next)
            if (i->ifa_addr && same_ip(i->ifa_addr, (struct sockaddr *)ss)) {
                ifname = i->ifa_name;
                break;
            }
        ip_str((struct sockaddr *)ss, ip, sizeof(ip));
        snprintf(desc, desc_cap, "%s on %s, the route to the rendezvous host %s", ip, ifname,
                 master);
        if (ifs)
            freeifaddrs(ifs);
        return WEFT_SUCCESS;
    }
    if (!ifs) {
        core->set_error(SOCK_NAME ": cannot list the network interfaces: %s",
                        list_err ? strerror(list_err) : "none found");
        return WEFT_ERR_SYSTEM;
    }
    pick = weft__sock_iface_pick(ifs, spec);
    if (!pick) {
        freeifaddrs(ifs);
        if (spec)
            core->set_error(SOCK_NAME ": no interface that is up and has an address matches "
                            "WEFT_SOCKET_IFNAME=%s", spec);
        else
            core->set_error(SOCK_NAME ": no network interface is up");
        return WEFT_ERR_UNSUPPORTED;
    }
    *len = sa_len(pick->ifa_addr);
    memcpy(ss, pick->ifa_addr, *len);
    ip_str((struct sockaddr *)ss, ip, sizeof(ip));
    snprintf(desc, desc_cap, "%s on %s, %s", ip, pick->ifa_name,
             spec ? "chosen by WEFT_SOCKET_IFNAME" :
             master ? "no route to the rendezvous host" : "the first interface up");
    freeifaddrs(ifs);
    return WEFT_SUCCESS;
}
