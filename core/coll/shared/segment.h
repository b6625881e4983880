/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * segment.h: a communicator's node-shared segment, through which the
 * "shared" collectives (small.c, pipelined.c) move their payloads.
 * Only coll/shared includes it (core/LAYERS).
 *
 * Every rank of a communicator that lives on one node maps the same
 * segment. A rank runs its shared collectives as numbered generations
 * 1, 2, ... (the same numbers on every rank, handed out in call order by
 * weft__coll_choose), one after the other. Per rank the segment holds:
 *   - WEFT__SHARED_DEPTH cells of one cache line: generation k goes to
 *     cell k % DEPTH, which holds k once the rank's payload of k is in
 *     place (and so once it finished k - 1). A payload of up to
 *     WEFT__SHARED_INLINE bytes travels in the cell itself, so that a
 *     reader fetches the signal and the data with one cache miss;
 *   - WEFT__SHARED_DEPTH small slots of WEFT__SHARED_SMALL bytes for
 *     payloads that do not fit a cell, generation k in small slot
 *     k % DEPTH, so that they too may run DEPTH - 1 generations ahead
 *     (back-to-back 64-byte broadcasts at 4 ranks: 2.2 us a call when
 *     each waited for every rank to take the previous one);
 *   - two slots for larger payloads, generation k in slot k % 2;
 *   - a control line with its sleeping flag and its pipeline progress.
 * The pipelined collectives, which move large payloads in steps, use a
 * second segment, mapped at the first of them: two chunk slots per rank
 * (weft__shared_chunk_bytes each).
 * A collective given up on this rank (its WEFT_CHECK comparison failed,
 * it timed out, its communicator was aborted) still publishes and
 * retires its generation in turn, marked abandoned, so that the next
 * ones can run; a rank that needed its payload fails instead of reading
 * stale data.
 * A rank publishes generation k only once every rank has published
 * k - DEPTH + 1 (so all of them finished with the cell's and the small
 * slot's previous use), and for a slot payload k - 1 (the slot's previous
 * use was k - 2). A
 * broadcast's root may thus run DEPTH - 1 generations ahead of its
 * slowest receiver, as an eager message would.
 *
 * A pipelined collective holds one generation, within which it runs
 * steps 1, 2, ... (the same on every rank): a rank writes step t into
 * its chunk slot for t % 2 and then records (generation, t) as its
 * progress. It writes step t only once every rank's progress reached
 * t - 1 (step 1: once every rank published the generation), which each
 * rank records only after reading everything it needed of step t - 2.
 *
 * Waiting spins, then sleeps in the progress engine's poll with the
 * rank's doorbell among the descriptors (doorbell.c). A sleeper sets its
 * sleeping flag first; a rank that publishes rings every sleeper.
 *
 * The shared algorithms (small.c, pipelined.c) are the one place where
 * an algorithm touches shared memory rather than going
 * through a transport: an 8-byte allreduce through the message path
 * costs twenty-odd steps of requests, matching and completions on every
 * rank, where the segment needs a copy and a store; and a large one
 * through a transport's ring copies each byte into the ring, out to a
 * scratch buffer and only then folds it, where the segment's rank folds
 * it straight from the copy its owner wrote.
 */
#ifndef WEFT_CORE_SHARED_SEG_H
#define WEFT_CORE_SHARED_SEG_H

#include <stddef.h>
#include <stdint.h>

#include "weft.h"
#include "core/coll/shared/shared.h"

struct weft_comm;

/* Payload bytes that fit in a cell. */
#define WEFT__SHARED_INLINE 48
/* Cells per rank: how far a rank may run ahead of the slowest. */
#define WEFT__SHARED_DEPTH 16
/* Bytes of a small slot (DEPTH of them per rank: 8 KiB, a slot's worth). */
#define WEFT__SHARED_SMALL 512

typedef struct weft__shared_cell {
    uint32_t gen;                /* the generation published here last */
    uint32_t abandoned;          /* the last generation given up here (no payload) */
    /* The length of the call that published gen, in bytes, as its rank
     * computed it from its own arguments: a reader whose own differs
     * knows that the ranks passed different counts. */
    uint64_t bytes;
    unsigned char payload[WEFT__SHARED_INLINE];
} weft__shared_cell_t;

typedef struct weft__shared_ctrl {
    uint32_t sleeping;           /* it sleeps waiting on the segment: ring it */
    uint32_t pad0;
    /* The last pipelined step written: generation << 32 | step. */
    uint64_t progress;
    /* Its process (0 until it attached), and the inode of its pid
     * namespace (low 32 bits): a rank waited for is looked up by pid only
     * from the same namespace (weft__shared_check_alive). */
    uint32_t pid;
    uint32_t pidns;
    uint32_t pad[10];            /* a cache line per rank */
} weft__shared_ctrl_t;

typedef struct weft__shared {
    unsigned char *base;         /* the mapping */
    size_t len;
    int n;                       /* ranks: the communicator's size */
    weft__shared_ctrl_t *ctrl;   /* n control lines */
    weft__shared_cell_t *cells;  /* n x DEPTH cells */
    unsigned char *small;        /* n x DEPTH small slots */
    unsigned char *data;         /* 2 x n slots */
    /* The pipelined collectives' segment (NULL until mapped): 2 x n chunk
     * slots of chunk_bytes. */
    unsigned char *chunks;
    size_t chunk_bytes, chunks_len;
    uint32_t retired;            /* this rank's last generation finished */
    uint32_t all_published;      /* a generation every rank is known to have published */
    uint64_t all_progress;       /* a pipelined step every rank is known to have written */
    /* Generations given up before their turn to retire came, retired as
     * soon as it comes: a ring of bits, generation g at bit g modulo its
     * 64 x abandoned_words bits, grown when one is given up further ahead
     * (the tuner's calls that waited for a calibration give theirs up by
     * the thousand when nonblocking calls pile up). */
    uint64_t *abandoned;
    uint32_t abandoned_words;
    /* Liveness of the ranks waited for: this process's pid namespace
     * (0: unknown, never looked), the waits since the last look, and the
     * time of the next. */
    uint32_t pidns;
    uint32_t waits;
    int64_t next_look_ms;
} weft__shared_t;

/* Maps comm's segment, creating it if this rank is the first (all ranks
 * call it at their first shared collective on comm). WEFT_ERR_SYSTEM with
 * the cause when /dev/shm refuses. */
weft_result_t weft__shared_attach(struct weft_comm *comm);
/* Maps the pipelined collectives' segment as well, its memory reserved
 * up front: WEFT_ERR_SYSTEM naming /dev/shm's lack of room, where a
 * segment of untouched pages would have killed the process with SIGBUS
 * at the first step that touched a page beyond it. */
weft_result_t weft__shared_attach_chunks(struct weft_comm *comm);

static inline weft__shared_cell_t *weft__shared_cell(const weft__shared_t *s, uint32_t gen,
                                                     int rank)
{
    return &s->cells[(size_t)rank * WEFT__SHARED_DEPTH + gen % WEFT__SHARED_DEPTH];
}

/* Where rank's payload of `bytes` bytes in generation gen lies: its cell,
 * its small slot or its slot. */
static inline unsigned char *weft__shared_payload(const weft__shared_t *s, uint32_t gen,
                                                  int rank, size_t bytes)
{
    if (bytes <= WEFT__SHARED_INLINE)
        return weft__shared_cell(s, gen, rank)->payload;
    if (bytes <= WEFT__SHARED_SMALL)
        return s->small +
               ((size_t)rank * WEFT__SHARED_DEPTH + gen % WEFT__SHARED_DEPTH) * WEFT__SHARED_SMALL;
    return s->data + ((size_t)(gen & 1u) * (size_t)s->n + (size_t)rank) * WEFT__SHARED_SLOT;
}

/* Whether rank has published generation gen (wrap-safe: a cell holds
 * gen, or a later generation of the same cell). */
static inline int weft__shared_published(const weft__shared_t *s, uint32_t gen, int rank)
{
    uint32_t v = __atomic_load_n(&weft__shared_cell(s, gen, rank)->gen, __ATOMIC_ACQUIRE);

    return (int32_t)(v - gen) >= 0;
}

/* Rank's chunk slot for step t of a pipelined collective. */
static inline unsigned char *weft__shared_chunk(const weft__shared_t *s, uint32_t t, int rank)
{
    return s->chunks + ((size_t)(t & 1u) * (size_t)s->n + (size_t)rank) * s->chunk_bytes;
}

/* Whether rank has written step t of generation gen's pipeline (or
 * finished gen: a later generation's steps count too). */
static inline int weft__shared_progressed(const weft__shared_t *s, int rank, uint32_t gen,
                                          uint32_t t)
{
    uint64_t v = __atomic_load_n(&s->ctrl[rank].progress, __ATOMIC_ACQUIRE);
    uint32_t g = (uint32_t)(v >> 32);

    return (int32_t)(g - gen) > 0 || (g == gen && (uint32_t)v >= t);
}

/* Whether every rank has written step t of gen; the first that has not in
 * *late. */
int weft__shared_all_progressed(weft__shared_t *s, uint32_t gen, uint32_t t, int *late);
/* Records step t of gen written on this rank and wakes the sleepers. */
void weft__shared_progress(struct weft_comm *comm, uint32_t gen, uint32_t t);

/* Whether every rank has published gen, latest being a later generation
 * that they may all have published too; the first rank that has not in
 * *late. */
int weft__shared_all_published(weft__shared_t *s, uint32_t gen, uint32_t latest, int *late);

/* Publishes this rank's generation gen (its payload is in place, unless
 * abandoned) and wakes the ranks sleeping on the segment. */
void weft__shared_publish(struct weft_comm *comm, uint32_t gen, int abandoned);
/* Records gen finished on this rank, and retires the abandoned
 * generations that follow it. */
void weft__shared_retire(struct weft_comm *comm, uint32_t gen);
/* Gives generation gen up on this rank (see above); it is retired in
 * turn. Maps the segment if needed: without it nothing can be given up
 * (the error is logged, and later collectives on comm time out). */
void weft__shared_abandon(struct weft_comm *comm, uint32_t gen);
/* Marks this rank asleep on comm's segment (on) or awake again. */
void weft__shared_sleeping(struct weft_comm *comm, int on);
/* Called at each wait of this rank for rank r on comm's segment: at most
 * every WEFT__SHARED_LOOK_MS, whether r's process still exists.
 * WEFT_ERR_PEER_LOST naming it once it is gone: nothing else would tell,
 * as no transport carries the segment's traffic. A process of another
 * pid namespace, or one not yet attached, is not looked up (the wait
 * then ends at WEFT_TIMEOUT, as before). */
weft_result_t weft__shared_check_alive(struct weft_comm *comm, int r);
/* WEFT_ERR_PEER_LOST naming the first rank that has not published gen
 * and whose process is gone, without waiting for the next look: a rank
 * that gave gen up may have done so for that rank's loss, which is the
 * better error to report. */
weft_result_t weft__shared_find_lost(struct weft_comm *comm, uint32_t gen);
#define WEFT__SHARED_LOOK_MS 50

#endif /* WEFT_CORE_SHARED_SEG_H */
