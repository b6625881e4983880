/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * ibv_hca.c: WEFT_IB_HCA, which devices and ports the transport may use.
 * The syntax is NCCL_IB_HCA's, so that a site's settings carry over:
 * "mlx5_0:1,mlx5_1" selects port 1 of mlx5_0 and every port of mlx5_1
 * (and of mlx5_10: without '=', a name selects the devices it starts);
 * "^mlx5_2" uses everything but mlx5_2; "=mlx5_1" and "^=mlx5_1" compare
 * names exactly.
 */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "plugins/ib-verbs/ibv.h"

static const char *skip_blanks(const char *s)
{
    while (*s == ' ' || *s == '\t')
        s++;
    return s;
}

/* One entry, "name" or "name:port", of n bytes at s (blanks around it
 * allowed). 0, or -1 with why filled. */
static int parse_entry(const char *s, size_t n, struct wib_hca_spec *out, char *why,
                       size_t cap)
{
    const char *colon;
    size_t namelen;

    while (n && (*s == ' ' || *s == '\t')) {
        s++;
        n--;
    }
    while (n && (s[n - 1] == ' ' || s[n - 1] == '\t'))
        n--;
    if (n == 0)
        return 0;       /* "a,,b" and a trailing comma: nothing */
    if (out->n == WIB_HCA_MAX) {
        snprintf(why, cap, "more than %d entries", WIB_HCA_MAX);
        return -1;
    }
    colon = memchr(s, ':', n);
    namelen = colon ? (size_t)(colon - s) : n;
    if (namelen == 0 || namelen >= WIB_DEVNAME_MAX) {
        snprintf(why, cap, "\"%.*s\" names no device", (int)n, s);
        return -1;
    }
    memcpy(out->e[out->n].name, s, namelen);
    out->e[out->n].name[namelen] = '\0';
    out->e[out->n].port = 0;
    if (colon) {
        char num[16], *end;
        size_t plen = n - namelen - 1;
        long port;

        if (plen == 0 || plen >= sizeof(num)) {
            snprintf(why, cap, "\"%.*s\": the port is not a number from 1 to 255", (int)n, s);
            return -1;
        }
        memcpy(num, colon + 1, plen);
        num[plen] = '\0';
        errno = 0;
        port = strtol(num, &end, 10);
        if (errno || *end || port < 1 || port > 255) {
            snprintf(why, cap, "\"%.*s\": the port is not a number from 1 to 255", (int)n, s);
            return -1;
        }
        out->e[out->n].port = (int)port;
    }
    out->n++;
    return 0;
}

int weft__ibv_hca_parse(const char *s, struct wib_hca_spec *out, char *why, size_t cap)
{
    memset(out, 0, sizeof(*out));
    if (!s)
        return 0;
    s = skip_blanks(s);
    if (*s == '^') {
        out->exclude = 1;
        s = skip_blanks(s + 1);
    }
    if (*s == '=') {
        out->exact = 1;
        s++;
    }
    while (*s) {
        size_t n = strcspn(s, ",");

        if (parse_entry(s, n, out, why, cap) != 0)
            return -1;
        s += n;
        if (*s == ',')
            s++;
    }
    if (out->n == 0 && out->exact) {
        snprintf(why, cap, "'=' is followed by no device name");
        return -1;
    }
    return 0;
}

int weft__ibv_hca_match(const struct wib_hca_spec *s, const char *dev, int port)
{
    int hit = 0;

    /* An empty list selects everything, and an empty exclusion ("^")
     * excludes nothing. */
    if (s->n == 0)
        return 1;
    for (int i = 0; i < s->n && !hit; i++) {
        const char *name = s->e[i].name;
        int same = s->exact ? !strcmp(dev, name) : !strncmp(dev, name, strlen(name));

        hit = same && (s->e[i].port == 0 || s->e[i].port == port);
    }
    return s->exclude ? !hit : hit;
}
