/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * mode.c: what rank 0's environment asks of the tuner at init: WEFT_TUNE,
 * WEFT_TUNE_FILE and WEFT_TUNE_ADAPT (tune.h). Apart from the probe, which
 * needs a job, so that the settings can be checked alone.
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/base/error.h"
#include "core/tune/tune.h"

weft__tune_mode_t weft__tune_mode(int reps_scale, weft__tune_params_t *p, int *adapt, char *why,
                                  size_t cap)
{
    const char *tune = getenv("WEFT_TUNE"), *file = getenv("WEFT_TUNE_FILE");
    const char *adapt_env = getenv("WEFT_TUNE_ADAPT");

    if (adapt_env && *adapt_env && strcmp(adapt_env, "0") && strcmp(adapt_env, "1")) {
        snprintf(why, cap, "WEFT_TUNE_ADAPT=%s is neither 0 (the model's choice only) nor 1 "
                 "(time close algorithms on the program's calls)", adapt_env);
        return WEFT__TUNE_MODE_ERROR;
    }
    *adapt = !(adapt_env && !strcmp(adapt_env, "0"));

    if (reps_scale > 0)
        return WEFT__TUNE_MODE_MEASURE;
    if (tune && *tune && strcmp(tune, "0") && strcmp(tune, "1")) {
        snprintf(why, cap, "WEFT_TUNE=%s is neither 0 (built-in parameters) nor 1 (measure "
                 "or load WEFT_TUNE_FILE)", tune);
        return WEFT__TUNE_MODE_ERROR;
    }
    if (tune && !strcmp(tune, "0"))
        return WEFT__TUNE_MODE_DEFAULTS;
    if (file && *file) {
        if (weft__tune_load(file, p) != WEFT_SUCCESS) {
            snprintf(why, cap, "%s", weft__get_error());
            return WEFT__TUNE_MODE_ERROR;
        }
        return WEFT__TUNE_MODE_FILE;
    }
    return WEFT__TUNE_MODE_MEASURE;
}
