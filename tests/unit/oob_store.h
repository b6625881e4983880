/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * oob_store.h: an in-process stand-in for the core's out-of-band store
 * (weft_transport_core_t.oob_put / oob_get), for unit tests that run
 * several ranks of a transport in one process (oob_store.c).
 */
#ifndef WEFT_TESTS_UNIT_OOB_STORE_H
#define WEFT_TESTS_UNIT_OOB_STORE_H

#include <stddef.h>

#include "weft.h"

/* Sets key to len bytes of val (a key set again is replaced). */
weft_result_t oob_store_put(void *core_ctx, const char *key, const void *val, size_t len);
/* The value of key: WEFT_ERR_TIMEOUT at once when it is not set,
 * WEFT_ERR_TRUNCATED when it is longer than cap. */
weft_result_t oob_store_get(void *core_ctx, const char *key, void *val, size_t cap,
                            size_t *len, int timeout_ms);
/* Forgets every key, for the next test's ranks. */
void oob_store_clear(void);

#endif /* WEFT_TESTS_UNIT_OOB_STORE_H */
