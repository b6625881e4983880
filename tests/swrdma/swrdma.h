/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * swrdma.h: the software RDMA device's private header: the shared-memory
 * layouts every process of the machine agrees on (the registry and each
 * process's segment), the process-local objects behind the verbs handles,
 * and the functions the files of tests/swrdma/ call across each other.
 * See swrdma.c for what the device is and how to select it.
 *
 * Lock order, outermost first: sw.nic_lock, a QP's sq_lock, a shared QP
 * slot's lock, a shared CQ slot's lock, a segment's ev_lock; the registry
 * lock is never taken while a slot lock is held. Process-local locks of
 * contexts and channels are innermost.
 */
#ifndef SWRDMA_H
#define SWRDMA_H

#include <infiniband/verbs.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <sys/uio.h>

/* ---------------------------------------------------------------- sizes */
#define SW_MAX_PORTS 4
#define SW_GID_TBL_LEN 16      /* entries per port; unused ones are empty */
#define SW_MAX_SGE_CAP 32      /* the most any configuration may allow */
#define SW_BUSY_KEYS (2 * SW_MAX_SGE_CAP)   /* local sges, then remote ones */
#define SW_REG_HOSTS 64
#define SW_REG_PROCS 512
#define SW_REG_QPS 16384       /* QP numbers: 14 index bits, 10 generation bits */
#define SW_QPN_IDX_BITS 14
#define SW_REG_MRS 32768       /* keys: index << 8 | 8-bit generation, as mkeys are */
#define SW_EV_RING 256
#define SW_PSN_MASK 0xffffffu

/* ---------------------------------------------------------------- configuration */
struct sw_limits {
    uint32_t max_qp, max_qp_wr, max_sge, max_cq, max_cqe, max_mr, max_pd;
    uint32_t max_inline, max_qp_rd_atom, max_qp_init_rd_atom, comp_vectors;
    uint64_t max_mr_size;
};

struct sw_port_conf {
    uint32_t link_layer;       /* IBV_LINK_LAYER_ETHERNET or _INFINIBAND */
    uint32_t active_mtu;       /* enum ibv_mtu; 0: derived from the interfaces */
    uint32_t max_mtu;
};

/* What a host's device looks like: the first process of a network
 * namespace writes it into the registry, later ones adopt it. */
struct sw_conf {
    struct sw_limits lim;
    uint32_t nports;
    uint32_t roce_v1;          /* also list RoCE v1 entries, as ConnectX does */
    struct sw_port_conf port[SW_MAX_PORTS];
};

/* Per-process settings: fault injection and the checker. */
enum sw_check_mode { SW_CHECK_OFF, SW_CHECK_WARN, SW_CHECK_ABORT };

struct sw_faults {
    uint64_t fail_wr;          /* 1-based index of the work request to fail; 0: none */
    uint32_t fail_status;      /* enum ibv_wc_status given to it */
    uint32_t delay_us;         /* before each work request executes */
    uint32_t rnr_storm;        /* RNR NAKs each receive-consuming request meets first */
    uint32_t port_down;        /* port to take down (1-based); 0: none */
    uint32_t port_down_ms;     /* after this long from the first open */
    uint32_t port_up_ms;       /* back up after this long down; 0: stays down */
    uint64_t lose_after_wr;    /* this process falls off the fabric after N requests */
    uint32_t lose_after_ms;    /* ... or after this long; 0: never */
};

struct sw_env {
    char registry[160];        /* path of the shared registry file */
    enum sw_check_mode check;
    char check_log[256];
    struct sw_faults fault;
    int verbose;
};

int sw_config_parse(const char *text, struct sw_conf *conf, char *err, size_t errlen);
void sw_config_defaults(struct sw_conf *conf);
int sw_config_load(struct sw_conf *conf);
int sw_env_load(struct sw_env *env);

/* ---------------------------------------------------------------- the shared registry */
struct sw_reg_gid {
    uint8_t raw[16];
    uint32_t type;             /* enum ibv_gid_type; raw all zero: empty */
    uint32_t ifindex;
};

struct sw_reg_port {
    _Atomic uint32_t state;    /* enum ibv_port_state */
    _Atomic uint32_t gen;      /* bumped on each state change */
    uint32_t link_layer, max_mtu, active_mtu, lid;
    struct sw_reg_gid gid[SW_GID_TBL_LEN];
};

struct sw_reg_host {
    uint32_t used, refs;
    uint64_t netns;            /* inode of the network namespace */
    uint64_t guid;
    struct sw_conf conf;
    struct sw_reg_port port[SW_MAX_PORTS];
    uint32_t n_qp, n_cq, n_mr, n_pd;   /* against conf.lim, under the registry lock */
};

struct sw_reg_proc {
    uint32_t used, gen;
    int32_t pid;
    uint32_t host;
    uint64_t start_time;       /* from /proc/PID/stat: tells a reused pid apart */
    _Atomic uint32_t lost;     /* fault injection: off the fabric */
    _Atomic uint32_t busy[SW_BUSY_KEYS];   /* keys its NIC is touching right now */
    uint64_t seg_size;
    char seg_name[200];
};

struct sw_reg_qp {
    uint32_t used, qpn, proc, proc_gen, slot, host, gen;
};

struct sw_reg_mr {
    _Atomic uint32_t seq;      /* odd while being written */
    _Atomic uint32_t live;
    uint32_t key, proc, proc_gen, host, pd, access;
    uint64_t addr, length, iova;
    uint64_t pfn_off;          /* in the owner's segment; 0: not tracked */
    uint32_t npages;
    uint32_t taken;            /* allocated, under the registry lock */
};

struct sw_registry {
    uint64_t magic;
    uint32_t version, attached;
    pthread_mutex_t lock;
    pthread_mutex_t atomic_lock;   /* the fabric's atomics, one at a time */
    uint32_t next_lid, next_pd, qp_rotor, mr_rotor;
    struct sw_reg_host host[SW_REG_HOSTS];
    struct sw_reg_proc proc[SW_REG_PROCS];
    struct sw_reg_qp qp[SW_REG_QPS];
    uint32_t qp_gen[SW_REG_QPS];
    struct sw_reg_mr mr[SW_REG_MRS];
};

/* ---------------------------------------------------------------- a process's segment */
enum sw_ev_kind { SW_EV_QP = 1, SW_EV_CQ, SW_EV_PORT };

struct sw_ev_req {
    uint32_t type;             /* enum ibv_event_type */
    uint32_t kind, slot, gen;
};

struct sw_cqe {
    struct ibv_wc wc;
    uint32_t kind;             /* enum sw_cqe_kind */
    uint32_t qp_slot, qp_gen;
    uint32_t sq_seq;           /* send completions: the WQE's sequence number */
};

enum sw_cqe_kind { SW_CQE_SEND = 1, SW_CQE_RECV, SW_CQE_SKIP };
enum sw_arm { SW_ARM_NONE, SW_ARM_ANY, SW_ARM_SOLICITED };

struct sw_scq {
    pthread_mutex_t lock;
    uint32_t used, gen, cap;   /* cap: a power of two; holds cap - 1 entries */
    uint32_t head, tail;       /* consumer and producer counters */
    _Atomic uint32_t armed;
    _Atomic uint32_t ev_pending;
    _Atomic uint32_t overrun;
};

struct sw_rwqe {
    uint64_t wr_id;
    uint32_t num_sge, pad;
    struct ibv_sge sge[];
};

/* The part of a QP that the NICs of other processes read and change. */
struct sw_sqp {
    pthread_mutex_t lock;
    uint32_t used, gen, qpn, state;
    uint32_t pd, access, port, path_mtu;
    uint32_t dest_qpn, epsn;   /* responder: the next PSN it expects */
    uint32_t max_dest_rd_atomic, min_rnr_timer;
    uint32_t is_global, dlid, sgid_index, sl;
    uint8_t dgid[16];
    uint32_t recv_cq_slot, recv_cq_gen;
    uint32_t rq_cap, rq_max_sge, rq_head, rq_tail, rq_polled;
    uint32_t comm_est;         /* COMM_EST raised already */
    uint32_t qp_type;          /* enum ibv_qp_type: a UD datagram lands only on a UD QP */
    uint32_t qkey;             /* UD: what a datagram's Q_Key must match */
};

struct sw_seg {
    uint64_t magic;
    int32_t pid;
    uint32_t proc;
    uint32_t max_qp, max_cq, rq_stride, cq_cap_max;
    uint64_t qp_off, rq_off, rq_slot_bytes, cq_off, cqe_off, cqe_slot_bytes;
    uint64_t pfn_off, pfn_bytes, pfn_used;
    _Atomic uint32_t doorbell; /* futex word: bumped to wake the NIC thread */
    _Atomic uint32_t sleeping;
    pthread_mutex_t ev_lock;
    uint32_t ev_head, ev_tail;
    struct sw_ev_req ev[SW_EV_RING];
};

static inline struct sw_sqp *sw_seg_qp(struct sw_seg *s, uint32_t slot)
{
    return (struct sw_sqp *)((char *)s + s->qp_off) + slot;
}
static inline struct sw_rwqe *sw_seg_rwqe(struct sw_seg *s, uint32_t slot, uint32_t idx)
{
    return (struct sw_rwqe *)((char *)s + s->rq_off + s->rq_slot_bytes * slot +
                              (uint64_t)s->rq_stride * idx);
}
static inline struct sw_scq *sw_seg_cq(struct sw_seg *s, uint32_t slot)
{
    return (struct sw_scq *)((char *)s + s->cq_off) + slot;
}
static inline struct sw_cqe *sw_seg_cqe(struct sw_seg *s, uint32_t slot, uint32_t idx)
{
    return (struct sw_cqe *)((char *)s + s->cqe_off + s->cqe_slot_bytes * slot) + idx;
}
static inline uint64_t *sw_seg_pfn(struct sw_seg *s, uint64_t off)
{
    return (uint64_t *)((char *)s + off);
}

/* ---------------------------------------------------------------- process-local objects */
struct sw_device {
    struct ibv_device dev;
    uint32_t host;
    uint64_t guid;
};

struct sw_event_node {
    struct sw_event_node *next;
    struct ibv_async_event ev;     /* async events */
    struct ibv_cq *cq;             /* completion events; NULL once the CQ is gone */
    bool dead;                     /* async events of an object since destroyed */
};

struct sw_context {
    struct verbs_context vctx;     /* ibv_context is its last member */
    struct sw_device *dev;
    pid_t pid;
    pthread_mutex_t lock;          /* guards the lists and the event queue */
    struct sw_event_node *ev_head, *ev_tail;
    struct sw_context *next;
    uint32_t n_pd, n_mr, n_cq, n_qp, n_ah, n_channel, async_unacked;
    uint32_t port_gen_seen[SW_MAX_PORTS];
    uint32_t port_state_seen[SW_MAX_PORTS];
};

struct sw_channel {
    struct ibv_comp_channel ch;
    pthread_mutex_t lock;
    struct sw_event_node *head, *tail;
};

struct sw_pd {
    struct ibv_pd pd;
    uint32_t id;
    _Atomic uint32_t users;        /* MRs, QPs and AHs */
};

struct sw_ah {
    struct ibv_ah ah;
    struct ibv_ah_attr attr;
};

struct sw_mr {
    struct ibv_mr mr;
    uint32_t idx;
    uint64_t iova;
    unsigned int access;
    uint64_t npages;
    void *nic_map;                 /* dma-buf: the device's own mapping */
    size_t nic_map_len;
    _Atomic uint32_t inflight;     /* posted work requests naming it */
};

struct sw_cq {
    struct ibv_cq cq;
    uint32_t slot, gen;
    struct sw_scq *s;
    pthread_mutex_t poll_lock;
    _Atomic uint32_t users;        /* QPs */
    uint32_t events_reported;      /* completion events returned to the caller */
    uint32_t async_reported;       /* CQ_ERR events returned to the caller */
};

enum sw_wqe_phase { SW_WQE_QUEUED, SW_WQE_READ_PENDING, SW_WQE_DONE };

struct sw_swqe {
    uint64_t wr_id;
    uint32_t opcode, flags, num_sge, signaled;
    __be32 imm;
    uint32_t rkey;
    uint64_t remote_addr, compare_add, swap, length;
    uint64_t sum;                  /* checker: the payload's hash at post */
    uint32_t phase, status, vendor_err, npkts;
    uint64_t next_try_ns;          /* retry and RNR timers */
    uint32_t tries, rnr_tries, delayed;
    uint64_t seqno;                /* process-wide count, for fault injection */
    void *staging;                 /* RDMA READ: data fetched, not yet placed */
    struct ibv_sge *sge;
    uint8_t *inl;
    /* UD: the address vector is copied at post, as a NIC copies it into
     * the WQE, so the AH may be destroyed once the post returns */
    struct ibv_ah_attr av;
    uint32_t remote_qpn, remote_qkey;
};

struct sw_peer {
    bool valid;
    uint32_t proc, proc_gen, slot, qpn, host, port;
    struct sw_seg *seg;
    pid_t pid;
    int pidfd;
};

struct sw_qp {
    struct ibv_qp qp;
    uint32_t slot, gen;
    struct sw_sqp *s;
    struct sw_pd *pd;
    struct sw_cq *scq, *rcq;
    int sq_sig_all;
    struct ibv_qp_cap cap;
    /* requester attributes: only this process reads them */
    uint32_t sq_psn, timeout, retry_cnt, rnr_retry, max_rd_atomic;
    uint32_t pkey_index, en_sqd_async_notify, sqd_event_sent;
    struct ibv_ah_attr ah;
    /* the send queue, process-local */
    pthread_mutex_t sq_lock;
    struct sw_swqe *sq;
    struct ibv_sge *sge_pool;
    uint8_t *inline_pool;
    uint32_t sq_cap;
    uint32_t sq_post, sq_exec, sq_done, sq_retired;
    uint32_t reads_pending;
    struct sw_peer peer;
    uint32_t events_reported;      /* async events returned to the caller */
    bool dying;
};

/* ---------------------------------------------------------------- the process */
struct sw_self {
    pthread_mutex_t lock;          /* attach, detach, the context list */
    bool attached;
    pid_t pid;
    struct sw_env env;
    struct sw_registry *reg;
    int reg_fd;
    uint32_t proc, proc_gen, host;
    struct sw_seg *seg;
    size_t seg_size;
    struct sw_device *dev;
    int lists_out;                 /* device lists handed out and not freed */
    bool dev_opened;
    struct sw_context *contexts;
    /* slot -> local object, for events and completions */
    struct sw_qp **qps;
    struct sw_cq **cqs;
    struct sw_mr **mrs;            /* by key index; this process's MRs only */
    pthread_mutex_t obj_lock;      /* guards the three tables above */
    uint64_t pinned_pages;
    /* the NIC thread */
    pthread_mutex_t nic_lock;
    pthread_t nic;
    bool nic_running;
    _Atomic bool nic_stop;
    _Atomic bool nic_started;   /* nic_main runs: the thread's start is over */
    _Atomic uint64_t wr_count;     /* work requests posted, for fault injection */
    uint64_t open_ns;
    bool port_taken_down, port_brought_up;
    _Atomic bool lost;
    _Atomic uint32_t check_reports;
};

extern struct sw_self sw;

/* registry.c */
int sw_attach(void);
void sw_detach(void);
void sw_reg_lock(void);
void sw_reg_unlock(void);
void sw_shm_mutex_init(pthread_mutex_t *m);
void sw_shm_lock(pthread_mutex_t *m);
void sw_shm_unlock(pthread_mutex_t *m);
bool sw_proc_alive(uint32_t proc, uint32_t gen);
void sw_reap_dead(void);
int sw_reg_qp_alloc(uint32_t slot, uint32_t *qpn);
void sw_reg_qp_free(uint32_t qpn);
bool sw_reg_qp_find(uint32_t qpn, struct sw_reg_qp *out);
int sw_reg_mr_alloc(uint32_t *idx, uint32_t *key);
void sw_reg_mr_publish(uint32_t idx, const struct sw_reg_mr *fields);
void sw_reg_mr_kill(uint32_t idx);
bool sw_reg_mr_read(uint32_t key, struct sw_reg_mr *out);
int sw_reg_count(uint32_t *counter, uint32_t limit, int delta);
uint32_t sw_reg_new_pd(void);
int sw_busy_enter(unsigned i, uint32_t key);
void sw_busy_leave(unsigned i);

/* segment.c */
int sw_seg_create(const struct sw_limits *lim);
void sw_seg_destroy(void);
struct sw_seg *sw_seg_map_peer(uint32_t proc, uint32_t gen, pid_t *pid);
void sw_seg_unmap_peers(void);
void sw_seg_wake(struct sw_seg *s);
void sw_seg_post_event(struct sw_seg *s, uint32_t type, uint32_t kind, uint32_t slot,
                       uint32_t gen);
uint64_t sw_seg_pfn_alloc(uint64_t n);
void sw_seg_pfn_free(uint64_t off, uint64_t n);

/* host.c */
int sw_host_build(struct sw_reg_host *h, const struct sw_conf *conf, uint64_t netns);
uint64_t sw_netns_id(void);
bool sw_host_route(const struct ibv_ah_attr *ah, uint32_t link_layer, uint32_t *host,
                   uint32_t *port);
bool sw_host_owns(uint32_t host, uint32_t port, const struct ibv_ah_attr *ah,
                  uint32_t link_layer);
bool sw_port_up(uint32_t host, uint32_t port);
void sw_port_set(uint32_t host, uint32_t port, enum ibv_port_state st);
unsigned sw_mtu_bytes(uint32_t mtu);

/* async.c */
void sw_async_push(struct sw_context *ctx, const struct ibv_async_event *ev);
void sw_async_forget(struct sw_context *ctx, struct ibv_qp *qp, struct ibv_cq *cq);
bool sw_eventfd_take(int fd);
void sw_async_deliver(const struct sw_ev_req *req);
void sw_async_port_watch(void);

/* cq.c */
int sw_poll_cq(struct ibv_cq *cq, int n, struct ibv_wc *wc);
int sw_req_notify_cq(struct ibv_cq *cq, int solicited_only);
int sw_cq_push(struct sw_seg *seg, uint32_t slot, uint32_t gen, const struct sw_cqe *e,
               bool solicited);
void sw_cq_events(void);
void sw_cq_forget_qp(struct sw_cq *cq, uint32_t qp_slot, uint32_t qp_gen);

/* The opcode of a completion whose status is not success: verbs leaves
 * it undefined, so it is set to what no caller can take for real. */
#define SW_WC_OPCODE_UNDEFINED ((enum ibv_wc_opcode)0xff)

/* qp.c, modify.c */
void sw_mr_use(const struct ibv_sge *sge, uint32_t n, int delta);
void sw_qp_set_error(struct sw_seg *seg, uint32_t slot, uint32_t event_type);
void sw_rq_flush_locked(struct sw_seg *seg, struct sw_sqp *s, uint32_t slot);
void sw_sq_retire(struct sw_qp *qp, uint32_t upto);
void sw_rq_polled(struct sw_qp *qp);
void sw_qp_set_sqe(struct sw_qp *qp);
int sw_modify_qp(struct ibv_qp *qp, struct ibv_qp_attr *attr, int mask);

/* post.c */
int sw_post_send(struct ibv_qp *qp, struct ibv_send_wr *wr, struct ibv_send_wr **bad);
int sw_post_recv(struct ibv_qp *qp, struct ibv_recv_wr *wr, struct ibv_recv_wr **bad);

/* nic.c, exec.c */
int sw_nic_start(void);
void sw_nic_stop(void);
void sw_nic_kick(void);
uint64_t sw_now_ns(void);
int sw_exec(struct sw_qp *qp, struct sw_swqe *w, uint64_t now, uint64_t *wake);
void sw_exec_place_reads(struct sw_qp *qp);
void sw_sq_progress(struct sw_qp *qp);

/* exec.c, for ud.c: a gather or scatter list as iovecs */
struct sw_iovs {
    struct iovec v[SW_MAX_SGE_CAP];
    unsigned n;
    uint64_t len;
};
int sw_exec_local_iovs(struct sw_qp *qp, const struct ibv_sge *sge, uint32_t n, bool write,
                       struct sw_iovs *out);
void sw_exec_release_busy(void);
void sw_exec_copy_out(pid_t pid, struct sw_iovs *src, struct sw_iovs *dst, uint64_t len);
void sw_exec_src_unchanged(struct sw_qp *qp, struct sw_swqe *w);

/* ud.c, ah.c */
#define SW_GRH_BYTES 40        /* what a UD receive reserves for the GRH */
#define SW_QKEY_USE_QP 0x80000000u   /* a WR's Q_Key with this bit: the QP's own */
void sw_ud_exec(struct sw_qp *qp, struct sw_swqe *w);

/* mr.c */
bool sw_mr_pages_ok(uint32_t proc, pid_t pid, struct sw_seg *seg, const struct sw_reg_mr *m,
                    uint64_t va, uint64_t len);

/* fault.c */
void sw_fault_tick(uint64_t now, uint64_t *wake);
bool sw_fault_fail_wr(const struct sw_swqe *w, uint32_t *status);
bool sw_fault_rnr(struct sw_swqe *w);

/* check.c */
void sw_check_report(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
uint64_t sw_check_sum(const struct sw_swqe *w);
void sw_check_close(struct sw_context *ctx);
void sw_check_exit(void);

/* device.c */
struct sw_context *sw_ctx(struct ibv_context *c);
bool sw_ctx_ok(struct ibv_context *c);

/* helpers */
#define SW_MIN(a, b) ((a) < (b) ? (a) : (b))
#define SW_MAX(a, b) ((a) > (b) ? (a) : (b))
#define SW_CONTAINER(ptr, type, member) ((type *)((char *)(ptr) - offsetof(type, member)))

void sw_log(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* The exported name of a function that also has an IBVERBS_1.0 version:
 * both come from .symver, as the version script lists the name in both
 * nodes (a plain definition would be taken by the first). */
#define SW_DEFAULT(name) __attribute__((symver(#name "@@IBVERBS_1.1")))

#endif
