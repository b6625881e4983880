/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * bootstrap_kvs.c: joining through the caller's key-value store
 * (weft_init_attr_t.kvs), such as torch.distributed's c10d store, so that
 * weft opens no rendezvous of its own and never competes for its port.
 *
 * Keys:
 *   weft/job                  the job id, written by rank 0
 *   weft/<job>/addr/<rank>    each rank's address record
 *   weft/<job>/oob/<key>      the plugins' out-of-band values
 * The job id is random, so everything after it is this job's alone; the
 * first key is not, which is why a store must not serve two weft_init
 * calls (torch gives each process group a store of its own prefix).
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/base/error.h"
#include "core/boot/bootstrap.h"

#define KVS_JOB_KEY "weft/job"
#define KVS_KEY_MAX 512

/* A job id as rank 0 wrote it: hex digits only (it names /dev/shm files). */
static int job_id_ok(const char *id, size_t len)
{
    if (len == 0 || len >= WEFT__JOB_ID_MAX)
        return 0;
    for (size_t i = 0; i < len; i++)
        if (!((id[i] >= '0' && id[i] <= '9') || (id[i] >= 'a' && id[i] <= 'f')))
            return 0;
    return 1;
}

/* get, its failure named with the key (the caller's callbacks return a
 * code only: they cannot set weft's error text). */
static weft_result_t kvs_get(const weft_kvs_t *kvs, const char *key, void *val, size_t cap,
                             size_t *len, int timeout_ms, const char *what)
{
    weft_result_t rc;

    *len = 0;
    rc = kvs->get(kvs->ctx, key, val, cap, len, timeout_ms);
    if (rc == WEFT_SUCCESS || rc == WEFT_ERR_TRUNCATED)
        return rc;
    if (rc == WEFT_ERR_TIMEOUT)
        return weft__error(rc, "%s (key %s) did not appear in the caller's store within %d ms",
                           what, key, timeout_ms);
    return weft__error(rc, "the caller's store failed to give %s (key %s): %s", what, key,
                       weft_strerror(rc));
}

static weft_result_t kvs_set(const weft_kvs_t *kvs, const char *key, const void *val,
                             size_t len, const char *what)
{
    weft_result_t rc;

    rc = kvs->set(kvs->ctx, key, val, len);
    if (rc != WEFT_SUCCESS)
        return weft__error(rc, "the caller's store refused %s (key %s): %s", what, key,
                           weft_strerror(rc));
    return WEFT_SUCCESS;
}

/* Rank r's record, whatever its length, appended to b->blobs. guess: its
 * likely length (this rank's own: the ranks of a job load much the same
 * transports); a longer one is read again whole, with the length the
 * store gave. */
static weft_result_t take_record(const weft__boot_params_t *p, weft__bootstrap_t *b, int r,
                                 size_t guess, size_t *total)
{
    char key[KVS_KEY_MAX], what[64];
    size_t cap = guess ? guess : 1, len;
    weft_result_t rc;

    snprintf(key, sizeof(key), "weft/%s/addr/%d", b->job_id, r);
    snprintf(what, sizeof(what), "rank %d's address record", r);
    for (;;) {
        char *grown = realloc(b->blobs, *total + cap);

        if (!grown)
            return weft__error(WEFT_ERR_NO_MEMORY, "cannot store the address records");
        b->blobs = grown;
        rc = kvs_get(&p->kvs, key, grown + *total, cap, &len, p->timeout_ms, what);
        if (rc == WEFT_ERR_TRUNCATED && len > cap) {
            cap = len;
            continue;
        }
        if (rc == WEFT_ERR_TRUNCATED)
            return weft__error(WEFT_ERR_BOOTSTRAP, "the caller's store said %s is truncated "
                               "but gave its length as %zu, within the %zu bytes offered",
                               what, len, cap);
        if (rc != WEFT_SUCCESS)
            return rc;
        if (len > cap)
            return weft__error(WEFT_ERR_BOOTSTRAP, "the caller's store gave %s as %zu bytes "
                               "into a buffer of %zu", what, len, cap);
        b->offsets[r] = *total;
        b->lens[r] = len;
        *total += len;
        return WEFT_SUCCESS;
    }
}

weft_result_t weft__kvs_exchange(const weft__boot_params_t *p, const void *blob, size_t len,
                                 weft__bootstrap_t *b)
{
    char key[KVS_KEY_MAX];
    size_t got, total = 0;
    weft_result_t rc;

    if (p->rank == 0) {
        rc = weft__boot_random_hex(b->job_id, 8, "the job id");
        if (rc == WEFT_SUCCESS)
            rc = kvs_set(&p->kvs, KVS_JOB_KEY, b->job_id, strlen(b->job_id), "the job id");
    } else {
        rc = kvs_get(&p->kvs, KVS_JOB_KEY, b->job_id, sizeof(b->job_id) - 1, &got,
                     p->timeout_ms, "the job id from rank 0");
        if (rc == WEFT_SUCCESS && !job_id_ok(b->job_id, got))
            rc = weft__error(WEFT_ERR_BOOTSTRAP, "the caller's store holds no job id of weft's "
                             "at %s (%zu bytes): was it used by another weft_init?",
                             KVS_JOB_KEY, got);
        else if (rc == WEFT_ERR_TRUNCATED)
            rc = weft__error(WEFT_ERR_BOOTSTRAP, "the value at %s is longer than a job id of "
                             "weft's: was the caller's store used by another weft_init?",
                             KVS_JOB_KEY);
        if (rc == WEFT_SUCCESS)
            b->job_id[got] = '\0';
    }
    if (rc != WEFT_SUCCESS)
        return rc;
    snprintf(key, sizeof(key), "weft/%s/addr/%d", b->job_id, p->rank);
    if ((rc = kvs_set(&p->kvs, key, blob, len, "this rank's address record")) != WEFT_SUCCESS)
        return rc;

    b->lens = calloc((size_t)p->size, sizeof(size_t));
    b->offsets = calloc((size_t)p->size, sizeof(size_t));
    if (!b->lens || !b->offsets)
        return weft__error(WEFT_ERR_NO_MEMORY, "cannot allocate %d address records", p->size);
    for (int r = 0; r < p->size; r++)
        if ((rc = take_record(p, b, r, len, &total)) != WEFT_SUCCESS)
            return rc;
    return WEFT_SUCCESS;
}

static weft_result_t oob_key(const weft__bootstrap_t *b, const char *key, char *out,
                             size_t cap)
{
    if (!key || !*key || (size_t)snprintf(out, cap, "weft/%s/oob/%s", b->job_id, key) >= cap)
        return weft__error(WEFT_ERR_INVALID_ARG, "out-of-band key '%.64s%s' is empty or too "
                           "long", key ? key : "", key && strlen(key) > 64 ? "..." : "");
    return WEFT_SUCCESS;
}

weft_result_t weft__kvs_put(const weft__bootstrap_t *b, const char *key, const void *val,
                            size_t len)
{
    char full[KVS_KEY_MAX];
    weft_result_t rc = oob_key(b, key, full, sizeof(full));

    return rc != WEFT_SUCCESS ? rc : kvs_set(&b->params.kvs, full, val, len,
                                             "an out-of-band value");
}

weft_result_t weft__kvs_get(const weft__bootstrap_t *b, const char *key, void *val, size_t cap,
                            size_t *len, int timeout_ms)
{
    char full[KVS_KEY_MAX];
    weft_result_t rc = oob_key(b, key, full, sizeof(full));

    if (rc != WEFT_SUCCESS)
        return rc;
    rc = kvs_get(&b->params.kvs, full, val, cap, len, timeout_ms, "an out-of-band value");
    if (rc == WEFT_ERR_TRUNCATED)
        return weft__error(rc, "out-of-band key '%s' holds %zu bytes, more than the %zu "
                           "asked for", key, *len, cap);
    return rc;
}
