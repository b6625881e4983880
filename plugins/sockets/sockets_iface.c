/*
 * sockets_iface.c: which local address the sockets transport listens on.
 *
 * WEFT_SOCKET_IFNAME names interfaces ("eth0", a prefix "eth", a list
 * "ib0,eth0", or "^docker,lo" to exclude); without it, the address this
 * host uses to reach the rendezvous host (MASTER_ADDR) is taken, so ranks
 * talk over the network their launcher already uses; failing that the first
 * interface that is up and not loopback, and loopback last.
 */
#include "config.h"

#include <arpa/inet.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netdb.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "plugins/sockets/sockets.h"

/* 1 when ifname is selected by spec (see above). */
int sock_ifname_match(const char *spec, const char *ifname)
{
    int deny = spec[0] == '^', hit = 0;
    const char *p = spec + deny;

    while (*p) {
        size_t n = strcspn(p, ",");

        if (n && !strncmp(ifname, p, n))
            hit = 1;
        p += n;
        if (*p == ',')
            p++;
    }
    return deny ? !hit : hit;
}

static socklen_t sa_len(const struct sockaddr *sa)
{
    return sa->sa_family == AF_INET6 ? sizeof(struct sockaddr_in6) : sizeof(struct sockaddr_in);
}

static void describe(const struct sockaddr *sa, const char *how, char *desc, size_t cap)
{
    char host[INET6_ADDRSTRLEN] = "?";

    getnameinfo(sa, sa_len(sa), host, sizeof(host), NULL, 0, NI_NUMERICHOST);
    snprintf(desc, cap, "%s (%s)", host, how);
}

/* The local address the kernel would use towards master: a UDP socket's
 * connect sends nothing but fixes the route. */
static int route_to(const char *master, struct sockaddr_storage *ss, socklen_t *len)
{
    struct addrinfo hints = { .ai_socktype = SOCK_DGRAM }, *res, *ai;
    int ok = 0;

    if (getaddrinfo(master, "9", &hints, &res) != 0)
        return 0;
    for (ai = res; ai && !ok; ai = ai->ai_next) {
        int fd = socket(ai->ai_family, SOCK_DGRAM | SOCK_CLOEXEC, 0);

        if (fd < 0)
            continue;
        *len = sizeof(*ss);
        if (connect(fd, ai->ai_addr, ai->ai_addrlen) == 0 &&
            getsockname(fd, (struct sockaddr *)ss, len) == 0)
            ok = 1;
        close(fd);
    }
    freeaddrinfo(res);
    return ok;
}

weft_result_t sock_pick_address(const weft_transport_core_t *core, struct sockaddr_storage *ss,
                                socklen_t *len, char *desc, size_t desc_cap)
{
    const char *spec = core->get_param("WEFT_SOCKET_IFNAME");
    struct ifaddrs *ifs, *i, *fallback = NULL;

    if ((!spec || !*spec) && core->master_addr && *core->master_addr &&
        route_to(core->master_addr, ss, len)) {
        describe((struct sockaddr *)ss, "route to the rendezvous host", desc, desc_cap);
        return WEFT_SUCCESS;
    }
    if (getifaddrs(&ifs) != 0) {
        core->set_error("sockets: getifaddrs failed: %m");
        return WEFT_ERR_SYSTEM;
    }
    for (i = ifs; i; i = i->ifa_next) {
        int loop;

        if (!i->ifa_addr || !(i->ifa_flags & IFF_UP) ||
            (i->ifa_addr->sa_family != AF_INET && i->ifa_addr->sa_family != AF_INET6))
            continue;
        /* Link-local IPv6 needs a scope id on every peer: not worth it. */
        if (i->ifa_addr->sa_family == AF_INET6 &&
            IN6_IS_ADDR_LINKLOCAL(&((struct sockaddr_in6 *)i->ifa_addr)->sin6_addr))
            continue;
        loop = (i->ifa_flags & IFF_LOOPBACK) != 0;
        if (spec && *spec) {
            if (sock_ifname_match(spec, i->ifa_name))
                break;
            continue;
        }
        if (!loop && i->ifa_addr->sa_family == AF_INET)
            break;
        if (!fallback || (loop && fallback->ifa_flags & IFF_LOOPBACK &&
                          i->ifa_addr->sa_family == AF_INET))
            fallback = i;
    }
    if (!i)
        i = spec && *spec ? NULL : fallback;
    if (!i) {
        freeifaddrs(ifs);
        core->set_error("sockets: no interface matches WEFT_SOCKET_IFNAME=%s", spec);
        return WEFT_ERR_UNSUPPORTED;
    }
    *len = sa_len(i->ifa_addr);
    memcpy(ss, i->ifa_addr, *len);
    {
        char how[96];

        snprintf(how, sizeof(how), "interface %.32s%s", i->ifa_name,
                 spec && *spec ? " from WEFT_SOCKET_IFNAME" : "");
        describe((struct sockaddr *)ss, how, desc, desc_cap);
    }
    freeifaddrs(ifs);
    return WEFT_SUCCESS;
}
