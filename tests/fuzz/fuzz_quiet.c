/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * fuzz_quiet.c: the harnesses' logging setting (fuzz.h).
 */
#include "config.h"

#include <stdlib.h>

#include "core/base/log.h"
#include "tests/fuzz/fuzz.h"

void weft_fuzz_quiet(void)
{
    /* setenv without overwrite: a WEFT_DEBUG given by whoever runs the
     * harness still wins, for looking into a crash. */
    setenv("WEFT_DEBUG", "NONE", 0);
    weft__log_reload();
}
