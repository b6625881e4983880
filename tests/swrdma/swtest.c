/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * swtest.c: helpers of the software RDMA device's tests (see swtest.h).
 */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "tests/swrdma/swtest.h"

static char check_log[256];
static pid_t check_log_owner;

static void remove_check_log(void)
{
    if (getpid() == check_log_owner)
        unlink(check_log);
}

void swt_fabric(const char *name)
{
    char reg[128];
    snprintf(reg, sizeof(reg), "swt-%s-%d", name, (int)getpid());
    setenv("WEFT_SWRDMA_REGISTRY", reg, 1);
    snprintf(check_log, sizeof(check_log), "/tmp/swt-%s-%d.check", name, (int)getpid());
    unlink(check_log);
    setenv("WEFT_SWRDMA_CHECK_LOG", check_log, 1);
    if (!check_log_owner)
        atexit(remove_check_log);
    check_log_owner = getpid();
}

const char *swt_check_log(void)
{
    return check_log;
}

/* How many checker reports so far contain NEEDLE. */
int swt_check_count(const char *needle)
{
    FILE *f = fopen(check_log, "r");
    if (!f)
        return 0;
    char line[2048];
    int n = 0;
    while (fgets(line, sizeof(line), f))
        if (strstr(line, needle))
            n++;
    fclose(f);
    return n;
}

uint64_t swt_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

/* The port's RoCE v2 entry with an IPv4 address, as a RoCE program
 * picks one; on InfiniBand the first entry. */
static int pick_gid(struct ibv_context *ctx, union ibv_gid *gid)
{
    int first = -1;
    for (int i = 0; i < 16; i++) {
        struct ibv_gid_entry e;
        if (ibv_query_gid_ex(ctx, 1, i, &e, 0))
            continue;
        if (first < 0)
            first = i;
        if (e.gid_type == IBV_GID_TYPE_ROCE_V2 && e.gid.raw[10] == 0xff && e.gid.raw[11] == 0xff) {
            *gid = e.gid;
            return i;
        }
    }
    if (first >= 0)
        ibv_query_gid(ctx, 1, first, gid);
    return first;
}

int swt_open(struct swt_dev *d)
{
    memset(d, 0, sizeof(*d));
    int n = 0;
    struct ibv_device **list = ibv_get_device_list(&n);
    if (!list || n < 1)
        return -1;
    d->ctx = ibv_open_device(list[0]);
    ibv_free_device_list(list);
    if (!d->ctx)
        return -1;
    if (ibv_query_port(d->ctx, 1, &d->port))
        return -1;
    d->gid_index = pick_gid(d->ctx, &d->gid);
    d->pd = ibv_alloc_pd(d->ctx);
    return d->pd ? 0 : -1;
}

void swt_close(struct swt_dev *d)
{
    if (d->pd)
        ibv_dealloc_pd(d->pd);
    if (d->ctx)
        ibv_close_device(d->ctx);
    memset(d, 0, sizeof(*d));
}

int swt_bufs_open(struct swt_dev *d, size_t bytes, struct swt_bufs *f)
{
    memset(f, 0, sizeof(*f));
    if (swt_open(d))
        return -1;
    f->cq_a = ibv_create_cq(d->ctx, 255, NULL, NULL, 0);
    f->cq_b = ibv_create_cq(d->ctx, 255, NULL, NULL, 0);
    f->buf_a = aligned_alloc(4096, bytes);
    f->buf_b = aligned_alloc(4096, bytes);
    f->mr_a = ibv_reg_mr(d->pd, f->buf_a, bytes, SWT_ACCESS_ALL);
    f->mr_b = ibv_reg_mr(d->pd, f->buf_b, bytes, SWT_ACCESS_ALL);
    return f->cq_a && f->cq_b && f->mr_a && f->mr_b ? 0 : -1;
}

void swt_bufs_close(struct swt_dev *d, struct swt_bufs *f)
{
    ibv_dereg_mr(f->mr_a);
    ibv_dereg_mr(f->mr_b);
    ibv_destroy_cq(f->cq_a);
    ibv_destroy_cq(f->cq_b);
    free(f->buf_a);
    free(f->buf_b);
    swt_close(d);
}

struct swt_conn swt_conn_default(void)
{
    struct swt_conn c = {
        .access = IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC,
        .timeout = 8,           /* 1 ms */
        .retry_cnt = 2,
        .rnr_retry = 7,
        .min_rnr_timer = 1,     /* 10 us */
        .rd_atomic = 4,
    };
    return c;
}

struct ibv_qp *swt_qp(struct swt_dev *d, struct ibv_cq *scq, struct ibv_cq *rcq, uint32_t wr,
                      uint32_t sge, uint32_t inl)
{
    struct ibv_qp_init_attr ia;
    memset(&ia, 0, sizeof(ia));
    ia.send_cq = scq;
    ia.recv_cq = rcq;
    ia.cap.max_send_wr = wr;
    ia.cap.max_recv_wr = wr;
    ia.cap.max_send_sge = sge;
    ia.cap.max_recv_sge = sge;
    ia.cap.max_inline_data = inl;
    ia.qp_type = IBV_QPT_RC;
    return ibv_create_qp(d->pd, &ia);
}

void swt_addr_of(struct swt_dev *d, struct ibv_qp *qp, uint32_t psn, struct swt_addr *a)
{
    memset(a, 0, sizeof(*a));
    a->qpn = qp->qp_num;
    a->psn = psn;
    a->gid = d->gid;
    a->lid = d->port.lid;
}

int swt_connect(struct swt_dev *d, struct ibv_qp *qp, uint32_t my_psn, const struct swt_addr *to,
                const struct swt_conn *c)
{
    struct ibv_qp_attr at;
    memset(&at, 0, sizeof(at));
    at.qp_state = IBV_QPS_INIT;
    at.port_num = 1;
    at.pkey_index = 0;
    at.qp_access_flags = c->access;
    int rc = ibv_modify_qp(qp, &at, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS);
    if (rc)
        return rc;
    memset(&at, 0, sizeof(at));
    at.qp_state = IBV_QPS_RTR;
    at.path_mtu = c->mtu ? c->mtu : d->port.active_mtu;
    at.dest_qp_num = to->qpn;
    at.rq_psn = to->psn;
    at.max_dest_rd_atomic = c->rd_atomic;
    at.min_rnr_timer = c->min_rnr_timer;
    at.ah_attr.port_num = 1;
    at.ah_attr.dlid = to->lid;
    if (d->port.link_layer == IBV_LINK_LAYER_ETHERNET) {
        at.ah_attr.is_global = 1;
        at.ah_attr.grh.dgid = to->gid;
        at.ah_attr.grh.sgid_index = (uint8_t)d->gid_index;
        at.ah_attr.grh.hop_limit = 64;
    }
    rc = ibv_modify_qp(qp, &at, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
                                    IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER);
    if (rc)
        return rc;
    memset(&at, 0, sizeof(at));
    at.qp_state = IBV_QPS_RTS;
    at.sq_psn = my_psn;
    at.timeout = c->timeout;
    at.retry_cnt = c->retry_cnt;
    at.rnr_retry = c->rnr_retry;
    at.max_rd_atomic = c->rd_atomic;
    return ibv_modify_qp(qp, &at, IBV_QP_STATE | IBV_QP_SQ_PSN | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT |
                                      IBV_QP_RNR_RETRY | IBV_QP_MAX_QP_RD_ATOMIC);
}

int swt_pair(struct swt_dev *d, struct ibv_qp *a, struct ibv_qp *b, const struct swt_conn *c)
{
    struct swt_addr aa, ba;
    swt_addr_of(d, a, 1000, &aa);
    swt_addr_of(d, b, 2000, &ba);
    int rc = swt_connect(d, a, 1000, &ba, c);
    return rc ? rc : swt_connect(d, b, 2000, &aa, c);
}

int swt_send(struct ibv_qp *qp, enum ibv_wr_opcode op, uint64_t wr_id, const void *buf,
             uint32_t len, uint32_t lkey, unsigned flags, uint64_t raddr, uint32_t rkey,
             uint32_t imm_host)
{
    struct ibv_sge sge = { (uintptr_t)buf, len, lkey };
    struct ibv_send_wr wr, *bad = NULL;
    memset(&wr, 0, sizeof(wr));
    wr.wr_id = wr_id;
    wr.sg_list = &sge;
    wr.num_sge = buf ? 1 : 0;
    wr.opcode = op;
    wr.send_flags = flags;
    wr.imm_data = htobe32(imm_host);
    wr.wr.rdma.remote_addr = raddr;
    wr.wr.rdma.rkey = rkey;
    return ibv_post_send(qp, &wr, &bad);
}

int swt_recv(struct ibv_qp *qp, uint64_t wr_id, void *buf, uint32_t len, uint32_t lkey)
{
    struct ibv_sge sge = { (uintptr_t)buf, len, lkey };
    struct ibv_recv_wr wr, *bad = NULL;
    memset(&wr, 0, sizeof(wr));
    wr.wr_id = wr_id;
    wr.sg_list = &sge;
    wr.num_sge = buf ? 1 : 0;
    return ibv_post_recv(qp, &wr, &bad);
}

int swt_poll(struct ibv_cq *cq, struct ibv_wc *wc, int n, int timeout_ms)
{
    int got = 0;
    uint64_t end = swt_ms() + (uint64_t)timeout_ms;
    while (got < n) {
        int r = ibv_poll_cq(cq, n - got, wc + got);
        if (r < 0)
            return r;
        got += r;
        if (got == n || swt_ms() > end)
            break;
        if (r == 0) {
            struct timespec ts = { 0, 20000 };
            nanosleep(&ts, NULL);
        }
    }
    return got;
}

enum ibv_qp_state swt_state(struct ibv_qp *qp)
{
    struct ibv_qp_attr at;
    struct ibv_qp_init_attr ia;
    if (ibv_query_qp(qp, &at, IBV_QP_STATE, &ia))
        return (enum ibv_qp_state)-1;
    return at.qp_state;
}

int swt_child(int (*fn)(void *), void *arg)
{
    fflush(NULL);
    pid_t pid = fork();
    if (pid < 0)
        return -1;
    if (pid == 0)
        exit(fn(arg));
    int st;
    if (waitpid(pid, &st, 0) < 0)
        return -1;
    return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}
