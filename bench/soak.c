/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * soak.c: the program behind bench/soak.sh. For SECONDS seconds every rank
 * runs the same random mix (one seed, so the ranks agree on it):
 * collectives of random kinds and sizes (8 B to 1 MiB) on the world and on
 * duplicates of it, several nonblocking ones in flight at once with
 * point-to-point under them, and communicators and 2-D meshes created,
 * used and destroyed. Each result is checked. Once a second every rank
 * samples its resident memory and open descriptors, and rank 0 counts
 * the job's entries in /dev/shm; rank 0 prints the job's id ("job <id>")
 * and one line per sample:
 *     sample <s> ops <n> rss_kib <r0> <r1> ... fds <f0> <f1> ... shm <k>
 *
 * Usage: weftrun -n N bench/soak SECONDS [SEED]
 */
#include "config.h"

#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "weft.h"

#define MAX_COUNT (256 * 1024)   /* int32 elements: 1 MiB */
#define INFLIGHT 4

#define CHECK(call)                                                               \
    do {                                                                          \
        weft_result_t rc_ = (call);                                               \
        if (rc_ != WEFT_SUCCESS) {                                                \
            fprintf(stderr, "soak: %s failed: %s\n", #call, weft_last_error());   \
            exit(1);                                                              \
        }                                                                         \
    } while (0)

static uint64_t state;

static uint32_t rnd(uint32_t n)
{
    state = state * 6364136223846793005ull + 1442695040888963407ull;
    return (uint32_t)(state >> 33) % n;
}

static double now_s(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static long rss_kib(void)
{
    long pages = 0, rss = 0;
    FILE *f = fopen("/proc/self/statm", "r");

    if (f) {
        if (fscanf(f, "%ld %ld", &pages, &rss) != 2)
            rss = 0;
        fclose(f);
    }
    return rss * (sysconf(_SC_PAGESIZE) / 1024);
}

static long count_entries(const char *path, const char *prefix, const char *prefix2)
{
    DIR *d = opendir(path);
    struct dirent *e;
    long n = 0;

    if (!d)
        return -1;
    while ((e = readdir(d)))
        if (e->d_name[0] != '.' && (!prefix || !strncmp(e->d_name, prefix, strlen(prefix)) ||
                                    (prefix2 && !strncmp(e->d_name, prefix2, strlen(prefix2)))))
            n++;
    closedir(d);
    return n;
}

/* This job's id, from the name of this rank's doorbell or shm segment in
 * /dev/shm (they end in its pid): weft-<job>-bell-<rank>-<pid> or
 * weft-shm-<job>-<rank>-<pid>. "" when there is none. */
static void own_job(char *job, size_t cap)
{
    DIR *d = opendir("/dev/shm");
    struct dirent *e;
    char tail[32];

    job[0] = '\0';
    snprintf(tail, sizeof(tail), "-%d", (int)getpid());
    while (d && (e = readdir(d))) {
        const char *name = e->d_name, *end;
        size_t len = strlen(name), tl = strlen(tail);

        if (strncmp(name, "weft-", 5) || len <= tl || strcmp(name + len - tl, tail))
            continue;
        if (!strncmp(name, "weft-shm-", 9)) {
            name += 9;
            end = name + len - 9 - tl;            /* at "-<pid>" */
            while (end > name && end[-1] != '-')  /* back over "<rank>" */
                end--;
            end--;
        } else {
            name += 5;
            end = strstr(name, "-bell-");
        }
        if (end && end > name && (size_t)(end - name) < cap) {
            memcpy(job, name, (size_t)(end - name));
            job[end - name] = '\0';
            break;
        }
    }
    if (d)
        closedir(d);
}

/* One collective of a random kind on comm (its rank me of n), started
 * nonblocking; what to check afterwards goes in *kind. */
static void start_one(weft_comm_t comm, int me, int n, int32_t *in, int32_t *out, size_t count,
                      int kind, weft_request_t *req)
{
    size_t blk = count / (size_t)n;

    for (size_t i = 0; i < count; i++)
        in[i] = me + (int32_t)(i % 5);
    switch (kind) {
    case 0: CHECK(weft_iallreduce(in, out, count, WEFT_INT32, WEFT_SUM, comm, req)); break;
    case 1:
        for (size_t i = 0; i < count; i++)
            out[i] = me == 0 ? (int32_t)(i % 5) : -1;
        CHECK(weft_ibroadcast(out, count, WEFT_INT32, 0, comm, req));
        break;
    case 2: CHECK(weft_iallgather(in, out, blk, WEFT_INT32, comm, req)); break;
    case 3: CHECK(weft_ireduce_scatter(in, out, blk, WEFT_INT32, WEFT_SUM, comm, req)); break;
    case 4: CHECK(weft_ialltoall(in, out, blk, WEFT_INT32, comm, req)); break;
    default: CHECK(weft_ibarrier(comm, req)); break;
    }
}

static void check_one(int me, int n, const int32_t *out, size_t count, int kind)
{
    size_t blk = count / (size_t)n;
    size_t len = kind == 0 || kind == 1 ? count : kind == 3 ? blk : kind == 5 ? 0 : blk * n;

    for (size_t i = 0; i < len; i++) {
        int32_t want;

        switch (kind) {
        case 0: want = n * (n - 1) / 2 + n * (int32_t)(i % 5); break;
        case 1: want = (int32_t)(i % 5); break;
        case 2: want = (int32_t)(i / blk) + (int32_t)(i % blk % 5); break;
        case 3: want = n * (n - 1) / 2 + n * (int32_t)(((size_t)me * blk + i) % 5); break;
        default: want = (int32_t)(i / blk) + (int32_t)(((size_t)me * blk + i % blk) % 5); break;
        }
        if (out[i] != want) {
            fprintf(stderr, "soak: rank %d: kind %d count %zu: element %zu is %d, not %d\n", me,
                    kind, count, i, (int)out[i], (int)want);
            exit(1);
        }
    }
}

int main(int argc, char **argv)
{
    double seconds = argc > 1 ? atof(argv[1]) : 600, start, next_sample;
    weft_comm_t world, dups[2];
    int me, n, sample = 0;
    long ops = 0;

    state = argc > 2 ? strtoull(argv[2], NULL, 0) : 20261127;
    CHECK(weft_init(NULL, &world));
    CHECK(weft_comm_rank(world, &me));
    CHECK(weft_comm_size(world, &n));
    for (int i = 0; i < 2; i++)
        CHECK(weft_comm_dup(world, &dups[i]));
    /* The job's own entries of /dev/shm, not those of other jobs. */
    char job[64], job_prefix[80], shm_prefix[80];

    own_job(job, sizeof(job));
    snprintf(job_prefix, sizeof(job_prefix), "weft-%s-", job);
    snprintf(shm_prefix, sizeof(shm_prefix), "weft-shm-%s-", job);
    if (me == 0)
        printf("job %s\n", job);

    int32_t *in[INFLIGHT], *out[INFLIGHT];
    long *all = malloc(2 * (size_t)n * sizeof(long));

    for (int i = 0; i < INFLIGHT; i++) {
        in[i] = malloc(MAX_COUNT * sizeof(int32_t));
        out[i] = malloc(MAX_COUNT * sizeof(int32_t));
        if (!in[i] || !out[i])
            return 1;
    }
    start = now_s();
    next_sample = start;
    for (;;) {
        /* Every rank decides from the same draws; the clock is rank 0's. */
        int32_t ctl[2] = { 0, 0 };   /* stop now, sample after this round */

        if (me == 0) {
            ctl[0] = now_s() - start >= seconds;
            ctl[1] = now_s() >= next_sample;
        }
        CHECK(weft_broadcast(ctl, 2, WEFT_INT32, 0, world));
        if (ctl[0])
            break;
        uint32_t what = rnd(100);

        if (what < 70) {
            /* 1 to INFLIGHT collectives at once on the world and its
             * duplicates, a ring exchange under them. */
            int k = 1 + (int)rnd(INFLIGHT), kinds[INFLIGHT];
            size_t counts[INFLIGHT];
            weft_request_t reqs[INFLIGHT + 2];
            int32_t token = me, got = -1;

            for (int i = 0; i < k; i++) {
                weft_comm_t c = i == 0 ? world : dups[(i - 1) % 2];

                kinds[i] = (int)rnd(6);
                /* 1 to 256 Ki elements, a whole number of blocks of n. */
                counts[i] = ((size_t)2 << rnd(18)) / 2;
                if (counts[i] > MAX_COUNT)
                    counts[i] = MAX_COUNT;
                counts[i] = counts[i] < (size_t)n ? (size_t)n : counts[i] / (size_t)n * (size_t)n;
                /* One operation per communicator at a time in this order. */
                if (i >= 3)
                    c = world;
                start_one(c, me, n, in[i], out[i], counts[i], kinds[i], &reqs[i]);
                if (i >= 2)
                    CHECK(weft_wait(&reqs[i], NULL));
            }
            CHECK(weft_irecv(&got, 1, WEFT_INT32, (me + n - 1) % n, 3, world, &reqs[k]));
            CHECK(weft_isend(&token, 1, WEFT_INT32, (me + 1) % n, 3, world, &reqs[k + 1]));
            for (int i = 0; i < k && i < 2; i++)
                CHECK(weft_wait(&reqs[i], NULL));
            CHECK(weft_wait(&reqs[k], NULL));
            CHECK(weft_wait(&reqs[k + 1], NULL));
            for (int i = 0; i < k; i++)
                check_one(me, n, out[i], counts[i], kinds[i]);
            if (got != (me + n - 1) % n) {
                fprintf(stderr, "soak: rank %d: ring got %d\n", me, (int)got);
                return 1;
            }
            ops += k + 2;
        } else if (what < 85) {
            /* A communicator of a split, used and destroyed. */
            weft_comm_t c;
            int cm, cn;
            int32_t v = 1, sum = 0;

            CHECK(weft_comm_split(world, me % 2, me, &c));
            CHECK(weft_comm_rank(c, &cm));
            CHECK(weft_comm_size(c, &cn));
            CHECK(weft_allreduce(&v, &sum, 1, WEFT_INT32, WEFT_SUM, c));
            if (sum != cn) {
                fprintf(stderr, "soak: rank %d: split allreduce %d, size %d\n", me, (int)sum, cn);
                return 1;
            }
            CHECK(weft_comm_destroy(c));
            ops += 2;
        } else if (n % 2 == 0 && what < 95) {
            /* A 2-D mesh, one allreduce along each dimension. */
            int shape[2] = { 2, n / 2 };
            const char *names[2] = { "dp", "tp" };
            weft_mesh_t mesh;

            CHECK(weft_mesh_create(world, 2, shape, names, &mesh));
            for (int d = 0; d < 2; d++) {
                weft_comm_t c;
                int32_t v = 1, sum = 0;

                CHECK(weft_mesh_comm(mesh, names[d], &c));
                CHECK(weft_allreduce(&v, &sum, 1, WEFT_INT32, WEFT_SUM, c));
                if (sum != shape[d]) {
                    fprintf(stderr, "soak: rank %d: mesh %s allreduce %d\n", me, names[d],
                            (int)sum);
                    return 1;
                }
            }
            CHECK(weft_mesh_destroy(mesh));
            ops += 3;
        } else {
            /* A duplicate replaced. */
            int i = (int)rnd(2);

            CHECK(weft_comm_destroy(dups[i]));
            CHECK(weft_comm_dup(world, &dups[i]));
            ops++;
        }
        if (!ctl[1])
            continue;
        /* A sample: every rank's memory and descriptors, to rank 0. */
        long mine[2] = { rss_kib(), count_entries("/proc/self/fd", NULL, NULL) };

        CHECK(weft_gather(mine, all, 2, WEFT_INT64, 0, world));
        if (me == 0) {
            printf("sample %d ops %ld rss_kib", sample, ops);
            for (int r = 0; r < n; r++)
                printf(" %ld", all[2 * r]);
            printf(" fds");
            for (int r = 0; r < n; r++)
                printf(" %ld", all[2 * r + 1]);
            printf(" shm %ld\n", count_entries("/dev/shm", job_prefix, shm_prefix));
            fflush(stdout);
            next_sample += 1.0;
        }
        sample++;
    }
    for (int i = 0; i < INFLIGHT; i++) {
        free(in[i]);
        free(out[i]);
    }
    free(all);
    for (int i = 0; i < 2; i++)
        CHECK(weft_comm_destroy(dups[i]));
    CHECK(weft_comm_destroy(world));
    return 0;
}
