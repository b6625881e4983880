/* SPDX-License-Identifier: BSD-3-Clause */
/* fctest.c: helpers of the CUDA test double's tests (see fctest.h). */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tests/fakecuda/fctest.h"

void fct_fail(int line, const char *what, CUresult got, CUresult want)
{
    fprintf(stderr, "line %d: %s: got %d, want %d\n", line, what, (int)got, (int)want);
    fflush(stderr);
    /* exit codes wrap at 256: the line is on stderr, the code says "failed" */
    _exit(1);
}

CUcontext fct_up(int dev)
{
    CUcontext ctx;
    FCT_OK(cuInit(0));
    FCT_OK(cuDevicePrimaryCtxRetain(&ctx, dev));
    FCT_OK(cuCtxSetCurrent(ctx));
    return ctx;
}

int fct_child(void (*fn)(void))
{
    fflush(NULL);
    pid_t pid = fork();
    if (pid < 0)
        return -1;
    if (pid == 0) {
        fn();
        /* exit, not _exit: libraries' destructors run as in any program
         * (the software RDMA device leaves its fabric in one). */
        exit(0);
    }
    int st;
    if (waitpid(pid, &st, 0) != pid)
        return -1;
    return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}
