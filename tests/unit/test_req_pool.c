/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_req_pool.c: the requests of plugins/common (tp_req.c): the pool
 * that reuses them, their completion, their queues and test().
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

/* A plugin's request: the common head, then its own part. */
struct big_req {
    TP_REQ_HEAD;
    unsigned char own[200];
};

struct pool_ctx {
    TP_CTX_HEAD;
};

static char last_error[256];
static struct pool_ctx *px;

static void quiet_log(int level, const char *plugin, const char *fmt, ...)
{
}

static void keep_error(const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(last_error, sizeof(last_error), fmt, ap);
    va_end(ap);
}

static int always_up(struct tp_ctx *tp, int peer, int kind)
{
    return TP_PEER_UP;
}

static const struct tp_ops pool_ops = {
    .req_size = sizeof(struct big_req),
    .peer = always_up,
};

static weft_transport_core_t core = {
    .struct_size = sizeof(weft_transport_core_t),
    .rank = 1,
    .size = 2,
    .log = quiet_log,
    .set_error = keep_error,
};

static int setup(void **state)
{
    void *out;
    weft_result_t rc;

    px = weft__tp_ctx_new(&core, &out, "pool", sizeof(*px), &pool_ops, &rc);
    assert_non_null(px);
    assert_int_equal(rc, WEFT_SUCCESS);
    return 0;
}

static int teardown(void **state)
{
    weft__tp_ctx_fini(&px->tp);
    free(px);
    return 0;
}

static struct big_req *new_req(int kind, int peer, uint64_t tag)
{
    struct big_req *r = (struct big_req *)weft__tp_req_new(&px->tp, kind, peer, NULL, 0, tag,
                                                           0);

    assert_non_null(r);
    return r;
}

static int nlive(void)
{
    int n = 0;

    for (struct tp_req *r = px->pool.live; r; r = r->next)
        n++;
    return n;
}

/* A request comes cleared, its own part too, even when reused. */
static void test_new_is_cleared(void **state)
{
    struct big_req *r = new_req(TP_RECV, 1, 77), *again;
    unsigned char zero[sizeof(r->own)] = { 0 };

    assert_int_equal(r->kind, TP_RECV);
    assert_int_equal(r->peer, 1);
    assert_int_equal(r->src, 1);
    assert_int_equal(r->mtag, 77);
    assert_int_equal(r->total, 0);
    assert_int_equal(r->done, 0);
    assert_memory_equal(r->own, zero, sizeof(zero));
    memset(r->own, 0xab, sizeof(r->own));
    r->done = 1;
    r->queued = 1;
    weft__tp_req_free(&px->tp, &r->tp);
    again = new_req(TP_SEND, 0, 5);
    assert_ptr_equal(again, r);
    assert_int_equal(again->kind, TP_SEND);
    assert_int_equal(again->done, 0);
    assert_int_equal(again->queued, 0);
    assert_memory_equal(again->own, zero, sizeof(zero));
}

/* Freed requests are kept up to TP_REQ_SPARE_MAX, newest reused first. */
static void test_spares(void **state)
{
    enum { N = TP_REQ_SPARE_MAX + 4 };
    struct big_req *r[N];

    for (int i = 0; i < N; i++)
        r[i] = new_req(TP_SEND, 0, (uint64_t)i);
    assert_int_equal(nlive(), N);
    for (int i = 0; i < N; i++)
        weft__tp_req_free(&px->tp, &r[i]->tp);
    assert_int_equal(nlive(), 0);
    assert_int_equal(px->pool.nspare, TP_REQ_SPARE_MAX);
    assert_ptr_equal(new_req(TP_SEND, 0, 0), r[TP_REQ_SPARE_MAX - 1]);
    assert_int_equal(px->pool.nspare, TP_REQ_SPARE_MAX - 1);
}

/* Every live request is on the live list, whatever order they go in. */
static void test_live_list(void **state)
{
    struct big_req *a = new_req(TP_SEND, 0, 1), *b = new_req(TP_SEND, 0, 2),
                   *c = new_req(TP_SEND, 0, 3);

    assert_int_equal(nlive(), 3);
    weft__tp_req_free(&px->tp, &b->tp);
    assert_int_equal(nlive(), 2);
    assert_ptr_equal(px->pool.live, c);
    assert_ptr_equal(c->next, a);
    assert_ptr_equal(a->prev, c);
    weft__tp_req_free(&px->tp, &c->tp);
    assert_ptr_equal(px->pool.live, a);
    assert_null(a->prev);
    weft__tp_req_free(&px->tp, &a->tp);
    assert_null(px->pool.live);
}

/* The first result sticks; a cancelled request that succeeds anyway
 * reports the cancel, one that fails reports the failure. */
static void test_complete(void **state)
{
    struct big_req *r = new_req(TP_RECV, 1, 1);

    weft__tp_req_complete(&r->tp, WEFT_ERR_TRUNCATED);
    weft__tp_req_complete(&r->tp, WEFT_SUCCESS);
    assert_int_equal(r->status, WEFT_ERR_TRUNCATED);
    r = new_req(TP_RECV, 1, 1);
    r->cancelled = 1;
    weft__tp_req_complete(&r->tp, WEFT_SUCCESS);
    assert_int_equal(r->status, WEFT_ERR_ABORTED);
    r = new_req(TP_RECV, 1, 1);
    r->cancelled = 1;
    weft__tp_req_complete(&r->tp, WEFT_ERR_PEER_LOST);
    assert_int_equal(r->status, WEFT_ERR_PEER_LOST);
}

/* test() reports a finished request once and gives it back to the pool. */
static void test_test(void **state)
{
    struct big_req *r = new_req(TP_RECV, 1, 1);
    weft_transport_completion_t c;
    int done = -1;

    assert_int_equal(weft__tp_test(px, r, &done, &c), WEFT_SUCCESS);
    assert_int_equal(done, 0);
    assert_int_equal(nlive(), 1);
    r->src = 1;
    r->mtag = 42;
    r->total = 9;
    weft__tp_req_complete(&r->tp, WEFT_ERR_TRUNCATED);
    assert_int_equal(weft__tp_test(px, r, &done, &c), WEFT_SUCCESS);
    assert_int_equal(done, 1);
    assert_int_equal(c.status, WEFT_ERR_TRUNCATED);
    assert_int_equal(c.peer, 1);
    assert_int_equal(c.tag, 42);
    assert_int_equal(c.len, 9);
    assert_int_equal(nlive(), 0);
    assert_int_equal(px->pool.nspare, 1);
    /* No completion wanted: freed all the same. */
    r = new_req(TP_SEND, 0, 1);
    weft__tp_req_complete(&r->tp, WEFT_SUCCESS);
    assert_int_equal(weft__tp_test(px, r, &done, NULL), WEFT_SUCCESS);
    assert_int_equal(done, 1);
    assert_int_equal(nlive(), 0);
    assert_int_equal(weft__tp_test(px, NULL, &done, &c), WEFT_ERR_INVALID_ARG);
    assert_non_null(strstr(last_error, "pool: test: req is NULL"));
}

/* Queues keep order and let go of a request from anywhere. */
static void test_queue(void **state)
{
    struct tp_req_queue q = { NULL, NULL };
    struct big_req *a = new_req(TP_SEND, 0, 1), *b = new_req(TP_SEND, 0, 2),
                   *c = new_req(TP_SEND, 0, 3);

    weft__tp_queue_append(&q, &a->tp);
    weft__tp_queue_append(&q, &b->tp);
    weft__tp_queue_append(&q, &c->tp);
    assert_ptr_equal(q.head, a);
    assert_ptr_equal(q.tail, c);
    weft__tp_queue_remove(&q, &b->tp);
    assert_int_equal(b->queued, 0);
    assert_ptr_equal(a->qnext, c);
    assert_ptr_equal(c->qprev, a);
    weft__tp_queue_remove(&q, &b->tp);
    assert_ptr_equal(q.head, a);
    weft__tp_queue_remove(&q, &c->tp);
    assert_ptr_equal(q.tail, a);
    weft__tp_queue_remove(&q, &a->tp);
    assert_null(q.head);
    assert_null(q.tail);
}

/* The context's head: checks of the core, logging and errors that name
 * the plugin, parameters. */
static void test_ctx(void **state)
{
    weft_transport_core_t bad = core;
    weft_result_t rc;
    void *out;
    long v;

    assert_string_equal(px->name, "pool");
    assert_int_equal(px->rank, 1);
    assert_int_equal(px->size, 2);
    bad.rank = 2;
    assert_null(weft__tp_ctx_new(&bad, &out, "pool", sizeof(*px), &pool_ops, &rc));
    assert_int_equal(rc, WEFT_ERR_INVALID_ARG);
    assert_non_null(strstr(last_error, "pool: rank 2 of 2"));
    bad.struct_size = 8;
    assert_null(weft__tp_ctx_new(&bad, &out, "pool", sizeof(*px), &pool_ops, &rc));
    assert_null(weft__tp_ctx_new(&core, NULL, "pool", sizeof(*px), &pool_ops, &rc));
    assert_int_equal(weft__tp_check_rank(&px->tp, "connect to", 1), 0);
    assert_int_equal(weft__tp_check_rank(&px->tp, "connect to", 2), -1);
    assert_string_equal(last_error, "pool: connect to rank 2, not in 0..1");
    assert_int_equal(weft__tp_param_long(&px->tp, "UNSET", 0, 9, 4, &v), 0);
    assert_int_equal(v, 4);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_new_is_cleared, setup, teardown),
        cmocka_unit_test_setup_teardown(test_spares, setup, teardown),
        cmocka_unit_test_setup_teardown(test_live_list, setup, teardown),
        cmocka_unit_test_setup_teardown(test_complete, setup, teardown),
        cmocka_unit_test_setup_teardown(test_test, setup, teardown),
        cmocka_unit_test_setup_teardown(test_queue, setup, teardown),
        cmocka_unit_test_setup_teardown(test_ctx, setup, teardown),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
