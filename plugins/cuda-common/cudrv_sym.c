/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * cudrv_sym.c: libcuda opened at run time and its functions resolved at
 * the CUDA version each is needed at.
 *
 * Only cuGetProcAddress_v2 is taken with dlsym. cuGetProcAddress returns,
 * for a base name and a version, the newest variant of the function that
 * version knows, so asking at the version of the PFN typedef a field has
 * gives the ABI that field expects, whatever the driver's own version
 * (cuCtxGetDevice at 13000 would be a different function). The symbol's
 * query result tells a function the driver lacks (SYMBOL_NOT_FOUND) from
 * a version too low for it (VERSION_NOT_SUFFICIENT, a mistake in the
 * table below). The legacy default stream is asked for explicitly: what
 * DEFAULT means depends on how the caller was compiled, which the driver
 * cannot know.
 *
 * The toolkit's stub libcuda answers every call, cuGetProcAddress
 * included, with CUDA_ERROR_STUB_LIBRARY: that is how it is recognised.
 */
#include "config.h"

#include <dlfcn.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "plugins/cuda-common/cudrv.h"

static const struct wcu_sym {
    const char *name;
    int version;
    size_t off;
    int feature;                        /* enum wcu_feature, or WCU_REQUIRED */
} syms[] = {
#define S(fn, ver, group) { #fn, ver, offsetof(struct wcu_fns, fn), group },
    WCU_FUNCTIONS(S)
#undef S
};

#define NSYMS (sizeof(syms) / sizeof(syms[0]))

static const char *const feature_names[WCU_FEAT_COUNT] = {
    [WCU_FEAT_RANGE_HANDLE] = "range-handle",
    [WCU_FEAT_VMM] = "vmm",
    [WCU_FEAT_LAUNCH] = "launch",
};

const char *weft__cudrv_sym_feature_name(enum wcu_feature f)
{
    return (unsigned)f < WCU_FEAT_COUNT ? feature_names[f] : "?";
}

void weft__cudrv_sym_stub_why(const char *path, char *why, size_t cap)
{
    snprintf(why, cap, "%s is the CUDA toolkit's stub library (CUDA_ERROR_STUB_LIBRARY), "
             "meant for linking only: install the NVIDIA driver, or set WEFT_CUDA_DRIVER to "
             "its libcuda.so.1", path);
}

static void fail_close(struct wcu_drv *d)
{
    if (d->dl)
        dlclose(d->dl);
    memset(d, 0, sizeof(*d));
}

/* 1 when the library exports the test double's marker; its value in *v. */
static int is_test_double(void *dl, int *v)
{
    const int *marker;

    dlerror();
    marker = dlsym(dl, WCU_TEST_DOUBLE_SYMBOL);
    if (!marker)
        return 0;
    *v = *marker;
    return 1;
}

/* Says what a library without cuGetProcAddress_v2 is: a driver older
 * than CUDA 12.0, or no CUDA driver at all. */
static enum wcu_status no_proc_address(struct wcu_drv *d, char *why, size_t cap)
{
    PFN_cuDriverGetVersion_v2020 get_version;
    int v = 0;

    /* POSIX: a function's address travels through void * (dlsym). */
    *(void **)&get_version = dlsym(d->dl, "cuDriverGetVersion");
    if (!get_version && !dlsym(d->dl, "cuGetProcAddress")) {
        snprintf(why, cap, "%s has no cuGetProcAddress_v2 nor cuDriverGetVersion: not a "
                 "CUDA driver", d->path);
        return WCU_NOT_CUDA;
    }
    if (get_version && get_version(&v) == CUDA_SUCCESS)
        snprintf(why, cap, "CUDA driver %s is too old: it supports CUDA %d.%d, weft needs "
                 "%d.%d or later (cuGetProcAddress_v2)", d->path, v / 1000, v % 1000 / 10,
                 WCU_DRIVER_MIN / 1000, WCU_DRIVER_MIN % 1000 / 10);
    else
        snprintf(why, cap, "CUDA driver %s is too old: it has no cuGetProcAddress_v2 "
                 "(CUDA %d.%d)", d->path, WCU_DRIVER_MIN / 1000, WCU_DRIVER_MIN % 1000 / 10);
    return WCU_TOO_OLD;
}

enum wcu_status weft__cudrv_sym_load(struct wcu_drv *d, const char *path,
                                     int allow_test_double, char *why, size_t cap)
{
    const char *file = path && *path ? path : WCU_DEFAULT_LIB;
    PFN_cuGetProcAddress_v12000 get_proc;
    enum wcu_status st;

    memset(d, 0, sizeof(*d));
    snprintf(d->path, sizeof(d->path), "%s", file);
    /* RTLD_LOCAL: the driver's symbols stay this plugin's; RTLD_NOW: a
     * broken install fails here, with dlerror's reason, not at a call. */
    d->dl = dlopen(file, RTLD_NOW | RTLD_LOCAL);
    if (!d->dl) {
        const char *err = dlerror();

        snprintf(why, cap, "cannot open %s%s: %s", file,
                 path && *path ? " (WEFT_CUDA_DRIVER)" : " (no NVIDIA driver installed?)",
                 err ? err : "unknown error");
        memset(d, 0, sizeof(*d));
        return WCU_NO_LIBRARY;
    }
    if (is_test_double(d->dl, &d->test_double_value)) {
        if (!allow_test_double) {
            snprintf(why, cap, "%s is a CUDA test double (it exports %s), not a driver; "
                     "WEFT_CUDA_ALLOW_TEST_DRIVER=1 lets weft use it", file,
                     WCU_TEST_DOUBLE_SYMBOL);
            fail_close(d);
            return WCU_TEST_DOUBLE;
        }
        d->test_double = 1;
    }
    *(void **)&get_proc = dlsym(d->dl, "cuGetProcAddress_v2");
    if (!get_proc) {
        st = no_proc_address(d, why, cap);
        fail_close(d);
        return st;
    }
    for (size_t i = 0; i < NSYMS; i++) {
        const struct wcu_sym *s = &syms[i];
        CUdriverProcAddressQueryResult found = CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
        void *fn = NULL;
        CUresult rc = get_proc(s->name, &fn, s->version, CU_GET_PROC_ADDRESS_LEGACY_STREAM,
                               &found);

        if (rc == CUDA_ERROR_STUB_LIBRARY) {
            weft__cudrv_sym_stub_why(file, why, cap);
            fail_close(d);
            return WCU_STUB;
        }
        if (rc != CUDA_SUCCESS) {
            /* CUDA_ERROR_INVALID_VALUE: the version asked for is newer
             * than the driver's. */
            snprintf(why, cap, "CUDA driver %s: cuGetProcAddress(%s, %d) failed with "
                     "error %d: the driver is older than CUDA %d.%d", file, s->name,
                     s->version, (int)rc, s->version / 1000, s->version % 1000 / 10);
            fail_close(d);
            return WCU_TOO_OLD;
        }
        if (found == CU_GET_PROC_ADDRESS_SUCCESS && !fn)
            found = CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
        if (found == CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT) {
            /* The table asks for a version before the function existed. */
            snprintf(why, cap, "CUDA driver %s: %s does not exist at CUDA version %d "
                     "(weft's table is wrong)", file, s->name, s->version);
            fail_close(d);
            return WCU_FAILED;
        }
        if (found != CU_GET_PROC_ADDRESS_SUCCESS) {
            if (s->feature == WCU_REQUIRED) {
                snprintf(why, cap, "CUDA driver %s lacks %s (CUDA %d.%d ABI): too old, "
                         "or not a full driver", file, s->name, s->version / 1000,
                         s->version % 1000 / 10);
                fail_close(d);
                return WCU_TOO_OLD;
            }
            fn = NULL;
        }
        memcpy((char *)&d->fn + s->off, &fn, sizeof(fn));
    }
    d->features = (1u << WCU_FEAT_COUNT) - 1;
    for (size_t i = 0; i < NSYMS; i++) {
        const struct wcu_sym *s = &syms[i];
        void *fn;

        if (s->feature == WCU_REQUIRED)
            continue;
        memcpy(&fn, (const char *)&d->fn + s->off, sizeof(fn));
        if (fn || !(d->features & (1u << s->feature)))
            continue;
        d->features &= ~(1u << s->feature);
        snprintf(d->feature_why[s->feature], sizeof(d->feature_why[s->feature]),
                 "the driver lacks %s", s->name);
    }
    return WCU_OK;
}

void weft__cudrv_sym_unload(struct wcu_drv *d)
{
    fail_close(d);
}

void weft__cudrv_sym_missing(const struct wcu_drv *d, char *buf, size_t cap)
{
    size_t o = 0;

    if (cap)
        buf[0] = '\0';
    for (size_t i = 0; i < NSYMS && o < cap; i++) {
        void *fn;

        if (syms[i].feature == WCU_REQUIRED)
            continue;
        memcpy(&fn, (const char *)&d->fn + syms[i].off, sizeof(fn));
        if (!fn)
            o += (size_t)snprintf(buf + o, cap - o, "%s%s@%d", o ? " " : "", syms[i].name,
                                  syms[i].version);
    }
}
