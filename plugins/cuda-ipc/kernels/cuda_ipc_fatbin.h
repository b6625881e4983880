/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * cuda_ipc_fatbin.h: the reduction kernels (reduce.cu) as nvcc built them
 * at weft's build time, embedded in the cuda-ipc plugin for
 * cuModuleLoadData. Defined by a file embed.sh generates where configure
 * found nvcc, else by cuda_ipc_fatbin_none.c; compiled into a convenience
 * library of its own, which the plugin, its unit tests and
 * tests/gpu/kernels_check link. Read-only data: any thread may read it.
 */
#ifndef WEFT_CUDA_IPC_FATBIN_H
#define WEFT_CUDA_IPC_FATBIN_H

#include <stddef.h>

/* The fatbin, 8-byte aligned; weft__cuda_ipc_fatbin_size is 0 where weft
 * was built without nvcc. */
extern const unsigned char weft__cuda_ipc_fatbin[];
extern const size_t weft__cuda_ipc_fatbin_size;
/* With kernels, the code the fatbin holds ("sm_75 sm_80 compute_120");
 * without, why there are none (configure's words). */
extern const char weft__cuda_ipc_fatbin_info[];

#endif /* WEFT_CUDA_IPC_FATBIN_H */
