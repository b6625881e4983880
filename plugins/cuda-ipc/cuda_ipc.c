/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * cuda_ipc.c: the cuda-ipc transport's table and lifecycle: init opens
 * the CUDA driver, lists every GPU, picks this process's device, retains
 * its primary context and loads the reduction kernels; query and
 * finalize. cuda_ipc.h says what the transport does and does not do yet.
 */
#include "config.h"

#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "plugins/cuda-ipc/cuda_ipc.h"

static const char *param(const weft_transport_core_t *core, const char *name)
{
    return core->get_param ? core->get_param(name) : NULL;
}

/* One INFO line per GPU, which weft-info shows under the plugin: the
 * inventory of the node as the driver sees it. A device that cannot be
 * described is only a warning, unless it is the one this process uses. */
static weft_result_t list_devices(struct cipc_ctx *c, int ordinal)
{
    const weft_transport_core_t *core = c->core;
    char why[WCU_WHY_MAX], line[512];
    struct wcu_dev dev;

    for (int i = 0; i < c->drv.ndev; i++) {
        if (weft__cudrv_dev_query(&c->drv, i, &dev, why, sizeof(why)) != 0) {
            if (i == ordinal) {
                core->set_error("%s", why);
                return WEFT_ERR_SYSTEM;
            }
            core->log(WEFT_TRANSPORT_LOG_WARN, CIPC_NAME, "%s", why);
            continue;
        }
        weft__cudrv_dev_describe(&dev, line, sizeof(line));
        core->log(WEFT_TRANSPORT_LOG_INFO, CIPC_NAME, "%s", line);
        if (i == ordinal)
            c->dev = dev;
    }
    return WEFT_SUCCESS;
}

/* Sets c->memops and *how, which says why they are off (kept in buf).
 * The probe needs the primary context current; the thread that called
 * weft_init gets back whatever context it had, as a library should leave
 * it. */
static weft_result_t decide_memops(struct cipc_ctx *c, int wanted, char *buf, size_t cap,
                                   const char **how)
{
    const struct wcu_fns *f = &c->drv.fn;
    char why[WCU_WHY_MAX - sizeof("off ()")];
    CUcontext prev;
    CUresult rc;

    c->memops = 0;
    *how = "off";
    if (!wanted) {
        *how = "off (WEFT_CUDA_MEMOPS=0)";
        return WEFT_SUCCESS;
    }
    if (!(c->dev.features & WCU_DEV_MEMOPS)) {
        *how = "off (the device has none)";
        return WEFT_SUCCESS;
    }
    if ((rc = f->cuCtxGetCurrent(&prev)) != CUDA_SUCCESS)
        return weft__cuda_ipc_err_report(c, rc, "cuCtxGetCurrent");
    if ((rc = f->cuCtxSetCurrent(c->primary)) != CUDA_SUCCESS)
        return weft__cuda_ipc_err_report(c, rc, "cuCtxSetCurrent(primary context)");
    c->memops = weft__cuda_ipc_memops_probe(c, why, sizeof(why));
    if ((rc = f->cuCtxSetCurrent(prev)) != CUDA_SUCCESS)
        return weft__cuda_ipc_err_report(c, rc, "cuCtxSetCurrent(the caller's context)");
    if (c->memops) {
        *how = "on";
    } else {
        snprintf(buf, cap, "off (%s)", why);
        *how = buf;
    }
    return WEFT_SUCCESS;
}

static weft_result_t cipc_init(const weft_transport_core_t *core, void **ctxp)
{
    char why[WCU_WHY_MAX];
    const char *memops_how;
    struct cipc_ctx *c;
    enum wcu_status st;
    int ordinal, memops;
    weft_result_t r;
    CUresult rc;

    /* log, set_error and get_param are all this transport uses. */
    if (!core || core->struct_size < offsetof(weft_transport_core_t, get_param) +
                                         sizeof(core->get_param))
        return WEFT_ERR_INVALID_ARG;
    if (weft__cuda_ipc_param_memops(param(core, "WEFT_CUDA_MEMOPS"), &memops, why,
                                    sizeof(why)) != 0) {
        core->set_error("%s", why);
        return WEFT_ERR_INVALID_ARG;
    }
    c = calloc(1, sizeof(*c));
    if (!c) {
        core->set_error("cannot allocate %zu bytes of state", sizeof(*c));
        return WEFT_ERR_NO_MEMORY;
    }
    c->core = core;

    st = weft__cudrv_open(&c->drv, core, CIPC_NAME, why, sizeof(why));
    if (st != WCU_OK) {
        core->set_error("%s", why);
        r = st == WCU_BAD_PARAM ? WEFT_ERR_INVALID_ARG : WEFT_ERR_UNSUPPORTED;
        goto err_free;
    }
    if (weft__cuda_ipc_param_device(param(core, "WEFT_CUDA_DEVICE"), c->drv.ndev, &ordinal,
                                    why, sizeof(why)) != 0) {
        core->set_error("%s", why);
        r = WEFT_ERR_INVALID_ARG;
        goto err_close;
    }
    if ((r = list_devices(c, ordinal)) != WEFT_SUCCESS)
        goto err_close;
    /* Every service passes host and device pointers to the driver as
     * they are, which only unified addressing makes valid. */
    if (!(c->dev.features & WCU_DEV_UVA)) {
        core->set_error("cuda%d (%s) has no unified addressing", ordinal, c->dev.name);
        r = WEFT_ERR_UNSUPPORTED;
        goto err_close;
    }
    rc = c->drv.fn.cuDevicePrimaryCtxRetain(&c->primary, c->dev.dev);
    if (rc != CUDA_SUCCESS) {
        r = weft__cuda_ipc_err_report(c, rc, "cuDevicePrimaryCtxRetain");
        goto err_close;
    }
    if ((r = decide_memops(c, memops, why, sizeof(why), &memops_how)) != WEFT_SUCCESS)
        goto err_release;
    core->log(WEFT_TRANSPORT_LOG_INFO, CIPC_NAME, "this process uses cuda%d (%s), its primary "
              "context; stream memory operations %s", ordinal, c->dev.uuid, memops_how);
    weft__cuda_ipc_reduce_load(c);
    if (weft__cuda_ipc_share_init(c) != 0)
        core->log(WEFT_TRANSPORT_LOG_INFO, CIPC_NAME, "ipc: off: out of memory");
    *ctxp = c;
    return WEFT_SUCCESS;

err_release:
    c->drv.fn.cuDevicePrimaryCtxRelease(c->dev.dev);
err_close:
    weft__cudrv_close(&c->drv);
err_free:
    free(c);
    return r;
}

/* Host memory only, no flags and no message size (0: not said): no
 * messages move through here yet. The caps struct may be older or newer
 * than this header's: only struct_size bytes of it are written. */
static weft_result_t cipc_query(void *ctx, weft_transport_caps_t *caps)
{
    weft_transport_caps_t mine;
    size_t n;

    memset(&mine, 0, sizeof(mine));
    mine.flags = 0;
    mine.mem_types = 1u << WEFT_TRANSPORT_MEM_HOST;
    n = caps->struct_size < sizeof(mine) ? caps->struct_size : sizeof(mine);
    mine.struct_size = caps->struct_size;
    memcpy(caps, &mine, n);
    return WEFT_SUCCESS;
}

static weft_result_t cipc_finalize(void *ctx)
{
    struct cipc_ctx *c = ctx;
    CUresult rc;

    weft__cuda_ipc_share_fini(c);
    weft__cuda_ipc_reduce_unload(c);
    rc = c->drv.fn.cuDevicePrimaryCtxRelease(c->dev.dev);
    if (rc != CUDA_SUCCESS) {
        char err[160];

        weft__cudrv_err_text(&c->drv, rc, err, sizeof(err));
        c->core->log(WEFT_TRANSPORT_LOG_WARN, CIPC_NAME, "cuDevicePrimaryCtxRelease "
                     "failed: %s", err);
    }
    weft__cudrv_close(&c->drv);
    free(c);
    return WEFT_SUCCESS;
}

/* The one exported symbol (the module is built with -fvisibility=hidden
 * and an export list that keeps nothing else). improbe, imrecv,
 * mem_export and put are optional and absent: caps announce neither
 * matched probe nor put. */
__attribute__((visibility("default")))
const weft_transport_v1_t weft_transport_v1 = {
    .abi_version = WEFT_TRANSPORT_ABI_VERSION,
    .struct_size = sizeof(weft_transport_v1_t),
    .name = CIPC_NAME,
    .description = "NVIDIA GPUs of one node: device memory services for the core (copies, "
                   "streams, staging memory); moves no messages itself",
    .init = cipc_init,
    .query = cipc_query,
    .get_address = weft__cuda_ipc_msg_get_address,
    .reach = weft__cuda_ipc_msg_reach,
    .connect = weft__cuda_ipc_msg_connect,
    .disconnect = weft__cuda_ipc_msg_disconnect,
    .finalize = cipc_finalize,
    .mem_register = weft__cuda_ipc_msg_mem_register,
    .mem_deregister = weft__cuda_ipc_msg_mem_deregister,
    .isend = weft__cuda_ipc_msg_isend,
    .irecv = weft__cuda_ipc_msg_irecv,
    .test = weft__cuda_ipc_msg_test,
    .cancel = weft__cuda_ipc_msg_cancel,
    .progress = weft__cuda_ipc_msg_progress,
    .get_wait_fd = weft__cuda_ipc_msg_get_wait_fd,
    .needs = WEFT_TRANSPORT_NEED_CUDA_GPU,
    .device = &weft__cuda_ipc_device,
};
