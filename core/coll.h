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

#include <stddef.h>
#include <stdint.h>

#include "weft.h"
#include "core/comm.h"

struct weft__coll;

/* Called when the previous round (if any) completed: posts the next round
 * with weft__coll_post, or sets *done. */
typedef weft_result_t (*weft__coll_step_fn)(struct weft__coll *c, int *done);

#define WEFT__COLL_MAX_OPS 64

typedef struct weft__coll {
    weft_comm_t comm;            /* the user's communicator */
    weft__coll_step_fn step;
    int round;                   /* rounds posted so far */
    int phase;                   /* the algorithm's own progress */
    uint32_t seq;                /* the collective's number on comm */
    struct weft_request *inner;  /* the current round's batch, or NULL */
    weft_result_t result;
    int finished;                /* the step said done: never step again */
    /* Arguments and working state of the algorithm. */
    const void *sendbuf;
    void *recvbuf;
    size_t count, esize;
    weft_dtype_t dt;
    weft_op_t op;
    int root;
    void *tmp;                   /* scratch, freed with the collective */
    size_t *offs;                /* block offsets (elements), size + 1 entries */
} weft__coll_t;

/* Posts one round: n operations, peers as ranks of the communicator. */
weft_result_t weft__coll_post(weft__coll_t *c, int n, const weft_p2p_op_t *ops);
/* Advances c: reaps its round, runs steps; *done when finished. */
weft_result_t weft__coll_poll(weft__coll_t *c, int *done);
void weft__coll_free(weft__coll_t *c);

/* Starts a collective: a request whose progress is c's. */
weft_result_t weft__coll_start(weft_comm_t comm, weft__coll_t *c, weft_request_t *req);

/* Algorithms (coll_algos.c): each sets c->step. */
void weft__barrier_dissemination(weft__coll_t *c);
void weft__bcast_binomial(weft__coll_t *c);
void weft__allreduce_ring(weft__coll_t *c);
void weft__reduce_binomial(weft__coll_t *c);
void weft__allgather_ring(weft__coll_t *c);

#endif /* WEFT_CORE_COLL_H */
