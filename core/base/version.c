/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * version.c: the version of the library itself.
 */
#include "config.h"

#include "weft.h"

WEFT_API void weft_get_version(int *major, int *minor, int *patch)
{
    if (major)
        *major = WEFT_VERSION_MAJOR;
    if (minor)
        *minor = WEFT_VERSION_MINOR;
    if (patch)
        *patch = WEFT_VERSION_PATCH;
}
