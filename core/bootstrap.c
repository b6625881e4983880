/*
 * bootstrap.c: joining the job at weft_init.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "core/bootstrap.h"
#include "core/error.h"
#include "core/log.h"

#define FILE_POLL_MS 50

static int64_t now_ms(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void random_hex(char *buf, size_t nbytes)
{
    unsigned char rnd[32] = { 0 };

    if (nbytes > sizeof(rnd))
        nbytes = sizeof(rnd);
    if (getrandom(rnd, nbytes, 0) != (ssize_t)nbytes) {
        uint64_t t = (uint64_t)now_ms() ^ ((uint64_t)getpid() << 32);

        memcpy(rnd, &t, sizeof(t));
    }
    for (size_t i = 0; i < nbytes; i++)
        snprintf(buf + 2 * i, 3, "%02x", rnd[i]);
}

/* file://: rank 0 publishes "weft-store 1 host port token" atomically. */
static weft_result_t file_publish(const char *path, int port, const char *token)
{
    char tmp[4200], host[256];
    FILE *f;
    int fd;

    if (gethostname(host, sizeof(host)) != 0)
        snprintf(host, sizeof(host), "localhost");
    host[sizeof(host) - 1] = '\0';
    snprintf(tmp, sizeof(tmp), "%s.tmp.%d", path, (int)getpid());
    fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (fd < 0)
        return weft__error(WEFT_ERR_BOOTSTRAP, "file:// rendezvous: cannot create %s: %m", tmp);
    f = fdopen(fd, "w");
    if (!f) {
        close(fd);
        unlink(tmp);
        return weft__error(WEFT_ERR_SYSTEM, "fdopen: %m");
    }
    fprintf(f, "weft-store 1 %s %d %s\n", host, port, token[0] ? token : "-");
    if (fclose(f) != 0 || rename(tmp, path) != 0) {
        unlink(tmp);
        return weft__error(WEFT_ERR_BOOTSTRAP, "file:// rendezvous: cannot write %s: %m", path);
    }
    return WEFT_SUCCESS;
}

static int file_read(const char *path, char *host, size_t cap, int *port, char *token,
                     size_t tcap)
{
    char line[1024], h[256], t[256];
    FILE *f = fopen(path, "r");
    int p, ok;

    if (!f)
        return 0;
    ok = fgets(line, sizeof(line), f) &&
         sscanf(line, "weft-store 1 %255s %d %255s", h, &p, t) == 3 && p > 0 && p < 65536;
    fclose(f);
    if (!ok)
        return 0;
    snprintf(host, cap, "%s", h);
    snprintf(token, tcap, "%s", strcmp(t, "-") ? t : "");
    *port = p;
    return 1;
}

/* The others wait for the file and retry until a server there accepts
 * them: a file left by an earlier job names a server that is gone. */
static weft_result_t file_connect(const weft__boot_params_t *p, weft__store_t **out)
{
    int64_t deadline = now_ms() + p->timeout_ms;
    char host[256], token[256];
    int port, seen = 0;

    while (now_ms() < deadline) {
        if (file_read(p->path, host, sizeof(host), &port, token, sizeof(token))) {
            int left = (int)(deadline - now_ms());

            seen = 1;
            if (weft__store_connect(host, port, p->token[0] ? p->token : token,
                                    left < 1000 ? left : 1000, out) == WEFT_SUCCESS)
                return WEFT_SUCCESS;
        }
        usleep(FILE_POLL_MS * 1000);
    }
    return weft__error(WEFT_ERR_TIMEOUT, "file:// rendezvous: %s within %d ms (rank 0 never "
                       "arrived?)", seen ? "no live rendezvous store behind " : "no file",
                       p->timeout_ms);
}

weft_result_t weft__bootstrap_run(const weft__boot_params_t *params, const void *blob,
                                  size_t len, weft__bootstrap_t **out)
{
    weft__bootstrap_t *b = calloc(1, sizeof(*b));
    const char *connect_host;
    char token[256];
    weft_result_t rc;
    size_t off = 0;

    if (!b)
        return weft__error(WEFT_ERR_NO_MEMORY, "cannot allocate the bootstrap state");
    b->params = *params;
    snprintf(token, sizeof(token), "%s", params->token);

    if (params->kind == WEFT__BOOT_FILE) {
        if (params->rank == 0) {
            if (!token[0])
                random_hex(token, 16);
            rc = weft__store_server_start(NULL, 0, token, params->size, NULL, &b->server);
            if (rc == WEFT_SUCCESS)
                rc = file_publish(params->path, weft__store_server_port(b->server), token);
            if (rc == WEFT_SUCCESS)
                rc = weft__store_connect("localhost", weft__store_server_port(b->server), token,
                                         params->timeout_ms, &b->store);
        } else {
            rc = file_connect(params, &b->store);
        }
    } else if (params->kind == WEFT__BOOT_TCP) {
        int port = params->port;

        connect_host = params->host;
        if (params->rank == 0 && !params->store_external) {
            /* Rank 0 hosts the store on every address at the agreed port. */
            rc = weft__store_server_start(port ? NULL : params->host, port, token, params->size,
                                          NULL, &b->server);
            if (rc != WEFT_SUCCESS)
                goto err;
            port = weft__store_server_port(b->server);
        }
        rc = weft__store_connect(connect_host, port, token, params->timeout_ms, &b->store);
    } else {
#ifdef WEFT_HAVE_PMIX
        rc = weft__pmix_exchange(params, blob, len, b);
        if (rc != WEFT_SUCCESS)
            goto err;
        *out = b;
        return WEFT_SUCCESS;
#else
        rc = weft__error(WEFT_ERR_UNSUPPORTED, "this weft was built without PMIx");
#endif
    }
    if (rc != WEFT_SUCCESS)
        goto err;

    if (b->server)
        weft__store_set_grace(b->store, 0);
    rc = weft__store_join(b->store, params->rank, params->size, blob, len, params->timeout_ms,
                          b->job_id, &b->blobs, &b->lens);
    if (rc != WEFT_SUCCESS)
        goto err;
    if (params->kind == WEFT__BOOT_FILE && params->rank == 0)
        unlink(params->path); /* everyone is in: the file has served */
    b->offsets = malloc((size_t)params->size * sizeof(size_t));
    if (!b->offsets) {
        rc = weft__error(WEFT_ERR_NO_MEMORY, "cannot allocate %d offsets", params->size);
        goto err;
    }
    for (int r = 0; r < params->size; r++) {
        b->offsets[r] = off;
        off += b->lens[r];
    }
    *out = b;
    return WEFT_SUCCESS;

err:
    {
        /* Stopping the server may touch the error text: keep the cause. */
        char why[1024];

        snprintf(why, sizeof(why), "%s", weft__get_error());
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
    weft__store_close(b->store);
    weft__store_server_stop(b->server);
#ifdef WEFT_HAVE_PMIX
    if (b->params.kind == WEFT__BOOT_PMIX)
        weft__pmix_release();
#endif
    free(b->blobs);
    free(b->lens);
    free(b->offsets);
    free(b);
}
