/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * tp.c: a context's common head, and the checks and messages that name
 * the plugin.
 */
#include "config.h"

#include <errno.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "plugins/common/tp.h"

void *weft__tp_ctx_new(const weft_transport_core_t *core, void **out, const char *name,
                       size_t ctx_size, const struct tp_ops *ops, weft_result_t *rc)
{
    struct tp_ctx *tp;

    *rc = WEFT_ERR_INVALID_ARG;
    /* Without a core of our size there is no set_error to explain. */
    if (!core || core->struct_size < sizeof(*core) || !out)
        return NULL;
    if (core->size <= 0 || core->rank < 0 || core->rank >= core->size) {
        core->set_error("%s: rank %d of %d makes no sense", name, core->rank, core->size);
        return NULL;
    }
    tp = calloc(1, ctx_size);
    if (!tp) {
        core->set_error("%s: out of memory", name);
        *rc = WEFT_ERR_NO_MEMORY;
        return NULL;
    }
    tp->core = core;
    tp->name = name;
    tp->rank = core->rank;
    tp->size = core->size;
    tp->ops = ops;
    tp->pool.size = ops->req_size;
    *rc = WEFT_SUCCESS;
    return tp;
}

void weft__tp_ctx_fini(struct tp_ctx *tp)
{
    weft__tp_req_pool_fini(&tp->pool);
    tp->posted.head = tp->posted.tail = NULL;
    weft__tp_match_fini(tp);
}

void weft__tp_error(const struct tp_ctx *tp, const char *fmt, ...)
{
    char msg[512];
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    tp->core->set_error("%s: %s", tp->name, msg);
}

int weft__tp_check_rank(const struct tp_ctx *tp, const char *what, int peer)
{
    if (peer >= 0 && peer < tp->size)
        return 0;
    weft__tp_error(tp, "%s rank %d, not in 0..%d", what, peer, tp->size - 1);
    return -1;
}

int weft__tp_check_op(struct tp_ctx *tp, const char *what, int kind, int peer,
                      const void *buf, size_t len, void **out)
{
    int state;

    if (!out || (!buf && len)) {
        weft__tp_error(tp, "%s rank %d: %s is NULL", what, peer, out ? "buf" : "req");
        return -1;
    }
    if (kind == TP_RECV && peer == WEFT_TRANSPORT_ANY_PEER)
        return TP_PEER_UP;
    if (weft__tp_check_rank(tp, what, peer) != 0)
        return -1;
    state = tp->ops->peer(tp, peer, kind);
    if (state == TP_PEER_UNKNOWN) {
        weft__tp_error(tp, "%s rank %d, which is not connected", what, peer);
        return -1;
    }
    return state;
}

int weft__tp_param_long(const struct tp_ctx *tp, const char *name, long lo, long hi,
                        long def, long *out)
{
    const char *s = tp->core->get_param ? tp->core->get_param(name) : NULL;
    char *end;
    long v;

    if (!s || !*s) {
        *out = def;
        return 0;
    }
    errno = 0;
    v = strtol(s, &end, 10);
    if (errno || end == s || *end || v < lo || v > hi) {
        weft__tp_error(tp, "%s=%s is not a number from %ld to %ld", name, s, lo, hi);
        return -1;
    }
    *out = v;
    return 0;
}

void weft__tp_describe(struct tp_ctx *tp, uint64_t flags, double latency_us,
                       double bandwidth_gbps, const void *addr, size_t len)
{
    memset(&tp->caps, 0, sizeof(tp->caps));
    tp->caps.flags = flags;
    tp->caps.mem_types = 1u << WEFT_TRANSPORT_MEM_HOST;
    tp->caps.max_msg_size = SIZE_MAX;
    tp->caps.latency_us = latency_us;
    tp->caps.bandwidth_gbps = bandwidth_gbps;
    tp->addr = addr;
    tp->addr_len = len;
}

weft_result_t weft__tp_query(void *ctx, weft_transport_caps_t *caps)
{
    const struct tp_ctx *tp = ctx;
    weft_transport_caps_t mine = tp->caps;

    if (!caps)
        return WEFT_ERR_INVALID_ARG;
    /* Hand over only what the core's struct has room for. */
    mine.struct_size = caps->struct_size;
    memcpy(caps, &mine, tp_min(caps->struct_size, sizeof(mine)));
    return WEFT_SUCCESS;
}

weft_result_t weft__tp_get_address(void *ctx, void *addr, size_t *len)
{
    const struct tp_ctx *tp = ctx;

    if (!addr || !len || *len < tp->addr_len) {
        weft__tp_error(tp, "get_address needs %zu bytes", tp->addr_len);
        return WEFT_ERR_INVALID_ARG;
    }
    memcpy(addr, tp->addr, tp->addr_len);
    *len = tp->addr_len;
    return WEFT_SUCCESS;
}
