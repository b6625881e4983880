/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * cuda_ipc.h: internals of the cuda-ipc transport, shared by its files.
 *
 * What it is today
 *   The transport for NVIDIA GPUs of one node. It offers the core the
 *   device memory services of weft/transport.h (weft_transport_device_t):
 *   telling device buffers from host ones, copies either way, page-locked
 *   staging memory, ordering on the user's stream (copies, flag writes
 *   and waits enqueued on it), and the sharing group the core's
 *   GPU-to-GPU collectives inside a node stand on (cuda_ipc_share.c:
 *   buffers exported to and mapped from the node's other processes, a
 *   stream of the core's own, the reduction kernels). It moves no
 *   messages: reach() declines every peer, so the core routes all ranks
 *   through its other transports. Each pair has one transport, so the
 *   GPU-to-GPU path of point-to-point messages between ranks of a node is
 *   a protocol of the node-local transport (plugins/shm/shm_cuda.c, CUDA
 *   IPC), as GPUDirect RDMA is of ib-verbs; the core stages through host
 *   memory, with these services, what no transport moves itself.
 *
 * Loading (plugins/cuda-common)
 *   Nothing links libcuda: init opens libcuda.so.1, or the file
 *   WEFT_CUDA_DRIVER names, at run time, so the plugin loads on machines
 *   without a GPU driver and says why it does not apply there (weft-info
 *   shows the reason). Every device is described in one INFO line at
 *   init, which weft-info shows under the plugin.
 *
 * Device and context
 *   One device per process: WEFT_CUDA_DEVICE (an ordinal 0..count-1,
 *   after CUDA_VISIBLE_DEVICES), or 0. init retains that device's primary
 *   context, the one the CUDA runtime uses, so buffers and streams of a
 *   program built on the runtime belong to it; finalize releases it.
 *
 * Reductions on the GPU (cuda_ipc_reduce.c)
 *   weft's reduction kernels (kernels/reduce.cu), built by nvcc into a
 *   fatbin embedded in the plugin, are loaded into the primary context at
 *   init; one INFO line says how many, for which architecture, or why
 *   none (no nvcc at build time, a driver without modules, no code for
 *   this GPU), and then device reductions stage through host memory. A
 *   failure to load is never an error. The core reaches them through
 *   the device services' stream_reduce and stream_avg; the unit tests and
 *   tests/gpu/kernels_check call weft__cuda_ipc_reduce and its kin.
 *
 * Stream memory operations
 *   stream_write and stream_wait are cuStreamWriteValue32 and
 *   cuStreamWaitValue32 on page-locked host words. init tries one of
 *   each on a stream of its own, because no device attribute reliably
 *   says whether they work (cuda_ipc_memops.c); WEFT_CUDA_MEMOPS=0 turns
 *   them off without trying, and stream_check then reports memops 0, so
 *   the core waits with stream_sync instead.
 *
 * Parameters (environment, read through the core at init)
 *   WEFT_CUDA_DRIVER, WEFT_CUDA_ALLOW_TEST_DRIVER (plugins/cuda-common),
 *   WEFT_CUDA_DEVICE=N, WEFT_CUDA_MEMOPS=0|1 (default 1). A malformed
 *   value fails init with WEFT_ERR_INVALID_ARG naming the variable.
 *
 * Threading
 *   The context is written only by init and read-only afterwards, except
 *   declined_logged, which reach() alone touches under the core's
 *   per-transport lock. The device services run on any thread,
 *   concurrently and without that lock (the ABI allows it): they read
 *   the context, call the driver, whose calls are thread-safe, and make
 *   the primary context current on a thread that has none. The sharing
 *   state's caches (c->share) change under its own lock, and its
 *   descriptor server is a thread of its own (cuda_ipc_share.c).
 */
#ifndef WEFT_CUDA_IPC_H
#define WEFT_CUDA_IPC_H

#include <stddef.h>

#include "plugins/cuda-common/cudrv.h"
#include "weft/transport.h"

#define CIPC_NAME "cuda-ipc"
/* The first byte of the published address: peers of another version
 * will not be reached once this transport reaches any. */
#define CIPC_ADDR_VERSION 1

/* The loaded reduction kernels, indexed by weft_dtype_t; module NULL:
 * none, and why says why. */
struct cipc_kernels {
    CUmodule module;
    CUfunction reduce[WEFT_DTYPE_COUNT], avg[WEFT_DTYPE_COUNT], scale[WEFT_DTYPE_COUNT];
    char why[WCU_WHY_MAX];
};

struct cipc_share;

struct cipc_ctx {
    const weft_transport_core_t *core;  /* valid until finalize (ABI promise) */
    struct wcu_drv drv;
    struct wcu_dev dev;                 /* the device this process uses */
    CUcontext primary;                  /* its primary context, retained */
    int memops;                         /* stream_write/stream_wait work */
    struct cipc_kernels kern;
    struct cipc_share *share;           /* cuda_ipc_share.c's caches; NULL: no sharing */
    int declined_logged;                /* reach() said once why it declines */
};

/* ------------------------------------------------------ cuda_ipc_param.c */

/* WEFT_CUDA_DEVICE: s NULL or "" is 0; else an integer 0..ndev-1. 0, or
 * -1 with why naming the variable. */
int weft__cuda_ipc_param_device(const char *s, int ndev, int *ordinal, char *why,
                                size_t cap);
/* WEFT_CUDA_MEMOPS: s NULL or "" is 1; else "0" or "1". 0, or -1 with
 * why naming the variable. */
int weft__cuda_ipc_param_memops(const char *s, int *on, char *why, size_t cap);

/* -------------------------------------------------------- cuda_ipc_err.c */

/* The weft result for a failed driver call: CUDA_ERROR_OUT_OF_MEMORY
 * WEFT_ERR_NO_MEMORY, a bad value or handle WEFT_ERR_INVALID_ARG,
 * CUDA_ERROR_NOT_SUPPORTED WEFT_ERR_UNSUPPORTED, anything else
 * WEFT_ERR_SYSTEM; core->set_error gets "<call> failed: <driver's
 * text>". */
weft_result_t weft__cuda_ipc_err_report(const struct cipc_ctx *c, CUresult rc,
                                        const char *call);

/* ----------------------------------------------------- cuda_ipc_memops.c */

/* Whether cuStreamWaitValue32 and cuStreamWriteValue32 work on a
 * page-locked host word, tried on a stream of its own with c->primary
 * current on the calling thread. 1, or 0 with why. */
int weft__cuda_ipc_memops_probe(const struct cipc_ctx *c, char *why, size_t cap);

/* ----------------------------------------------------- cuda_ipc_device.c */

/* The device memory services, for weft_transport_v1_t.device. */
extern const weft_transport_device_t weft__cuda_ipc_device;
/* Makes the primary context current on a thread that has none (a thread
 * with one keeps it). WEFT_SUCCESS, or the driver's error reported. */
weft_result_t weft__cuda_ipc_device_ready(const struct cipc_ctx *c);

/* ----------------------------------------------------- cuda_ipc_reduce.c */

/* Loads the embedded kernels into c->primary (made current for the
 * while, the caller's context restored) and logs one INFO line: how many,
 * for which sm_XX, or why none. Never fails: kernels off is a state. */
void weft__cuda_ipc_reduce_load(struct cipc_ctx *c);
/* Unloads them (finalize), before the primary context is released. */
void weft__cuda_ipc_reduce_unload(struct cipc_ctx *c);

/* The reductions of core/dt/reduce.h and core/dt/op.h, bit for bit, on
 * memory the GPU reaches (device or page-locked host memory), queued on
 * stream s (a stream of the primary context, or 0) and not waited for;
 * every pointer aligned to the element size; count 0 queues nothing.
 * Any thread may call them (threading as the device services).
 *   reduce  dst[i] = a[i] op b[i], op a built-in weft_op_t valid for dt
 *           (AVG sums); dst may be a or b
 *   avg     buf[i] /= nranks (nranks > 0), AVG's last step
 *   scale   dst[i] = scalar * src[i], scalar one element of dt in the
 *           first bytes (weft__op_scale's), PREMUL_SUM's first step
 * WEFT_SUCCESS; WEFT_ERR_UNSUPPORTED with the reason when the kernels are
 * off; WEFT_ERR_INVALID_ARG for a bad dt, op, nranks or alignment; the
 * driver's error (a launch failure) as weft__cuda_ipc_err_report maps
 * it. Errors in the kernels themselves show at the stream's next
 * synchronisation, as CUDA's do. */
weft_result_t weft__cuda_ipc_reduce(const struct cipc_ctx *c, CUstream s, void *dst,
                                    const void *a, const void *b, size_t count,
                                    weft_dtype_t dt, weft_op_t op);
weft_result_t weft__cuda_ipc_reduce_avg(const struct cipc_ctx *c, CUstream s, void *buf,
                                        size_t count, weft_dtype_t dt, int nranks);
weft_result_t weft__cuda_ipc_reduce_scale(const struct cipc_ctx *c, CUstream s, void *dst,
                                          const void *src, size_t count, weft_dtype_t dt,
                                          const unsigned char scalar[8]);

/* ------------------------------------------------------ cuda_ipc_share.c */

/* The sharing state (c->share): 0, or -1 out of memory (sharing off). */
int weft__cuda_ipc_share_init(struct cipc_ctx *c);
/* Logs the counters, closes every mapping and frees c->share. */
void weft__cuda_ipc_share_fini(struct cipc_ctx *c);
/* The sharing group of weft_transport_device_t (weft/transport.h says
 * what each does). */
unsigned weft__cuda_ipc_share_features(void *ctx);
weft_result_t weft__cuda_ipc_share_ipc_export(void *ctx, const void *ptr, size_t len,
                                              void *handle);
weft_result_t weft__cuda_ipc_share_ipc_open(void *ctx, const void *handle, void **ptr,
                                            void **token);
weft_result_t weft__cuda_ipc_share_ipc_close(void *ctx, void *token);
weft_result_t weft__cuda_ipc_share_stream_create(void *ctx, void **stream);
weft_result_t weft__cuda_ipc_share_stream_destroy(void *ctx, void *stream);
weft_result_t weft__cuda_ipc_share_stream_reduce(void *ctx, void *stream, void *dst,
                                                 const void *a, const void *b, size_t count,
                                                 weft_dtype_t dt, weft_op_t op);
weft_result_t weft__cuda_ipc_share_stream_avg(void *ctx, void *stream, void *buf,
                                              size_t count, weft_dtype_t dt, int divisor);

/* -------------------------------------------------------- cuda_ipc_msg.c */

/* The message half of the table, which this version declines. */
weft_result_t weft__cuda_ipc_msg_get_address(void *ctx, void *addr, size_t *len);
weft_result_t weft__cuda_ipc_msg_reach(void *ctx, const void *peer_addr, size_t len,
                                       weft_transport_reach_t *reach);
weft_result_t weft__cuda_ipc_msg_connect(void *ctx, int peer, const void *peer_addr,
                                        size_t len);
weft_result_t weft__cuda_ipc_msg_disconnect(void *ctx, int peer);
weft_result_t weft__cuda_ipc_msg_mem_register(void *ctx, void *buf, size_t len, int mem_type,
                                              void **mhandle);
weft_result_t weft__cuda_ipc_msg_mem_deregister(void *ctx, void *mhandle);
weft_result_t weft__cuda_ipc_msg_isend(void *ctx, int peer, const void *buf, size_t len,
                                       uint64_t tag, void *mhandle, void **req);
weft_result_t weft__cuda_ipc_msg_irecv(void *ctx, int peer, void *buf, size_t len,
                                       uint64_t tag, uint64_t ignore, void *mhandle,
                                       void **req);
weft_result_t weft__cuda_ipc_msg_test(void *ctx, void *req, int *done,
                                      weft_transport_completion_t *c);
weft_result_t weft__cuda_ipc_msg_cancel(void *ctx, void *req);
weft_result_t weft__cuda_ipc_msg_progress(void *ctx);
weft_result_t weft__cuda_ipc_msg_get_wait_fd(void *ctx, int *fd);

#endif /* WEFT_CUDA_IPC_H */
