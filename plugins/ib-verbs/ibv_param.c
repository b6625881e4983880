/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * ibv_param.c: the transport's parameters, read once at init. Each has a
 * range that keeps it meaningful; a value outside it fails init with the
 * variable, the value and the range, rather than being bent to fit.
 *
 * The defaults: a local ACK timeout of 4.096 us << 18 (1.07 s) and 7
 * retries, so a dead peer is noticed within about 9 s (a keepalive probe
 * finds it while we wait, ibv_alive.c) and a congested fabric is not
 * taken for one; receiver-not-ready retried for
 * ever (7) with a 0.64 ms wait (12), though the protocol never lets a
 * receive queue run dry; one data QP per rail; 16 eager credits of 8 KiB
 * and 16 windows in flight per pair and direction, which bounds a pair
 * to about 136 KiB of receive buffers; 4 MiB of staging windows, so that
 * what is pinned whatever the job does (about 6 MiB) fits the 8 MiB
 * RLIMIT_MEMLOCK many distributions set.
 */
#include "config.h"

#include <limits.h>
#include <stdio.h>

#include "plugins/ib-verbs/ibv.h"

#define KIB 1024L
#define MIB (1024L * KIB)
#define GIB (1024L * MIB)

static const char *param_str(const struct tp_ctx *tp, const char *name)
{
    const char *s = tp->core->get_param ? tp->core->get_param(name) : NULL;

    return s && *s ? s : NULL;
}

int weft__ibv_params_read(const struct tp_ctx *tp, struct wib_params *p)
{
    long gid, timeout, retry, rnr, rnr_timer, sl, tc, rails, qps, sq, esize, credits, slots,
        chunk, staging, reg_min, reg_cache, rcmax, fork_init, keepalive, wait_s, gdr;

    if (weft__tp_param_long(tp, "WEFT_IB_GID_INDEX", -1, 255, -1, &gid) != 0 ||
        weft__tp_param_long(tp, "WEFT_IB_TIMEOUT", 1, 31, 18, &timeout) != 0 ||
        weft__tp_param_long(tp, "WEFT_IB_RETRY_CNT", 0, 7, 7, &retry) != 0 ||
        weft__tp_param_long(tp, "WEFT_IB_RNR_RETRY", 0, 7, 7, &rnr) != 0 ||
        /* 0 would mean 655 ms, not "none". */
        weft__tp_param_long(tp, "WEFT_IB_MIN_RNR_TIMER", 1, 31, 12, &rnr_timer) != 0 ||
        weft__tp_param_long(tp, "WEFT_IB_SL", 0, 15, 0, &sl) != 0 ||
        weft__tp_param_long(tp, "WEFT_IB_TC", 0, 255, 0, &tc) != 0 ||
        weft__tp_param_long(tp, "WEFT_IB_RAILS", 1, WIB_RAILS_MAX, WIB_RAILS_MAX, &rails) != 0 ||
        weft__tp_param_long(tp, "WEFT_IB_QPS", 1, WIB_QPS_MAX, 1, &qps) != 0 ||
        weft__tp_param_long(tp, "WEFT_IB_SQ_DEPTH", 16, 8192, 256, &sq) != 0 ||
        weft__tp_param_long(tp, "WEFT_IB_EAGER_SIZE", 256, 64 * KIB, 8 * KIB, &esize) != 0 ||
        weft__tp_param_long(tp, "WEFT_IB_EAGER_CREDITS", 2, 1024, 16, &credits) != 0 ||
        weft__tp_param_long(tp, "WEFT_IB_CTS_SLOTS", 2, 256, 16, &slots) != 0 ||
        weft__tp_param_long(tp, "WEFT_IB_CHUNK", 4 * KIB, GIB, 512 * KIB, &chunk) != 0 ||
        weft__tp_param_long(tp, "WEFT_IB_STAGING", 64 * KIB, 16 * GIB, 4 * MIB,
                            &staging) != 0 ||
        weft__tp_param_long(tp, "WEFT_IB_REG_MIN", 0, LONG_MAX, 64 * KIB, &reg_min) != 0 ||
        weft__tp_param_long(tp, "WEFT_IB_REG_CACHE", -1, 1, -1, &reg_cache) != 0 ||
        weft__tp_param_long(tp, "WEFT_IB_RCACHE_SIZE", MIB, LONG_MAX, 4 * GIB, &rcmax) != 0 ||
        weft__tp_param_long(tp, "WEFT_IB_FORK_INIT", 0, 1, 1, &fork_init) != 0 ||
        weft__tp_param_long(tp, "WEFT_IB_KEEPALIVE", 0, 3600 * 1000, 1000, &keepalive) != 0 ||
        weft__tp_param_long(tp, "WEFT_IB_GDR", 0, 1, 1, &gdr) != 0 ||
        weft__tp_param_long(tp, "WEFT_TIMEOUT", 1, 86400, 300, &wait_s) != 0)
        return -1;
    if (staging < 2 * chunk) {
        weft__tp_error(tp, "WEFT_IB_STAGING=%ld holds fewer than two chunks of "
                       "WEFT_IB_CHUNK=%ld", staging, chunk);
        return -1;
    }
    p->lib = param_str(tp, "WEFT_IBVERBS_LIB");
    p->hca = param_str(tp, "WEFT_IB_HCA");
    p->gid_index = (int)gid;
    p->timeout = (int)timeout;
    p->retry_cnt = (int)retry;
    p->rnr_retry = (int)rnr;
    p->min_rnr_timer = (int)rnr_timer;
    p->sl = (int)sl;
    p->traffic_class = (int)tc;
    p->rails = (int)rails;
    p->qps = (int)qps;
    p->sq_depth = (int)sq;
    p->eager_size = (size_t)esize;
    p->eager_credits = (int)credits;
    p->cts_slots = (int)slots;
    p->chunk = (size_t)chunk;
    p->staging = (size_t)staging;
    p->reg_min = (size_t)reg_min;
    p->reg_cache = (int)reg_cache;
    p->rcache_max = (size_t)rcmax;
    p->fork_init = (int)fork_init;
    p->keepalive_ms = (int)keepalive;
    p->gdr = (int)gdr;
    p->timeout_ms = (int)(wait_s * 1000);
    return 0;
}
