/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * weftrun_env.c: the job's token and the environment every rank starts with.
 */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <unistd.h>

#include "tools/weftrun.h"

extern char **environ;

/* The variables weftrun sets, in the order they appear after the inherited
 * ones: the per-rank ones first. torchrun's names describe the job to the
 * program and its framework; MASTER_ADDR:MASTER_PORT is where the
 * framework's rank 0 listens (torch's env:// starts a TCPStore there).
 * weft_init reads WEFT_* before torchrun's names, so weft's own store goes
 * in WEFT_MASTER_ADDR:WEFT_MASTER_PORT and never claims the framework's port. */
enum {
    VAR_RANK,
    VAR_LOCAL_RANK,
    VAR_ROLE_RANK,
    VAR_WEFT_RANK,
    VAR_WEFT_LOCAL_RANK,
    VAR_WORLD_SIZE,
    VAR_LOCAL_WORLD_SIZE,
    VAR_GROUP_RANK,
    VAR_GROUP_WORLD_SIZE,
    VAR_ROLE_WORLD_SIZE,
    VAR_MASTER_ADDR,
    VAR_MASTER_PORT,
    VAR_WEFT_INIT_METHOD,
    VAR_WEFT_SIZE,
    VAR_WEFT_LOCAL_SIZE,
    VAR_WEFT_MASTER_ADDR,
    VAR_WEFT_MASTER_PORT,
    VAR_AUTH_TOKEN,
    VAR_STORE_EXTERNAL,
    VAR_JOB_NAME,
    VAR_COUNT
};

static const char *const var_names[VAR_COUNT] = {
    "RANK", "LOCAL_RANK", "ROLE_RANK", "WEFT_RANK", "WEFT_LOCAL_RANK", "WORLD_SIZE",
    "LOCAL_WORLD_SIZE", "GROUP_RANK", "GROUP_WORLD_SIZE", "ROLE_WORLD_SIZE", "MASTER_ADDR",
    "MASTER_PORT", "WEFT_INIT_METHOD", "WEFT_SIZE", "WEFT_LOCAL_SIZE", "WEFT_MASTER_ADDR",
    "WEFT_MASTER_PORT", "WEFT_AUTH_TOKEN", "WEFT_STORE_EXTERNAL", "WEFT_JOB_NAME"
};

int weftrun_make_token(char hex[WEFTRUN_TOKEN_HEX + 1])
{
    static const char digits[] = "0123456789abcdef";
    unsigned char raw[WEFTRUN_TOKEN_HEX / 2];
    size_t got = 0;

    while (got < sizeof(raw)) {
        ssize_t n = getrandom(raw + got, sizeof(raw) - got, 0);

        if (n < 0) {
            if (errno == EINTR)
                continue;
            return -1;
        }
        got += (size_t)n;
    }
    for (size_t i = 0; i < sizeof(raw); i++) {
        hex[2 * i] = digits[raw[i] >> 4];
        hex[2 * i + 1] = digits[raw[i] & 0xf];
    }
    hex[WEFTRUN_TOKEN_HEX] = '\0';
    return 0;
}

/* Whether the inherited "NAME=value" entry is one weftrun replaces. */
static int replaced(const char *entry, int set_job_name)
{
    const char *eq = strchr(entry, '=');
    size_t len = eq != NULL ? (size_t)(eq - entry) : strlen(entry);

    for (int i = 0; i < VAR_COUNT; i++) {
        if (i == VAR_JOB_NAME && !set_job_name)
            continue;
        if (strlen(var_names[i]) == len && memcmp(var_names[i], entry, len) == 0)
            return 1;
    }
    return 0;
}

static char *var(const char *name, const char *value)
{
    char *s;

    if (asprintf(&s, "%s=%s", name, value) < 0)
        return NULL;
    return s;
}

static char *var_int(const char *name, int value)
{
    char num[16];

    snprintf(num, sizeof(num), "%d", value);
    return var(name, num);
}

int weftrun_env_init(struct weftrun_env *env, const struct weftrun_env_job *job)
{
    int set_job_name = job->job_name != NULL;
    size_t ninherited = 0, n = 0;
    char **vars;

    memset(env, 0, sizeof(*env));
    for (char **e = environ; *e != NULL; e++)
        ninherited++;
    vars = calloc(ninherited + VAR_COUNT + 1, sizeof(*vars));
    if (vars == NULL)
        return -1;
    for (char **e = environ; *e != NULL; e++)
        if (!replaced(*e, set_job_name))
            vars[n++] = *e;
    env->vars = vars;
    /* The per-rank slots point at buffers inside env, not at heap strings. */
    vars[n++] = env->rank_var;
    vars[n++] = env->local_rank_var;
    vars[n++] = env->role_rank_var;
    vars[n++] = env->weft_rank_var;
    vars[n++] = env->weft_local_rank_var;
    env->first_owned = n;

    vars[n++] = var_int("WORLD_SIZE", job->world_size);
    vars[n++] = var_int("LOCAL_WORLD_SIZE", job->local_world_size);
    vars[n++] = var_int("GROUP_RANK", job->group_rank);
    vars[n++] = var_int("GROUP_WORLD_SIZE", job->group_world_size);
    vars[n++] = var_int("ROLE_WORLD_SIZE", job->world_size);
    vars[n++] = var("MASTER_ADDR", job->master_addr);
    vars[n++] = var_int("MASTER_PORT", job->framework_port);
    /* Set rather than inherited: a WEFT_INIT_METHOD of the user's shell
     * would send the ranks past the store this job hosts. */
    vars[n++] = var("WEFT_INIT_METHOD", "env://");
    vars[n++] = var_int("WEFT_SIZE", job->world_size);
    vars[n++] = var_int("WEFT_LOCAL_SIZE", job->local_world_size);
    vars[n++] = var("WEFT_MASTER_ADDR", job->master_addr);
    vars[n++] = var_int("WEFT_MASTER_PORT", job->store_port);
    vars[n++] = var("WEFT_AUTH_TOKEN", job->token);
    /* weft_init's rank 0 must not start a store of its own: this launcher
     * (node 0's) hosts it. */
    vars[n++] = var("WEFT_STORE_EXTERNAL", "1");
    if (set_job_name)
        vars[n++] = var("WEFT_JOB_NAME", job->job_name);
    env->nvars = n;
    for (size_t i = env->first_owned; i < n; i++)
        if (vars[i] == NULL)
            goto err_free;
    return 0;

err_free:
    weftrun_env_fini(env);
    errno = ENOMEM;
    return -1;
}

char **weftrun_env_rank(struct weftrun_env *env, int rank, int local_rank)
{
    snprintf(env->rank_var, sizeof(env->rank_var), "RANK=%d", rank);
    snprintf(env->local_rank_var, sizeof(env->local_rank_var), "LOCAL_RANK=%d", local_rank);
    snprintf(env->role_rank_var, sizeof(env->role_rank_var), "ROLE_RANK=%d", rank);
    snprintf(env->weft_rank_var, sizeof(env->weft_rank_var), "WEFT_RANK=%d", rank);
    snprintf(env->weft_local_rank_var, sizeof(env->weft_local_rank_var), "WEFT_LOCAL_RANK=%d",
             local_rank);
    return env->vars;
}

void weftrun_env_fini(struct weftrun_env *env)
{
    if (env->vars != NULL)
        for (size_t i = env->first_owned; i < env->nvars; i++)
            free(env->vars[i]);
    free(env->vars);
    memset(env, 0, sizeof(*env));
}
