/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * conf_axis.c: the *_axis collectives (arrays split or joined along one
 * axis) on 1-, 2- and 3-dimensional shapes along every axis, and the
 * byte-string collectives with lengths that differ per rank.
 *
 * A row-major array split along axis into blocks of b rows is, for the
 * reference, outer x (b * size) x inner elements: the element (o, i * b +
 * a, t) of the whole is element (o, a, t) of block i.
 */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "tests/conf/conf.h"

#define NSHAPES 3

/* Local (per-block) shapes; the whole array has size times as many rows
 * along the axis. */
static const struct {
    int ndims;
    size_t dims[3];
} shapes[NSHAPES] = { { 1, { 7 } }, { 2, { 3, 5 } }, { 3, { 2, 3, 4 } } };

typedef struct axis_geom {
    int ndims, axis;
    size_t local[WEFT_MAX_DIMS], whole[WEFT_MAX_DIMS];
    size_t outer, b, inner, block;   /* block = outer * b * inner */
} axis_geom_t;

static void geometry(axis_geom_t *g, int s, int axis, int size)
{
    g->ndims = shapes[s].ndims;
    g->axis = axis;
    g->outer = g->inner = 1;
    for (int d = 0; d < g->ndims; d++) {
        g->local[d] = g->whole[d] = shapes[s].dims[d];
        if (d < axis)
            g->outer *= g->local[d];
        if (d > axis)
            g->inner *= g->local[d];
    }
    g->whole[axis] *= (size_t)size;
    g->b = g->local[axis];
    g->block = g->outer * g->b * g->inner;
}

/* Element index in the whole array of block i's (o, a, 0). */
static size_t whole_index(const axis_geom_t *g, int size, size_t o, int i, size_t a)
{
    return (o * g->b * (size_t)size + (size_t)i * g->b + a) * g->inner;
}

static size_t local_index(const axis_geom_t *g, size_t o, size_t a)
{
    return (o * g->b + a) * g->inner;
}

/* want[whole position of block i] = rank r's elements from local (or
 * whole, when from_whole) positions of block j. */
static void expect_joined(conf_move_t *m, const axis_geom_t *g, int size, int to_whole,
                          int i, int r, int from_whole, int j)
{
    for (size_t o = 0; o < g->outer; o++)
        for (size_t a = 0; a < g->b; a++)
            conf_expect_block(m, m->want,
                              to_whole ? whole_index(g, size, o, i, a) : local_index(g, o, a),
                              r, from_whole ? whole_index(g, size, o, j, a)
                                            : local_index(g, o, a), g->inner);
}

static void gather_axis_case(conf_case_t *k, const axis_geom_t *g, int all)
{
    conf_move_t m;
    int me = k->cc->rank, size = k->cc->size, at_root = all || me == k->root;
    void *in;

    conf_move_begin(&m, k, g->block * (size_t)size);
    in = conf_input_of(&m, me, g->block);
    if (at_root)
        for (int i = 0; i < size; i++)
            expect_joined(&m, g, size, 1, i, i, 0, 0);
    if (all)
        CONF_RUN(k, weft_allgather_axis(in, m.got, g->ndims, g->local, g->axis, k->dt,
                                        k->cc->comm),
                 weft_iallgather_axis(in, m.got, g->ndims, g->local, g->axis, k->dt,
                                      k->cc->comm, &req_));
    else
        CONF_RUN(k, weft_gather_axis(in, at_root ? m.got : NULL, g->ndims, g->local, g->axis,
                                     k->dt, k->root, k->cc->comm),
                 weft_igather_axis(in, at_root ? m.got : NULL, g->ndims, g->local, g->axis,
                                   k->dt, k->root, k->cc->comm, &req_));
    conf_check_input(&m, in, me, g->block);
    conf_move_end(&m);
    free(in);
}

static void scatter_axis_case(conf_case_t *k, const axis_geom_t *g)
{
    conf_move_t m;
    int me = k->cc->rank, size = k->cc->size, at_root = me == k->root;
    void *in = NULL;

    conf_move_begin(&m, k, g->block);
    if (at_root)
        in = conf_input_of(&m, me, g->block * (size_t)size);
    expect_joined(&m, g, size, 0, 0, k->root, 1, me);
    CONF_RUN(k, weft_scatter_axis(in, m.got, g->ndims, g->whole, g->axis, k->dt, k->root,
                                  k->cc->comm),
             weft_iscatter_axis(in, m.got, g->ndims, g->whole, g->axis, k->dt, k->root,
                                k->cc->comm, &req_));
    if (at_root)
        conf_check_input(&m, in, me, g->block * (size_t)size);
    conf_move_end(&m);
    free(in);
}

static void alltoall_axis_case(conf_case_t *k, const axis_geom_t *g)
{
    conf_move_t m;
    int me = k->cc->rank, size = k->cc->size;
    void *in;

    conf_move_begin(&m, k, g->block * (size_t)size);
    in = conf_input_of(&m, me, g->block * (size_t)size);
    for (int i = 0; i < size; i++)
        expect_joined(&m, g, size, 1, i, i, 1, me);
    CONF_RUN(k, weft_alltoall_axis(in, m.got, g->ndims, g->whole, g->axis, k->dt, k->cc->comm),
             weft_ialltoall_axis(in, m.got, g->ndims, g->whole, g->axis, k->dt, k->cc->comm,
                                 &req_));
    conf_check_input(&m, in, me, g->block * (size_t)size);
    conf_move_end(&m);
    free(in);
}

static void reduce_scatter_axis_case(conf_case_t *k, const axis_geom_t *g)
{
    uint64_t seed = conf_seed(k, 2);
    int me = k->cc->rank, size = k->cc->size;
    size_t es = conf_esize(k->dt);
    void *in = mp_alloc(g->block * (size_t)size * es), *out = mp_alloc(g->block * es + 1);
    weft_op_t op = conf_weft_op(k->dt, k->op);

    conf_fill_input(k, seed, me, in, g->block * (size_t)size);
    CONF_RUN(k, weft_reduce_scatter_axis(in, out, g->ndims, g->whole, g->axis, k->dt, op,
                                         k->cc->comm),
             weft_ireduce_scatter_axis(in, out, g->ndims, g->whole, g->axis, k->dt, op,
                                       k->cc->comm, &req_));
    for (size_t o = 0; o < g->outer; o++)
        for (size_t a = 0; a < g->b; a++)
            conf_check_reduced(k, seed, 0, size - 1, (char *)out + local_index(g, o, a) * es,
                               g->inner, whole_index(g, size, o, me, a), "recvbuf row");
    free(in);
    free(out);
}

/* Element sizes 1, 2, 4 and 8 are enough for operations that only move
 * data; the reduction tries an integer and two floating types. */
static const weft_dtype_t move_dtypes[] = { WEFT_UINT8, WEFT_FLOAT16, WEFT_INT32,
                                            WEFT_FLOAT64 };
static const weft_dtype_t reduce_dtypes[] = { WEFT_INT64, WEFT_BFLOAT16, WEFT_FLOAT32 };
static const int reduce_ops[] = { WEFT_SUM, WEFT_MAX, CONF_PREMUL };

void conf_run_axis(const conf_comm_t *cc, const conf_plan_t *p)
{
    conf_case_t k = { .cc = cc, .op = -1 };
    axis_geom_t g;

    if (!(p->funcs & (1u << CONF_F_AXIS)))
        return;
    for (int s = 0; s < NSHAPES; s++)
        for (int axis = 0; axis < shapes[s].ndims; axis++) {
            geometry(&g, s, axis, cc->size);
            for (size_t d = 0; d < sizeof(move_dtypes) / sizeof(move_dtypes[0]); d++) {
                k.dt = move_dtypes[d];
                k.op = -1;
                k.count = g.block;
                k.root = CONF_NO_ROOT;
                k.func = "allgather_axis";
                k.nonblocking = conf_pick_nonblocking();
                gather_axis_case(&k, &g, 1);
                k.func = "alltoall_axis";
                k.nonblocking = conf_pick_nonblocking();
                alltoall_axis_case(&k, &g);
                conf_cases += 2;
                for (int root = 0; root < cc->size; root++) {
                    k.root = root;
                    k.func = "gather_axis";
                    k.nonblocking = conf_pick_nonblocking();
                    gather_axis_case(&k, &g, 0);
                    k.func = "scatter_axis";
                    k.nonblocking = conf_pick_nonblocking();
                    scatter_axis_case(&k, &g);
                    conf_cases += 2;
                }
            }
            k.func = "reduce_scatter_axis";
            k.root = CONF_NO_ROOT;
            for (size_t d = 0; d < sizeof(reduce_dtypes) / sizeof(reduce_dtypes[0]); d++)
                for (size_t o = 0; o < sizeof(reduce_ops) / sizeof(reduce_ops[0]); o++) {
                    k.dt = reduce_dtypes[d];
                    k.op = reduce_ops[o];
                    k.count = g.block;
                    k.nonblocking = conf_pick_nonblocking();
                    reduce_scatter_axis_case(&k, &g);
                    conf_cases++;
                }
        }
}

/* -------------------------------------------------------------- byte strings */

static void broadcast_bytes_case(conf_case_t *k)
{
    uint64_t seed = conf_seed(k, 3);
    int at_root = k->cc->rank == k->root;
    size_t len = at_root ? k->count : 0;
    void *buf = NULL, *want = mp_alloc(k->count + 1);

    conf_fill_bytes(want, k->count, seed, k->root, 0);
    if (at_root) {
        buf = mp_alloc(k->count + 1);
        memcpy(buf, want, k->count);
    }
    CONF_RUN(k, weft_broadcast_bytes(&buf, &len, k->root, k->cc->comm),
             weft_ibroadcast_bytes(&buf, &len, k->root, k->cc->comm, &req_));
    if (len != k->count)
        conf_fail(k, "len is %zu, expected %zu", len, k->count);
    if (len && !buf)
        conf_fail(k, "*buf is NULL with len %zu", len);
    if (len)
        conf_check_same(k, buf, want, len, at_root ? "root's buffer" : "received bytes");
    if (at_root)
        free(buf);
    else
        weft_free(buf);
    free(want);
}

static void allgather_bytes_case(conf_case_t *k)
{
    uint64_t seed = conf_seed(k, 4);
    int me = k->cc->rank, size = k->cc->size;
    size_t mine = conf_uneven(k->count, me), at = 0;
    size_t *lens = mp_alloc((size_t)size * sizeof(size_t));
    void *in = mp_alloc(mine + 1), *out = NULL;
    unsigned char *want;

    conf_fill_bytes(in, mine, seed, me, 0);
    CONF_RUN(k, weft_allgather_bytes(in, mine, &out, lens, k->cc->comm),
             weft_iallgather_bytes(in, mine, &out, lens, k->cc->comm, &req_));
    for (int i = 0; i < size; i++) {
        if (lens[i] != conf_uneven(k->count, i))
            conf_fail(k, "lens[%d] is %zu, expected %zu", i, lens[i], conf_uneven(k->count, i));
        want = mp_alloc(lens[i] + 1);
        conf_fill_bytes(want, lens[i], seed, i, 0);
        if (lens[i])
            conf_check_same(k, (char *)out + at, want, lens[i], "rank's bytes in *out");
        at += lens[i];
        free(want);
    }
    weft_free(out);
    free(in);
    free(lens);
}

void conf_run_bytes(const conf_comm_t *cc, const conf_plan_t *p)
{
    conf_case_t k = { .cc = cc, .op = -1, .dt = WEFT_UINT8 };

    if (!(p->funcs & (1u << CONF_F_BYTES)))
        return;
    for (int c = 0; c < p->ncounts; c++) {
        int first_root = p->counts[c] <= p->all_roots_max ? 0 : cc->size - 1;

        k.count = p->counts[c];
        k.func = "allgather_bytes";
        k.root = CONF_NO_ROOT;
        k.nonblocking = conf_pick_nonblocking();
        allgather_bytes_case(&k);
        conf_cases++;
        k.func = "broadcast_bytes";
        for (int root = first_root; root < cc->size; root++) {
            k.root = root;
            k.nonblocking = conf_pick_nonblocking();
            broadcast_bytes_case(&k);
            conf_cases++;
        }
    }
}
