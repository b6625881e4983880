/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * weftrun_port.c: the port weftrun hands the program's own framework as
 * MASTER_PORT (torch.distributed's env:// rendezvous, whose rank 0 listens
 * there), apart from the port of weft's store.
 *
 * The weftrun of node 0 decides it: the MASTER_PORT of its own
 * environment, as torchrun's --master_port lets users choose it, else a
 * port free on that node. Every rank of the job must get the same one, so
 * on several nodes node 0 leaves it in weft's store under
 * WEFTRUN_PORT_KEY, where the other nodes' weftrun read it before they
 * start their ranks: the store's address and port are the one thing every
 * node knows from its command line.
 */
#include "config.h"

#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "core/base/error.h"
#include "core/boot/store.h"
#include "tools/weftrun.h"

#define WEFTRUN_PORT_KEY "weftrun/master_port"
/* The slices of the wait for node 0's store, between which weftrun looks
 * for a signal: the user's Ctrl-C must not wait for the whole timeout. */
#define FETCH_SLICE_MS 500
/* Node 0 reaches its own store at once; this only bounds a stuck one. */
#define PUBLISH_TIMEOUT_MS 10000

static int64_t clock_ms(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static int bind_fd(int family, const struct sockaddr *sa, socklen_t sl)
{
    int fd = socket(family, SOCK_STREAM | SOCK_CLOEXEC, 0), off = 0, err;

    if (fd < 0)
        return -1;
    /* Dual-stack, so that the port is held for IPv4 too. */
    if (family == AF_INET6)
        setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &off, sizeof(off));
    if (bind(fd, sa, sl) == 0)
        return fd;
    err = errno;
    close(fd);
    errno = err;
    return -1;
}

/* On every address rather than only the store's host: torch's TCPStore
 * listens on every address, and a port free on 127.0.0.1 may be taken on
 * another one. No SO_REUSEADDR and no listen: the socket only holds the
 * port, and closing it leaves nothing behind (no TIME_WAIT). */
static int reserve(int port, int *bound)
{
    struct sockaddr_in6 a6 = { .sin6_family = AF_INET6, .sin6_port = htons((uint16_t)port),
                               .sin6_addr = IN6ADDR_ANY_INIT };
    struct sockaddr_in a4 = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port),
                              .sin_addr.s_addr = htonl(INADDR_ANY) };
    struct sockaddr_storage ss;
    socklen_t sl = sizeof(ss);
    int fd;

    fd = bind_fd(AF_INET6, (struct sockaddr *)&a6, sizeof(a6));
    if (fd < 0 && errno != EADDRINUSE)
        fd = bind_fd(AF_INET, (struct sockaddr *)&a4, sizeof(a4));
    if (fd < 0)
        return -1;
    if (getsockname(fd, (struct sockaddr *)&ss, &sl) != 0) {
        int err = errno;

        close(fd);
        errno = err;
        return -1;
    }
    *bound = ntohs(ss.ss_family == AF_INET6 ? ((struct sockaddr_in6 *)&ss)->sin6_port
                                            : ((struct sockaddr_in *)&ss)->sin_port);
    return fd;
}

static int publish(const char *host, int store_port, const char *token, int port)
{
    weft__store_t *st;
    char value[16];
    weft_result_t rc;

    snprintf(value, sizeof(value), "%d", port);
    rc = weft__store_connect(host, store_port, token, PUBLISH_TIMEOUT_MS, &st);
    if (rc == WEFT_SUCCESS) {
        rc = weft__store_set(st, WEFTRUN_PORT_KEY, value, strlen(value));
        weft__store_close(st);
    }
    if (rc != WEFT_SUCCESS) {
        fprintf(stderr, "weftrun: cannot leave MASTER_PORT for the other nodes in the store: "
                        "%s\n", weft__get_error());
        return -1;
    }
    return 0;
}

static int signal_pending(int sfd)
{
    struct pollfd pfd = { .fd = sfd, .events = POLLIN };

    return poll(&pfd, 1, 0) > 0;
}

static enum weftrun_port_result parse_port(const char *value, size_t len, int *port)
{
    char buf[16], *end;
    long v;

    if (len == 0 || len >= sizeof(buf))
        goto bad;
    memcpy(buf, value, len);
    buf[len] = '\0';
    v = strtol(buf, &end, 10);
    if (*end != '\0' || v < 1 || v > 65535)
        goto bad;
    *port = (int)v;
    return WEFTRUN_PORT_OK;

bad:
    fprintf(stderr, "weftrun: node 0 left no port under %s in the store\n", WEFTRUN_PORT_KEY);
    return WEFTRUN_PORT_FAILED;
}

static enum weftrun_port_result fetch(const char *host, int store_port, const char *token,
                                      int64_t deadline_ms, int sfd, int *port)
{
    enum weftrun_port_result res = WEFTRUN_PORT_FAILED;
    weft__store_t *st = NULL;
    char value[16];
    size_t len;

    for (;;) {
        int64_t left = deadline_ms - clock_ms();
        int slice = left < FETCH_SLICE_MS ? (int)left : FETCH_SLICE_MS;
        weft_result_t rc;

        if (signal_pending(sfd)) {
            res = WEFTRUN_PORT_INTERRUPTED;
            goto out;
        }
        if (slice <= 0) {
            fprintf(stderr, "weftrun: node 0's store at %s port %d gave no MASTER_PORT in "
                            "time (node 0's weftrun not started?)\n", host, store_port);
            goto out;
        }
        /* Node 0 may start after this node: its store is not up yet, or
         * up without the key for a moment. */
        if (st == NULL) {
            rc = weft__store_connect(host, store_port, token, slice, &st);
        } else {
            rc = weft__store_get(st, WEFTRUN_PORT_KEY, value, sizeof(value), &len, slice);
            if (rc == WEFT_SUCCESS) {
                res = parse_port(value, len, port);
                goto out;
            }
        }
        if (rc != WEFT_SUCCESS && rc != WEFT_ERR_TIMEOUT) {
            fprintf(stderr, "weftrun: cannot learn MASTER_PORT from node 0's store: %s\n",
                    weft__get_error());
            goto out;
        }
    }

out:
    weft__store_close(st);
    return res;
}

/* 0 when unset or empty. */
static int env_port(int *port)
{
    const char *v = getenv("MASTER_PORT");
    char *end;
    long p;

    *port = 0;
    if (v == NULL || *v == '\0')
        return 0;
    errno = 0;
    p = strtol(v, &end, 10);
    if (errno != 0 || *end != '\0' || p < 1 || p > 65535) {
        fprintf(stderr, "weftrun: MASTER_PORT '%s' is not a port from 1 to 65535\n", v);
        return -1;
    }
    *port = (int)p;
    return 0;
}

int weftrun_port_begin(struct weftrun_port *fp, const struct weftrun_opts *o)
{
    fp->port = 0;
    fp->hold_fd = -1;
    if (env_port(&fp->user) != 0)
        return -1;
    /* Scripts carried over from torchrun pass the same variable to both
     * (--master-port $MASTER_PORT): the store keeps it, as asked on the
     * command line, and the framework gets a free port as if MASTER_PORT
     * were unset. */
    if (fp->user > 0 && fp->user == o->master_port) {
        if (o->node_rank == 0)
            fprintf(stderr, "weftrun: MASTER_PORT %d is --master-port, the port of weft's "
                            "store; the program's framework gets a free port instead\n",
                    fp->user);
        fp->user = 0;
    }
    if (fp->user == 0 || o->node_rank != 0)
        return 0;
    /* Held before the store listens, so that a store on a free port cannot
     * take it. Taken already: the user's choice stands, and their
     * framework will say why it cannot listen. */
    fp->port = fp->user;
    fp->hold_fd = reserve(fp->user, &fp->port);
    if (fp->hold_fd < 0)
        fprintf(stderr, "weftrun: MASTER_PORT %d is not free on this node (%s); the program's "
                        "rank 0 may not be able to listen on it\n", fp->user, strerror(errno));
    return 0;
}

enum weftrun_port_result weftrun_port_decide(struct weftrun_port *fp,
                                             const struct weftrun_opts *o,
                                             const struct weftrun_port_store *store,
                                             int64_t deadline_ms, int sfd)
{
    enum weftrun_port_result res;

    if (o->node_rank != 0) {
        res = fetch(store->addr, store->port, store->token, deadline_ms, sfd, &fp->port);
        if (res == WEFTRUN_PORT_OK && fp->user > 0 && fp->user != fp->port)
            fprintf(stderr, "weftrun: MASTER_PORT is %d here but %d on node 0; the ranks get "
                            "node 0's\n", fp->user, fp->port);
        return res;
    }
    if (fp->port == 0) {
        /* Found once the store listens, so that it cannot be the store's.
         * Free now, not later: between this and the moment the framework's
         * rank 0 listens, after the socket is closed just before the ranks
         * start, another process may take it (as with torchrun's own choice
         * of a free port), and the framework then fails to listen. */
        fp->hold_fd = reserve(0, &fp->port);
        if (fp->hold_fd < 0) {
            fprintf(stderr, "weftrun: cannot find a free port for MASTER_PORT: %s\n",
                    strerror(errno));
            return WEFTRUN_PORT_FAILED;
        }
    }
    if (o->nnodes > 1 && publish(store->local_addr, store->port, store->token, fp->port) != 0)
        return WEFTRUN_PORT_FAILED;
    return WEFTRUN_PORT_OK;
}

void weftrun_port_release(struct weftrun_port *fp)
{
    if (fp->hold_fd >= 0)
        close(fp->hold_fd);
    fp->hold_fd = -1;
}
