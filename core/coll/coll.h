/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * coll.h: the collective engine.
 *
 * An algorithm is a sequence of rounds. Each round posts a batch of sends
 * and receives on the communicator's internal context (tagged with the
 * collective's sequence number and the round, so overlapping nonblocking
 * collectives never mix), and when the batch completes the algorithm's
 * step function does the local work (reductions, copies) and posts the next
 * round, until it reports the operation done. Algorithms never touch a
 * transport; the progress engine drives the rounds through the request
 * they belong to, so blocking calls are post + wait and the weft_i* calls
 * come for free.
 */
#ifndef WEFT_CORE_COLL_H
#define WEFT_CORE_COLL_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#include "weft.h"
#include "core/comm/comm.h"

struct weft__coll;
struct weft__coll_block;

/* Bytes of room inside each collective for its algorithm's state and
 * small buffers (weft__coll_alloc): enough for a small allreduce, so that
 * one allocates nothing. */
#define WEFT__COLL_ROOM 512

/* Called when the previous round (if any) completed: posts the next round
 * with weft__coll_post, or sets *done. */
typedef weft_result_t (*weft__coll_step_fn)(struct weft__coll *c, int *done);

typedef struct weft__coll {
    weft_comm_t comm;            /* the user's communicator */
    weft__coll_step_fn step;
    int round;                   /* rounds posted so far */
    int phase;                   /* the algorithm's own progress */
    uint32_t seq;                /* the collective's number on comm */
    struct weft_request *inner;  /* the current round's batch, or NULL */
    struct weft__coll *child;    /* a collective run as one step of this one */
    /* The group the algorithm runs over: gsize members, this rank member
     * grank; member i is rank members[i] of comm (members NULL: the whole
     * communicator in its own order). Algorithms address peers by member
     * index; weft__coll_post maps them. A collective inherits its
     * parent's group unless the parent gave it a subgroup. */
    int gsize, grank;
    const int *members;
    weft_result_t result;
    int polling;                 /* a thread is in weft__coll_poll (atomic) */
    pthread_t owner;             /* the thread that started it */
    int kind;                    /* weft__coll_kind_t of a started collective */
    /* A started top-level collective is on its instance's list of
     * collectives in flight (inst->colls) until freed. */
    struct weft__coll *next_live, *prev_live;
    int live;
    int finished;                /* the step said done: never step again */
    /* Arguments and working state of the algorithm. */
    const void *sendbuf;
    void *recvbuf;
    size_t count, esize;
    weft_dtype_t dt;
    weft_op_t op;
    int root;
    void *tmp;                   /* malloc'd scratch, freed with the collective */
    size_t *offs;                /* block offsets (elements), size + 1 entries */
    /* The v-forms' counts and displacements (elements, size entries each),
     * copied from the caller into vec so they need not outlive the call. */
    const size_t *scounts, *sdispls, *rcounts, *rdispls;
    size_t *vec;                 /* from weft__coll_scratch */
    void *premul_input;          /* the input scaled for PREMUL_SUM */
    /* Composite forms (coll_compose.c) keep their state here. */
    void *ctx;
    void (*ctx_free)(void *ctx);
    /* What weft__coll_alloc handed out: bytes of room used, and the blocks
     * it took from the heap once the room was full. */
    size_t room_used;
    struct weft__coll_block *blocks;
    /* The shared algorithms (coll/shared/small.c): the generation on the
     * communicator's segment (0 once retired), whether the step waits on
     * the segment
     * (call it again) and for which rank (-1: an earlier collective),
     * and whether it counts in inst->shared_inflight. */
    uint32_t shared_gen;
    int again, wait_rank, shared_counted;
    /* A pipelined one's (coll/shared/pipelined.c) step, elements of a part
     * and steps in all, the last two worked out once, and whether it
     * writes its output with streaming stores (copy_stream.h). */
    uint32_t pipe_step;
    size_t pipe_part, pipe_steps;
    int pipe_stream;
    /* Everything above is cleared for each collective; what follows is
     * not (a cached collective would clear a kilobyte otherwise). */
    char why[256];               /* what failed, for the wait to report */
    _Alignas(16) unsigned char room[WEFT__COLL_ROOM];
} weft__coll_t;

/* A collective with its arguments filled in (NULL: out of memory, with the
 * error set). The algorithm setter below then chooses its steps. */
weft__coll_t *weft__coll_new(const void *sendbuf, void *recvbuf, size_t count, size_t esize,
                             weft_dtype_t dt, weft_op_t op, int root);
/* bytes of zeroed memory (weft__coll_alloc) or of scratch that need not
 * be cleared (weft__coll_scratch), 16-byte aligned and freed with c: from
 * c's room while it lasts, from the heap after. NULL: out of memory, with
 * the error set. */
void *weft__coll_alloc(weft__coll_t *c, size_t bytes);
void *weft__coll_scratch(weft__coll_t *c, size_t bytes);
/* Frees the calling thread's spare collectives (at finalize and thread
 * exit; see weft__request_cache_drain). */
void weft__coll_cache_drain(void);
/* Copies the v-form arrays given (NULL: not used) into c->vec. */
weft_result_t weft__coll_set_vectors(weft__coll_t *c, int n, const size_t *scounts,
                                     const size_t *sdispls, const size_t *rcounts,
                                     const size_t *rdispls);

/* c->offs[0..n]: where each of the n blocks of c->rcounts starts in a
 * reduce-scatter's input, and the total at [n]. */
weft_result_t weft__coll_block_offsets(weft__coll_t *c, int n);

/* Runs c over a subgroup of its parent's communicator: n members, this
 * rank member me (members must outlive c). */
void weft__coll_set_group(weft__coll_t *c, int n, int me, const int *members);

/* Posts one round: n operations, peers as member indices of c's group;
 * an op's tag is its lane (0 for most algorithms; see coll.c). */
#define WEFT__COLL_LANES 4
weft_result_t weft__coll_post(weft__coll_t *c, int n, const weft_p2p_op_t *ops);
/* Runs child as the next step of c, on c's communicator and sequence
 * number (it talks to the same peers in the same order, so its messages
 * cannot be confused with c's); c's step runs again when it finished. */
weft_result_t weft__coll_run_child(weft__coll_t *c, weft__coll_t *child);
/* Advances c: reaps its round, runs steps; *done when finished. */
weft_result_t weft__coll_poll(weft__coll_t *c, int *done);
/* Advances every collective in flight on inst that the calling thread
 * started (a communicator is used by one thread at a time, so another
 * thread's collectives are its own to advance); skipped when an enclosing
 * call is already at it. */
void weft__coll_progress_all(weft__instance_t *inst);
/* "allreduce, waiting to receive from rank 3": for timeout messages. */
void weft__coll_describe(const weft__coll_t *c, char *buf, size_t cap);
/* Fails c with rc: the round in flight is cancelled, no further one starts. */
void weft__coll_cancel(weft__coll_t *c, weft_result_t rc);
void weft__coll_free(weft__coll_t *c);

/* What a collective is, for the cross-rank argument check (WEFT_CHECK). */
typedef enum weft__coll_kind {
    WEFT__COLL_BARRIER, WEFT__COLL_BCAST, WEFT__COLL_REDUCE, WEFT__COLL_ALLREDUCE,
    WEFT__COLL_REDUCE_SCATTER, WEFT__COLL_SCAN, WEFT__COLL_EXSCAN, WEFT__COLL_GATHER,
    WEFT__COLL_SCATTER, WEFT__COLL_ALLGATHER, WEFT__COLL_ALLTOALL, WEFT__COLL_GATHER_AXIS,
    WEFT__COLL_ALLGATHER_AXIS, WEFT__COLL_SCATTER_AXIS, WEFT__COLL_REDUCE_SCATTER_AXIS,
    WEFT__COLL_ALLTOALL_AXIS, WEFT__COLL_BCAST_BYTES, WEFT__COLL_ALLGATHER_BYTES,
    WEFT__COLL_NKINDS
} weft__coll_kind_t;

extern const char *const weft__coll_kind_names[WEFT__COLL_NKINDS];

/* Starts a collective of the given kind: a request whose progress is c's.
 * With WEFT_CHECK=1 the ranks first compare their arguments
 * (coll_check.c). Frees c on failure. Given WEFT__COLL_BLOCKING for req,
 * runs c to its end on the calling thread instead and returns its result
 * (what the blocking entry points do): no request and no place on the
 * list of collectives in flight, whose locks and allocations were a third
 * of a small collective's time. */
weft_result_t weft__coll_start(weft_comm_t comm, weft__coll_t *c, weft__coll_kind_t kind,
                               weft_request_t *req);
extern weft_request_t weft__coll_blocking_marker;
#define WEFT__COLL_BLOCKING (&weft__coll_blocking_marker)
/* Whether WEFT_CHECK=1; if so, wraps c in the check that runs first and
 * returns the wrapper (NULL: out of memory, c freed). */
int weft__coll_check_enabled(void);
weft__coll_t *weft__coll_checked(weft__coll_t *c, weft__coll_kind_t kind);

/* Algorithms: each sets c->step. Rooted and v-forms read their arguments
 * from c (root, scounts/sdispls/rcounts/rdispls). */
void weft__barrier_dissemination(weft__coll_t *c);     /* coll/algo/barrier.c */
void weft__bcast_binomial(weft__coll_t *c);            /* coll/algo/tree.c */
void weft__reduce_binomial(weft__coll_t *c);
void weft__allreduce_ring(weft__coll_t *c);            /* coll/algo/ring.c */
void weft__reduce_scatterv_ring(weft__coll_t *c);
void weft__allgatherv_ring(weft__coll_t *c);
void weft__gatherv_linear(weft__coll_t *c);            /* coll/algo/linear.c */
void weft__scatterv_linear(weft__coll_t *c);
void weft__alltoallv_pairwise(weft__coll_t *c);
void weft__alltoallv_scattered(weft__coll_t *c);
void weft__scan_recursive_doubling(weft__coll_t *c, int exclusive); /* coll/algo/scan.c */
void weft__allreduce_rd(weft__coll_t *c);              /* coll/algo/rd.c: small messages */
void weft__reduce_scatterv_rd(weft__coll_t *c);
void weft__allreduce_rabenseifner(weft__coll_t *c);    /* coll/algo/rabenseifner.c */
void weft__allgather_bruck(weft__coll_t *c);           /* coll/algo/bruck.c: even counts */
void weft__allreduce_hier(weft__coll_t *c);            /* coll/algo/hier.c: node-aware */
void weft__bcast_hier(weft__coll_t *c);
void weft__reduce_hier(weft__coll_t *c);
void weft__barrier_hier(weft__coll_t *c);
void weft__allgather_hier(weft__coll_t *c);            /* consecutive nodes, even counts */
void weft__allreduce_tree(weft__coll_t *c);            /* coll/algo/dbtree.c: pipelined trees */
void weft__allreduce_dbtree(weft__coll_t *c);
/* Rank's place in tree 0 or 1 of the double binary tree over n ranks:
 * *parent (-1 at the root) and the children (two at most), returning how
 * many. For tests. */
int weft__dbtree_shape(int n, int rank, int tree, int *parent, int *children);
void weft__allreduce_direct(weft__coll_t *c);          /* coll/algo/direct.c: tiny messages */
void weft__bcast_chain(weft__coll_t *c);               /* coll/algo/chain.c: pipelined chain */
void weft__bcast_scatter_allgather(weft__coll_t *c);   /* coll/algo/twophase.c: large messages */
void weft__reduce_ring_gather(weft__coll_t *c);
void weft__allgatherv_rd(weft__coll_t *c);             /* coll/algo/rd_allgather.c */
void weft__reduce_scatterv_pairwise(weft__coll_t *c);  /* coll/algo/pairwise.c */
void weft__alltoall_bruck(weft__coll_t *c);            /* coll/algo/bruck.c: even counts */
void weft__gather_binomial(weft__coll_t *c);           /* coll/algo/binomial.c: even counts */
void weft__scatter_binomial(weft__coll_t *c);
void weft__scan_rd(weft__coll_t *c);                   /* coll/algo/scan.c */
void weft__exscan_rd(weft__coll_t *c);
/* coll/shared/small.c: through the node-shared segment, on communicators that
 * weft__shared_usable accepts, for payloads up to WEFT__SHARED_SLOT. */
void weft__barrier_shared(weft__coll_t *c);
void weft__bcast_shared(weft__coll_t *c);
void weft__reduce_shared(weft__coll_t *c);
void weft__allreduce_shared(weft__coll_t *c);
void weft__reduce_scatter_shared(weft__coll_t *c);
void weft__allgather_shared(weft__coll_t *c);             /* even counts */
void weft__alltoall_shared(weft__coll_t *c);              /* even counts */
/* coll/shared/pipelined.c: the same segment, any size, in steps. */
void weft__allreduce_shared_pipelined(weft__coll_t *c);
void weft__reduce_scatter_shared_pipelined(weft__coll_t *c);
void weft__allgather_shared_pipelined(weft__coll_t *c);   /* even counts */
void weft__alltoall_shared_pipelined(weft__coll_t *c);    /* even counts */
void weft__bcast_shared_pipelined(weft__coll_t *c);
/* Drops c from inst->shared_inflight (finished or freed). */
void weft__coll_shared_uncount(weft__coll_t *c);
/* A shared collective freed before it finished gives its generation up
 * (coll/shared/segment.h). */
void weft__coll_shared_abandon(weft__coll_t *c);
/* A shared collective that will not run (its WEFT_CHECK comparison
 * failed) hands its generation back, if no later one was given out. */
void weft__coll_shared_withdraw(weft__coll_t *c);

/* An entry of tune/select.c's table of algorithms. */
typedef struct weft__coll_algo {
    weft__coll_kind_t kind;
    const char *op_name;      /* as written in WEFT_ALGO */
    const char *name;
    void (*set)(weft__coll_t *c);
    int hierarchical;
    int needs;                /* WEFT__ALGO_NEEDS_*: what it needs of a call */
} weft__coll_algo_t;

/* What an algorithm needs of a call besides its kind. A tuner decision can
 * never be wrong, only slow: an entry is offered only where it can run. */
enum {
    WEFT__ALGO_NEEDS_EVEN = 1 << 0,        /* equal blocks in rank order (even forms) */
    WEFT__ALGO_NEEDS_NODES_CONTIG = 1 << 1, /* each node's ranks consecutive */
    /* a communicator on one node with a shared segment
     * (weft__shared_usable), and at most WEFT__SHARED_SLOT bytes */
    WEFT__ALGO_NEEDS_SHARED = 1 << 2,
    /* the same segment, any size, at most WEFT__SHARED_PIPE_RANKS ranks */
    WEFT__ALGO_NEEDS_SEGMENT = 1 << 3
};

/* The table (n entries), grouped by operation, flat algorithms first. */
const weft__coll_algo_t *weft__coll_algos(size_t *n);
/* Whether a may run a call of bytes (as weft__coll_choose counts them) on
 * a communicator of shape s (tune.h) with equal blocks on every rank
 * (even). */
struct weft__tune_shape;
int weft__coll_algo_applies(const weft__coll_algo_t *a, const struct weft__tune_shape *s,
                            int even, size_t bytes);

/* Chooses and sets the algorithm of a collective of kind moving bytes per
 * rank (tune/select.c); even: every rank's block has the same size, at
 * rank-order displacements, and every rank knows it (the even forms of
 * the rooted and all-to-all calls). For kinds without a choice it does
 * nothing. */
void weft__coll_choose(weft__coll_t *c, weft_comm_t comm, weft__coll_kind_t kind, size_t bytes,
                       int even);
/* The flat allreduce the tuner predicts fastest among comm's node leaders
 * for this many bytes (the node-aware allreduce's inner phase). */
void weft__allreduce_flat(weft__coll_t *c, weft_comm_t comm, size_t bytes);
/* Parses WEFT_ALGO (NULL: none); WEFT_ERR_INVALID_ARG names what is wrong
 * and lists the valid choices. */
weft_result_t weft__coll_algo_parse(const char *spec);

/* Reads WEFT_COLL_CHUNK, WEFT_ALLTOALL_THROTTLE, WEFT_STREAM_THRESHOLD and
 * WEFT_SPIN_US (at weft_init, as WEFT_ALGO); a malformed value is
 * WEFT_ERR_INVALID_ARG naming the variable. Until then, and where unset,
 * the defaults hold. */
weft_result_t weft__coll_settings_parse(void);
/* Pipelining: ring steps move their blocks in chunks of this many bytes
 * (WEFT_COLL_CHUNK), so that reducing one chunk overlaps receiving the
 * next. */
size_t weft__coll_chunk_bytes(void);
/* Peers whose exchanges a round of the scattered all-to-all posts at once
 * (WEFT_ALLTOALL_THROTTLE; 0: all of them). */
int weft__coll_alltoall_window(void);
/* Bytes of output, over the ranks of a node together, above which the
 * pipelined shared collectives write their output with streaming stores
 * (WEFT_STREAM_THRESHOLD; unset: llc_size, the node's last-level cache,
 * or 32 MiB when that is unknown). */
unsigned long long weft__coll_stream_threshold(unsigned long long llc_size);
/* The same without WEFT_STREAM_THRESHOLD: what the tuner assumes, so that
 * ranks that set the variable differently still choose alike. */
unsigned long long weft__coll_stream_default(unsigned long long llc_size);
/* Microseconds a wait spins before it sleeps (WEFT_SPIN_US), -1 where
 * unset: then progress.c chooses by how crowded the node's cores are. */
long long weft__coll_spin_us(void);

#endif /* WEFT_CORE_COLL_H */
