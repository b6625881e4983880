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
#include "core/progress/request.h"

struct weft__coll;
struct weft__coll_block;

/* Bytes of room inside each collective for its algorithm's state and
 * small buffers (weft__coll_alloc): enough for a small allreduce, so that
 * one allocates nothing. */
#define WEFT__COLL_ROOM 512

/* Called when the previous round (if any) completed: posts the next round
 * with weft__coll_post, or sets *done. */
typedef weft_result_t (*weft__coll_step_fn)(struct weft__coll *c, int *done);

/* What a collective whose steps wait on something other than a round
 * (coll/shared: counters in the node's shared segment) tells the engine,
 * which knows nothing of it: such a step sets c->again and leaves no
 * round behind, and the engine asks these how to wait and what to undo. */
typedef struct weft__coll_waits {
    /* The rank is about to sleep waiting on it (on = 1), or woke (0). */
    void (*sleeping)(struct weft__coll *c, int on);
    /* What it waits for, appended to a timeout's message. */
    void (*describe)(const struct weft__coll *c, char *buf, size_t cap);
    /* Undoes what the collective holds when it is freed, finished or not. */
    void (*release)(struct weft__coll *c);
} weft__coll_waits_t;

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
    /* A started top-level collective is on its engine's list of
     * collectives in flight (inst->coll) until freed. */
    struct weft__coll *next_live, *prev_live;
    int live;
    int finished;                /* the step said done: never step again */
    /* A message of one of its rounds (or a child's) was not as long as
     * its receive: the ranks passed different counts. The first one seen,
     * reported as WEFT_ERR_MISMATCH once the collective has run its course
     * (stopping at once would leave the other ranks waiting on this one). */
    int mismatch, mismatch_peer;
    size_t mismatch_got, mismatch_want;
    /* Set by a step that waits on something other than a round: call it
     * again (waits says how to wait). */
    int again;
    const weft__coll_waits_t *waits;
    /* A node-aware allreduce's algorithm between the nodes' leaders, as
     * the tuner chose it (NULL: ring). */
    void (*leaders_algo)(struct weft__coll *c);
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
    /* Composite forms (the WEFT_CHECK wrapper) keep their state here. */
    void *ctx;
    void (*ctx_free)(void *ctx);
    /* What weft__coll_alloc handed out: bytes of room used, and the blocks
     * it took from the heap once the room was full. */
    size_t room_used;
    struct weft__coll_block *blocks;
    /* coll/shared's state, read by nothing else: the generation on the
     * communicator's segment (0 once retired), the rank the step waits
     * for (-1: an earlier collective), and whether it counts in
     * inst->unrung_inflight. */
    uint32_t shared_gen;
    int wait_rank, shared_counted;
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
/* "weft_allreduce, waiting to receive from rank 3,": for timeout messages. */
void weft__coll_describe(const weft__coll_t *c, char *buf, size_t cap);
/* Fails c with rc: the round in flight is cancelled, no further one starts. */
void weft__coll_cancel(weft__coll_t *c, weft_result_t rc);
/* Records that peer's part of c was got bytes long where c expected want
 * (the first such only); c fails with WEFT_ERR_MISMATCH naming them once
 * it has run its course. */
void weft__coll_note_mismatch(weft__coll_t *c, int peer, size_t got, size_t want);
void weft__coll_free(weft__coll_t *c);

/* What a collective is, for messages and the cross-rank argument check
 * (WEFT_CHECK). */
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
 * Frees c on failure. Given WEFT__COLL_BLOCKING for req, runs c to its end
 * on the calling thread instead and returns its result (what the blocking
 * entry points do): no request and no place on the list of collectives in
 * flight, whose locks and allocations were a third of a small
 * collective's time. */
weft_result_t weft__coll_start(weft_comm_t comm, weft__coll_t *c, weft__coll_kind_t kind,
                               weft_request_t *req);
extern weft_request_t weft__coll_blocking_marker;
#define WEFT__COLL_BLOCKING (&weft__coll_blocking_marker)
/* weft__coll_start_empty's request: complete already, or NULL without
 * memory for one (which waits and tests also take as complete). */
void weft__coll_empty_request(weft_comm_t comm, weft_request_t *req);

/* For a call that moves nothing: counts in comm's sequence of collectives
 * as if it ran, and gives a request that is complete already unless
 * blocking. Inline: such a call costs little more than its checks (a
 * count-0 collective at 4 ranks takes 7 ns, and a call more was 2 of
 * them). */
static inline void weft__coll_start_empty(weft_comm_t comm, weft_request_t *req)
{
    comm->coll_seq++;
    if (req != WEFT__COLL_BLOCKING)
        weft__coll_empty_request(comm, req);
}

/* The engine of an instance: its list of collectives in flight, which
 * every wait advances through a progress hook (a rank waiting on one
 * collective must keep the others it started moving, or two ranks
 * waiting on different ones would wait for each other). Set up at
 * weft_init, before the instance is shared; freed with it. */
weft_result_t weft__coll_engine_init(weft__instance_t *inst);
void weft__coll_engine_fini(weft__instance_t *inst);

#endif /* WEFT_CORE_COLL_H */
