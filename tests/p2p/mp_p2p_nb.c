/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * mp_p2p_nb.c: mp_p2p's tests of nonblocking operations: batches with both
 * neighbours, many requests in flight, weft_test, weft_waitall and
 * weft_request_free.
 */
#include "config.h"

#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/mp/mptest.h"
#include "tests/p2p/p2p.h"

/* Polling loops give up after this long (WEFT_TIMEOUT bounds blocking
 * waits; weft_test has no deadline of its own). */
#define POLL_LIMIT_S 60.0

static void check_status(const weft_status_t *st, int source, int tag, size_t count,
                         const char *what)
{
    MP_ASSERT(st->source == source && st->tag == tag && st->count == count,
              "%s: status {source %d, tag %d, count %zu}, expected {%d, %d, %zu}", what,
              st->source, st->tag, st->count, source, tag, count);
}

/* Polls *req with weft_test until done, sleeping briefly between tries. */
static void test_until_done(weft_request_t *req, weft_status_t *st, const char *what)
{
    double deadline = mp_now() + POLL_LIMIT_S;
    int done = 0;

    for (;;) {
        MP_CHECK(weft_test(req, &done, st));
        if (done)
            break;
        MP_ASSERT(mp_now() < deadline, "%s: weft_test still not done after %.0f s", what,
                  POLL_LIMIT_S);
        MP_ASSERT(*req != NULL, "%s: weft_test cleared the request but said not done", what);
        mp_sleep_us(50);
    }
    MP_ASSERT(*req == NULL, "%s: weft_test said done but left the request set", what);
}

/* ----------------------------------------------------------------- batch */

#define BT_TAGS 4
#define BT_ITERS 20
#define BT_TAG_RIGHT 0 /* tags 0..3 go right, 10..13 left */
#define BT_TAG_LEFT 10

static size_t bt_words(int t)
{
    static const size_t words[BT_TAGS] = { 1, 100, 4096, 75000 };

    return words[t];
}

/* dir 0: sent to the right neighbour, 1: to the left. */
static uint64_t bt_seed(int src, int it, int t, int dir)
{
    return (((uint64_t)src * 1000 + (uint64_t)it) * 16 + (uint64_t)t) * 2 + (uint64_t)dir;
}

void mp_p2p_batch(weft_comm_t world, int rank, int size)
{
    int right = (rank + 1) % size, left = (rank + size - 1) % size;
    uint32_t *to_r[BT_TAGS], *to_l[BT_TAGS], *from_l[BT_TAGS], *from_r[BT_TAGS];
    weft_p2p_op_t ops[4 * BT_TAGS];
    weft_request_t req = NULL;
    weft_status_t st;

    for (int t = 0; t < BT_TAGS; t++) {
        to_r[t] = mp_alloc(bt_words(t) * 4);
        to_l[t] = mp_alloc(bt_words(t) * 4);
        from_l[t] = mp_alloc(bt_words(t) * 4);
        from_r[t] = mp_alloc(bt_words(t) * 4);
    }

    for (int it = 0; it < BT_ITERS; it++) {
        int n = 0;

        for (int t = 0; t < BT_TAGS; t++) {
            mp_fill(to_r[t], bt_words(t) * 4, bt_seed(rank, it, t, 0));
            mp_fill(to_l[t], bt_words(t) * 4, bt_seed(rank, it, t, 1));
            memset(from_l[t], 0, bt_words(t) * 4);
            memset(from_r[t], 0, bt_words(t) * 4);
        }
        /* Receives first on odd iterations, sends first on even ones. */
        for (int pass = 0; pass < 2; pass++) {
            int sends = (pass == 0) == (it % 2 == 0);

            for (int t = 0; t < BT_TAGS; t++) {
                if (sends) {
                    ops[n++] = (weft_p2p_op_t){ WEFT_P2P_SEND, to_r[t], bt_words(t),
                                                WEFT_UINT32, right, BT_TAG_RIGHT + t };
                    ops[n++] = (weft_p2p_op_t){ WEFT_P2P_SEND, to_l[t], bt_words(t),
                                                WEFT_UINT32, left, BT_TAG_LEFT + t };
                } else {
                    ops[n++] = (weft_p2p_op_t){ WEFT_P2P_RECV, from_l[t], bt_words(t),
                                                WEFT_UINT32, left, BT_TAG_RIGHT + t };
                    ops[n++] = (weft_p2p_op_t){ WEFT_P2P_RECV, from_r[t], bt_words(t),
                                                WEFT_UINT32, right, BT_TAG_LEFT + t };
                }
            }
        }
        MP_CHECK(weft_batch_isend_irecv(n, ops, world, &req));
        MP_ASSERT(req != NULL, "weft_batch_isend_irecv gave no request");
        if (it % 3 == 0)
            test_until_done(&req, &st, "batch");
        else
            MP_CHECK(weft_wait(&req, &st));
        MP_ASSERT(req == NULL, "the batch's request is still set after completion");
        for (int t = 0; t < BT_TAGS; t++) {
            char what[80];

            snprintf(what, sizeof(what), "iteration %d tag %d from the left (rank %d)", it,
                     BT_TAG_RIGHT + t, left);
            MP_CHECK_PATTERN(from_l[t], bt_words(t) * 4, bt_seed(left, it, t, 0), what);
            snprintf(what, sizeof(what), "iteration %d tag %d from the right (rank %d)", it,
                     BT_TAG_LEFT + t, right);
            MP_CHECK_PATTERN(from_r[t], bt_words(t) * 4, bt_seed(right, it, t, 1), what);
        }
    }

    /* An empty batch completes at once. */
    MP_CHECK(weft_batch_isend_irecv(0, NULL, world, &req));
    MP_CHECK(weft_wait(&req, NULL));

    for (int t = 0; t < BT_TAGS; t++) {
        free(to_r[t]);
        free(to_l[t]);
        free(from_l[t]);
        free(from_r[t]);
    }
    mp_barrier(world);
}

/* ----------------------------------------------------------- nonblocking */

#define NB_PER_PEER 16
#define NB_TAG 100
#define NB_POLLED (NB_PER_PEER / 2)
#define NB_MAX_WORDS (1 + 37 * (NB_PER_PEER - 1))

static size_t nb_words(int k)
{
    return 1 + 37 * (size_t)k;
}

static uint64_t nb_seed(int src, int dst, int k)
{
    return ((uint64_t)src * 4096 + (uint64_t)dst) * 64 + (uint64_t)k + 77;
}

/* Every rank sends NB_PER_PEER messages to every other rank, everything
 * posted before anything is waited for. The first half of each peer's
 * receives complete through weft_test, the rest through weft_waitall. */
static void nb_all_pairs(weft_comm_t world, int rank, int size)
{
    size_t n = (size_t)size * NB_PER_PEER;
    uint32_t *sbuf = mp_alloc(n * NB_MAX_WORDS * 4), *rbuf = mp_alloc(n * NB_MAX_WORDS * 4);
    weft_request_t *sreq = mp_alloc(n * sizeof(*sreq)), *rreq = mp_alloc(n * sizeof(*rreq));
    weft_status_t *sts = mp_alloc(n * sizeof(*sts));
    double deadline;
    size_t pending;

    memset(rbuf, 0, n * NB_MAX_WORDS * 4);
    for (size_t i = 0; i < n; i++)
        sreq[i] = rreq[i] = NULL;
    for (int p = 0; p < size; p++)
        for (int k = 0; k < NB_PER_PEER && p != rank; k++)
            MP_CHECK(weft_irecv(rbuf + ((size_t)p * NB_PER_PEER + k) * NB_MAX_WORDS,
                                NB_MAX_WORDS, WEFT_UINT32, p, NB_TAG + k, world,
                                &rreq[p * NB_PER_PEER + k]));
    for (int d = 1; d < size; d++) {
        int p = (rank + d) % size;

        for (int k = 0; k < NB_PER_PEER; k++) {
            uint32_t *b = sbuf + ((size_t)p * NB_PER_PEER + k) * NB_MAX_WORDS;

            mp_fill(b, nb_words(k) * 4, nb_seed(rank, p, k));
            MP_CHECK(weft_isend(b, nb_words(k), WEFT_UINT32, p, NB_TAG + k, world,
                                &sreq[p * NB_PER_PEER + k]));
        }
    }

    /* weft_test over the receives from the first peers, until all done. */
    deadline = mp_now() + POLL_LIMIT_S;
    do {
        int progressed = 0;

        pending = 0;
        for (int d = 1; d < size; d++) {
            int p = (rank + d) % size;

            for (int k = 0; k < NB_POLLED; k++) {
                size_t i = (size_t)p * NB_PER_PEER + k;
                weft_status_t st;
                int done = 0;

                if (!rreq[i])
                    continue;
                MP_CHECK(weft_test(&rreq[i], &done, &st));
                if (!done) {
                    pending++;
                    continue;
                }
                progressed = 1;
                MP_ASSERT(rreq[i] == NULL, "weft_test done but the request is still set");
                check_status(&st, p, NB_TAG + k, nb_words(k), "polled receive");
            }
        }
        MP_ASSERT(mp_now() < deadline, "%zu polled receives not done after %.0f s", pending,
                  POLL_LIMIT_S);
        if (pending && !progressed)
            mp_sleep_us(50);
    } while (pending);

    /* weft_waitall over every receive: done ones are NULL by now and
     * complete at once. */
    MP_CHECK(weft_waitall((int)n, rreq, sts));
    for (int p = 0; p < size; p++)
        for (int k = 0; k < NB_PER_PEER && p != rank; k++) {
            size_t i = (size_t)p * NB_PER_PEER + k;
            char what[64];

            MP_ASSERT(rreq[i] == NULL, "weft_waitall left request %zu set", i);
            MP_ASSERT(sts[i].error == WEFT_SUCCESS, "receive %d from rank %d: status.error %s",
                      k, p, mp_rc_name(sts[i].error));
            if (k >= NB_POLLED)
                check_status(&sts[i], p, NB_TAG + k, nb_words(k), "receive through waitall");
            snprintf(what, sizeof(what), "message %d from rank %d", k, p);
            MP_CHECK_PATTERN(rbuf + i * NB_MAX_WORDS, nb_words(k) * 4, nb_seed(p, rank, k),
                             what);
        }
    MP_CHECK(weft_waitall((int)n, sreq, sts));
    for (size_t i = 0; i < n; i++)
        MP_ASSERT(sreq[i] == NULL && sts[i].error == WEFT_SUCCESS,
                  "send %zu: request %p, status.error %s", i, (void *)sreq[i],
                  mp_rc_name(sts[i].error));
    free(sts);
    free(rreq);
    free(sreq);
    free(rbuf);
    free(sbuf);
}

#define NB_TAG_FREE_DONE 200
#define NB_TAG_ACK 201
#define NB_TAG_LATE 202
#define NB_TAG_GO 203
#define NB_TAG_FREE_FLYING 204
#define NB_FLYING_BYTES (1u << 20)

void mp_p2p_nonblocking(weft_comm_t world, int rank, int size)
{
    int right = (rank + 1) % size, left = (rank + size - 1) % size;
    weft_request_t req = NULL, late = NULL, go_req = NULL;
    weft_status_t st;
    uint64_t v = 0, out = 0x5eed0000 + (uint64_t)rank, late_in = 0;
    uint64_t late_out = 0x1a7e0000 + (uint64_t)rank;
    unsigned char *flying = mp_alloc(NB_FLYING_BYTES), *in = mp_alloc(NB_FLYING_BYTES);
    unsigned char go = 1, ack = 0;
    int done = -1;

    nb_all_pairs(world, rank, size);

    /* A NULL request completes at once. */
    MP_CHECK(weft_wait(&req, &st));
    MP_ASSERT(st.count == 0, "weft_wait on NULL: status.count %zu", st.count);
    MP_CHECK(weft_test(&req, &done, NULL));
    MP_ASSERT(done == 1, "weft_test on NULL: done %d", done);

    /* weft_request_free of a send known to be complete: the right
     * neighbour acknowledged it. */
    MP_CHECK(weft_isend(&out, 1, WEFT_UINT64, right, NB_TAG_FREE_DONE, world, &req));
    MP_CHECK(weft_recv(&v, 1, WEFT_UINT64, left, NB_TAG_FREE_DONE, world, &st));
    MP_ASSERT(v == 0x5eed0000 + (uint64_t)left, "from rank %d: 0x%" PRIx64, left, v);
    /* Sends around the ring are nonblocking: blocking ones could all wait
     * for each other where the transport sends synchronously. */
    MP_CHECK(weft_isend(&go, 1, WEFT_UINT8, left, NB_TAG_ACK, world, &go_req));
    MP_CHECK(weft_recv(&ack, 1, WEFT_UINT8, right, NB_TAG_ACK, world, NULL));
    MP_CHECK(weft_wait(&go_req, NULL));
    MP_CHECK(weft_request_free(&req));
    MP_ASSERT(req == NULL, "weft_request_free left the request set");

    /* weft_request_free of a send still in flight: it completes anyway. */
    mp_fill(flying, NB_FLYING_BYTES, 4400 + (uint64_t)rank);
    MP_CHECK(weft_isend(flying, NB_FLYING_BYTES, WEFT_UINT8, right, NB_TAG_FREE_FLYING, world,
                        &req));
    MP_CHECK(weft_request_free(&req));
    MP_ASSERT(req == NULL, "weft_request_free left the request set");
    MP_CHECK(weft_recv(in, NB_FLYING_BYTES, WEFT_UINT8, left, NB_TAG_FREE_FLYING, world, &st));
    check_status(&st, left, NB_TAG_FREE_FLYING, NB_FLYING_BYTES, "freed send");
    MP_CHECK_PATTERN(in, NB_FLYING_BYTES, 4400 + (uint64_t)left, "message of a freed send");

    /* weft_test must not report a receive done before its message was
     * sent: the right neighbour sends only after our "go". */
    MP_CHECK(weft_irecv(&late_in, 1, WEFT_UINT64, right, NB_TAG_LATE, world, &late));
    for (int i = 0; i < 10; i++) {
        MP_CHECK(weft_test(&late, &done, &st));
        MP_ASSERT(!done, "weft_test reported a receive done before its message was sent");
    }
    MP_CHECK(weft_isend(&go, 1, WEFT_UINT8, right, NB_TAG_GO, world, &go_req));
    MP_CHECK(weft_recv(&ack, 1, WEFT_UINT8, left, NB_TAG_GO, world, NULL));
    MP_CHECK(weft_isend(&late_out, 1, WEFT_UINT64, left, NB_TAG_LATE, world, &req));
    test_until_done(&late, &st, "late receive");
    MP_CHECK(weft_wait(&req, NULL));
    check_status(&st, right, NB_TAG_LATE, 1, "late receive");
    MP_ASSERT(late_in == 0x1a7e0000 + (uint64_t)right, "late receive: 0x%" PRIx64, late_in);
    MP_CHECK(weft_wait(&go_req, NULL));

    /* The freed in-flight send's buffer stays valid until everyone has
     * received: only then free it. */
    mp_barrier(world);
    free(in);
    free(flying);
}
