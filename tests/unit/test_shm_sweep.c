/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_shm_sweep.c: what weft__shm_sweep removes from /dev/shm and what
 * it must leave: the files of a job whose processes are all gone go, and
 * so does a segment whose job has no doorbell left; a
 * job with one process running, a job whose doorbell names no process
 * (an older weft), the sweeping job itself, young files and the shm
 * transport's files stay.
 */
#include "config.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "core/progress/shm_sweep.h"

/* A pid no process has: a child that has exited and been reaped. */
static pid_t gone_pid(void)
{
    pid_t pid = fork();

    assert_true(pid >= 0);
    if (pid == 0)
        _exit(0);
    assert_int_equal(waitpid(pid, NULL, 0), pid);
    return pid;
}

static void make(const char *fmt, const char *job, unsigned pid)
{
    char name[256], path[300];
    FILE *f;

    snprintf(name, sizeof(name), fmt, job, pid);
    snprintf(path, sizeof(path), "/dev/shm/%s", name);
    assert_non_null(f = fopen(path, "w"));
    fclose(f);
}

static int exists(const char *fmt, const char *job, unsigned pid)
{
    char name[256], path[300];

    snprintf(name, sizeof(name), fmt, job, pid);
    snprintf(path, sizeof(path), "/dev/shm/%s", name);
    return access(path, F_OK) == 0;
}

static void clean(const char *fmt, const char *job, unsigned pid)
{
    char name[256], path[300];

    snprintf(name, sizeof(name), fmt, job, pid);
    snprintf(path, sizeof(path), "/dev/shm/%s", name);
    unlink(path);
}

/* The files of one job: two doorbells (pid a, pid b), a communicator's
 * segment and a pipelined collectives' one. */
static const char *const files[] = {
    "weft-%s-bell-0-%u", "weft-%s-bell-1-%u", "weft-%s-coll-2-0", "weft-%s-pipe-2-0"
};

static void make_job(const char *job, unsigned a, unsigned b)
{
    make(files[0], job, a);
    make(files[1], job, b);
    make(files[2], job, 0);
    make(files[3], job, 0);
}

static int job_files(const char *job, unsigned a, unsigned b)
{
    return exists(files[0], job, a) + exists(files[1], job, b) + exists(files[2], job, 0) +
           exists(files[3], job, 0);
}

static void clean_job(const char *job, unsigned a, unsigned b)
{
    clean(files[0], job, a);
    clean(files[1], job, b);
    clean(files[2], job, 0);
    clean(files[3], job, 0);
}

static void gone_jobs_are_swept_others_stay(void **state)
{
    char dead[64], half[64], own[64], old[64], orphan[64];
    unsigned gone = (unsigned)gone_pid(), me = (unsigned)getpid();

    (void)state;
    snprintf(dead, sizeof(dead), "5eedded%08x", me);
    snprintf(half, sizeof(half), "5eedhalf%08x", me);
    snprintf(own, sizeof(own), "5eedown%08x", me);
    snprintf(old, sizeof(old), "5eedold%08x", me);
    snprintf(orphan, sizeof(orphan), "5eedorph%08x", me);
    make_job(dead, gone, gone);
    make_job(half, gone, me);
    make_job(own, gone, gone);
    make("weft-%s-bell-0", old, 0);
    make("weft-%s-coll-2-0", old, 0);
    make("weft-shm-%s-0-%u", dead, gone);
    /* Its ranks exited, one before it mapped the segment. */
    make(files[2], orphan, 0);

    /* Young files stay whatever their job. */
    weft__shm_sweep(own, 3600);
    assert_int_equal(job_files(dead, gone, gone), 4);

    weft__shm_sweep(own, 0);
    assert_int_equal(job_files(dead, gone, gone), 0);
    assert_false(exists(files[2], orphan, 0));
    assert_int_equal(job_files(half, gone, me), 4);
    assert_int_equal(job_files(own, gone, gone), 4);
    assert_true(exists("weft-%s-bell-0", old, 0) && exists("weft-%s-coll-2-0", old, 0));
    assert_true(exists("weft-shm-%s-0-%u", dead, gone));

    clean_job(half, gone, me);
    clean_job(own, gone, gone);
    clean("weft-%s-bell-0", old, 0);
    clean("weft-%s-coll-2-0", old, 0);
    clean("weft-shm-%s-0-%u", dead, gone);
}

/* weftrun's sweep at the end of its job: every file of that job goes,
 * the core's and the shm transport's, whatever its processes; a job whose
 * id begins with this one's and a dash (names given with --job-name), and
 * other jobs, stay. */
static void a_finished_job_is_swept_whole(void **state)
{
    char job[64], longer[64], other[64];
    unsigned me = (unsigned)getpid();

    (void)state;
    snprintf(job, sizeof(job), "5eedend%08x", me);
    snprintf(longer, sizeof(longer), "5eedend%08x-2", me);
    snprintf(other, sizeof(other), "5eedoth%08x", me);
    make_job(job, me, me);
    make("weft-shm-%s-0-%u", job, me);
    make("weft-shm-%s-0-%u.wake", job, me);
    make_job(longer, me, me);
    make("weft-shm-%s-0-%u", longer, me);
    make_job(other, me, me);

    weft__shm_sweep_job(job);
    assert_int_equal(job_files(job, me, me), 0);
    assert_false(exists("weft-shm-%s-0-%u", job, me));
    assert_false(exists("weft-shm-%s-0-%u.wake", job, me));
    assert_int_equal(job_files(longer, me, me), 4);
    assert_true(exists("weft-shm-%s-0-%u", longer, me));
    assert_int_equal(job_files(other, me, me), 4);
    clean_job(longer, me, me);
    clean("weft-shm-%s-0-%u", longer, me);
    clean_job(other, me, me);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(gone_jobs_are_swept_others_stay),
        cmocka_unit_test(a_finished_job_is_swept_whole),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
