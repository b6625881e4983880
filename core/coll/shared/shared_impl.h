/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * shared_impl.h: what the two families of shared-segment collectives have
 * in common: the small ones of small.c, which publish their whole payload
 * in one generation, and the pipelined ones of pipelined.c, which move
 * large payloads in steps within one. Only coll/shared includes it.
 */
#ifndef WEFT_CORE_SHARED_IMPL_H
#define WEFT_CORE_SHARED_IMPL_H

#include "core/coll/coll.h"
#include "core/coll/shared/segment.h"
#include "core/coll/shared/shared.h"

/* Makes c a shared collective run by step with op (c->ctx), tells the
 * engine how it waits (c->waits), and gives it the communicator's next
 * generation: the same number on every rank, since every rank chooses its
 * collectives in the same order. */
void weft__coll_shared_assign(weft__coll_t *c, weft__coll_step_fn step, const void *op);
/* Counts c in inst->unrung_inflight and maps the segment (*s). */
weft_result_t weft__coll_shared_enter(weft__coll_t *c, weft__shared_t **s);
/* Leaves the step to be called again; r is the rank waited for (-1: an
 * earlier collective of this rank), for a timeout's message.
 * WEFT_ERR_PEER_LOST instead once r's process is gone (the step returns
 * it: the collective fails). */
weft_result_t weft__coll_shared_wait(weft__coll_t *c, int r);
/* Publishes c's generation once its turn came and its cell (and, past
 * WEFT__SHARED_INLINE bytes, its small slot or slot) is free: fill
 * writes the payload of bytes bytes first. call_bytes, the length of the
 * call as this rank's arguments make it (the same on every rank when
 * they agree), goes with it (weft__coll_shared_same_length). Leaves
 * c->again set when it must wait. */
weft_result_t weft__coll_shared_publish(weft__coll_t *c, weft__shared_t *s, size_t bytes,
                                        uint64_t call_bytes,
                                        void (*fill)(weft__coll_t *c, unsigned char *dst));
/* Whether rank r, which published c's generation, published it with the
 * call length call_bytes; when not, records the mismatch in c
 * (weft__coll_note_mismatch). */
int weft__coll_shared_same_length(weft__coll_t *c, const weft__shared_t *s, int r,
                                  uint64_t call_bytes);
/* WEFT_ERR_ABORTED when rank r gave c's generation up. */
weft_result_t weft__coll_shared_given_up(weft__coll_t *c, const weft__shared_t *s, int r);
/* Retires c's generation: c is done. */
void weft__coll_shared_finish(weft__coll_t *c, int *done);

#endif /* WEFT_CORE_SHARED_IMPL_H */
