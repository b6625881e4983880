/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * shm.h: internals of the shared-memory transport, shared by its files.
 *
 * Design
 *   Every rank owns one POSIX shared-memory segment, created 0600 at its
 *   first connect() and named /weft-shm-<job>-<rank>-<pid>. It holds the
 *   rings this rank receives on, so they sit on its own NUMA node. A local
 *   peer attaches by claiming a slot of the segment: a single-producer,
 *   single-consumer byte ring (shm_ring.h) on which only that peer writes
 *   and only the owner reads. Once every local peer has attached, the owner
 *   unlinks the name: nothing stays in /dev/shm even after a kill -9, and a
 *   segment left behind by a rank killed earlier than that is removed by
 *   the next job on the node (the name carries the creator's pid).
 *
 *   A ring carries records: a header (shm_rec) and its payload. Messages up
 *   to one fragment travel whole (EAGER); longer ones either as fragments
 *   copied in by the sender and out by the receiver (START, then DATA, in a
 *   pipeline as the ring drains), or, when the receiver may read the
 *   sender's memory (cross memory attach, probed at connect) and that is
 *   faster than the ring on this machine (measured at init), as a request
 *   to send (RTS) that the receiver answers by reading the buffer itself
 *   with process_vm_readv and sending FIN back. The receiver reads an RTS
 *   as soon as it arrives, into the matched buffer or an unexpected one,
 *   so a send completes whether or not a receive is posted, as with
 *   sockets. A ring is in send order, which gives per-peer ordering;
 *   records are matched in arrival order.
 *
 *   Sleeping: the owner raises `waiting` in its header before the core
 *   polls the wait descriptor; a producer that writes to a ring of a
 *   sleeping owner wakes it through a FIFO next to the segment. A producer
 *   that finds a ring full raises the ring's `producer_blocked`, and the
 *   consumer wakes it once it made room. Both pairs use a full barrier on
 *   each side (store, fence, load), so one of the two always sees the other.
 *
 *   Peers' deaths are seen through pidfds (also in the wait descriptor); a
 *   peer that finalizes writes BYE first, so that its death is a departure,
 *   not a loss, as with sockets.
 *
 * Ownership: a context owns everything below; no state is global. The core
 * serialises calls into a context, so nothing here locks; the only
 * concurrency is with other processes, through the atomics of the shared
 * structures.
 */
#ifndef WEFT_SHM_H
#define WEFT_SHM_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "weft/transport.h"
#include "plugins/common/tp.h"
#include "plugins/shm/shm_ring.h"

#define SHM_NAME "shm"
#define SHM_ADDR_MAGIC 0x5753484du        /* "WSHM": address blob */
#define SHM_SEG_MAGIC 0x7765667473686d31ull /* written last when a segment is ready */
/* 2: the address carries the GPUs a rank sees (struct shm_addr); 3: an
 * RTS_IPC may name a VMM allocation (struct shm_ipc_rts). */
#define SHM_VERSION 3u
#define SHM_HOST_MAX 128
#define SHM_NAME_MAX 128
/* Local ranks that can attach to one segment. Slots cost address space
 * only: the segment is sparse and a slot's pages are touched by its user. */
#define SHM_MAX_SLOTS 256
#define SHM_PAGE 4096u
/* 1 MiB: its quarter, the largest record, then holds a whole chunk of a
 * pipelined collective (WEFT_COLL_CHUNK, 256 KiB), so a chunk crosses in
 * one copy in and one out without the sender waiting for room: at 256 KiB
 * the 2-rank 16 MiB allreduce took 1.7 times as long. The ring's pages are
 * touched only as far as a peer's traffic reaches. */
#define SHM_DEFAULT_RING (1u << 20)
#define SHM_MIN_RING (4u << 10)
/* Unexpected messages' buffers kept for reuse, at most this many and this
 * many bytes in all: above glibc's 128 KiB mmap threshold each fresh one
 * costs an mmap, its page faults and a munmap, and below it the heap is
 * trimmed and grown again (a broadcast at 2 ranks, the root running ahead:
 * 42 us at 128 KiB, 301 us at 2 MiB, against 9.6 and 72 us with buffers
 * never returned to the system). */
#define SHM_UBUF_SPARE_MAX 64
#define SHM_UBUF_KEEP_MAX (64u << 20)
/* A message of at most this many bytes waits inside its shm_msg, which is
 * kept for reuse (up to SHM_MSG_SPARE_MAX of them): a small unexpected
 * message then costs no allocation, where looking for the best-fitting
 * spare buffer and handing it back scanned the 64 spares twice (a third
 * of the receiver's time in an 8-byte broadcast). */
#define SHM_MSG_INLINE 128
#define SHM_MSG_SPARE_MAX 64
#define SHM_MAX_RING (64u << 20)
#define SHM_DEFAULT_CMA_THRESHOLD (32u << 10)
/* Bytes one incoming ring may deliver per progress() call, so that a big
 * message does not starve the other peers. */
#define SHM_DRAIN_BUDGET (4u << 20)
/* GPUs whose UUIDs an address carries: the test double's most. */
#define SHM_GPU_MAX 16
#define SHM_IPC_HANDLE 64               /* CU_IPC_HANDLE_SIZE */

enum shm_rec_type {
    SHM_REC_EAGER = 1,                  /* a whole message */
    SHM_REC_START,                      /* first fragment, total > len */
    SHM_REC_DATA,                       /* next fragment of the current message */
    SHM_REC_RTS,                        /* read total bytes at addr, then FIN id */
    SHM_REC_FIN,                        /* the RTS id was read */
    SHM_REC_BYE,                        /* the sender finalized */
    SHM_REC_RTS_IPC                     /* an RTS of device memory: a struct
                                         * shm_ipc_rts follows; FIN id */
};

/* Bytes of the name of a sender's VMM descriptor server (WCU_FDS_NAME). */
#define SHM_IPC_SOCK 64

/* What a receiver needs to map a sender's device buffer (CUDA IPC). */
struct shm_ipc_rts {
    uint32_t vmm;                       /* 0: legacy IPC, handle; 1: a VMM allocation, whose
                                         * descriptor the server sock hands out */
    uint32_t pad;
    unsigned char handle[SHM_IPC_HANDLE]; /* CUipcMemHandle of the allocation */
    char sock[SHM_IPC_SOCK];            /* NUL-terminated */
    uint64_t base;                      /* the allocation's address at the sender */
    uint64_t size;                      /* and its size */
    uint64_t offset;                    /* of the message in it */
    uint64_t buffer_id;                 /* CUDA's id of the allocation */
    unsigned char uuid[16];             /* the sender's GPU */
};

/* A record header in a ring; len payload bytes follow. */
struct shm_rec {
    uint32_t type;
    uint32_t len;
    uint64_t tag;
    uint64_t total;
    uint64_t addr;
    uint64_t id;
};

/* The published address (get_address). */
struct shm_addr {
    uint32_t magic;
    uint16_t version;
    uint16_t reserved;
    uint32_t pid;
    uint32_t uid;
    uint64_t probe_addr;                /* where probe_value lives in that process */
    uint64_t probe_value;
    char host[SHM_HOST_MAX];            /* equal on ranks of one node */
    uint32_t cuda_ipc;                  /* it opens CUDA IPC handles */
    uint32_t ngpus;                     /* entries of gpu_uuid */
    unsigned char gpu_uuid[SHM_GPU_MAX][16]; /* cuDeviceGetUuid of what it sees */
};

/* The head of a segment. The owner writes the first block once; the
 * atomics below are on lines of their own. */
struct shm_seg_hdr {
    uint64_t magic;                     /* SHM_SEG_MAGIC once usable */
    uint32_t version;
    uint32_t owner_rank;
    uint32_t owner_pid;
    uint32_t nslots;
    uint64_t ring_size;
    uint64_t slot_stride;
    SHM_LINE(uint32_t nclaimed);        /* slots handed out, may exceed nslots */
    SHM_LINE(uint32_t attached);        /* peers that finished attaching */
    SHM_LINE(uint32_t waiting);         /* the owner sleeps: wake it */
};

/* What a slot says besides its ring: who writes to it and what they can do. */
struct shm_slot_info {
    uint32_t ready;                     /* the fields below are set */
    int32_t sender;                     /* world rank of the producer */
    uint32_t sender_can_read_owner;     /* CMA works from the sender to the owner */
};

/* A slot is one page of control followed by the ring's bytes. */
struct shm_slot {
    struct shm_ring_ctl ctl;
    SHM_LINE(struct shm_slot_info info);
};

/* A request: the common head (plugins/common/tp_req.h), then what a send
 * needs. */
struct shm_req {
    TP_REQ_HEAD;                        /* first (plugins/common/tp_req.h) */
    int rts;                            /* goes by cross memory attach */
    int ipc;                            /* goes as an RTS_IPC (rts is 1 too) */
    int started;                        /* its first record is in the ring */
    size_t pushed;                      /* payload bytes in the ring */
    uint64_t id;                        /* of its RTS */
};

/* A message from a peer that arrived before its receive, or is arriving
 * in fragments: the common head (plugins/common/tp_match.h), whose qnext
 * also links the spares, then where its bytes wait until a receive
 * matches. */
struct shm_msg {
    TP_MSG_HEAD;                        /* first (plugins/common/tp_match.h) */
    unsigned ubuf_inline : 1;           /* ubuf is inline_data */
    unsigned char *ubuf;                /* bytes before a receive matched */
    size_t ucap;                        /* ubuf's size (it may be a reused one) */
    /* Not cleared on reuse: only ever read after being written. */
    _Alignas(16) unsigned char inline_data[SHM_MSG_INLINE];
};

struct shm_peer {
    struct shm_addr addr;
    int known;                          /* connect() called */
    int local;                          /* index in ctx->locals */
    int lost;                           /* died without BYE */
    int departed;                       /* BYE seen */
    int pidfd;                          /* -1: liveness through kill(pid, 0) */
    /* sending: the ring in the peer's segment */
    void *map;                          /* peer's header page and our slot */
    size_t map_len;
    struct shm_seg_hdr *hdr;
    struct shm_slot *slot;
    struct shm_ring out;
    int wake_fd;                        /* the peer's FIFO, write end */
    int cma_send;                       /* the peer may read our memory */
    struct tp_req_queue sq;             /* sends not wholly in the ring, in order */
    struct tp_req_queue rts;            /* RTS sent, FIN awaited, in order */
    uint64_t next_rts_id, fins_owed, next_fin_id;
    int blocked;                        /* we raised producer_blocked */
    /* receiving: our slot of its choice in our segment */
    struct shm_slot *in_slot;
    struct shm_ring in;
    int has_in;
    struct shm_msg *cur;                /* message whose fragments are arriving */
};

struct shm_ctx {
    TP_CTX_HEAD;                        /* first (plugins/common/tp.h) */
    size_t ring_size;
    size_t frag;                        /* largest payload of one record */
    size_t cma_threshold;
    int cma_mode;                       /* 0 off, 1 where permitted */
    int block;                          /* 0: never sleep (spin-only, for benchmarks) */
    int timeout_ms;
    int cuda_param;                     /* WEFT_SHM_CUDA_IPC */
    struct shm_addr self;
    uint64_t probe_value;
    /* our segment */
    int created;
    int unlinked;
    char seg_name[SHM_NAME_MAX];        /* for shm_open: "/weft-shm-..." */
    char fifo_path[SHM_NAME_MAX + 16];
    void *seg;
    size_t seg_len;
    struct shm_seg_hdr *hdr;
    uint32_t slots_seen;
    int fifo_fd;                        /* O_RDWR: never sees EOF */
    int epfd;                           /* fifo + pidfds: the wait descriptor */
    int spin_fd;                        /* always readable, for block = 0 */
    int armed;                          /* we raised hdr->waiting */
    unsigned ticks;
    int64_t next_check_ms;
    /* peers */
    struct shm_peer *peers;
    int *locals;                        /* connected peers, self included */
    int nlocals;
    int npeers_expected;                /* connected peers other than self */
    /* unexpected messages' buffers, kept for reuse (shm_msg.c) */
    unsigned char *spare_ubuf[SHM_UBUF_SPARE_MAX];
    size_t spare_ucap[SHM_UBUF_SPARE_MAX];
    int nspare_ubufs;
    size_t spare_ubytes;                /* their sizes summed */
    struct shm_msg *spare_msgs;         /* freed messages kept for reuse */
    int nspare_msgs;
    int finalizing;                     /* messages and buffers are freed, not kept */
    struct shm_cuda *cuda;              /* the driver; NULL: host memory only */
};

/* shm_host.c: the node's identity, as topo/hostid.c computes it */
void weft__shm_host_id(const weft_transport_core_t *core, char *buf, size_t cap);

/* shm_seg.c: our segment, peers' segments, stale ones */
weft_result_t weft__shm_seg_create(struct shm_ctx *ctx);
void weft__shm_seg_unlink(struct shm_ctx *ctx);
void weft__shm_seg_wait_attached(struct shm_ctx *ctx);
void weft__shm_seg_destroy(struct shm_ctx *ctx);
weft_result_t weft__shm_seg_attach(struct shm_ctx *ctx, int peer);
void weft__shm_seg_detach(struct shm_peer *p);
void weft__shm_seg_discover(struct shm_ctx *ctx);
void weft__shm_remove_stale(struct shm_ctx *ctx);
void weft__shm_seg_name(char *buf, size_t cap, const char *job, int rank, unsigned pid);

/* shm_cma.c: cross memory attach */
int weft__shm_cma_probe(struct shm_ctx *ctx, const struct shm_addr *peer);
int weft__shm_cma_worth(struct shm_ctx *ctx);
int weft__shm_cma_read(struct shm_ctx *ctx, int peer, void *dst, uint64_t src, size_t len);

/* shm_cuda.c, or shm_cuda_none.c where weft is built without CUDA:
 * device buffers. A registered device buffer's handle (mh) is non-NULL;
 * host memory, page-locked host memory included, registers as NULL, so
 * that host traffic never looks at the driver. */
/* Opens the driver unless on is 0 and fills ctx->self's GPU fields. Never
 * fails: without a driver shm carries host memory only, said once at
 * INFO. */
void weft__shm_cuda_setup(struct shm_ctx *ctx, int on);
/* 1 when device memory is to be announced (IPC works on a device). */
int weft__shm_cuda_announce(const struct shm_ctx *ctx);
weft_result_t weft__shm_mem_register(void *vctx, void *buf, size_t len, int mem_type,
                                     void **mh);
weft_result_t weft__shm_mem_deregister(void *vctx, void *mh);
/* An shm_copy_fn (arg: the context): cuMemcpy, which takes host and
 * device addresses alike. 0, or -1 with the error set. */
int weft__shm_cuda_copy(void *vctx, void *dst, const void *src, size_t n);
/* 1 when buf, of device handle mh, may go to peer as an RTS_IPC, which
 * *rts (unless NULL) then describes. */
int weft__shm_cuda_ipc_rts(struct shm_ctx *ctx, int peer, const void *mh, const void *buf,
                           struct shm_ipc_rts *rts);
/* Copies n bytes of the buffer rts describes, sent by peer, to dst (host
 * or device): 0, or -1 with the error set. */
int weft__shm_cuda_ipc_read(struct shm_ctx *ctx, int peer, const struct shm_ipc_rts *rts,
                            void *dst, size_t n);
/* Closes what was mapped of peer's memory. */
void weft__shm_cuda_forget_peer(struct shm_ctx *ctx, int peer);
/* Logs the counters at INFO and closes everything. */
void weft__shm_cuda_fini(struct shm_ctx *ctx);

/* shm_msg.c: where messages' bytes wait, for the common matcher */
extern const struct tp_match_ops weft__shm_msg_ops;
struct shm_msg *weft__shm_msg_arrive(struct shm_ctx *ctx, int peer, uint64_t tag,
                                     size_t total);
unsigned char *weft__shm_msg_dest(struct shm_msg *m, size_t *cap);
void weft__shm_msg_add(struct shm_ctx *ctx, struct shm_msg *m, size_t len);
void weft__shm_msgs_free(struct shm_ctx *ctx);
void weft__shm_spares_free(struct shm_ctx *ctx);

/* shm_send.c: send queues */
weft_result_t weft__shm_isend(void *vctx, int peer, const void *buf, size_t len,
                              uint64_t tag, void *mh, void **out);
void weft__shm_pump(struct shm_ctx *ctx, int peer);
int weft__shm_pump_ready(struct shm_ctx *ctx, int peer);
void weft__shm_sends_fail(struct shm_ctx *ctx, int peer, weft_result_t status);
void weft__shm_send_cancel(struct tp_ctx *tp, struct tp_req *r);
void weft__shm_fin_arrived(struct shm_ctx *ctx, int peer, uint64_t id);
void weft__shm_say_goodbye(struct shm_ctx *ctx);
void weft__shm_wake(struct shm_ctx *ctx, int peer);

/* shm_recv.c: draining the incoming rings */
void weft__shm_drain(struct shm_ctx *ctx, int peer, size_t budget);

/* shm_progress.c: progress, peers' fate, sleeping */
void weft__shm_fail_current(struct shm_ctx *ctx, int peer, weft_result_t status);
void weft__shm_peer_lost(struct shm_ctx *ctx, int peer, const char *why);
void weft__shm_peer_departed(struct shm_ctx *ctx, int peer);
void weft__shm_check_peers(struct shm_ctx *ctx);
weft_result_t weft__shm_progress(void *vctx);
weft_result_t weft__shm_get_wait_fd(void *vctx, int *fd);

#endif /* WEFT_SHM_H */
