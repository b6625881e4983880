/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * weftrun_spawn.c: starting one rank.
 *
 * Between fork and exec the child only makes system calls: weftrun may have
 * a store thread, so another thread could hold a lock (malloc's, stdio's)
 * at the moment of fork. Everything the child needs is prepared before.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <unistd.h>

#include "tools/weftrun.h"

extern char **environ;

/* What the child reports through the exec pipe when it cannot run the
 * program; nothing arrives (end of file) when exec succeeded. */
enum child_stage {
    STAGE_PDEATHSIG,
    STAGE_STDIN,
    STAGE_OUTPUT,
    STAGE_BIND,
    STAGE_EXEC
};

struct child_error {
    int stage;
    int err;
};

static const char *const stage_text[] = {
    [STAGE_PDEATHSIG] = "prctl(PR_SET_PDEATHSIG)",
    [STAGE_STDIN] = "opening /dev/null as standard input",
    [STAGE_OUTPUT] = "redirecting output into weftrun's pipes",
    [STAGE_BIND] = "binding it to its CPUs (sched_setaffinity)",
    [STAGE_EXEC] = "exec",
};

/* The shell's convention: 127 for a program that is not there, 126 for
 * one that is there but cannot be run. */
static int exec_exit_code(const struct child_error *e)
{
    if (e->stage == STAGE_EXEC && (e->err == ENOENT || e->err == ENOTDIR))
        return 127;
    return 126;
}

static void __attribute__((noreturn)) child_fail(int report_fd, int stage, int err)
{
    struct child_error e = { stage, err };
    ssize_t n = write(report_fd, &e, sizeof(e));

    (void)n;
    _exit(exec_exit_code(&e));
}

/* dup2 onto the same number keeps FD_CLOEXEC, which would close the
 * stream at exec; that happens when weftrun itself started without fd 1
 * or 2 and pipe2 handed out that number. */
static int move_fd(int from, int to)
{
    if (from == to)
        return fcntl(to, F_SETFD, 0);
    return dup2(from, to) < 0 ? -1 : 0;
}

static void __attribute__((noreturn)) child(const struct weftrun_spawn_req *req, pid_t parent,
                                            int report_fd, int out_w, int err_w)
{
    /* Also done by the parent: whichever runs first, the group exists
     * before either signals it. */
    setpgid(0, 0);
    if (prctl(PR_SET_PDEATHSIG, SIGKILL) != 0)
        child_fail(report_fd, STAGE_PDEATHSIG, errno);
    /* weftrun died before prctl took effect: no signal will come. */
    if (getppid() != parent)
        _exit(1);

    if (req->stdin_null) {
        int fd = open("/dev/null", O_RDONLY | O_CLOEXEC);

        if (fd < 0 || move_fd(fd, 0) != 0)
            child_fail(report_fd, STAGE_STDIN, errno);
    }
    if (req->tag_output) {
        if (move_fd(out_w, 1) != 0 || move_fd(err_w, 2) != 0)
            child_fail(report_fd, STAGE_OUTPUT, errno);
    }

    /* Before exec, so that the program's first thread and everything it
     * allocates start where they will stay. */
    if (req->cpus && sched_setaffinity(0, req->cpus_size, req->cpus) != 0 && req->bind_required)
        child_fail(report_fd, STAGE_BIND, errno);

    sigaction(SIGPIPE, req->sigpipe, NULL);
    sigprocmask(SIG_SETMASK, req->child_mask, NULL);
    environ = req->envp;
    execvp(req->argv[0], req->argv);
    child_fail(report_fd, STAGE_EXEC, errno);
}

/* Blocks until the child exec'd (its end of the pipe closes) or reported a
 * failure; both happen right after fork, the child waits for nothing. */
static int read_report(int fd, struct child_error *e)
{
    size_t got = 0;

    while (got < sizeof(*e)) {
        ssize_t n = read(fd, (char *)e + got, sizeof(*e) - got);

        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return 0;
        got += (size_t)n;
    }
    return 1;
}

enum weftrun_spawn_result weftrun_spawn(const struct weftrun_spawn_req *req, pid_t *pid,
                                        int *out_fd, int *err_fd, int *exit_code)
{
    int report[2], out[2] = { -1, -1 }, err[2] = { -1, -1 };
    pid_t parent = getpid(), p;
    struct child_error e;
    int saved;

    if (pipe2(report, O_CLOEXEC) != 0) {
        saved = errno;
        goto err_report;
    }
    if (req->tag_output) {
        if (pipe2(out, O_CLOEXEC) != 0) {
            saved = errno;
            goto err_close_report;
        }
        if (pipe2(err, O_CLOEXEC) != 0) {
            saved = errno;
            goto err_close_out;
        }
    }

    p = fork();
    if (p < 0) {
        saved = errno;
        goto err_close_err;
    }
    if (p == 0)
        child(req, parent, report[1], out[1], err[1]);

    setpgid(p, p);
    close(report[1]);
    if (req->tag_output) {
        close(out[1]);
        close(err[1]);
        fcntl(out[0], F_SETFL, O_NONBLOCK);
        fcntl(err[0], F_SETFL, O_NONBLOCK);
    }
    *pid = p;
    *out_fd = out[0];
    *err_fd = err[0];
    if (read_report(report[0], &e)) {
        close(report[0]);
        if (e.stage == STAGE_EXEC)
            fprintf(stderr, "weftrun: cannot run %s: %s\n", req->argv[0], strerror(e.err));
        else
            fprintf(stderr, "weftrun: cannot start rank %d: %s: %s\n", req->rank,
                    e.stage >= 0 && e.stage < STAGE_EXEC ? stage_text[e.stage] : "setup",
                    strerror(e.err));
        *exit_code = exec_exit_code(&e);
        return WEFTRUN_SPAWN_EXEC_FAILED;
    }
    close(report[0]);
    return WEFTRUN_SPAWN_OK;

err_close_err:
    if (req->tag_output) {
        close(err[0]);
        close(err[1]);
    }
err_close_out:
    if (req->tag_output) {
        close(out[0]);
        close(out[1]);
    }
err_close_report:
    close(report[0]);
    close(report[1]);
err_report:
    fprintf(stderr, "weftrun: cannot start rank %d: %s\n", req->rank, strerror(saved));
    *exit_code = 1;
    return WEFTRUN_SPAWN_NO_PROCESS;
}
