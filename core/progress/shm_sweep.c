/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * shm_sweep.c: removing what killed jobs left in /dev/shm (see
 * shm_sweep.h).
 */
#include "config.h"

#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "core/base/log.h"
#include "core/progress/shm_sweep.h"

#define SHM_DIR "/dev/shm"
/* Jobs looked at in one sweep; more are left for the next one. */
#define SWEEP_MAX_JOBS 64

typedef struct job_seen {
    char id[64];
    int alive;          /* a doorbell's process runs (or may: unsure) */
} job_seen_t;

static const char *const kinds[] = { "-bell-", "-coll-", "-pipe-" };

/* The job id and the kind (index in kinds) of a weft core file's name,
 * and what follows the kind; -1 when it is not one. */
static int parse_name(const char *name, char *job, size_t cap, const char **rest)
{
    if (strncmp(name, "weft-", 5) || !strncmp(name, "weft-shm-", 9))
        return -1;
    for (int k = 0; k < (int)(sizeof(kinds) / sizeof(kinds[0])); k++) {
        const char *at = strstr(name + 5, kinds[k]);
        size_t len;

        if (!at || at == name + 5)
            continue;
        len = (size_t)(at - (name + 5));
        if (len >= cap)
            return -1;
        memcpy(job, name + 5, len);
        job[len] = '\0';
        *rest = at + strlen(kinds[k]);
        return k;
    }
    return -1;
}

/* The pid of a doorbell's "<rank>-<pid>", 0 when it names none. */
static pid_t bell_pid(const char *rest)
{
    const char *dash = strchr(rest, '-');
    char *end;
    unsigned long v;

    if (!dash)
        return 0;
    v = strtoul(dash + 1, &end, 10);
    return *end || end == dash + 1 || v == 0 || v > 0x7fffffffUL ? 0 : (pid_t)v;
}

static job_seen_t *find_job(job_seen_t *jobs, int *n, const char *id, int add)
{
    for (int i = 0; i < *n; i++)
        if (!strcmp(jobs[i].id, id))
            return &jobs[i];
    if (!add || *n == SWEEP_MAX_JOBS)
        return NULL;
    snprintf(jobs[*n].id, sizeof(jobs[*n].id), "%s", id);
    jobs[*n].alive = 0;
    return &jobs[(*n)++];
}

/* This user's file, old enough to judge. */
static int ours_and_old(const char *name, time_t now, int min_age_s)
{
    char path[sizeof(SHM_DIR) + 256];
    struct stat st;

    snprintf(path, sizeof(path), SHM_DIR "/%s", name);
    return lstat(path, &st) == 0 && st.st_uid == getuid() &&
           now - st.st_ctime >= min_age_s;
}

void weft__shm_sweep(const char *own_job, int min_age_s)
{
    DIR *dir = opendir(SHM_DIR);
    job_seen_t jobs[SWEEP_MAX_JOBS];
    time_t now = time(NULL);
    struct dirent *e;
    int njobs = 0;

    if (!dir)
        return;
    /* First the jobs and whether any of their processes runs. */
    while ((e = readdir(dir))) {
        char id[64];
        const char *rest;
        job_seen_t *j;
        pid_t pid;

        int kind = parse_name(e->d_name, id, sizeof(id), &rest);

        if (kind < 0 || !strcmp(id, own_job) || !(j = find_job(jobs, &njobs, id, 1)) ||
            kind != 0)
            continue;
        pid = bell_pid(rest);
        /* A doorbell without a pid (an older weft) or of a process that
         * may be running keeps the job. */
        if (!pid || kill(pid, 0) == 0 || errno != ESRCH)
            j->alive = 1;
    }
    rewinddir(dir);
    while ((e = readdir(dir))) {
        char id[64], path[sizeof(SHM_DIR) + 256];
        const char *rest;
        job_seen_t *j;

        if (parse_name(e->d_name, id, sizeof(id), &rest) < 0 || !strcmp(id, own_job) ||
            !(j = find_job(jobs, &njobs, id, 0)) || j->alive ||
            !ours_and_old(e->d_name, now, min_age_s))
            continue;
        snprintf(path, sizeof(path), SHM_DIR "/%s", e->d_name);
        if (unlink(path) == 0)
            WEFT_INFO(INIT, "removed %s: every process of job %s on this node is gone", path,
                      id);
    }
    closedir(dir);
}

/* Whether s begins with one of the core's kinds ("-bell-", ...). */
static int core_kind(const char *s)
{
    for (size_t k = 0; k < sizeof(kinds) / sizeof(kinds[0]); k++)
        if (!strncmp(s, kinds[k], strlen(kinds[k])))
            return 1;
    return 0;
}

/* Whether s is "<rank>-<pid>" or "<rank>-<pid>.wake", as the shm
 * transport ends its names. */
static int shm_transport_tail(const char *s)
{
    const char *p = s;

    while (*p >= '0' && *p <= '9')
        p++;
    if (p == s || *p++ != '-')
        return 0;
    s = p;
    while (*p >= '0' && *p <= '9')
        p++;
    return p != s && (!*p || !strcmp(p, ".wake"));
}

void weft__shm_sweep_job(const char *job)
{
    size_t len = strlen(job);
    DIR *dir;
    struct dirent *e;

    if (!len || !(dir = opendir(SHM_DIR)))
        return;
    while ((e = readdir(dir))) {
        const char *name = e->d_name;
        char path[sizeof(SHM_DIR) + 256];
        struct stat st;

        /* The core's weft-<job>-{bell,coll,pipe}-..., the shm transport's
         * weft-shm-<job>-<rank>-<pid>[.wake]; not those of a job whose id
         * merely begins with this one's ("<job>-2"). */
        if (strncmp(name, "weft-", 5))
            continue;
        name += 5;
        if (!strncmp(name, "shm-", 4) && !strncmp(name + 4, job, len) && name[4 + len] == '-') {
            if (!shm_transport_tail(name + 4 + len + 1))
                continue;
        } else if (strncmp(name, job, len) || name[len] != '-' || !core_kind(name + len)) {
            continue;
        }
        snprintf(path, sizeof(path), SHM_DIR "/%s", e->d_name);
        if (lstat(path, &st) == 0 && st.st_uid == getuid() && unlink(path) == 0)
            WEFT_INFO(INIT, "removed %s: job %s is over on this node", path, job);
    }
    closedir(dir);
}
