/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * error.c: result-code text and the thread-local last-error detail.
 */
#include "config.h"

#include <stdio.h>
#include <string.h>

#include "core/base/error.h"

#define WEFT_ERROR_TEXT_MAX 1024

static __thread char last_error[WEFT_ERROR_TEXT_MAX];

WEFT_API const char *weft_strerror(weft_result_t rc)
{
    switch (rc) {
    case WEFT_SUCCESS: return "success";
    case WEFT_ERR_INVALID_ARG: return "invalid argument";
    case WEFT_ERR_NO_MEMORY: return "out of memory";
    case WEFT_ERR_UNSUPPORTED: return "not supported";
    case WEFT_ERR_TIMEOUT: return "timed out";
    case WEFT_ERR_PEER_LOST: return "peer lost";
    case WEFT_ERR_ABORTED: return "aborted";
    case WEFT_ERR_TRUNCATED: return "message truncated";
    case WEFT_ERR_MISMATCH: return "arguments differ between ranks";
    case WEFT_ERR_BOOTSTRAP: return "bootstrap failed";
    case WEFT_ERR_PLUGIN: return "transport plugin error";
    case WEFT_ERR_SYSTEM: return "system call failed";
    case WEFT_ERR_INTERNAL: return "internal error";
    }
    return "unknown result code";
}

WEFT_API const char *weft_last_error(void)
{
    return last_error;
}

void weft__set_error_v(const char *fmt, va_list ap)
{
    char text[WEFT_ERROR_TEXT_MAX];

    /* Through a copy: callers wrap the current text in a longer one by
     * passing weft__get_error() as an argument. */
    vsnprintf(text, sizeof(text), fmt, ap);
    memcpy(last_error, text, sizeof(last_error));
}

void weft__set_error(const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    weft__set_error_v(fmt, ap);
    va_end(ap);
}

weft_result_t weft__error(weft_result_t rc, const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    weft__set_error_v(fmt, ap);
    va_end(ap);
    return rc;
}

void weft__clear_error(void)
{
    last_error[0] = '\0';
}

const char *weft__get_error(void)
{
    return last_error;
}
