/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * sockets_addr.c: the address blob a rank publishes (family, IP, port) and
 * its conversions to and from socket addresses.
 */
#include "config.h"

#include <arpa/inet.h>
#include <stdio.h>
#include <string.h>

#include "plugins/sockets/sockets.h"

int weft__sock_addr_valid(const void *blob, size_t len)
{
    struct sock_addr a;

    if (!blob || len != sizeof(a))
        return 0;
    memcpy(&a, blob, sizeof(a));
    return a.magic == SOCK_ADDR_MAGIC && a.version == SOCK_WIRE_VERSION &&
           (a.family == AF_INET || a.family == AF_INET6) && a.port != 0;
}

void weft__sock_addr_from_sa(struct sock_addr *a, const struct sockaddr *sa)
{
    memset(a, 0, sizeof(*a));
    a->magic = SOCK_ADDR_MAGIC;
    a->version = SOCK_WIRE_VERSION;
    a->family = sa->sa_family;
    if (sa->sa_family == AF_INET6) {
        const struct sockaddr_in6 *s6 = (const struct sockaddr_in6 *)sa;

        a->port = s6->sin6_port;
        memcpy(a->ip, &s6->sin6_addr, 16);
    } else {
        const struct sockaddr_in *s4 = (const struct sockaddr_in *)sa;

        a->port = s4->sin_port;
        memcpy(a->ip, &s4->sin_addr, 4);
    }
}

socklen_t weft__sock_addr_to_sa(const struct sock_addr *a, struct sockaddr_storage *ss)
{
    memset(ss, 0, sizeof(*ss));
    if (a->family == AF_INET6) {
        struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)ss;

        s6->sin6_family = AF_INET6;
        s6->sin6_port = a->port;
        memcpy(&s6->sin6_addr, a->ip, 16);
        return sizeof(*s6);
    } else {
        struct sockaddr_in *s4 = (struct sockaddr_in *)ss;

        s4->sin_family = AF_INET;
        s4->sin_port = a->port;
        memcpy(&s4->sin_addr, a->ip, 4);
        return sizeof(*s4);
    }
}

/* "10.0.0.1:4242" or "[fe80::1]:4242", for messages. */
void weft__sock_sa_str(const struct sockaddr *sa, char *buf, size_t cap)
{
    char host[INET6_ADDRSTRLEN] = "?";
    unsigned port = 0;

    if (sa->sa_family == AF_INET6) {
        const struct sockaddr_in6 *s6 = (const struct sockaddr_in6 *)sa;

        inet_ntop(AF_INET6, &s6->sin6_addr, host, sizeof(host));
        port = ntohs(s6->sin6_port);
        snprintf(buf, cap, "[%s]:%u", host, port);
        return;
    }
    if (sa->sa_family == AF_INET) {
        const struct sockaddr_in *s4 = (const struct sockaddr_in *)sa;

        inet_ntop(AF_INET, &s4->sin_addr, host, sizeof(host));
        port = ntohs(s4->sin_port);
    }
    snprintf(buf, cap, "%s:%u", host, port);
}
