/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * outoftree_job.c: the job tests/plugins/outoftree.sh runs through a copy
 * of the example transport built against the installed weft. It is
 * compiled there with the installed headers and libweft only.
 *
 * One rank, since the example reaches only its own rank: every message
 * goes to itself. Sends come before their receives, so the transport's
 * unexpected queue is used; the receives then pick messages out of
 * arrival order by tag, from any source with any tag, and one too small
 * for its message must end with WEFT_ERR_TRUNCATED.
 *
 * Exit status 0 when every check passed; each failure says what differed.
 */
#include <stdio.h>
#include <string.h>

#include <weft.h>

#define TAG_FIRST 7
#define TAG_SECOND 8
#define TAG_LONG 9

static int failures;

static void check(int ok, const char *what)
{
    printf("outoftree_job: %s: %s\n", ok ? "ok" : "FAIL", what);
    failures += !ok;
}

static int weft_failed(const char *call, weft_result_t rc)
{
    fprintf(stderr, "outoftree_job: %s: %s: %s\n", call, weft_strerror(rc),
            weft_last_error());
    return 1;
}

int main(void)
{
    const char first[] = "first", second[] = "second", longer[] = "sixteen bytes...";
    char got[32], small[8];
    weft_request_t sends[3];
    weft_status_t st;
    weft_comm_t world;
    weft_result_t rc;
    int rank, size;

    rc = weft_init(NULL, &world);
    if (rc != WEFT_SUCCESS)
        return weft_failed("weft_init", rc);
    weft_comm_rank(world, &rank);
    weft_comm_size(world, &size);
    if (size != 1) {
        fprintf(stderr, "outoftree_job: run one rank (weftrun -n 1), not %d\n", size);
        weft_comm_destroy(world);
        return 1;
    }

    rc = weft_isend(first, sizeof(first), WEFT_UINT8, 0, TAG_FIRST, world, &sends[0]);
    if (rc == WEFT_SUCCESS)
        rc = weft_isend(second, sizeof(second), WEFT_UINT8, 0, TAG_SECOND, world, &sends[1]);
    if (rc == WEFT_SUCCESS)
        rc = weft_isend(longer, sizeof(longer), WEFT_UINT8, 0, TAG_LONG, world, &sends[2]);
    if (rc != WEFT_SUCCESS)
        return weft_failed("weft_isend", rc);

    /* The second message first: matching is by tag, not by arrival. */
    memset(got, 0, sizeof(got));
    rc = weft_recv(got, sizeof(got), WEFT_UINT8, 0, TAG_SECOND, world, &st);
    if (rc != WEFT_SUCCESS)
        return weft_failed("weft_recv", rc);
    check(!strcmp(got, second) && st.count == sizeof(second) && st.tag == TAG_SECOND,
          "receive by tag, out of arrival order");

    memset(got, 0, sizeof(got));
    rc = weft_recv(got, sizeof(got), WEFT_UINT8, WEFT_ANY_SOURCE, WEFT_ANY_TAG, world, &st);
    if (rc != WEFT_SUCCESS)
        return weft_failed("weft_recv (any source, any tag)", rc);
    check(!strcmp(got, first) && st.source == 0 && st.tag == TAG_FIRST,
          "receive from any source with any tag");

    memset(small, 0, sizeof(small));
    rc = weft_recv(small, sizeof(small), WEFT_UINT8, 0, TAG_LONG, world, &st);
    check(rc == WEFT_ERR_TRUNCATED && !memcmp(small, longer, sizeof(small)),
          "a receive shorter than its message is truncated");

    rc = weft_waitall(3, sends, NULL);
    check(rc == WEFT_SUCCESS, "the sends completed");

    rc = weft_comm_destroy(world);
    check(rc == WEFT_SUCCESS, "weft_comm_destroy");
    return failures ? 1 : 0;
}
