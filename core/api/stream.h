/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * stream.h: operations ordered on a CUDA stream (weft_comm_set_stream),
 * as NCCL orders its own: an operation starts after the work the caller
 * queued on the stream before it, work queued after it waits for it, and
 * the call returns without waiting for the GPU.
 *
 * How (stream.c): each operation gets a number n. The caller's thread
 * queues on the stream, through the device services of the transport
 * that offers them (weft/transport.h): the copies of device inputs into
 * host staging, "write n to READY", "wait until DONE reaches n", the
 * copies of the results back to device memory, and "write n to FREED".
 * The communicator's stream thread runs the operations in order: it
 * waits until READY reaches n (the stream got there: inputs are staged),
 * runs the operation on host memory with the ordinary engine, and writes
 * n to DONE, which lets the stream go on. Staging is released once FREED
 * reaches n. No host callback ever blocks the stream's progress.
 *
 * Where the device cannot wait on memory (no stream memory operations,
 * or WEFT_CUDA_MEMOPS=0), the fallback is NCCL's blocking one: the call
 * synchronises the stream, runs the operation, queues the copies back and
 * returns; the log says so once.
 *
 * From weft_comm_set_stream on, the stream thread is the communicator's
 * own thread: every operation on it goes through the stream, and calls
 * that use the communicator otherwise (split, dup, mesh, destroy) first
 * wait until the stream thread is idle (comm->quiesce). A failure of an
 * operation on the stream cannot be returned to a caller that has gone:
 * it is kept, logged, and returned by every later call on the
 * communicator (as NCCL's asynchronous errors are).
 */
#ifndef WEFT_CORE_API_STREAM_H
#define WEFT_CORE_API_STREAM_H

#include <stddef.h>

#include "core/comm/comm.h"

/* A copy the stream makes before (in) or after (out) the operation. */
typedef struct weft__stream_copy {
    void *dst;
    const void *src;
    size_t len;
} weft__stream_copy_t;

/* What runs on the stream thread, when the stream got there. */
typedef struct weft__stream_job {
    weft_result_t (*run)(weft_comm_t comm, void *arg);
    void (*release)(void *arg);     /* frees arg, run or not (NULL: nothing) */
    void *arg;
    const char *fn;                 /* the entry point, for messages */
} weft__stream_job_t;

/* Sets or clears (stream NULL) comm's stream. */
weft_result_t weft__stream_set(weft_comm_t comm, void *stream, const char *fn);

/* Queues job on comm's stream, with its copies in and out; staging[0..n)
 * is host memory from weft__stream_host_alloc, released once the stream
 * is past the copies out. On failure job->release ran and the staging is
 * freed. */
weft_result_t weft__stream_submit(weft_comm_t comm, const weft__stream_copy_t *in, int nin,
                                  const weft__stream_copy_t *out, int nout,
                                  const weft__stream_job_t *job, void **staging, int nstaging);

/* Page-locked host memory for staging on comm's stream (NULL with the
 * error set), and its release when a submit was never made. */
void *weft__stream_host_alloc(weft_comm_t comm, size_t len);
void weft__stream_host_free(weft_comm_t comm, void *p);

/* The error an earlier operation on comm's stream left, reported for fn
 * (WEFT_SUCCESS when none). */
weft_result_t weft__stream_error(weft_comm_t comm, const char *fn);

#endif /* WEFT_CORE_API_STREAM_H */
