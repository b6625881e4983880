/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * cudrv_open.c: the driver made ready for a GPU transport, or the one
 * reason it cannot be: no library, a test double not allowed, the
 * toolkit's stub, a driver too old, no device.
 *
 * The version is checked before cuInit: cuDriverGetVersion needs no
 * initialisation, and an old driver is better named as such than by
 * whatever its cuInit says. The stub answers both with
 * CUDA_ERROR_STUB_LIBRARY (cudrv_sym.c usually sees it first).
 *
 * A driver that gets as far as cuInit stays loaded for the life of the
 * process (RTLD_NODELETE), whatever weft__cudrv_close does with the
 * handle: from cuInit on, the driver has threads of its own (the test double one per
 * stream, detached, which finish after cuStreamDestroy returns), and a
 * dlclose that unmapped the library would pull their code from under
 * them. A program that links libcuda keeps it loaded anyway; one that
 * does not (weft-info) would crash at the plugin's finalize.
 */
#include "config.h"

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "plugins/cuda-common/cudrv.h"

static const char *param(const weft_transport_core_t *core, const char *name)
{
    const char *s = core->get_param ? core->get_param(name) : NULL;

    return s && *s ? s : NULL;
}

static enum wcu_status stub(struct wcu_drv *d, char *why, size_t cap)
{
    weft__cudrv_sym_stub_why(d->path, why, cap);
    weft__cudrv_sym_unload(d);
    return WCU_STUB;
}

static enum wcu_status no_device(struct wcu_drv *d, const char *what, char *why, size_t cap)
{
    const char *visible = getenv("CUDA_VISIBLE_DEVICES");

    snprintf(why, cap, "no CUDA device: %s%s%s%s", what, visible ? " (CUDA_VISIBLE_DEVICES=" : "",
             visible ? visible : "", visible ? ")" : "");
    weft__cudrv_sym_unload(d);
    return WCU_NO_DEVICE;
}

static void log_features(const struct wcu_drv *d, const weft_transport_core_t *core,
                         const char *plugin)
{
    char off[3 * 128] = "";
    size_t o = 0;

    for (int f = 0; f < WCU_FEAT_COUNT && o < sizeof(off); f++)
        if (!(d->features & (1u << f)))
            o += (size_t)snprintf(off + o, sizeof(off) - o, "; %s off: %s",
                                  weft__cudrv_sym_feature_name((enum wcu_feature)f),
                                  d->feature_why[f]);
    core->log(WEFT_TRANSPORT_LOG_INFO, plugin, "CUDA driver %s, CUDA %d.%d, %d device%s%s",
              d->path, d->version / 1000, d->version % 1000 / 10, d->ndev,
              d->ndev == 1 ? "" : "s", off);
}

enum wcu_status weft__cudrv_open(struct wcu_drv *d, const weft_transport_core_t *core,
                                 const char *plugin, char *why, size_t cap)
{
    const char *path = param(core, "WEFT_CUDA_DRIVER");
    const char *allow = param(core, "WEFT_CUDA_ALLOW_TEST_DRIVER");
    enum wcu_status st;
    char err[160];
    CUresult rc;

    memset(d, 0, sizeof(*d));
    if (allow && strcmp(allow, "0") != 0 && strcmp(allow, "1") != 0) {
        snprintf(why, cap, "WEFT_CUDA_ALLOW_TEST_DRIVER=%s: expected 0 or 1", allow);
        return WCU_BAD_PARAM;
    }
    st = weft__cudrv_sym_load(d, path, allow && !strcmp(allow, "1"), why, cap);
    if (st != WCU_OK)
        return st;
    if (d->test_double)
        core->log(WEFT_TRANSPORT_LOG_WARN, plugin, "%s is a CUDA test double (%s = %d), not "
                  "an NVIDIA driver: WEFT_CUDA_ALLOW_TEST_DRIVER=1 lets it stand in for one",
                  d->path, WCU_TEST_DOUBLE_SYMBOL, d->test_double_value);

    rc = d->fn.cuDriverGetVersion(&d->version);
    if (rc == CUDA_ERROR_STUB_LIBRARY)
        return stub(d, why, cap);
    if (rc != CUDA_SUCCESS) {
        weft__cudrv_err_text(d, rc, err, sizeof(err));
        snprintf(why, cap, "CUDA driver %s: cuDriverGetVersion failed: %s", d->path, err);
        weft__cudrv_sym_unload(d);
        return WCU_FAILED;
    }
    if (d->version < WCU_DRIVER_MIN) {
        snprintf(why, cap, "CUDA driver %s is too old: it supports CUDA %d.%d, weft needs "
                 "%d.%d or later", d->path, d->version / 1000, d->version % 1000 / 10,
                 WCU_DRIVER_MIN / 1000, WCU_DRIVER_MIN % 1000 / 10);
        weft__cudrv_sym_unload(d);
        return WCU_TOO_OLD;
    }

    if (!dlopen(d->path, RTLD_NOW | RTLD_LOCAL | RTLD_NOLOAD | RTLD_NODELETE))
        core->log(WEFT_TRANSPORT_LOG_WARN, plugin, "%s cannot be kept loaded (%s): unloading "
                  "it may crash the driver's threads", d->path, dlerror());
    rc = d->fn.cuInit(0);
    if (rc == CUDA_ERROR_STUB_LIBRARY)
        return stub(d, why, cap);
    if (rc == CUDA_ERROR_NO_DEVICE)
        return no_device(d, "cuInit says CUDA_ERROR_NO_DEVICE", why, cap);
    if (rc != CUDA_SUCCESS) {
        weft__cudrv_err_text(d, rc, err, sizeof(err));
        snprintf(why, cap, "CUDA driver %s: cuInit failed: %s", d->path, err);
        weft__cudrv_sym_unload(d);
        return WCU_FAILED;
    }
    rc = d->fn.cuDeviceGetCount(&d->ndev);
    if (rc != CUDA_SUCCESS) {
        weft__cudrv_err_text(d, rc, err, sizeof(err));
        snprintf(why, cap, "CUDA driver %s: cuDeviceGetCount failed: %s", d->path, err);
        weft__cudrv_sym_unload(d);
        return WCU_FAILED;
    }
    if (d->ndev <= 0)
        return no_device(d, "the driver counts none", why, cap);
    log_features(d, core, plugin);
    return WCU_OK;
}

void weft__cudrv_close(struct wcu_drv *d)
{
    weft__cudrv_sym_unload(d);
}
