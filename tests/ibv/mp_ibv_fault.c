/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * mp_ibv_fault.c: weft over ib-verbs while the software RDMA device
 * injects a fault into one rank (tests/swrdma/fault.c).
 *
 *   mp_ibv_fault fail      every rank must end with a named error (not
 *                          success) well within WEFT_TIMEOUT, never hang
 *   mp_ibv_fault survive   every round must succeed with the right data
 *
 * The fault: MP_FAULT (a WEFT_SWRDMA_FAULTS list) for the rank MP_FAULT_RANK
 * (default the last), set before weft_init from weftrun's RANK, so one
 * spec gives one rank its fault. A round is a 1 MiB allreduce (the
 * rendezvous path), a 64 KiB message around the ring, and an 8-byte
 * allreduce (the eager path), each checked against what it must give.
 * In fail mode the rounds go on for at most MP_FAULT_SECONDS (default
 * 30); a rank that finishes them all without an error fails the test (the
 * fault did nothing). A rank that got its error says which, after how
 * long and why (weft_last_error), destroys its communicator, and exits 0:
 * its peers then see it leave, which is also a named error. With
 * MP_FAULT_EXPECT=NAME (WEFT_ERR_PEER_LOST), that must be the error: the
 * transport noticed the fault itself, before WEFT_TIMEOUT ran out.
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/mp/mptest.h"

#define FT_BIG (256u << 10)            /* floats in the large allreduce */
#define FT_RING (64u << 10)            /* bytes around the ring */
#define FT_TAG 41
#define FT_SURVIVE_ROUNDS 40

static int env_int(const char *name, int dflt)
{
    const char *v = getenv(name);

    return v && v[0] ? atoi(v) : dflt;
}

/* Gives this rank its fault, if it is the one. */
static void arm_fault(void)
{
    const char *fault = getenv("MP_FAULT");
    int rank = env_int("RANK", -1), size = env_int("WORLD_SIZE", 0);
    int victim = env_int("MP_FAULT_RANK", size - 1);

    if (!fault || !fault[0])
        MP_FAIL("MP_FAULT is not set: the spec names the fault");
    if (rank < 0 || size < 1)
        MP_FAIL("RANK and WORLD_SIZE are not set: run this under weftrun");
    if (rank == victim && setenv("WEFT_SWRDMA_FAULTS", fault, 1) != 0)
        MP_FAIL("setenv WEFT_SWRDMA_FAULTS failed");
}

/* One round; the first failing call's result, WEFT_SUCCESS otherwise. A
 * wrong answer fails the test at once: a fault may stop weft, never
 * make it lie. */
static weft_result_t round_once(weft_comm_t world, int rank, int size, int round,
                                float *big, unsigned char *out, unsigned char *in)
{
    int next = (rank + 1) % size, prev = (rank + size - 1) % size;
    weft_request_t req = NULL;
    weft_result_t rc;
    int64_t small, want_small = 0;
    float want = 0;

    for (size_t i = 0; i < FT_BIG; i++)
        big[i] = (float)((rank + 1) * (round + 1) + (int)(i % 7));
    rc = weft_allreduce(WEFT_IN_PLACE, big, FT_BIG, WEFT_FLOAT32, WEFT_SUM, world);
    if (rc != WEFT_SUCCESS)
        return rc;
    for (size_t i = 0; i < FT_BIG; i += 4093) {
        want = (float)((size * (size + 1) / 2) * (round + 1) + size * (int)(i % 7));
        MP_ASSERT(big[i] == want, "round %d: allreduce element %zu is %g, not %g", round, i,
                  (double)big[i], (double)want);
    }
    if (size > 1) {
        mp_fill(out, FT_RING, (uint64_t)rank * 7919 + (uint64_t)round);
        rc = weft_irecv(in, FT_RING, WEFT_UINT8, prev, FT_TAG, world, &req);
        if (rc == WEFT_SUCCESS)
            rc = weft_send(out, FT_RING, WEFT_UINT8, next, FT_TAG, world);
        if (rc == WEFT_SUCCESS)
            rc = weft_wait(&req, NULL);
        if (rc != WEFT_SUCCESS) {
            if (req)
                weft_request_free(&req);
            return rc;
        }
        MP_CHECK_PATTERN(in, FT_RING, (uint64_t)prev * 7919 + (uint64_t)round, "ring message");
    }
    small = rank + round;
    rc = weft_allreduce(WEFT_IN_PLACE, &small, 1, WEFT_INT64, WEFT_SUM, world);
    if (rc != WEFT_SUCCESS)
        return rc;
    for (int r = 0; r < size; r++)
        want_small += r + round;
    MP_ASSERT(small == want_small, "round %d: small allreduce gave %lld, not %lld", round,
              (long long)small, (long long)want_small);
    return WEFT_SUCCESS;
}

int main(int argc, char **argv)
{
    weft_comm_t world = NULL;
    int rank, size, fail_mode, rounds = 0;
    double t0, limit;
    float *big;
    unsigned char *out, *in;
    weft_result_t rc = WEFT_SUCCESS;

    if (argc != 2 || (strcmp(argv[1], "fail") != 0 && strcmp(argv[1], "survive") != 0)) {
        fprintf(stderr, "usage: mp_ibv_fault fail|survive   (under weftrun, MP_FAULT set)\n");
        return 2;
    }
    fail_mode = strcmp(argv[1], "fail") == 0;
    arm_fault();
    MP_CHECK(weft_init(NULL, &world));
    MP_CHECK(weft_comm_rank(world, &rank));
    MP_CHECK(weft_comm_size(world, &size));
    mp_rank = rank;
    mp_size = size;
    big = mp_alloc(FT_BIG * sizeof(float));
    out = mp_alloc(FT_RING);
    in = mp_alloc(FT_RING);
    limit = env_int("MP_FAULT_SECONDS", 30);
    t0 = mp_now();
    for (;;) {
        if (!fail_mode && rounds == FT_SURVIVE_ROUNDS)
            break;
        if (fail_mode && mp_now() - t0 > limit)
            MP_FAIL("%d rounds in %.0f s without an error: the fault did nothing", rounds,
                    limit);
        rc = round_once(world, rank, size, rounds, big, out, in);
        if (rc != WEFT_SUCCESS)
            break;
        rounds++;
    }
    if (fail_mode) {
        const char *why = weft_last_error();

        const char *expect = getenv("MP_FAULT_EXPECT");

        MP_ASSERT(why[0] != '\0', "%s after %d rounds with no weft_last_error",
                  mp_rc_name(rc), rounds);
        MP_ASSERT(!expect || !expect[0] || (int)rc == mp_rc_from_name(expect),
                  "%s (%s) after %d rounds, %.2f s, where the fault should give %s",
                  mp_rc_name(rc), why, rounds, mp_now() - t0, expect);
        mp_log("named error after %d rounds, %.2f s: %s: %s", rounds, mp_now() - t0,
               mp_rc_name(rc), why);
        weft_comm_destroy(world);
    } else {
        if (rc != WEFT_SUCCESS)
            mp_fail_rc(__FILE__, __LINE__, "round", rc);
        mp_log("%d rounds right in %.2f s", rounds, mp_now() - t0);
        MP_CHECK(weft_comm_destroy(world));
    }
    free(big);
    free(out);
    free(in);
    return 0;
}
