/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * chain.c: the pipelined chain broadcast.
 *
 * Ranks in order from the root pass the buffer down a line in chunks
 * (weft__algo_chunk_bytes): in round r a rank takes chunk r from the rank
 * before it while it passes chunk r - 1 to the one after, so every link
 * works at once and the broadcast costs about one buffer's transfer plus
 * one chunk per rank, each rank sending the buffer once: for large buffers
 * on few ranks, where the binomial tree's root sends it log2 n times.
 */
#include "config.h"

#include <stddef.h>

#include "core/coll/algo/algo.h"
#include "core/base/error.h"

/* Round r = phase: receive chunk r, send chunk r - 1 (the root: chunk r). */
static weft_result_t chain_step(weft__coll_t *c, int *done)
{
    int n = c->gsize, vr = (c->grank - c->root + n) % n, nops = 0;
    size_t bytes = c->count * c->esize, chunk = weft__algo_chunk_bytes(), nchunks, r, sending;
    weft_p2p_op_t ops[2];

    if (n == 1 || !bytes) {
        *done = 1;
        return WEFT_SUCCESS;
    }
    nchunks = (bytes + chunk - 1) / chunk;
    r = (size_t)c->phase++;
    if (vr > 0 && r < nchunks)
        ops[nops++] = (weft_p2p_op_t){ WEFT_P2P_RECV, (char *)c->recvbuf + r * chunk,
                                       bytes - r * chunk < chunk ? bytes - r * chunk : chunk,
                                       WEFT_UINT8, (c->grank - 1 + n) % n, 0 };
    sending = vr > 0 ? r - 1 : r; /* wraps to SIZE_MAX at r == 0 */
    if (vr + 1 < n && sending < nchunks)
        ops[nops++] = (weft_p2p_op_t){ WEFT_P2P_SEND, (char *)c->recvbuf + sending * chunk,
                                       bytes - sending * chunk < chunk ? bytes - sending * chunk
                                                                       : chunk,
                                       WEFT_UINT8, (c->grank + 1) % n, 0 };
    if (!nops) {
        *done = 1;
        return WEFT_SUCCESS;
    }
    return weft__coll_post(c, nops, ops);
}

void weft__bcast_chain(weft__coll_t *c)
{
    c->step = chain_step;
}
