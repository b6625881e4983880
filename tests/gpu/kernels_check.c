/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * kernels_check.c: weft's GPU reduction kernels, as the cuda-ipc plugin
 * embeds and launches them, run on a real GPU and compared bit for bit
 * with weft's host kernels (tests/gpu/kcheck.c: every dtype x op, AVG's
 * finish, PREMUL_SUM's scaling, special values). The plugin's unit test
 * runs the same comparisons on the CUDA test double, which computes the
 * kernels' documented semantics on the host; only this program runs
 * reduce.cu's code. tests/gpu/run.sh runs it on a GPU machine.
 *
 *   kernels_check
 *
 * The driver is the plugin's: WEFT_CUDA_DRIVER, else libcuda.so.1
 * (WEFT_CUDA_ALLOW_TEST_DRIVER=1 lets it be the double); WEFT_CUDA_DEVICE
 * picks the GPU. Prints the plugin's INFO lines, every mismatch (the
 * first few of each comparison) and a summary line.
 *
 * Exit status: 0 every result the host's; 1 a mismatch, or the kernels
 * would not load or launch; 77 nothing to check (weft built without
 * nvcc, or no usable driver or GPU), with the reason.
 */
#include "config.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "plugins/cuda-ipc/cuda_ipc.h"
#include "plugins/cuda-ipc/kernels/cuda_ipc_fatbin.h"
#include "tests/gpu/kcheck.h"

extern const weft_transport_v1_t weft_transport_v1;

static char last_error[1024];

static void print_log(int level, const char *plugin, const char *fmt, ...)
{
    va_list ap;

    if (level > WEFT_TRANSPORT_LOG_INFO)
        return;
    printf("%s %s: ", level == WEFT_TRANSPORT_LOG_WARN ? "WARN" : "INFO", plugin);
    va_start(ap, fmt);
    vprintf(fmt, ap);
    va_end(ap);
    putchar('\n');
}

static void keep_error(const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(last_error, sizeof(last_error), fmt, ap);
    va_end(ap);
}

static const char *env_param(const char *name)
{
    return getenv(name);
}

static const weft_transport_core_t core = {
    .struct_size = sizeof(weft_transport_core_t),
    .rank = 0,
    .size = 1,
    .job_id = "",
    .log = print_log,
    .set_error = keep_error,
    .get_param = env_param,
};

static double now(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

int main(int argc, char **argv)
{
    const struct cipc_ctx *c;
    char why[WCU_WHY_MAX];
    struct kcheck k;
    double t0 = now();
    long bad;

    if (argc > 1) {
        fprintf(stderr, "usage: %s (no arguments; WEFT_CUDA_DRIVER, WEFT_CUDA_DEVICE)\n",
                argv[0]);
        return 2;
    }
    setvbuf(stdout, NULL, _IOLBF, 0);
    if (!weft__cuda_ipc_fatbin_size) {
        printf("SKIP: weft was built without GPU kernels (%s)\n", weft__cuda_ipc_fatbin_info);
        return 77;
    }
    if (kcheck_up(&k, &weft_transport_v1, &core, last_error, stdout, why, sizeof(why)) != 0) {
        printf("SKIP: %s%s%s\n", why, *last_error ? ": " : "", last_error);
        return 77;
    }
    c = k.ctx;
    printf("device: %s, sm_%d%d (%s); fatbin: %zu bytes, %s\n", c->dev.name, c->dev.cc_major,
           c->dev.cc_minor, c->drv.test_double ? "the CUDA test double" : c->drv.path,
           weft__cuda_ipc_fatbin_size, weft__cuda_ipc_fatbin_info);
    if (!c->kern.module) {
        printf("FAIL: the kernels did not load: %s\n", c->kern.why);
        kcheck_down(&k);
        return 1;
    }
    bad = kcheck_run(&k, KCHECK_ALL);
    printf("%s: %ld comparisons, %ld mismatched elements, %ld accepted exceptions (PREMUL_SUM "
           "scaling of a NaN by a NaN), %.1f s\n", bad == 0 ? "PASS" : "FAIL", k.checks,
           k.mismatches, k.exceptions, now() - t0);
    kcheck_down(&k);
    return bad == 0 ? 0 : 1;
}
