/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * sockets.c: the sockets transport's ABI table: TCP between any two hosts,
 * driven by one epoll set per context. Set-up, tear-down and the small
 * entry points live here; see sockets.h for the design and the other
 * sockets_*.c files for the work.
 *
 * Parameters: WEFT_SOCKET_IFNAME (sockets_iface.c), WEFT_SOCKET_NSOCKS
 * (streams per peer and direction, 1 to 8, default 1), WEFT_SOCKET_CHUNK
 * (bytes per frame of large messages, 4096 to 1 GiB, default 512 KiB).
 */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <unistd.h>

#include "plugins/common/tp_mem.h"
#include "plugins/sockets/sockets.h"

/* Socket buffers this big keep a 100 Gb/s link with a 300 us round trip
 * busy; set only where the kernel allows them, as a smaller fixed size
 * would be worse than the kernel's own tuning. */
#define SOCK_BUF_BYTES (4 << 20)

/* ------------------------------------------------------------ parameters */

static long proc_long(const char *path)
{
    FILE *f = fopen(path, "re");
    long v = -1;

    if (!f)
        return -1;
    if (fscanf(f, "%ld", &v) != 1)
        v = -1;
    fclose(f);
    return v;
}

static int pick_bufsize(void)
{
    if (proc_long("/proc/sys/net/core/wmem_max") >= SOCK_BUF_BYTES &&
        proc_long("/proc/sys/net/core/rmem_max") >= SOCK_BUF_BYTES)
        return SOCK_BUF_BYTES;
    return 0;
}

/* ------------------------------------------------------------ set-up */

/* A peer takes no more sends once lost or gone, and sends nothing more
 * once lost, or gone and every message it started to this rank has
 * started here. */
static int peer_state(struct tp_ctx *tp, int peer, int kind)
{
    const struct sock_peer *p = &((struct sock_ctx *)tp)->peers[peer];

    if (!p->known)
        return TP_PEER_UNKNOWN;
    if (p->lost || (p->departed && (kind == TP_SEND || p->next_start_id >= p->bye_msgs)))
        return TP_PEER_GONE;
    return TP_PEER_UP;
}

static const struct tp_ops sock_tp_ops = {
    .req_size = sizeof(struct sock_req),
    .peer = peer_state,
    .send_cancel = weft__sock_send_cancel,
    .match = &weft__sock_msg_ops,
};

static weft_result_t open_listener(struct sock_ctx *ctx)
{
    const weft_transport_core_t *core = ctx->core;
    struct sockaddr_storage ss;
    socklen_t len = sizeof(ss);
    struct epoll_event ev;
    char where[200], bound[80];
    weft_result_t rc;

    rc = weft__sock_pick_address(core, &ss, &len, where, sizeof(where));
    if (rc != WEFT_SUCCESS)
        return rc;
    /* Port 0: an ephemeral one. Same offset in sockaddr_in and _in6. */
    ((struct sockaddr_in *)&ss)->sin_port = 0;
    ctx->listen_fd = socket(ss.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (ctx->listen_fd < 0) {
        core->set_error(SOCK_NAME ": socket: %s", strerror(errno));
        return WEFT_ERR_SYSTEM;
    }
    if (bind(ctx->listen_fd, (struct sockaddr *)&ss, len) != 0 ||
        listen(ctx->listen_fd, SOMAXCONN) != 0 ||
        getsockname(ctx->listen_fd, (struct sockaddr *)&ss, &len) != 0) {
        core->set_error(SOCK_NAME ": cannot listen on %s: %s", where, strerror(errno));
        rc = WEFT_ERR_SYSTEM;
        goto err_close_listener;
    }
    memset(&ev, 0, sizeof(ev));
    ev.events = EPOLLIN;
    ev.data.ptr = NULL; /* NULL stands for the listener */
    if (epoll_ctl(ctx->epfd, EPOLL_CTL_ADD, ctx->listen_fd, &ev) != 0) {
        core->set_error(SOCK_NAME ": epoll_ctl: %s", strerror(errno));
        rc = WEFT_ERR_SYSTEM;
        goto err_close_listener;
    }
    weft__sock_addr_from_sa(&ctx->self, (struct sockaddr *)&ss);
    weft__tp_describe(&ctx->tp, WEFT_TRANSPORT_CAP_MPROBE | WEFT_TRANSPORT_CAP_SELF, 15.0,
                      10.0, &ctx->self, sizeof(ctx->self));
    weft__sock_sa_str((struct sockaddr *)&ss, bound, sizeof(bound));
    TP_INFO(ctx, "rank %d listens on %s (%s); %d stream%s per peer, frames of %zu bytes",
            ctx->rank, bound, where, ctx->nsocks, ctx->nsocks > 1 ? "s" : "", ctx->chunk);
    return WEFT_SUCCESS;

err_close_listener:
    close(ctx->listen_fd);
    ctx->listen_fd = -1;
    return rc;
}

static weft_result_t sock_init(const weft_transport_core_t *core, void **out)
{
    struct sock_ctx *ctx;
    long nsocks, chunk;
    weft_result_t rc;

    ctx = weft__tp_ctx_new(core, out, SOCK_NAME, sizeof(*ctx), &sock_tp_ops, &rc);
    if (!ctx)
        return rc;
    if (weft__tp_param_long(&ctx->tp, "WEFT_SOCKET_NSOCKS", 1, SOCK_MAX_STREAMS, 1,
                            &nsocks) != 0 ||
        weft__tp_param_long(&ctx->tp, "WEFT_SOCKET_CHUNK", SOCK_MIN_CHUNK, SOCK_MAX_CHUNK,
                            SOCK_DEFAULT_CHUNK, &chunk) != 0) {
        rc = WEFT_ERR_INVALID_ARG;
        goto err_free_ctx;
    }
    ctx->nsocks = (int)nsocks;
    ctx->chunk = (size_t)chunk;
    ctx->bufsize = pick_bufsize();
    ctx->listen_fd = -1;
    ctx->peers = calloc((size_t)ctx->size, sizeof(*ctx->peers));
    if (!ctx->peers) {
        core->set_error(SOCK_NAME ": out of memory for %d peers", ctx->size);
        rc = WEFT_ERR_NO_MEMORY;
        goto err_free_ctx;
    }
    ctx->epfd = epoll_create1(EPOLL_CLOEXEC);
    if (ctx->epfd < 0) {
        core->set_error(SOCK_NAME ": epoll_create1: %s", strerror(errno));
        rc = WEFT_ERR_SYSTEM;
        goto err_free_peers;
    }
    rc = open_listener(ctx);
    if (rc != WEFT_SUCCESS)
        goto err_close_epoll;
    *out = ctx;
    return WEFT_SUCCESS;

err_close_epoll:
    close(ctx->epfd);
err_free_peers:
    free(ctx->peers);
err_free_ctx:
    free(ctx);
    return rc;
}

static weft_result_t sock_reach(void *vctx, const void *addr, size_t len,
                                weft_transport_reach_t *reach)
{
    if (!reach)
        return WEFT_ERR_INVALID_ARG;
    *reach = weft__sock_addr_valid(addr, len) ? WEFT_TRANSPORT_REACH_NETWORK
                                              : WEFT_TRANSPORT_REACH_NONE;
    return WEFT_SUCCESS;
}

static weft_result_t sock_connect(void *vctx, int peer, const void *addr, size_t len)
{
    struct sock_ctx *ctx = vctx;
    struct sock_peer *p;

    if (weft__tp_check_rank(&ctx->tp, "connect to", peer) != 0)
        return WEFT_ERR_INVALID_ARG;
    if (!weft__sock_addr_valid(addr, len)) {
        weft__tp_error(&ctx->tp, "the address of rank %d (%zu bytes) is not a " SOCK_NAME
                       " address", peer, len);
        return WEFT_ERR_INVALID_ARG;
    }
    p = &ctx->peers[peer];
    if (p->lost || p->departed) {
        /* A new incarnation: what is left of the old one goes, and the
         * new one numbers its messages from 0. */
        weft__sock_peer_close_all(ctx, peer);
        weft__sock_msgs_fail(ctx, peer, WEFT_ERR_PEER_LOST);
        p->lost = p->departed = 0;
        p->next_start_id = 0;
        p->in_seen = 0;
        p->bye_msgs = 0;
        p->bye_dialed = 0;
    }
    memcpy(&p->addr, addr, sizeof(p->addr));
    p->known = 1;
    p->disconnected = 0;
    return WEFT_SUCCESS;
}

static weft_result_t sock_disconnect(void *vctx, int peer)
{
    struct sock_ctx *ctx = vctx;
    struct sock_peer *p;

    if (weft__tp_check_rank(&ctx->tp, "disconnect from", peer) != 0)
        return WEFT_ERR_INVALID_ARG;
    p = &ctx->peers[peer];
    /* No goodbye: the peer is to see this end as a loss. */
    weft__sock_peer_close_all(ctx, peer);
    weft__sock_sends_fail(ctx, peer, WEFT_ERR_ABORTED);
    weft__sock_msgs_fail(ctx, peer, WEFT_ERR_ABORTED);
    weft__tp_match_drop_peer(&ctx->tp, peer);
    weft__tp_match_fail_peer(&ctx->tp, peer, 0, WEFT_ERR_ABORTED);
    p->known = 0;
    p->lost = p->departed = 0;
    p->disconnected = 1;
    p->next_start_id = 0;
    p->in_seen = 0;
    p->bye_msgs = 0;
    p->bye_dialed = 0;
    return WEFT_SUCCESS;
}

/* The messages still arriving; the queued ones go with the common part,
 * which must then not unlink them from flight lists freed here. */
static void free_messages(struct sock_ctx *ctx)
{
    for (int i = 0; i < ctx->size; i++) {
        struct sock_msg *m = ctx->peers[i].flight, *next;

        for (; m; m = next) {
            next = m->fnext;
            m->in_flight = 0;
            if (!m->in_unexp && !m->claimed)
                weft__sock_msg_free(m);
        }
        ctx->peers[i].flight = NULL;
    }
}

static weft_result_t sock_finalize(void *vctx)
{
    struct sock_ctx *ctx = vctx;

    if (!ctx)
        return WEFT_ERR_INVALID_ARG;
    weft__sock_say_goodbye(ctx);
    while (ctx->conns)
        weft__sock_conn_close(ctx, ctx->conns);
    weft__sock_free_zombies(ctx);
    free_messages(ctx);
    weft__tp_ctx_fini(&ctx->tp);
    close(ctx->listen_fd);
    close(ctx->epfd);
    free(ctx->peers);
    free(ctx);
    return WEFT_SUCCESS;
}

/* ------------------------------------------------------------ small calls */

static weft_result_t sock_get_wait_fd(void *vctx, int *fd)
{
    if (!fd)
        return WEFT_ERR_INVALID_ARG;
    /* Readable when a socket has data, a connection is coming in, or a
     * blocked stream has room again: EPOLLOUT is asked for only then. */
    *fd = ((struct sock_ctx *)vctx)->epfd;
    return WEFT_SUCCESS;
}

/* Any IP network will do, loopback included. */
TP_TRANSPORT_V1(SOCK_NAME, "TCP sockets over any IP network", WEFT_TRANSPORT_NEEDS_NONE,
                .init = sock_init, .reach = sock_reach, .connect = sock_connect,
                .disconnect = sock_disconnect, .finalize = sock_finalize,
                .isend = weft__sock_isend, .progress = weft__sock_progress,
                .get_wait_fd = sock_get_wait_fd);
