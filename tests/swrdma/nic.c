/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * nic.c: the NIC thread, one per process. It executes each QP's send
 * queue in order (exec.c does one request), completes requests in order
 * on the send CQ, flushes queues of QPs in error, turns events raised
 * into this process's segment into async and completion events, and
 * runs the fault-injection clock.
 *
 * It never spins: with nothing to do it sleeps on its segment's doorbell
 * (a futex any process can ring: a post, a completion for an armed CQ,
 * an event) until the earliest timer of a waiting request (RNR, ACK
 * timeout, injected delay). Up to SW_STEP_BATCH requests of one QP run
 * before the next QP's turn, so one busy QP does not starve the others.
 */
#include "config.h"

#include <errno.h>
#include <linux/futex.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "tests/swrdma/swrdma.h"

#define SW_STEP_BATCH 16
#define SW_IDLE_NS 1000000000ull   /* a sleeping NIC looks around once a second */

uint64_t sw_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

void sw_nic_kick(void)
{
    if (sw.seg)
        sw_seg_wake(sw.seg);
}

static uint32_t qp_state(struct sw_qp *qp)
{
    sw_shm_lock(&qp->s->lock);
    uint32_t st = qp->s->state;
    sw_shm_unlock(&qp->s->lock);
    return st;
}

/* Writes the completions of finished requests, in order. With sq_lock.
 * Sets *ERROR after an error completion, *FATAL when the CQ overran. */
static void complete_in_order(struct sw_qp *qp, bool *error, bool *fatal)
{
    while (qp->sq_done != qp->sq_exec) {
        struct sw_swqe *w = &qp->sq[qp->sq_done % qp->sq_cap];
        if (w->phase != SW_WQE_DONE)
            break;
        if (w->status != IBV_WC_SUCCESS)
            *error = true;
        if (w->signaled || w->status != IBV_WC_SUCCESS) {
            struct sw_cqe e;
            memset(&e, 0, sizeof(e));
            e.wc.wr_id = w->wr_id;
            e.wc.status = w->status;
            e.wc.qp_num = qp->qp.qp_num;
            e.wc.vendor_err = w->vendor_err;
            if (w->status != IBV_WC_SUCCESS) {
                e.wc.opcode = SW_WC_OPCODE_UNDEFINED;
            } else {
                switch (w->opcode) {
                case IBV_WR_SEND:
                case IBV_WR_SEND_WITH_IMM:
                    e.wc.opcode = IBV_WC_SEND;
                    break;
                case IBV_WR_RDMA_WRITE:
                case IBV_WR_RDMA_WRITE_WITH_IMM:
                    e.wc.opcode = IBV_WC_RDMA_WRITE;
                    break;
                case IBV_WR_RDMA_READ:
                    e.wc.opcode = IBV_WC_RDMA_READ;
                    e.wc.byte_len = (uint32_t)w->length;
                    break;
                case IBV_WR_ATOMIC_CMP_AND_SWP:
                    e.wc.opcode = IBV_WC_COMP_SWAP;
                    e.wc.byte_len = 8;
                    break;
                default:
                    e.wc.opcode = IBV_WC_FETCH_ADD;
                    e.wc.byte_len = 8;
                    break;
                }
            }
            e.kind = SW_CQE_SEND;
            e.qp_slot = qp->slot;
            e.qp_gen = qp->gen;
            e.sq_seq = qp->sq_done;
            if (sw_cq_push(sw.seg, qp->scq->slot, qp->scq->gen, &e, false) < 0)
                *error = *fatal = true;
        }
        qp->sq_done++;
    }
}

/* Completes everything not yet completed with IBV_WC_WR_FLUSH_ERR, except
 * requests that finished with a status of their own. With sq_lock. */
static bool flush_sq(struct sw_qp *qp)
{
    bool any = qp->sq_done != qp->sq_post;
    for (uint32_t i = qp->sq_done; i != qp->sq_post; i++) {
        struct sw_swqe *w = &qp->sq[i % qp->sq_cap];
        bool finished = i - qp->sq_done < qp->sq_exec - qp->sq_done && w->phase == SW_WQE_DONE;
        if (!finished) {
            /* in error every request completes, signaled or not */
            w->status = IBV_WC_WR_FLUSH_ERR;
            w->signaled = 1;
        }
        free(w->staging);
        w->staging = NULL;
        w->phase = SW_WQE_DONE;
    }
    qp->reads_pending = 0;
    qp->sq_exec = qp->sq_post;
    bool dummy, fatal = false;
    complete_in_order(qp, &dummy, &fatal);
    if (fatal)
        sw_qp_set_error(sw.seg, qp->slot, 0);
    return any;
}

/* One turn of QP's send queue. Returns whether anything moved. */
static bool sq_step(struct sw_qp *qp, uint64_t now, uint64_t *wake)
{
    bool moved = false, error = false, fatal = false;
    uint32_t state = qp_state(qp);
    pthread_mutex_lock(&qp->sq_lock);
    /* SQE (UD only): the send queue flushes, the receive queue goes on */
    if (state == IBV_QPS_ERR || state == IBV_QPS_SQE) {
        moved = flush_sq(qp);
        pthread_mutex_unlock(&qp->sq_lock);
        return moved;
    }
    if (state != IBV_QPS_RTS && state != IBV_QPS_SQD) {
        pthread_mutex_unlock(&qp->sq_lock);
        return false;
    }
    for (int n = 0; n < SW_STEP_BATCH && state == IBV_QPS_RTS && qp->sq_exec != qp->sq_post; n++) {
        struct sw_swqe *w = &qp->sq[qp->sq_exec % qp->sq_cap];
        if (w->next_try_ns > now) {
            if (w->next_try_ns < *wake)
                *wake = w->next_try_ns;
            break;
        }
        pthread_mutex_unlock(&qp->sq_lock);
        int wait = sw_exec(qp, w, now, wake);
        pthread_mutex_lock(&qp->sq_lock);
        if (wait)
            break;
        if (w->phase != SW_WQE_READ_PENDING)
            w->phase = SW_WQE_DONE;
        qp->sq_exec++;
        moved = true;
        if (w->status != IBV_WC_SUCCESS) {
            error = true;
            break;
        }
    }
    /* reads land once the NIC has gone past them, or the queue is dry */
    if (qp->reads_pending) {
        bool blocked = qp->sq_exec == qp->sq_post || error || state != IBV_QPS_RTS ||
                       qp->sq[qp->sq_exec % qp->sq_cap].next_try_ns > now;
        if (blocked) {
            pthread_mutex_unlock(&qp->sq_lock);
            sw_exec_place_reads(qp);
            pthread_mutex_lock(&qp->sq_lock);
            moved = true;
        }
    }
    complete_in_order(qp, &error, &fatal);
    if (state == IBV_QPS_SQD && qp->en_sqd_async_notify && !qp->sqd_event_sent &&
        qp->sq_done == qp->sq_exec) {
        qp->sqd_event_sent = 1;
        sw_seg_post_event(sw.seg, IBV_EVENT_SQ_DRAINED, SW_EV_QP, qp->slot, qp->gen);
    }
    pthread_mutex_unlock(&qp->sq_lock);
    if (error) {
        /* a UD send's own error stops only its send queue, as the IBA has it */
        if (qp->qp.qp_type == IBV_QPT_UD && !fatal)
            sw_qp_set_sqe(qp);
        else
            sw_qp_set_error(sw.seg, qp->slot, 0);
        moved = true;
    }
    return moved;
}

static void take_segment_events(void)
{
    struct sw_seg *s = sw.seg;
    for (;;) {
        struct sw_ev_req req;
        sw_shm_lock(&s->ev_lock);
        bool have = s->ev_head != s->ev_tail;
        if (have)
            req = s->ev[s->ev_head++ % SW_EV_RING];
        sw_shm_unlock(&s->ev_lock);
        if (!have)
            break;
        sw_async_deliver(&req);
    }
}

static void *nic_main(void *arg)
{
    struct sw_seg *s = sw.seg;
    atomic_store(&sw.nic_started, true);
    while (!atomic_load(&sw.nic_stop)) {
        uint32_t seen = atomic_load(&s->doorbell);
        uint64_t now = sw_now_ns();
        uint64_t wake = now + SW_IDLE_NS;
        bool moved = false;
        pthread_mutex_lock(&sw.nic_lock);
        sw_fault_tick(now, &wake);
        take_segment_events();
        sw_async_port_watch();
        sw_cq_events();
        for (uint32_t slot = 0; slot < s->max_qp; slot++) {
            pthread_mutex_lock(&sw.obj_lock);
            struct sw_qp *qp = sw.qps[slot];
            pthread_mutex_unlock(&sw.obj_lock);
            /* destroy_qp takes nic_lock before freeing: qp stays valid */
            if (qp)
                moved |= sq_step(qp, now, &wake);
        }
        pthread_mutex_unlock(&sw.nic_lock);
        if (moved)
            continue;
        now = sw_now_ns();
        if (wake <= now)
            continue;
        atomic_store(&s->sleeping, 1);
        if (atomic_load(&s->doorbell) == seen) {
            uint64_t left = wake - now;
            struct timespec ts = { (time_t)(left / 1000000000ull), (long)(left % 1000000000ull) };
            syscall(SYS_futex, &s->doorbell, FUTEX_WAIT, seen, &ts, NULL, 0);
        }
        atomic_store(&s->sleeping, 0);
    }
    return arg;
}

/* Starts the NIC thread of this process. With sw.lock. */
int sw_nic_start(void)
{
    if (sw.nic_running)
        return 0;
    atomic_store(&sw.nic_stop, false);
    atomic_store(&sw.nic_started, false);
    sw.open_ns = sw_now_ns();
    pthread_attr_t a;
    pthread_attr_init(&a);
    sigset_t all, old;
    sigfillset(&all);
    /* the program's signals are for its own threads */
    pthread_sigmask(SIG_SETMASK, &all, &old);
    int rc = pthread_create(&sw.nic, &a, nic_main, NULL);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    pthread_attr_destroy(&a);
    if (rc) {
        errno = rc;
        sw_log("cannot start the NIC thread: %m");
        return -1;
    }
    sw.nic_running = true;
    /* Returns once the thread runs its own code. A thread still in its
     * start-up (the C library's, a sanitizer runtime's: both allocate)
     * when the program forks would leave the child allocator locks that
     * nobody will release; at_prepare can hold back only nic_main. */
    while (!atomic_load(&sw.nic_started)) {
        struct timespec ts = { 0, 50000 };
        nanosleep(&ts, NULL);
    }
    return 0;
}

void sw_nic_stop(void)
{
    if (!sw.nic_running)
        return;
    atomic_store(&sw.nic_stop, true);
    sw_seg_wake(sw.seg);
    pthread_join(sw.nic, NULL);
    sw.nic_running = false;
}
