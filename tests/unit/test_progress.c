/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_progress.c: the progress engine and matching contexts over a
 * transport the test drives by hand (fake_transport.h): the hooks upper
 * layers register run on every pass or with the background look, and no
 * more than the engine holds; a wait ends when its request completes, at
 * its deadline with WEFT_ERR_TIMEOUT, or when a target it waits for says
 * done or its context is aborted; an abort notice marked on one context
 * aborts its sibling too and fails the requests of both.
 */
#include "config.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>

#include "core/base/error.h"
#include "core/progress/progress.h"
#include "core/progress/request.h"
#include "tests/unit/fake_transport.h"

static const int world2[] = { 0, 1 };

static int passes, backgrounds;

static void count_pass(weft__instance_t *inst, void *arg)
{
    (void)inst;
    assert_ptr_equal(arg, &passes);
    passes++;
}

static void count_background(weft__instance_t *inst, void *arg)
{
    (void)inst;
    (void)arg;
    backgrounds++;
}

static void hooks_run_on_passes_and_in_the_background(void **state)
{
    fake_transport_t fake;
    weft__instance_t *inst = fake_instance(2, 1, &fake);

    (void)state;
    assert_int_equal(weft__progress_hook_add(inst, count_pass, &passes), WEFT_SUCCESS);
    assert_int_equal(weft__progress_background_add(inst, count_background, NULL),
                     WEFT_SUCCESS);
    passes = backgrounds = 0;
    for (int i = 0; i < 320; i++)
        weft__progress(inst);
    assert_int_equal(passes, 320);
    assert_int_equal(fake.progressed, 320);
    /* The background look comes every 32 passes of this thread. */
    assert_int_equal(backgrounds, 10);
    fake_instance_free(inst);
}

static void hooks_beyond_the_limit_are_refused(void **state)
{
    fake_transport_t fake;
    weft__instance_t *inst = fake_instance(2, 1, &fake);

    (void)state;
    for (int i = 0; i < WEFT__PROGRESS_HOOKS_MAX; i++)
        assert_int_equal(weft__progress_hook_add(inst, count_pass, &passes), WEFT_SUCCESS);
    assert_int_equal(weft__progress_hook_add(inst, count_pass, &passes), WEFT_ERR_INTERNAL);
    assert_non_null(strstr(weft__get_error(), "progress hooks"));
    fake_instance_free(inst);
}

/* Completes the first operation of the fake transport on its 5th pass:
 * a pass hook stands for another rank's message arriving meanwhile. */
static void complete_later(weft__instance_t *inst, void *arg)
{
    fake_transport_t *fake = arg;

    (void)inst;
    if (fake->progressed == 5 && fake->nops > 0)
        fake_complete(&fake->ops[0], WEFT_SUCCESS, 1, 0, 4);
}

/* A job of two ranks over one fake transport, and a receive from rank 1
 * posted on a context of both. */
typedef struct one_recv {
    fake_transport_t fake;
    weft__instance_t *inst;
    int member_of[2];
    weft__mctx_t ctx;
    char buf[4];
} one_recv_t;

static struct weft_request *post_one_recv(one_recv_t *o)
{
    weft_p2p_op_t op = { WEFT_P2P_RECV, o->buf, 4, WEFT_UINT8, 1, 0 };
    struct weft_request *req;

    o->inst = fake_instance(2, 1, &o->fake);
    assert_non_null(o->inst);
    fake_ctx(&o->ctx, o->inst, 2, 2, world2, o->member_of);
    assert_int_equal(weft__request_post_batch(&o->ctx, 1, &op, &req), WEFT_SUCCESS);
    return req;
}

static void a_wait_ends_when_its_request_completes(void **state)
{
    one_recv_t o;
    struct weft_request *req = post_one_recv(&o);

    (void)state;
    assert_int_equal(weft__progress_hook_add(o.inst, complete_later, &o.fake), WEFT_SUCCESS);
    assert_int_equal(weft__request_wait(req, 10000), WEFT_SUCCESS);
    assert_int_equal(req->result, WEFT_SUCCESS);
    assert_true(o.fake.progressed >= 5);
    weft__request_free(req);
    fake_instance_free(o.inst);
}

static void a_wait_past_its_deadline_times_out(void **state)
{
    one_recv_t o;
    struct weft_request *req = post_one_recv(&o);
    int64_t t0;

    (void)state;
    t0 = weft__now_ms();
    assert_int_equal(weft__request_wait(req, 50), WEFT_ERR_TIMEOUT);
    assert_true(weft__now_ms() - t0 >= 50);
    assert_non_null(strstr(weft__get_error(), "WEFT_TIMEOUT"));
    /* Still pending: the caller decides. */
    assert_int_equal(req->ndone, 0);
    weft__request_cancel(req, WEFT_ERR_TIMEOUT);
    weft__request_free(req);
    fake_instance_free(o.inst);
}

/* A pass that takes 20 ms: a rank flooded with unexpected messages reads
 * megabytes a pass, and yields its core to others between passes. */
static void slow_pass(weft__instance_t *inst, void *arg)
{
    struct timespec ts = { 0, 20 * 1000 * 1000 };

    (void)inst;
    (void)arg;
    nanosleep(&ts, NULL);
}

/* A wait whose passes are slow still ends near its deadline: the deadline
 * is set and looked at after a few passes, not only once the spin budget
 * is spent (80 passes, 1.6 s here, for a timeout of 100 ms). */
static void a_wait_of_slow_passes_keeps_its_deadline(void **state)
{
    one_recv_t o;
    struct weft_request *req = post_one_recv(&o);
    int64_t t0, took;

    (void)state;
    assert_int_equal(weft__progress_hook_add(o.inst, slow_pass, NULL), WEFT_SUCCESS);
    t0 = weft__now_ms();
    assert_int_equal(weft__request_wait(req, 100), WEFT_ERR_TIMEOUT);
    took = weft__now_ms() - t0;
    assert_true(took >= 100);
    /* 16 passes set the deadline, one more may overrun it: 440 ms. */
    if (took > 1000)
        fail_msg("a wait of 100 ms with 20 ms passes took %lld ms", (long long)took);
    weft__request_cancel(req, WEFT_ERR_TIMEOUT);
    weft__request_free(req);
    fake_instance_free(o.inst);
}

typedef struct target_state {
    int polls, done_after, asleep, slept;
} target_state_t;

static int target_poll(void *arg)
{
    target_state_t *t = arg;

    return ++t->polls >= t->done_after;
}

static void target_sleeping(void *arg, int on)
{
    target_state_t *t = arg;

    t->asleep = on;
    t->slept += on;
}

static void a_wait_for_a_target_ends_when_it_says_done(void **state)
{
    fake_transport_t fake;
    weft__instance_t *inst = fake_instance(2, 1, &fake);
    int member_of[2];
    weft__mctx_t ctx;
    target_state_t ts = { 0, 20, 0, 0 };
    weft__wait_target_t t = { target_poll, target_sleeping, &ts, &ctx };
    int64_t deadline = 0;

    (void)state;
    fake_ctx(&ctx, inst, 2, 2, world2, member_of);
    assert_int_equal(weft__progress_wait_for(inst, &t, 10000, &deadline), WEFT_SUCCESS);
    assert_int_equal(ts.polls, 20);
    /* Everything else moved meanwhile. */
    assert_true(fake.progressed >= 19);
    assert_false(ts.asleep);
    /* One that never finishes sleeps (marked asleep) and times out. */
    ts = (target_state_t){ 0, 1 << 30, 0, 0 };
    deadline = 0;
    assert_int_equal(weft__progress_wait_for(inst, &t, 30, &deadline), WEFT_ERR_TIMEOUT);
    assert_true(ts.slept > 0);
    assert_false(ts.asleep);
    fake_instance_free(inst);
}

/* An abort notice seen by any thread only marks the context; its own
 * thread applies it at its next look, to both sibling contexts, failing
 * the requests of both. A wait on either then ends. */
static void an_abort_marked_on_one_context_fails_both(void **state)
{
    fake_transport_t fake;
    weft__instance_t *inst = fake_instance(2, 1, &fake);
    int member_of[2];
    weft__mctx_t user, internal;
    char buf[4];
    weft_p2p_op_t op = { WEFT_P2P_RECV, buf, 4, WEFT_UINT8, 1, 0 };
    target_state_t ts = { 0, 1 << 30, 0, 0 };
    weft__wait_target_t t = { target_poll, target_sleeping, &ts, &internal };
    struct weft_request *a, *b;
    int64_t deadline = 0;

    (void)state;
    fake_ctx(&user, inst, 2, 2, world2, member_of);
    weft__mctx_init(&internal, inst, 3, 2, world2, member_of);
    user.sibling = &internal;
    internal.sibling = &user;
    assert_int_equal(weft__request_post_batch(&user, 1, &op, &a), WEFT_SUCCESS);
    assert_int_equal(weft__request_post_batch(&internal, 1, &op, &b), WEFT_SUCCESS);
    assert_false(weft__mctx_aborted(&user));
    weft__mctx_mark_aborted(&user);
    /* Nothing failed until the context's thread looks. */
    assert_false(fake.ops[0].cancelled);
    assert_int_equal(weft__request_wait(b, 10000), WEFT_SUCCESS);
    assert_int_equal(b->result, WEFT_ERR_ABORTED);
    assert_true(user.aborted && internal.aborted);
    assert_true(fake.ops[0].cancelled && fake.ops[1].cancelled);
    assert_false(user.abort_pending || internal.abort_pending);
    assert_int_equal(weft__progress_wait_for(inst, &t, 10000, &deadline), WEFT_ERR_ABORTED);
    weft__request_free(a);
    weft__request_free(b);
    fake_instance_free(inst);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(hooks_run_on_passes_and_in_the_background),
        cmocka_unit_test(hooks_beyond_the_limit_are_refused),
        cmocka_unit_test(a_wait_ends_when_its_request_completes),
        cmocka_unit_test(a_wait_past_its_deadline_times_out),
        cmocka_unit_test(a_wait_of_slow_passes_keeps_its_deadline),
        cmocka_unit_test(a_wait_for_a_target_ends_when_it_says_done),
        cmocka_unit_test(an_abort_marked_on_one_context_fails_both),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
