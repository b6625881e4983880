/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_request.c: the request layer over a transport the test drives by
 * hand (fake_transport.h): what reaches the transport (world ranks, the
 * context's tags, the any-tag mask), what a completion reports (member
 * ranks, user tags, counts, failures, truncation), receives from any
 * source matched in post order across transports, cancels, requests
 * driven by an owner's ops, requests freed before they finished, and the
 * per-thread cache drains.
 */
#include "config.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "core/progress/progress.h"
#include "core/progress/request.h"
#include "tests/unit/fake_transport.h"

#define CONTEXT 6u

/* Three members: world ranks 4, 1 and 7 of an 8-rank job. */
static const int world3[] = { 4, 1, 7 };

typedef struct fixture {
    fake_transport_t fakes[2];
    weft__instance_t *inst;
    weft__mctx_t ctx;
    int member_of[8];
} fixture_t;

static fixture_t *setup(int nplugins)
{
    fixture_t *f = calloc(1, sizeof(*f));

    assert_non_null(f);
    f->inst = fake_instance(8, nplugins, f->fakes);
    assert_non_null(f->inst);
    fake_ctx(&f->ctx, f->inst, CONTEXT, 3, world3, f->member_of);
    return f;
}

static void teardown(fixture_t *f)
{
    while (f->ctx.active)
        weft__request_free(f->ctx.active);
    fake_instance_free(f->inst);
    free(f);
}

static void posts_carry_world_ranks_and_the_contexts_tags(void **state)
{
    fixture_t *f = setup(1);
    char buf[32];
    weft_p2p_op_t ops[] = {
        { WEFT_P2P_SEND, buf, 8, WEFT_INT32, 2, 5 },
        { WEFT_P2P_RECV, buf, 4, WEFT_UINT8, 0, WEFT_ANY_TAG },
    };
    struct weft_request *req;

    (void)state;
    assert_int_equal(weft__request_post_batch(&f->ctx, 2, ops, &req), WEFT_SUCCESS);
    assert_int_equal(f->fakes[0].nops, 2);
    assert_int_equal(f->fakes[0].ops[0].kind, WEFT_P2P_SEND);
    assert_int_equal(f->fakes[0].ops[0].peer, 7);
    assert_true(f->fakes[0].ops[0].tag == ((uint64_t)CONTEXT << 32 | 5));
    assert_int_equal(f->fakes[0].ops[0].len, 32);
    assert_int_equal(f->fakes[0].ops[1].peer, 4);
    assert_true(f->fakes[0].ops[1].tag == (uint64_t)CONTEXT << 32);
    assert_true(f->fakes[0].ops[1].ignore == WEFT__TAG_IGNORE_USER);
    assert_int_equal(f->fakes[0].ops[1].len, 4);
    teardown(f);
}

static void completions_report_members_user_tags_and_counts(void **state)
{
    fixture_t *f = setup(1);
    int32_t buf[8];
    struct weft_request *req;
    weft_status_t st;
    int done = 0;

    (void)state;
    assert_int_equal(weft__request_create(&f->ctx, 1, &req), WEFT_SUCCESS);
    weft__subop_fill(&req->subs[0], &f->ctx, WEFT_P2P_RECV, buf, sizeof(buf), sizeof(int32_t),
                     WEFT_ANY_SOURCE, WEFT_ANY_TAG);
    weft__request_start(req);
    weft__request_poll(req, &done);
    assert_false(done);
    /* 12 bytes from world rank 7 (member 2) with user tag 9. */
    fake_complete(&f->fakes[0].ops[0], WEFT_SUCCESS, 7, (uint64_t)CONTEXT << 32 | 9, 12);
    weft__request_poll(req, &done);
    assert_true(done);
    assert_int_equal(req->result, WEFT_SUCCESS);
    weft__request_status(req, &st);
    assert_int_equal(st.source, 2);
    assert_int_equal(st.tag, 9);
    assert_int_equal(st.count, 3);
    weft__request_free(req);
    teardown(f);
}

static void a_failed_or_truncated_operation_fails_its_request(void **state)
{
    fixture_t *f = setup(1);
    char buf[16];
    weft_p2p_op_t ops[] = {
        { WEFT_P2P_SEND, buf, 1, WEFT_UINT8, 1, 0 },
        { WEFT_P2P_RECV, buf, 4, WEFT_UINT8, 1, 0 },
    };
    struct weft_request *req;
    weft_status_t st;
    int done = 0;

    (void)state;
    assert_int_equal(weft__request_post_batch(&f->ctx, 2, ops, &req), WEFT_SUCCESS);
    fake_complete(&f->fakes[0].ops[0], WEFT_SUCCESS, 1, 0, 1);
    weft__request_poll(req, &done);
    assert_false(done);
    assert_int_equal(req->ndone, 1);
    /* A message of 10 bytes for a buffer of 4: the full length is kept. */
    fake_complete(&f->fakes[0].ops[1], WEFT_ERR_TRUNCATED, 1, (uint64_t)CONTEXT << 32, 10);
    weft__request_poll(req, &done);
    assert_true(done);
    assert_int_equal(req->result, WEFT_ERR_TRUNCATED);
    assert_int_equal(req->subs[1].len, 10);
    weft__request_status(req, &st);
    assert_int_equal(st.error, WEFT_ERR_TRUNCATED);
    weft__request_free(req);
    teardown(f);
}

/* Over two transports a receive from any source is matched by probing
 * each of them, and the receives posted after it wait behind it, so that
 * matching stays in post order. */
static void any_source_matches_in_post_order_across_transports(void **state)
{
    fixture_t *f = setup(2);
    char a[4], b[4];
    struct weft_request *any, *from1;
    int done = 0;

    (void)state;
    assert_null(f->ctx.single_plugin);
    assert_int_equal(weft__request_create(&f->ctx, 1, &any), WEFT_SUCCESS);
    weft__subop_fill(&any->subs[0], &f->ctx, WEFT_P2P_RECV, a, 4, 1, WEFT_ANY_SOURCE, 3);
    weft__request_start(any);
    assert_int_equal(weft__request_create(&f->ctx, 1, &from1), WEFT_SUCCESS);
    weft__subop_fill(&from1->subs[0], &f->ctx, WEFT_P2P_RECV, b, 4, 1, 1, 3);
    weft__request_start(from1);
    /* Nothing matched yet: neither receive reached a transport. */
    assert_int_equal(f->fakes[0].nops + f->fakes[1].nops, 0);
    assert_int_equal(any->subs[0].state, WEFT__SUBOP_PROBING);
    assert_int_equal(from1->subs[0].state, WEFT__SUBOP_WAITING);
    weft__request_poll(from1, &done);
    assert_false(done);
    assert_int_equal(f->fakes[0].nops + f->fakes[1].nops, 0);
    /* A message with another tag does not match. */
    f->fakes[1].have_unexpected = 1;
    f->fakes[1].unexpected = (weft_transport_completion_t){ WEFT_SUCCESS, 1,
                                                            (uint64_t)CONTEXT << 32 | 4, 4 };
    weft__request_poll(any, &done);
    assert_false(done);
    assert_int_equal(f->fakes[1].nops, 0);
    /* World rank 7 sends with tag 3 on the second transport. */
    f->fakes[1].unexpected = (weft_transport_completion_t){ WEFT_SUCCESS, 7,
                                                            (uint64_t)CONTEXT << 32 | 3, 4 };
    weft__request_poll(any, &done);
    assert_true(done);
    assert_int_equal(any->subs[0].source, 2);
    /* The receive behind it went to its peer's transport (world rank 1:
     * the second one) once the first matched. */
    assert_int_equal(from1->subs[0].state, WEFT__SUBOP_POSTED);
    assert_int_equal(f->fakes[1].nops, 2);
    assert_int_equal(f->fakes[1].ops[1].peer, 1);
    assert_null(f->ctx.pending_head);
    weft__request_free(any);
    weft__request_free(from1);
    teardown(f);
}

static void a_cancelled_operation_keeps_the_cancels_result(void **state)
{
    fixture_t *f = setup(1);
    char buf[4];
    weft_p2p_op_t op = { WEFT_P2P_RECV, buf, 4, WEFT_UINT8, 1, 0 };
    struct weft_request *req, *second;
    int done = 0;

    (void)state;
    assert_int_equal(weft__request_post_batch(&f->ctx, 1, &op, &req), WEFT_SUCCESS);
    assert_int_equal(weft__request_post_batch(&f->ctx, 1, &op, &second), WEFT_SUCCESS);
    weft__request_cancel(req, WEFT_ERR_TIMEOUT);
    assert_true(f->fakes[0].ops[0].cancelled);
    weft__request_poll(req, &done);
    assert_true(done);
    assert_int_equal(req->result, WEFT_ERR_TIMEOUT);
    /* Cancelling every request of the context. */
    weft__request_cancel_all(&f->ctx, WEFT_ERR_ABORTED);
    assert_true(f->fakes[0].ops[1].cancelled);
    weft__request_poll(second, &done);
    assert_true(done);
    assert_int_equal(second->result, WEFT_ERR_ABORTED);
    weft__request_free(req);
    weft__request_free(second);
    teardown(f);
}

/* An owner's request: its ops are what poll, cancel, describe, why and
 * free reach. */
static int owner_polls, owner_cancels, owner_releases;

static void owner_poll(struct weft_request *req, int *done)
{
    owner_polls++;
    *done = owner_polls >= 2;
    req->result = *done ? WEFT_ERR_MISMATCH : WEFT_SUCCESS;
}

static void owner_cancel(struct weft_request *req, weft_result_t rc)
{
    (void)req;
    owner_cancels += rc == WEFT_ERR_ABORTED;
}

static void owner_release(struct weft_request *req)
{
    assert_ptr_equal(req->owner, &owner_polls);
    owner_releases++;
}

static void owner_describe(const struct weft_request *req, char *buf, size_t cap)
{
    (void)req;
    snprintf(buf, cap, "the owner's step 3");
}

static const char *owner_why(const struct weft_request *req)
{
    return req->result != WEFT_SUCCESS ? "ranks disagree" : NULL;
}

static const weft__request_ops_t owner_ops = {
    owner_poll, owner_cancel, owner_release, owner_describe, owner_why
};

static void an_owner_drives_its_request(void **state)
{
    fixture_t *f = setup(1);
    struct weft_request *req;
    char what[64];
    int done = 0;

    (void)state;
    assert_int_equal(weft__request_create_complete(&f->ctx, &req), WEFT_SUCCESS);
    req->ops = &owner_ops;
    req->owner = &owner_polls;
    assert_int_equal(weft__request_progress_test(req, 1, &done), 0);
    weft__request_poll(req, &done);
    assert_false(done);
    weft__request_describe(req, what, sizeof(what));
    assert_string_equal(what, "the owner's step 3");
    assert_null(weft__request_why(req));
    weft__request_cancel(req, WEFT_ERR_ABORTED);
    assert_int_equal(owner_cancels, 1);
    weft__request_poll(req, &done);
    assert_true(done);
    assert_string_equal(weft__request_why(req), "ranks disagree");
    assert_int_equal(f->fakes[0].nops, 0);
    weft__request_free(req);
    assert_int_equal(owner_releases, 1);
    assert_null(f->ctx.active);
    teardown(f);
}

static void what_a_request_waits_for_is_described(void **state)
{
    fixture_t *f = setup(1);
    char buf[4], what[64];
    weft_p2p_op_t ops[] = {
        { WEFT_P2P_SEND, buf, 1, WEFT_UINT8, 2, 11 },
        { WEFT_P2P_RECV, buf, 1, WEFT_UINT8, 0, WEFT_ANY_TAG },
    };
    struct weft_request *req;
    int done;

    (void)state;
    assert_int_equal(weft__request_post_batch(&f->ctx, 2, ops, &req), WEFT_SUCCESS);
    weft__request_describe(req, what, sizeof(what));
    assert_string_equal(what, "send to rank 2 with tag 11");
    fake_complete(&f->fakes[0].ops[0], WEFT_SUCCESS, 7, 0, 1);
    weft__request_poll(req, &done);
    weft__request_describe(req, what, sizeof(what));
    assert_string_equal(what, "receive from rank 0 with any tag");
    weft__request_free(req);
    teardown(f);
}

/* A request freed by its user while in flight waits on the instance's
 * list; any thread's progress finds it done and hands it to its context,
 * whose thread frees it at its next request. */
static void requests_freed_early_are_reaped(void **state)
{
    fixture_t *f = setup(1);
    char buf[4];
    weft_p2p_op_t op = { WEFT_P2P_SEND, buf, 4, WEFT_UINT8, 1, 0 };
    struct weft_request *req, *next;

    (void)state;
    assert_int_equal(weft__request_post_batch(&f->ctx, 1, &op, &req), WEFT_SUCCESS);
    weft__request_release(req);
    assert_ptr_equal(f->inst->detached, req);
    assert_int_equal(req->detached, WEFT__DETACHED_SHARED);
    /* The reaper looks every 32 passes; nothing done yet. */
    for (int i = 0; i < 64; i++)
        weft__progress(f->inst);
    assert_ptr_equal(f->inst->detached, req);
    fake_complete(&f->fakes[0].ops[0], WEFT_SUCCESS, 1, 0, 4);
    for (int i = 0; i < 32; i++)
        weft__progress(f->inst);
    assert_null(f->inst->detached);
    assert_ptr_equal(f->ctx.reaped, req);
    /* The context's thread frees it when it creates its next request. */
    assert_int_equal(weft__request_create(&f->ctx, 1, &next), WEFT_SUCCESS);
    assert_null(f->ctx.reaped);
    assert_ptr_equal(f->ctx.active, next);
    assert_null(next->next_active);
    weft__request_free(next);
    teardown(f);
}

static int drains;

static void count_drain(void)
{
    drains++;
}

static void registered_caches_drain_with_the_requests(void **state)
{
    (void)state;
    weft__request_cache_add_drain(count_drain);
    weft__request_cache_add_drain(count_drain);
    weft__request_cache_drain();
    assert_int_equal(drains, 1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(posts_carry_world_ranks_and_the_contexts_tags),
        cmocka_unit_test(completions_report_members_user_tags_and_counts),
        cmocka_unit_test(a_failed_or_truncated_operation_fails_its_request),
        cmocka_unit_test(any_source_matches_in_post_order_across_transports),
        cmocka_unit_test(a_cancelled_operation_keeps_the_cancels_result),
        cmocka_unit_test(an_owner_drives_its_request),
        cmocka_unit_test(what_a_request_waits_for_is_described),
        cmocka_unit_test(requests_freed_early_are_reaped),
        cmocka_unit_test(registered_caches_drain_with_the_requests),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
