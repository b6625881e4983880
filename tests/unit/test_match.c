/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_match.c: the tag matching of plugins/common (tp_match.c) against the
 * rules of weft/transport.h, driven through a fake transport whose
 * messages carry their bytes in memory: the matcher decides which receive
 * a message goes to, the fake moves the bytes.
 */
#include "config.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "plugins/common/tp.h"

#define NPEERS 4
#define ANY WEFT_TRANSPORT_ANY_PEER
#define MSG_MAX 64

typedef weft_transport_completion_t compl_t;

struct fake_req {
    TP_REQ_HEAD;
};

struct fake_msg {
    TP_MSG_HEAD;
    unsigned char data[MSG_MAX];        /* the whole message, as the sender wrote it */
    int arrived;                        /* every byte is in */
};

struct fake_ctx {
    TP_CTX_HEAD;
    int state[NPEERS];                  /* TP_PEER_* of each peer */
    int hold_fails;                     /* hold answers out of memory */
    int nfreed;                         /* messages freed */
    struct tp_req *send_cancelled;
};

static char last_error[512];
static struct fake_ctx *fx;

/* ------------------------------------------------------------ the fake transport */

static void fake_log(int level, const char *plugin, const char *fmt, ...)
{
}

static void fake_set_error(const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(last_error, sizeof(last_error), fmt, ap);
    va_end(ap);
}

/* What arrived of m (its first got bytes) goes to r's buffer. */
static int fake_bind(struct tp_ctx *tp, struct tp_msg *tm, struct tp_req *r)
{
    struct fake_msg *m = (struct fake_msg *)tm;

    if (r->buf)
        memcpy(r->buf, m->data, tp_min(m->got, r->len));
    return m->arrived;
}

static int fake_hold(struct tp_ctx *tp, struct tp_msg *m)
{
    return ((struct fake_ctx *)tp)->hold_fails ? -1 : 0;
}

static void fake_free(struct tp_ctx *tp, struct tp_msg *m)
{
    ((struct fake_ctx *)tp)->nfreed++;
    free(m);
}

static int fake_peer(struct tp_ctx *tp, int peer, int kind)
{
    return ((struct fake_ctx *)tp)->state[peer];
}

static void fake_send_cancel(struct tp_ctx *tp, struct tp_req *r)
{
    ((struct fake_ctx *)tp)->send_cancelled = r;
    r->cancelled = 1;
}

static const struct tp_match_ops fake_match_ops = {
    .bind = fake_bind,
    .hold = fake_hold,
    .free = fake_free,
};

static const struct tp_ops fake_ops = {
    .req_size = sizeof(struct fake_req),
    .peer = fake_peer,
    .send_cancel = fake_send_cancel,
    .match = &fake_match_ops,
};

static weft_transport_core_t core = {
    .struct_size = sizeof(weft_transport_core_t),
    .rank = 0,
    .size = NPEERS,
    .log = fake_log,
    .set_error = fake_set_error,
};

static int setup(void **state)
{
    void *out;
    weft_result_t rc;

    fx = weft__tp_ctx_new(&core, &out, "fake", sizeof(*fx), &fake_ops, &rc);
    assert_non_null(fx);
    for (int i = 0; i < NPEERS; i++)
        fx->state[i] = TP_PEER_UP;
    last_error[0] = '\0';
    return 0;
}

static int teardown(void **state)
{
    weft__tp_ctx_fini(&fx->tp);
    free(fx);
    return 0;
}

/* A message from peer whose tag the plugin just read; its len bytes
 * (b, b + 1, ...) are to arrive. */
static struct fake_msg *arrive(int peer, uint64_t tag, size_t len, unsigned char b)
{
    struct fake_msg *m = calloc(1, sizeof(*m));

    assert_non_null(m);
    assert_true(len <= MSG_MAX);
    m->peer = peer;
    m->tag = tag;
    m->total = len;
    for (size_t i = 0; i < len; i++)
        m->data[i] = (unsigned char)(b + i);
    assert_int_equal(weft__tp_match_arrive(&fx->tp, &m->tp), 0);
    return m;
}

/* The rest of m's bytes arrive: into its receive's buffer when it has one,
 * as a transport writes them. */
static void deliver(struct fake_msg *m)
{
    if (m->req && m->req->buf && m->got < m->req->len)
        memcpy(m->req->buf + m->got, m->data + m->got,
               tp_min(m->total, m->req->len) - m->got);
    m->got = m->total;
    m->arrived = 1;
    weft__tp_match_done(&fx->tp, &m->tp);
}

/* A whole message. */
static struct fake_msg *send_whole(int peer, uint64_t tag, size_t len, unsigned char b)
{
    struct fake_msg *m = arrive(peer, tag, len, b);

    deliver(m);
    return m;
}

static void *recv_(int peer, void *buf, size_t len, uint64_t tag, uint64_t ignore)
{
    void *r = NULL;

    assert_int_equal(weft__tp_irecv(fx, peer, buf, len, tag, ignore, NULL, &r), WEFT_SUCCESS);
    assert_non_null(r);
    return r;
}

/* 1 with *c filled (and r freed) when r is done. */
static int done(void *r, compl_t *c)
{
    int d = -1;

    assert_int_equal(weft__tp_test(fx, r, &d, c), WEFT_SUCCESS);
    assert_true(d == 0 || d == 1);
    return d;
}

static compl_t must_be_done(void *r)
{
    compl_t c;

    memset(&c, 0x5a, sizeof(c));
    assert_int_equal(done(r, &c), 1);
    return c;
}

static void expect_bytes(const unsigned char *buf, size_t len, unsigned char b)
{
    for (size_t i = 0; i < len; i++)
        assert_int_equal(buf[i], (unsigned char)(b + i));
}

/* ------------------------------------------------------------ the rules */

/* A receive posted first gets the message that matches it, complete once
 * its last byte is in. */
static void test_posted_first(void **state)
{
    unsigned char buf[16] = { 0 };
    void *r = recv_(1, buf, sizeof(buf), 5, 0);
    struct fake_msg *m;
    compl_t c;

    assert_int_equal(done(r, &c), 0);
    m = arrive(1, 5, 10, 100);
    assert_ptr_equal(m->req, r);
    assert_null(fx->unexp_head);
    assert_int_equal(done(r, &c), 0);
    deliver(m);
    c = must_be_done(r);
    assert_int_equal(c.status, WEFT_SUCCESS);
    assert_int_equal(c.peer, 1);
    assert_int_equal(c.tag, 5);
    assert_int_equal(c.len, 10);
    expect_bytes(buf, 10, 100);
    assert_int_equal(fx->nfreed, 1);
}

/* A message without a receive waits, whatever its size; the receive that
 * comes takes it at once. */
static void test_unexpected_first(void **state)
{
    unsigned char buf[MSG_MAX] = { 0 };
    struct fake_msg *m = send_whole(2, 9, MSG_MAX, 7);
    void *r;
    compl_t c;

    assert_ptr_equal(fx->unexp_head, &m->tp);
    assert_int_equal(m->in_unexp, 1);
    assert_int_equal(fx->nfreed, 0);
    r = recv_(2, buf, sizeof(buf), 9, 0);
    c = must_be_done(r);
    assert_int_equal(c.status, WEFT_SUCCESS);
    assert_int_equal(c.peer, 2);
    assert_int_equal(c.len, MSG_MAX);
    expect_bytes(buf, MSG_MAX, 7);
    assert_null(fx->unexp_head);
    assert_int_equal(fx->nfreed, 1);
}

/* A receive that finds its message half arrived gets what came, and the
 * rest as it comes. */
static void test_unexpected_partial(void **state)
{
    unsigned char buf[32] = { 0 };
    struct fake_msg *m = arrive(1, 3, 20, 50);
    void *r;
    compl_t c;

    m->got = 8;
    r = recv_(1, buf, sizeof(buf), 3, 0);
    assert_ptr_equal(m->req, r);
    assert_null(fx->unexp_head);
    expect_bytes(buf, 8, 50);
    assert_int_equal(buf[8], 0);
    assert_int_equal(done(r, &c), 0);
    deliver(m);
    c = must_be_done(r);
    assert_int_equal(c.len, 20);
    expect_bytes(buf, 20, 50);
}

/* Messages from one peer match in the order they were sent, unexpected
 * or not. */
static void test_per_peer_order(void **state)
{
    unsigned char a[4], b[4], x[4], y[4];
    void *ra, *rb, *rx, *ry;

    send_whole(1, 4, 4, 10);
    send_whole(1, 4, 4, 20);
    ra = recv_(1, a, 4, 4, 0);
    rb = recv_(1, b, 4, 4, 0);
    must_be_done(ra);
    must_be_done(rb);
    expect_bytes(a, 4, 10);
    expect_bytes(b, 4, 20);
    rx = recv_(1, x, 4, 4, 0);
    ry = recv_(1, y, 4, 4, 0);
    send_whole(1, 4, 4, 30);
    send_whole(1, 4, 4, 40);
    must_be_done(rx);
    must_be_done(ry);
    expect_bytes(x, 4, 30);
    expect_bytes(y, 4, 40);
}

/* Receives match in the order they were posted: a message goes to the
 * first one it matches, even when a later one names its peer. */
static void test_posted_order(void **state)
{
    unsigned char a[4], b[4];
    void *rany = recv_(ANY, a, 4, 6, 0);
    void *r1 = recv_(1, b, 4, 6, 0);
    compl_t c;

    send_whole(1, 6, 4, 60);
    c = must_be_done(rany);
    assert_int_equal(c.peer, 1);
    expect_bytes(a, 4, 60);
    assert_int_equal(done(r1, &c), 0);
    send_whole(1, 6, 4, 70);
    must_be_done(r1);
    expect_bytes(b, 4, 70);
}

/* ANY_PEER takes a message from any rank; a receive from one rank leaves
 * the others' messages alone. */
static void test_any_peer(void **state)
{
    unsigned char a[4], b[4];
    void *r1 = recv_(1, a, 4, 7, 0);
    void *rany;
    compl_t c;

    send_whole(2, 7, 4, 80);
    assert_int_equal(done(r1, &c), 0);
    assert_non_null(fx->unexp_head);
    assert_int_equal(fx->unexp_head->peer, 2);
    rany = recv_(ANY, b, 4, 7, 0);
    c = must_be_done(rany);
    assert_int_equal(c.peer, 2);
    expect_bytes(b, 4, 80);
    send_whole(1, 7, 4, 90);
    c = must_be_done(r1);
    assert_int_equal(c.peer, 1);
}

/* (msg_tag & ~ignore) == (recv_tag & ~ignore): ignored bits are free on
 * either side, the others must be equal; the completion reports the
 * message's tag. */
static void test_ignore_mask(void **state)
{
    unsigned char buf[4];
    void *r = recv_(1, buf, 4, 0x12ff, 0xff);
    compl_t c;

    send_whole(1, 0x1300, 4, 1);
    assert_int_equal(done(r, &c), 0);
    send_whole(1, 0x12ab, 4, 2);
    c = must_be_done(r);
    assert_int_equal(c.tag, 0x12ab);
    expect_bytes(buf, 4, 2);
    /* The 0x1300 one waits; without a mask only its exact tag takes it. */
    r = recv_(1, buf, 4, 0x1301, 0);
    assert_int_equal(done(r, &c), 0);
    r = recv_(1, buf, 4, 0x1300, 0);
    c = must_be_done(r);
    assert_int_equal(c.tag, 0x1300);
    expect_bytes(buf, 4, 1);
    assert_true(tp_tag_match(0xabcd0000ull, 0xffffull, 0xabcd1234ull));
    assert_false(tp_tag_match(0xabcd0000ull, 0xffffull, 0xabce1234ull));
    assert_true(tp_tag_match(1ull << 63, 1ull << 63, 0));
}

/* A new receive looks at the unexpected queue before it is posted: it
 * takes the waiting message, and the next arrival stays unexpected. */
static void test_unexpected_before_posted(void **state)
{
    unsigned char buf[4];
    struct fake_msg *later;
    void *r;
    compl_t c;

    send_whole(3, 8, 4, 11);
    r = recv_(3, buf, 4, 8, 0);
    assert_null(fx->posted.head);
    later = send_whole(3, 8, 4, 22);
    c = must_be_done(r);
    expect_bytes(buf, 4, 11);
    assert_ptr_equal(fx->unexp_head, &later->tp);
    assert_int_equal(c.peer, 3);
}

/* improbe takes the first matching message off the queue; only imrecv can
 * receive it then. */
static void test_probe_then_imrecv(void **state)
{
    unsigned char buf[8] = { 0 };
    struct fake_msg *a = send_whole(1, 1, 4, 30);
    struct fake_msg *b = send_whole(2, 2, 8, 40);
    compl_t info, c;
    void *msg = NULL, *r, *rany;
    int found = -1;

    assert_int_equal(weft__tp_improbe(fx, ANY, 2, 0, &found, &msg, &info), WEFT_SUCCESS);
    assert_int_equal(found, 1);
    assert_ptr_equal(msg, b);
    assert_int_equal(info.status, WEFT_SUCCESS);
    assert_int_equal(info.peer, 2);
    assert_int_equal(info.tag, 2);
    assert_int_equal(info.len, 8);
    assert_ptr_equal(fx->unexp_head, &a->tp);
    assert_null(fx->unexp_head->qnext);
    assert_ptr_equal(fx->claimed, &b->tp);
    /* Claimed: neither a second probe nor a receive sees it. */
    found = -1;
    assert_int_equal(weft__tp_improbe(fx, ANY, 2, 0, &found, &msg, &info), WEFT_SUCCESS);
    assert_int_equal(found, 0);
    rany = recv_(ANY, NULL, 0, 2, 0);
    assert_int_equal(done(rany, &c), 0);
    assert_int_equal(weft__tp_imrecv(fx, b, buf, sizeof(buf), NULL, &r), WEFT_SUCCESS);
    c = must_be_done(r);
    assert_int_equal(c.status, WEFT_SUCCESS);
    assert_int_equal(c.peer, 2);
    assert_int_equal(c.len, 8);
    expect_bytes(buf, 8, 40);
    assert_null(fx->claimed);
    /* A second imrecv of the same message is misuse, as is one of a
     * message never probed (a is still queued). */
    assert_int_equal(weft__tp_imrecv(fx, a, buf, sizeof(buf), NULL, &r),
                     WEFT_ERR_INVALID_ARG);
    assert_non_null(strstr(last_error, "fake: imrecv"));
    assert_int_equal(weft__tp_cancel(fx, rany), WEFT_SUCCESS);
    assert_int_equal(must_be_done(rany).status, WEFT_ERR_ABORTED);
}

/* A 16-byte message from peer with 4 bytes in, claimed by improbe. */
static struct fake_msg *claim_partial(int peer)
{
    struct fake_msg *m = arrive(peer, 5, 16, 3);
    compl_t info;
    void *msg = NULL;
    int found = 0;

    m->got = 4;
    assert_int_equal(weft__tp_improbe(fx, peer, 5, 0, &found, &msg, &info), WEFT_SUCCESS);
    assert_int_equal(found, 1);
    assert_ptr_equal(msg, m);
    assert_int_equal(info.len, 16);
    assert_int_equal(m->claimed, 1);
    return m;
}

/* A message claimed before its last byte is received into imrecv's buffer
 * as it arrives. */
static void test_claim_partial(void **state)
{
    unsigned char buf[16] = { 0 };
    struct fake_msg *m = claim_partial(1);
    compl_t c;
    void *r;

    assert_int_equal(weft__tp_imrecv(fx, m, buf, sizeof(buf), NULL, &r), WEFT_SUCCESS);
    assert_ptr_equal(m->req, r);
    expect_bytes(buf, 4, 3);
    assert_int_equal(done(r, &c), 0);
    deliver(m);
    c = must_be_done(r);
    assert_int_equal(c.status, WEFT_SUCCESS);
    expect_bytes(buf, 16, 3);
}

/* A claimed message whose sender is lost stays with the core; imrecv then
 * reports the loss. */
static void test_claimed_then_lost(void **state)
{
    struct fake_msg *m = claim_partial(2);
    compl_t c;
    void *r;

    weft__tp_match_fail(&fx->tp, &m->tp, WEFT_ERR_PEER_LOST);
    assert_int_equal(m->dead, 1);
    assert_int_equal(fx->nfreed, 0);
    assert_int_equal(weft__tp_imrecv(fx, m, NULL, 0, NULL, &r), WEFT_SUCCESS);
    c = must_be_done(r);
    assert_int_equal(c.status, WEFT_ERR_PEER_LOST);
    assert_int_equal(c.len, 16);
    assert_int_equal(fx->nfreed, 1);
    assert_null(fx->claimed);
}

/* A cancelled posted receive leaves the queue: the message it would have
 * matched waits for another. */
static void test_cancel_posted(void **state)
{
    unsigned char buf[4] = { 0 };
    void *r = recv_(1, buf, 4, 3, 0);
    struct fake_msg *m;
    compl_t c;

    assert_int_equal(weft__tp_cancel(fx, r), WEFT_SUCCESS);
    assert_null(fx->posted.head);
    c = must_be_done(r);
    assert_int_equal(c.status, WEFT_ERR_ABORTED);
    m = send_whole(1, 3, 4, 9);
    assert_ptr_equal(fx->unexp_head, &m->tp);
    assert_int_equal(buf[0], 0);
}

/* A receive cancelled while its message arrives completes at once; the
 * rest of the message is discarded and the message freed when whole. */
static void test_cancel_bound(void **state)
{
    unsigned char buf[16] = { 0 };
    void *r = recv_(1, buf, sizeof(buf), 3, 0);
    struct fake_msg *m = arrive(1, 3, 16, 9);
    compl_t c;

    assert_ptr_equal(m->req, r);
    assert_int_equal(weft__tp_cancel(fx, r), WEFT_SUCCESS);
    assert_int_equal(m->orphan, 1);
    assert_null(m->req);
    c = must_be_done(r);
    assert_int_equal(c.status, WEFT_ERR_ABORTED);
    assert_int_equal(fx->nfreed, 0);
    deliver(m);
    assert_int_equal(fx->nfreed, 1);
    assert_null(fx->unexp_head);
    assert_int_equal(buf[0], 0);
}

/* Cancelling a request that finished changes nothing; a send is the
 * plugin's to cancel. */
static void test_cancel_done_and_send(void **state)
{
    unsigned char buf[4];
    void *r = recv_(1, buf, 4, 3, 0);
    struct tp_req *s;
    weft_result_t rc;
    void *out;

    send_whole(1, 3, 4, 1);
    assert_int_equal(weft__tp_cancel(fx, r), WEFT_SUCCESS);
    assert_int_equal(must_be_done(r).status, WEFT_SUCCESS);
    s = weft__tp_isend_new(&fx->tp, 2, buf, 4, 3, &out, &rc);
    assert_non_null(s);
    assert_int_equal(rc, WEFT_SUCCESS);
    assert_ptr_equal(out, s);
    assert_int_equal(weft__tp_cancel(fx, s), WEFT_SUCCESS);
    assert_ptr_equal(fx->send_cancelled, s);
    /* The plugin finishes it later: the cancel is what it reports. */
    weft__tp_req_complete(s, WEFT_SUCCESS);
    assert_int_equal(must_be_done(s).status, WEFT_ERR_ABORTED);
    assert_int_equal(weft__tp_cancel(fx, NULL), WEFT_ERR_INVALID_ARG);
}

/* When a peer is lost, its posted receives fail, and receives from any
 * peer with them when asked; the others stay. */
static void test_fail_peer(void **state)
{
    void *r1 = recv_(1, NULL, 0, 1, 0);
    void *r2 = recv_(2, NULL, 0, 1, 0);
    void *rany = recv_(ANY, NULL, 0, 1, 0);
    compl_t c;

    weft__tp_match_fail_peer(&fx->tp, 1, 0, WEFT_ERR_PEER_LOST);
    assert_int_equal(must_be_done(r1).status, WEFT_ERR_PEER_LOST);
    assert_int_equal(done(r2, &c), 0);
    assert_int_equal(done(rany, &c), 0);
    weft__tp_match_fail_peer(&fx->tp, 3, 1, WEFT_ERR_ABORTED);
    assert_int_equal(must_be_done(rany).status, WEFT_ERR_ABORTED);
    assert_int_equal(done(r2, &c), 0);
    assert_ptr_equal(fx->posted.head, r2);
    assert_null(((struct tp_req *)r2)->qnext);
}

/* A message that can never be whole fails its receive; a queued one is
 * dropped. */
static void test_fail_message(void **state)
{
    unsigned char buf[16];
    void *r = recv_(2, buf, sizeof(buf), 1, 0);
    struct fake_msg *bound = arrive(2, 1, 16, 0);
    struct fake_msg *queued = arrive(2, 2, 16, 0);

    weft__tp_match_fail(&fx->tp, &bound->tp, WEFT_ERR_PEER_LOST);
    assert_int_equal(must_be_done(r).status, WEFT_ERR_PEER_LOST);
    assert_ptr_equal(fx->unexp_head, &queued->tp);
    weft__tp_match_fail(&fx->tp, &queued->tp, WEFT_ERR_PEER_LOST);
    assert_null(fx->unexp_head);
    assert_null(fx->unexp_tail);
    assert_int_equal(fx->nfreed, 2);
}

/* disconnect drops a peer's unexpected messages, no one else's. */
static void test_drop_peer(void **state)
{
    struct fake_msg *keep;

    send_whole(1, 1, 4, 0);
    keep = send_whole(2, 1, 4, 0);
    send_whole(1, 2, 4, 0);
    weft__tp_match_drop_peer(&fx->tp, 1);
    assert_int_equal(fx->nfreed, 2);
    assert_ptr_equal(fx->unexp_head, &keep->tp);
    assert_ptr_equal(fx->unexp_tail, &keep->tp);
}

/* A message longer than the buffer fills it, no further, and completes
 * with WEFT_ERR_TRUNCATED and its full length, posted or unexpected. */
static void test_truncation(void **state)
{
    unsigned char buf[8];
    void *r;
    compl_t c;

    memset(buf, 0xee, sizeof(buf));
    r = recv_(1, buf, 4, 1, 0);
    send_whole(1, 1, 10, 20);
    c = must_be_done(r);
    assert_int_equal(c.status, WEFT_ERR_TRUNCATED);
    assert_int_equal(c.len, 10);
    expect_bytes(buf, 4, 20);
    assert_int_equal(buf[4], 0xee);
    memset(buf, 0xee, sizeof(buf));
    send_whole(1, 1, 10, 30);
    r = recv_(1, buf, 4, 1, 0);
    c = must_be_done(r);
    assert_int_equal(c.status, WEFT_ERR_TRUNCATED);
    assert_int_equal(c.len, 10);
    expect_bytes(buf, 4, 30);
    assert_int_equal(buf[4], 0xee);
    /* As long as the buffer is not truncation. */
    r = recv_(1, buf, 4, 1, 0);
    send_whole(1, 1, 4, 40);
    assert_int_equal(must_be_done(r).status, WEFT_SUCCESS);
}

/* Zero bytes are a message like any other. */
static void test_zero_length(void **state)
{
    void *r = recv_(3, NULL, 0, 1, 0);
    compl_t c;

    send_whole(3, 1, 0, 0);
    c = must_be_done(r);
    assert_int_equal(c.status, WEFT_SUCCESS);
    assert_int_equal(c.len, 0);
    send_whole(3, 1, 0, 0);
    r = recv_(3, NULL, 0, 1, 0);
    c = must_be_done(r);
    assert_int_equal(c.status, WEFT_SUCCESS);
    assert_int_equal(c.peer, 3);
}

/* A receive from a gone peer fails at once, unless a message of it waits;
 * one from any peer is posted; a send to it fails. */
static void test_gone_peer(void **state)
{
    unsigned char buf[4];
    struct tp_req *s;
    weft_result_t rc;
    void *r, *out;
    compl_t c;

    send_whole(2, 1, 4, 5);
    fx->state[2] = TP_PEER_GONE;
    r = recv_(2, buf, 4, 1, 0);
    c = must_be_done(r);
    assert_int_equal(c.status, WEFT_SUCCESS);
    expect_bytes(buf, 4, 5);
    r = recv_(2, buf, 4, 1, 0);
    assert_int_equal(must_be_done(r).status, WEFT_ERR_PEER_LOST);
    r = recv_(ANY, buf, 4, 1, 0);
    assert_int_equal(done(r, &c), 0);
    assert_ptr_equal(fx->posted.head, r);
    s = weft__tp_isend_new(&fx->tp, 2, buf, 4, 1, &out, &rc);
    assert_non_null(s);
    assert_int_equal(rc, WEFT_SUCCESS);
    assert_int_equal(s->done, 1);
    assert_int_equal(must_be_done(s).status, WEFT_ERR_PEER_LOST);
}

/* Misuse is refused with a reason that names the plugin and the rank. */
static void test_bad_arguments(void **state)
{
    unsigned char buf[4];
    weft_result_t rc;
    void *r = NULL;
    compl_t info;
    int found;

    fx->state[3] = TP_PEER_UNKNOWN;
    assert_int_equal(weft__tp_irecv(fx, 3, buf, 4, 1, 0, NULL, &r), WEFT_ERR_INVALID_ARG);
    assert_non_null(strstr(last_error, "fake: irecv from rank 3, which is not connected"));
    assert_int_equal(weft__tp_irecv(fx, NPEERS, buf, 4, 1, 0, NULL, &r),
                     WEFT_ERR_INVALID_ARG);
    assert_non_null(strstr(last_error, "rank 4, not in 0..3"));
    assert_int_equal(weft__tp_irecv(fx, 1, NULL, 4, 1, 0, NULL, &r), WEFT_ERR_INVALID_ARG);
    assert_non_null(strstr(last_error, "buf is NULL"));
    assert_int_equal(weft__tp_irecv(fx, 1, buf, 4, 1, 0, NULL, NULL), WEFT_ERR_INVALID_ARG);
    assert_null(r);
    assert_null(weft__tp_isend_new(&fx->tp, ANY, buf, 4, 1, &r, &rc));
    assert_int_equal(rc, WEFT_ERR_INVALID_ARG);
    assert_null(weft__tp_isend_new(&fx->tp, 3, buf, 4, 1, &r, &rc));
    assert_int_equal(rc, WEFT_ERR_INVALID_ARG);
    assert_non_null(strstr(last_error, "fake: isend to rank 3"));
    assert_int_equal(weft__tp_improbe(fx, -5, 1, 0, &found, &r, &info), WEFT_ERR_INVALID_ARG);
    assert_int_equal(weft__tp_improbe(fx, 1, 1, 0, NULL, &r, &info), WEFT_ERR_INVALID_ARG);
    assert_null(fx->pool.live);
}

/* A message the plugin cannot hold is not queued; the plugin keeps it. */
static void test_hold_fails(void **state)
{
    struct fake_msg *m = calloc(1, sizeof(*m));

    assert_non_null(m);
    m->peer = 1;
    m->tag = 1;
    m->total = 4;
    fx->hold_fails = 1;
    assert_int_equal(weft__tp_match_arrive(&fx->tp, &m->tp), -1);
    assert_null(fx->unexp_head);
    assert_int_equal(m->in_unexp, 0);
    free(m);
}

/* The fast path of a message that arrives whole: the first matching
 * posted receive, off the queue, its completion filled in. */
static void test_take(void **state)
{
    void *r1 = recv_(1, NULL, 0, 9, 0);
    void *r2 = recv_(ANY, NULL, 0, 9, 0);
    struct tp_req *t;

    assert_null(weft__tp_match_take(&fx->tp, 2, 8, 0));
    t = weft__tp_match_take(&fx->tp, 2, 9, 12);
    assert_ptr_equal(t, r2);
    assert_int_equal(t->queued, 0);
    assert_int_equal(t->src, 2);
    assert_int_equal(t->total, 12);
    assert_ptr_equal(fx->posted.head, r1);
    assert_ptr_equal(fx->posted.tail, r1);
    t = weft__tp_match_take(&fx->tp, 1, 9, 0);
    assert_ptr_equal(t, r1);
    assert_null(fx->posted.head);
}

/* finalize frees what nobody received, queued or claimed. */
static void test_fini(void **state)
{
    compl_t info;
    void *msg;
    int found;

    send_whole(1, 1, 4, 0);
    send_whole(2, 2, 4, 0);
    recv_(3, NULL, 0, 1, 0);
    assert_int_equal(weft__tp_improbe(fx, 2, 2, 0, &found, &msg, &info), WEFT_SUCCESS);
    weft__tp_ctx_fini(&fx->tp);
    assert_int_equal(fx->nfreed, 2);
    assert_null(fx->unexp_head);
    assert_null(fx->claimed);
    assert_null(fx->pool.live);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_posted_first, setup, teardown),
        cmocka_unit_test_setup_teardown(test_unexpected_first, setup, teardown),
        cmocka_unit_test_setup_teardown(test_unexpected_partial, setup, teardown),
        cmocka_unit_test_setup_teardown(test_per_peer_order, setup, teardown),
        cmocka_unit_test_setup_teardown(test_posted_order, setup, teardown),
        cmocka_unit_test_setup_teardown(test_any_peer, setup, teardown),
        cmocka_unit_test_setup_teardown(test_ignore_mask, setup, teardown),
        cmocka_unit_test_setup_teardown(test_unexpected_before_posted, setup, teardown),
        cmocka_unit_test_setup_teardown(test_probe_then_imrecv, setup, teardown),
        cmocka_unit_test_setup_teardown(test_claim_partial, setup, teardown),
        cmocka_unit_test_setup_teardown(test_claimed_then_lost, setup, teardown),
        cmocka_unit_test_setup_teardown(test_cancel_posted, setup, teardown),
        cmocka_unit_test_setup_teardown(test_cancel_bound, setup, teardown),
        cmocka_unit_test_setup_teardown(test_cancel_done_and_send, setup, teardown),
        cmocka_unit_test_setup_teardown(test_fail_peer, setup, teardown),
        cmocka_unit_test_setup_teardown(test_fail_message, setup, teardown),
        cmocka_unit_test_setup_teardown(test_drop_peer, setup, teardown),
        cmocka_unit_test_setup_teardown(test_truncation, setup, teardown),
        cmocka_unit_test_setup_teardown(test_zero_length, setup, teardown),
        cmocka_unit_test_setup_teardown(test_gone_peer, setup, teardown),
        cmocka_unit_test_setup_teardown(test_bad_arguments, setup, teardown),
        cmocka_unit_test_setup_teardown(test_hold_fails, setup, teardown),
        cmocka_unit_test_setup_teardown(test_take, setup, teardown),
        cmocka_unit_test_setup_teardown(test_fini, setup, teardown),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
