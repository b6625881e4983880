/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * mp_fault.c: the program of the fault campaign (tests/faults/campaign.sh).
 * Every rank runs one kind of operation over and over, sizes cycling from
 * 8 bytes to 256 KiB, each result checked, until an operation fails;
 * meanwhile the campaign kills a rank (SIGKILL), stops one (SIGSTOP), or
 * takes a host's link down, or the victim itself calls weft_comm_abort in
 * the middle of a nonblocking operation (FAULT_ABORT_AT=<iteration>).
 *
 * Each rank that sees a failure writes $FAULT_DIR/out.<rank>:
 *     <error name> <CLOCK_REALTIME ms> <weft_last_error()>
 * and exits with status 3. A wrong result is "WRONG"; no failure within
 * FAULT_SECONDS (default 60) is "NOERROR". SIGTERM (weftrun stopping the
 * job after the first failure) is ignored, so that every survivor gets
 * to see its own error; the campaign gives weftrun a long --kill-grace.
 * Rank 0 writes $FAULT_DIR/ready once every rank has run one operation.
 *
 * Usage: mp_fault p2p|barrier|broadcast|reduce|allreduce|gather|scatter|allgather|
 *                 allgatherv|reduce_scatter|alltoall|alltoallv|scan
 */
#include "config.h"

#include <dirent.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "tests/mp/mptest.h"

#define MAX_BYTES (256 * 1024)
#define MAX_RANKS 64

static const char *dir;
static int me, n;
/* The v-forms' counts and displacements (elements), n entries. */
static size_t vcounts[MAX_RANKS], vdispls[MAX_RANKS];

static long long realtime_ms(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_REALTIME, &ts);
    return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* When the operation under way started (realtime_ms). */
static long long op_started;

/* out.<rank>: "WHAT WHEN STARTED DETAIL", WHEN the time of the outcome and
 * STARTED that of the operation it ended: a rank that lags behind the
 * others meets a fault only when it reaches the operation it broke, and
 * its deadline runs from there. */
static void record(const char *what, const char *detail)
{
    char path[4096], tmp[4200];
    FILE *f;

    snprintf(path, sizeof(path), "%s/out.%d", dir, me);
    snprintf(tmp, sizeof(tmp), "%s.tmp", path);
    if (!(f = fopen(tmp, "w")))
        exit(4);
    fprintf(f, "%s %lld %lld %s\n", what, realtime_ms(), op_started, detail);
    fclose(f);
    rename(tmp, path);
}

static weft_result_t start(const char *kind, weft_comm_t w, int32_t *in, int32_t *out,
                           size_t count, weft_request_t *req)
{
    if (!strcmp(kind, "barrier"))
        return weft_ibarrier(w, req);
    if (!strcmp(kind, "broadcast"))
        return weft_ibroadcast(out, count, WEFT_INT32, 0, w, req);
    if (!strcmp(kind, "allreduce"))
        return weft_iallreduce(in, out, count, WEFT_INT32, WEFT_SUM, w, req);
    if (!strcmp(kind, "allgather"))
        return weft_iallgather(in, out, count / (size_t)n, WEFT_INT32, w, req);
    if (!strcmp(kind, "reduce_scatter"))
        return weft_ireduce_scatter(in, out, count / (size_t)n, WEFT_INT32, WEFT_SUM, w, req);
    if (!strcmp(kind, "alltoall"))
        return weft_ialltoall(in, out, count / (size_t)n, WEFT_INT32, w, req);
    if (!strcmp(kind, "reduce"))
        return weft_ireduce(in, out, count, WEFT_INT32, WEFT_SUM, 0, w, req);
    if (!strcmp(kind, "gather"))
        return weft_igather(in, out, count / (size_t)n, WEFT_INT32, 0, w, req);
    if (!strcmp(kind, "scatter"))
        return weft_iscatter(in, out, count / (size_t)n, WEFT_INT32, 0, w, req);
    if (!strcmp(kind, "scan"))
        return weft_iscan(in, out, count, WEFT_INT32, WEFT_SUM, w, req);
    /* The v-forms with even counts: the same results as the even forms. */
    for (int q = 0; q < n; q++) {
        vcounts[q] = count / (size_t)n;
        vdispls[q] = (size_t)q * (count / (size_t)n);
    }
    if (!strcmp(kind, "allgatherv"))
        return weft_iallgatherv(in, count / (size_t)n, out, vcounts, vdispls, WEFT_INT32, w,
                                req);
    if (!strcmp(kind, "alltoallv"))
        return weft_ialltoallv(in, vcounts, vdispls, out, vcounts, vdispls, WEFT_INT32, w, req);
    /* p2p: a ring, one message each way. */
    weft_p2p_op_t ops[2] = {
        { .kind = WEFT_P2P_SEND, .buf = in, .count = count, .dt = WEFT_INT32,
          .peer = (me + 1) % n, .tag = 5 },
        { .kind = WEFT_P2P_RECV, .buf = out, .count = count, .dt = WEFT_INT32,
          .peer = (me + n - 1) % n, .tag = 5 },
    };
    return weft_batch_isend_irecv(2, ops, w, req);
}

/* Whether out holds what kind gives for inputs in[i] = rank + it + i % 7. */
static int correct(const char *kind, const int32_t *out, size_t count, int it)
{
    size_t blk = count / (size_t)n;

    for (size_t i = 0; i < count; i++) {
        int32_t want;

        if (!strcmp(kind, "barrier") || (me != 0 && (!strcmp(kind, "reduce") ||
                                                     !strcmp(kind, "gather"))))
            return 1;
        if (!strcmp(kind, "allgatherv"))
            kind = "allgather";
        else if (!strcmp(kind, "alltoallv"))
            kind = "alltoall";
        else if (!strcmp(kind, "reduce"))
            kind = "allreduce";
        else if (!strcmp(kind, "gather"))
            kind = "allgather";
        if (!strcmp(kind, "scatter")) {
            if (i >= blk)
                break;
            /* Block me of rank 0's input. */
            want = it + (int32_t)(((size_t)me * blk + i) % 7);
        } else if (!strcmp(kind, "scan")) {
            want = me * (me + 1) / 2 + (me + 1) * (it + (int32_t)(i % 7));
        } else if (!strcmp(kind, "broadcast"))
            want = it + (int32_t)(i % 7);
        else if (!strcmp(kind, "allreduce"))
            want = n * (n - 1) / 2 + n * (it + (int32_t)(i % 7));
        else if (!strcmp(kind, "allgather")) {
            if (i >= blk * (size_t)n)
                break;
            want = (int32_t)(i / blk) + it + (int32_t)(i % blk % 7);
        } else if (!strcmp(kind, "reduce_scatter")) {
            if (i >= blk)
                break;
            size_t at = (size_t)me * blk + i;

            want = n * (n - 1) / 2 + n * (it + (int32_t)(at % 7));
        } else if (!strcmp(kind, "alltoall")) {
            if (i >= blk * (size_t)n)
                break;
            /* Block q came from rank q: its input's block me. */
            size_t at = (size_t)me * blk + i % blk;

            want = (int32_t)(i / blk) + it + (int32_t)(at % 7);
        } else {
            want = (me + n - 1) % n + it + (int32_t)(i % 7);
        }
        if (out[i] != want)
            return 0;
    }
    return 1;
}

int main(int argc, char **argv)
{
    const char *kind = argc > 1 ? argv[1] : "allreduce";
    const char *abort_at = getenv("FAULT_ABORT_AT"), *secs = getenv("FAULT_SECONDS");
    int abort_it = abort_at ? atoi(abort_at) : -1;
    int victim = getenv("FAULT_VICTIM") ? atoi(getenv("FAULT_VICTIM")) : -1;
    long long end;
    weft_comm_t w;
    weft_result_t rc0;

    if (!(dir = getenv("FAULT_DIR")))
        MP_FAIL("FAULT_DIR is not set");
    signal(SIGTERM, SIG_IGN);
    op_started = realtime_ms();
    rc0 = weft_init(NULL, &w);
    if (rc0 != WEFT_SUCCESS) {
        /* A rank still joining when the fault came (a victim that ran
         * ahead, its sends completing eagerly, aborted meanwhile): its
         * outcome counts like any other. weftrun gives it RANK. */
        me = getenv("RANK") ? atoi(getenv("RANK")) : -1;
        record(mp_rc_name(rc0), weft_last_error());
        exit(3);
    }
    MP_CHECK(weft_comm_rank(w, &me));
    MP_CHECK(weft_comm_size(w, &n));
    mp_rank = me;
    mp_size = n;
    if (n > MAX_RANKS)
        MP_FAIL("mp_fault runs at up to %d ranks", MAX_RANKS);
    {
        char path[4096];
        FILE *f;

        snprintf(path, sizeof(path), "%s/pid.%d", dir, me);
        if ((f = fopen(path, "w"))) {
            fprintf(f, "%d\n", (int)getpid());
            fclose(f);
        }
        /* The name of this rank's doorbell or shm segment (they end in its
         * pid): the campaign learns the job's id from it, to look for
         * what the job leaves in /dev/shm. */
        DIR *d = opendir("/dev/shm");
        struct dirent *e;
        char tail[32];

        snprintf(tail, sizeof(tail), "-%d", (int)getpid());
        while (d && (e = readdir(d))) {
            size_t len = strlen(e->d_name), tl = strlen(tail);

            if (!strncmp(e->d_name, "weft-", 5) && len > tl &&
                !strcmp(e->d_name + len - tl, tail)) {
                snprintf(path, sizeof(path), "%s/shmname.%d", dir, me);
                if ((f = fopen(path, "w"))) {
                    fprintf(f, "%s\n", e->d_name);
                    fclose(f);
                }
                break;
            }
        }
        if (d)
            closedir(d);
    }
    end = realtime_ms() + 1000LL * (secs ? atoi(secs) : 60);

    int32_t *in = mp_alloc(MAX_BYTES), *out = mp_alloc(MAX_BYTES);

    for (int it = 0;; it++) {
        size_t count = ((size_t)8 << (it % 16)) / sizeof(int32_t);
        weft_request_t req;
        weft_result_t rc;

        if (count > MAX_BYTES / sizeof(int32_t))
            count = MAX_BYTES / sizeof(int32_t);
        count = (count / (size_t)n) * (size_t)n;
        if (count == 0)
            count = (size_t)n;
        for (size_t i = 0; i < count; i++) {
            in[i] = me + it + (int32_t)(i % 7);
            out[i] = me == 0 && !strcmp(kind, "broadcast") ? it + (int32_t)(i % 7) : -1;
        }
        if (!strcmp(kind, "alltoall"))
            for (size_t i = 0; i < count; i++)
                in[i] = me + it + (int32_t)(i % 7);
        op_started = realtime_ms();
        rc = start(kind, w, in, out, count, &req);
        if (rc == WEFT_SUCCESS && me == victim && it == abort_it) {
            /* In the middle of the operation: posted, not waited for. */
            rc = weft_comm_abort(w);
            if (rc == WEFT_SUCCESS)
                rc = weft_wait(&req, NULL);
            record(mp_rc_name(rc == WEFT_SUCCESS ? WEFT_ERR_INTERNAL : rc), "the victim's own");
            exit(3);
        }
        if (rc == WEFT_SUCCESS)
            rc = weft_wait(&req, NULL);
        if (rc != WEFT_SUCCESS) {
            record(mp_rc_name(rc), weft_last_error());
            exit(3);
        }
        if (!correct(kind, out, count, it)) {
            record("WRONG", kind);
            exit(3);
        }
        if (it == 0 && me == 0) {
            char path[4096];
            FILE *f;

            snprintf(path, sizeof(path), "%s/ready", dir);
            if ((f = fopen(path, "w")))
                fclose(f);
        }
        if (realtime_ms() > end) {
            record("NOERROR", "no operation failed");
            exit(3);
        }
    }
}
