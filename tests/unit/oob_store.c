/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * oob_store.c: the unit tests' in-process out-of-band store (oob_store.h).
 */
#include "config.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "tests/unit/oob_store.h"

struct kv {
    char key[200];
    unsigned char val[4096];
    size_t len;
};

static struct kv store[256];
static int nstore;

weft_result_t oob_store_put(void *core_ctx, const char *key, const void *val, size_t len)
{
    struct kv *e = NULL;

    (void)core_ctx;
    for (int i = 0; i < nstore && !e; i++)
        if (!strcmp(store[i].key, key))
            e = &store[i];
    if (!e) {
        assert_true(nstore < 256);
        e = &store[nstore++];
    }
    assert_true(len <= sizeof(e->val));
    snprintf(e->key, sizeof(e->key), "%s", key);
    memcpy(e->val, val, len);
    e->len = len;
    return WEFT_SUCCESS;
}

weft_result_t oob_store_get(void *core_ctx, const char *key, void *val, size_t cap,
                            size_t *len, int timeout_ms)
{
    (void)core_ctx;
    (void)timeout_ms;
    for (int i = 0; i < nstore; i++)
        if (!strcmp(store[i].key, key)) {
            if (store[i].len > cap)
                return WEFT_ERR_TRUNCATED;
            memcpy(val, store[i].val, store[i].len);
            *len = store[i].len;
            return WEFT_SUCCESS;
        }
    return WEFT_ERR_TIMEOUT;
}

void oob_store_clear(void)
{
    nstore = 0;
}
