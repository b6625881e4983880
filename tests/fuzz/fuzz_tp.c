/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * fuzz_tp.c: the core the transport harnesses give their plugin (see
 * fuzz_tp.h).
 */
#include "config.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

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
