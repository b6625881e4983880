/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * shm_ring.c: the single-producer, single-consumer byte ring (see
 * shm_ring.h for the protocol).
 */
#include "config.h"

#include <string.h>

#include "plugins/shm/shm_ring.h"

void weft__shm_ring_attach(struct shm_ring *r, struct shm_ring_ctl *ctl, void *data,
                           uint64_t cap, int producer)
{
    uint64_t tail = __atomic_load_n(&ctl->tail, __ATOMIC_ACQUIRE);
    uint64_t head = __atomic_load_n(&ctl->head, __ATOMIC_ACQUIRE);

    r->ctl = ctl;
    r->data = data;
    r->cap = cap;
    r->mask = cap - 1;
    /* A ring may be in use already (a peer connected again): start from
     * what the counters say. */
    r->pos = producer ? tail : head;
    r->other = producer ? head : tail;
}

static void copy_in(struct shm_ring *r, uint64_t at, const void *src, size_t len)
{
    uint64_t off = at & r->mask;
    size_t first = len < r->cap - off ? len : (size_t)(r->cap - off);

    memcpy(r->data + off, src, first);
    if (first < len)
        memcpy(r->data, (const unsigned char *)src + first, len - first);
}

uint64_t weft__shm_ring_space(struct shm_ring *r)
{
    r->other = __atomic_load_n(&r->ctl->head, __ATOMIC_ACQUIRE);
    return r->cap - (r->pos - r->other);
}

int weft__shm_ring_push(struct shm_ring *r, const void *a, size_t alen, const void *b,
                        size_t blen)
{
    uint64_t need = (uint64_t)alen + blen;

    if (r->cap - (r->pos - r->other) < need && weft__shm_ring_space(r) < need)
        return -1;
    copy_in(r, r->pos, a, alen);
    if (blen)
        copy_in(r, r->pos + alen, b, blen);
    r->pos += need;
    __atomic_store_n(&r->ctl->tail, r->pos, __ATOMIC_RELEASE);
    return 0;
}

int weft__shm_ring_push_copy(struct shm_ring *r, const void *a, size_t alen, const void *b,
                             size_t blen, shm_copy_fn copy, void *arg)
{
    uint64_t need = (uint64_t)alen + blen;
    uint64_t off = (r->pos + alen) & r->mask;
    size_t first = blen < r->cap - off ? blen : (size_t)(r->cap - off);

    if (r->cap - (r->pos - r->other) < need && weft__shm_ring_space(r) < need)
        return -1;
    /* Nothing is seen before the tail moves: a failed copy leaves the
     * ring as it was. */
    if (copy(arg, r->data + off, b, first) != 0 ||
        (first < blen && copy(arg, r->data, (const unsigned char *)b + first, blen - first) != 0))
        return -2;
    copy_in(r, r->pos, a, alen);
    r->pos += need;
    __atomic_store_n(&r->ctl->tail, r->pos, __ATOMIC_RELEASE);
    return 0;
}

uint64_t weft__shm_ring_avail(struct shm_ring *r)
{
    /* The cached tail is stale once everything it promised was read (or
     * more, when the caller consumed without asking). */
    if ((int64_t)(r->other - r->pos) <= 0)
        r->other = __atomic_load_n(&r->ctl->tail, __ATOMIC_ACQUIRE);
    return r->other - r->pos;
}

void weft__shm_ring_peek(const struct shm_ring *r, uint64_t off, void *dst, size_t len)
{
    uint64_t at = (r->pos + off) & r->mask;
    size_t first = len < r->cap - at ? len : (size_t)(r->cap - at);

    memcpy(dst, r->data + at, first);
    if (first < len)
        memcpy((unsigned char *)dst + first, r->data, len - first);
}

int weft__shm_ring_peek_copy(const struct shm_ring *r, uint64_t off, void *dst, size_t len,
                             shm_copy_fn copy, void *arg)
{
    uint64_t at = (r->pos + off) & r->mask;
    size_t first = len < r->cap - at ? len : (size_t)(r->cap - at);

    if (copy(arg, dst, r->data + at, first) != 0)
        return -1;
    if (first < len && copy(arg, (unsigned char *)dst + first, r->data, len - first) != 0)
        return -1;
    return 0;
}

void weft__shm_ring_consume(struct shm_ring *r, uint64_t n)
{
    r->pos += n;
    __atomic_store_n(&r->ctl->head, r->pos, __ATOMIC_RELEASE);
}
