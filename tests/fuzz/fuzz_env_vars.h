/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * fuzz_env_vars.h: the variables fuzz_env.c reads and the order that
 * numbers them: an input line's first byte picks one, modulo their count.
 * make_seeds.c writes its seeds with the same numbers. New variables go
 * at the end of their group, so that the committed seeds keep meaning
 * what they meant.
 */
#ifndef WEFT_TESTS_FUZZ_ENV_VARS_H
#define WEFT_TESTS_FUZZ_ENV_VARS_H

#include <limits.h>
#include <stddef.h>
#include <string.h>

#include "plugins/sockets/sockets.h"

/* The transports' numeric parameters, with the ranges they give
 * weft__tp_param_long (sockets.c, shm.c, ibv_param.c). */
struct tp_param {
    const char *name;
    long lo, hi, def;
};

static const struct tp_param tp_params[] = {
    { "WEFT_SOCKET_NSOCKS", 1, SOCK_MAX_STREAMS, 1 },
    { "WEFT_SOCKET_CHUNK", SOCK_MIN_CHUNK, SOCK_MAX_CHUNK, SOCK_DEFAULT_CHUNK },
    { "WEFT_SHM_RING_SIZE", 4 << 10, 64 << 20, 1 << 20 },
    { "WEFT_SHM_CMA", 0, 1, -1 },
    { "WEFT_SHM_CMA_THRESHOLD", 0, LONG_MAX, 32 << 10 },
    { "WEFT_SHM_BLOCK", 0, 1, 1 },
    { "WEFT_SHM_CUDA_IPC", 0, 1, 1 },
    { "WEFT_IB_GID_INDEX", -1, 255, -1 },
    { "WEFT_IB_TIMEOUT", 1, 31, 18 },
    { "WEFT_IB_RETRY_CNT", 0, 7, 7 },
    { "WEFT_IB_SL", 0, 15, 0 },
    { "WEFT_IB_SQ_DEPTH", 16, 8192, 256 },
    { "WEFT_IB_EAGER_SIZE", 256, 64 << 10, 8 << 10 },
    { "WEFT_IB_CHUNK", 4 << 10, 1 << 30, 512 << 10 },
    { "WEFT_IB_STAGING", 64 << 10, 16l << 30, 4 << 20 },
    { "WEFT_IB_REG_CACHE", -1, 1, -1 },
    { "WEFT_IB_KEEPALIVE", 0, 3600 * 1000, 1000 },
};
#define NTP (sizeof(tp_params) / sizeof(tp_params[0]))

/* Every variable an input may set: the rendezvous ones first (read by
 * weft__boot_params_resolve from the input), then those parsed from
 * the environment, then the transports'. "attr.init_method" stands for
 * weft_init's attribute. */
static const char *const env_names[] = {
    "attr.init_method", "WEFT_INIT_METHOD", "WEFT_RANK", "WEFT_SIZE", "WEFT_LOCAL_RANK",
    "WEFT_LOCAL_SIZE", "WEFT_MASTER_ADDR", "WEFT_MASTER_PORT", "WEFT_TIMEOUT",
    "WEFT_AUTH_TOKEN", "WEFT_STORE_EXTERNAL", "RANK", "WORLD_SIZE", "LOCAL_RANK",
    "LOCAL_WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT", "SLURM_PROCID", "SLURM_NTASKS",
    "SLURM_LOCALID", "SLURM_JOB_NODELIST", "SLURM_JOB_ID", "SLURM_NODEID",
    "SLURM_TASKS_PER_NODE", "SLURM_NTASKS_PER_NODE", "OMPI_COMM_WORLD_RANK",
    "OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_LOCAL_RANK", "OMPI_COMM_WORLD_LOCAL_SIZE",
#define FIRST_ENV 29
    "WEFT_SPIN_US", "WEFT_COLL_CHUNK", "WEFT_ALLTOALL_THROTTLE", "WEFT_STREAM_THRESHOLD",
    "WEFT_CUDA_COLL", "WEFT_CUDA_COLL_MIN", "WEFT_DEBUG", "WEFT_DEBUG_SUBSYS", "WEFT_ALGO",
    "WEFT_TRANSPORTS", "WEFT_HOSTID", "WEFT_TUNE", "WEFT_TUNE_ADAPT",
#define FIRST_TRANSPORT 42
    "WEFT_SOCKET_IFNAME", "WEFT_IB_HCA", "WEFT_CUDA_DEVICE", "WEFT_CUDA_MEMOPS",
#define FIRST_TP 46
    /* then tp_params[], by index */
};
#define NNAMES (sizeof(env_names) / sizeof(env_names[0]))
#define NVARS (NNAMES + NTP)
_Static_assert(NNAMES == FIRST_TP, "FIRST_ENV, FIRST_TRANSPORT and FIRST_TP mark the table");

/* WEFT_TIMEOUT, also read by the rendezvous, as shm and ib-verbs read it. */
static const struct tp_param fuzz_tp_timeout = { "WEFT_TIMEOUT", 1, 86400, 300 };

static inline const char *fuzz_env_name(size_t i)
{
    return i < NNAMES ? env_names[i] : tp_params[i - NNAMES].name;
}

/* The number of a variable, or -1. */
static inline int fuzz_env_index(const char *name)
{
    for (size_t i = 0; i < NVARS; i++)
        if (!strcmp(fuzz_env_name(i), name))
            return (int)i;
    return -1;
}

#endif /* WEFT_TESTS_FUZZ_ENV_VARS_H */
