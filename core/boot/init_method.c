/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * init_method.c: from weft_init's attributes and the environment to where
 * and how to rendezvous.
 *
 * weft's own variables, launcher-independent, looked at first when
 * weft_init gets no init method (present when WEFT_INIT_METHOD or WEFT_RANK
 * is set), and by an explicit env:// when WEFT_MASTER_ADDR is set (weftrun
 * sets both families and keeps MASTER_ADDR:MASTER_PORT for the program's
 * own framework):
 *   WEFT_INIT_METHOD   env:// (the default), tcp://host:port or file:///path
 *   WEFT_RANK          this process's rank
 *   WEFT_SIZE          the number of ranks
 *   WEFT_LOCAL_RANK    its rank among those of its node (optional)
 *   WEFT_LOCAL_SIZE    the number of ranks on its node (optional)
 *   WEFT_MASTER_ADDR   the store's host for env:// (name, IPv4, IPv6)
 *   WEFT_MASTER_PORT   the store's port for env:// (default 29500)
 * Whatever the method:
 *   WEFT_TIMEOUT       seconds weft_init waits (default 300), unless
 *                      attr->timeout_ms is set
 *   WEFT_AUTH_TOKEN    the secret every connection to the store presents
 *   WEFT_STORE_EXTERNAL=1  the launcher (weftrun) hosts the store: rank 0
 *                      only connects to it
 */
#include "config.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/boot/bootstrap.h"
#include "core/base/error.h"
#include "core/boot/init_method.h"

#define SLURM_PORT_BASE 20000
#define SLURM_PORT_SPAN 20000

/* Where rank and size came from, for messages ("RANK=3", "attr->rank 3"),
 * and the local ones ("LOCAL_RANK=1"). */
struct origin {
    char rank[80], size[80];
    char lrank[80], lsize[120];
};

static int set(weft__getenv_fn env, const char *name)
{
    const char *v = env(name);

    return v && *v;
}

/* A decimal number in [min, max], all of the string. */
static int to_long(const char *v, long min, long max, long *out)
{
    char *end;
    long x;

    errno = 0;
    x = strtol(v, &end, 10);
    if (errno || end == v || *end || x < min || x > max)
        return -1;
    *out = x;
    return 0;
}

/* Reads variable name into *out when set; required ones must be. */
static weft_result_t parse_int(weft__getenv_fn env, const char *name, int min, int max,
                               int *out, int required)
{
    const char *v = env(name);
    long x;

    if (!v || !*v) {
        if (required)
            return weft__error(WEFT_ERR_INVALID_ARG, "%s is not set", name);
        return WEFT_SUCCESS;
    }
    if (to_long(v, min, max, &x) != 0)
        return weft__error(WEFT_ERR_INVALID_ARG, "%s=%.64s is not a number from %d to %d", name,
                           v, min, max);
    *out = (int)x;
    return WEFT_SUCCESS;
}

/* "host:port", "[v6]:port", "[v6]", a bare IPv6 address, or "host" (the
 * port then stays as it is). */
static weft_result_t parse_host_port(const char *what, const char *s, char *host, size_t cap,
                                     int *port)
{
    const char *colon, *h = s;
    size_t n;

    if (s[0] == '[') {
        const char *close = strchr(s, ']');

        if (!close)
            return weft__error(WEFT_ERR_INVALID_ARG, "%s '%.300s' lacks the closing ']'", what,
                               s);
        h = s + 1;
        n = (size_t)(close - h);
        colon = close[1] == ':' ? close + 1 : NULL;
        if (close[1] && !colon)
            return weft__error(WEFT_ERR_INVALID_ARG, "%s '%.300s': junk after ']'", what, s);
    } else {
        colon = strrchr(s, ':');
        if (colon && strchr(s, ':') != colon)
            colon = NULL; /* a bare IPv6 address */
        n = colon ? (size_t)(colon - s) : strlen(s);
    }
    if (n == 0 || n >= cap)
        return weft__error(WEFT_ERR_INVALID_ARG, "%s '%.300s': the host is empty or longer "
                           "than %zu bytes", what, s, cap - 1);
    if (colon) {
        long p;

        if (to_long(colon + 1, 1, 65535, &p) != 0)
            return weft__error(WEFT_ERR_INVALID_ARG, "%s '%.300s': port '%s' is not from 1 "
                               "to 65535", what, s, colon + 1);
        *port = (int)p;
    }
    memcpy(host, h, n);
    host[n] = '\0';
    return WEFT_SUCCESS;
}

weft_result_t weft__slurm_first_host(const char *nodelist, char *host, size_t cap)
{
    const char *p = nodelist;
    size_t o = 0;

    if (!nodelist || !*nodelist)
        return weft__error(WEFT_ERR_INVALID_ARG, "SLURM_JOB_NODELIST is empty or not set");
    /* The first entry ends at a comma outside brackets; each bracket group
     * in it ("n[07-09,12]-ib", "r[1-2]n[01-04]") gives its first number,
     * zero padding kept; the text around the groups stays as it is. */
    while (*p && *p != ',') {
        if (*p == '[') {
            const char *num = ++p;

            while (*p >= '0' && *p <= '9')
                p++;
            if (p == num || (*p != '-' && *p != ',' && *p != ']'))
                goto malformed;
            if (o + (size_t)(p - num) >= cap)
                goto too_long;
            memcpy(host + o, num, (size_t)(p - num));
            o += (size_t)(p - num);
            p = strchr(p, ']');
            if (!p)
                goto malformed;
            p++;
            continue;
        }
        if (*p == ']')
            goto malformed;
        if (o + 1 >= cap)
            goto too_long;
        host[o++] = *p++;
    }
    if (o == 0)
        goto malformed;
    host[o] = '\0';
    return WEFT_SUCCESS;

malformed:
    return weft__error(WEFT_ERR_INVALID_ARG, "SLURM_JOB_NODELIST='%.300s' is malformed",
                       nodelist);
too_long:
    return weft__error(WEFT_ERR_INVALID_ARG, "SLURM_JOB_NODELIST='%.300s': its first host name "
                       "is longer than %zu bytes", nodelist, cap - 1);
}

/* The ranks on node `node` of a Slurm job from SLURM_TASKS_PER_NODE
 * ("4(x2),3": 4 on nodes 0 and 1, 3 on node 2), or -1. */
static int slurm_tasks_on_node(const char *spec, long node)
{
    const char *p = spec;

    while (*p) {
        char *end;
        long n, times = 1;

        errno = 0;
        n = strtol(p, &end, 10);
        if (errno || end == p || n < 1 || n > INT_MAX)
            return -1;
        p = end;
        if (!strncmp(p, "(x", 2)) {
            times = strtol(p + 2, &end, 10);
            if (errno || end == p + 2 || *end != ')' || times < 1)
                return -1;
            p = end + 1;
        }
        if (node < times)
            return (int)n;
        node -= times;
        if (*p && *p++ != ',')
            return -1;
    }
    return -1;
}

static weft_result_t parse_url(const char *url, weft__getenv_fn env, weft__boot_params_t *out,
                               const char *addr_var, const char *port_var)
{
    weft_result_t rc;

    if (!strcmp(url, "env://")) {
        const char *a = env(addr_var);

        out->kind = WEFT__BOOT_TCP;
        if (!a || !*a)
            return weft__error(WEFT_ERR_INVALID_ARG, "init method env:// needs %s (and %s, "
                               "default %d)", addr_var, port_var, WEFT__DEFAULT_PORT);
        rc = parse_host_port(addr_var, a, out->host, sizeof(out->host), &out->port);
        if (rc == WEFT_SUCCESS)
            rc = parse_int(env, port_var, 1, 65535, &out->port, 0);
        return rc;
    }
    if (!strncmp(url, "tcp://", 6)) {
        out->kind = WEFT__BOOT_TCP;
        return parse_host_port("init method tcp://", url + 6, out->host, sizeof(out->host),
                               &out->port);
    }
    if (!strncmp(url, "file://", 7)) {
        const char *path = url + 7;

        /* Room left for the ".tmp.<pid>" of the atomic publication. */
        if (path[0] != '/' || strlen(path) >= sizeof(out->path) - 32)
            return weft__error(WEFT_ERR_INVALID_ARG, "init method '%.300s': file:// needs an "
                               "absolute path (file:///dir/name) of at most %zu bytes", url,
                               sizeof(out->path) - 33);
        snprintf(out->path, sizeof(out->path), "%s", path);
        out->kind = WEFT__BOOT_FILE;
        return WEFT_SUCCESS;
    }
    return weft__error(WEFT_ERR_INVALID_ARG, "init method '%.300s' is not env://, "
                       "tcp://host:port or file:///path", url);
}

/* Rank, size and local placement from one family of variables; attr's
 * rank and size, when given, stay. */
static weft_result_t take_ranks(weft__getenv_fn env, const char *rank, const char *size,
                                const char *lrank, const char *lsize, weft__boot_params_t *out,
                                struct origin *from)
{
    weft_result_t rc;

    if (out->size < 0) {
        rc = parse_int(env, size, 1, WEFT__STORE_MAX_RANKS, &out->size, 1);
        if (rc != WEFT_SUCCESS)
            return rc;
        snprintf(from->size, sizeof(from->size), "%s=%d", size, out->size);
    }
    if (out->rank < 0) {
        rc = parse_int(env, rank, 0, INT_MAX, &out->rank, 1);
        if (rc != WEFT_SUCCESS)
            return rc;
        snprintf(from->rank, sizeof(from->rank), "%s=%d", rank, out->rank);
    }
    if (lrank && (rc = parse_int(env, lrank, 0, INT_MAX, &out->local_rank, 0)) != WEFT_SUCCESS)
        return rc;
    if (lrank && set(env, lrank))
        snprintf(from->lrank, sizeof(from->lrank), "%s=%d", lrank, out->local_rank);
    if (lsize && (rc = parse_int(env, lsize, 1, INT_MAX, &out->local_size, 0)) != WEFT_SUCCESS)
        return rc;
    if (lsize && set(env, lsize))
        snprintf(from->lsize, sizeof(from->lsize), "%s=%d", lsize, out->local_size);
    return WEFT_SUCCESS;
}

static weft_result_t from_slurm(weft__getenv_fn env, weft__boot_params_t *out,
                                struct origin *from)
{
    weft_result_t rc;
    long job, node;

    out->kind = WEFT__BOOT_TCP;
    if (set(env, "MASTER_ADDR"))
        rc = parse_host_port("MASTER_ADDR", env("MASTER_ADDR"), out->host, sizeof(out->host),
                             &out->port);
    else
        rc = weft__slurm_first_host(env("SLURM_JOB_NODELIST"), out->host, sizeof(out->host));
    if (rc != WEFT_SUCCESS)
        return rc;
    if (set(env, "MASTER_PORT")) {
        rc = parse_int(env, "MASTER_PORT", 1, 65535, &out->port, 1);
    } else if (set(env, "SLURM_JOB_ID")) {
        /* Every rank of the job derives the same port from its id. */
        if (to_long(env("SLURM_JOB_ID"), 0, LONG_MAX, &job) != 0)
            return weft__error(WEFT_ERR_INVALID_ARG, "SLURM_JOB_ID=%.64s is not a number",
                               env("SLURM_JOB_ID"));
        out->port = SLURM_PORT_BASE + (int)(job % SLURM_PORT_SPAN);
    } else if (!set(env, "MASTER_ADDR")) {
        return weft__error(WEFT_ERR_INVALID_ARG, "under Slurm without SLURM_JOB_ID: set "
                           "MASTER_PORT so that every rank finds the store");
    }
    if (rc == WEFT_SUCCESS)
        rc = take_ranks(env, "SLURM_PROCID", "SLURM_NTASKS", "SLURM_LOCALID", NULL, out, from);
    if (rc != WEFT_SUCCESS)
        return rc;
    /* The ranks on this node: optional, only for information. */
    if (set(env, "SLURM_TASKS_PER_NODE") && set(env, "SLURM_NODEID") &&
        to_long(env("SLURM_NODEID"), 0, INT_MAX, &node) == 0) {
        out->local_size = slurm_tasks_on_node(env("SLURM_TASKS_PER_NODE"), node);
        snprintf(from->lsize, sizeof(from->lsize), "SLURM_TASKS_PER_NODE=%.40s on "
                 "SLURM_NODEID=%ld: %d", env("SLURM_TASKS_PER_NODE"), node, out->local_size);
    }
    if (out->local_size < 1) {
        rc = parse_int(env, "SLURM_NTASKS_PER_NODE", 1, INT_MAX, &out->local_size, 0);
        snprintf(from->lsize, sizeof(from->lsize), "SLURM_NTASKS_PER_NODE=%d", out->local_size);
    }
    return rc;
}

weft_result_t weft__boot_params_resolve(const weft_init_attr_t *attr, weft__getenv_fn env,
                                        weft__boot_params_t *out)
{
    const char *method = attr->init_method;
    struct origin from;
    weft_result_t rc = WEFT_SUCCESS;
    int timeout_s = 0;

    memset(out, 0, sizeof(*out));
    out->rank = attr->rank;
    out->size = attr->size;
    out->local_rank = out->local_size = -1;
    out->port = WEFT__DEFAULT_PORT;
    snprintf(from.rank, sizeof(from.rank), "attr->rank %d", attr->rank);
    snprintf(from.size, sizeof(from.size), "attr->size %d", attr->size);
    from.lrank[0] = from.lsize[0] = '\0';
    if (attr->rank < -1)
        return weft__error(WEFT_ERR_INVALID_ARG, "attr->rank %d is neither a rank nor -1 (from "
                           "the environment)", attr->rank);
    if (attr->size == 0 || attr->size < -1 || attr->size > WEFT__STORE_MAX_RANKS)
        return weft__error(WEFT_ERR_INVALID_ARG, "attr->size %d is neither a world size from 1 "
                           "to %d nor -1 (from the environment)", attr->size,
                           WEFT__STORE_MAX_RANKS);

    if (attr->kvs) {
        /* The caller's store: nothing of the environment is read for the
         * rendezvous, and weft opens no listener of its own. */
        const weft_kvs_t *kvs = attr->kvs;

        if (!kvs->set || !kvs->get)
            return weft__error(WEFT_ERR_INVALID_ARG, "weft_init: attr->kvs->%s is NULL",
                               kvs->set ? "get" : "set");
        if (method)
            return weft__error(WEFT_ERR_INVALID_ARG, "weft_init: attr->kvs and "
                               "attr->init_method %.60s exclude each other", method);
        if (attr->rank < 0 || attr->size < 1)
            return weft__error(WEFT_ERR_INVALID_ARG, "weft_init: attr->kvs needs attr->rank "
                               "and attr->size (given %d and %d)", attr->rank, attr->size);
        snprintf(out->source, sizeof(out->source), "the caller's key-value store (attr->kvs)");
        out->kind = WEFT__BOOT_KVS;
        out->kvs = *kvs;
    } else if (method && !strcmp(method, "env://") && set(env, "WEFT_MASTER_ADDR")) {
        /* weftrun leaves MASTER_ADDR:MASTER_PORT to the program's framework
         * (torch's env:// listens there) and gives weft's store as
         * WEFT_MASTER_*: env:// then means weft's own variables. */
        snprintf(out->source, sizeof(out->source), "env:// (WEFT_* variables)");
        rc = parse_url(method, env, out, "WEFT_MASTER_ADDR", "WEFT_MASTER_PORT");
        if (rc == WEFT_SUCCESS)
            rc = take_ranks(env, "WEFT_RANK", "WEFT_SIZE", "WEFT_LOCAL_RANK", "WEFT_LOCAL_SIZE",
                            out, &from);
    } else if (method) {
        snprintf(out->source, sizeof(out->source), "%.60s", method);
        rc = parse_url(method, env, out, "MASTER_ADDR", "MASTER_PORT");
        if (rc == WEFT_SUCCESS)
            rc = take_ranks(env, "RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE", out,
                            &from);
    } else if (set(env, "WEFT_INIT_METHOD") || set(env, "WEFT_RANK")) {
        snprintf(out->source, sizeof(out->source), "WEFT_* variables");
        rc = parse_url(set(env, "WEFT_INIT_METHOD") ? env("WEFT_INIT_METHOD") : "env://", env,
                       out, "WEFT_MASTER_ADDR", "WEFT_MASTER_PORT");
        if (rc == WEFT_SUCCESS)
            rc = take_ranks(env, "WEFT_RANK", "WEFT_SIZE", "WEFT_LOCAL_RANK", "WEFT_LOCAL_SIZE",
                            out, &from);
    } else if (set(env, "RANK") && set(env, "WORLD_SIZE") && set(env, "MASTER_ADDR")) {
        snprintf(out->source, sizeof(out->source), "torchrun variables (env://)");
        rc = parse_url("env://", env, out, "MASTER_ADDR", "MASTER_PORT");
        if (rc == WEFT_SUCCESS)
            rc = take_ranks(env, "RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE", out,
                            &from);
    } else if (set(env, "SLURM_PROCID") && set(env, "SLURM_NTASKS")) {
        snprintf(out->source, sizeof(out->source), "Slurm");
        rc = from_slurm(env, out, &from);
#ifdef WEFT_HAVE_PMIX
    } else if (set(env, "PMIX_RANK") || set(env, "PMIX_NAMESPACE")) {
        /* A PMIx launcher: PMIx itself knows rank and size (this starts
         * the PMIx client; weft__bootstrap_finalize stops it). */
        int r, n;

        snprintf(out->source, sizeof(out->source), "PMIx");
        out->kind = WEFT__BOOT_PMIX;
        rc = weft__pmix_probe(&r, &n);
        if (rc != WEFT_SUCCESS)
            return rc;
        if ((out->rank >= 0 && out->rank != r) || (out->size >= 0 && out->size != n)) {
            weft__pmix_release();
            return weft__error(WEFT_ERR_INVALID_ARG, "attr says rank %d of %d, PMIx says "
                               "rank %d of %d", out->rank, out->size, r, n);
        }
        out->rank = r;
        out->size = n;
        snprintf(from.rank, sizeof(from.rank), "PMIx rank %d", r);
        snprintf(from.size, sizeof(from.size), "PMIx job size %d", n);
        rc = parse_int(env, "OMPI_COMM_WORLD_LOCAL_RANK", 0, INT_MAX, &out->local_rank, 0);
        if (rc != WEFT_SUCCESS) {
            weft__pmix_release();
            return rc;
        }
#endif
    } else if (set(env, "OMPI_COMM_WORLD_RANK") && set(env, "OMPI_COMM_WORLD_SIZE")) {
        snprintf(out->source, sizeof(out->source), "Open MPI");
        if (!set(env, "MASTER_ADDR"))
            return weft__error(WEFT_ERR_INVALID_ARG, "started by Open MPI's mpirun: set "
                               "MASTER_ADDR (and MASTER_PORT, default %d) to a host of the "
                               "job for the rendezvous, or start the job with weftrun",
                               WEFT__DEFAULT_PORT);
        rc = parse_url("env://", env, out, "MASTER_ADDR", "MASTER_PORT");
        if (rc == WEFT_SUCCESS)
            rc = take_ranks(env, "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE",
                            "OMPI_COMM_WORLD_LOCAL_RANK", "OMPI_COMM_WORLD_LOCAL_SIZE", out,
                            &from);
    } else if (set(env, "RANK") && set(env, "WORLD_SIZE")) {
        return weft__error(WEFT_ERR_INVALID_ARG, "RANK and WORLD_SIZE are set but MASTER_ADDR "
                           "is not: torchrun's env:// needs MASTER_ADDR (and MASTER_PORT, "
                           "default %d)", WEFT__DEFAULT_PORT);
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
        goto err;
    if (out->rank >= out->size) {
        rc = weft__error(WEFT_ERR_INVALID_ARG, "%s is not below the world size (%s)", from.rank,
                         from.size);
        goto err;
    }
    if (out->local_rank >= 0 && out->local_size > 0 && out->local_rank >= out->local_size) {
        /* Named as given: which variables disagree, not only the numbers. */
        rc = weft__error(WEFT_ERR_INVALID_ARG, "%s is not below the local size (%s)",
                         from.lrank, from.lsize);
        goto err;
    }

    if (attr->timeout_ms > 0) {
        out->timeout_ms = attr->timeout_ms;
    } else {
        rc = parse_int(env, "WEFT_TIMEOUT", 1, INT_MAX / 1000, &timeout_s, 0);
        if (rc != WEFT_SUCCESS)
            goto err;
        out->timeout_ms = timeout_s > 0 ? timeout_s * 1000 : WEFT__DEFAULT_TIMEOUT_MS;
    }
    if (set(env, "WEFT_AUTH_TOKEN")) {
        const char *t = env("WEFT_AUTH_TOKEN");

        if (strlen(t) >= sizeof(out->token)) {
            rc = weft__error(WEFT_ERR_INVALID_ARG, "WEFT_AUTH_TOKEN has %zu bytes, the limit "
                             "is %zu", strlen(t), sizeof(out->token) - 1);
            goto err;
        }
        snprintf(out->token, sizeof(out->token), "%s", t);
    }
    if (set(env, "WEFT_STORE_EXTERNAL")) {
        const char *v = env("WEFT_STORE_EXTERNAL");

        if (strcmp(v, "0") && strcmp(v, "1")) {
            rc = weft__error(WEFT_ERR_INVALID_ARG, "WEFT_STORE_EXTERNAL=%.64s is neither 0 "
                             "nor 1", v);
            goto err;
        }
        out->store_external = v[0] == '1';
    }
    return WEFT_SUCCESS;

err:
#ifdef WEFT_HAVE_PMIX
    /* resolve's caller only finalises a bootstrap it got: the PMIx
     * reference probe took is dropped here. */
    if (out->kind == WEFT__BOOT_PMIX)
        weft__pmix_release();
#endif
    return rc;
}
