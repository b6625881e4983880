/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * contract.c: a contract test of the CUDA driver, run on the test double
 * of tests/fakecuda and on the real libcuda.so.1 alike.
 *
 * Why. weft's GPU code is tested on tests/fakecuda, a stand-in for the
 * driver, because no machine that builds weft has a GPU; the double is
 * only worth its likeness to the driver. This program runs the same
 * checks on either, each from what NVIDIA's driver API reference says
 * and weft relies on (contract.h: one stable line per check). make check
 * runs it on the double and compares its lines with
 * tests/gpu/contract.expected (contract.sh); on a GPU machine
 * tests/gpu/run.sh runs it on both drivers and compares the two outputs.
 *
 *   cuda_contract [DRIVER]   DRIVER, else $WEFT_CUDA_DRIVER, else libcuda.so.1
 *
 * Exit status: 0 every checked line gave the documented result, 1 some
 * did not, 2 the checks could not run to the end (a missing function,
 * the watchdog), 3 the driver could not be loaded.
 *
 * The program links no CUDA library: it dlopens the driver and takes its
 * functions with dlsym. Its first line, "driver: test-double" or
 * "driver: nvidia", says which it got (the double exports the int
 * weft_fakecuda_test_double), and is not compared. The IPC and VMM
 * import checks need a second process, which must exec before it uses
 * the driver: the program runs itself again, with a hidden first
 * argument (--ipc-child, --vmm-child) and the driver's path second.
 *
 * This file: loading the driver, reporting, starting the children, and
 * the order of the checks.
 */
#define _GNU_SOURCE
#include "config.h"

#include <dlfcn.h>
#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <spawn.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tests/gpu/contract.h"

#define CT_STR_(x) #x
#define CT_STR(x) CT_STR_(x)

/* A wedged stream (a wait that is never released) must not hang make
 * check or the GPU script: the parent gives up after this long, a child
 * sooner. */
#define CT_WATCHDOG_S 120
#define CT_CHILD_WATCHDOG_S 60

extern char **environ;

struct ct_driver cu;

static int checks, failures;
static const char *driver_path;
static char self[PATH_MAX];

/* ------------------------------------------------------------ reporting */

static void vline(const char *prefix, const char *name, const char *fmt, va_list ap, char *out,
                  size_t cap)
{
    vsnprintf(out, cap, fmt, ap);
    printf("%s%s: %s\n", prefix, name, out);
}

void ct_check(const char *name, const char *expect, const char *fmt, ...)
{
    char got[256];
    va_list ap;

    va_start(ap, fmt);
    vline("", name, fmt, ap, got, sizeof(got));
    va_end(ap);
    checks++;
    if (strcmp(got, expect)) {
        failures++;
        fflush(stdout);
        fprintf(stderr, "contract: %s: got '%s', the reference says '%s'\n", name, got, expect);
    }
}

void ct_info(const char *name, const char *fmt, ...)
{
    char got[256];
    va_list ap;

    va_start(ap, fmt);
    vline("info ", name, fmt, ap, got, sizeof(got));
    va_end(ap);
}

int ct_failed(void)
{
    return failures != 0;
}

void ct_fail(const char *name, const char *why)
{
    failures++;
    fflush(stdout);
    fprintf(stderr, "contract: %s: %s\n", name, why);
}

const char *ct_err(CUresult r)
{
    static char buf[32];
    const char *name = NULL;

    if (cu.cuGetErrorName && cu.cuGetErrorName(r, &name) == CUDA_SUCCESS && name)
        return name;
    snprintf(buf, sizeof(buf), "CUresult=%d", (int)r);
    return buf;
}

void ct_pattern(unsigned char *p, size_t n, unsigned seed)
{
    for (size_t i = 0; i < n; i++)
        p[i] = (unsigned char)(i * 131u + seed * 29u + (i >> 8));
}

long ct_pattern_bad(const unsigned char *p, size_t n, unsigned seed)
{
    for (size_t i = 0; i < n; i++)
        if (p[i] != (unsigned char)(i * 131u + seed * 29u + (i >> 8)))
            return (long)i;
    return -1;
}

int ct_dev_attr(CUdevice_attribute attr)
{
    int v = -1;
    return cu.cuDeviceGetAttribute(&v, attr, 0) == CUDA_SUCCESS ? v : -1;
}

/* ----------------------------------------------------- driver, children */

/* 0; 3 the driver does not load, 2 it lacks a function (said on stderr). */
static int load(const char *path, int quiet)
{
    void *dl = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    int missing = 0;

    if (!dl) {
        fprintf(stderr, "contract: cannot load the CUDA driver %s: %s\n", path, dlerror());
        return 3;
    }
    driver_path = path;
    /* dlsym's void * becomes a function pointer through memcpy: ISO C
     * has no cast between the two, POSIX guarantees they have one form. */
#define CT_LOAD(name)                                                               \
    do {                                                                            \
        void *p_ = dlsym(dl, CT_STR(name));                                         \
        if (p_)                                                                     \
            memcpy(&cu.name, &p_, sizeof(p_));                                      \
        else {                                                                      \
            fprintf(stderr, "contract: %s exports no %s\n", path, CT_STR(name));    \
            missing++;                                                              \
        }                                                                           \
    } while (0);
    CT_DRIVER_FUNCS(CT_LOAD)
#undef CT_LOAD
    if (!quiet) {
        printf("driver: %s\n", dlsym(dl, "weft_fakecuda_test_double") ? "test-double" : "nvidia");
        ct_check("driver-functions", "all", "%s", missing ? "missing" : "all");
    }
    return missing ? 2 : 0;
}

static void watchdog(int sig)
{
    static const char msg[] = "contract: the watchdog fired: a driver call or a stream hangs\n";
    ssize_t w = write(2, msg, sizeof(msg) - 1);

    (void)sig;
    (void)w;
    _exit(2);
}

static void arm_watchdog(unsigned seconds)
{
    signal(SIGALRM, watchdog);
    alarm(seconds);
}

int ct_spawn_child(const char *const *args, const char *what)
{
    const char *argv[16];
    int n = 0, status;
    pid_t pid;

    argv[n++] = self;
    argv[n++] = args[0];
    argv[n++] = driver_path;
    for (int i = 1; args[i] && n < 15; i++)
        argv[n++] = args[i];
    argv[n] = NULL;
    /* the child's lines follow ours on the same stdout */
    fflush(stdout);
    if (posix_spawn(&pid, self, NULL, NULL, (char *const *)argv, environ)) {
        ct_fail(what, "cannot start the child process");
        return -1;
    }
    while (waitpid(pid, &status, 0) < 0) {
        if (errno != EINTR) {
            ct_fail(what, "waitpid failed");
            return -1;
        }
    }
    if (WIFEXITED(status))
        return WEXITSTATUS(status);
    return 128 + (WIFSIGNALED(status) ? WTERMSIG(status) : 0);
}

int ct_child_init(void)
{
    CUcontext ctx;
    CUresult r;

    if ((r = cu.cuInit(0)) || (r = cu.cuDevicePrimaryCtxRetain(&ctx, 0)) ||
        (r = cu.cuCtxSetCurrent(ctx))) {
        printf("child-init: %s\n", ct_err(r));
        return -1;
    }
    return 0;
}

/* ------------------------------------------------------------------ main */

/* The children are this very file: a libtool wrapper would not do, so
 * the program links nothing libtool builds. */
static int find_self(void)
{
    ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);

    if (n <= 0) {
        perror("contract: readlink /proc/self/exe");
        return -1;
    }
    self[n] = '\0';
    return 0;
}

static int child_main(int argc, char **argv)
{
    int rc;

    arm_watchdog(CT_CHILD_WATCHDOG_S);
    if (find_self())
        return 2;
    if ((rc = load(argv[2], 1)))
        return rc;
    if (!strcmp(argv[1], "--ipc-child"))
        return ct_ipc_child(argc - 3, argv + 3);
    return ct_vmm_child(argc - 3, argv + 3);
}

int main(int argc, char **argv)
{
    const char *path;
    int rc;

    setvbuf(stdout, NULL, _IOLBF, 0);
    if (argc >= 3 && (!strcmp(argv[1], "--ipc-child") || !strcmp(argv[1], "--vmm-child")))
        return child_main(argc, argv);
    if (argc > 2 || (argc == 2 && argv[1][0] == '-')) {
        fprintf(stderr, "usage: %s [DRIVER]   (default: $WEFT_CUDA_DRIVER, else libcuda.so.1)\n",
                argv[0]);
        return 2;
    }
    if (find_self())
        return 2;
    path = argc == 2 ? argv[1] : getenv("WEFT_CUDA_DRIVER");
    if (!path || !*path)
        path = "libcuda.so.1";
    arm_watchdog(CT_WATCHDOG_S);
    if ((rc = load(path, 0)))
        return rc;
    if (ct_check_init() == 0) {
        ct_check_memory();
        ct_check_pointers();
        ct_check_streams();
        ct_check_ipc();
        ct_check_vmm();
        ct_check_dmabuf();
        ct_check_misaligned();
    }
    fflush(stdout);
    if (failures) {
        fprintf(stderr, "contract: %d of %d checked results differ from the reference\n",
                failures, checks);
        return 1;
    }
    fprintf(stderr, "contract: all %d checked results as the reference says\n", checks);
    return 0;
}
