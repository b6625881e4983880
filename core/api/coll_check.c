/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * coll_check.c: cross-rank argument checking (WEFT_CHECK=1).
 *
 * A collective called with different arguments on different ranks hangs
 * or corrupts memory. With the check on, every collective first gathers
 * every rank's signature (kind, dtype, operator, root, the counts that must
 * agree) with a fixed-size allgather, which cannot itself mismatch; each
 * rank then judges what it can see (the root alone knows a gatherv's
 * counts), the verdicts are combined with a MAX allreduce, and either all
 * ranks run the collective or all fail with WEFT_ERR_MISMATCH. It costs two
 * small collectives per call, so it is a debugging aid.
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/api/coll_args.h"
#include "core/base/error.h"
#include "core/coll/algo/algo.h"
#include "core/coll/shared/shared.h"
#include "core/dt/dtype.h"

/* One rank's view of the call. Fields that may differ between ranks
 * (v-forms' own counts) are in mine. */
typedef struct sig {
    int64_t kind, dt, op, root;
    uint64_t count;     /* must agree (0 where it may differ) */
    uint64_t vec_hash;  /* counts arrays that must agree everywhere */
    uint64_t mine;      /* this rank's own block, checked against the root's view */
} sig_t;

typedef struct check {
    weft__coll_t *inner;
    weft__coll_kind_t kind;
    sig_t *sigs;        /* every rank's */
    sig_t me;
    int64_t verdict, agreed; /* 0 fine, else 1 + the first rank found at fault */
    size_t layout[2];   /* scratch counts/displacements for the children */
    size_t *vlayout;
    char why[160];
} check_t;

int weft__coll_check_enabled(void)
{
    /* Read once, from any thread: racing first callers compute the same. */
    static int enabled = -1;
    int v = __atomic_load_n(&enabled, __ATOMIC_RELAXED);

    if (v < 0) {
        const char *env = getenv("WEFT_CHECK");

        v = env && strcmp(env, "0") != 0 && *env;
        __atomic_store_n(&enabled, v, __ATOMIC_RELAXED);
    }
    return v;
}

static uint64_t hash_counts(const size_t *v, int n)
{
    uint64_t h = 1469598103934665603ull; /* FNV-1a over the counts */

    for (int i = 0; v && i < n; i++) {
        h ^= v[i];
        h *= 1099511628211ull;
    }
    return h;
}

static void sign(check_t *k, const weft__coll_t *c)
{
    int n = c->comm->size;
    int reducing = k->kind == WEFT__COLL_REDUCE || k->kind == WEFT__COLL_ALLREDUCE ||
                   k->kind == WEFT__COLL_REDUCE_SCATTER || k->kind == WEFT__COLL_SCAN ||
                   k->kind == WEFT__COLL_EXSCAN || k->kind == WEFT__COLL_REDUCE_SCATTER_AXIS;
    int rooted = k->kind == WEFT__COLL_BCAST || k->kind == WEFT__COLL_REDUCE ||
                 k->kind == WEFT__COLL_GATHER || k->kind == WEFT__COLL_SCATTER ||
                 k->kind == WEFT__COLL_GATHER_AXIS || k->kind == WEFT__COLL_SCATTER_AXIS ||
                 k->kind == WEFT__COLL_BCAST_BYTES;

    memset(&k->me, 0, sizeof(k->me));
    k->me.kind = k->kind;
    k->me.dt = k->kind == WEFT__COLL_BARRIER || k->kind == WEFT__COLL_BCAST_BYTES ||
               k->kind == WEFT__COLL_ALLGATHER_BYTES ? -1 : (int64_t)c->dt;
    /* PREMUL_SUM handles are local numbers: compare only that it is one
     * (apply_op made it a SUM with a scaled input). */
    k->me.op = !reducing ? -1 : c->premul_input || (unsigned)c->op > WEFT_BXOR ? 100
                                                                         : (int64_t)c->op;
    k->me.root = rooted ? c->root : -1;
    switch (k->kind) {
    case WEFT__COLL_GATHER:
    case WEFT__COLL_SCATTER:
    case WEFT__COLL_BCAST_BYTES:
    case WEFT__COLL_ALLGATHER_BYTES:
        k->me.mine = c->count;
        break;
    case WEFT__COLL_ALLGATHER:
        k->me.mine = c->count;
        k->me.vec_hash = hash_counts(c->rcounts, n);
        break;
    case WEFT__COLL_REDUCE_SCATTER:
        k->me.vec_hash = hash_counts(c->rcounts, n);
        break;
    default:
        k->me.count = c->count;
        break;
    }
    if (k->kind == WEFT__COLL_ALLGATHER && c->sendbuf == WEFT_IN_PLACE)
        k->me.mine = c->rcounts[c->comm->rank];
}

/* A signature field as the caller wrote it: "WEFT_INT32", "WEFT_MAX",
 * "3". */
static const char *field_text(int f, int64_t v, char *buf, size_t cap)
{
    const char *name = f == 1 ? weft__dtype_name((int)v) : f == 2 ? weft__op_name((int)v) : NULL;

    if (name)
        return name;
    if (f == 2 && v == 100)
        return "a premultiplied sum (weft_op_create_premul_sum)";
    snprintf(buf, cap, "%lld", (long long)v);
    return buf;
}

/* This rank's verdict on all signatures: 0, or 1 + a rank at fault. The
 * message names the other rank first, with what each passed in the
 * words of the API: "rank 1 passed op WEFT_MAX, rank 0 passed
 * WEFT_SUM". */
static int64_t judge(check_t *k, const weft__coll_t *c)
{
    int n = c->comm->size, me = c->comm->rank;
    const sig_t *s = k->sigs, *a = &s[me];
    static const char *const fields[] = { "operation", "dt", "op", "root", "count",
                                          "counts" };

    for (int r = 0; r < n; r++) {
        int64_t mine[6] = { a->kind, a->dt, a->op, a->root, (int64_t)a->count,
                            (int64_t)a->vec_hash };
        int64_t theirs[6] = { s[r].kind, s[r].dt, s[r].op, s[r].root, (int64_t)s[r].count,
                              (int64_t)s[r].vec_hash };

        for (int f = 0; f < 6; f++) {
            char b1[32], b2[32];

            if (mine[f] == theirs[f])
                continue;
            if (f == 0 && (unsigned)s[r].kind < WEFT__COLL_NKINDS)
                snprintf(k->why, sizeof(k->why), "rank %d called weft_%s, rank %d weft_%s", r,
                         weft__coll_kind_names[s[r].kind], me, weft__coll_kind_names[a->kind]);
            else if (f == 0)
                snprintf(k->why, sizeof(k->why), "rank %d called something else than rank "
                         "%d's weft_%s", r, me, weft__coll_kind_names[a->kind]);
            else if (f == 5)
                snprintf(k->why, sizeof(k->why), "rank %d passed other counts than rank %d", r,
                         me);
            else
                snprintf(k->why, sizeof(k->why), "rank %d passed %s %s, rank %d passed %s", r,
                         fields[f], field_text(f, theirs[f], b1, sizeof(b1)), me,
                         field_text(f, mine[f], b2, sizeof(b2)));
            return 1 + r;
        }
    }
    /* Each rank's own block against the counts of whoever knows them. */
    if ((a->kind == WEFT__COLL_GATHER && me == c->root && c->rcounts) ||
        a->kind == WEFT__COLL_ALLGATHER || (a->kind == WEFT__COLL_SCATTER && me == c->root)) {
        const size_t *v = a->kind == WEFT__COLL_SCATTER ? c->scounts : c->rcounts;

        for (int r = 0; r < n; r++)
            if (s[r].mine != v[r]) {
                snprintf(k->why, sizeof(k->why), "rank %d passed count %llu, rank %d's counts "
                         "say %zu", r, (unsigned long long)s[r].mine, me, v[r]);
                return 1 + r;
            }
    }
    return 0;
}

static weft_result_t child_allgather(weft__coll_t *c, check_t *k)
{
    int n = c->comm->size;
    weft__coll_t *g = weft__coll_new(&k->me, k->sigs, sizeof(sig_t), 1, WEFT_UINT8, WEFT_SUM, 0);
    weft_result_t rc;

    if (!g)
        return WEFT_ERR_NO_MEMORY;
    for (int i = 0; i < n; i++) {
        k->vlayout[i] = sizeof(sig_t);
        k->vlayout[n + i] = (size_t)i * sizeof(sig_t);
    }
    rc = weft__coll_set_vectors(g, n, NULL, NULL, k->vlayout, k->vlayout + n);
    if (rc != WEFT_SUCCESS) {
        weft__coll_free(g);
        return rc;
    }
    weft__allgatherv_ring(g);
    return weft__coll_run_child(c, g);
}

static weft_result_t check_step(weft__coll_t *c, int *done)
{
    check_t *k = c->ctx;
    weft__coll_t *g;

    switch (c->phase++) {
    case 0:
        k->inner->comm = c->comm;
        sign(k, k->inner);
        return child_allgather(c, k);
    case 1:
        k->verdict = judge(k, k->inner);
        g = weft__coll_new(&k->verdict, &k->agreed, 1, sizeof(int64_t), WEFT_INT64, WEFT_MAX, 0);
        if (!g)
            return WEFT_ERR_NO_MEMORY;
        weft__allreduce_ring(g);
        return weft__coll_run_child(c, g);
    case 2:
        if (k->agreed) {
            /* Ranks whose arguments differ may have chosen differently,
             * some a shared algorithm and some not: the generation goes
             * back, so that the communicator's next ones agree. */
            weft__coll_shared_withdraw(k->inner);
            if (k->verdict)
                return weft__error(WEFT_ERR_MISMATCH, "weft_%s: WEFT_CHECK: %s",
                                   weft__coll_kind_names[k->kind], k->why);
            return weft__error(WEFT_ERR_MISMATCH, "weft_%s: WEFT_CHECK: the ranks' arguments "
                               "differ (rank %lld found it; see its error)",
                               weft__coll_kind_names[k->kind], (long long)k->agreed - 1);
        }
        g = k->inner;
        k->inner = NULL;
        return weft__coll_run_child(c, g);
    default:
        *done = 1;
        return WEFT_SUCCESS;
    }
}

static void check_free(void *p)
{
    check_t *k = p;

    if (k->inner)
        weft__coll_free(k->inner);
    free(k->sigs);
    free(k->vlayout);
    free(k);
}

weft__coll_t *weft__coll_checked(weft__coll_t *c, weft__coll_kind_t kind)
{
    int n = c->comm->size;
    weft__coll_t *w = weft__coll_new(NULL, NULL, 0, 1, WEFT_UINT8, WEFT_SUM, 0);
    check_t *k = calloc(1, sizeof(*k));

    if (k) {
        k->sigs = calloc((size_t)n, sizeof(*k->sigs));
        k->vlayout = calloc(2 * (size_t)n, sizeof(*k->vlayout));
    }
    if (!w || !k || !k->sigs || !k->vlayout) {
        if (k)
            check_free(k);
        weft__coll_free(c);
        free(w);
        weft__error(WEFT_ERR_NO_MEMORY, "cannot allocate the WEFT_CHECK state");
        return NULL;
    }
    k->inner = c;
    k->kind = kind;
    w->ctx = k;
    w->ctx_free = check_free;
    w->step = check_step;
    return w;
}
