/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * mptest.c: failure reporting, patterns, clock and the point-to-point
 * barrier shared by the multi-process test programs.
 */
#include "config.h"

#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "tests/mp/mptest.h"

/* Simulated nodes on one machine, for the node-aware collectives: before
 * main() runs (and so before weft_init), MP_FAKE_NODES=K puts rank r on
 * node r mod K (nodes of scattered ranks), MP_FAKE_NODE_SIZE=K on node
 * r / K (consecutive ranks, the last node possibly smaller), by setting
 * WEFT_HOSTID from the RANK that weftrun gives. */
__attribute__((constructor)) static void mp_fake_nodes(void)
{
    const char *mod = getenv("MP_FAKE_NODES"), *size = getenv("MP_FAKE_NODE_SIZE");
    const char *rank = getenv("RANK");
    char id[64];
    int r, k;

    if (!rank || (!mod && !size))
        return;
    r = atoi(rank);
    k = atoi(mod ? mod : size);
    if (k <= 0)
        return;
    snprintf(id, sizeof(id), "mp-fake-node-%d", mod ? r % k : r / k);
    setenv("WEFT_HOSTID", id, 1);
}

int mp_rank = -1;
int mp_size = -1;

static const char *const rc_names[] = {
    [WEFT_SUCCESS] = "WEFT_SUCCESS",
    [WEFT_ERR_INVALID_ARG] = "WEFT_ERR_INVALID_ARG",
    [WEFT_ERR_NO_MEMORY] = "WEFT_ERR_NO_MEMORY",
    [WEFT_ERR_UNSUPPORTED] = "WEFT_ERR_UNSUPPORTED",
    [WEFT_ERR_TIMEOUT] = "WEFT_ERR_TIMEOUT",
    [WEFT_ERR_PEER_LOST] = "WEFT_ERR_PEER_LOST",
    [WEFT_ERR_ABORTED] = "WEFT_ERR_ABORTED",
    [WEFT_ERR_TRUNCATED] = "WEFT_ERR_TRUNCATED",
    [WEFT_ERR_MISMATCH] = "WEFT_ERR_MISMATCH",
    [WEFT_ERR_BOOTSTRAP] = "WEFT_ERR_BOOTSTRAP",
    [WEFT_ERR_PLUGIN] = "WEFT_ERR_PLUGIN",
    [WEFT_ERR_SYSTEM] = "WEFT_ERR_SYSTEM",
    [WEFT_ERR_INTERNAL] = "WEFT_ERR_INTERNAL",
};

#define NRC ((int)(sizeof(rc_names) / sizeof(rc_names[0])))

const char *mp_rc_name(weft_result_t rc)
{
    if ((int)rc < 0 || (int)rc >= NRC || !rc_names[rc])
        return "WEFT_?";
    return rc_names[rc];
}

int mp_rc_from_name(const char *name)
{
    for (int i = 0; i < NRC; i++)
        if (rc_names[i] && strcmp(rc_names[i], name) == 0)
            return i;
    return -1;
}

static void vreport(const char *file, int line, const char *fmt, va_list ap)
{
    char text[2048];

    vsnprintf(text, sizeof(text), fmt, ap);
    if (file)
        fprintf(stderr, "[rank %d] %s:%d: %s\n", mp_rank, file, line, text);
    else
        fprintf(stderr, "[rank %d] %s\n", mp_rank, text);
    fflush(stderr);
}

void mp_fail(const char *file, int line, const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    vreport(file, line, fmt, ap);
    va_end(ap);
    fflush(stdout);
    exit(MP_EXIT_FAIL);
}

void mp_fail_rc(const char *file, int line, const char *call, weft_result_t rc)
{
    /* Copied first: the next weft call may replace it. */
    char detail[1024];

    snprintf(detail, sizeof(detail), "%s", weft_last_error());
    mp_fail(file, line, "%s failed: %s (%s): %s", call, mp_rc_name(rc), weft_strerror(rc),
            detail[0] ? detail : "(weft_last_error() is empty)");
}

void mp_skip(const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    fputs("SKIP: ", stdout);
    vprintf(fmt, ap);
    fputc('\n', stdout);
    va_end(ap);
    fflush(stdout);
    exit(MP_EXIT_SKIP);
}

void mp_log(const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    vfprintf(stdout, fmt, ap);
    fputc('\n', stdout);
    va_end(ap);
    fflush(stdout);
}

void *mp_alloc(size_t bytes)
{
    void *p = malloc(bytes ? bytes : 1);

    if (!p)
        MP_FAIL("malloc(%zu): %s", bytes, strerror(errno));
    return p;
}

/* splitmix64's finaliser: every bit of seed and index spreads over the
 * word, at a few cycles per 8 bytes (256 MiB take a fraction of a second). */
static uint64_t pattern_word(uint64_t seed, uint64_t index)
{
    uint64_t x = seed * 0x9e3779b97f4a7c15ull + index + 1;

    x ^= x >> 30;
    x *= 0xbf58476d1ce4e5b9ull;
    x ^= x >> 27;
    x *= 0x94d049bb133111ebull;
    x ^= x >> 31;
    return x;
}

void mp_fill(void *buf, size_t bytes, uint64_t seed)
{
    unsigned char *p = buf;
    size_t words = bytes / 8, i;

    for (i = 0; i < words; i++) {
        uint64_t w = pattern_word(seed, i);

        memcpy(p + 8 * i, &w, 8);
    }
    if (bytes % 8) {
        uint64_t w = pattern_word(seed, words);

        memcpy(p + 8 * words, &w, bytes % 8);
    }
}

size_t mp_find_mismatch(const void *buf, size_t bytes, uint64_t seed)
{
    const unsigned char *p = buf;
    size_t words = (bytes + 7) / 8;

    for (size_t i = 0; i < words; i++) {
        uint64_t w = pattern_word(seed, i);
        size_t n = bytes - 8 * i < 8 ? bytes - 8 * i : 8;
        unsigned char want[8];

        memcpy(want, &w, 8);
        if (memcmp(p + 8 * i, want, n) == 0)
            continue;
        for (size_t b = 0; b < n; b++)
            if (p[8 * i + b] != want[b])
                return 8 * i + b;
    }
    return bytes;
}

void mp_check_pattern(const char *file, int line, const void *buf, size_t bytes,
                      uint64_t seed, const char *what)
{
    size_t bad = mp_find_mismatch(buf, bytes, seed);

    if (bad < bytes)
        mp_fail(file, line, "%s: wrong data at byte %zu of %zu (got 0x%02x)", what, bad, bytes,
                ((const unsigned char *)buf)[bad]);
}

double mp_now(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

void mp_sleep_us(long us)
{
    struct timespec ts = { us / 1000000, (us % 1000000) * 1000 };

    while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
        ;
}

void mp_sendrecv(const void *sbuf, size_t scount, weft_dtype_t dt, int dest, int stag,
                 void *rbuf, size_t rcount, int src, int rtag, weft_comm_t comm,
                 weft_status_t *status)
{
    weft_request_t sreq = NULL;

    MP_CHECK(weft_isend(sbuf, scount, dt, dest, stag, comm, &sreq));
    MP_CHECK(weft_recv(rbuf, rcount, dt, src, rtag, comm, status));
    MP_CHECK(weft_wait(&sreq, NULL));
    MP_ASSERT(sreq == NULL, "weft_wait left the request set");
}

/* Three rounds through rank 0: "go" out, "here" in, "leave" out. Nobody
 * leaves before everybody arrived, and rank 0 sends first, so no barrier
 * message reaches rank 0 before it entered. */
void mp_barrier(weft_comm_t comm)
{
    int rank, size;
    unsigned char b = 0;

    MP_CHECK(weft_comm_rank(comm, &rank));
    MP_CHECK(weft_comm_size(comm, &size));
    if (rank == 0) {
        for (int r = 1; r < size; r++)
            MP_CHECK(weft_send(&b, 1, WEFT_UINT8, r, MP_TAG_BARRIER, comm));
        for (int r = 1; r < size; r++)
            MP_CHECK(weft_recv(&b, 1, WEFT_UINT8, r, MP_TAG_BARRIER, comm, NULL));
        for (int r = 1; r < size; r++)
            MP_CHECK(weft_send(&b, 1, WEFT_UINT8, r, MP_TAG_BARRIER, comm));
    } else {
        MP_CHECK(weft_recv(&b, 1, WEFT_UINT8, 0, MP_TAG_BARRIER, comm, NULL));
        MP_CHECK(weft_send(&b, 1, WEFT_UINT8, 0, MP_TAG_BARRIER, comm));
        MP_CHECK(weft_recv(&b, 1, WEFT_UINT8, 0, MP_TAG_BARRIER, comm, NULL));
    }
}

int mp_contains(const char *text, const char *word)
{
    size_t n = strlen(word);

    for (; *text; text++) {
        size_t i = 0;

        while (i < n && text[i] &&
               tolower((unsigned char)text[i]) == tolower((unsigned char)word[i]))
            i++;
        if (i == n)
            return 1;
    }
    return n == 0;
}

void mp_init_world(weft_comm_t *world, int *me, int *n)
{
    MP_CHECK(weft_init(NULL, world));
    MP_CHECK(weft_comm_rank(*world, &mp_rank));
    MP_CHECK(weft_comm_size(*world, &mp_size));
    if (me)
        *me = mp_rank;
    if (n)
        *n = mp_size;
}
