/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * cq.c: completion queues and completion channels.
 *
 * A CQ is a ring in this process's segment: any NIC on the fabric may
 * append to it (a receive completes on the responder's CQ, written by
 * the requester's NIC), the owner polls it. Its size is a power of two
 * less one, as mlx5 rounds it, and what does not fit is an overrun: the
 * completion is lost, the CQ stops taking more and IBV_EVENT_CQ_ERR is
 * raised. ibv_resize_cq() changes the size with entries in the ring and
 * requests in flight (see sw_resize_cq). Polling a send completion frees
 * its send-queue slots (and those of the unsignaled requests before it);
 * polling a receive frees its receive-queue slot: until then the queues
 * count them as full.
 *
 * A channel is an eventfd in semaphore mode, as the async one is. An
 * armed CQ that takes a new entry (a solicited one, when armed for
 * those) is disarmed and its owner's NIC thread woken, which queues the
 * event on the channel: the "interrupt" is the only step that needs the
 * owner, the data and the completion need nobody but the requester.
 */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

#include "tests/swrdma/swrdma.h"

struct ibv_comp_channel *ibv_create_comp_channel(struct ibv_context *c)
{
    if (!sw_ctx_ok(c)) {
        errno = EINVAL;
        return NULL;
    }
    struct sw_channel *ch = calloc(1, sizeof(*ch));
    if (!ch) {
        errno = ENOMEM;
        return NULL;
    }
    ch->ch.fd = eventfd(0, EFD_SEMAPHORE | EFD_CLOEXEC);
    if (ch->ch.fd < 0) {
        int e = errno;
        free(ch);
        errno = e;
        return NULL;
    }
    ch->ch.context = c;
    pthread_mutex_init(&ch->lock, NULL);
    struct sw_context *ctx = sw_ctx(c);
    pthread_mutex_lock(&ctx->lock);
    ctx->n_channel++;
    pthread_mutex_unlock(&ctx->lock);
    return &ch->ch;
}

int ibv_destroy_comp_channel(struct ibv_comp_channel *channel)
{
    if (!channel || !sw_ctx_ok(channel->context))
        return EINVAL;
    struct ibv_context *c = channel->context;
    pthread_mutex_lock(&c->mutex);
    int busy = channel->refcnt;
    pthread_mutex_unlock(&c->mutex);
    if (busy)
        return EBUSY;
    struct sw_channel *ch = SW_CONTAINER(channel, struct sw_channel, ch);
    close(ch->ch.fd);
    while (ch->head) {
        struct sw_event_node *n = ch->head;
        ch->head = n->next;
        free(n);
    }
    pthread_mutex_destroy(&ch->lock);
    struct sw_context *ctx = sw_ctx(c);
    pthread_mutex_lock(&ctx->lock);
    ctx->n_channel--;
    pthread_mutex_unlock(&ctx->lock);
    free(ch);
    return 0;
}

SW_DEFAULT(ibv_create_cq) struct ibv_cq *sw_create_cq(struct ibv_context *c, int cqe,
                                                      void *cq_context,
                                                      struct ibv_comp_channel *channel,
                                                      int comp_vector);
struct ibv_cq *sw_create_cq(struct ibv_context *c, int cqe, void *cq_context,
                            struct ibv_comp_channel *channel, int comp_vector)
{
    int err = EINVAL;
    if (!sw_ctx_ok(c))
        goto err;
    struct sw_reg_host *h = &sw.reg->host[sw.host];
    if (cqe < 1 || (uint32_t)cqe > h->conf.lim.max_cqe)
        goto err;
    if (comp_vector < 0 || comp_vector >= c->num_comp_vectors)
        goto err;
    if (channel && channel->context != c)
        goto err;
    if (sw_reg_count(&h->n_cq, h->conf.lim.max_cq, 1) < 0) {
        err = ENOMEM;
        goto err;
    }
    struct sw_cq *cq = calloc(1, sizeof(*cq));
    if (!cq) {
        err = ENOMEM;
        goto err_count;
    }
    uint32_t slot;
    pthread_mutex_lock(&sw.obj_lock);
    for (slot = 0; slot < sw.seg->max_cq; slot++)
        if (!sw.cqs[slot] && !sw_seg_cq(sw.seg, slot)->used)
            break;
    if (slot == sw.seg->max_cq) {
        pthread_mutex_unlock(&sw.obj_lock);
        err = ENOMEM;
        goto err_free;
    }
    struct sw_scq *s = sw_seg_cq(sw.seg, slot);
    sw_shm_mutex_init(&s->lock);
    uint32_t cap = 1;
    while (cap < (uint32_t)cqe + 1)
        cap <<= 1;
    s->gen++;
    s->cap = cap;
    s->head = s->tail = 0;
    atomic_store(&s->armed, SW_ARM_NONE);
    atomic_store(&s->ev_pending, 0);
    atomic_store(&s->overrun, 0);
    s->used = 1;
    cq->slot = slot;
    cq->gen = s->gen;
    cq->s = s;
    sw.cqs[slot] = cq;
    pthread_mutex_unlock(&sw.obj_lock);
    pthread_mutex_init(&cq->poll_lock, NULL);
    cq->cq.context = c;
    cq->cq.channel = channel;
    cq->cq.cq_context = cq_context;
    cq->cq.handle = slot;
    cq->cq.cqe = (int)cap - 1;
    pthread_mutex_init(&cq->cq.mutex, NULL);
    pthread_cond_init(&cq->cq.cond, NULL);
    if (channel) {
        pthread_mutex_lock(&c->mutex);
        channel->refcnt++;
        pthread_mutex_unlock(&c->mutex);
    }
    struct sw_context *ctx = sw_ctx(c);
    pthread_mutex_lock(&ctx->lock);
    ctx->n_cq++;
    pthread_mutex_unlock(&ctx->lock);
    return &cq->cq;
err_free:
    free(cq);
err_count:
    sw_reg_count(&h->n_cq, h->conf.lim.max_cq, -1);
err:
    errno = err;
    return NULL;
}

/* Resizing. Every CQ slot of the segment has room for a ring of the
 * device's largest size (cq_cap_max), so a new size needs no new memory:
 * the entries still to be polled move to the front of the slot and the
 * capacity changes, all under the ring's lock. Every writer takes that
 * lock to read the capacity and append (this process's NIC thread for
 * send completions, any process's NIC for receives, through its own
 * mapping of this segment), so a writer sees the old ring or the new one,
 * never a mix, and a completion arriving meanwhile waits for the lock and
 * lands in the new ring. Entries of destroyed QPs are dropped on the way,
 * as mlx5 cleans them; the arming and an overrun stay as they were. */
SW_DEFAULT(ibv_resize_cq) int sw_resize_cq(struct ibv_cq *ibcq, int cqe);
int sw_resize_cq(struct ibv_cq *ibcq, int cqe)
{
    if (!ibcq || !sw_ctx_ok(ibcq->context))
        return EINVAL;
    struct sw_reg_host *h = &sw.reg->host[sw.host];
    if (cqe < 1 || (uint32_t)cqe > h->conf.lim.max_cqe)
        return EINVAL;
    uint32_t cap = 1;
    while (cap < (uint32_t)cqe + 1)
        cap <<= 1;
    struct sw_cq *cq = SW_CONTAINER(ibcq, struct sw_cq, cq);
    struct sw_scq *s = cq->s;
    /* the poller's lock first, as sw_poll_cq takes them: a poll in another
     * thread never sees half a move, and resizes come one at a time, so
     * s->cap (changed only here) may be read before taking s->lock */
    pthread_mutex_lock(&cq->poll_lock);
    struct sw_cqe *keep = malloc((size_t)s->cap * sizeof(*keep));
    if (!keep) {
        pthread_mutex_unlock(&cq->poll_lock);
        return ENOMEM;
    }
    int err = 0;
    uint32_t n = 0;
    sw_shm_lock(&s->lock);
    for (uint32_t i = s->head; i != s->tail; i++) {
        const struct sw_cqe *e = sw_seg_cqe(sw.seg, cq->slot, i & (s->cap - 1));
        if (e->kind != SW_CQE_SKIP)
            keep[n++] = *e;
    }
    if (n > (uint32_t)cqe) {
        err = EINVAL;           /* ibv_resize_cq(3): at least the unpolled entries */
    } else if (cap != s->cap) {
        for (uint32_t i = 0; i < n; i++)
            *sw_seg_cqe(sw.seg, cq->slot, i) = keep[i];
        s->head = 0;
        s->tail = n;
        s->cap = cap;
    }
    sw_shm_unlock(&s->lock);
    if (!err)
        ibcq->cqe = (int)cap - 1;
    pthread_mutex_unlock(&cq->poll_lock);
    free(keep);
    return err;
}

/* Waits for the caller to acknowledge what it was given, as libibverbs
 * does before destroying; says so once if that takes long, since a
 * missing ibv_ack_cq_events() hangs a real program here too. */
static void wait_acks(struct ibv_cq *ibcq, struct sw_cq *cq)
{
    bool told = false;
    pthread_mutex_lock(&ibcq->mutex);
    while (ibcq->comp_events_completed != cq->events_reported ||
           ibcq->async_events_completed != cq->async_reported) {
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        ts.tv_sec += 1;
        if (pthread_cond_timedwait(&ibcq->cond, &ibcq->mutex, &ts) == ETIMEDOUT && !told) {
            sw_check_report("ibv_destroy_cq() waits for %u completion and %u async events "
                            "to be acknowledged",
                            cq->events_reported - ibcq->comp_events_completed,
                            cq->async_reported - ibcq->async_events_completed);
            told = true;
        }
    }
    pthread_mutex_unlock(&ibcq->mutex);
}

SW_DEFAULT(ibv_destroy_cq) int sw_destroy_cq(struct ibv_cq *ibcq);
int sw_destroy_cq(struct ibv_cq *ibcq)
{
    if (!ibcq || !sw_ctx_ok(ibcq->context))
        return EINVAL;
    struct sw_cq *cq = SW_CONTAINER(ibcq, struct sw_cq, cq);
    if (atomic_load(&cq->users))
        return EBUSY;
    wait_acks(ibcq, cq);
    sw_shm_lock(&cq->s->lock);
    cq->s->used = 0;
    sw_shm_unlock(&cq->s->lock);
    pthread_mutex_lock(&sw.nic_lock);
    pthread_mutex_lock(&sw.obj_lock);
    sw.cqs[cq->slot] = NULL;
    pthread_mutex_unlock(&sw.obj_lock);
    pthread_mutex_unlock(&sw.nic_lock);
    sw_async_forget(sw_ctx(ibcq->context), NULL, ibcq);
    struct ibv_comp_channel *channel = ibcq->channel;
    if (channel) {
        /* events queued and not yet taken go with the CQ */
        struct sw_channel *ch = SW_CONTAINER(channel, struct sw_channel, ch);
        pthread_mutex_lock(&ch->lock);
        struct sw_event_node **pp = &ch->head, *prev = NULL;
        while (*pp) {
            struct sw_event_node *n = *pp;
            if (n->cq == ibcq && sw_eventfd_take(channel->fd)) {
                *pp = n->next;
                if (ch->tail == n)
                    ch->tail = prev;
                free(n);
                continue;
            }
            if (n->cq == ibcq)
                n->cq = NULL;     /* a reader took its count: it passes over it */
            prev = n;
            pp = &n->next;
        }
        pthread_mutex_unlock(&ch->lock);
        pthread_mutex_lock(&ibcq->context->mutex);
        channel->refcnt--;
        pthread_mutex_unlock(&ibcq->context->mutex);
    }
    struct sw_context *ctx = sw_ctx(ibcq->context);
    pthread_mutex_lock(&ctx->lock);
    ctx->n_cq--;
    pthread_mutex_unlock(&ctx->lock);
    struct sw_reg_host *h = &sw.reg->host[sw.host];
    sw_reg_count(&h->n_cq, h->conf.lim.max_cq, -1);
    pthread_mutex_destroy(&cq->poll_lock);
    free(cq);
    return 0;
}

/* Appends E to CQ SLOT of SEG; -1 when the CQ is gone or overran. */
int sw_cq_push(struct sw_seg *seg, uint32_t slot, uint32_t gen, const struct sw_cqe *e,
               bool solicited)
{
    struct sw_scq *s = sw_seg_cq(seg, slot);
    bool wake = false, overrun = false;
    sw_shm_lock(&s->lock);
    if (!s->used || s->gen != gen || atomic_load(&s->overrun)) {
        sw_shm_unlock(&s->lock);
        return -1;
    }
    if (s->tail - s->head >= s->cap - 1) {
        atomic_store(&s->overrun, 1);
        overrun = true;
    } else {
        *sw_seg_cqe(seg, slot, s->tail & (s->cap - 1)) = *e;
        s->tail++;
        uint32_t armed = atomic_load(&s->armed);
        if (armed == SW_ARM_ANY ||
            (armed == SW_ARM_SOLICITED && (solicited || e->wc.status != IBV_WC_SUCCESS))) {
            atomic_store(&s->armed, SW_ARM_NONE);
            atomic_store(&s->ev_pending, 1);
            wake = true;
        }
    }
    sw_shm_unlock(&s->lock);
    if (overrun) {
        sw_seg_post_event(seg, IBV_EVENT_CQ_ERR, SW_EV_CQ, slot, gen);
        return -1;
    }
    if (wake)
        sw_seg_wake(seg);
    return 0;
}

/* Queues the events of armed CQs that took an entry. NIC thread. */
void sw_cq_events(void)
{
    pthread_mutex_lock(&sw.obj_lock);
    for (uint32_t slot = 0; slot < sw.seg->max_cq; slot++) {
        struct sw_cq *cq = sw.cqs[slot];
        if (!cq || !atomic_exchange(&cq->s->ev_pending, 0))
            continue;
        struct ibv_comp_channel *channel = cq->cq.channel;
        if (!channel)
            continue;
        struct sw_channel *ch = SW_CONTAINER(channel, struct sw_channel, ch);
        struct sw_event_node *n = calloc(1, sizeof(*n));
        if (!n)
            continue;
        n->cq = &cq->cq;
        pthread_mutex_lock(&ch->lock);
        if (ch->tail)
            ch->tail->next = n;
        else
            ch->head = n;
        ch->tail = n;
        pthread_mutex_unlock(&ch->lock);
        uint64_t one = 1;
        if (write(channel->fd, &one, sizeof(one)) < 0)
            sw_log("cannot signal a completion event: %m");
    }
    pthread_mutex_unlock(&sw.obj_lock);
}

/* Entries of a destroyed QP are not returned, as mlx5 cleans them. */
void sw_cq_forget_qp(struct sw_cq *cq, uint32_t qp_slot, uint32_t qp_gen)
{
    struct sw_scq *s = cq->s;
    sw_shm_lock(&s->lock);
    for (uint32_t i = s->head; i != s->tail; i++) {
        struct sw_cqe *e = sw_seg_cqe(sw.seg, cq->slot, i & (s->cap - 1));
        if (e->qp_slot == qp_slot && e->qp_gen == qp_gen)
            e->kind = SW_CQE_SKIP;
    }
    sw_shm_unlock(&s->lock);
}

#define SW_POLL_BATCH 64

int sw_poll_cq(struct ibv_cq *ibcq, int n, struct ibv_wc *wc)
{
    if (n < 0)
        return -1;
    struct sw_cq *cq = SW_CONTAINER(ibcq, struct sw_cq, cq);
    struct sw_scq *s = cq->s;
    struct { uint32_t kind, slot, gen, seq; } done[SW_POLL_BATCH];
    int got = 0;
    pthread_mutex_lock(&cq->poll_lock);
    while (got < n) {
        int batch = 0;
        sw_shm_lock(&s->lock);
        while (got < n && batch < SW_POLL_BATCH && s->head != s->tail) {
            struct sw_cqe *e = sw_seg_cqe(sw.seg, cq->slot, s->head & (s->cap - 1));
            s->head++;
            if (e->kind == SW_CQE_SKIP)
                continue;
            wc[got++] = e->wc;
            done[batch].kind = e->kind;
            done[batch].slot = e->qp_slot;
            done[batch].gen = e->qp_gen;
            done[batch].seq = e->sq_seq;
            batch++;
        }
        bool more = s->head != s->tail;
        sw_shm_unlock(&s->lock);
        /* the queues' slots are freed outside the CQ lock (lock order) */
        for (int i = 0; i < batch; i++) {
            pthread_mutex_lock(&sw.obj_lock);
            struct sw_qp *qp = done[i].slot < sw.seg->max_qp ? sw.qps[done[i].slot] : NULL;
            if (qp && qp->gen != done[i].gen)
                qp = NULL;
            pthread_mutex_unlock(&sw.obj_lock);
            if (!qp)
                continue;
            if (done[i].kind == SW_CQE_SEND)
                sw_sq_retire(qp, done[i].seq + 1);
            else
                sw_rq_polled(qp);
        }
        if (!more || batch == 0)
            break;
    }
    pthread_mutex_unlock(&cq->poll_lock);
    return got;
}

int sw_req_notify_cq(struct ibv_cq *ibcq, int solicited_only)
{
    struct sw_cq *cq = SW_CONTAINER(ibcq, struct sw_cq, cq);
    uint32_t want = solicited_only ? SW_ARM_SOLICITED : SW_ARM_ANY;
    uint32_t cur = atomic_load(&cq->s->armed);
    /* armed for any completion stays so until it fires */
    if (cur != SW_ARM_ANY)
        atomic_store(&cq->s->armed, want);
    return 0;
}

SW_DEFAULT(ibv_get_cq_event) int sw_get_cq_event(struct ibv_comp_channel *channel,
                                                 struct ibv_cq **cq, void **cq_context);
int sw_get_cq_event(struct ibv_comp_channel *channel, struct ibv_cq **cq, void **cq_context)
{
    if (!channel || !cq || !cq_context) {
        errno = EINVAL;
        return -1;
    }
    struct sw_channel *ch = SW_CONTAINER(channel, struct sw_channel, ch);
    for (;;) {
        uint64_t v;
        if (read(channel->fd, &v, sizeof(v)) != sizeof(v))
            return -1;
        pthread_mutex_lock(&ch->lock);
        struct sw_event_node *n = ch->head;
        if (n) {
            ch->head = n->next;
            if (!ch->head)
                ch->tail = NULL;
        }
        pthread_mutex_unlock(&ch->lock);
        if (!n)
            continue;
        struct ibv_cq *got = n->cq;
        free(n);
        if (!got)
            continue;       /* its CQ was destroyed: there was no event */
        struct sw_cq *c = SW_CONTAINER(got, struct sw_cq, cq);
        pthread_mutex_lock(&got->mutex);
        c->events_reported++;
        pthread_mutex_unlock(&got->mutex);
        *cq = got;
        *cq_context = got->cq_context;
        return 0;
    }
}

SW_DEFAULT(ibv_ack_cq_events) void sw_ack_cq_events(struct ibv_cq *cq, unsigned int nevents);
void sw_ack_cq_events(struct ibv_cq *cq, unsigned int nevents)
{
    pthread_mutex_lock(&cq->mutex);
    cq->comp_events_completed += nevents;
    pthread_cond_signal(&cq->cond);
    pthread_mutex_unlock(&cq->mutex);
}
