/*
 * init_method.c: from weft_init's attributes and the environment to where
 * and how to rendezvous.
 *
 * Variables of weft's own launcher-independent form (first in detection):
 *   WEFT_INIT_METHOD   env://, tcp://host:port or file:///path
 *   WEFT_RANK, WEFT_SIZE, WEFT_LOCAL_RANK, WEFT_LOCAL_SIZE
 *   WEFT_MASTER_ADDR, WEFT_MASTER_PORT
 */
#include "config.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "core/bootstrap.h"
#include "core/init_method.h"

static weft_result_t parse_int(weft__getenv_fn env, const char *name, int min, int max,
                               int *out, int required)
{
    const char *v = env(name);
    char *end;
    long x;

    if (!v || !*v) {
        if (required)
            return weft__error(WEFT_ERR_INVALID_ARG, "%s is not set", name);
        return WEFT_SUCCESS;
    }
    errno = 0;
    x = strtol(v, &end, 10);
    if (errno || *end || x < min || x > max)
        return weft__error(WEFT_ERR_INVALID_ARG, "%s=%s is not a number from %d to %d", name, v,
                           min, max);
    *out = (int)x;
    return WEFT_SUCCESS;
}

/* "host:port", "[v6]:port" or "host" (port then stays). */
static weft_result_t parse_host_port(const char *what, const char *s, char *host, size_t cap,
                                     int *port)
{
    const char *colon;
    size_t n;

    if (s[0] == '[') {
        const char *close = strchr(s, ']');

        if (!close)
            return weft__error(WEFT_ERR_INVALID_ARG, "%s: '%s' lacks the closing ']'", what, s);
        n = (size_t)(close - s - 1);
        colon = close[1] == ':' ? close + 1 : NULL;
        if (close[1] && !colon)
            return weft__error(WEFT_ERR_INVALID_ARG, "%s: junk after ']' in '%s'", what, s);
        s++;
    } else {
        colon = strrchr(s, ':');
        if (colon && strchr(s, ':') != colon)
            colon = NULL; /* a bare IPv6 address */
        n = colon ? (size_t)(colon - s) : strlen(s);
    }
    if (n == 0 || n >= cap)
        return weft__error(WEFT_ERR_INVALID_ARG, "%s: bad host in '%s'", what, s);
    memcpy(host, s, n);
    host[n] = '\0';
    if (colon) {
        char *end;
        long p = strtol(colon + 1, &end, 10);

        if (!colon[1] || *end || p < 1 || p > 65535)
            return weft__error(WEFT_ERR_INVALID_ARG, "%s: port '%s' is not from 1 to 65535",
                               what, colon + 1);
        *port = (int)p;
    }
    return WEFT_SUCCESS;
}

weft_result_t weft__slurm_first_host(const char *nodelist, char *host, size_t cap)
{
    const char *p = nodelist, *br;
    size_t prefix, o;

    if (!nodelist || !*nodelist)
        return weft__error(WEFT_ERR_INVALID_ARG, "SLURM_JOB_NODELIST is empty");
    /* The first entry ends at a comma outside brackets. */
    br = p + strcspn(p, ",[");
    prefix = (size_t)(br - p);
    if (prefix >= cap)
        return weft__error(WEFT_ERR_INVALID_ARG, "SLURM_JOB_NODELIST host name too long");
    memcpy(host, p, prefix);
    host[prefix] = '\0';
    if (*br != '[')
        return prefix ? WEFT_SUCCESS
                      : weft__error(WEFT_ERR_INVALID_ARG, "SLURM_JOB_NODELIST '%s' is malformed",
                                    nodelist);
    /* node[07-09,12]: the first number (or range start), zero padding kept. */
    o = prefix;
    for (p = br + 1; *p >= '0' && *p <= '9'; p++) {
        if (o + 1 >= cap)
            return weft__error(WEFT_ERR_INVALID_ARG, "SLURM_JOB_NODELIST host name too long");
        host[o++] = *p;
    }
    host[o] = '\0';
    if (o == prefix || (*p != '-' && *p != ',' && *p != ']'))
        return weft__error(WEFT_ERR_INVALID_ARG, "SLURM_JOB_NODELIST '%s' is malformed",
                           nodelist);
    return WEFT_SUCCESS;
}

static weft_result_t parse_url(const char *url, weft__getenv_fn env, weft__boot_params_t *out,
                               const char *master_addr_var, const char *master_port_var)
{
    if (!strcmp(url, "env://")) {
        const char *a = env(master_addr_var);
        weft_result_t rc;

        if (!a || !*a)
            return weft__error(WEFT_ERR_INVALID_ARG, "init method env:// needs %s (and %s, "
                               "default %d)", master_addr_var, master_port_var,
                               WEFT__DEFAULT_PORT);
        rc = parse_host_port(master_addr_var, a, out->host, sizeof(out->host), &out->port);
        if (rc == WEFT_SUCCESS)
            rc = parse_int(env, master_port_var, 1, 65535, &out->port, 0);
        out->kind = WEFT__BOOT_TCP;
        return rc;
    }
    if (!strncmp(url, "tcp://", 6)) {
        out->kind = WEFT__BOOT_TCP;
        return parse_host_port("init method tcp://", url + 6, out->host, sizeof(out->host),
                               &out->port);
    }
    if (!strncmp(url, "file://", 7)) {
        const char *path = url + 7;

        if (path[0] != '/' || strlen(path) >= sizeof(out->path))
            return weft__error(WEFT_ERR_INVALID_ARG, "init method '%s': file:// needs an "
                               "absolute path (file:///dir/name)", url);
        snprintf(out->path, sizeof(out->path), "%s", path);
        out->kind = WEFT__BOOT_FILE;
        return WEFT_SUCCESS;
    }
    return weft__error(WEFT_ERR_INVALID_ARG, "init method '%s' is not env://, tcp://host:port "
                       "or file:///path", url);
}

/* Rank, size and local placement from one family of variables. */
static weft_result_t take_ranks(weft__getenv_fn env, const char *rank, const char *size,
                                const char *lrank, const char *lsize, weft__boot_params_t *out)
{
    weft_result_t rc;

    if (out->size < 0 && (rc = parse_int(env, size, 1, INT_MAX, &out->size, 1)) != WEFT_SUCCESS)
        return rc;
    if (out->rank < 0 &&
        (rc = parse_int(env, rank, 0, INT_MAX, &out->rank, 1)) != WEFT_SUCCESS)
        return rc;
    if (lrank && (rc = parse_int(env, lrank, 0, INT_MAX, &out->local_rank, 0)) != WEFT_SUCCESS)
        return rc;
    if (lsize && (rc = parse_int(env, lsize, 1, INT_MAX, &out->local_size, 0)) != WEFT_SUCCESS)
        return rc;
    return WEFT_SUCCESS;
}

static int set(weft__getenv_fn env, const char *name)
{
    const char *v = env(name);

    return v && *v;
}

weft_result_t weft__boot_params_resolve(const weft_init_attr_t *attr, weft__getenv_fn env,
                                        weft__boot_params_t *out)
{
    const char *method = attr->init_method;
    weft_result_t rc = WEFT_SUCCESS;
    int timeout_s = 0;

    memset(out, 0, sizeof(*out));
    out->rank = attr->rank;
    out->size = attr->size;
    out->local_rank = out->local_size = -1;
    out->port = WEFT__DEFAULT_PORT;

    if (method) {
        snprintf(out->source, sizeof(out->source), "%.60s", method);
        rc = parse_url(method, env, out, "MASTER_ADDR", "MASTER_PORT");
        if (rc == WEFT_SUCCESS)
            rc = take_ranks(env, "RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE", out);
    } else if (set(env, "WEFT_INIT_METHOD") || set(env, "WEFT_RANK")) {
        snprintf(out->source, sizeof(out->source), "WEFT_* variables");
        rc = parse_url(set(env, "WEFT_INIT_METHOD") ? env("WEFT_INIT_METHOD") : "env://", env,
                       out, "WEFT_MASTER_ADDR", "WEFT_MASTER_PORT");
        if (rc == WEFT_SUCCESS)
            rc = take_ranks(env, "WEFT_RANK", "WEFT_SIZE", "WEFT_LOCAL_RANK", "WEFT_LOCAL_SIZE",
                            out);
    } else if (set(env, "RANK") && set(env, "WORLD_SIZE")) {
        snprintf(out->source, sizeof(out->source), "torchrun variables (env://)");
        rc = parse_url("env://", env, out, "MASTER_ADDR", "MASTER_PORT");
        if (rc == WEFT_SUCCESS)
            rc = take_ranks(env, "RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE", out);
    } else if (set(env, "SLURM_PROCID") && set(env, "SLURM_NTASKS")) {
        snprintf(out->source, sizeof(out->source), "Slurm");
        out->kind = WEFT__BOOT_TCP;
        if (set(env, "MASTER_ADDR"))
            rc = parse_host_port("MASTER_ADDR", env("MASTER_ADDR"), out->host,
                                 sizeof(out->host), &out->port);
        else
            rc = weft__slurm_first_host(env("SLURM_JOB_NODELIST"), out->host,
                                        sizeof(out->host));
        if (rc == WEFT_SUCCESS && set(env, "MASTER_PORT"))
            rc = parse_int(env, "MASTER_PORT", 1, 65535, &out->port, 1);
        else if (rc == WEFT_SUCCESS && set(env, "SLURM_JOB_ID"))
            /* Every rank of the job derives the same port from its id. */
            out->port = 20000 + (int)(strtoul(env("SLURM_JOB_ID"), NULL, 10) % 20000);
        if (rc == WEFT_SUCCESS)
            rc = take_ranks(env, "SLURM_PROCID", "SLURM_NTASKS", "SLURM_LOCALID", NULL, out);
#ifdef WEFT_HAVE_PMIX
    } else if (set(env, "PMIX_RANK") || set(env, "PMIX_NAMESPACE")) {
        /* A PMIx launcher: PMIx itself knows rank and size (this starts
         * the PMIx client; weft__bootstrap_finalize stops it). */
        int r, n;

        snprintf(out->source, sizeof(out->source), "PMIx");
        out->kind = WEFT__BOOT_PMIX;
        rc = weft__pmix_probe(&r, &n);
        if (rc == WEFT_SUCCESS && ((out->rank >= 0 && out->rank != r) ||
                                   (out->size >= 0 && out->size != n))) {
            weft__pmix_release();
            return weft__error(WEFT_ERR_INVALID_ARG, "attr says rank %d of %d, PMIx says "
                               "rank %d of %d", out->rank, out->size, r, n);
        }
        out->rank = r;
        out->size = n;
        if (rc == WEFT_SUCCESS)
            rc = parse_int(env, "OMPI_COMM_WORLD_LOCAL_RANK", 0, INT_MAX, &out->local_rank, 0);
#endif
    } else if (set(env, "OMPI_COMM_WORLD_RANK") && set(env, "OMPI_COMM_WORLD_SIZE")) {
        snprintf(out->source, sizeof(out->source), "Open MPI");
        if (!set(env, "MASTER_ADDR"))
            return weft__error(WEFT_ERR_INVALID_ARG, "started by Open MPI's mpirun: set "
                               "MASTER_ADDR (and MASTER_PORT) to a host of the job for the "
                               "rendezvous, or start the job with weftrun");
        rc = parse_url("env://", env, out, "MASTER_ADDR", "MASTER_PORT");
        if (rc == WEFT_SUCCESS)
            rc = take_ranks(env, "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE",
                            "OMPI_COMM_WORLD_LOCAL_RANK", "OMPI_COMM_WORLD_LOCAL_SIZE", out);
    } else if (out->rank <= 0 && out->size <= 1) {
        /* Started alone, without a launcher: a job of one rank, hosting
         * its own rendezvous on a free loopback port (MPI's singleton). */
        snprintf(out->source, sizeof(out->source), "single process (no launcher found)");
        out->rank = 0;
        out->size = 1;
        out->kind = WEFT__BOOT_TCP;
        snprintf(out->host, sizeof(out->host), "127.0.0.1");
        out->port = 0;
    } else {
        return weft__error(WEFT_ERR_INVALID_ARG, "weft_init: no init method given and none "
                           "found in the environment (set WEFT_INIT_METHOD, torchrun's RANK/"
                           "WORLD_SIZE/MASTER_ADDR, or start with weftrun)");
    }
    if (rc != WEFT_SUCCESS)
        return rc;
    if (out->rank >= out->size)
        return weft__error(WEFT_ERR_INVALID_ARG, "rank %d is not below the world size %d",
                           out->rank, out->size);
    if (attr->timeout_ms > 0) {
        out->timeout_ms = attr->timeout_ms;
    } else {
        rc = parse_int(env, "WEFT_TIMEOUT", 1, INT_MAX / 1000, &timeout_s, 0);
        if (rc != WEFT_SUCCESS)
            return rc;
        out->timeout_ms = timeout_s > 0 ? timeout_s * 1000 : WEFT__DEFAULT_TIMEOUT_MS;
    }
    if (set(env, "WEFT_AUTH_TOKEN"))
        snprintf(out->token, sizeof(out->token), "%s", env("WEFT_AUTH_TOKEN"));
    out->store_external = set(env, "WEFT_STORE_EXTERNAL") && !strcmp(env("WEFT_STORE_EXTERNAL"), "1");
    return WEFT_SUCCESS;
}
