/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * bootstrap.h: joining the job at weft_init.
 *
 * Runs the store server where this rank must host it (rank 0 of tcp:// and
 * env:// unless the launcher hosts it; rank 0 of file://, which publishes
 * the server's address in the file), connects to it, and performs the join:
 * every rank's blob (the core's address record) reaches every rank.
 */
#ifndef WEFT_CORE_BOOTSTRAP_H
#define WEFT_CORE_BOOTSTRAP_H

#include <stddef.h>

#include "core/boot/init_method.h"
#include "core/boot/store.h"

typedef struct weft__bootstrap {
    weft__boot_params_t params;
    weft__store_server_t *server; /* when this rank hosts the store */
    weft__store_t *store;         /* client connection, kept for later exchanges */
    char job_id[WEFT__JOB_ID_MAX];
    void *blobs;                  /* every rank's blob back to back */
    size_t *lens;                 /* size entries */
    size_t *offsets;              /* size entries */
} weft__bootstrap_t;

/* Joins with this rank's blob; on success *out holds everything above. */
weft_result_t weft__bootstrap_run(const weft__boot_params_t *params, const void *blob,
                                  size_t len, weft__bootstrap_t **out);
/* Rank r's blob. */
const void *weft__bootstrap_blob(const weft__bootstrap_t *b, int r, size_t *len);
/* Closes the store connection (and the server when hosted) and frees b. */
void weft__bootstrap_finalize(weft__bootstrap_t *b);

/* PMIx (bootstrap_pmix.c, only in builds with PMIx). probe initialises
 * PMIx once and gives this rank and the job size; exchange publishes blob
 * and fills b's records and job id (b->store stays NULL: there is no weft
 * store under PMIx); release drops the reference probe took. */
weft_result_t weft__pmix_probe(int *rank, int *size);
weft_result_t weft__pmix_exchange(const weft__boot_params_t *p, const void *blob, size_t len,
                                  weft__bootstrap_t *b);
void weft__pmix_release(void);
/* The out-of-band exchange where there is no weft store: put publishes
 * key (prefixed weft.oob.) for the whole job; get looks it up until it
 * exists or timeout_ms passes (WEFT_ERR_TIMEOUT naming the key;
 * WEFT_ERR_TRUNCATED when the value exceeds cap). */
weft_result_t weft__pmix_put(const char *key, const void *val, size_t len);
weft_result_t weft__pmix_get(const char *key, void *val, size_t cap, size_t *len,
                             int timeout_ms);

/* random_hex.c: 2 x nbytes (at most 32) random hex digits and a NUL in buf;
 * WEFT_ERR_SYSTEM naming purpose when the kernel gives no randomness. */
weft_result_t weft__boot_random_hex(char *buf, size_t nbytes, const char *purpose);

/* The caller's key-value store (bootstrap_kvs.c). exchange fills b's
 * records and job id from p->kvs (b->store stays NULL); put and get are
 * the out-of-band exchange through it, under the job's own prefix. */
weft_result_t weft__kvs_exchange(const weft__boot_params_t *p, const void *blob, size_t len,
                                 weft__bootstrap_t *b);
weft_result_t weft__kvs_put(const weft__bootstrap_t *b, const char *key, const void *val,
                            size_t len);
weft_result_t weft__kvs_get(const weft__bootstrap_t *b, const char *key, void *val, size_t cap,
                            size_t *len, int timeout_ms);

#endif /* WEFT_CORE_BOOTSTRAP_H */
