/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * mem_reg.c: memory and devices of the public API: registration of
 * memory with the transports (weft_mem_register) and the CUDA stream of
 * a communicator (weft_comm_set_stream).
 *
 * A registration goes to every transport the instance loaded, through
 * the ABI's mem_register, and keeps each one's handle until
 * weft_mem_deregister. It holds a reference on the instance, as a
 * communicator does, so that the transports it registered with stay
 * loaded until it is released, even after the communicator it was made
 * with is destroyed.
 */
#include "config.h"

#include <stdlib.h>

#include "weft/transport.h"

#include "core/api/stream.h"
#include "core/comm/comm.h"
#include "core/base/error.h"
#include "core/progress/instance.h"
#include "core/transport/plugin.h"

#define MEMREG_MAGIC 0x7765666d72u /* "wefmr": catches stale handles */

struct weft_memreg {
    uint64_t magic;
    weft__instance_t *inst;
    void *ptr;
    size_t bytes;
    int n;                              /* transports registered with */
    void *mhandle[WEFT__PLUGIN_MAX];    /* theirs, by plugin index */
};

/* Releases the first n transports' handles of reg. */
static void release_handles(struct weft_memreg *reg, int n)
{
    weft__plugin_set_t *set = &reg->inst->wire.plugins;

    for (int i = 0; i < n; i++) {
        weft__plugin_t *pl = &set->plugins[i];

        pthread_mutex_lock(&pl->lock);
        pl->ops->mem_deregister(pl->ctx, reg->mhandle[i]);
        pthread_mutex_unlock(&pl->lock);
    }
}

WEFT_API weft_result_t weft_mem_register(weft_comm_t comm, void *ptr, size_t bytes,
                                         weft_memreg_t *out)
{
    weft_result_t rc = weft__comm_check(comm, "weft_mem_register");
    weft__plugin_set_t *set;
    struct weft_memreg *reg;

    if (rc != WEFT_SUCCESS)
        return rc;
    if (!out)
        return weft__error(WEFT_ERR_INVALID_ARG, "weft_mem_register: reg is NULL");
    if (!ptr)
        return weft__error(WEFT_ERR_INVALID_ARG, "weft_mem_register: ptr is NULL");
    if (bytes == 0)
        return weft__error(WEFT_ERR_INVALID_ARG, "weft_mem_register: bytes is 0");
    if (!(reg = calloc(1, sizeof(*reg))))
        return weft__error(WEFT_ERR_NO_MEMORY, "weft_mem_register: out of memory");
    reg->inst = comm->inst;
    reg->ptr = ptr;
    reg->bytes = bytes;
    set = &reg->inst->wire.plugins;
    /* Host memory: a device buffer needs a transport that announces
     * WEFT_TRANSPORT_MEM_CUDA, and no transport of this release does. */
    for (; reg->n < set->n; reg->n++) {
        weft__plugin_t *pl = &set->plugins[reg->n];

        pthread_mutex_lock(&pl->lock);
        rc = pl->ops->mem_register(pl->ctx, ptr, bytes, WEFT_TRANSPORT_MEM_HOST,
                                   &reg->mhandle[reg->n]);
        pthread_mutex_unlock(&pl->lock);
        if (rc != WEFT_SUCCESS) {
            /* The message first: releasing may overwrite the transport's. */
            weft__error(rc, "weft_mem_register: transport %s refused %zu bytes at %p: %s",
                        pl->name, bytes, ptr, weft__get_error());
            release_handles(reg, reg->n);
            free(reg);
            return rc;
        }
    }
    pthread_mutex_lock(&reg->inst->lock);
    reg->inst->refs++;
    pthread_mutex_unlock(&reg->inst->lock);
    reg->magic = MEMREG_MAGIC;
    *out = reg;
    return WEFT_SUCCESS;
}

WEFT_API weft_result_t weft_mem_deregister(weft_memreg_t reg)
{
    weft__instance_t *inst;

    if (!reg)
        return weft__error(WEFT_ERR_INVALID_ARG, "weft_mem_deregister: reg is NULL");
    if (reg->magic != MEMREG_MAGIC)
        return weft__error(WEFT_ERR_INVALID_ARG, "weft_mem_deregister: reg is not a live "
                           "registration (released already, or corrupted)");
    inst = reg->inst;
    release_handles(reg, reg->n);
    reg->magic = 0;
    free(reg);
    weft__instance_unref(inst);
    return WEFT_SUCCESS;
}

WEFT_API weft_result_t weft_comm_set_stream(weft_comm_t comm, void *cuda_stream)
{
    weft_result_t rc = weft__comm_check(comm, "weft_comm_set_stream");

    if (rc != WEFT_SUCCESS)
        return rc;
    return weft__stream_set(comm, cuda_stream, "weft_comm_set_stream");
}
