/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * fuzz_tp.c: the core the transport harnesses give their plugin (see
 * fuzz_tp.h).
 */
#include "config.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "tests/fuzz/fuzz.h"
#include "tests/fuzz/fuzz_tp.h"

char fuzz_tp_last_error[1024];

void fuzz_tp_log(int level, const char *plugin, const char *fmt, ...)
{
    va_list ap;

    if (!getenv("WEFT_DEBUG"))
        return;
    va_start(ap, fmt);
    fprintf(stderr, "[%s %d] ", plugin, level);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
}

void fuzz_tp_set_error(const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(fuzz_tp_last_error, sizeof(fuzz_tp_last_error), fmt, ap);
    va_end(ap);
}

int64_t fuzz_tp_now_ms(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

void fuzz_tp_post(const weft_transport_v1_t *t, void *ctx, fuzz_tp_posted_t *p, size_t n,
                  unsigned char canary)
{
    for (size_t i = 0; i < n; i++, p++) {
        p->buf = malloc(p->cap ? p->cap : 1);
        FUZZ_REQUIRE(p->buf != NULL, "out of memory");
        memset(p->buf, canary, p->cap);
        p->req = NULL;
        FUZZ_REQUIRE(t->irecv(ctx, p->peer, p->buf, p->cap, p->tag, p->ignore, NULL,
                              &p->req) == WEFT_SUCCESS, "irecv: %s", fuzz_tp_last_error);
    }
}
