/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * fault.c: WEFT_FAKECUDA_FAULTS, read by cuInit, a list separated by
 * commas, semicolons or blanks:
 *     fail=NAME@N[:ERROR]  the Nth call (from 1) of the exported function
 *                          NAME (its real name: cuMemAlloc_v2) fails with
 *                          ERROR, a CUresult number or name (default
 *                          CUDA_ERROR_UNKNOWN); later calls succeed again
 *     novmm      the devices say they have no virtual memory management
 *                and cannot export POSIX file descriptors, and the VMM
 *                calls fail CUDA_ERROR_NOT_SUPPORTED
 *     nomemops   no stream memory operations: the attributes say so and
 *                cuStreamWriteValue32/WaitValue32 fail CUDA_ERROR_NOT_SUPPORTED
 *     noipc      no legacy IPC: the attributes say so and
 *                cuIpcGetMemHandle and cuIpcGetEventHandle fail
 *                CUDA_ERROR_NOT_SUPPORTED
 *     nolaunch   no modules or kernels: cuModuleLoadData, cuModuleUnload,
 *                cuModuleGetFunction and cuLaunchKernel fail
 *                CUDA_ERROR_NOT_SUPPORTED
 * A word it does not know is reported on stderr and ignored. Calls are
 * counted from cuInit on (cuInit itself counts as its first call).
 */
#include "config.h"

#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "tests/fakecuda/fakecuda.h"

#define FC_MAX_RULES 16

static struct rule {
    char name[64];
    unsigned long nth;
    CUresult error;
    atomic_ulong calls;
} rules[FC_MAX_RULES];
static int nrules;

static CUresult parse_error(const char *s, bool *ok)
{
    *ok = true;
    char *end;
    unsigned long v = strtoul(s, &end, 0);
    if (*s && !*end)
        return (CUresult)v;
    for (int code = 0; code < 1000; code++) {
        const char *name;
        if (cuGetErrorName((CUresult)code, &name) == CUDA_SUCCESS && !strcmp(name, s))
            return (CUresult)code;
    }
    *ok = false;
    return CUDA_ERROR_UNKNOWN;
}

static void parse_fail(const char *arg)
{
    const char *at = strchr(arg, '@');
    if (!at || at == arg || (size_t)(at - arg) >= sizeof(rules[0].name) ||
        nrules == FC_MAX_RULES) {
        fc_log("WEFT_FAKECUDA_FAULTS: bad fail=%s (want NAME@N[:ERROR])", arg);
        return;
    }
    struct rule *r = &rules[nrules];
    memcpy(r->name, arg, (size_t)(at - arg));
    r->name[at - arg] = '\0';
    char *end;
    r->nth = strtoul(at + 1, &end, 10);
    r->error = CUDA_ERROR_UNKNOWN;
    bool ok = r->nth > 0;
    if (ok && *end == ':')
        r->error = parse_error(end + 1, &ok);
    else if (*end)
        ok = false;
    if (!ok) {
        fc_log("WEFT_FAKECUDA_FAULTS: bad fail=%s (want NAME@N[:ERROR])", arg);
        return;
    }
    atomic_init(&r->calls, 0);
    nrules++;
}

void fc_fault_setup(void)
{
    const char *env = getenv("WEFT_FAKECUDA_FAULTS");
    nrules = 0;
    if (!env)
        return;
    char *copy = strdup(env), *save = NULL;
    if (!copy)
        return;
    for (char *w = strtok_r(copy, ",; \t\n", &save); w; w = strtok_r(NULL, ",; \t\n", &save)) {
        if (!strncmp(w, "fail=", 5))
            parse_fail(w + 5);
        else if (!strcmp(w, "novmm"))
            fc.no_vmm = true;
        else if (!strcmp(w, "nomemops"))
            fc.no_memops = true;
        else if (!strcmp(w, "noipc"))
            fc.no_ipc = true;
        else if (!strcmp(w, "nolaunch"))
            fc.no_launch = true;
        else
            fc_log("WEFT_FAKECUDA_FAULTS: unknown fault '%s' ignored", w);
    }
    free(copy);
}

CUresult fc_fault(const char *name)
{
    for (int i = 0; i < nrules; i++)
        if (!strcmp(rules[i].name, name) && atomic_fetch_add(&rules[i].calls, 1) + 1 == rules[i].nth)
            return rules[i].error;
    return CUDA_SUCCESS;
}
