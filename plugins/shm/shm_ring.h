/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * shm_ring.h: a lock-free single-producer, single-consumer byte ring in
 * shared memory.
 *
 * The control block holds two free-running byte counters: tail (bytes ever
 * written, only the producer stores it) and head (bytes ever consumed,
 * only the consumer stores it), each on a cache line of its own so that
 * the two sides never write the same line. The bytes live in a separate
 * area of cap bytes, cap a power of two; a record may wrap around its end.
 * Each side keeps a private copy of its own counter and a cached copy of
 * the other's, and reads the shared one only when the cached one says the
 * ring is full (producer) or empty (consumer).
 *
 * Ordering: the producer writes the bytes, then stores tail with release;
 * the consumer loads tail with acquire before reading them. The consumer
 * stores head with release after it is done with the bytes, and the
 * producer loads head with acquire before overwriting them.
 *
 * A ring is used by one producer thread and one consumer thread at a time;
 * nothing else about it is thread-safe.
 */
#ifndef WEFT_SHM_RING_H
#define WEFT_SHM_RING_H

#include <stddef.h>
#include <stdint.h>

#define SHM_CACHELINE 64
/* A member on a cache line of its own (the next SHM_LINE starts another). */
#define SHM_LINE(decl) _Alignas(SHM_CACHELINE) decl

/* The shared part, zeroed by whoever creates the ring. */
struct shm_ring_ctl {
    SHM_LINE(uint64_t tail);
    SHM_LINE(uint64_t head);
    SHM_LINE(uint32_t producer_blocked);  /* the producer waits for room */
};

/* One side's private view. */
struct shm_ring {
    struct shm_ring_ctl *ctl;
    unsigned char *data;
    uint64_t cap, mask;
    uint64_t pos;                         /* own counter: tail or head */
    uint64_t other;                       /* cached counter of the other side */
};

/* Takes the producer's (producer = 1) or the consumer's view of a ring;
 * data holds cap bytes, cap a power of two. */
void weft__shm_ring_attach(struct shm_ring *r, struct shm_ring_ctl *ctl, void *data,
                           uint64_t cap, int producer);

/* Producer: bytes free now. */
uint64_t weft__shm_ring_space(struct shm_ring *r);
/* Producer: appends a and then b as one record (b may be NULL when blen is
 * 0). 0 when it is in the ring, -1 when there is no room for alen + blen
 * bytes (nothing is written). */
int weft__shm_ring_push(struct shm_ring *r, const void *a, size_t alen, const void *b,
                        size_t blen);

/* Copies n bytes from src to dst where memcpy may not (device memory):
 * 0, or -1 with the error set by the callee. */
typedef int (*shm_copy_fn)(void *arg, void *dst, const void *src, size_t n);

/* Producer: weft__shm_ring_push, b copied in with copy. -1 when there is
 * no room, -2 when copy failed; nothing is published either way. */
int weft__shm_ring_push_copy(struct shm_ring *r, const void *a, size_t alen, const void *b,
                             size_t blen, shm_copy_fn copy, void *arg);

/* Consumer: bytes readable now. */
uint64_t weft__shm_ring_avail(struct shm_ring *r);
/* Consumer: copies len bytes starting off bytes past the head (all of them
 * readable). */
void weft__shm_ring_peek(const struct shm_ring *r, uint64_t off, void *dst, size_t len);
/* Consumer: weft__shm_ring_peek with copy: 0, or -1 when copy failed. */
int weft__shm_ring_peek_copy(const struct shm_ring *r, uint64_t off, void *dst, size_t len,
                             shm_copy_fn copy, void *arg);
/* Consumer: gives n bytes back to the producer. */
void weft__shm_ring_consume(struct shm_ring *r, uint64_t n);

#endif /* WEFT_SHM_RING_H */
