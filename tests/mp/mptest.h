/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * mptest.h: what the multi-process test programs share. They use only
 * the public API (weft.h), like any program linked with libweft.
 *
 * Failing: every helper that fails prints "[rank R] file:line: ..." with the
 * result code's name and weft_last_error() to stderr and exits 1, so that
 * weftrun stops the job and the test fails; a test that cannot run at this
 * rank count exits 77 (automake's skip), which weftrun passes on.
 */
#ifndef WEFT_TESTS_MP_MPTEST_H
#define WEFT_TESTS_MP_MPTEST_H

#include <stddef.h>
#include <stdint.h>

#include <weft.h>

#define MP_EXIT_FAIL 1
#define MP_EXIT_SKIP 77

/* The tag of mp_barrier's messages; tests use tags below it. */
#define MP_TAG_BARRIER WEFT_TAG_MAX

/* This process's rank and the job's size once known (-1 before), for the
 * prefix of messages. */
extern int mp_rank;
extern int mp_size;

/* "WEFT_ERR_TIMEOUT" for WEFT_ERR_TIMEOUT, "WEFT_?" for unknown values. */
const char *mp_rc_name(weft_result_t rc);
/* The code named name ("WEFT_ERR_BOOTSTRAP"), or -1. */
int mp_rc_from_name(const char *name);

#if defined(__GNUC__)
#define MP_PRINTF(a, b) __attribute__((format(printf, a, b)))
#define MP_NORETURN __attribute__((noreturn))
#else
#define MP_PRINTF(a, b)
#define MP_NORETURN
#endif

void mp_fail(const char *file, int line, const char *fmt, ...) MP_PRINTF(3, 4) MP_NORETURN;
/* A weft call returned rc where success was expected. */
void mp_fail_rc(const char *file, int line, const char *call, weft_result_t rc) MP_NORETURN;
void mp_skip(const char *fmt, ...) MP_PRINTF(1, 2) MP_NORETURN;
void mp_log(const char *fmt, ...) MP_PRINTF(1, 2);

#define MP_FAIL(...) mp_fail(__FILE__, __LINE__, __VA_ARGS__)
#define MP_CHECK(call)                                         \
    do {                                                       \
        weft_result_t mp_rc_ = (call);                         \
        if (mp_rc_ != WEFT_SUCCESS)                            \
            mp_fail_rc(__FILE__, __LINE__, #call, mp_rc_);     \
    } while (0)
#define MP_ASSERT(cond, ...)                                   \
    do {                                                       \
        if (!(cond))                                           \
            mp_fail(__FILE__, __LINE__, __VA_ARGS__);          \
    } while (0)

/* malloc that fails the test instead of returning NULL. */
void *mp_alloc(size_t bytes);

/* A cheap, position-dependent pattern: two different seeds or a shifted
 * block give different bytes, so misplaced or stale data is caught. */
void mp_fill(void *buf, size_t bytes, uint64_t seed);
/* Offset of the first byte that differs from the pattern, or bytes. */
size_t mp_find_mismatch(const void *buf, size_t bytes, uint64_t seed);
/* Fails naming what and the first wrong offset unless buf holds the pattern. */
void mp_check_pattern(const char *file, int line, const void *buf, size_t bytes,
                      uint64_t seed, const char *what);
#define MP_CHECK_PATTERN(buf, bytes, seed, what) \
    mp_check_pattern(__FILE__, __LINE__, buf, bytes, seed, what)

/* Seconds on the monotonic clock. */
double mp_now(void);
/* Sleeps for us microseconds (polling loops must not burn a core). */
void mp_sleep_us(long us);

/* Sends to dest and receives from src at once (isend, recv, wait), which is
 * safe with any protocol and when dest or src is this rank. */
void mp_sendrecv(const void *sbuf, size_t scount, weft_dtype_t dt, int dest, int stag,
                 void *rbuf, size_t rcount, int src, int rtag, weft_comm_t comm,
                 weft_status_t *status);

/* Every rank of comm waits until every rank called it. Its messages use
 * MP_TAG_BARRIER and rank 0 sends first, so wildcard receives that rank 0
 * finished before its call never match them; other ranks must not have
 * wildcard receives pending when rank 0 enters. */
void mp_barrier(weft_comm_t comm);

/* weft_init from the environment (what weftrun sets), then this rank and
 * the size of the world into mp_rank, mp_size and *me, *n (either may be
 * NULL). */
void mp_init_world(weft_comm_t *world, int *me, int *n);

/* Case-insensitive: does text contain word? */
int mp_contains(const char *text, const char *word);

#endif /* WEFT_TESTS_MP_MPTEST_H */
