/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * mp_p2p_args.c: mp_p2p's test of invalid arguments. Each bad call must
 * fail with WEFT_ERR_INVALID_ARG, leave its out-parameters alone, name the
 * argument in weft_last_error(), and post nothing: afterwards the pairs
 * still carry exactly the messages sent on purpose.
 */
#include "config.h"

#include <inttypes.h>
#include <limits.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>

#include "tests/mp/mptest.h"
#include "tests/p2p/p2p.h"

static int failures;

/* rc must be WEFT_ERR_INVALID_ARG and weft_last_error() must contain one of
 * the words (a NULL-terminated list). Reports every bad call before the
 * test fails, so that one run shows them all. */
static void expect_invalid(int line, const char *call, weft_result_t rc, ...)
{
    char err[1024];
    const char *word;
    int named = 0;
    va_list ap;

    snprintf(err, sizeof(err), "%s", weft_last_error());
    if (rc != WEFT_ERR_INVALID_ARG) {
        fprintf(stderr, "[rank %d] line %d: %s returned %s, expected WEFT_ERR_INVALID_ARG "
                "(weft_last_error: \"%s\")\n", mp_rank, line, call, mp_rc_name(rc), err);
        failures++;
        return;
    }
    va_start(ap, rc);
    while ((word = va_arg(ap, const char *)) != NULL)
        if (mp_contains(err, word))
            named = 1;
    va_end(ap);
    if (!named) {
        fprintf(stderr, "[rank %d] line %d: %s: weft_last_error() \"%s\" does not name the "
                "argument\n", mp_rank, line, call, err);
        failures++;
    }
}

#define EXPECT_INVALID(call, ...) \
    expect_invalid(__LINE__, #call, (call), __VA_ARGS__, (const char *)NULL)

/* Out-parameters are written only on success. */
#define EXPECT_UNTOUCHED(cond, what)                                                \
    do {                                                                            \
        if (!(cond)) {                                                              \
            fprintf(stderr, "[rank %d] line %d: a failed call wrote %s\n", mp_rank, \
                    __LINE__, what);                                                \
            failures++;                                                             \
        }                                                                           \
    } while (0)

#define ARGS_TAG 80

static void bad_peers_and_tags(weft_comm_t world, int right, int size, int32_t *x)
{
    int dummy;
    weft_request_t sentinel = (weft_request_t)&dummy, req = sentinel;

    EXPECT_INVALID(weft_send(x, 1, WEFT_INT32, size, ARGS_TAG, world), "peer");
    EXPECT_INVALID(weft_send(x, 1, WEFT_INT32, WEFT_ANY_SOURCE, ARGS_TAG, world), "peer");
    EXPECT_INVALID(weft_send(x, 1, WEFT_INT32, INT_MIN, ARGS_TAG, world), "peer");
    EXPECT_INVALID(weft_recv(x, 1, WEFT_INT32, size, ARGS_TAG, world, NULL), "peer");
    EXPECT_INVALID(weft_recv(x, 1, WEFT_INT32, -7, ARGS_TAG, world, NULL), "peer");
    EXPECT_INVALID(weft_isend(x, 1, WEFT_INT32, 1000000, ARGS_TAG, world, &req), "peer");
    EXPECT_UNTOUCHED(req == sentinel, "*req");
    EXPECT_INVALID(weft_irecv(x, 1, WEFT_INT32, size + 1, ARGS_TAG, world, &req), "peer");
    EXPECT_UNTOUCHED(req == sentinel, "*req");

    EXPECT_INVALID(weft_send(x, 1, WEFT_INT32, right, -1, world), "tag");
    EXPECT_INVALID(weft_send(x, 1, WEFT_INT32, right, INT_MIN, world), "tag");
    EXPECT_INVALID(weft_isend(x, 1, WEFT_INT32, right, -3, world, &req), "tag");
    EXPECT_UNTOUCHED(req == sentinel, "*req");
    EXPECT_INVALID(weft_recv(x, 1, WEFT_INT32, right, -5, world, NULL), "tag");
    EXPECT_INVALID(weft_irecv(x, 1, WEFT_INT32, WEFT_ANY_SOURCE, -2, world, &req), "tag");
    EXPECT_UNTOUCHED(req == sentinel, "*req");
}

static void bad_buffers_and_types(weft_comm_t world, int right, int32_t *x)
{
    int dummy;
    weft_request_t sentinel = (weft_request_t)&dummy, req = sentinel;
    size_t bytes = 12345;

    EXPECT_INVALID(weft_send(NULL, 4, WEFT_INT32, right, ARGS_TAG, world), "buf");
    EXPECT_INVALID(weft_recv(NULL, 4, WEFT_INT32, right, ARGS_TAG, world, NULL), "buf");
    EXPECT_INVALID(weft_isend(NULL, 1, WEFT_UINT8, right, ARGS_TAG, world, &req), "buf");
    EXPECT_UNTOUCHED(req == sentinel, "*req");
    EXPECT_INVALID(weft_irecv(NULL, 1, WEFT_UINT8, right, ARGS_TAG, world, &req), "buf");
    EXPECT_UNTOUCHED(req == sentinel, "*req");

    EXPECT_INVALID(weft_send(x, 1, (weft_dtype_t)99, right, ARGS_TAG, world), "dt", "type");
    EXPECT_INVALID(weft_send(x, 1, (weft_dtype_t)WEFT_DTYPE_COUNT, right, ARGS_TAG, world),
                   "dt", "type");
    EXPECT_INVALID(weft_recv(x, 1, (weft_dtype_t)-1, right, ARGS_TAG, world, NULL), "dt",
                   "type");
    EXPECT_INVALID(weft_dtype_size((weft_dtype_t)99, &bytes), "dt", "type");
    EXPECT_UNTOUCHED(bytes == 12345, "*bytes");
    EXPECT_INVALID(weft_dtype_size(WEFT_INT32, NULL), "bytes");

    /* count * element size beyond the address space */
    EXPECT_INVALID(weft_send(x, SIZE_MAX / 2, WEFT_INT64, right, ARGS_TAG, world), "count");

    EXPECT_INVALID(weft_isend(x, 1, WEFT_INT32, right, ARGS_TAG, world, NULL), "req");
    EXPECT_INVALID(weft_irecv(x, 1, WEFT_INT32, right, ARGS_TAG, world, NULL), "req");
}

static void bad_communicators(weft_comm_t world)
{
    int32_t x = 0;
    int v = -12345;

    EXPECT_INVALID(weft_send(&x, 1, WEFT_INT32, 0, ARGS_TAG, NULL), "comm");
    EXPECT_INVALID(weft_recv(&x, 1, WEFT_INT32, 0, ARGS_TAG, NULL, NULL), "comm");
    EXPECT_INVALID(weft_comm_rank(NULL, &v), "comm");
    EXPECT_UNTOUCHED(v == -12345, "*rank");
    EXPECT_INVALID(weft_comm_size(NULL, &v), "comm");
    EXPECT_UNTOUCHED(v == -12345, "*size");
    EXPECT_INVALID(weft_comm_rank(world, NULL), "rank");
    EXPECT_INVALID(weft_comm_size(world, NULL), "size");
    EXPECT_INVALID(weft_comm_local_rank(world, NULL), "rank");
    EXPECT_INVALID(weft_comm_local_size(world, NULL), "size");
    EXPECT_INVALID(weft_comm_world_ranks(world, NULL), "ranks");
    EXPECT_INVALID(weft_comm_destroy(NULL), "comm");
    EXPECT_INVALID(weft_comm_abort(NULL), "comm");
    /* A second weft_init with nowhere to put the result changes nothing. */
    EXPECT_INVALID(weft_init(NULL, NULL), "world");
}

static void bad_requests(weft_comm_t world, int right, int32_t *x)
{
    weft_request_t req = NULL, reqs[1] = { NULL };
    int dummy;
    weft_request_t sentinel = (weft_request_t)&dummy;
    weft_p2p_op_t op = { WEFT_P2P_SEND, x, 1, WEFT_INT32, right, ARGS_TAG };
    weft_p2p_op_t ops[2];
    int done = 0;

    EXPECT_INVALID(weft_wait(NULL, NULL), "req");
    EXPECT_INVALID(weft_test(NULL, &done, NULL), "req");
    EXPECT_INVALID(weft_test(&req, NULL, NULL), "done");
    EXPECT_INVALID(weft_waitall(-1, reqs, NULL), "n");
    EXPECT_INVALID(weft_waitall(1, NULL, NULL), "reqs");
    EXPECT_INVALID(weft_request_free(NULL), "req");

    req = sentinel;
    EXPECT_INVALID(weft_batch_isend_irecv(-1, &op, world, &req), "n");
    EXPECT_INVALID(weft_batch_isend_irecv(1, NULL, world, &req), "ops");
    EXPECT_INVALID(weft_batch_isend_irecv(1, &op, NULL, &req), "comm");
    EXPECT_INVALID(weft_batch_isend_irecv(1, &op, world, NULL), "req");
    /* One bad operation among good ones: nothing is posted. */
    ops[0] = op;
    ops[1] = op;
    ops[1].kind = 7;
    EXPECT_INVALID(weft_batch_isend_irecv(2, ops, world, &req), "ops[1]: kind");
    ops[1] = op;
    ops[1].peer = -4;
    EXPECT_INVALID(weft_batch_isend_irecv(2, ops, world, &req), "ops[1]: peer");
    ops[1] = op;
    ops[1].kind = WEFT_P2P_RECV;
    ops[1].buf = NULL;
    EXPECT_INVALID(weft_batch_isend_irecv(2, ops, world, &req), "buf");
    ops[1] = op;
    ops[1].tag = -9;
    EXPECT_INVALID(weft_batch_isend_irecv(2, ops, world, &req), "ops[1]: tag");
    EXPECT_UNTOUCHED(req == sentinel, "*req");
}

static void strerror_texts(void)
{
    for (int rc = WEFT_SUCCESS; rc <= WEFT_ERR_INTERNAL; rc++) {
        const char *s = weft_strerror((weft_result_t)rc);

        if (!s || !s[0]) {
            fprintf(stderr, "[rank %d] weft_strerror(%s) is %s\n", mp_rank,
                    mp_rc_name((weft_result_t)rc), s ? "empty" : "NULL");
            failures++;
        }
    }
    if (!weft_strerror((weft_result_t)9999)) {
        fprintf(stderr, "[rank %d] weft_strerror(9999) is NULL\n", mp_rank);
        failures++;
    }
}

void mp_p2p_args(weft_comm_t world, int rank, int size)
{
    int right = (rank + 1) % size, left = (rank + size - 1) % size;
    int32_t x[4] = { 1, 2, 3, 4 }, mine[2] = { rank, 4242 }, got[2] = { -1, -1 };
    weft_status_t st;

    bad_peers_and_tags(world, right, size, x);
    bad_buffers_and_types(world, right, x);
    bad_communicators(world);
    bad_requests(world, right, x);
    strerror_texts();
    if (failures)
        MP_FAIL("%d invalid-argument checks failed (listed above)", failures);

    /* None of the bad calls posted anything: the first message with the
     * test's tag from the left neighbour is the one sent now. */
    mp_sendrecv(mine, 2, WEFT_INT32, right, ARGS_TAG, got, 2, left, ARGS_TAG, world, &st);
    MP_ASSERT(st.source == left && st.tag == ARGS_TAG && st.count == 2,
              "status {%d, %d, %zu} after the bad calls", st.source, st.tag, st.count);
    MP_ASSERT(got[0] == left && got[1] == 4242,
              "after the bad calls rank %d's first message was {%" PRId32 ", %" PRId32 "}: "
              "a failed call sent something", left, got[0], got[1]);
    mp_barrier(world);
}
