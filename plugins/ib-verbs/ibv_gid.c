/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * ibv_gid.c: which GID of a RoCE port the transport addresses it by.
 *
 * A RoCE port lists one GID per address of its network interface and
 * RoCE version. Both ends of a pair must pick the same version and a
 * routable address, so the choice follows one fixed order (see
 * weft__ibv_gid_rank): RoCE v2 on IPv4 first, on the network the job's
 * bootstrap runs on before any other, then v2 IPv6, then v1, and
 * link-local addresses, which do not cross a router, last.
 * WEFT_IB_GID_INDEX overrides the choice.
 *
 * The types come from _ibv_query_gid_ex (rdma-core 32, IBVERBS_1.11),
 * which asks the kernel; without it from the gid_attrs files in sysfs,
 * which containers often do not show, and then a GID's type is unknown
 * and it ranks after every known one.
 */
#include "config.h"

#include <arpa/inet.h>
#include <errno.h>
#include <ifaddrs.h>
#include <netdb.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "plugins/ib-verbs/ibv.h"

/* ------------------------------------------------------------ classes */

static int gid_zero(const uint8_t *raw)
{
    for (int i = 0; i < 16; i++)
        if (raw[i])
            return 0;
    return 1;
}

static int gid_v4mapped(const uint8_t *raw)
{
    for (int i = 0; i < 10; i++)
        if (raw[i])
            return 0;
    return raw[10] == 0xff && raw[11] == 0xff;
}

static int gid_link_local(const uint8_t *raw)
{
    return raw[0] == 0xfe && (raw[1] & 0xc0) == 0x80;
}

/* 1 when the first prefix bits of a and b agree. */
static int prefix_equal(const uint8_t *a, const uint8_t *b, int prefix)
{
    int full = prefix / 8, rest = prefix % 8;

    if (memcmp(a, b, (size_t)full))
        return 0;
    if (!rest)
        return 1;
    return ((a[full] ^ b[full]) & (0xff << (8 - rest)) & 0xff) == 0;
}

/* 1 when the GID's address is in the bootstrap's network. */
static int on_boot_subnet(const uint8_t *raw, const struct wib_subnet *boot)
{
    if (!boot || !boot->family)
        return 0;
    if (boot->family == AF_INET)
        return gid_v4mapped(raw) && prefix_equal(raw + 12, boot->addr, boot->prefix);
    return !gid_v4mapped(raw) && prefix_equal(raw, boot->addr, boot->prefix);
}

int weft__ibv_gid_rank(const struct wib_gid_cand *c, const struct wib_subnet *boot)
{
    int ll = gid_link_local(c->raw);

    if (gid_zero(c->raw))
        return -1;
    switch (c->kind) {
    case WIB_GID_ROCE_V2:
        if (gid_v4mapped(c->raw))
            return boot && boot->family == AF_INET && on_boot_subnet(c->raw, boot) ? 0 : 1;
        return ll ? 4 : 2;
    case WIB_GID_ROCE_V1:
        return ll ? 5 : 3;
    case WIB_GID_UNKNOWN:
        /* Without types, the address alone still orders them. */
        return ll ? 7 : 6;
    default:
        return -1;
    }
}

static const char *rank_reason(int rank)
{
    switch (rank) {
    case 0: return "IPv4 on the bootstrap network";
    case 1: return "IPv4, not on the bootstrap network";
    case 2: return "IPv6";
    case 3: return "no RoCE v2 GID";
    case 4: return "link-local, no routable GID";
    case 5: return "link-local RoCE v1, no routable GID";
    default: return "type unknown: no _ibv_query_gid_ex and no sysfs gid_attrs";
    }
}

const char *weft__ibv_gid_kind_name(int kind)
{
    switch (kind) {
    case WIB_GID_IB: return "IB";
    case WIB_GID_ROCE_V1: return "RoCE v1";
    case WIB_GID_ROCE_V2: return "RoCE v2";
    default: return "RoCE ?";
    }
}

void weft__ibv_gid_str(const uint8_t raw[16], char *buf, size_t cap)
{
    if (!inet_ntop(AF_INET6, raw, buf, (socklen_t)cap))
        snprintf(buf, cap, "?");
}

int weft__ibv_gid_choose(const struct wib_gid_cand *c, int n, const struct wib_subnet *boot,
                         int forced, struct wib_gid_pick *out)
{
    int best = -1, best_rank = 0, best_on = 0;
    char text[INET6_ADDRSTRLEN];

    memset(out, 0, sizeof(*out));
    out->index = -1;
    out->rank = -1;
    if (forced >= 0) {
        for (int i = 0; i < n; i++)
            if ((int)c[i].index == forced) {
                best = i;
                break;
            }
        if (best < 0) {
            snprintf(out->why, sizeof(out->why), "WEFT_IB_GID_INDEX=%d: the port has no "
                     "such GID", forced);
            return -1;
        }
        best_rank = weft__ibv_gid_rank(&c[best], boot);
    } else {
        for (int i = 0; i < n; i++) {
            int r = weft__ibv_gid_rank(&c[i], boot);
            int on = on_boot_subnet(c[i].raw, boot);

            if (r < 0)
                continue;
            /* Within a class, the bootstrap's network first, then the
             * lowest index, which is what the kernel lists first. */
            if (best < 0 || r < best_rank || (r == best_rank && on > best_on) ||
                (r == best_rank && on == best_on && c[i].index < c[best].index)) {
                best = i;
                best_rank = r;
                best_on = on;
            }
        }
        if (best < 0) {
            snprintf(out->why, sizeof(out->why), "no RoCE GID (%d entr%s, none of RoCE v1 "
                     "or v2 with an address)", n, n == 1 ? "y" : "ies");
            return -1;
        }
    }
    out->index = (int)c[best].index;
    memcpy(out->raw, c[best].raw, 16);
    out->kind = c[best].kind;
    out->rank = best_rank;
    weft__ibv_gid_str(c[best].raw, text, sizeof(text));
    snprintf(out->why, sizeof(out->why), "%s %s (index %d), %s",
             weft__ibv_gid_kind_name(c[best].kind), text, out->index,
             forced >= 0 ? "set by WEFT_IB_GID_INDEX" : rank_reason(best_rank));
    return 0;
}

/* ------------------------------------------------------------ reading */

/* The type sysfs gives a GID: "RoCE v2", "IB/RoCE v1". */
static int sysfs_gid_kind(const char *sysfs_dev, uint8_t port, uint32_t index)
{
    char path[512], line[32] = "";
    FILE *f;

    if (!sysfs_dev || !*sysfs_dev)
        return WIB_GID_UNKNOWN;
    snprintf(path, sizeof(path), "%s/ports/%u/gid_attrs/types/%u", sysfs_dev, port, index);
    f = fopen(path, "re");
    if (!f)
        return WIB_GID_UNKNOWN;
    if (!fgets(line, sizeof(line), f))
        line[0] = '\0';
    fclose(f);
    if (!strncmp(line, "RoCE v2", 7))
        return WIB_GID_ROCE_V2;
    if (!strncmp(line, "IB/RoCE v1", 10))
        return WIB_GID_ROCE_V1;
    return WIB_GID_UNKNOWN;
}

int weft__ibv_gid_read(const struct wib_fns *f, struct ibv_context *vctx, const char *sysfs_dev,
                       uint8_t port, int table_len, struct wib_gid_cand *out, int max)
{
    int n = 0;

    if (table_len > WIB_GIDS_MAX)
        table_len = WIB_GIDS_MAX;
    for (int i = 0; i < table_len && n < max; i++) {
        struct wib_gid_cand *c = &out[n];

        if (f->query_gid_ex) {
            struct ibv_gid_entry e;

            memset(&e, 0, sizeof(e));
            /* ENODATA: an empty entry. */
            if (f->query_gid_ex(vctx, port, (uint32_t)i, &e, 0, sizeof(e)) != 0)
                continue;
            memcpy(c->raw, e.gid.raw, 16);
            c->kind = e.gid_type == IBV_GID_TYPE_ROCE_V2 ? WIB_GID_ROCE_V2 :
                      e.gid_type == IBV_GID_TYPE_ROCE_V1 ? WIB_GID_ROCE_V1 : WIB_GID_IB;
        } else {
            union ibv_gid g;

            if (f->query_gid(vctx, port, i, &g) != 0)
                continue;
            memcpy(c->raw, g.raw, 16);
            c->kind = sysfs_gid_kind(sysfs_dev, port, (uint32_t)i);
        }
        if (gid_zero(c->raw))
            continue;
        c->index = (uint32_t)i;
        n++;
    }
    return n;
}

/* ------------------------------------------------------------ bootstrap network */

static int mask_prefix(const struct sockaddr *mask)
{
    const uint8_t *b;
    int len, bits = 0;

    if (!mask)
        return -1;
    if (mask->sa_family == AF_INET) {
        b = (const uint8_t *)&((const struct sockaddr_in *)mask)->sin_addr;
        len = 4;
    } else if (mask->sa_family == AF_INET6) {
        b = (const uint8_t *)&((const struct sockaddr_in6 *)mask)->sin6_addr;
        len = 16;
    } else {
        return -1;
    }
    for (int i = 0; i < len; i++)
        for (int k = 7; k >= 0 && (b[i] >> k) & 1; k--)
            bits++;
    return bits;
}

void weft__ibv_boot_subnet(const char *host, struct wib_subnet *out)
{
    struct addrinfo hints, *res = NULL;
    struct sockaddr_storage ss;
    socklen_t sl = sizeof(ss);
    struct ifaddrs *ifs = NULL;
    int fd = -1, ok = 0;

    memset(out, 0, sizeof(*out));
    memset(&hints, 0, sizeof(hints));
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_DGRAM;
    /* Connecting a UDP socket sends nothing; it fixes the route. */
    if (!host || !*host || getaddrinfo(host, "9", &hints, &res) != 0)
        return;
    fd = socket(res->ai_family, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    if (fd >= 0 && connect(fd, res->ai_addr, res->ai_addrlen) == 0 &&
        getsockname(fd, (struct sockaddr *)&ss, &sl) == 0)
        ok = 1;
    if (fd >= 0)
        close(fd);
    freeaddrinfo(res);
    if (!ok || getifaddrs(&ifs) != 0)
        return;
    for (struct ifaddrs *i = ifs; i; i = i->ifa_next) {
        const struct sockaddr *a = i->ifa_addr;

        if (!a || a->sa_family != ss.ss_family)
            continue;
        if (a->sa_family == AF_INET &&
            !memcmp(&((const struct sockaddr_in *)a)->sin_addr,
                    &((struct sockaddr_in *)&ss)->sin_addr, 4)) {
            out->family = AF_INET;
            memcpy(out->addr, &((struct sockaddr_in *)&ss)->sin_addr, 4);
        } else if (a->sa_family == AF_INET6 &&
                   !memcmp(&((const struct sockaddr_in6 *)a)->sin6_addr,
                           &((struct sockaddr_in6 *)&ss)->sin6_addr, 16)) {
            out->family = AF_INET6;
            memcpy(out->addr, &((struct sockaddr_in6 *)&ss)->sin6_addr, 16);
        } else {
            continue;
        }
        out->prefix = mask_prefix(i->ifa_netmask);
        if (out->prefix < 0)
            out->family = 0;
        break;
    }
    freeifaddrs(ifs);
}
