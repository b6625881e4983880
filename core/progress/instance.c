/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * instance.c: the instance's life: creation, references, freeing
 * (instance.h).
 */
#include "config.h"

#include <stdlib.h>

#include "core/base/error.h"
#include "core/progress/instance.h"

weft_result_t weft__instance_new(weft__instance_t **out)
{
    weft__instance_t *inst = calloc(1, sizeof(*inst));

    if (!inst)
        return weft__error(WEFT_ERR_NO_MEMORY, "weft_init: cannot allocate the library state");
    pthread_mutex_init(&inst->lock, NULL);
    inst->bell_fd = -1;
    *out = inst;
    return WEFT_SUCCESS;
}

void weft__instance_free(weft__instance_t *inst)
{
    pthread_mutex_destroy(&inst->lock);
    free(inst);
}

void weft__instance_unref(weft__instance_t *inst)
{
    int last;

    pthread_mutex_lock(&inst->lock);
    last = --inst->refs == 0;
    pthread_mutex_unlock(&inst->lock);
    if (last && inst->finalize)
        inst->finalize(inst);
}
