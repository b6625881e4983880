/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * sockets_msg.c: messages coming from peers, from their first frame until
 * a receive has all of them. The common matcher (plugins/common) decides
 * which receive a message goes to, once its start frame named its tag;
 * this file keeps its bytes until then.
 *
 * A message's frames may arrive out of order across streams, even before
 * its start frame (then its tag is unknown and it cannot match yet). Until
 * a receive is bound to it, its bytes land in ubuf, and rg records which
 * ranges arrived: binding copies just those, and the rest is read straight
 * into the receive's buffer.
 */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "plugins/sockets/sockets.h"

struct sock_msg *weft__sock_msg_new(struct sock_ctx *ctx, int peer, uint64_t id, size_t total)
{
    struct sock_peer *p = &ctx->peers[peer];
    struct sock_msg *m = calloc(1, sizeof(*m));

    if (!m)
        return NULL;
    m->peer = peer;
    m->id = id;
    m->total = total;
    m->in_flight = 1;
    m->fnext = p->flight;
    if (p->flight)
        p->flight->fprev = m;
    p->flight = m;
    return m;
}

/* Gives m a buffer for the bytes that arrive before a receive: 0 on
 * success. Pages a message does not fill are never touched, so a message
 * whose receive comes soon costs little more than its allocation. */
int weft__sock_msg_buffer(struct sock_msg *m)
{
    if (m->ubuf || m->req || m->orphan)
        return 0;
    m->ubuf = malloc(m->total ? m->total : 1);
    return m->ubuf ? 0 : -1;
}

/* Records that [lo, hi) of ubuf holds data. Frames of one stream arrive in
 * order, so the new range usually extends one near the end. */
void weft__sock_msg_arrived(struct sock_msg *m, size_t lo, size_t hi)
{
    int i, j;

    if (lo >= hi || m->rg_all)
        return;
    /* First range that ends at or after lo: it may touch the new one. */
    for (i = m->nrg; i > 0 && m->rg[i - 1].hi >= lo; i--)
        ;
    for (j = i; j < m->nrg && m->rg[j].lo <= hi; j++) {
        if (m->rg[j].lo < lo)
            lo = m->rg[j].lo;
        if (m->rg[j].hi > hi)
            hi = m->rg[j].hi;
    }
    if (j > i) {
        /* Ranges i..j-1 merge into one. */
        m->rg[i].lo = lo;
        m->rg[i].hi = hi;
        memmove(&m->rg[i + 1], &m->rg[j], (size_t)(m->nrg - j) * sizeof(*m->rg));
        m->nrg -= j - i - 1;
        return;
    }
    if (m->nrg == m->caprg) {
        int cap = m->caprg ? 2 * m->caprg : 4;
        struct sock_range *rg = realloc(m->rg, (size_t)cap * sizeof(*rg));

        if (!rg) {
            /* Forget the detail: binding then copies the whole buffer,
             * which is correct, only slower. */
            m->rg_all = 1;
            return;
        }
        m->rg = rg;
        m->caprg = cap;
    }
    memmove(&m->rg[i + 1], &m->rg[i], (size_t)(m->nrg - i) * sizeof(*m->rg));
    m->rg[i].lo = lo;
    m->rg[i].hi = hi;
    m->nrg++;
}

struct sock_msg *weft__sock_msg_find(struct sock_peer *p, uint64_t id)
{
    for (struct sock_msg *m = p->flight; m; m = m->fnext)
        if (m->id == id)
            return m;
    return NULL;
}

void weft__sock_msg_flight_remove(struct sock_ctx *ctx, struct sock_msg *m)
{
    struct sock_peer *p = &ctx->peers[m->peer];

    if (!m->in_flight)
        return;
    if (m->fprev)
        m->fprev->fnext = m->fnext;
    else
        p->flight = m->fnext;
    if (m->fnext)
        m->fnext->fprev = m->fprev;
    m->fprev = m->fnext = NULL;
    m->in_flight = 0;
}

void weft__sock_msg_free(struct sock_msg *m)
{
    free(m->ubuf);
    free(m->rg);
    free(m);
}

/* A message with all its bytes: its receive completes now, or it waits
 * (complete) in the unexpected queue or in an improbe's hands. */
void weft__sock_msg_check_done(struct sock_ctx *ctx, struct sock_msg *m)
{
    if (!m->started || m->got < m->total)
        return;
    weft__sock_msg_flight_remove(ctx, m);
    weft__tp_match_done(&ctx->tp, &m->tp);
}

/* Copies what arrived of m before r matched it into r's buffer. */
static void copy_arrived(const struct sock_msg *m, struct tp_req *r)
{
    if (!m->ubuf || !r->buf)
        return;
    if (m->rg_all) {
        memcpy(r->buf, m->ubuf, tp_min(m->total, r->len));
        return;
    }
    for (int i = 0; i < m->nrg; i++) {
        size_t lo = m->rg[i].lo, hi = tp_min(m->rg[i].hi, r->len);

        if (lo < hi)
            memcpy(r->buf + lo, m->ubuf + lo, hi - lo);
    }
}

/* ------------------------------------------------------------ the matcher's calls */

/* What arrived moves to r's buffer, the rest is read straight there; one
 * still arriving completes at the end of its last frame. */
static int msg_bind(struct tp_ctx *tp, struct tp_msg *tm, struct tp_req *r)
{
    struct sock_msg *m = (struct sock_msg *)tm;

    copy_arrived(m, r);
    free(m->ubuf);
    m->ubuf = NULL;
    free(m->rg);
    m->rg = NULL;
    m->nrg = m->caprg = 0;
    return !m->in_flight;
}

static int msg_hold(struct tp_ctx *tp, struct tp_msg *tm)
{
    return weft__sock_msg_buffer((struct sock_msg *)tm);
}

static void msg_release(struct tp_ctx *tp, struct tp_msg *tm)
{
    struct sock_msg *m = (struct sock_msg *)tm;

    weft__sock_msg_flight_remove((struct sock_ctx *)tp, m);
    weft__sock_msg_free(m);
}

const struct tp_match_ops weft__sock_msg_ops = {
    .bind = msg_bind,
    .hold = msg_hold,
    .free = msg_release,
};

/* The messages still arriving from peer will never be whole: their
 * receives complete with status, the buffered ones go. Called once the
 * peer's streams are closed (no stream points at them any more). */
void weft__sock_msgs_fail(struct sock_ctx *ctx, int peer, weft_result_t status)
{
    struct sock_peer *p = &ctx->peers[peer];

    while (p->flight) {
        struct sock_msg *m = p->flight;

        weft__sock_msg_flight_remove(ctx, m);
        weft__tp_match_fail(&ctx->tp, &m->tp, status);
    }
}
