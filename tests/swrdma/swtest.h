/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * swtest.h: helpers of the software RDMA device's tests: a fabric of the
 * test's own, opening the device, RC QPs connected by the book
 * (INIT, RTR, RTS with the attributes ibv_modify_qp(3) requires), posting
 * one request, polling with a deadline, and two processes that exchange
 * their QPs' addresses. Every helper uses only the verbs API, so that the
 * tests exercise the device as a program would.
 */
#ifndef SWTEST_H
#define SWTEST_H

#include <infiniband/verbs.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

struct swt_dev {
    struct ibv_context *ctx;
    struct ibv_pd *pd;
    struct ibv_port_attr port;
    int gid_index;
    union ibv_gid gid;
};

/* Where a QP can be reached, as peers exchange it out of band. */
struct swt_addr {
    uint32_t qpn, psn;
    union ibv_gid gid;
    uint16_t lid;
    uint64_t addr;             /* a buffer of the peer, and its key */
    uint32_t rkey;
};

struct swt_conn {
    unsigned access;           /* qp_access_flags */
    enum ibv_mtu mtu;          /* 0: the port's active MTU */
    uint8_t timeout, retry_cnt, rnr_retry, min_rnr_timer, rd_atomic;
};

#define SWT_ACCESS_ALL (IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | \
                        IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC)

/* Sets the environment for a fabric of this test alone (and a check log),
 * before the first verbs call of the process. */
void swt_fabric(const char *name);
const char *swt_check_log(void);
int swt_check_count(const char *needle);

int swt_open(struct swt_dev *d);
void swt_close(struct swt_dev *d);
/* What most tests start from: an open device with two CQs of 255 entries
 * and two page-aligned buffers of bytes, registered with every access. */
struct swt_bufs {
    struct ibv_cq *cq_a, *cq_b;
    char *buf_a, *buf_b;
    struct ibv_mr *mr_a, *mr_b;
};
int swt_bufs_open(struct swt_dev *d, size_t bytes, struct swt_bufs *f);
void swt_bufs_close(struct swt_dev *d, struct swt_bufs *f);
struct swt_conn swt_conn_default(void);
struct ibv_qp *swt_qp(struct swt_dev *d, struct ibv_cq *scq, struct ibv_cq *rcq, uint32_t wr,
                      uint32_t sge, uint32_t inl);
void swt_addr_of(struct swt_dev *d, struct ibv_qp *qp, uint32_t psn, struct swt_addr *a);
int swt_connect(struct swt_dev *d, struct ibv_qp *qp, uint32_t my_psn, const struct swt_addr *to,
                const struct swt_conn *c);
/* two QPs of one device connected to each other */
int swt_pair(struct swt_dev *d, struct ibv_qp *a, struct ibv_qp *b, const struct swt_conn *c);

int swt_send(struct ibv_qp *qp, enum ibv_wr_opcode op, uint64_t wr_id, const void *buf,
             uint32_t len, uint32_t lkey, unsigned flags, uint64_t raddr, uint32_t rkey,
             uint32_t imm_host);
int swt_recv(struct ibv_qp *qp, uint64_t wr_id, void *buf, uint32_t len, uint32_t lkey);
/* Polls until N completions or TIMEOUT_MS; sleeps between empty polls. */
int swt_poll(struct ibv_cq *cq, struct ibv_wc *wc, int n, int timeout_ms);
enum ibv_qp_state swt_state(struct ibv_qp *qp);
uint64_t swt_ms(void);

/* Runs FN in a child process; returns its exit status, or 128 + signal. */
int swt_child(int (*fn)(void *), void *arg);

#endif
