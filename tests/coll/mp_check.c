/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * mp_check.c: WEFT_CHECK=1 (run with it set in the environment). Ranks
 * that call a collective with different arguments all get
 * WEFT_ERR_MISMATCH, with a message naming what differs, instead of
 * hanging or corrupting memory; the communicator stays usable, and calls
 * whose arguments agree still give the right results.
 */
#include "config.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/mp/mptest.h"

static int cases;

/* Whether the message names fn ("weft_allreduce:") exactly once. */
static int named_once(const char *msg, const char *fn)
{
    const char *at = strstr(msg, fn);

    return at && !strstr(at + strlen(fn), fn);
}

/* rc must be WEFT_ERR_MISMATCH, the message must name the call once and
 * contain each of words (NULL-terminated), in the API's terms: "passed op
 * WEFT_MAX", not "operator 3". */
static void expect_mismatch_in(const char *what, weft_result_t rc, const char *fn, ...)
{
    va_list ap;

    MP_ASSERT(rc == WEFT_ERR_MISMATCH, "%s: got %s, want WEFT_ERR_MISMATCH (%s)", what,
              mp_rc_name(rc), weft_last_error());
    MP_ASSERT(named_once(weft_last_error(), fn), "%s: message '%s' does not name %s exactly "
              "once", what, weft_last_error(), fn);
    va_start(ap, fn);
    for (const char *word = va_arg(ap, const char *); word; word = va_arg(ap, const char *))
        MP_ASSERT(strstr(weft_last_error(), word), "%s: message '%s' lacks '%s'", what,
                  weft_last_error(), word);
    va_end(ap);
    cases++;
}

/* rc must be WEFT_ERR_MISMATCH and the message must contain word. */
static void expect_mismatch(const char *what, weft_result_t rc, const char *word)
{
    MP_ASSERT(rc == WEFT_ERR_MISMATCH, "%s: got %s, want WEFT_ERR_MISMATCH (%s)", what,
              mp_rc_name(rc), weft_last_error());
    MP_ASSERT(mp_contains(weft_last_error(), "WEFT_CHECK"), "%s: message '%s' does not say "
              "WEFT_CHECK", what, weft_last_error());
    if (word)
        MP_ASSERT(mp_contains(weft_last_error(), word), "%s: message '%s' lacks '%s'", what,
                  weft_last_error(), word);
    cases++;
}

/* A correct allreduce, to show the communicator still works. */
static void still_works(weft_comm_t w, int me, int n)
{
    int64_t x = me + 1, sum = 0;

    MP_CHECK(weft_allreduce(&x, &sum, 1, WEFT_INT64, WEFT_SUM, w));
    MP_ASSERT(sum == (int64_t)n * (n + 1) / 2, "allreduce after a mismatch gave %lld",
              (long long)sum);
}

int main(void)
{
    weft_comm_t w;
    int me, n, last;
    int32_t buf[64] = { 0 }, out[64 * 8] = { 0 };
    size_t counts[8], displs[8];

    if (!getenv("WEFT_CHECK"))
        mp_skip("run with WEFT_CHECK=1");
    mp_init_world(&w, &me, &n);
    if (n < 2 || n > 8)
        mp_skip("needs 2 to 8 ranks");
    last = n - 1;

    /* Different counts. */
    expect_mismatch_in("allreduce count", weft_allreduce(buf, out, me == last ? 5 : 4,
                                                         WEFT_INT32, WEFT_SUM, w),
                       "weft_allreduce:", "WEFT_CHECK", "passed count ", NULL);
    still_works(w, me, n);
    /* Different types, operators, roots, named as the header spells them. */
    expect_mismatch_in("allreduce dtype", weft_allreduce(buf, out, 4,
                                                         me ? WEFT_INT32 : WEFT_UINT32,
                                                         WEFT_SUM, w),
                       "weft_allreduce:", "passed dt WEFT_", "WEFT_INT32", "WEFT_UINT32", NULL);
    expect_mismatch_in("allreduce op", weft_allreduce(buf, out, 4, WEFT_INT32,
                                                      me == last ? WEFT_MAX : WEFT_SUM, w),
                       "weft_allreduce:", "passed op WEFT_", "WEFT_MAX", "WEFT_SUM", NULL);
    expect_mismatch_in("broadcast root", weft_broadcast(buf, 4, WEFT_INT32, me == 1 ? 1 : 0, w),
                       "weft_broadcast:", "passed root ", NULL);
    /* Different operations altogether. */
    expect_mismatch_in("barrier vs allreduce",
                       me == last ? weft_barrier(w)
                                  : weft_allreduce(buf, out, 4, WEFT_INT32, WEFT_SUM, w),
                       me == last ? "weft_barrier:" : "weft_allreduce:", "called weft_",
                       "weft_barrier", "weft_allreduce", NULL);
    still_works(w, me, n);
    /* A gatherv whose root expects another count than a rank sends: only
     * the root can see it, and every rank must still fail. */
    for (int i = 0; i < n; i++) {
        counts[i] = 2;
        displs[i] = (size_t)i * 2;
    }
    if (me == 0)
        counts[last] = 3;
    expect_mismatch("gatherv counts", weft_gatherv(buf, 2, out, counts, displs, WEFT_INT32, 0, w),
                    NULL);
    /* allgatherv with different counts arrays. */
    counts[last] = me == 1 ? 3 : 2;
    expect_mismatch("allgatherv counts", weft_allgatherv(buf, counts[me], out, counts, displs,
                                                         WEFT_INT32, w), NULL);
    /* Nonblocking: the mismatch shows at completion. */
    {
        weft_request_t req = NULL;

        MP_CHECK(weft_ireduce(buf, out, me == 0 ? 3 : 4, WEFT_INT32, WEFT_SUM, 0, w, &req));
        expect_mismatch_in("ireduce count", weft_wait(&req, NULL), "weft_reduce:",
                           "passed count ", NULL);
    }
    still_works(w, me, n);
    /* Agreeing arguments pass the check and give the right result. */
    for (int i = 0; i < n; i++)
        counts[i] = 2;
    buf[0] = me;
    buf[1] = 10 * me;
    MP_CHECK(weft_allgatherv(buf, 2, out, counts, displs, WEFT_INT32, w));
    for (int i = 0; i < n; i++)
        MP_ASSERT(out[2 * i] == i && out[2 * i + 1] == 10 * i, "allgatherv block %d", i);
    cases++;
    if (me == 0)
        printf("WEFT_CHECK: %d cases passed at %d ranks\n", cases, n);
    MP_CHECK(weft_comm_destroy(w));
    return 0;
}
