/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * cipc_test.c: the harness of the cuda-ipc plugin's unit tests
 * (cipc_test.h).
 */
#include "config.h"

#include <errno.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "tests/unit/cipc_test.h"

char last_error[1024];

void fail_at(int line, const char *what, long long got, long long want)
{
    fprintf(stderr, "line %d: %s: got %lld, want %lld (last error: %s)\n", line, what, got,
            want, last_error);
    fflush(stderr);
    _exit(1);
}

int cipc_in_child(void (*fn)(void), unsigned seconds)
{
    static const int crashes[] = { SIGSEGV, SIGBUS, SIGILL, SIGFPE };
    pid_t pid;
    int st;

    fflush(NULL);
    pid = fork();
    if (pid < 0)
        return -1;
    if (pid == 0) {
        for (size_t i = 0; i < sizeof(crashes) / sizeof(crashes[0]); i++)
            signal(crashes[i], SIG_DFL);
        alarm(seconds);
        fn();
        /* exit, not _exit: libraries clean up as at the end of any program. */
        exit(0);
    }
    while (waitpid(pid, &st, 0) != pid)
        if (errno != EINTR)
            return -1;
    if (WIFSIGNALED(st)) {
        print_message("child ended by signal %d\n", WTERMSIG(st));
        return 128 + WTERMSIG(st);
    }
    return WEXITSTATUS(st);
}

static struct logged {
    int level;
    char msg[512];
} logs[64];
static int nlogs;

static void test_log(int level, const char *plugin, const char *fmt, ...)
{
    va_list ap;

    (void)plugin;
    if (nlogs == (int)(sizeof(logs) / sizeof(logs[0])))
        return;
    logs[nlogs].level = level;
    va_start(ap, fmt);
    vsnprintf(logs[nlogs].msg, sizeof(logs[nlogs].msg), fmt, ap);
    va_end(ap);
    nlogs++;
}

static void quiet_log(int level, const char *plugin, const char *fmt, ...)
{
    (void)level;
    (void)plugin;
    (void)fmt;
}

static void test_set_error(const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(last_error, sizeof(last_error), fmt, ap);
    va_end(ap);
}

/* Parameters come from the environment, as the core's do. */
static const char *test_param(const char *name)
{
    return getenv(name);
}

weft_transport_core_t core = {
    .struct_size = sizeof(weft_transport_core_t),
    .rank = 0,
    .size = 1,
    .job_id = "",
    .log = test_log,
    .set_error = test_set_error,
    .get_param = test_param,
};

weft_transport_core_t quiet_core = {
    .struct_size = sizeof(weft_transport_core_t),
    .log = quiet_log,
    .set_error = test_set_error,
    .get_param = test_param,
};

int count_logs(int level, const char *text)
{
    int n = 0;

    for (int i = 0; i < nlogs; i++)
        n += logs[i].level == level && strstr(logs[i].msg, text) != NULL;
    return n;
}

void use_double(const char *devices, const char *faults)
{
    setenv("WEFT_CUDA_DRIVER", FAKECUDA, 1);
    setenv("WEFT_CUDA_ALLOW_TEST_DRIVER", "1", 1);
    setenv("WEFT_FAKECUDA_DEVICES", devices, 1);
    if (faults)
        setenv("WEFT_FAKECUDA_FAULTS", faults, 1);
}
