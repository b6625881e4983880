/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * store.h: the TCP rendezvous store.
 *
 * One process of the job (rank 0, or the launcher weftrun) runs the server
 * in a thread; every rank connects as a client. Every connection starts with
 * a hello frame carrying the job's token (WEFT_AUTH_TOKEN, "" when the job
 * has none); the server drops connections with another token. Every frame is
 * length-checked against hard limits (see frame.h) before anything is
 * allocated. IPv4 and IPv6 both work; host names are resolved.
 *
 * Thread safety: a server handle belongs to the thread that started it; a
 * client handle may be used from several threads (calls are serialised).
 *
 * A get or barrier that times out is withdrawn at the store, so the
 * connection stays usable; a connection that failed is reopened by the
 * next call.
 */
#ifndef WEFT_CORE_STORE_H
#define WEFT_CORE_STORE_H

#include <stddef.h>

#include "weft.h"

#define WEFT__JOB_ID_MAX 40   /* bytes of a job id, with its terminating NUL */
#define WEFT__STORE_KEY_MAX 256
#define WEFT__STORE_VALUE_MAX (1u << 20)
#define WEFT__STORE_MAX_RANKS (1 << 20) /* the largest world the store serves */

typedef struct weft__store_server weft__store_server_t;
typedef struct weft__store weft__store_t;

/* Starts a server thread listening on host:port. host NULL or "" listens on
 * every address (IPv6 and IPv4); port 0 picks a free port (see
 * weft__store_server_port). expected_size is the job's world size when the
 * host knows it (weftrun), or -1 to take the first joiner's. job_id NULL
 * makes a random one. */
weft_result_t weft__store_server_start(const char *host, int port, const char *token,
                                       int expected_size, const char *job_id,
                                       weft__store_server_t **out);
int weft__store_server_port(const weft__store_server_t *srv);
const char *weft__store_server_job_id(const weft__store_server_t *srv);
/* Stops the thread, closes every connection, frees srv. NULL is a no-op. */
void weft__store_server_stop(weft__store_server_t *srv);

/* Connects to the server, retrying until timeout_ms passes (the server may
 * not be up yet); then authenticates with token. */
weft_result_t weft__store_connect(const char *host, int port, const char *token,
                                  int timeout_ms, weft__store_t **out);

/* The rendezvous of weft_init: blocks until size distinct ranks joined with
 * this same size, then gives every rank's blob in rank order: *blobs is one
 * malloc'd buffer holding them back to back, *lens a malloc'd array of size
 * lengths (free both). job_id receives the job's id.
 *   WEFT_ERR_TIMEOUT: not all arrived in time; the message names the ranks
 *     that never arrived (asked from the server; a rank that came and gave
 *     up is not among them) or says the server itself was unreachable.
 *   WEFT_ERR_BOOTSTRAP: a rank with another world size or a duplicate rank
 *     number joined; every rank waiting in join gets it, with a message
 *     naming the offending rank, host and pid. */
weft_result_t weft__store_join(weft__store_t *st, int rank, int size, const void *blob,
                               size_t len, int timeout_ms, char job_id[WEFT__JOB_ID_MAX],
                               void **blobs, size_t **lens);

/* Key-value access. get blocks until the key exists or timeout_ms passes
 * (WEFT_ERR_TIMEOUT naming the key; WEFT_ERR_TRUNCATED when the value
 * exceeds cap). Keys are shorter than WEFT__STORE_KEY_MAX, values at most
 * WEFT__STORE_VALUE_MAX bytes (else WEFT_ERR_INVALID_ARG). */
weft_result_t weft__store_set(weft__store_t *st, const char *key, const void *val, size_t len);
weft_result_t weft__store_get(weft__store_t *st, const char *key, void *val, size_t cap,
                              size_t *len, int timeout_ms);
/* Returns once n clients entered the barrier called name (the name can
 * be used again afterwards). WEFT_ERR_MISMATCH when another client waits
 * there for a different n. */
weft_result_t weft__store_barrier(weft__store_t *st, const char *name, int n, int timeout_ms);
/* How long a join that timed out still listens for the store's own verdict
 * (the store's host tells waiting ranks who is missing when it gives up);
 * 0 for the rank that hosts the store. */
void weft__store_set_grace(weft__store_t *st, int ms);
/* Closes the connection and frees st. NULL is a no-op. */
void weft__store_close(weft__store_t *st);

#endif /* WEFT_CORE_STORE_H */
