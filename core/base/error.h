/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * error.h: the thread-local text behind weft_last_error().
 *
 * Set it where a failure is first known, with the real cause, and return
 * the result code; callers only propagate. weft__error() does both:
 *
 *     if (count > max)
 *         return weft__error(WEFT_ERR_INVALID_ARG, "count %zu exceeds %zu", count, max);
 */
#ifndef WEFT_CORE_ERROR_H
#define WEFT_CORE_ERROR_H

#include <stdarg.h>

#include "weft.h"

weft_result_t weft__error(weft_result_t rc, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
void weft__set_error_v(const char *fmt, va_list ap);
void weft__set_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void weft__clear_error(void);
/* The current text, for wrapping it in a longer message. */
const char *weft__get_error(void);

#endif /* WEFT_CORE_ERROR_H */
