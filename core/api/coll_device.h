/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * coll_device.h: collectives of a node GPU to GPU (coll_device.c says
 * which and how).
 */
#ifndef WEFT_CORE_API_COLL_DEVICE_H
#define WEFT_CORE_API_COLL_DEVICE_H

#include "core/coll/coll.h"
#include "core/comm/comm.h"

/* Reads WEFT_CUDA_COLL and WEFT_CUDA_COLL_MIN (at weft_init); a malformed
 * value is WEFT_ERR_INVALID_ARG naming the variable. */
weft_result_t weft__coll_device_settings_parse(void);

/* Whether every rank of comm runs c, of kind, through the device engine's
 * agreement, whatever its buffers: the same answer on every rank, from
 * the communicator, the kind and the call's total size. */
int weft__coll_device_joins(weft_comm_t comm, const weft__coll_t *c, weft__coll_kind_t kind);

/* How the engine stages a call the ranks cannot all run GPU to GPU
 * (coll_stage.c gives it): the collective, not yet started, that runs c
 * with its device buffers staged through host memory (sdev, rdev:
 * whether sendbuf and recvbuf are, as the entry point found), its inputs
 * copied in already (*child is c itself where neither is); its
 * algorithm chosen for tune_bytes and even unless tuned. c is freed on
 * failure. */
typedef weft_result_t (*weft__coll_stage_fn)(weft_comm_t comm, weft__coll_t *c,
                                             weft__coll_kind_t kind, size_t tune_bytes,
                                             int even, int tuned, int sdev, int rdev,
                                             weft__coll_t **child);

/* The collective that runs c (which it takes over) GPU to GPU where all
 * ranks can, else as stage makes it: *out, to start with
 * weft__coll_launch_now. sdev, rdev: whether c's sendbuf and recvbuf on
 * this rank are device memory, as the entry point asked the driver (the
 * engine does not ask again). c is freed on failure. */
weft_result_t weft__coll_device_new(weft_comm_t comm, weft__coll_t *c, weft__coll_kind_t kind,
                                    size_t tune_bytes, int even, int tuned, int sdev, int rdev,
                                    weft__coll_stage_fn stage, weft__coll_t **out);

#endif /* WEFT_CORE_API_COLL_DEVICE_H */
