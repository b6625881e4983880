/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * conf_gpu.h: the device shim of tests/gpu/conf_gpu, the conformance suite
 * (tests/conf) built a second time with every collective it calls
 * redirected by -Wl,--wrap to a wrapper here.
 *
 * A wrapper works out from the API's semantics (man/man3) which bytes of
 * sendbuf and recvbuf the call reads and writes, copies them into device
 * memory of the CUDA driver, calls the real function on the device
 * pointers and copies recvbuf's bytes back once the operation is
 * complete. The suite goes on checking results on the host, so every
 * case it checks is a case of weft's staging of device buffers; the
 * extents are worked out here without the core's code, so that each
 * cross-checks the other.
 *
 * A call whose arguments are not valid (no extent can be told) goes to
 * the real function unchanged, so that the suite sees weft's own error.
 * The byte-string collectives take host memory only (weft-cuda(7)) and
 * point-to-point calls are not the suite's subject: neither is wrapped,
 * nor is weft_barrier, which moves no data.
 *
 * Environment: CONF_GPU_SEND_HOST=1 leaves sendbuf on the host (recvbuf
 * on the device), CONF_GPU_RECV_HOST=1 the converse: calls that mix host
 * and device buffers. A sendbuf that lies in recvbuf (the in-place form
 * with the buffers the same) always follows recvbuf.
 *
 * Run without cuda-ipc in WEFT_TRANSPORTS (and the double loaded, as a
 * spec's cuda=double does) the program must crash: weft then takes the
 * device pointers for host memory, which the double does not let the
 * host read. That the specs pass shows the core staging the buffers.
 *
 * Not thread-safe: the suite makes its calls from one thread.
 */
#ifndef WEFT_TESTS_GPU_CONF_GPU_H
#define WEFT_TESTS_GPU_CONF_GPU_H

#include <stddef.h>

#include <weft.h>

/* Declares the real function and its wrapper, both of name's type. */
#define CG_WRAP(name) extern __typeof__(name) __real_##name, __wrap_##name

/* One call's buffers: the host extents and what the real function gets. */
typedef struct cg_call {
    const char *fn;
    const void *send;       /* host sendbuf and the bytes of it on the device */
    size_t sbytes;
    void *recv;             /* host recvbuf and the bytes of it on the device */
    size_t rbytes;
    const void *dsend;      /* the arguments passed on: device, or as given */
    void *drecv;
    void *mem[2];           /* device allocations to free (NULL: none) */
    int send_alone;         /* sendbuf has device memory of its own */
} cg_call_t;

/* ------------------------------------------------------- conf_gpu_dev.c */
/* Mirrors the sbytes of send and the rbytes of recv into device memory
 * (an extent of 0 stays as given). Returns 1 when some buffer is on the
 * device, 0 when the call is to go through unchanged: nothing to mirror,
 * or a buffer with bytes to hold that is NULL or WEFT_IN_PLACE. */
int cg_dev_mirror(cg_call_t *c, const char *fn, const void *send, size_t sbytes, void *recv,
                  size_t rbytes);
/* The operation is complete with rc: on success copies recvbuf back and
 * checks that sendbuf's device copy is unchanged; frees the memory. */
void cg_dev_finish(cg_call_t *c, weft_result_t rc);
/* Frees the memory without copying anything back (the host buffers may
 * be gone: an operation released by weft_request_free). */
void cg_dev_drop(cg_call_t *c);
/* cg_dev_finish for a blocking call; returns rc. */
weft_result_t cg_dev_blocking(cg_call_t *c, weft_result_t rc);

/* ------------------------------------------------------- conf_gpu_req.c */
/* A nonblocking call started with rc: on success its buffers are kept
 * until the request completes in weft_wait, weft_test or weft_waitall;
 * on failure freed at once. Returns rc. */
weft_result_t cg_req_started(cg_call_t *c, weft_result_t rc, weft_comm_t comm,
                             weft_request_t *req);

/* ------------------------------------------------------ conf_gpu_args.c */
/* Each returns 0, or -1 when the arguments give no extent (the call then
 * goes through unchanged and weft reports the error). */
int cg_args_comm(weft_comm_t comm, int *rank, int *size);
int cg_args_root(weft_comm_t comm, int root, int *rank, int *size);
/* n elements of dt, and times k. */
int cg_args_bytes(weft_dtype_t dt, size_t n, size_t *bytes);
int cg_args_times(size_t bytes, int k, size_t *out);
/* From the start of a v-layout of n blocks to the end of its last
 * nonempty one. */
int cg_args_span(const size_t *counts, const size_t *displs, int n, weft_dtype_t dt,
                 size_t *bytes);
/* The sum of n counts, in bytes. */
int cg_args_sum(const size_t *counts, int n, weft_dtype_t dt, size_t *bytes);
/* The bytes of the array of ndims extents shape, split along axis into
 * size blocks when split is set. */
int cg_args_array(int ndims, const size_t *shape, int axis, weft_dtype_t dt, int size,
                  int split, size_t *bytes);

#endif /* WEFT_TESTS_GPU_CONF_GPU_H */
