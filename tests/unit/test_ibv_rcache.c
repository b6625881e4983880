/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_ibv_rcache.c: the registration cache of the ib-verbs transport,
 * over a fake registration that records which ranges are registered:
 * page alignment, hits, merging of overlapping ranges, reference counts,
 * eviction within the limits, invalidation (a freed buffer is never
 * served again), recovery when registration runs out of memory, and the
 * invariants after every step of a long random run.
 */
#include "config.h"

#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "plugins/ib-verbs/ibv.h"

#define PAGE 4096u
#define MAXREG 4096

/* The fake device: every live registration, and how often each call ran. */
struct fake_mr {
    uintptr_t start;
    size_t len;
    int live;
};

static struct fake_mr regs[MAXREG];
static int nregs, nlive, calls_reg, calls_dereg;
static size_t live_bytes, fail_above;    /* fail_above: ENOMEM beyond this many live bytes */

static int fake_reg(void *arg, uintptr_t start, size_t len, void **mr)
{
    (void)arg;
    calls_reg++;
    if (fail_above && live_bytes + len > fail_above)
        return ENOMEM;
    {
        /* New slots first, so that a fresh region never looks like an
         * old one; dead ones are reused only once all were used. */
        int k = nregs < MAXREG ? nregs++ : -1;

        for (int i = 0; k < 0 && i < MAXREG; i++)
            if (!regs[i].live)
                k = i;
        assert_true(k >= 0);
        regs[k].start = start;
        regs[k].len = len;
        regs[k].live = 1;
        *mr = &regs[k];
    }
    nlive++;
    live_bytes += len;
    return 0;
}

static void fake_dereg(void *arg, void *mr)
{
    struct fake_mr *m = mr;

    (void)arg;
    calls_dereg++;
    assert_true(m->live);
    m->live = 0;
    nlive--;
    live_bytes -= m->len;
}

static const struct wib_rc_ops fake_ops = { fake_reg, fake_dereg };

static void reset(void)
{
    nregs = nlive = calls_reg = calls_dereg = 0;
    live_bytes = fail_above = 0;
}

static void check(const struct wib_rcache *c)
{
    char why[256] = "";

    if (weft__ibv_rc_check(c, why, sizeof(why)) != 0)
        fail_msg("invariant broken: %s", why);
    assert_int_equal(c->live, nlive);
}

/* A region that an entry covers must be registered and cover it. */
static void covers(const struct wib_rc_entry *e, uintptr_t a, size_t len)
{
    const struct fake_mr *m = e->mr;

    assert_true(m->live);
    assert_true(e->start <= a && e->end >= a + len);
    assert_true(m->start == e->start && m->len == e->end - e->start);
}

static void test_align_and_hit(void **state)
{
    struct wib_rcache c;
    struct wib_rc_entry *a, *b;
    uintptr_t base = 0x100000;

    (void)state;
    reset();
    weft__ibv_rc_init(&c, &fake_ops, NULL, PAGE, 1u << 30, 100);
    assert_int_equal(weft__ibv_rc_get(&c, (void *)(base + 100), 5000, &a), 0);
    assert_int_equal(a->start, base);
    assert_int_equal(a->end, base + 2 * PAGE);
    covers(a, base + 100, 5000);
    check(&c);
    /* Inside it: the same entry, no new registration. */
    assert_int_equal(weft__ibv_rc_get(&c, (void *)(base + PAGE), 10, &b), 0);
    assert_ptr_equal(a, b);
    assert_int_equal(calls_reg, 1);
    assert_int_equal(a->refs, 2);
    assert_int_equal(c.hits, 1);
    weft__ibv_rc_put(&c, a);
    weft__ibv_rc_put(&c, b);
    /* Unreferenced, still cached. */
    assert_int_equal(nlive, 1);
    assert_ptr_equal(c.lru_head, a);
    check(&c);
    assert_int_equal(weft__ibv_rc_get(&c, (void *)base, PAGE, &b), 0);
    assert_ptr_equal(a, b);
    assert_null(c.lru_head);
    weft__ibv_rc_put(&c, b);
    /* A zero-length buffer still gets a page. */
    assert_int_equal(weft__ibv_rc_get(&c, (void *)(base + 10 * PAGE), 0, &b), 0);
    assert_int_equal(b->end - b->start, PAGE);
    weft__ibv_rc_put(&c, b);
    check(&c);
    weft__ibv_rc_fini(&c);
    assert_int_equal(nlive, 0);
}

static void test_merge(void **state)
{
    struct wib_rcache c;
    struct wib_rc_entry *a, *b, *m, *x;
    uintptr_t base = 0x200000;

    (void)state;
    reset();
    weft__ibv_rc_init(&c, &fake_ops, NULL, PAGE, 1u << 30, 100);
    assert_int_equal(weft__ibv_rc_get(&c, (void *)base, PAGE, &a), 0);
    assert_int_equal(weft__ibv_rc_get(&c, (void *)(base + 4 * PAGE), PAGE, &b), 0);
    assert_int_equal(weft__ibv_rc_get(&c, (void *)(base + 10 * PAGE), PAGE, &x), 0);
    weft__ibv_rc_put(&c, b);            /* b unreferenced, a still held */
    check(&c);
    /* A range over a and b: one region over both, they leave the index. */
    assert_int_equal(weft__ibv_rc_get(&c, (void *)(base + PAGE / 2), 4 * PAGE, &m), 0);
    assert_int_equal(m->start, base);
    assert_int_equal(m->end, base + 5 * PAGE);
    covers(m, base, 5 * PAGE);
    assert_int_equal(c.n, 2);           /* m and x */
    assert_false(a->indexed);           /* stale but alive: referenced */
    assert_true(((struct fake_mr *)a->mr)->live);
    assert_int_equal(nlive, 3);         /* a, m, x: b was released */
    check(&c);
    /* A lookup inside a's range now finds m. */
    {
        struct wib_rc_entry *y;

        assert_int_equal(weft__ibv_rc_get(&c, (void *)base, 10, &y), 0);
        assert_ptr_equal(y, m);
        weft__ibv_rc_put(&c, y);
    }
    weft__ibv_rc_put(&c, a);            /* last reference of a stale entry */
    assert_int_equal(nlive, 2);
    check(&c);
    /* Touching, not overlapping: no merge. */
    {
        struct wib_rc_entry *t;

        assert_int_equal(weft__ibv_rc_get(&c, (void *)(base + 5 * PAGE), PAGE, &t), 0);
        assert_int_equal(t->start, base + 5 * PAGE);
        assert_int_equal(c.n, 3);
        weft__ibv_rc_put(&c, t);
        /* ... on the right as well: x stays as it is. */
        assert_int_equal(weft__ibv_rc_get(&c, (void *)(base + 9 * PAGE), PAGE, &t), 0);
        assert_int_equal(t->end, base + 10 * PAGE);
        assert_true(x->indexed);
        assert_int_equal(c.n, 4);
        weft__ibv_rc_put(&c, t);
    }
    weft__ibv_rc_put(&c, m);
    weft__ibv_rc_put(&c, x);
    check(&c);
    weft__ibv_rc_fini(&c);
    assert_int_equal(nlive, 0);
}

static void test_evict(void **state)
{
    struct wib_rcache c;
    struct wib_rc_entry *e[5];
    uintptr_t base = 0x400000;

    (void)state;
    reset();
    /* Room for 3 entries or 3 pages. */
    weft__ibv_rc_init(&c, &fake_ops, NULL, PAGE, 3 * PAGE, 3);
    for (int i = 0; i < 5; i++) {
        assert_int_equal(weft__ibv_rc_get(&c, (void *)(base + 2 * i * PAGE), PAGE, &e[i]), 0);
        check(&c);
    }
    /* All referenced: over the limits, nothing evictable. */
    assert_int_equal(c.n, 5);
    weft__ibv_rc_put(&c, e[3]);
    /* e[3] goes at once: the cache is over its limits. */
    assert_int_equal(c.n, 4);
    assert_false(((struct fake_mr *)e[0]->mr)->live == 0);
    check(&c);
    weft__ibv_rc_put(&c, e[0]);
    weft__ibv_rc_put(&c, e[1]);
    assert_int_equal(c.n, 3);
    check(&c);
    /* The least recently used goes first: touch e[2]'s, then add one. */
    weft__ibv_rc_put(&c, e[2]);
    weft__ibv_rc_put(&c, e[4]);
    assert_int_equal(c.n, 3);
    assert_int_equal(weft__ibv_rc_get(&c, (void *)(base + 4 * PAGE), PAGE, &e[2]), 0);
    weft__ibv_rc_put(&c, e[2]);
    assert_int_equal(weft__ibv_rc_get(&c, (void *)(base + 40 * PAGE), PAGE, &e[0]), 0);
    check(&c);
    {
        struct wib_rc_entry *t;
        int before = calls_reg;

        /* e[2] (touched last before the new one) is still there ... */
        assert_int_equal(weft__ibv_rc_get(&c, (void *)(base + 4 * PAGE), PAGE, &t), 0);
        assert_int_equal(calls_reg, before);
        weft__ibv_rc_put(&c, t);
    }
    weft__ibv_rc_put(&c, e[0]);
    assert_true(c.evictions >= 3);
    assert_int_equal(weft__ibv_rc_flush(&c), 0);
    assert_int_equal(nlive, 0);
    check(&c);
    weft__ibv_rc_fini(&c);
}

/* A freed buffer's address reused must never hit the old region. */
static void test_invalidate(void **state)
{
    struct wib_rcache c;
    struct wib_rc_entry *a, *b;
    uintptr_t base = 0x800000;
    const struct fake_mr *old;

    (void)state;
    reset();
    weft__ibv_rc_init(&c, &fake_ops, NULL, PAGE, 1u << 30, 100);
    assert_int_equal(weft__ibv_rc_get(&c, (void *)base, 8 * PAGE, &a), 0);
    old = a->mr;
    weft__ibv_rc_put(&c, a);
    weft__ibv_rc_invalidate(&c, (void *)(base + 3 * PAGE), 1);
    assert_int_equal(c.n, 0);
    assert_false(old->live);
    check(&c);
    assert_int_equal(weft__ibv_rc_get(&c, (void *)base, PAGE, &b), 0);
    assert_ptr_not_equal(b->mr, old);
    assert_true(((struct fake_mr *)b->mr)->live);
    /* Invalidating a referenced entry: out of the index, alive until put. */
    weft__ibv_rc_invalidate(&c, (void *)base, PAGE);
    assert_false(b->indexed);
    assert_true(((struct fake_mr *)b->mr)->live);
    check(&c);
    {
        struct wib_rc_entry *n;

        assert_int_equal(weft__ibv_rc_get(&c, (void *)base, PAGE, &n), 0);
        assert_ptr_not_equal(n, b);
        weft__ibv_rc_put(&c, n);
    }
    weft__ibv_rc_put(&c, b);
    check(&c);
    weft__ibv_rc_fini(&c);
    assert_int_equal(nlive, 0);
}

/* Pinned memory runs out: what nobody uses is let go and it is tried
 * again; when even that is not enough, the error comes back. */
static void test_out_of_memory(void **state)
{
    struct wib_rcache c;
    struct wib_rc_entry *a, *b, *d;
    struct fake_mr *b_mr;
    uintptr_t base = 0x1000000;

    (void)state;
    reset();
    fail_above = 4 * PAGE;
    weft__ibv_rc_init(&c, &fake_ops, NULL, PAGE, 1u << 30, 100);
    assert_int_equal(weft__ibv_rc_get(&c, (void *)base, 2 * PAGE, &a), 0);
    assert_int_equal(weft__ibv_rc_get(&c, (void *)(base + 8 * PAGE), 2 * PAGE, &b), 0);
    weft__ibv_rc_put(&c, b);
    /* b is idle: the cache evicts it (and frees the entry) to make room. */
    b_mr = b->mr;
    assert_int_equal(weft__ibv_rc_get(&c, (void *)(base + 16 * PAGE), 2 * PAGE, &d), 0);
    assert_false(b_mr->live);
    check(&c);
    assert_int_equal(weft__ibv_rc_get(&c, (void *)(base + 32 * PAGE), PAGE, &b), ENOMEM);
    check(&c);
    weft__ibv_rc_put(&c, a);
    weft__ibv_rc_put(&c, d);
    weft__ibv_rc_fini(&c);
    assert_int_equal(nlive, 0);
}

/* fini lets go of referenced entries too (their holders are going). */
static void test_fini_referenced(void **state)
{
    struct wib_rcache c;
    struct wib_rc_entry *a, *b;

    (void)state;
    reset();
    weft__ibv_rc_init(&c, &fake_ops, NULL, PAGE, 1u << 30, 100);
    assert_int_equal(weft__ibv_rc_get(&c, (void *)0x3000000, PAGE, &a), 0);
    assert_int_equal(weft__ibv_rc_get(&c, (void *)0x3000000, 3 * PAGE, &b), 0);
    assert_false(a->indexed);
    weft__ibv_rc_fini(&c);
    assert_int_equal(nlive, 0);
    assert_int_equal(calls_dereg, calls_reg);
}

/* Random gets, puts and invalidations; the invariants after every step,
 * and every held entry still covers what it was asked for. */
static void test_random(void **state)
{
    struct wib_rcache c;
    struct {
        struct wib_rc_entry *e;
        uintptr_t a;
        size_t len;
    } held[64];
    int nheld = 0;
    unsigned seed = 12345;

    (void)state;
    reset();
    weft__ibv_rc_init(&c, &fake_ops, NULL, PAGE, 64 * PAGE, 16);
    for (int step = 0; step < 20000; step++) {
        unsigned r = rand_r(&seed) % 100;
        uintptr_t a = 0x10000000 + (uintptr_t)(rand_r(&seed) % (256 * PAGE));
        size_t len = 1 + (size_t)(rand_r(&seed) % (6 * PAGE));

        if (r < 45 && nheld < 64) {
            struct wib_rc_entry *e;

            assert_int_equal(weft__ibv_rc_get(&c, (void *)a, len, &e), 0);
            covers(e, a, len);
            held[nheld].e = e;
            held[nheld].a = a;
            held[nheld].len = len;
            nheld++;
        } else if (r < 90 && nheld) {
            int k = (int)(rand_r(&seed) % (unsigned)nheld);

            weft__ibv_rc_put(&c, held[k].e);
            held[k] = held[--nheld];
        } else {
            weft__ibv_rc_invalidate(&c, (void *)a, len);
            /* Nothing indexed overlaps the invalidated range any more. */
            for (int i = 0; i < c.n; i++)
                assert_true(c.idx[i]->end <= a || c.idx[i]->start >= a + len);
        }
        check(&c);
        for (int i = 0; i < nheld; i++)
            covers(held[i].e, held[i].a, held[i].len);
    }
    while (nheld)
        weft__ibv_rc_put(&c, held[--nheld].e);
    check(&c);
    weft__ibv_rc_fini(&c);
    assert_int_equal(nlive, 0);
    assert_int_equal(calls_dereg, calls_reg);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_align_and_hit),
        cmocka_unit_test(test_merge),
        cmocka_unit_test(test_evict),
        cmocka_unit_test(test_invalidate),
        cmocka_unit_test(test_out_of_memory),
        cmocka_unit_test(test_fini_referenced),
        cmocka_unit_test(test_random),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
