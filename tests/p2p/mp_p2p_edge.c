/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * mp_p2p_edge.c: mp_p2p's tests at the edges: receive buffers too small,
 * messages of no elements, one very large message.
 */
#include "config.h"

#include <inttypes.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "tests/mp/mptest.h"
#include "tests/p2p/p2p.h"

#define CANARY 0x5a

static void check_status(const weft_status_t *st, int source, int tag, size_t count,
                         const char *what)
{
    MP_ASSERT(st->source == source && st->tag == tag && st->count == count,
              "%s: status {source %d, tag %d, count %zu}, expected {%d, %d, %zu}", what,
              st->source, st->tag, st->count, source, tag, count);
}

static void check_canary(const unsigned char *p, size_t n, const char *what)
{
    for (size_t i = 0; i < n; i++)
        MP_ASSERT(p[i] == CANARY, "%s: byte %zu was overwritten (0x%02x)", what, i, p[i]);
}

/* A truncated receive fails with WEFT_ERR_TRUNCATED, says why, and reports
 * the posted count. */
static void expect_truncated(weft_result_t rc, const weft_status_t *st, int source, int tag,
                             size_t posted, const char *what)
{
    const char *err = weft_last_error();

    MP_ASSERT(rc == WEFT_ERR_TRUNCATED, "%s: %s instead of WEFT_ERR_TRUNCATED (%s)", what,
              mp_rc_name(rc), err);
    MP_ASSERT(err[0] != '\0', "%s: WEFT_ERR_TRUNCATED with an empty weft_last_error()", what);
    check_status(st, source, tag, posted, what);
}

/* The sender's side of a message the receiver truncated: it was delivered
 * as far as the receiver wanted, so success; reporting the truncation is
 * allowed too. */
static void wait_truncated_send(weft_request_t *req, const char *what)
{
    weft_result_t rc = weft_wait(req, NULL);

    MP_ASSERT(rc == WEFT_SUCCESS || rc == WEFT_ERR_TRUNCATED, "%s: sender got %s: %s", what,
              mp_rc_name(rc), weft_last_error());
    MP_ASSERT(*req == NULL, "%s: weft_wait left the send request set", what);
}

/* ------------------------------------------------------------ truncation */

#define TR_SMALL 100        /* int32 elements sent */
#define TR_SMALL_POSTED 10  /* int32 elements posted */
#define TR_BIG (1u << 20)   /* bytes sent */
#define TR_BIG_POSTED 1024  /* bytes posted */
#define TR_TAG_SMALL 40
#define TR_TAG_BIG 41
#define TR_TAG_PAIR 42

void mp_p2p_truncation(weft_comm_t world, int rank, int size)
{
    int right = (rank + 1) % size, left = (rank + size - 1) % size;
    int32_t small_out[TR_SMALL], small_in[TR_SMALL];
    unsigned char *big_out = mp_alloc(TR_BIG), *big_in = mp_alloc(TR_BIG + 64);
    weft_request_t sreq = NULL, rreq = NULL;
    weft_status_t st;
    weft_result_t rc;

    for (int i = 0; i < TR_SMALL; i++)
        small_out[i] = rank * 1000 + i;
    mp_fill(big_out, TR_BIG, 100 + (uint64_t)rank);

    /* Small message, blocking receive of a tenth of it. */
    memset(small_in, CANARY, sizeof(small_in));
    MP_CHECK(weft_isend(small_out, TR_SMALL, WEFT_INT32, right, TR_TAG_SMALL, world, &sreq));
    rc = weft_recv(small_in, TR_SMALL_POSTED, WEFT_INT32, left, TR_TAG_SMALL, world, &st);
    expect_truncated(rc, &st, left, TR_TAG_SMALL, TR_SMALL_POSTED, "small message");
    check_canary((unsigned char *)(small_in + TR_SMALL_POSTED),
                 sizeof(int32_t) * (TR_SMALL - TR_SMALL_POSTED), "beyond the posted count");
    wait_truncated_send(&sreq, "small message");

    /* Large message, nonblocking wildcard receive of 1 KiB of it. */
    memset(big_in, CANARY, TR_BIG_POSTED + 64);
    MP_CHECK(weft_irecv(big_in, TR_BIG_POSTED, WEFT_UINT8, WEFT_ANY_SOURCE, TR_TAG_BIG, world,
                        &rreq));
    MP_CHECK(weft_isend(big_out, TR_BIG, WEFT_UINT8, right, TR_TAG_BIG, world, &sreq));
    rc = weft_wait(&rreq, &st);
    expect_truncated(rc, &st, left, TR_TAG_BIG, TR_BIG_POSTED, "1 MiB into 1 KiB");
    MP_ASSERT(rreq == NULL, "a failed weft_wait left the request set");
    check_canary(big_in + TR_BIG_POSTED, 64, "beyond the 1 KiB buffer");
    wait_truncated_send(&sreq, "1 MiB message");

    /* Two messages with one tag: the first truncated, the second intact,
     * so the rest of the first was dropped rather than delivered. */
    {
        int32_t second[5] = { -1, -2, -3, -4, rank };

        MP_CHECK(weft_isend(small_out, TR_SMALL, WEFT_INT32, right, TR_TAG_PAIR, world, &sreq));
        MP_CHECK(weft_isend(second, 5, WEFT_INT32, right, TR_TAG_PAIR, world, &rreq));
        rc = weft_recv(small_in, TR_SMALL_POSTED, WEFT_INT32, left, TR_TAG_PAIR, world, &st);
        expect_truncated(rc, &st, left, TR_TAG_PAIR, TR_SMALL_POSTED, "first of two");
        memset(small_in, 0, sizeof(small_in));
        MP_CHECK(weft_recv(small_in, TR_SMALL_POSTED, WEFT_INT32, left, TR_TAG_PAIR, world,
                           &st));
        check_status(&st, left, TR_TAG_PAIR, 5, "second of two");
        MP_ASSERT(small_in[0] == -1 && small_in[3] == -4 && small_in[4] == left,
                  "second of two: got {%" PRId32 ", ..., %" PRId32 "}", small_in[0],
                  small_in[4]);
        wait_truncated_send(&sreq, "first of two");
        MP_CHECK(weft_wait(&rreq, NULL));
    }

    /* Later traffic on the same pairs and tags is intact. */
    for (int round = 0; round < 3; round++) {
        memset(small_in, 0, sizeof(small_in));
        mp_sendrecv(small_out, TR_SMALL, WEFT_INT32, right, TR_TAG_SMALL, small_in, TR_SMALL,
                    left, TR_TAG_SMALL, world, &st);
        check_status(&st, left, TR_TAG_SMALL, TR_SMALL, "after truncation");
        for (int i = 0; i < TR_SMALL; i++)
            MP_ASSERT(small_in[i] == left * 1000 + i, "after truncation: element %d is %" PRId32,
                      i, small_in[i]);
        memset(big_in, 0, TR_BIG);
        mp_sendrecv(big_out, TR_BIG, WEFT_UINT8, right, TR_TAG_BIG, big_in, TR_BIG, left,
                    TR_TAG_BIG, world, &st);
        check_status(&st, left, TR_TAG_BIG, TR_BIG, "1 MiB after truncation");
        MP_CHECK_PATTERN(big_in, TR_BIG, 100 + (uint64_t)left, "1 MiB after truncation");
    }
    free(big_in);
    free(big_out);
    mp_barrier(world);
}

/* ---------------------------------------------------------------- zerolen */

#define ZL_TAG 50

void mp_p2p_zerolen(weft_comm_t world, int rank, int size)
{
    int right = (rank + 1) % size, left = (rank + size - 1) % size;
    unsigned char out[64], in[64];
    weft_request_t reqs[2 * WEFT_DTYPE_COUNT];
    weft_status_t st, sts[2 * WEFT_DTYPE_COUNT];
    uint64_t v = 0;

    memset(out, 0x11, sizeof(out));

    /* NULL buffers on both sides. */
    mp_sendrecv(NULL, 0, WEFT_UINT8, right, ZL_TAG, NULL, 0, left, ZL_TAG, world, &st);
    check_status(&st, left, ZL_TAG, 0, "count 0 with NULL buffers");

    /* Real buffers, which must stay untouched. */
    memset(in, CANARY, sizeof(in));
    mp_sendrecv(out, 0, WEFT_FLOAT32, right, ZL_TAG + 1, in, 0, left, ZL_TAG + 1, world, &st);
    check_status(&st, left, ZL_TAG + 1, 0, "count 0 with buffers");
    check_canary(in, sizeof(in), "count-0 receive");

    /* An empty message into a receive that could take 8 elements. */
    memset(in, CANARY, sizeof(in));
    mp_sendrecv(NULL, 0, WEFT_INT64, right, ZL_TAG + 2, in, 8, left, ZL_TAG + 2, world, &st);
    check_status(&st, left, ZL_TAG + 2, 0, "empty message, 8 elements posted");
    check_canary(in, sizeof(in), "receive of an empty message");

    /* Every element type, all in flight at once. */
    for (int dt = 0; dt < WEFT_DTYPE_COUNT; dt++) {
        MP_CHECK(weft_irecv(dt % 2 ? NULL : in, 0, (weft_dtype_t)dt, left, ZL_TAG + 10 + dt,
                            world, &reqs[2 * dt]));
        MP_CHECK(weft_isend(dt % 2 ? out : NULL, 0, (weft_dtype_t)dt, right, ZL_TAG + 10 + dt,
                            world, &reqs[2 * dt + 1]));
    }
    MP_CHECK(weft_waitall(2 * WEFT_DTYPE_COUNT, reqs, sts));
    for (int dt = 0; dt < WEFT_DTYPE_COUNT; dt++) {
        check_status(&sts[2 * dt], left, ZL_TAG + 10 + dt, 0, "count 0 of each type");
        MP_ASSERT(reqs[2 * dt] == NULL && reqs[2 * dt + 1] == NULL, "waitall left requests");
    }
    check_canary(in, sizeof(in), "count-0 receives of each type");

    /* A batch of empty operations. */
    {
        weft_p2p_op_t ops[2] = {
            { WEFT_P2P_RECV, NULL, 0, WEFT_UINT8, left, ZL_TAG + 30 },
            { WEFT_P2P_SEND, NULL, 0, WEFT_UINT8, right, ZL_TAG + 30 },
        };

        MP_CHECK(weft_batch_isend_irecv(2, ops, world, &reqs[0]));
        MP_CHECK(weft_wait(&reqs[0], NULL));
    }

    /* The pairs still carry data afterwards. */
    {
        uint64_t mine = 0xabc0000 + (uint64_t)rank;

        mp_sendrecv(&mine, 1, WEFT_UINT64, right, ZL_TAG, &v, 1, left, ZL_TAG, world, &st);
        check_status(&st, left, ZL_TAG, 1, "after empty messages");
        MP_ASSERT(v == 0xabc0000 + (uint64_t)left, "after empty messages: got 0x%" PRIx64, v);
    }
    mp_barrier(world);
}

/* ------------------------------------------------------------------- big */

#define BIG_WORDS (32u << 20) /* 256 MiB of uint64 */
#define BIG_TAG 70
#define BIG_SEED 0xb16b16

void mp_p2p_big(weft_comm_t world, int rank, int size)
{
    size_t bytes = (size_t)BIG_WORDS * 8;
    weft_status_t st;

    (void)size;
    if (rank == 0) {
        uint64_t *buf = mp_alloc(bytes);

        mp_fill(buf, bytes, BIG_SEED);
        MP_CHECK(weft_send(buf, BIG_WORDS, WEFT_UINT64, 1, BIG_TAG, world));
        free(buf);
    } else if (rank == 1) {
        uint64_t *buf = mp_alloc(bytes);
        double t0 = mp_now(), dt;

        memset(buf, 0, bytes);
        MP_CHECK(weft_recv(buf, BIG_WORDS, WEFT_UINT64, 0, BIG_TAG, world, &st));
        dt = mp_now() - t0;
        check_status(&st, 0, BIG_TAG, BIG_WORDS, "256 MiB message");
        MP_CHECK_PATTERN(buf, bytes, BIG_SEED, "256 MiB message");
        mp_log("mp_p2p big: 256 MiB received and checked (%.0f MiB/s)",
               dt > 0 ? 256.0 / dt : 0.0);
        free(buf);
    }
    mp_barrier(world);
}
