/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * ibv_rcache.c: the registration cache, an interval index of memory
 * regions (see ibv.h for its rules).
 *
 * The index is an array sorted by start whose entries never overlap: a
 * lookup is a binary search, and registering the union of overlapping
 * entries (rather than a second region over the same pages) keeps it so.
 * Entries taken out of the index while referenced wait on the stale list
 * until their last reference goes; unreferenced indexed ones wait on the
 * LRU list. An entry is on at most one of the two, so they share links.
 * Registration is a callback, so the cache runs without a device in the
 * unit tests.
 */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "plugins/ib-verbs/ibv.h"

/* ------------------------------------------------------------ lists */

static void list_remove(struct wib_rc_entry **head, struct wib_rc_entry **tail,
                        struct wib_rc_entry *e)
{
    if (e->lru_prev)
        e->lru_prev->lru_next = e->lru_next;
    else
        *head = e->lru_next;
    if (e->lru_next)
        e->lru_next->lru_prev = e->lru_prev;
    else if (tail)
        *tail = e->lru_prev;
    e->lru_prev = e->lru_next = NULL;
}

static void list_append(struct wib_rc_entry **head, struct wib_rc_entry **tail,
                        struct wib_rc_entry *e)
{
    e->lru_next = NULL;
    e->lru_prev = *tail;
    if (*tail)
        (*tail)->lru_next = e;
    else
        *head = e;
    *tail = e;
}

static void lru_remove(struct wib_rcache *c, struct wib_rc_entry *e)
{
    list_remove(&c->lru_head, &c->lru_tail, e);
}

/* The stale list needs no tail: it is only walked and cut. */
static void stale_push(struct wib_rcache *c, struct wib_rc_entry *e)
{
    e->lru_prev = NULL;
    e->lru_next = c->stale;
    if (c->stale)
        c->stale->lru_prev = e;
    c->stale = e;
}

static void stale_remove(struct wib_rcache *c, struct wib_rc_entry *e)
{
    list_remove(&c->stale, NULL, e);
}

/* ------------------------------------------------------------ the index */

/* The first index position whose entry ends after addr. */
static int idx_first_after(const struct wib_rcache *c, uintptr_t addr)
{
    int lo = 0, hi = c->n;

    while (lo < hi) {
        int mid = lo + (hi - lo) / 2;

        if (c->idx[mid]->end <= addr)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

static int idx_insert_at(struct wib_rcache *c, int pos, struct wib_rc_entry *e)
{
    if (c->n == c->cap) {
        int cap = c->cap ? c->cap * 2 : 64;
        struct wib_rc_entry **idx = realloc(c->idx, (size_t)cap * sizeof(*idx));

        if (!idx)
            return ENOMEM;
        c->idx = idx;
        c->cap = cap;
    }
    memmove(&c->idx[pos + 1], &c->idx[pos], (size_t)(c->n - pos) * sizeof(*c->idx));
    c->idx[pos] = e;
    c->n++;
    e->indexed = 1;
    c->bytes += e->end - e->start;
    return 0;
}

static void entry_release(struct wib_rcache *c, struct wib_rc_entry *e)
{
    c->ops->dereg(c->arg, e->mr);
    c->live--;
    free(e);
}

/* Takes the entry at pos out of the index: released when unreferenced,
 * else stale until its last put. */
static void idx_remove_at(struct wib_rcache *c, int pos)
{
    struct wib_rc_entry *e = c->idx[pos];

    memmove(&c->idx[pos], &c->idx[pos + 1], (size_t)(c->n - pos - 1) * sizeof(*c->idx));
    c->n--;
    e->indexed = 0;
    c->bytes -= e->end - e->start;
    if (e->refs == 0) {
        lru_remove(c, e);
        entry_release(c, e);
    } else {
        stale_push(c, e);
    }
}

static void evict_one(struct wib_rcache *c)
{
    struct wib_rc_entry *e = c->lru_head;
    int pos = idx_first_after(c, e->start);

    c->evictions++;
    idx_remove_at(c, pos);
}

/* Least recently used first, while over either limit. */
static void evict_over(struct wib_rcache *c)
{
    while (c->lru_head && (c->bytes > c->max_bytes || c->n > c->max_entries))
        evict_one(c);
}

/* ------------------------------------------------------------ the cache */

void weft__ibv_rc_init(struct wib_rcache *c, const struct wib_rc_ops *ops, void *arg,
                       size_t page, size_t max_bytes, int max_entries)
{
    memset(c, 0, sizeof(*c));
    c->ops = ops;
    c->arg = arg;
    c->page = page ? page : 4096;
    c->max_bytes = max_bytes;
    c->max_entries = max_entries > 0 ? max_entries : 1;
}

int weft__ibv_rc_get(struct wib_rcache *c, const void *addr, size_t len,
                     struct wib_rc_entry **out)
{
    uintptr_t a = (uintptr_t)addr, start, end, ustart, uend;
    struct wib_rc_entry *e;
    int pos, last, rc;

    if (len == 0)
        len = 1;        /* an empty buffer still needs a valid key */
    if (a + len < a || a + len + c->page < a + len)
        return EINVAL;
    start = a & ~(uintptr_t)(c->page - 1);
    end = (a + len + c->page - 1) & ~(uintptr_t)(c->page - 1);
    pos = idx_first_after(c, start);
    if (pos < c->n && c->idx[pos]->start <= start && c->idx[pos]->end >= end) {
        e = c->idx[pos];
        if (e->refs++ == 0)
            lru_remove(c, e);
        c->hits++;
        *out = e;
        return 0;
    }
    /* The union with every entry the range overlaps: positions pos to
     * last - 1, as the index is sorted and disjoint. */
    ustart = start;
    uend = end;
    for (last = pos; last < c->n && c->idx[last]->start < end; last++) {
        if (c->idx[last]->start < ustart)
            ustart = c->idx[last]->start;
        if (c->idx[last]->end > uend)
            uend = c->idx[last]->end;
    }
    e = calloc(1, sizeof(*e));
    if (!e)
        return ENOMEM;
    e->start = ustart;
    e->end = uend;
    rc = c->ops->reg(c->arg, ustart, uend - ustart, &e->mr);
    if (rc == ENOMEM || rc == EAGAIN) {
        /* Pinned memory ran out (RLIMIT_MEMLOCK): what nobody uses goes. */
        while (c->lru_head)
            evict_one(c);
        pos = idx_first_after(c, start);
        for (last = pos; last < c->n && c->idx[last]->start < end; last++)
            ;
        rc = c->ops->reg(c->arg, ustart, uend - ustart, &e->mr);
    }
    if (rc != 0) {
        free(e);
        return rc;
    }
    c->live++;
    c->misses++;
    e->refs = 1;
    /* Those it swallowed serve no lookup any more; removing them from
     * pos on leaves the insertion point at pos. */
    for (int k = pos; k < last; k++)
        idx_remove_at(c, pos);
    if (idx_insert_at(c, pos, e) != 0) {
        entry_release(c, e);
        return ENOMEM;
    }
    evict_over(c);
    *out = e;
    return 0;
}

void weft__ibv_rc_put(struct wib_rcache *c, struct wib_rc_entry *e)
{
    if (!e || e->refs <= 0)
        return;
    if (--e->refs > 0)
        return;
    if (!e->indexed) {
        stale_remove(c, e);
        entry_release(c, e);
        return;
    }
    list_append(&c->lru_head, &c->lru_tail, e);
    evict_over(c);
}

void weft__ibv_rc_invalidate(struct wib_rcache *c, const void *addr, size_t len)
{
    uintptr_t a = (uintptr_t)addr, end = a + (len ? len : 1);
    int pos = idx_first_after(c, a);

    while (pos < c->n && c->idx[pos]->start < end)
        idx_remove_at(c, pos);
}

int weft__ibv_rc_flush(struct wib_rcache *c)
{
    while (c->lru_head)
        evict_one(c);
    return c->live;
}

void weft__ibv_rc_fini(struct wib_rcache *c)
{
    weft__ibv_rc_flush(c);
    /* Whatever is still referenced goes with the device: its holders
     * are being torn down too. */
    while (c->n > 0) {
        struct wib_rc_entry *e = c->idx[--c->n];

        entry_release(c, e);
    }
    while (c->stale) {
        struct wib_rc_entry *e = c->stale;

        c->stale = e->lru_next;
        entry_release(c, e);
    }
    free(c->idx);
    c->idx = NULL;
    c->n = c->cap = 0;
    c->bytes = 0;
}

int weft__ibv_rc_check(const struct wib_rcache *c, char *why, size_t cap)
{
    size_t bytes = 0;
    int unref = 0, on_lru = 0, stale = 0;

    for (int i = 0; i < c->n; i++) {
        const struct wib_rc_entry *e = c->idx[i];

        if (e->start >= e->end || (e->start | e->end) & (c->page - 1)) {
            snprintf(why, cap, "entry %d [%#lx, %#lx) is empty or not page-aligned", i,
                     (unsigned long)e->start, (unsigned long)e->end);
            return -1;
        }
        if (i > 0 && c->idx[i - 1]->end > e->start) {
            snprintf(why, cap, "entries %d and %d overlap or are out of order", i - 1, i);
            return -1;
        }
        if (!e->indexed || e->refs < 0) {
            snprintf(why, cap, "entry %d: indexed %d, refs %d", i, e->indexed, e->refs);
            return -1;
        }
        unref += e->refs == 0;
        bytes += e->end - e->start;
    }
    for (const struct wib_rc_entry *e = c->lru_head; e; e = e->lru_next, on_lru++)
        if (!e->indexed || e->refs != 0 || (e->lru_next && e->lru_next->lru_prev != e)) {
            snprintf(why, cap, "an LRU entry is referenced, out of the index or mislinked");
            return -1;
        }
    for (const struct wib_rc_entry *e = c->stale; e; e = e->lru_next, stale++)
        if (e->indexed || e->refs <= 0) {
            snprintf(why, cap, "a stale entry is indexed or unreferenced");
            return -1;
        }
    if (on_lru != unref) {
        snprintf(why, cap, "%d unreferenced entries but %d on the LRU list", unref, on_lru);
        return -1;
    }
    if (bytes != c->bytes) {
        snprintf(why, cap, "bytes counted %zu, indexed %zu", c->bytes, bytes);
        return -1;
    }
    if (c->live != c->n + stale) {
        snprintf(why, cap, "%d registered, %d indexed + %d stale", c->live, c->n, stale);
        return -1;
    }
    if (on_lru && (c->bytes > c->max_bytes || c->n > c->max_entries)) {
        snprintf(why, cap, "over its limits (%zu bytes, %d entries) with %d evictable",
                 c->bytes, c->n, on_lru);
        return -1;
    }
    return 0;
}
