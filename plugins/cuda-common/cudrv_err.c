/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * cudrv_err.c: a CUresult as text for logs and refusals. The driver
 * names its errors (cuGetErrorName, cuGetErrorString); where it cannot,
 * because it is not loaded or answers every call with an error (the
 * toolkit's stub), the number alone still identifies the error in cuda.h.
 */
#include "config.h"

#include <stdio.h>

#include "plugins/cuda-common/cudrv.h"

void weft__cudrv_err_text(const struct wcu_drv *d, CUresult rc, char *buf, size_t cap)
{
    const char *name = NULL, *text = NULL;

    if (d && d->fn.cuGetErrorName && d->fn.cuGetErrorName(rc, &name) != CUDA_SUCCESS)
        name = NULL;
    if (d && d->fn.cuGetErrorString && d->fn.cuGetErrorString(rc, &text) != CUDA_SUCCESS)
        text = NULL;
    if (name && text)
        snprintf(buf, cap, "%s (%s)", name, text);
    else if (name)
        snprintf(buf, cap, "%s", name);
    else
        snprintf(buf, cap, "CUDA error %d", (int)rc);
}
