/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * shm_recv.c: draining a peer's ring into receives and the unexpected
 * queue. Records are taken in ring order, which is send order; a message
 * that arrives in fragments is the peer's `cur` until its last one. A
 * receive into device memory (a non-NULL mh) is written with the CUDA
 * driver, never by the CPU.
 */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "plugins/shm/shm.h"

/* 1 when m's bytes go to device memory. */
static int to_device(const struct shm_msg *m)
{
    return m->req && m->req->mhandle;
}

/* Copies len payload bytes (at off in the ring) into m's destination. */
static void take_payload(struct shm_ctx *ctx, struct shm_ring *ring, struct shm_msg *m,
                         uint64_t off, size_t len)
{
    size_t cap;
    unsigned char *dst = weft__shm_msg_dest(m, &cap);

    if (dst && len) {
        if (!to_device(m)) {
            weft__shm_ring_peek(ring, off, dst, tp_min(cap, len));
        } else if (weft__shm_ring_peek_copy(ring, off, dst, tp_min(cap, len),
                                            weft__shm_cuda_copy, ctx) != 0) {
            if (m == ctx->peers[m->peer].cur)
                ctx->peers[m->peer].cur = NULL;
            weft__tp_match_fail(&ctx->tp, &m->tp, WEFT_ERR_SYSTEM);
            return;
        }
    }
    weft__shm_msg_add(ctx, m, len);
}

/* Reads n bytes of peer's host memory at src into device memory, through
 * a host buffer: process_vm_readv cannot write GPU memory. 0, an errno,
 * or -1 when the driver failed. */
static int cma_to_device(struct shm_ctx *ctx, int peer, void *dst, uint64_t src, size_t n)
{
    void *bounce = malloc(n);
    int err;

    if (!bounce)
        return ENOMEM;
    err = weft__shm_cma_read(ctx, peer, bounce, src, n);
    if (!err && weft__shm_cuda_copy(ctx, dst, bounce, n) != 0)
        err = -1;
    free(bounce);
    return err;
}

/* Reads an RTS's bytes from the sender and owes it a FIN. */
static void take_rts(struct shm_ctx *ctx, int peer, const struct shm_rec *rec,
                     struct shm_msg *m)
{
    struct shm_peer *p = &ctx->peers[peer];
    size_t cap;
    unsigned char *dst = weft__shm_msg_dest(m, &cap);
    size_t n = tp_min(cap, rec->total);
    int err = 0;

    if (dst && n) {
        if (to_device(m))
            err = peer == ctx->rank ? weft__shm_cuda_copy(ctx, dst, (const void *)(uintptr_t)
                                                          rec->addr, n)
                                    : cma_to_device(ctx, peer, dst, rec->addr, n);
        else if (peer == ctx->rank)
            memcpy(dst, (const void *)(uintptr_t)rec->addr, n);
        else
            err = weft__shm_cma_read(ctx, peer, dst, rec->addr, n);
    }
    p->fins_owed++;
    if (err == -1) {
        weft__tp_match_fail(&ctx->tp, &m->tp, WEFT_ERR_SYSTEM);
        return;
    }
    if (err == 0) {
        weft__shm_msg_add(ctx, m, rec->total);
        return;
    }
    if (err == ESRCH) {
        /* It died: the liveness check says so to everyone waiting. */
        weft__tp_match_fail(&ctx->tp, &m->tp, WEFT_ERR_PEER_LOST);
        return;
    }
    TP_WARN(ctx, "cannot read %llu bytes of rank %d's memory (process_vm_readv: %s); "
            "WEFT_SHM_CMA=0 sends large messages through the ring instead",
            (unsigned long long)rec->total, peer, strerror(err));
    weft__tp_match_fail(&ctx->tp, &m->tp, WEFT_ERR_SYSTEM);
}

/* Maps the sender's device buffer an RTS_IPC describes (its payload),
 * copies from it, and owes the sender a FIN whatever the outcome. */
static void take_rts_ipc(struct shm_ctx *ctx, int peer, const struct shm_rec *rec,
                         struct shm_msg *m)
{
    struct shm_ipc_rts ipc;
    size_t cap;
    unsigned char *dst = weft__shm_msg_dest(m, &cap);
    size_t n = tp_min(cap, rec->total);

    ctx->peers[peer].fins_owed++;
    if (rec->len != sizeof(ipc)) {
        weft__tp_error(&ctx->tp, "rank %d sent a GPU buffer's description of %u bytes, not "
                       "%zu", peer, rec->len, sizeof(ipc));
        weft__tp_match_fail(&ctx->tp, &m->tp, WEFT_ERR_INTERNAL);
        return;
    }
    weft__shm_ring_peek(&ctx->peers[peer].in, sizeof(*rec), &ipc, sizeof(ipc));
    if (dst && n && weft__shm_cuda_ipc_read(ctx, peer, &ipc, dst, n) != 0) {
        weft__tp_match_fail(&ctx->tp, &m->tp, WEFT_ERR_SYSTEM);
        return;
    }
    weft__shm_msg_add(ctx, m, rec->total);
}

/* Handles one record (payload at sizeof(rec) in the ring). 0 when done
 * with it, -1 to leave it for later (out of memory). */
static int take_record(struct shm_ctx *ctx, int peer, const struct shm_rec *rec)
{
    struct shm_peer *p = &ctx->peers[peer];
    struct shm_msg *m;

    switch (rec->type) {
    case SHM_REC_EAGER:
    case SHM_REC_START:
    case SHM_REC_RTS:
    case SHM_REC_RTS_IPC:
        if (p->cur) {
            TP_WARN(ctx, "rank %d started a message before it finished the last one",
                    peer);
            weft__tp_match_fail(&ctx->tp, &p->cur->tp, WEFT_ERR_INTERNAL);
            p->cur = NULL;
        }
        if (rec->type == SHM_REC_EAGER) {
            /* The common case of small messages: straight into a posted
             * receive, nothing to keep track of. */
            struct tp_req *r = weft__tp_match_take(&ctx->tp, peer, rec->tag, rec->len);

            if (r) {
                weft_result_t st = rec->len > r->len ? WEFT_ERR_TRUNCATED : WEFT_SUCCESS;

                if (rec->len && r->len) {
                    if (!r->mhandle)
                        weft__shm_ring_peek(&p->in, sizeof(*rec), r->buf,
                                            tp_min(r->len, rec->len));
                    else if (weft__shm_ring_peek_copy(&p->in, sizeof(*rec), r->buf,
                                                      tp_min(r->len, rec->len),
                                                      weft__shm_cuda_copy, ctx) != 0)
                        st = WEFT_ERR_SYSTEM;
                }
                weft__tp_req_complete(r, st);
                return 0;
            }
        }
        if (rec->total == 0 && rec->type != SHM_REC_EAGER) {
            /* weft sends an empty message as one EAGER record. Any other
             * record of one would be whole on arrival, so the matcher
             * would free it before it is read below. */
            TP_WARN(ctx, "rank %d started an empty message with a record of type %u; dropped",
                    peer, rec->type);
            return 0;
        }
        /* An EAGER record is the whole message, whatever its total says
         * (as for a posted receive above): a message it left unfinished
         * would wait for fragments that never come. */
        m = weft__shm_msg_arrive(ctx, peer, rec->tag,
                                 rec->type == SHM_REC_EAGER ? rec->len : rec->total);
        if (!m)
            return -1;
        if (rec->type == SHM_REC_RTS) {
            take_rts(ctx, peer, rec, m);
            return 0;
        }
        if (rec->type == SHM_REC_RTS_IPC) {
            take_rts_ipc(ctx, peer, rec, m);
            return 0;
        }
        /* Fragments follow only when the start did not hold it all: a
         * message it completes is the matcher's to free, and must not be
         * left as the current one. */
        if (rec->type == SHM_REC_START && rec->len < rec->total)
            p->cur = m;
        take_payload(ctx, &p->in, m, sizeof(*rec), rec->len);
        return 0;
    case SHM_REC_DATA:
        m = p->cur;
        if (!m) {
            TP_WARN(ctx, "rank %d sent a fragment of no message; dropped", peer);
            return 0;
        }
        if (m->got + rec->len >= m->total)
            p->cur = NULL;
        take_payload(ctx, &p->in, m, sizeof(*rec), rec->len);
        return 0;
    case SHM_REC_FIN:
        weft__shm_fin_arrived(ctx, peer, rec->id);
        return 0;
    case SHM_REC_BYE:
        weft__shm_peer_departed(ctx, peer);
        return 0;
    default:
        TP_WARN(ctx, "rank %d wrote a record of unknown type %u; dropped", peer, rec->type);
        return 0;
    }
}

void weft__shm_drain(struct shm_ctx *ctx, int peer, size_t budget)
{
    struct shm_peer *p = &ctx->peers[peer];
    struct shm_ring *ring = &p->in;
    int took = 0;

    while (budget) {
        uint64_t avail = weft__shm_ring_avail(ring);
        struct shm_rec rec;
        size_t bytes;

        if (avail < sizeof(rec))
            break;
        weft__shm_ring_peek(ring, 0, &rec, sizeof(rec));
        /* The producer publishes a record whole (weft__shm_ring_push): a
         * length past what it published means the ring's memory was
         * overwritten, and neither this record nor any after it can be
         * read. */
        if (rec.len > avail - sizeof(rec)) {
            weft__shm_peer_lost(ctx, peer, "its ring holds a record longer than what it "
                                "wrote (shared memory overwritten)");
            break;
        }
        if (take_record(ctx, peer, &rec) != 0)
            break;
        weft__shm_ring_consume(ring, sizeof(rec) + rec.len);
        took = 1;
        bytes = sizeof(rec) + (rec.type == SHM_REC_RTS || rec.type == SHM_REC_RTS_IPC
                                   ? rec.total : rec.len);
        budget = bytes >= budget ? 0 : budget - bytes;
    }
    if (!took)
        return;
    /* The producer may wait for the room just made: see weft__shm_pump. */
    __atomic_thread_fence(__ATOMIC_SEQ_CST);
    if (__atomic_load_n(&p->in_slot->ctl.producer_blocked, __ATOMIC_RELAXED)) {
        __atomic_store_n(&p->in_slot->ctl.producer_blocked, 0, __ATOMIC_RELAXED);
        weft__shm_wake(ctx, peer);
    }
    if (p->fins_owed)
        weft__shm_pump(ctx, peer);
}
