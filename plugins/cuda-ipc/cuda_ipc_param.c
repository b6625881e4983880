/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * cuda_ipc_param.c: the transport's own parameters, WEFT_CUDA_DEVICE and
 * WEFT_CUDA_MEMOPS, read strictly: a value that is not exactly what is
 * documented fails init, naming the variable, rather than quietly
 * selecting another GPU or another way to wait than the user asked for.
 */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "plugins/cuda-ipc/cuda_ipc.h"

int weft__cuda_ipc_param_device(const char *s, int ndev, int *ordinal, char *why,
                                size_t cap)
{
    char *end;
    long v;

    if (!s || !*s) {
        *ordinal = 0;
        return 0;
    }
    errno = 0;
    v = strtol(s, &end, 10);
    if (errno || end == s || *end || v < 0 || v >= ndev) {
        snprintf(why, cap, "WEFT_CUDA_DEVICE=%.32s: expected a device ordinal 0..%d (%d "
                 "device%s visible)", s, ndev - 1, ndev, ndev == 1 ? "" : "s");
        return -1;
    }
    *ordinal = (int)v;
    return 0;
}

int weft__cuda_ipc_param_memops(const char *s, int *on, char *why, size_t cap)
{
    if (!s || !*s) {
        *on = 1;
        return 0;
    }
    if (strcmp(s, "0") != 0 && strcmp(s, "1") != 0) {
        snprintf(why, cap, "WEFT_CUDA_MEMOPS=%.32s: expected 0 or 1", s);
        return -1;
    }
    *on = s[0] == '1';
    return 0;
}
