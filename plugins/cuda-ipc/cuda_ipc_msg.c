/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * cuda_ipc_msg.c: the message half of the transport's table, which this
 * version declines.
 *
 * reach() answers WEFT_TRANSPORT_REACH_NONE for every rank, its own
 * included, so the core routes no peer here and calls none of the
 * message functions; the core moves device buffers through its other
 * transports, staged through host memory with the device services. The
 * functions still behave as the ABI asks of a transport with nothing to
 * send: connect and disconnect succeed, sends and receives are refused
 * with a reason, progress has nothing to do and there is no wait
 * descriptor. A request handle cannot exist, so test() or cancel() of
 * one is misuse.
 */
#include "config.h"

#include <stddef.h>

#include "plugins/cuda-ipc/cuda_ipc.h"

/* One version byte for now; the address will carry what a peer needs to
 * open this rank's buffers (host, device UUID) once pairs are reached. */
weft_result_t weft__cuda_ipc_msg_get_address(void *ctx, void *addr, size_t *len)
{
    const struct cipc_ctx *c = ctx;

    if (*len < 1) {
        c->core->set_error("the address needs 1 byte, %zu given", *len);
        return WEFT_ERR_INVALID_ARG;
    }
    *(unsigned char *)addr = CIPC_ADDR_VERSION;
    *len = 1;
    return WEFT_SUCCESS;
}

weft_result_t weft__cuda_ipc_msg_reach(void *ctx, const void *peer_addr, size_t len,
                                       weft_transport_reach_t *reach)
{
    struct cipc_ctx *c = ctx;

    if (!c->declined_logged) {
        c->declined_logged = 1;
        /* The core puts "cuda-ipc: " before it. */
        c->core->log(WEFT_TRANSPORT_LOG_INFO, CIPC_NAME, "declines every pair: shm (CUDA "
                     "IPC) and ib-verbs (GPUDirect RDMA) move device buffers of point-to-point "
                     "operations; the core stages the others through host memory");
    }
    *reach = WEFT_TRANSPORT_REACH_NONE;
    return WEFT_SUCCESS;
}

weft_result_t weft__cuda_ipc_msg_connect(void *ctx, int peer, const void *peer_addr,
                                         size_t len)
{
    return WEFT_SUCCESS;
}

weft_result_t weft__cuda_ipc_msg_disconnect(void *ctx, int peer)
{
    return WEFT_SUCCESS;
}

/* Host memory needs no registration here; device memory will, once
 * buffers are exported to peers, and is refused until then (caps say
 * host memory only). */
weft_result_t weft__cuda_ipc_msg_mem_register(void *ctx, void *buf, size_t len, int mem_type,
                                              void **mhandle)
{
    const struct cipc_ctx *c = ctx;

    if (mem_type != WEFT_TRANSPORT_MEM_HOST) {
        c->core->set_error("cuda-ipc registers host memory only in this version (memory "
                           "type %d)", mem_type);
        return WEFT_ERR_UNSUPPORTED;
    }
    *mhandle = NULL;
    return WEFT_SUCCESS;
}

weft_result_t weft__cuda_ipc_msg_mem_deregister(void *ctx, void *mhandle)
{
    return WEFT_SUCCESS;
}

static weft_result_t no_messages(const struct cipc_ctx *c, const char *what, int peer)
{
    c->core->set_error("cuda-ipc moves no messages (%s, rank %d): it reaches no rank",
                       what, peer);
    return WEFT_ERR_UNSUPPORTED;
}

weft_result_t weft__cuda_ipc_msg_isend(void *ctx, int peer, const void *buf, size_t len,
                                       uint64_t tag, void *mhandle, void **req)
{
    return no_messages(ctx, "isend", peer);
}

weft_result_t weft__cuda_ipc_msg_irecv(void *ctx, int peer, void *buf, size_t len,
                                       uint64_t tag, uint64_t ignore, void *mhandle,
                                       void **req)
{
    return no_messages(ctx, "irecv", peer);
}

weft_result_t weft__cuda_ipc_msg_test(void *ctx, void *req, int *done,
                                      weft_transport_completion_t *comp)
{
    const struct cipc_ctx *c = ctx;

    c->core->set_error("cuda-ipc made no request, so %p is none of its", req);
    return WEFT_ERR_INVALID_ARG;
}

weft_result_t weft__cuda_ipc_msg_cancel(void *ctx, void *req)
{
    const struct cipc_ctx *c = ctx;

    c->core->set_error("cuda-ipc made no request, so %p is none of its", req);
    return WEFT_ERR_INVALID_ARG;
}

weft_result_t weft__cuda_ipc_msg_progress(void *ctx)
{
    return WEFT_SUCCESS;
}

weft_result_t weft__cuda_ipc_msg_get_wait_fd(void *ctx, int *fd)
{
    *fd = -1;
    return WEFT_SUCCESS;
}
