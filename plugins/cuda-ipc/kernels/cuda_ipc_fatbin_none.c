/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * cuda_ipc_fatbin_none.c: the embedded fatbin of a build without nvcc:
 * none, and configure's reason (cuda_ipc_fatbin.h).
 */
#include "config.h"

#include "plugins/cuda-ipc/kernels/cuda_ipc_fatbin.h"

/* One byte, as C has no empty array; the size says there is nothing. */
const unsigned char weft__cuda_ipc_fatbin[1] __attribute__((aligned(8))) = { 0 };
const size_t weft__cuda_ipc_fatbin_size = 0;
const char weft__cuda_ipc_fatbin_info[] = WEFT_NVCC_WHY;
