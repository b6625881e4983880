/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * bootstrap.c: joining the job at weft_init.
 *
 * file:// rendezvous: rank 0 hosts a store on a free port and publishes
 * one line in the file,
 *
 *     weft-store 2 <host> <port> <token or -> <nonce>
 *
 * written to a temporary file (mode 0600: the token is a secret) and
 * renamed over the path, so readers see all of it or nothing. The nonce
 * (the store's job id) tells one publication from the next: a file left by
 * an earlier job names a store that is gone or refuses us, and readers
 * keep polling until a new one replaces it.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/boot/bootstrap.h"
#include "core/base/error.h"
#include "core/boot/frame.h"
#include "core/base/log.h"

#define FILE_POLL_MS 50
/* A store that refused us is tried again only after this long, unless the
 * file names another one meanwhile. */
#define FILE_STALE_RETRY_MS 1000
#define FILE_CONNECT_MS 500

struct published {
    char host[256];
    int port;
    char token[WEFT__FRAME_HOST_MAX];
    char nonce[WEFT__JOB_ID_MAX];
};

static weft_result_t file_publish(const char *path, const struct published *pub)
{
    char tmp[4200];
    FILE *f;
    int fd, ok;

    snprintf(tmp, sizeof(tmp), "%s.tmp.%d", path, (int)getpid());
    fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (fd < 0)
        return weft__error(WEFT_ERR_BOOTSTRAP, "file:// rendezvous: cannot create %s: %m", tmp);
    f = fdopen(fd, "w");
    if (!f) {
        close(fd);
        unlink(tmp);
        return weft__error(WEFT_ERR_SYSTEM, "file:// rendezvous: fdopen %s: %m", tmp);
    }
    ok = fprintf(f, "weft-store 2 %s %d %s %s\n", pub->host, pub->port,
                 pub->token[0] ? pub->token : "-", pub->nonce) > 0;
    ok &= fflush(f) == 0;
    if (fclose(f) != 0 || !ok || rename(tmp, path) != 0) {
        int err = errno;

        unlink(tmp);
        return weft__error(WEFT_ERR_BOOTSTRAP, "file:// rendezvous: cannot write %s: %s", path,
                           strerror(err));
    }
    return WEFT_SUCCESS;
}

/* 1 when path holds a whole, well-formed publication. */
static int file_read(const char *path, struct published *pub)
{
    char line[1024], tok[WEFT__FRAME_HOST_MAX];
    FILE *f = fopen(path, "re");
    int ok;

    if (!f)
        return 0;
    ok = fgets(line, sizeof(line), f) &&
         sscanf(line, "weft-store 2 %255s %d %255s %39s", pub->host, &pub->port, tok,
                pub->nonce) == 4 &&
         pub->port > 0 && pub->port < 65536;
    fclose(f);
    if (ok)
        snprintf(pub->token, sizeof(pub->token), "%s", strcmp(tok, "-") ? tok : "");
    return ok;
}

/* Rank 0's way out: the file must not send later readers to a store that
 * is gone, unless it already names another job's. */
static void file_withdraw(const char *path, const char *nonce)
{
    struct published now;

    if (file_read(path, &now) && !strcmp(now.nonce, nonce))
        unlink(path);
}

/* Ranks other than 0 wait for the file and retry until a store there
 * accepts them. */
static weft_result_t file_connect(const weft__boot_params_t *p, weft__store_t **out)
{
    int64_t deadline = weft__frame_clock_ms() + p->timeout_ms, refused_at = 0;
    char refused[WEFT__JOB_ID_MAX] = "", why[512] = "";
    struct published pub;

    for (;;) {
        int64_t now = weft__frame_clock_ms();

        if (now >= deadline)
            break;
        if (file_read(p->path, &pub) &&
            (strcmp(pub.nonce, refused) || now - refused_at >= FILE_STALE_RETRY_MS)) {
            int left = (int)(deadline - now);

            if (weft__store_connect(pub.host, pub.port, p->token[0] ? p->token : pub.token,
                                    left < FILE_CONNECT_MS ? left : FILE_CONNECT_MS, out) ==
                WEFT_SUCCESS)
                return WEFT_SUCCESS;
            WEFT_INFO(INIT, "file:// rendezvous: the store %s names (%s port %d) does not take "
                      "us (an earlier job's?): %s", p->path, pub.host, pub.port,
                      weft__get_error());
            snprintf(why, sizeof(why), "%s", weft__get_error());
            snprintf(refused, sizeof(refused), "%s", pub.nonce);
            refused_at = weft__frame_clock_ms();
            continue;
        }
        poll(NULL, 0, FILE_POLL_MS);
    }
    if (why[0])
        return weft__error(WEFT_ERR_TIMEOUT, "file:// rendezvous: within %d ms, %s named no "
                           "store that accepted this rank (rank 0 never arrived, and the file "
                           "is an earlier job's?); last attempt: %s", p->timeout_ms, p->path,
                           why);
    return weft__error(WEFT_ERR_TIMEOUT, "file:// rendezvous: %s did not appear within %d ms "
                       "(rank 0 never arrived?)", p->path, p->timeout_ms);
}

/* Rank 0 of file://: a store on a free port of every address, published. */
static weft_result_t file_host(const weft__boot_params_t *p, weft__bootstrap_t *b,
                               struct published *pub)
{
    weft_result_t rc;

    if (p->token[0]) {
        snprintf(pub->token, sizeof(pub->token), "%s", p->token);
    } else {
        rc = weft__boot_random_hex(pub->token, 16, "the token of the file:// rendezvous; "
                                   "or set WEFT_AUTH_TOKEN");
        if (rc != WEFT_SUCCESS)
            return rc;
    }
    if (gethostname(pub->host, sizeof(pub->host)) != 0 || !pub->host[0])
        snprintf(pub->host, sizeof(pub->host), "localhost");
    pub->host[sizeof(pub->host) - 1] = '\0';
    rc = weft__store_server_start(NULL, 0, pub->token, p->size, NULL, &b->server);
    if (rc != WEFT_SUCCESS)
        return rc;
    pub->port = weft__store_server_port(b->server);
    snprintf(pub->nonce, sizeof(pub->nonce), "%s", weft__store_server_job_id(b->server));
    rc = file_publish(p->path, pub);
    if (rc != WEFT_SUCCESS) {
        pub->nonce[0] = '\0'; /* nothing of ours to withdraw */
        return rc;
    }
    return weft__store_connect("localhost", pub->port, pub->token, p->timeout_ms, &b->store);
}

weft_result_t weft__bootstrap_run(const weft__boot_params_t *params, const void *blob,
                                  size_t len, weft__bootstrap_t **out)
{
    weft__bootstrap_t *b;
    struct published pub;
    weft_result_t rc;
    size_t off = 0;

    if (params->size < 1 || params->rank < 0 || params->rank >= params->size)
        return weft__error(WEFT_ERR_INVALID_ARG, "bootstrap: rank %d of %d", params->rank,
                           params->size);
    b = calloc(1, sizeof(*b));
    if (!b)
        return weft__error(WEFT_ERR_NO_MEMORY, "cannot allocate the bootstrap state");
    b->params = *params;
    memset(&pub, 0, sizeof(pub));

    switch (params->kind) {
    case WEFT__BOOT_FILE:
        rc = params->rank == 0 ? file_host(params, b, &pub) : file_connect(params, &b->store);
        break;
    case WEFT__BOOT_TCP: {
        int port = params->port;

        if (params->rank == 0 && !params->store_external) {
            /* Rank 0 hosts the store on every address at the agreed port;
             * a job of one on a free port of the host it names. */
            rc = weft__store_server_start(port ? NULL : params->host, port, params->token,
                                          params->size, NULL, &b->server);
            if (rc != WEFT_SUCCESS)
                break;
            port = weft__store_server_port(b->server);
        }
        rc = weft__store_connect(params->host, port, params->token, params->timeout_ms,
                                 &b->store);
        break;
    }
    case WEFT__BOOT_KVS:
        rc = weft__kvs_exchange(params, blob, len, b);
        if (rc != WEFT_SUCCESS)
            goto err_finalize;
        *out = b;
        return WEFT_SUCCESS;
    case WEFT__BOOT_PMIX:
#ifdef WEFT_HAVE_PMIX
        rc = weft__pmix_exchange(params, blob, len, b);
        if (rc != WEFT_SUCCESS)
            goto err_finalize;
        *out = b;
        return WEFT_SUCCESS;
#else
        rc = weft__error(WEFT_ERR_UNSUPPORTED, "this weft was built without PMIx");
        break;
#endif
    default:
        rc = weft__error(WEFT_ERR_INVALID_ARG, "bootstrap: unknown kind %d", params->kind);
        break;
    }
    if (rc != WEFT_SUCCESS)
        goto err_finalize;

    /* The host of the store needs no grace: it is the one telling. */
    if (b->server)
        weft__store_set_grace(b->store, 0);
    rc = weft__store_join(b->store, params->rank, params->size, blob, len, params->timeout_ms,
                          b->job_id, &b->blobs, &b->lens);
    if (rc != WEFT_SUCCESS)
        goto err_finalize;
    if (pub.nonce[0])
        file_withdraw(params->path, pub.nonce); /* everyone is in: the file has served */
    b->offsets = malloc((size_t)params->size * sizeof(size_t));
    if (!b->offsets) {
        rc = weft__error(WEFT_ERR_NO_MEMORY, "cannot allocate %d offsets", params->size);
        goto err_finalize;
    }
    for (int r = 0; r < params->size; r++) {
        b->offsets[r] = off;
        off += b->lens[r];
    }
    *out = b;
    return WEFT_SUCCESS;

err_finalize:
    {
        /* Stopping the server may log and touch the error text: keep the
         * cause. */
        char why[1024];

        snprintf(why, sizeof(why), "%s", weft__get_error());
        if (pub.nonce[0])
            file_withdraw(params->path, pub.nonce);
        weft__bootstrap_finalize(b);
        weft__set_error("%s", why);
    }
    return rc;
}

const void *weft__bootstrap_blob(const weft__bootstrap_t *b, int r, size_t *len)
{
    *len = b->lens[r];
    return (const char *)b->blobs + b->offsets[r];
}

void weft__bootstrap_finalize(weft__bootstrap_t *b)
{
    if (!b)
        return;
    /* The store first: ranks still waiting hear from it that this rank,
     * which is still connected and counted, gave up. */
    weft__store_server_stop(b->server);
    weft__store_close(b->store);
#ifdef WEFT_HAVE_PMIX
    if (b->params.kind == WEFT__BOOT_PMIX)
        weft__pmix_release();
#endif
    free(b->blobs);
    free(b->lens);
    free(b->offsets);
    free(b);
}
