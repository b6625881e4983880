/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * mp_p2p_basic.c: mp_p2p's tests of ordinary traffic: round trips, a ring,
 * wildcard receives, message order, and messages to oneself.
 */
#include "config.h"

#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/mp/mptest.h"
#include "tests/p2p/p2p.h"

static void check_status(const weft_status_t *st, int source, int tag, size_t count,
                         const char *what)
{
    MP_ASSERT(st->source == source && st->tag == tag && st->count == count,
              "%s: status {source %d, tag %d, count %zu}, expected {%d, %d, %zu}", what,
              st->source, st->tag, st->count, source, tag, count);
}

static size_t dtype_bytes(weft_dtype_t dt)
{
    size_t b = 0;

    MP_CHECK(weft_dtype_size(dt, &b));
    MP_ASSERT(b == 1 || b == 2 || b == 4 || b == 8, "weft_dtype_size(%d) = %zu", (int)dt, b);
    return b;
}

/* ------------------------------------------------------------- pingpong */

#define PP_ROUNDS 1000
#define PP_REPS 2
#define PP_TAG_SMALL_OUT 1
#define PP_TAG_SMALL_BACK 2
#define PP_TAG_BIG_OUT 3
#define PP_TAG_BIG_BACK 4

struct pp_size {
    size_t count;
    weft_dtype_t dt;
};

/* Up to 4 MiB, in several element types so that counts are checked as
 * elements, not bytes. */
static const struct pp_size pp_sizes[] = {
    { 1, WEFT_UINT8 },
    { 4093, WEFT_UINT8 },
    { 3001, WEFT_FLOAT16 },
    { 16384, WEFT_INT32 },
    { 131072, WEFT_FLOAT64 },
    { 4u << 20, WEFT_UINT8 },
};

#define PP_NSIZES (sizeof(pp_sizes) / sizeof(pp_sizes[0]))
#define PP_MAX_BYTES (4u << 20)

static uint64_t pp_small_value(int peer, int i)
{
    return ((uint64_t)peer << 32) | (uint64_t)i;
}

static void pingpong_pair(weft_comm_t world, int rank, int peer, unsigned char *buf)
{
    int me0 = rank == 0;
    int other = me0 ? peer : 0;
    weft_status_t st;

    for (int i = 0; i < PP_ROUNDS; i++) {
        uint64_t v = pp_small_value(peer, i), got = 0;

        if (me0) {
            MP_CHECK(weft_send(&v, 1, WEFT_UINT64, other, PP_TAG_SMALL_OUT, world));
            MP_CHECK(weft_recv(&got, 1, WEFT_UINT64, other, PP_TAG_SMALL_BACK, world, &st));
            check_status(&st, other, PP_TAG_SMALL_BACK, 1, "pingpong reply");
            MP_ASSERT(got == ~v, "round %d with rank %d: reply 0x%" PRIx64 ", expected 0x%"
                      PRIx64, i, peer, got, ~v);
        } else {
            MP_CHECK(weft_recv(&got, 1, WEFT_UINT64, other, PP_TAG_SMALL_OUT, world, &st));
            check_status(&st, other, PP_TAG_SMALL_OUT, 1, "pingpong request");
            MP_ASSERT(got == v, "round %d: got 0x%" PRIx64 ", expected 0x%" PRIx64, i, got, v);
            got = ~got;
            MP_CHECK(weft_send(&got, 1, WEFT_UINT64, other, PP_TAG_SMALL_BACK, world));
        }
    }

    for (int rep = 0; rep < PP_REPS; rep++)
        for (size_t j = 0; j < PP_NSIZES; j++) {
            size_t count = pp_sizes[j].count, esz = dtype_bytes(pp_sizes[j].dt);
            size_t bytes = count * esz, cap = PP_MAX_BYTES / esz;
            uint64_t seed_out = (uint64_t)peer * 1000 + j * 10 + (uint64_t)rep;
            uint64_t seed_back = seed_out + 500000;
            char what[96];

            snprintf(what, sizeof(what), "%zu x %zu-byte elements, rank 0 <-> rank %d",
                     count, esz, peer);
            if (me0) {
                mp_fill(buf, bytes, seed_out);
                MP_CHECK(weft_send(buf, count, pp_sizes[j].dt, other, PP_TAG_BIG_OUT, world));
                memset(buf, 0xee, bytes);
                /* A receive larger than the message: the status says how
                 * much came. */
                MP_CHECK(weft_recv(buf, cap, pp_sizes[j].dt, other, PP_TAG_BIG_BACK, world, &st));
                check_status(&st, other, PP_TAG_BIG_BACK, count, what);
                MP_CHECK_PATTERN(buf, bytes, seed_back, what);
            } else {
                memset(buf, 0xee, bytes);
                MP_CHECK(weft_recv(buf, cap, pp_sizes[j].dt, other, PP_TAG_BIG_OUT, world, &st));
                check_status(&st, other, PP_TAG_BIG_OUT, count, what);
                MP_CHECK_PATTERN(buf, bytes, seed_out, what);
                mp_fill(buf, bytes, seed_back);
                MP_CHECK(weft_send(buf, count, pp_sizes[j].dt, other, PP_TAG_BIG_BACK, world));
            }
        }
}

void mp_p2p_pingpong(weft_comm_t world, int rank, int size)
{
    unsigned char *buf = mp_alloc(PP_MAX_BYTES);

    /* Pairs one after the other: each rank k > 0 only ever talks to 0. */
    for (int k = 1; k < size; k++)
        if (rank == 0 || rank == k)
            pingpong_pair(world, rank, k, buf);
    free(buf);
    mp_barrier(world);
}

/* ----------------------------------------------------------------- ring */

#define RING_LAPS 100

void mp_p2p_ring(weft_comm_t world, int rank, int size)
{
    int right = (rank + 1) % size, left = (rank + size - 1) % size;
    int64_t lap_sum = (int64_t)size * (size - 1) / 2;
    int64_t before_me = (int64_t)rank * (rank - 1) / 2;
    weft_status_t st;

    for (int lap = 0; lap < RING_LAPS; lap++) {
        int tag = 1 + lap % 7;
        int64_t token, want;

        if (rank == 0) {
            token = lap * lap_sum;
            MP_CHECK(weft_send(&token, 1, WEFT_INT64, right, tag, world));
            MP_CHECK(weft_recv(&token, 1, WEFT_INT64, left, tag, world, &st));
            want = (lap + 1) * lap_sum;
        } else {
            MP_CHECK(weft_recv(&token, 1, WEFT_INT64, left, tag, world, &st));
            want = lap * lap_sum + before_me;
        }
        check_status(&st, left, tag, 1, "ring token");
        MP_ASSERT(token == want, "lap %d: token %" PRId64 " from rank %d, expected %" PRId64,
                  lap, token, left, want);
        if (rank != 0) {
            token += rank;
            MP_CHECK(weft_send(&token, 1, WEFT_INT64, right, tag, world));
        }
    }
    mp_barrier(world);
}

/* ------------------------------------------------------------ anysource */

#define AS_PER_RANK 3
#define AS_TAG_A(r, j) (100 * (r) + (j))
#define AS_TAG_B 5
#define AS_TAG_C(r) (2000 + (r))
#define AS_TAG_D(r) (3000 + (r))
#define AS_TAG_GO 9

static int32_t as_value(int r, int j, size_t idx)
{
    return (int32_t)(r * 1000 + j * 10 + (int)idx);
}

/* Rank 0 tells rank r that the next phase may start, so that no message
 * of a later phase can meet a wildcard receive of an earlier one. */
static void as_go(weft_comm_t world, int rank, int size)
{
    unsigned char b = 1;

    if (rank == 0) {
        for (int r = 1; r < size; r++)
            MP_CHECK(weft_send(&b, 1, WEFT_UINT8, r, AS_TAG_GO, world));
    } else {
        MP_CHECK(weft_recv(&b, 1, WEFT_UINT8, 0, AS_TAG_GO, world, NULL));
    }
}

static void anysource_root(weft_comm_t world, int size)
{
    int32_t *buf = mp_alloc(sizeof(int32_t) * ((size_t)size + 1));
    char *seen = mp_alloc((size_t)size * AS_PER_RANK);
    weft_request_t *reqs = mp_alloc(sizeof(*reqs) * (size_t)size);
    weft_status_t *sts = mp_alloc(sizeof(*sts) * (size_t)size);
    int32_t *dbuf = mp_alloc(sizeof(int32_t) * 2 * (size_t)size);
    weft_status_t st;

    /* A: any source, any tag; each sender's count is its rank + 1. */
    memset(seen, 0, (size_t)size * AS_PER_RANK);
    for (int n = 0; n < (size - 1) * AS_PER_RANK; n++) {
        int src, j;

        memset(buf, 0, sizeof(int32_t) * ((size_t)size + 1));
        MP_CHECK(weft_recv(buf, (size_t)size + 1, WEFT_INT32, WEFT_ANY_SOURCE, WEFT_ANY_TAG,
                           world, &st));
        src = st.source;
        MP_ASSERT(src >= 1 && src < size, "ANY_SOURCE receive: status.source %d", src);
        j = st.tag - AS_TAG_A(src, 0);
        MP_ASSERT(j >= 0 && j < AS_PER_RANK, "message from rank %d has tag %d", src, st.tag);
        MP_ASSERT(!seen[src * AS_PER_RANK + j], "message %d of rank %d received twice", j, src);
        seen[src * AS_PER_RANK + j] = 1;
        MP_ASSERT(st.count == (size_t)src + 1, "message from rank %d: status.count %zu, "
                  "expected %d", src, st.count, src + 1);
        for (size_t i = 0; i < st.count; i++)
            MP_ASSERT(buf[i] == as_value(src, j, i), "message %d of rank %d: element %zu is %"
                      PRId32 ", expected %" PRId32, j, src, i, buf[i], as_value(src, j, i));
    }

    /* B: any source, one tag. */
    as_go(world, 0, size);
    memset(seen, 0, (size_t)size);
    for (int n = 1; n < size; n++) {
        int32_t v = -1;

        MP_CHECK(weft_recv(&v, 1, WEFT_INT32, WEFT_ANY_SOURCE, AS_TAG_B, world, &st));
        MP_ASSERT(st.source >= 1 && st.source < size && !seen[st.source],
                  "ANY_SOURCE with tag %d: status.source %d (seen before: %d)", AS_TAG_B,
                  st.source, st.source >= 1 && st.source < size ? seen[st.source] : -1);
        seen[st.source] = 1;
        check_status(&st, st.source, AS_TAG_B, 1, "ANY_SOURCE, fixed tag");
        MP_ASSERT(v == st.source, "rank %d sent %" PRId32, st.source, v);
    }

    /* C: one source, any tag; taken from the highest rank down. */
    as_go(world, 0, size);
    for (int r = size - 1; r >= 1; r--) {
        int32_t pair[2] = { 0, 0 };

        MP_CHECK(weft_recv(pair, 2, WEFT_INT32, r, WEFT_ANY_TAG, world, &st));
        check_status(&st, r, AS_TAG_C(r), 2, "fixed source, ANY_TAG");
        MP_ASSERT(pair[0] == r && pair[1] == -r, "rank %d sent {%" PRId32 ", %" PRId32 "}", r,
                  pair[0], pair[1]);
    }

    /* D: wildcard receives posted before anything was sent. */
    for (int n = 0; n < size - 1; n++)
        MP_CHECK(weft_irecv(&dbuf[2 * n], 2, WEFT_INT32, WEFT_ANY_SOURCE, WEFT_ANY_TAG, world,
                            &reqs[n]));
    as_go(world, 0, size);
    MP_CHECK(weft_waitall(size - 1, reqs, sts));
    memset(seen, 0, (size_t)size);
    for (int n = 0; n < size - 1; n++) {
        int src = sts[n].source;

        MP_ASSERT(reqs[n] == NULL, "weft_waitall left request %d set", n);
        MP_ASSERT(sts[n].error == WEFT_SUCCESS, "request %d: status.error %s", n,
                  mp_rc_name(sts[n].error));
        MP_ASSERT(src >= 1 && src < size && !seen[src], "posted wildcard receive %d: "
                  "status.source %d", n, src);
        seen[src] = 1;
        check_status(&sts[n], src, AS_TAG_D(src), 2, "posted ANY_SOURCE/ANY_TAG");
        MP_ASSERT(dbuf[2 * n] == src && dbuf[2 * n + 1] == AS_TAG_D(src),
                  "posted wildcard receive %d: data {%" PRId32 ", %" PRId32 "} from rank %d", n,
                  dbuf[2 * n], dbuf[2 * n + 1], src);
    }
    free(dbuf);
    free(sts);
    free(reqs);
    free(seen);
    free(buf);
}

static void anysource_sender(weft_comm_t world, int rank, int size)
{
    int32_t buf[AS_PER_RANK][64];
    weft_request_t reqs[AS_PER_RANK];
    int32_t v = rank, pair[2] = { rank, -rank }, d[2] = { rank, AS_TAG_D(rank) };

    MP_ASSERT(rank + 1 <= 64, "rank %d too large for this test", rank);
    for (int j = 0; j < AS_PER_RANK; j++) {
        for (int i = 0; i <= rank; i++)
            buf[j][i] = as_value(rank, j, (size_t)i);
        MP_CHECK(weft_isend(buf[j], (size_t)rank + 1, WEFT_INT32, 0, AS_TAG_A(rank, j), world,
                            &reqs[j]));
    }
    MP_CHECK(weft_waitall(AS_PER_RANK, reqs, NULL));
    as_go(world, rank, size);
    MP_CHECK(weft_send(&v, 1, WEFT_INT32, 0, AS_TAG_B, world));
    as_go(world, rank, size);
    MP_CHECK(weft_send(pair, 2, WEFT_INT32, 0, AS_TAG_C(rank), world));
    as_go(world, rank, size);
    MP_CHECK(weft_send(d, 2, WEFT_INT32, 0, AS_TAG_D(rank), world));
}

void mp_p2p_anysource(weft_comm_t world, int rank, int size)
{
    if (size > 64)
        mp_skip("anysource supports up to 64 ranks");
    if (rank == 0)
        anysource_root(world, size);
    else
        anysource_sender(world, rank, size);
    mp_barrier(world);
}

/* ------------------------------------------------------------- ordering */

#define ORD_COUNT 1000
#define ORD_TAG 3
#define ORD_BIG_WORDS (64u * 1024) /* 256 KiB: past any eager limit */
#define ORD_INTERLEAVED 48
#define ORD_TAG_IL 10 /* tags ORD_TAG_IL .. ORD_TAG_IL + 3 */
/* Large messages in flight at once with tags ORD_TAG_LARGE + i, received
 * last first: a transport that reads a large message only when its
 * receive is posted (shm's rendezvous, past a quarter of its ring)
 * finishes them out of send order. */
#define ORD_LARGE 4
#define ORD_LARGE_BYTES ((1u << 20) + 3)
#define ORD_TAG_LARGE 20

/* Message i of a sender: mostly a few words, now and then a large one, so
 * that a large message followed by small ones must still arrive first. */
static size_t ord_words(int i)
{
    return i % 250 == 125 ? ORD_BIG_WORDS : (size_t)(i % 13) + 2;
}

static uint64_t ord_seed(int src, int i)
{
    return ((uint64_t)src << 20) | (uint64_t)i;
}

static void ordering_root(weft_comm_t world, int size)
{
    uint32_t *buf = mp_alloc(sizeof(uint32_t) * ORD_BIG_WORDS);
    int *next = calloc((size_t)size, sizeof(int));
    weft_status_t st;

    MP_ASSERT(next, "calloc failed");
    for (int n = 0; n < (size - 1) * ORD_COUNT; n++) {
        int src, i;
        size_t words;

        MP_CHECK(weft_recv(buf, ORD_BIG_WORDS, WEFT_UINT32, WEFT_ANY_SOURCE, ORD_TAG, world,
                           &st));
        src = st.source;
        MP_ASSERT(src >= 1 && src < size, "status.source %d", src);
        i = next[src]++;
        MP_ASSERT(i < ORD_COUNT, "more than %d messages from rank %d", ORD_COUNT, src);
        words = ord_words(i);
        MP_ASSERT(buf[0] == (uint32_t)src && buf[1] == (uint32_t)i,
                  "from rank %d, expected message %d, got message %" PRIu32 " of rank %" PRIu32
                  " (same-tag messages out of order)", src, i, buf[1], buf[0]);
        check_status(&st, src, ORD_TAG, words, "ordered message");
        MP_CHECK_PATTERN(buf + 2, (words - 2) * sizeof(uint32_t), ord_seed(src, i),
                         "ordered message body");
    }
    for (int r = 1; r < size; r++)
        MP_ASSERT(next[r] == ORD_COUNT, "rank %d: %d messages", r, next[r]);

    /* Interleaved tags, taken one tag at a time, highest tag first. */
    for (int r = 1; r < size; r++)
        for (int t = ORD_TAG_IL + 3; t >= ORD_TAG_IL; t--)
            for (int i = t - ORD_TAG_IL; i < ORD_INTERLEAVED; i += 4) {
                uint32_t pair[2] = { 0, 0 };

                MP_CHECK(weft_recv(pair, 2, WEFT_UINT32, r, t, world, &st));
                check_status(&st, r, t, 2, "interleaved-tag message");
                MP_ASSERT(pair[0] == (uint32_t)r && pair[1] == (uint32_t)i,
                          "rank %d tag %d: expected message %d, got %" PRIu32 " of rank %" PRIu32,
                          r, t, i, pair[1], pair[0]);
            }

    free(buf);
    buf = mp_alloc(ORD_LARGE_BYTES);
    for (int r = 1; r < size; r++)
        for (int i = ORD_LARGE - 1; i >= 0; i--) {
            char what[64];

            snprintf(what, sizeof(what), "large message %d of rank %d", i, r);
            MP_CHECK(weft_recv(buf, ORD_LARGE_BYTES, WEFT_UINT8, r, ORD_TAG_LARGE + i, world,
                               &st));
            check_status(&st, r, ORD_TAG_LARGE + i, ORD_LARGE_BYTES, what);
            MP_CHECK_PATTERN(buf, ORD_LARGE_BYTES, ord_seed(r, 5000 + i), what);
        }
    free(next);
    free(buf);
}

static uint32_t *ord_message(int rank, int i)
{
    size_t words = ord_words(i);
    uint32_t *m = mp_alloc(sizeof(uint32_t) * words);

    m[0] = (uint32_t)rank;
    m[1] = (uint32_t)i;
    mp_fill(m + 2, (words - 2) * sizeof(uint32_t), ord_seed(rank, i));
    return m;
}

static void ordering_sender(weft_comm_t world, int rank)
{
    int half = ORD_COUNT / 2;
    uint32_t **msgs = mp_alloc(sizeof(*msgs) * (size_t)half);
    weft_request_t *reqs = mp_alloc(sizeof(*reqs) * (size_t)half);
    uint32_t il[ORD_INTERLEAVED][2];
    weft_request_t il_reqs[ORD_INTERLEAVED];

    /* First half blocking, second half all in flight at once. */
    for (int i = 0; i < half; i++) {
        uint32_t *m = ord_message(rank, i);

        MP_CHECK(weft_send(m, ord_words(i), WEFT_UINT32, 0, ORD_TAG, world));
        free(m);
    }
    for (int i = half; i < ORD_COUNT; i++) {
        msgs[i - half] = ord_message(rank, i);
        MP_CHECK(weft_isend(msgs[i - half], ord_words(i), WEFT_UINT32, 0, ORD_TAG, world,
                            &reqs[i - half]));
    }
    MP_CHECK(weft_waitall(half, reqs, NULL));
    for (int i = 0; i < half; i++)
        free(msgs[i]);

    for (int i = 0; i < ORD_INTERLEAVED; i++) {
        il[i][0] = (uint32_t)rank;
        il[i][1] = (uint32_t)i;
        MP_CHECK(weft_isend(il[i], 2, WEFT_UINT32, 0, ORD_TAG_IL + i % 4, world, &il_reqs[i]));
    }
    MP_CHECK(weft_waitall(ORD_INTERLEAVED, il_reqs, NULL));

    for (int i = 0; i < ORD_LARGE; i++) {
        msgs[i] = mp_alloc(ORD_LARGE_BYTES);
        mp_fill(msgs[i], ORD_LARGE_BYTES, ord_seed(rank, 5000 + i));
        MP_CHECK(weft_isend(msgs[i], ORD_LARGE_BYTES, WEFT_UINT8, 0, ORD_TAG_LARGE + i, world,
                            &reqs[i]));
    }
    MP_CHECK(weft_waitall(ORD_LARGE, reqs, NULL));
    for (int i = 0; i < ORD_LARGE; i++)
        free(msgs[i]);
    free(reqs);
    free(msgs);
}

void mp_p2p_ordering(weft_comm_t world, int rank, int size)
{
    if (rank == 0)
        ordering_root(world, size);
    else
        ordering_sender(world, rank);
    mp_barrier(world);
}

/* ------------------------------------------------------------- selfsend */

#define SELF_TAG 20

void mp_p2p_selfsend(weft_comm_t world, int rank, int size)
{
    static const size_t sizes[] = { 8, 1000, 1u << 20, (4u << 20) + 3 };
    size_t max = (4u << 20) + 3;
    unsigned char *out = mp_alloc(max), *in = mp_alloc(max);
    weft_request_t reqs[2];
    weft_status_t st, sts[2];

    for (size_t j = 0; j < sizeof(sizes) / sizeof(sizes[0]); j++) {
        uint64_t seed = (uint64_t)rank * 100 + j;
        int tag = SELF_TAG + (int)j;
        char what[64];

        snprintf(what, sizeof(what), "%zu bytes to itself", sizes[j]);

        /* Send first, then receive. */
        mp_fill(out, sizes[j], seed);
        memset(in, 0, sizes[j]);
        mp_sendrecv(out, sizes[j], WEFT_UINT8, rank, tag, in, max, rank, tag, world, &st);
        check_status(&st, rank, tag, sizes[j], what);
        MP_CHECK_PATTERN(in, sizes[j], seed, what);

        /* Receive posted first, with a wildcard source. */
        mp_fill(out, sizes[j], seed + 50);
        memset(in, 0, sizes[j]);
        MP_CHECK(weft_irecv(in, max, WEFT_UINT8, WEFT_ANY_SOURCE, tag, world, &reqs[0]));
        MP_CHECK(weft_isend(out, sizes[j], WEFT_UINT8, rank, tag, world, &reqs[1]));
        MP_CHECK(weft_waitall(2, reqs, sts));
        check_status(&sts[0], rank, tag, sizes[j], what);
        MP_CHECK_PATTERN(in, sizes[j], seed + 50, what);
    }

    /* Messages to oneself and to the neighbours at once. */
    if (size > 1) {
        int right = (rank + 1) % size, left = (rank + size - 1) % size;
        uint64_t self_out = 7000 + (uint64_t)rank, ring_out = 8000 + (uint64_t)rank;
        uint64_t self_in = 0, ring_in = 0;
        weft_request_t r4[4];

        MP_CHECK(weft_irecv(&ring_in, 1, WEFT_UINT64, left, SELF_TAG, world, &r4[0]));
        MP_CHECK(weft_irecv(&self_in, 1, WEFT_UINT64, rank, SELF_TAG, world, &r4[1]));
        MP_CHECK(weft_isend(&ring_out, 1, WEFT_UINT64, right, SELF_TAG, world, &r4[2]));
        MP_CHECK(weft_isend(&self_out, 1, WEFT_UINT64, rank, SELF_TAG, world, &r4[3]));
        MP_CHECK(weft_waitall(4, r4, NULL));
        MP_ASSERT(self_in == self_out, "from itself: %" PRIu64 ", expected %" PRIu64, self_in,
                  self_out);
        MP_ASSERT(ring_in == 8000 + (uint64_t)left, "from rank %d: %" PRIu64, left, ring_in);
    }
    free(in);
    free(out);
    mp_barrier(world);
}
