/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * ibv.h: internals of the ib-verbs transport, shared by its files.
 *
 * Loading
 *   The plugin never links libibverbs: ibv_sym.c opens libibverbs.so.1
 *   (or the file WEFT_IBVERBS_LIB names) with dlopen and resolves the
 *   classic verbs API with dlvsym at the symbol versions rdma-core gives
 *   them, so the plugin loads on machines without rdma-core and says why
 *   it does not apply there. What verbs.h makes inline (ibv_post_send,
 *   ibv_post_recv, ibv_poll_cq, ibv_req_notify_cq, the extended
 *   query_port) goes through the device context's ops, as verbs.h does.
 *
 * Ports and rails (ibv_port.c)
 *   Every active port of every device is a candidate, unless WEFT_IB_HCA
 *   leaves it out (ibv_hca.c). An Ethernet port needs a RoCE GID
 *   (ibv_gid.c), an InfiniBand port a LID. The usable ports are ordered
 *   nearest first (ibv_sys.c: the core's topology, under the PCI switch
 *   of the rank's GPU before on its NUMA node; sysfs's NUMA node where
 *   the topology does not show the device) and the ones as near as the
 *   first, at most
 *   WEFT_IB_RAILS, are the rails. A pair uses min(rails of each side)
 *   rails, rail i with rail i, as long as their link layers agree.
 *
 * Connections (ibv_conn.c, ibv_qp.c, ibv_ud.c)
 *   A pair connects on first use by either side. Each rank has one UD QP
 *   whose number is in its published address; the per-pair data (QP
 *   numbers, random PSNs, per rail LID, GID, MTU and link layer, the
 *   address and rkey of the control block) goes through the core's
 *   out-of-band store under "ib-verbs/c/<from>/<to>/<gen>", and a UD
 *   datagram (KNOCK) tells the peer to look, so nobody polls the store
 *   for peers that never called. Bring-up: create QPs (RESET -> INIT),
 *   post every receive, publish, fetch the peer's record, RTR, RTS, then
 *   READY datagrams both ways: a side sends only once the peer said it
 *   is at RTR, so nothing is ever sent to a QP not ready to take it. Lost
 *   datagrams are sent again with back-off, and the store is read as a
 *   fall-back, until WEFT_TIMEOUT.
 *
 *   Per pair: one control QP on rail 0 (SENDs of eager messages and
 *   RTS into pre-posted bounce buffers) and WEFT_IB_QPS data QPs per rail
 *   ("lanes": RDMA writes; their receive queues hold zero-length
 *   receives, consumed only by WRITE_WITH_IMM). Queue depths are fixed
 *   by parameters, so a connection costs a bounded amount of NIC and host
 *   memory, and only peers that talk connect.
 *
 * Protocol (ibv_send.c, ibv_recv.c)
 *   Messages of at most WEFT_IB_EAGER_SIZE bytes (header included) go
 *   eager: one SEND, inline where the QP allows, else from a registered
 *   bounce slot, under credit flow control (the receiver's control QP has
 *   WEFT_IB_EAGER_CREDITS receives; returned credits ride in every header
 *   and, when none flows back, an RDMA write of the count into the
 *   sender's control block). Larger ones are receiver-driven: the sender
 *   SENDs an RTS; the receiver matches it (or holds it unexpected) and
 *   writes clear-to-send entries {address, rkeys, offset, size, tag,
 *   sequence} into the sender's control block with WRITE_WITH_IMM; the
 *   sender RDMA-writes each window in chunks striped over the pair's
 *   lanes, the last write of each lane carrying an immediate that
 *   consumes one zero-length receive. The receiver counts one immediate
 *   per lane per window. Registered memory is written in place
 *   (zero-copy); other memory goes through registered staging windows.
 *   Every work request is counted per QP; completion queues are sized for
 *   the worst case of the QPs on them and grown as pairs connect;
 *   sends are signalled selectively and completions polled in batches.
 *
 * Registration (ibv_rcache.c, ibv_mem.c)
 *   Memory regions live in a page-aligned, reference-counted interval
 *   cache per device. mem_register (weft_mem_register) gives real regions
 *   the caller keeps until mem_deregister. Unregistered buffers of at
 *   least WEFT_IB_REG_MIN bytes are registered on the fly and cached
 *   where a registration cannot go stale: on devices with on-demand
 *   paging (the region follows the mapping), or when WEFT_IB_REG_CACHE=1
 *   says the program never frees a buffer it communicated from while the
 *   job runs. Everywhere else they are copied through registered staging
 *   windows: a plugin loaded with dlopen sees no munmap or free of its
 *   host program, and no per-call check can tell a reused address from
 *   the one registered, so caching pinned regions of memory the program
 *   owns would hand the NIC pages the program no longer has.
 *
 * GPU memory (ibv_gdr.c; ibv_gdr_none.c where weft is built without CUDA)
 *   The core hands CUDA device buffers over as they are when caps announce
 *   WEFT_TRANSPORT_MEM_CUDA, which needs the CUDA driver (opened at init
 *   unless WEFT_IB_GDR=0) and a way for the NIC to reach GPU memory: a
 *   dma-buf of the allocation (a device with dma-buf support and
 *   ibv_reg_dmabuf_mr), else NVIDIA's peer-memory module (a plain
 *   ibv_reg_mr of the device address). dma-buf regions cover whole
 *   allocations and are cached by (start, size, buffer id), so a buffer
 *   used for many messages registers once and a buffer freed and
 *   allocated again at the same address is never served the old region.
 *   The CPU never touches device memory: where the protocols copy (eager
 *   messages, staging, unexpected messages) the bytes of a CUDA buffer
 *   move with the driver's cuMemcpy. Large messages are written in place,
 *   and a receive into GPU memory is flushed (an RDMA read through the
 *   rank's own pair) before it completes.
 *
 * Ownership: a context owns everything below; no state is global, so
 * several contexts live in one process. The core serialises calls into a
 * context, so nothing here locks.
 */
#ifndef WEFT_IB_VERBS_IBV_H
#define WEFT_IB_VERBS_IBV_H

#include <stddef.h>
#include <stdint.h>

#include <infiniband/verbs.h>

#include "weft/transport.h"
#include "plugins/common/tp.h"

#define WIB_NAME "ib-verbs"
#define WIB_DEFAULT_LIB "libibverbs.so.1"

#define WIB_DEVS_MAX 16               /* devices looked at */
#define WIB_PORTS_MAX 64              /* ports looked at, over all devices */
#define WIB_RAILS_MAX 4
#define WIB_QPS_MAX 4                 /* data QPs per rail */
#define WIB_LANES_MAX (WIB_RAILS_MAX * WIB_QPS_MAX)
#define WIB_GIDS_MAX 256              /* GID table entries looked at per port */
#define WIB_HCA_MAX 32                /* entries of WEFT_IB_HCA */
#define WIB_DEVNAME_MAX 64
#define WIB_WHY_MAX 160
/* Q_Key of the UD QPs that knock (high bit clear: not a controlled key). */
#define WIB_QKEY 0x57454654u

/* ------------------------------------------------------------ ibv_sym.c */

/* The verbs this plugin calls, resolved at run time. The required ones
 * are at IBVERBS_1.1 (the completion channel at IBVERBS_1.0, where
 * rdma-core has always had it); the optional ones are NULL when the
 * library predates them, and ibv_sym.c says what stands in for each. */
struct wib_fns {
    void *dl;
    char path[256];                     /* as opened */
    int unversioned;                    /* defines no versions: resolved by name */
    struct ibv_device **(*get_device_list)(int *num);
    void (*free_device_list)(struct ibv_device **list);
    const char *(*get_device_name)(struct ibv_device *dev);
    struct ibv_context *(*open_device)(struct ibv_device *dev);
    int (*close_device)(struct ibv_context *ctx);
    int (*query_device)(struct ibv_context *ctx, struct ibv_device_attr *attr);
    int (*query_port)(struct ibv_context *ctx, uint8_t port, struct _compat_ibv_port_attr *attr);
    int (*query_gid)(struct ibv_context *ctx, uint8_t port, int index, union ibv_gid *gid);
    struct ibv_pd *(*alloc_pd)(struct ibv_context *ctx);
    int (*dealloc_pd)(struct ibv_pd *pd);
    struct ibv_mr *(*reg_mr)(struct ibv_pd *pd, void *addr, size_t len, int access);
    int (*dereg_mr)(struct ibv_mr *mr);
    struct ibv_comp_channel *(*create_comp_channel)(struct ibv_context *ctx);
    int (*destroy_comp_channel)(struct ibv_comp_channel *ch);
    struct ibv_cq *(*create_cq)(struct ibv_context *ctx, int cqe, void *cq_ctx,
                                struct ibv_comp_channel *ch, int vector);
    int (*resize_cq)(struct ibv_cq *cq, int cqe);
    int (*destroy_cq)(struct ibv_cq *cq);
    int (*get_cq_event)(struct ibv_comp_channel *ch, struct ibv_cq **cq, void **cq_ctx);
    void (*ack_cq_events)(struct ibv_cq *cq, unsigned int n);
    struct ibv_qp *(*create_qp)(struct ibv_pd *pd, struct ibv_qp_init_attr *attr);
    int (*modify_qp)(struct ibv_qp *qp, struct ibv_qp_attr *attr, int mask);
    int (*destroy_qp)(struct ibv_qp *qp);
    struct ibv_ah *(*create_ah)(struct ibv_pd *pd, struct ibv_ah_attr *attr);
    int (*destroy_ah)(struct ibv_ah *ah);
    int (*get_async_event)(struct ibv_context *ctx, struct ibv_async_event *ev);
    void (*ack_async_event)(struct ibv_async_event *ev);
    int (*fork_init)(void);
    /* IBVERBS_1.8: optional access flags (relaxed ordering); else reg_mr
     * without them */
    struct ibv_mr *(*reg_mr_iova2)(struct ibv_pd *pd, void *addr, size_t len, uint64_t iova,
                                   unsigned int access);
    /* IBVERBS_1.11: GID with its type; else query_gid and sysfs */
    int (*query_gid_ex)(struct ibv_context *ctx, uint32_t port, uint32_t index,
                        struct ibv_gid_entry *entry, uint32_t flags, size_t entry_size);
    /* IBVERBS_1.12: dma-buf regions (GPU memory); else not available */
    struct ibv_mr *(*reg_dmabuf_mr)(struct ibv_pd *pd, uint64_t offset, size_t len,
                                    uint64_t iova, int fd, int access);
    /* IBVERBS_1.13: whether fork needs ibv_fork_init; else always call it */
    enum ibv_fork_status (*is_fork_initialized)(void);
};

/* Opens path (NULL or "": libibverbs.so.1) and resolves every symbol. 0,
 * or -1 with why filled ("cannot open ...", "... has no
 * ibv_create_qp@IBVERBS_1.1") and f left closed. */
int weft__ibv_sym_load(struct wib_fns *f, const char *path, char *why, size_t cap);
void weft__ibv_sym_unload(struct wib_fns *f);
/* "reg_mr_iova2 reg_dmabuf_mr ..." of the optional ones missing, "" when
 * none is. */
void weft__ibv_sym_missing(const struct wib_fns *f, char *buf, size_t cap);
/* What verbs.h's inline ibv_query_port does: the context's extended op
 * where it has one, else the exported compat call. */
int weft__ibv_query_port(const struct wib_fns *f, struct ibv_context *ctx, uint8_t port,
                         struct ibv_port_attr *attr);
/* ibv_reg_mr as verbs.h's macro does it: optional access flags need
 * reg_mr_iova2 and are dropped without it. */
struct ibv_mr *weft__ibv_reg_mr(const struct wib_fns *f, struct ibv_pd *pd, void *addr,
                                size_t len, unsigned int access);

/* ------------------------------------------------------------ ibv_param.c */

struct wib_params {
    const char *lib;                    /* WEFT_IBVERBS_LIB, NULL: libibverbs.so.1 */
    const char *hca;                    /* WEFT_IB_HCA, NULL: every device */
    int gid_index;                      /* WEFT_IB_GID_INDEX, -1: chosen */
    int timeout;                        /* local ACK timeout: 4.096 us << timeout */
    int retry_cnt;
    int rnr_retry;
    int min_rnr_timer;                  /* IB encoding, 1..31; never 0 (655 ms) */
    int sl, traffic_class;
    int rails;                          /* most rails used */
    int qps;                            /* data QPs per rail */
    int sq_depth;                       /* send work requests per QP */
    size_t eager_size;                  /* bytes of an eager slot, header included */
    int eager_credits;                  /* control receives per pair */
    int cts_slots;                      /* windows in flight per pair and direction */
    size_t chunk;                       /* bytes per RDMA write */
    size_t staging;                     /* bytes of the staging pool */
    size_t reg_min;                     /* unregistered buffers from this size: registered */
    int reg_cache;                      /* -1 where safe (ODP), 0 never, 1 always */
    size_t rcache_max;                  /* bytes the cache may keep registered */
    int fork_init;                      /* 0: never call ibv_fork_init */
    int gdr;                            /* WEFT_IB_GDR: 0 no GPU memory, 1 where possible */
    int keepalive_ms;                   /* probes of pairs waited on; 0 never */
    int timeout_ms;                     /* WEFT_TIMEOUT: connection set-up */
};

/* Reads every WEFT_IB* parameter (weft.7 and weft-ib-verbs.7 list them):
 * 0, or -1 with the error set through tp. */
int weft__ibv_params_read(const struct tp_ctx *tp, struct wib_params *p);

/* ------------------------------------------------------------ ibv_hca.c */

/* WEFT_IB_HCA as NCCL_IB_HCA reads it: a comma list of device[:port];
 * a leading '^' excludes the list instead of selecting it; then a
 * leading '=' asks for exact names, otherwise an entry selects every
 * device whose name it starts. */
struct wib_hca_spec {
    int exclude, exact, n;
    struct {
        char name[WIB_DEVNAME_MAX];
        int port;                       /* 0: every port */
    } e[WIB_HCA_MAX];
};

/* NULL or "" selects everything. 0, or -1 with why filled. */
int weft__ibv_hca_parse(const char *s, struct wib_hca_spec *out, char *why, size_t cap);
/* 1 when the spec selects port of dev. */
int weft__ibv_hca_match(const struct wib_hca_spec *s, const char *dev, int port);

/* ------------------------------------------------------------ ibv_gid.c */

enum wib_gid_kind { WIB_GID_IB = 0, WIB_GID_ROCE_V1, WIB_GID_ROCE_V2, WIB_GID_UNKNOWN };

struct wib_gid_cand {
    uint32_t index;
    uint8_t raw[16];
    int kind;                           /* enum wib_gid_kind */
};

/* The network of the bootstrap: the local address that routes to the
 * rendezvous host and its prefix length. family 0: not known. */
struct wib_subnet {
    int family;                         /* AF_INET, AF_INET6 or 0 */
    uint8_t addr[16];                   /* 4 used for AF_INET */
    int prefix;
};

/* The GID chosen for a port. */
struct wib_gid_pick {
    int index;                          /* -1: none */
    uint8_t raw[16];
    int kind;
    int rank;                           /* see weft__ibv_gid_rank */
    char why[WIB_WHY_MAX];
};

/* Priority of a RoCE GID, lower is better: 0 v2 IPv4-mapped on the
 * bootstrap subnet, 1 v2 IPv4-mapped elsewhere, 2 v2 IPv6 not
 * link-local, 3 v1 not link-local, 4 v2 link-local, 5 v1 link-local;
 * -1 not usable (zero GID, unknown type, an IB GID). */
int weft__ibv_gid_rank(const struct wib_gid_cand *c, const struct wib_subnet *boot);
/* The best of n candidates (lowest rank, then lowest index), or the one
 * whose index is forced (>= 0, WEFT_IB_GID_INDEX). 0 with out filled, or
 * -1 with out->why saying why none fits. */
int weft__ibv_gid_choose(const struct wib_gid_cand *c, int n, const struct wib_subnet *boot,
                         int forced, struct wib_gid_pick *out);
/* "::ffff:10.0.0.1" style text of a GID. */
void weft__ibv_gid_str(const uint8_t raw[16], char *buf, size_t cap);
const char *weft__ibv_gid_kind_name(int kind);
/* Reads a port's GID table (query_gid_ex where the library has it, else
 * query_gid and the types sysfs shows under sysfs_dev, the device's
 * /sys/class/infiniband folder): up to max entries that are not zero. */
int weft__ibv_gid_read(const struct wib_fns *f, struct ibv_context *vctx, const char *sysfs_dev,
                       uint8_t port, int table_len, struct wib_gid_cand *out, int max);
/* The bootstrap subnet: the address routing to host and its netmask. */
void weft__ibv_boot_subnet(const char *host, struct wib_subnet *out);

/* ------------------------------------------------------------ ibv_sys.c */

/* How near a port is to the rank, lower is nearer. */
enum wib_near {
    WIB_NEAR_GPU_SWITCH = 0,            /* under the PCI switch of the rank's GPU */
    WIB_NEAR_NUMA,                      /* on the rank's NUMA node */
    WIB_NEAR_UNKNOWN,                   /* the rank or the device has no known place */
    WIB_NEAR_FAR                        /* on another NUMA node */
};

/* NUMA node of every CPU the rank may run on, or -1 when several or
 * unknown. */
int weft__ibv_rank_numa(void);
/* NUMA node of an RDMA device from its sysfs folder, -1 unknown. */
int weft__ibv_dev_numa(const char *sysfs_dev);
/* How near device name is: from the core's topology where it shows the
 * device, else from its NUMA node in sysfs against rank_numa. */
int weft__ibv_dev_near(const weft_transport_core_t *core, const char *name,
                       const char *sysfs_dev, int rank_numa);
const char *weft__ibv_near_name(int near);
/* RLIMIT_MEMLOCK against what the plugin pins at least (need) and would
 * like (want): 0 fine, 1 enough to start (msg says what fails later),
 * -1 too low to start; msg says how to raise it either way. The soft
 * limit is raised to the hard one first where that helps. */
int weft__ibv_memlock_judge(unsigned long long cur, unsigned long long max, size_t need,
                            size_t want, char *msg, size_t cap);
int weft__ibv_memlock_check(size_t need, size_t want, char *msg, size_t cap);
/* ibv_fork_init unless the kernel needs nothing for fork (1.13) or
 * disabled; a line for the log in msg. */
void weft__ibv_fork_setup(const struct wib_fns *f, int enabled, char *msg, size_t cap);

/* ------------------------------------------------------------ ibv_port.c */

struct wib_port_info {
    char dev[WIB_DEVNAME_MAX];
    int devi;                           /* index in ctx->devs, -1 in unit tests */
    int port;                           /* 1-based */
    int state;                          /* enum ibv_port_state */
    int link_layer;                     /* IBV_LINK_LAYER_* */
    uint16_t lid;
    int mtu;                            /* enum ibv_mtu, active */
    double gbps;                        /* active speed x width */
    int gid_tbl_len;
    int near;                           /* enum wib_near */
    int numa;
    struct wib_gid_pick gid;            /* RoCE, or IB with WEFT_IB_GID_INDEX */
    uint64_t subnet_prefix;             /* IB: of GID 0, network order */
    int usable;
    int rail;                           /* rail number, -1 when not a rail */
    char why[WIB_WHY_MAX];              /* why not usable or not a rail */
};

/* Orders ports: usable first, then nearest, fastest, by name and port. */
void weft__ibv_port_sort(struct wib_port_info *p, int n);
/* After sorting: rails are the usable ports as near as the first, at
 * most max_rails; the others get why. The number of rails. */
int weft__ibv_port_rails(struct wib_port_info *p, int n, int max_rails);
/* Judges one port from its attributes: usable, or why not. */
void weft__ibv_port_judge(struct wib_port_info *p, const struct wib_hca_spec *hca);
/* Speed of a port from ibv_port_attr's active_speed and active_width. */
double weft__ibv_port_gbps(int speed, int width);
const char *weft__ibv_link_layer_name(int ll);
const char *weft__ibv_port_state_name(int state);
int weft__ibv_mtu_bytes(int mtu);

/* ------------------------------------------------------------ ibv_wc.c */

/* What an error completion usually means, for the one who reads it. */
enum wib_wc_class {
    WIB_WC_CLASS_OK = 0,
    WIB_WC_CLASS_FLUSH,                 /* consequence of an earlier error */
    WIB_WC_CLASS_PEER,                  /* the peer or the path to it is gone */
    WIB_WC_CLASS_LOCAL,                 /* this side posted something wrong */
    WIB_WC_CLASS_REMOTE                 /* the peer refused what it was sent */
};

/* Status name, class and a hint for a completion status. */
const char *weft__ibv_wc_status_name(int status);
int weft__ibv_wc_class(int status);
const char *weft__ibv_wc_opcode_name(int opcode);
/* One line: "<STATUS> (<meaning>) on QP 0x.. to rank N during <op>
 * [vendor 0x..]: <hint>". peer < 0: not known. */
void weft__ibv_wc_explain(int status, int opcode, uint32_t vendor_err, uint32_t qpn, int peer,
                          char *buf, size_t cap);

/* ------------------------------------------------------------ ibv_rcache.c */

struct wib_rc_entry {
    uintptr_t start, end;               /* page-aligned, end excluded */
    int refs;
    int indexed;                        /* in the index: may serve lookups */
    void *mr;                           /* what ops->reg gave */
    struct wib_rc_entry *lru_prev, *lru_next; /* unreferenced indexed ones */
};

struct wib_rc_ops {
    /* Registers [start, start + len): 0 with *mr set, or an errno. */
    int (*reg)(void *arg, uintptr_t start, size_t len, void **mr);
    void (*dereg)(void *arg, void *mr);
};

/* A page-aligned, reference-counted interval cache. The index holds
 * disjoint entries sorted by start; a lookup that no entry covers
 * registers the union of the request and every entry it overlaps, and
 * those leave the index (they live on while referenced). Unreferenced
 * entries stay cached, least recently used first out, within max_bytes
 * and max_entries. invalidate takes every entry overlapping a range out
 * of the index: it serves no lookup again and is deregistered when its
 * last reference goes. */
struct wib_rcache {
    const struct wib_rc_ops *ops;
    void *arg;
    size_t page;
    struct wib_rc_entry **idx;
    int n, cap;
    struct wib_rc_entry *lru_head, *lru_tail;
    struct wib_rc_entry *stale;         /* out of the index, still referenced */
    size_t bytes;                       /* of indexed entries */
    size_t max_bytes;
    int max_entries;
    int live;                           /* entries registered, indexed or not */
    unsigned long hits, misses, evictions;
};

void weft__ibv_rc_init(struct wib_rcache *c, const struct wib_rc_ops *ops, void *arg,
                       size_t page, size_t max_bytes, int max_entries);
/* An entry covering [addr, addr + len) with one more reference: 0, or an
 * errno (ENOMEM when even an emptied cache cannot register it). */
int weft__ibv_rc_get(struct wib_rcache *c, const void *addr, size_t len,
                     struct wib_rc_entry **out);
void weft__ibv_rc_put(struct wib_rcache *c, struct wib_rc_entry *e);
void weft__ibv_rc_invalidate(struct wib_rcache *c, const void *addr, size_t len);
/* Deregisters every unreferenced entry; the number still referenced. */
int weft__ibv_rc_flush(struct wib_rcache *c);
void weft__ibv_rc_fini(struct wib_rcache *c);
/* 0 when every invariant holds, else -1 with why filled (tests). */
int weft__ibv_rc_check(const struct wib_rcache *c, char *why, size_t cap);

/* ------------------------------------------------------------ ibv_qp.c */

/* What one side tells the other about one rail for the QPs on it. */
struct wib_wire_rail {
    uint8_t link_layer;
    uint8_t mtu;                        /* enum ibv_mtu, active */
    uint8_t port;
    uint8_t gid_index;                  /* the sender's own, for its logs */
    uint16_t lid;
    uint16_t reserved;
    uint8_t gid[16];
};

/* The attributes of one QP transition (mask and attr for ibv_modify_qp).
 * local and remote describe the rail; psn and qpn the remote QP's. */
void weft__ibv_qp_init_attr(struct ibv_qp_attr *a, int *mask, int port, int rdma);
void weft__ibv_qp_rtr_attr(struct ibv_qp_attr *a, int *mask, const struct wib_params *p,
                           const struct wib_wire_rail *local, int local_gid_index,
                           const struct wib_wire_rail *remote, uint32_t remote_qpn,
                           uint32_t remote_psn);
void weft__ibv_qp_rts_attr(struct ibv_qp_attr *a, int *mask, const struct wib_params *p,
                           uint32_t psn);
/* The address vector towards remote (RTR and UD address handles). */
void weft__ibv_ah_attr(struct ibv_ah_attr *ah, const struct wib_params *p,
                       const struct wib_wire_rail *local, int local_gid_index,
                       const struct wib_wire_rail *remote);
/* A random 24-bit PSN. */
uint32_t weft__ibv_psn(void);

/* ------------------------------------------------------------ the address */

/* What a rank publishes (get_address): its rails and the UD QP on rail 0
 * that connection knocks go to. Host byte order: a job runs one kind of
 * machine, and the magic shows a mismatch. */
#define WIB_ADDR_MAGIC 0x57494256u      /* "WIBV" */
#define WIB_WIRE_VERSION 1u

struct wib_addr {
    uint32_t magic;
    uint16_t version;
    uint8_t nrails;
    uint8_t qps;                        /* data QPs per rail it wants */
    uint32_t ud_qpn;
    uint32_t nonce;                     /* this process's incarnation */
    struct wib_wire_rail rail[WIB_RAILS_MAX];
};

/* Rails two ranks share: rail i with rail i while link layers agree. */
int weft__ibv_addr_valid(const void *blob, size_t len);
int weft__ibv_pair_rails(const struct wib_addr *a, const struct wib_addr *b);

/* ------------------------------------------------------------ the context */

#define WIB_CQS_MAX 64                   /* CQs per device */

struct wib_dev {
    char name[WIB_DEVNAME_MAX];
    char sysfs[256];                    /* its /sys/class/infiniband folder */
    struct ibv_context *vctx;
    struct ibv_device_attr attr;
    int odp;                            /* RC regions may be on-demand paged */
    int used;                           /* carries a rail: PD, CQ, cache below */
    struct ibv_pd *pd;
    struct ibv_comp_channel *ch;
    /* Completion queues on the one channel, each sized for the worst case
     * of the QPs on it, grown while the device lets it and then joined by
     * another: a device's max_cqe bounds one CQ, not the job. */
    struct wib_cq {
        struct ibv_cq *cq;
        int size;                       /* completions it holds */
        int need;                       /* the worst case of the QPs on it */
        int armed;                      /* a completion event was asked for */
    } cqs[WIB_CQS_MAX];
    int ncqs;
    /* Regions of mem_register, dropped when their last user goes, and
     * regions made on the fly, kept cached (see Registration above). */
    struct wib_regarg {
        const struct wib_fns *fns;
        struct ibv_pd *pd;
        unsigned access;
    } ra_user, ra_fly;
    struct wib_rcache rc_user, rc_fly;
};

/* The first byte of what a work request's wr_id points to, so that a
 * completion, even a flushed one (whose opcode means nothing), tells
 * what it was. */
enum wib_wrid_type {
    WIB_WRID_SQ = 1,                    /* a send queue of an RC QP */
    WIB_WRID_CTL_RX,                    /* a control receive (index = its buffer) */
    WIB_WRID_LANE_RX,                   /* a zero-length receive of a data QP */
    WIB_WRID_UD_RX,                     /* a knock receive (index = its buffer) */
    WIB_WRID_UD_SQ                      /* a knock sent */
};

struct wib_qpx;

struct wib_wrid {
    uint8_t type;
    uint16_t index;
    struct wib_qpx *q;
};

/* What a posted send work request stands for. Completions of an RC send
 * queue come in order, so a signalled one retires every earlier record. */
enum wib_rec_kind {
    WIB_REC_NONE = 0,
    WIB_REC_BOUNCE,                     /* an eager send from bounce slot `slot` */
    WIB_REC_STAGE,                      /* a chunk sent from staging slot `slot` */
    WIB_REC_WIN,                        /* a write of sender window `owner` */
    WIB_REC_PUT,                        /* a write of put request `owner` */
    WIB_REC_FLUSH                       /* the read that flushes receive `owner` */
};

struct wib_wr_rec {
    uint8_t kind;
    uint8_t signaled;
    int slot;
    void *owner;
};

/* One RC QP of a pair, or the UD QP. */
struct wib_qpx {
    struct ibv_qp *qp;
    int peer;
    int lane;                           /* -1: the control QP */
    int rail;                           /* of the pair */
    int dev;                            /* index in ctx->devs */
    int cqi;                            /* its CQ in the device's cqs */
    uint32_t psn;                       /* of our send queue */
    int depth;                          /* send work requests it holds */
    uint32_t head, tail;                /* posted = head - tail */
    uint32_t since_signal;
    struct wib_wr_rec *recs;            /* depth of them, by seq % depth */
    int rq_depth;                       /* receives it keeps posted */
    int dead;                           /* in error: completions mean nothing more */
    struct wib_wrid sq_id, rq_id;
};

/* The per-pair control block, in memory registered on rail 0's device:
 * `in` is written by the peer (clear-to-send entries, credits, bye), `out`
 * holds what we write to its `in`, so a write needs no inline room. */
struct wib_cts {
    uint64_t addr;                      /* where offset off of the message lands */
    uint64_t off;                       /* the window's offset in the message */
    uint64_t size;                      /* its bytes */
    uint64_t seq;                       /* the message's number (its RTS) */
    uint64_t tag;                       /* the message's tag, checked */
    uint32_t rkey[WIB_RAILS_MAX];
    uint32_t use;                       /* the slot's use count, checked */
    uint8_t nlanes;                     /* lanes that end with an immediate */
    uint8_t flags;                      /* WIB_CTS_LAST */
    uint16_t reserved;
};

#define WIB_CTS_LAST 1u
#define WIB_CTS_BYTES 64                /* a cache line per entry */

struct wib_trailer {
    uint32_t credits;                   /* control receives the peer reposted */
    uint32_t bye;                       /* the peer finalized (see WIB_CREDIT_BYE) */
};

/* Immediate data: kind in the top bits, slot (token) below. CREDIT
 * says the trailer of our block changed (credits returned, or bye), so
 * that a sender waiting for credits sleeps on its completion channel. */
#define WIB_IMM_CTS 0x40000000u
#define WIB_IMM_DATA 0x80000000u
#define WIB_IMM_CREDIT 0xc0000000u
#define WIB_IMM_KIND(imm) ((imm) & 0xc0000000u)
#define WIB_IMM_SLOT(imm) ((imm) & 0xffffu)
/* The slot of a CREDIT that is the peer's goodbye. The goodbye is read
 * from the immediate, not from the trailer: the trailer's memory holds
 * the latest write, which may land while earlier completions (a credit
 * return, then the peer's last messages on its control QP) still wait to
 * be polled; read there, the goodbye would overtake those messages. */
#define WIB_CREDIT_BYE 1u
/* Zero-length receives a data QP keeps posted: the immediates that can
 * be in flight towards it (a clear-to-send and a window's last write per
 * slot, two credit returns and a bye). */
#define WIB_LANE_RQ(slots) (2 * (slots) + 4)

/* The header of every control SEND; an eager message's bytes follow. */
enum { WIB_MSG_EAGER = 1, WIB_MSG_RTS };

struct wib_hdr {
    uint8_t type;
    uint8_t reserved[3];
    uint32_t credits;                   /* control receives the sender reposted */
    uint64_t tag;
    uint64_t len;                       /* bytes of the message */
    uint64_t seq;                       /* its number, from 0 per direction */
};

/* The record a side stores for a pair under ib-verbs/c/<from>/<to>/<gen>. */
#define WIB_REC_MAGIC 0x57494243u       /* "WIBC" */

struct wib_conn_rec {
    uint32_t magic;
    uint16_t version;
    uint8_t nrails;
    uint8_t nlanes;
    uint32_t from, to, gen;
    uint32_t nonce;                     /* the sender's incarnation */
    uint32_t credits;                   /* its control receives */
    uint32_t eager_size;
    uint32_t slots;                     /* its clear-to-send slots */
    uint32_t ctl_qpn, ctl_psn;
    uint32_t lane_qpn[WIB_LANES_MAX], lane_psn[WIB_LANES_MAX];
    uint64_t block_addr;                /* its control block's `in` */
    uint32_t block_rkey;
    uint32_t reserved;
    struct wib_wire_rail rail[WIB_RAILS_MAX];
};

/* A knock: a datagram to a peer's UD QP. */
enum { WIB_KNOCK = 1, WIB_READY, WIB_READY_ACK };

struct wib_knock {
    uint32_t magic;                     /* WIB_ADDR_MAGIC */
    uint16_t type;
    uint16_t reserved;
    uint32_t from, gen, nonce;          /* nonce: the sender's incarnation */
};

enum wib_pstate {
    WIB_P_IDLE = 0,                     /* no QPs */
    WIB_P_WAIT_INFO,                    /* QPs at INIT, our record stored, knocked */
    WIB_P_WAIT_READY,                   /* RTS, waiting for its READY */
    WIB_P_UP,
    WIB_P_FAILED                        /* set-up or a QP failed: everything fails */
};

/* A window of a large message on the receiving side (token = slot). */
struct wib_rwin {
    struct wib_msg *m;                  /* NULL: slot free */
    uint64_t off, size;
    int nlanes, got;
    int stage;                          /* staging slot, -1: in place */
};

/* A window on the sending side: a clear-to-send entry to write. */
struct wib_swin {
    struct wib_swin *next;
    struct wib_req *r;
    struct wib_cts cts;
    int slot;
    int put;                            /* a put's writes: no immediates */
    uint32_t nchunks, total, posted;    /* chunks, writes (empty lanes too), posted */
    int start_lane;
    int outstanding;                    /* writes posted, not yet completed */
    /* Its request failed while writes were still posted: it has no request
     * any more and goes when the last of them completes. */
    int orphan;
};

/* A request: the common head, then what a send or a put needs. */
enum { WIB_OP_EAGER = 1, WIB_OP_RNDV, WIB_OP_PUT };

struct wib_mreg;

struct wib_req {
    TP_REQ_HEAD;                        /* first (plugins/common/tp_req.h) */
    int op;
    int cuda;                           /* buf is CUDA memory: copies go through the driver */
    uint64_t seq;
    struct wib_mreg *sreg;              /* registered source, NULL: staged */
    int own_sreg;                       /* sreg taken for this request */
    int rts_posted;
    int windows;                        /* windows being written */
    int last_done;                      /* the last window is written */
    void *mh;                           /* the core's handle for buf, or NULL */
    /* put */
    uint64_t raddr;
    uint32_t rkey[WIB_RAILS_MAX];
};

/* An incoming message: the common head, then where its bytes go. */
struct wib_msg {
    TP_MSG_HEAD;                        /* first (plugins/common/tp_match.h) */
    struct wib_msg *rnext;              /* the peer's list of messages needing windows */
    uint64_t seq;
    int rndv;
    int queued;                         /* on the peer's list */
    unsigned char *ubuf;                /* while unexpected */
    int to_ubuf;                        /* its windows land in ubuf */
    uint64_t want;                      /* bytes to receive (total or the receive's room) */
    uint64_t issued;                    /* bytes covered by windows issued */
    int windows;                        /* windows in flight */
    int started;                        /* its landing is decided */
    struct wib_mreg *dst;               /* registered destination, NULL: staged */
    int own_dst;
    int failing;                        /* being failed (once, though in several windows) */
    int cuda;                           /* its receive's buffer is CUDA memory */
    weft_result_t err;                  /* a copy into the receive failed */
    struct wib_msg *fnext;              /* ctx's list of flushes waiting */
};

/* Registered memory: one cache entry per device a rail uses. */
struct wib_mreg {
    struct wib_mreg *prev, *next;       /* ctx->user_regs, when user */
    void *addr;
    size_t len;
    int mem_type;
    int user;                           /* from mem_register: in rc_user, else rc_fly */
    struct wib_rc_entry *ent[WIB_DEVS_MAX];
    struct ibv_mr *own[WIB_DEVS_MAX];   /* regions of its own, outside the caches */
    struct wib_gdr_ent *gdr;            /* a dma-buf region of GPU memory (ibv_gdr.c) */
};

/* What mem_export hands out and put takes: the region and its rkey on
 * the device of each of the exporter's rails. */
#define WIB_RKEY_MAGIC 0x57524b59u      /* "WRKY" */

struct wib_rkey {
    uint32_t magic;
    uint32_t nrails;
    uint64_t addr, len;
    uint32_t rkey[WIB_RAILS_MAX];
};

struct wib_peer {
    struct wib_addr addr;
    int known, lost, departed;
    int state;                          /* enum wib_pstate */
    uint32_t gen;
    int nrails, nlanes;
    struct wib_qpx ctl;
    struct wib_qpx lane[WIB_LANES_MAX];
    struct wib_wrid *ctl_rx;            /* one per control receive */
    /* one registered allocation: the control block (in, out), the
     * control receive buffers and the control writes' sources */
    unsigned char *mem;
    size_t mem_len;
    struct ibv_mr *mem_mr;
    unsigned char *in, *out, *rx;
    unsigned char *ctl_src;             /* control writes' sources, one per SQ slot */
    /* its control block, which we write */
    uint64_t its_block;
    uint32_t its_rkey;
    uint32_t its_credits;
    uint32_t its_slots;
    uint32_t its_eager;
    uint32_t its_nonce;
    /* eager flow: counters wrap, compared by difference */
    uint32_t tx_sent, tx_returned, rx_reposted, rx_told;
    /* windows: we receive through slots of its block (token = slot) */
    struct wib_rwin *rwin;
    int *slot_free;
    int nslot_free;
    uint32_t *use_out;                  /* per slot of its block: our last use */
    uint32_t *use_in;                   /* per slot of ours: its last use seen */
    int lane_rr;
    /* messages */
    uint64_t send_seq, recv_seq;
    struct tp_req_queue sq;             /* sends not yet on the wire, in order */
    struct tp_req_queue rts;            /* large sends whose windows are awaited */
    struct wib_msg *rv_head, *rv_tail;  /* incoming large ones needing windows */
    struct wib_swin *sw_head, *sw_tail; /* windows to write */
    int active;                         /* on ctx->active */
    struct wib_peer *anext;
    /* set-up */
    int64_t next_try_ms, deadline_ms;
    int backoff_ms;
    struct ibv_ah *ah;                  /* towards its UD QP */
    int got_ready;                      /* its READY arrived */
    char why[256];
};

#define WIB_UD_SLOTS 64
#define WIB_UD_BUF 128                  /* a global route header (40) and a knock */

struct wib_ctx {
    TP_CTX_HEAD;                        /* first (plugins/common/tp.h) */
    struct wib_params prm;
    struct wib_fns fns;
    struct wib_hca_spec hca;
    struct wib_subnet boot;
    int rank_numa;
    int ndevs;
    struct wib_dev devs[WIB_DEVS_MAX];
    int nports;
    struct wib_port_info ports[WIB_PORTS_MAX];
    int nrails;
    struct wib_port_info *rail[WIB_RAILS_MAX];
    struct wib_addr self;
    size_t page;
    int max_inline;
    int reg_fly;                        /* unregistered buffers registered on the fly */
    /* waiting */
    int epfd;
    int busy_fd;                        /* readable while progress has work */
    int busy;
    int timer_fd;                       /* wakes for set-up retries */
    /* knocks */
    struct wib_qpx ud;
    struct ibv_cq *ud_cq;               /* on rail 0's device CQ */
    unsigned char *ud_mem;
    struct ibv_mr *ud_mr;
    struct wib_wrid ud_rx[WIB_UD_SLOTS];
    int ud_tx_next;
    /* eager bounce slots and staging, registered on rail 0's device and
     * on every rail's device */
    unsigned char *bounce;
    struct ibv_mr *bounce_mr;
    int nbounce, *bounce_free, nbounce_free;
    unsigned char *stage;
    struct ibv_mr *stage_mr[WIB_DEVS_MAX];
    int nstage, *stage_free, nstage_free;
    unsigned char *stage_recv;          /* per slot: held by a receive window */
    int nstage_recv;                    /* slots receive windows hold */
    /* mem_register's handles: a receive (whose handle the common irecv
     * does not pass on) finds its buffer's region here by address */
    struct wib_mreg *user_regs;
    int cuda_regs;                      /* of them CUDA memory: 0 spares the lookups */
    /* GPU memory (ibv_gdr.c) */
    int gdr_mode;                       /* enum wib_gdr_mode */
    struct wib_gdr *gdr;                /* the driver and the dma-buf regions, or NULL */
    struct wib_msg *flush_head, *flush_tail; /* GPU receives waiting for their flush */
    /* peers */
    struct wib_peer *peers;
    struct wib_peer *active;            /* peers with QPs */
    unsigned ticks;
    int64_t now_ms;
    int64_t next_keepalive_ms;          /* ibv_alive.c */
    int finalizing;
    /* what finalize logs: work per message, copies per byte */
    struct wib_stats {
        unsigned long long sends, send_bytes;   /* isend calls, their bytes */
        unsigned long long send_wrs, signaled;  /* RC send work requests */
        unsigned long long recv_wrs;            /* RC receive work requests */
        unsigned long long cqes;                /* completions polled */
        unsigned long long copied;              /* payload bytes the CPU copied */
        unsigned long long copied_cuda;         /* payload bytes the CUDA driver copied */
        unsigned long long flushes;             /* GPU-bound receives flushed */
    } st;
    /* windows received in place and through staging, for the log */
    unsigned long windows_in_place, windows_staged;
};

/* ibv_dev.c: devices and ports */
weft_result_t weft__ibv_dev_open(struct wib_ctx *ctx);
weft_result_t weft__ibv_dev_setup(struct wib_ctx *ctx);
void weft__ibv_dev_close(struct wib_ctx *ctx);
/* One line per port for the log and the refusal: "mlx5_0:1 ... ". */
void weft__ibv_port_line(const struct wib_port_info *p, char *buf, size_t cap);
/* A CQ of device d with room for need more completions (grown, or a new
 * one; on >= 0: that one, grown if it must be): its index in d's cqs, or
 * -1 with the error set. */
int weft__ibv_cq_reserve(struct wib_ctx *ctx, int d, int need, int on);
/* Gives back what weft__ibv_cq_reserve took on CQ cqi of device d. */
void weft__ibv_cq_release(struct wib_ctx *ctx, int d, int cqi, int need);

/* ------------------------------------------------------------ ibv_alive.c */

/* Probes the pairs this rank waits on, when due (see ibv_alive.c). */
void weft__ibv_keepalive(struct wib_ctx *ctx);
/* When the next probe is due (ms, monotonic), or 0 when none is. */
int64_t weft__ibv_keepalive_due(const struct wib_ctx *ctx);

/* ibv_mem.c: registration */
weft_result_t weft__ibv_mem_register(void *vctx, void *buf, size_t len, int mem_type,
                                     void **mhandle);
weft_result_t weft__ibv_mem_deregister(void *vctx, void *mhandle);
weft_result_t weft__ibv_mem_export(void *vctx, void *mhandle, void *rkey, size_t *len);
/* A registration of [buf, buf + len) on every rail's device for a
 * transfer: mh when the core gave one that covers it, else a handle of
 * mem_register that covers it, else from the cache where that is safe
 * (ctx->reg_fly, len >= reg_min). NULL: stage. */
struct wib_mreg *weft__ibv_mem_for(struct wib_ctx *ctx, void *buf, size_t len, void *mh,
                                   int *own);
/* The flush read of a GPU-bound receive (1 byte, through a QP of this
 * rank to itself) before it completes: 1 posted or waiting (for the pair
 * to come up, a bounce slot or room), 0 not needed or not possible. */
int weft__ibv_flush_start(struct wib_ctx *ctx, struct wib_msg *m);
void weft__ibv_mem_done(struct wib_ctx *ctx, struct wib_mreg *m, int own);
uint32_t weft__ibv_mem_lkey(const struct wib_mreg *m, int dev);
uint32_t weft__ibv_mem_rkey(const struct wib_mreg *m, int dev);
/* Registers len bytes from offset of dma-buf fd, at iova, on every used
 * device: mr[dev] set, or the error set and none left registered. */
weft_result_t weft__ibv_mem_dmabuf(struct wib_ctx *ctx, int fd, uint64_t offset, size_t len,
                                   uint64_t iova, struct ibv_mr *mr[WIB_DEVS_MAX]);
/* 1 when buf is CUDA memory: mh's type where given, else that of a
 * mem_register handle that holds buf. */
int weft__ibv_mem_is_cuda(const struct wib_ctx *ctx, const void *buf, void *mh);
/* n bytes from src to dst, one of which is CUDA memory when cuda says so
 * (then through the driver: the CPU cannot read device memory), counted
 * in the stats. 0, or -1 with the error set. */
int weft__ibv_mem_copy(struct wib_ctx *ctx, void *dst, const void *src, size_t n, int cuda);
weft_result_t weft__ibv_mem_setup(struct wib_ctx *ctx);
void weft__ibv_mem_fini(struct wib_ctx *ctx);
int weft__ibv_bounce_get(struct wib_ctx *ctx);
void weft__ibv_bounce_put(struct wib_ctx *ctx, int slot);
/* A staging slot for a receive window (for_recv) or a send's chunk, or
 * -1. Each side may hold at most half the slots: receive windows holding
 * them all would wait for the peer's data while our own sends, which free
 * the peer's windows, wait for a slot; with both ranks (or a rank and
 * itself) doing so at once, nothing would move again. */
int weft__ibv_stage_get(struct wib_ctx *ctx, int for_recv);
/* Sends hold half their share of staging slots or more: signal what holds
 * one, since a slot comes back only with a signalled completion after it. */
int weft__ibv_stage_low(const struct wib_ctx *ctx);
void weft__ibv_stage_put(struct wib_ctx *ctx, int slot);

/* ibv_gdr.c: GPU memory */
enum wib_gdr_mode {
    WIB_GDR_OFF = 0,                    /* no CUDA memory announced */
    WIB_GDR_PEERMEM,                    /* registered by address (nvidia-peermem) */
    WIB_GDR_DMABUF                      /* through dma-bufs; by address, where peermem is
                                         * loaded, on devices without dma-buf */
};

struct wib_gdr;                         /* the driver and the cache: ibv_gdr.c */
struct wib_gdr_ent;                     /* a cached dma-buf region of one allocation */

/* Decides ctx->gdr_mode once the devices are open: opens the CUDA driver
 * where WEFT_IB_GDR allows and one is there, and logs one INFO line,
 * "gdr: on: ..." or "gdr: off: <why>". Never fails: without GPU memory
 * support the core stages device buffers through host memory. */
void weft__ibv_gdr_setup(struct wib_ctx *ctx);
/* Deregisters every cached region and closes the driver. */
void weft__ibv_gdr_fini(struct wib_ctx *ctx);
/* The dma-buf region of the CUDA buffer m describes (m->gdr), from the
 * cache or registered. Success with m->gdr NULL: the caller registers it
 * by address (peermem). Else the error, set. */
weft_result_t weft__ibv_gdr_register(struct wib_ctx *ctx, struct wib_mreg *m);
/* m's reference to its region goes; unreferenced regions stay cached
 * while the cache has room. */
void weft__ibv_gdr_release(struct wib_ctx *ctx, struct wib_mreg *m);
struct ibv_mr *weft__ibv_gdr_mr(const struct wib_gdr_ent *e, int dev);
/* cuMemcpy (synchronous; unified addressing tells the directions), with
 * the device's primary context made current where the thread has none.
 * Where no driver is open, memcpy: memory registered as CUDA without GPU
 * memory being announced can only be host memory (unit tests). 0, or -1
 * with the error set. */
int weft__ibv_gdr_copy(struct wib_ctx *ctx, void *dst, const void *src, size_t n);

/* ibv_conn.c: pairs */
int weft__ibv_conn_start(struct wib_ctx *ctx, int peer);
void weft__ibv_conn_knocked(struct wib_ctx *ctx, const struct wib_knock *k);
void weft__ibv_conn_timers(struct wib_ctx *ctx);
void weft__ibv_conn_fail(struct wib_ctx *ctx, int peer, weft_result_t status, const char *why);
void weft__ibv_conn_destroy(struct wib_ctx *ctx, int peer);
/* Posts n zero-length receives on a data QP, or control receive `index`. */
int weft__ibv_post_lane_rx(struct wib_ctx *ctx, struct wib_qpx *q, int n);
int weft__ibv_post_ctl_rx(struct wib_ctx *ctx, struct wib_peer *p, int index);
void weft__ibv_peer_activate(struct wib_ctx *ctx, int peer);

/* ibv_ud.c: knocks */
weft_result_t weft__ibv_ud_setup(struct wib_ctx *ctx);
void weft__ibv_ud_fini(struct wib_ctx *ctx);
int weft__ibv_ud_send(struct wib_ctx *ctx, int peer, int type);
void weft__ibv_ud_recv(struct wib_ctx *ctx, const struct ibv_wc *wc);

/* ibv_post.c: the send queues of QPs */
int weft__ibv_sq_room(const struct wib_qpx *q);
/* Posts wr on q and records rec for it; signalled when the queue needs
 * it or force says so. 0, or the errno of ibv_post_send. */
int weft__ibv_sq_post(struct wib_ctx *ctx, struct wib_qpx *q, struct ibv_send_wr *wr,
                      const struct wib_wr_rec *rec, int force);
/* A zero-length, signalled RDMA write on q to p's control block: the
 * peer's NIC acknowledges it without the peer, and its completion
 * retires every record before it. 0 or an errno (EAGAIN: q is full). */
int weft__ibv_sq_ping(struct wib_ctx *ctx, struct wib_peer *p, struct wib_qpx *q);
/* Makes wr, a control write on p's control QP q of one sge (a CTS entry or
 * the trailer), read from a copy that stays unchanged until the request
 * retires, unless it goes inline. */
void weft__ibv_ctl_source(struct wib_ctx *ctx, struct wib_peer *p, struct wib_qpx *q,
                          struct ibv_send_wr *wr);
/* A signalled completion of q arrived: the records up to the first
 * signalled one are done. failed: q is in error; every record goes, and
 * only the slots they hold are given back (the peer's failure takes care
 * of their owners). */
void weft__ibv_sq_retire(struct wib_ctx *ctx, struct wib_qpx *q, int failed);

/* ibv_send.c: sends and puts */
weft_result_t weft__ibv_isend(void *vctx, int peer, const void *buf, size_t len, uint64_t tag,
                              void *mh, void **out);
weft_result_t weft__ibv_put(void *vctx, int peer, const void *buf, size_t len, void *mh,
                            uint64_t raddr, const void *rkey, size_t rkey_len, void **out);
void weft__ibv_send_cancel(struct tp_ctx *tp, struct tp_req *r);
void weft__ibv_pump(struct wib_ctx *ctx, struct wib_peer *p);
void weft__ibv_cts_arrived(struct wib_ctx *ctx, int peer, int slot);
void weft__ibv_rec_done(struct wib_ctx *ctx, const struct wib_wr_rec *rec, int failed);
/* Fails p's sends with status. departed: the peer left on purpose (its
 * bye), after every receive it finished, so a send whose windows are all
 * posted finishes with its writes' completions instead. */
void weft__ibv_sends_fail(struct wib_ctx *ctx, int peer, weft_result_t status, int departed);
void weft__ibv_credits_return(struct wib_ctx *ctx, struct wib_peer *p, int force);
/* A finalizing rank tells each connected peer it leaves on purpose. */
int weft__ibv_say_bye(struct wib_ctx *ctx, struct wib_peer *p);

/* ibv_recv.c: arrivals */
extern const struct tp_match_ops weft__ibv_msg_ops;
void weft__ibv_ctl_arrived(struct wib_ctx *ctx, struct wib_peer *p, int index, uint32_t len);
void weft__ibv_data_arrived(struct wib_ctx *ctx, int peer, int slot);
void weft__ibv_credit_arrived(struct wib_ctx *ctx, int peer, int bye);
void weft__ibv_flush_done(struct wib_ctx *ctx, struct wib_msg *m);
/* Posts the flushes that waited (for the rank's own pair, a bounce slot
 * or room on its queue). */
void weft__ibv_flush_retry(struct wib_ctx *ctx);
/* At finalize: the receives still waiting for a flush complete without
 * one (no pair is left to give it; the bytes are there) and give their
 * memory handles back, before the regions go. */
void weft__ibv_flush_drop(struct wib_ctx *ctx);
void weft__ibv_windows_pump(struct wib_ctx *ctx, struct wib_peer *p);
void weft__ibv_msgs_fail(struct wib_ctx *ctx, int peer, weft_result_t status);

/* ibv_cq.c: progress and waiting */
weft_result_t weft__ibv_progress(void *vctx);
weft_result_t weft__ibv_get_wait_fd(void *vctx, int *fd);
int64_t weft__ibv_now_ms(void);
void weft__ibv_busy(struct wib_ctx *ctx);

#endif /* WEFT_IB_VERBS_IBV_H */
