/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * cuda_ipc_err.c: a failed driver call as a weft result and the text
 * weft_last_error() shows. The few driver errors that say the caller
 * asked for something wrong or too big keep that meaning; every other
 * one is a failure below weft, WEFT_ERR_SYSTEM, as ib-verbs reports its
 * driver's failures.
 */
#include "config.h"

#include "plugins/cuda-ipc/cuda_ipc.h"

static weft_result_t result_of(CUresult rc)
{
    switch (rc) {
    case CUDA_ERROR_OUT_OF_MEMORY:
        return WEFT_ERR_NO_MEMORY;
    case CUDA_ERROR_INVALID_VALUE:
    case CUDA_ERROR_INVALID_HANDLE:
        return WEFT_ERR_INVALID_ARG;
    case CUDA_ERROR_NOT_SUPPORTED:
        return WEFT_ERR_UNSUPPORTED;
    default:
        return WEFT_ERR_SYSTEM;
    }
}

weft_result_t weft__cuda_ipc_err_report(const struct cipc_ctx *c, CUresult rc,
                                        const char *call)
{
    char err[160];

    weft__cudrv_err_text(&c->drv, rc, err, sizeof(err));
    c->core->set_error("%s failed: %s", call, err);
    return result_of(rc);
}
