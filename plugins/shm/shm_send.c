/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * shm_send.c: sending. Each peer has a queue of sends in send order; the
 * pump moves records into the peer's ring while there is room: a short
 * message whole, a long one fragment by fragment (the receiver copies the
 * first fragments out while later ones go in), or a long one as an RTS
 * that the receiver answers with FIN once it read the buffer itself.
 * Device buffers (a non-NULL mh) are copied in with the CUDA driver, and
 * a large one goes as an RTS_IPC where the peer can map it (shm_cuda.c);
 * never by cross memory attach, which cannot read GPU memory.
 */
#include "config.h"

#include <errno.h>
#include <string.h>
#include <unistd.h>

#include "plugins/shm/shm.h"

/* Wakes peer if it sleeps on its wait descriptor. The caller wrote to the
 * peer's ring (or read from it) before, and the fence orders that before
 * reading the flag: the peer raises the flag before it looks at the ring. */
void weft__shm_wake(struct shm_ctx *ctx, int peer)
{
    struct shm_peer *p = &ctx->peers[peer];
    char byte = 0;

    if (peer == ctx->rank || !p->hdr || p->wake_fd < 0)
        return;
    __atomic_thread_fence(__ATOMIC_SEQ_CST);
    if (!__atomic_load_n(&p->hdr->waiting, __ATOMIC_RELAXED) ||
        !__atomic_exchange_n(&p->hdr->waiting, 0, __ATOMIC_SEQ_CST))
        return;
    /* A full FIFO already wakes it; anything else is for the liveness
     * check to find. */
    if (write(p->wake_fd, &byte, 1) < 0 && errno != EAGAIN)
        TP_TRACE(ctx, "waking rank %d: %s", peer, strerror(errno));
}

/* The largest payload of one record to peer: a quarter of its ring, which
 * its owner sized (WEFT_SHM_RING_SIZE may differ between ranks), and no
 * more than ours. */
static size_t peer_frag(const struct shm_ctx *ctx, const struct shm_peer *p)
{
    return p->out.cap ? tp_min(ctx->frag, p->out.cap / 4) : ctx->frag;
}

/* Bytes the next record of peer's queue needs in the ring, 0 if none. */
static size_t next_need(const struct shm_ctx *ctx, const struct shm_peer *p)
{
    const struct shm_req *r = (const struct shm_req *)p->sq.head;

    if (p->fins_owed)
        return sizeof(struct shm_rec);
    if (!r)
        return 0;
    if (r->rts)
        return sizeof(struct shm_rec) + (r->ipc ? sizeof(struct shm_ipc_rts) : 0);
    return sizeof(struct shm_rec) + tp_min(peer_frag(ctx, p), r->len - r->pushed);
}

int weft__shm_pump_ready(struct shm_ctx *ctx, int peer)
{
    struct shm_peer *p = &ctx->peers[peer];
    size_t need = next_need(ctx, p);

    return need && p->slot && weft__shm_ring_space(&p->out) >= need;
}

/* Pushes the next record of peer's queue: 1 when it went in. */
static int push_one(struct shm_ctx *ctx, struct shm_peer *p)
{
    struct shm_req *r = (struct shm_req *)p->sq.head;
    struct shm_ipc_rts ipc;
    struct shm_rec rec;
    size_t n;
    int rc;

    memset(&rec, 0, sizeof(rec));
    if (p->fins_owed) {
        rec.type = SHM_REC_FIN;
        rec.id = p->next_fin_id;
        if (weft__shm_ring_push(&p->out, &rec, sizeof(rec), NULL, 0) != 0)
            return 0;
        p->fins_owed--;
        p->next_fin_id++;
        return 1;
    }
    rec.tag = r->tag;
    rec.total = r->len;
    if (r->rts) {
        rec.type = r->ipc ? SHM_REC_RTS_IPC : SHM_REC_RTS;
        rec.addr = (uint64_t)(uintptr_t)r->buf;
        rec.id = p->next_rts_id;
        if (r->ipc) {
            weft__shm_cuda_ipc_rts(ctx, r->peer, r->mhandle, r->buf, &ipc);
            rec.len = sizeof(ipc);
        }
        if (weft__shm_ring_push(&p->out, &rec, sizeof(rec), r->ipc ? &ipc : NULL,
                                rec.len) != 0)
            return 0;
        r->id = p->next_rts_id++;
        r->started = 1;
        weft__tp_queue_remove(&p->sq, &r->tp);
        weft__tp_queue_append(&p->rts, &r->tp);
        return 1;
    }
    n = tp_min(peer_frag(ctx, p), r->len - r->pushed);
    rec.type = r->started ? SHM_REC_DATA : n == r->len ? SHM_REC_EAGER : SHM_REC_START;
    rec.len = (uint32_t)n;
    if (!r->mhandle)
        rc = weft__shm_ring_push(&p->out, &rec, sizeof(rec), r->buf + r->pushed, n);
    else
        rc = weft__shm_ring_push_copy(&p->out, &rec, sizeof(rec), r->buf + r->pushed, n,
                                      weft__shm_cuda_copy, ctx);
    if (rc == -1)
        return 0;
    if (rc != 0) {
        /* The driver's error is set; the receiver of a started message
         * sees the rest never come, as if the sender had died. */
        weft__tp_queue_remove(&p->sq, &r->tp);
        weft__tp_req_complete(&r->tp, WEFT_ERR_SYSTEM);
        return 1;
    }
    r->started = 1;
    r->pushed += n;
    if (r->pushed == r->len) {
        weft__tp_queue_remove(&p->sq, &r->tp);
        weft__tp_req_complete(&r->tp, WEFT_SUCCESS);
    }
    return 1;
}

void weft__shm_pump(struct shm_ctx *ctx, int peer)
{
    struct shm_peer *p = &ctx->peers[peer];
    int pushed = 0;

    if (!p->slot || p->lost || p->departed)
        return;
    for (;;) {
        while ((p->fins_owed || p->sq.head) && push_one(ctx, p))
            pushed = 1;
        if (!p->fins_owed && !p->sq.head)
            break;
        /* Full: ask the consumer for a wake-up, then look once more, in
         * case it made room before it could see the request. */
        __atomic_store_n(&p->slot->ctl.producer_blocked, 1, __ATOMIC_RELAXED);
        __atomic_thread_fence(__ATOMIC_SEQ_CST);
        if (weft__shm_ring_space(&p->out) < next_need(ctx, p))
            break;
    }
    if (pushed)
        weft__shm_wake(ctx, peer);
}

void weft__shm_fin_arrived(struct shm_ctx *ctx, int peer, uint64_t id)
{
    struct shm_peer *p = &ctx->peers[peer];
    struct shm_req *r = (struct shm_req *)p->rts.head;

    if (!r || r->id != id) {
        TP_WARN(ctx, "rank %d finished reading message %llu, which is not the oldest one "
                "it was asked to read; ignored", peer, (unsigned long long)id);
        return;
    }
    weft__tp_queue_remove(&p->rts, &r->tp);
    weft__tp_req_complete(&r->tp, WEFT_SUCCESS);
}

void weft__shm_sends_fail(struct shm_ctx *ctx, int peer, weft_result_t status)
{
    struct shm_peer *p = &ctx->peers[peer];
    struct tp_req_queue *queues[2] = { &p->sq, &p->rts };

    for (int i = 0; i < 2; i++)
        while (queues[i]->head) {
            struct tp_req *r = queues[i]->head;

            weft__tp_queue_remove(queues[i], r);
            weft__tp_req_complete(r, status);
        }
    p->fins_owed = 0;
}

/* A send none of which is in the ring leaves the queue. One that started
 * goes on (the receiver has its first bytes), and an RTS waits for its
 * FIN (the receiver may be reading the buffer): both then report the
 * cancel. */
void weft__shm_send_cancel(struct tp_ctx *tp, struct tp_req *r)
{
    struct shm_peer *p = &((struct shm_ctx *)tp)->peers[r->peer];

    r->cancelled = 1;
    if (r->queued && !((struct shm_req *)r)->started) {
        weft__tp_queue_remove(&p->sq, r);
        weft__tp_req_complete(r, WEFT_ERR_ABORTED);
    }
}

weft_result_t weft__shm_isend(void *vctx, int peer, const void *buf, size_t len,
                              uint64_t tag, void *mh, void **out)
{
    struct shm_ctx *ctx = vctx;
    weft_result_t rc;
    struct shm_req *r = (struct shm_req *)weft__tp_isend_new(&ctx->tp, peer, buf, len, tag,
                                                             out, &rc);

    if (!r)
        return rc;
    /* What test() reports as len, whatever becomes of the send. */
    r->total = len;
    if (r->done)
        return WEFT_SUCCESS;
    if (!mh) {
        r->rts = len >= ctx->cma_threshold && len > ctx->frag && ctx->peers[peer].cma_send;
    } else {
        r->mhandle = mh;
        r->ipc = len > ctx->frag && weft__shm_cuda_ipc_rts(ctx, peer, mh, buf, NULL);
        r->rts = r->ipc;
    }
    weft__tp_queue_append(&ctx->peers[peer].sq, &r->tp);
    /* Short messages usually leave now, not at the next progress. */
    weft__shm_pump(ctx, peer);
    return WEFT_SUCCESS;
}

/* Tells every local peer that this rank leaves on purpose, so that its
 * receives from any source are not failed as they are for a crash. A
 * peer whose ring stays full for a while sees a crash instead. */
void weft__shm_say_goodbye(struct shm_ctx *ctx)
{
    struct shm_rec rec;

    memset(&rec, 0, sizeof(rec));
    rec.type = SHM_REC_BYE;
    for (int i = 0; i < ctx->nlocals; i++) {
        int peer = ctx->locals[i];
        struct shm_peer *p = &ctx->peers[peer];

        if (peer == ctx->rank || !p->slot || p->lost || p->departed)
            continue;
        for (int tries = 0; tries < 100; tries++) {
            if (weft__shm_ring_push(&p->out, &rec, sizeof(rec), NULL, 0) == 0) {
                weft__shm_wake(ctx, peer);
                break;
            }
            usleep(1000);
        }
    }
}
