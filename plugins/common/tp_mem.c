/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * tp_mem.c: registration of host memory, which copying transports do not
 * need.
 */
#include "config.h"

#include "plugins/common/tp.h"
#include "plugins/common/tp_mem.h"

weft_result_t weft__tp_mem_register(void *ctx, void *buf, size_t len, int mem_type,
                                    void **mhandle)
{
    struct tp_ctx *tp = ctx;

    if (!mhandle)
        return WEFT_ERR_INVALID_ARG;
    if (mem_type != WEFT_TRANSPORT_MEM_HOST) {
        weft__tp_error(tp, "memory type %d is not host memory", mem_type);
        return WEFT_ERR_UNSUPPORTED;
    }
    *mhandle = NULL;
    return WEFT_SUCCESS;
}

weft_result_t weft__tp_mem_deregister(void *ctx, void *mhandle)
{
    return WEFT_SUCCESS;
}
