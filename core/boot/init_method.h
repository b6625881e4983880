/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * init_method.h: turning weft_init's attributes and the environment into
 * where and how to rendezvous.
 *
 * Order when init_method is NULL: WEFT_* variables, torchrun (RANK,
 * WORLD_SIZE, MASTER_ADDR, MASTER_PORT), Slurm (SLURM_PROCID, SLURM_NTASKS,
 * SLURM_LOCALID, first node of SLURM_JOB_NODELIST), PMIx (when built with
 * it), Open MPI (OMPI_COMM_WORLD_*). Explicit attr->rank / attr->size win
 * over the environment.
 */
#ifndef WEFT_CORE_INIT_METHOD_H
#define WEFT_CORE_INIT_METHOD_H

#include "weft.h"

enum weft__boot_kind {
    WEFT__BOOT_TCP = 1,  /* env:// and tcp://: a TCP store at host:port */
    WEFT__BOOT_FILE = 2, /* file:///path: rank 0 publishes its store's address in path */
    WEFT__BOOT_PMIX = 3, /* PMIx put/get/fence */
    WEFT__BOOT_KVS = 4   /* the caller's key-value store (attr->kvs) */
};

#define WEFT__DEFAULT_PORT 29500   /* torchrun's default MASTER_PORT */
#define WEFT__DEFAULT_TIMEOUT_MS 300000

typedef struct weft__boot_params {
    int kind;              /* enum weft__boot_kind */
    int rank, size;
    int local_rank, local_size; /* -1 when the launcher did not say */
    char host[256];        /* store host (TCP) */
    int port;              /* store port (TCP) */
    char path[4096];       /* rendezvous file (FILE) */
    char token[256];       /* WEFT_AUTH_TOKEN or "" */
    int timeout_ms;
    int store_external;    /* the launcher hosts the store: rank 0 must not */
    char source[64];       /* where the settings came from, for messages */
    weft_kvs_t kvs;        /* KVS: a copy of the caller's (its ctx stays theirs) */
} weft__boot_params_t;

/* Environment lookup, replaceable in unit tests (getenv in the library). */
typedef const char *(*weft__getenv_fn)(const char *name);

/* Fills out or fails with WEFT_ERR_INVALID_ARG naming the bad attribute or
 * variable (e.g. "RANK=abc is not a number", "WORLD_SIZE missing"). */
weft_result_t weft__boot_params_resolve(const weft_init_attr_t *attr, weft__getenv_fn env,
                                        weft__boot_params_t *out);

/* First host of a Slurm node list: "node[07-09,12],gpu1" -> "node07". */
weft_result_t weft__slurm_first_host(const char *nodelist, char *host, size_t cap);

#endif /* WEFT_CORE_INIT_METHOD_H */
