/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * conf_reduce.c: reductions against the serial reference: allreduce,
 * reduce (every root at small counts), reduce_scatter(v), scan and
 * exscan, for every dtype x legal operator of the plan, in place and not,
 * blocking and not. Every output buffer has one guard element past its
 * end that must come back untouched.
 */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "tests/conf/conf.h"

#define GUARD_SEED 0x6a09e667f3bcc908ull

typedef void (*reduce_case_fn)(conf_case_t *k);

/* Output of count elements plus a guard element of known bytes. */
static void *alloc_out(const conf_case_t *k, size_t count)
{
    size_t es = conf_esize(k->dt);
    void *buf = mp_alloc((count + 1) * es);

    conf_fill_bytes(buf, (count + 1) * es, GUARD_SEED, k->cc->rank, 0);
    return buf;
}

static void check_guard(const conf_case_t *k, const void *buf, size_t count)
{
    size_t es = conf_esize(k->dt);

    conf_check_bytes(k, (const char *)buf + count * es, es, GUARD_SEED, k->cc->rank,
                     count * es, "guard element past the output");
}

/* Uneven blocks for the v-variants: some empty, others of different
 * sizes; all empty when count is 0. */
size_t conf_uneven(size_t count, int i)
{
    if (count == 0 || i % 3 == 1)
        return 0;
    return count + ((size_t)i * (count + 1)) / 4;
}

/* ---------------------------------------------------------------- allreduce */

static void allreduce_case(conf_case_t *k)
{
    uint64_t seed = conf_seed(k, 0);
    size_t n = k->count;
    void *in = mp_alloc(n * conf_esize(k->dt) + 1), *out = alloc_out(k, n);
    const void *send = in;
    weft_op_t op = conf_weft_op(k->dt, k->op);
    weft_request_t req = NULL;
    weft_result_t rc;

    conf_fill_input(k, seed, k->cc->rank, in, n);
    if (k->in_place) {
        conf_fill_input(k, seed, k->cc->rank, out, n);
        send = conf_pick_same_pointer() ? out : WEFT_IN_PLACE;
    }
    if (k->nonblocking) {
        rc = weft_iallreduce(send, out, n, k->dt, op, k->cc->comm, &req);
        conf_check_rc(k, rc, "weft_iallreduce");
        conf_wait(k, &req);
    } else {
        rc = weft_allreduce(send, out, n, k->dt, op, k->cc->comm);
        conf_check_rc(k, rc, "weft_allreduce");
    }
    conf_check_reduced(k, seed, 0, k->cc->size - 1, out, n, 0, "recvbuf");
    check_guard(k, out, n);
    if (!k->in_place) {
        void *want = mp_alloc(n * conf_esize(k->dt) + 1);

        conf_fill_input(k, seed, k->cc->rank, want, n);
        conf_check_same(k, in, want, n * conf_esize(k->dt), "sendbuf (must stay as it was)");
        free(want);
    }
    free(in);
    free(out);
}

/* ------------------------------------------------------------------ reduce */

static void reduce_case(conf_case_t *k)
{
    uint64_t seed = conf_seed(k, 0);
    size_t n = k->count;
    int at_root = k->cc->rank == k->root;
    void *in = mp_alloc(n * conf_esize(k->dt) + 1), *out = alloc_out(k, n);
    const void *send = in;
    void *recv = at_root ? out : NULL; /* recvbuf matters only at root */
    weft_op_t op = conf_weft_op(k->dt, k->op);
    weft_request_t req = NULL;
    weft_result_t rc;

    conf_fill_input(k, seed, k->cc->rank, in, n);
    if (k->in_place) {
        conf_fill_input(k, seed, k->cc->rank, out, n);
        recv = out;
        send = conf_pick_same_pointer() ? recv : WEFT_IN_PLACE;
    }
    if (k->nonblocking) {
        rc = weft_ireduce(send, recv, n, k->dt, op, k->root, k->cc->comm, &req);
        conf_check_rc(k, rc, "weft_ireduce");
        conf_wait(k, &req);
    } else {
        rc = weft_reduce(send, recv, n, k->dt, op, k->root, k->cc->comm);
        conf_check_rc(k, rc, "weft_reduce");
    }
    if (at_root)
        conf_check_reduced(k, seed, 0, k->cc->size - 1, out, n, 0, "recvbuf at root");
    check_guard(k, out, n);
    free(in);
    free(out);
}

/* ----------------------------------------------------------- reduce_scatter */

static void reduce_scatter_case(conf_case_t *k, int vector)
{
    uint64_t seed = conf_seed(k, 0);
    int size = k->cc->size, me = k->cc->rank;
    size_t es = conf_esize(k->dt), total = 0, mine, offset = 0;
    size_t *counts = mp_alloc((size_t)size * sizeof(size_t));
    void *in, *out;
    const void *send;
    weft_op_t op = conf_weft_op(k->dt, k->op);
    weft_request_t req = NULL;
    weft_result_t rc;

    for (int i = 0; i < size; i++) {
        counts[i] = vector ? conf_uneven(k->count, i) : k->count;
        if (i < me)
            offset += counts[i];
        total += counts[i];
    }
    mine = counts[me];
    in = mp_alloc(total * es + 1);
    conf_fill_input(k, seed, me, in, total);
    send = in;
    if (k->in_place) {
        /* the input is recvbuf, the result its first block */
        out = alloc_out(k, total);
        conf_fill_input(k, seed, me, out, total);
        send = conf_pick_same_pointer() ? out : WEFT_IN_PLACE;
    } else {
        out = alloc_out(k, mine);
    }
    if (vector && k->nonblocking)
        rc = weft_ireduce_scatterv(send, out, counts, k->dt, op, k->cc->comm, &req);
    else if (vector)
        rc = weft_reduce_scatterv(send, out, counts, k->dt, op, k->cc->comm);
    else if (k->nonblocking)
        rc = weft_ireduce_scatter(send, out, k->count, k->dt, op, k->cc->comm, &req);
    else
        rc = weft_reduce_scatter(send, out, k->count, k->dt, op, k->cc->comm);
    conf_check_rc(k, rc, k->func);
    if (k->nonblocking)
        conf_wait(k, &req);
    conf_check_reduced(k, seed, 0, size - 1, out, mine, offset, "recvbuf");
    check_guard(k, out, k->in_place ? total : mine);
    free(counts);
    free(in);
    free(out);
}

static void reduce_scatter_even(conf_case_t *k)
{
    reduce_scatter_case(k, 0);
}

static void reduce_scatter_vector(conf_case_t *k)
{
    reduce_scatter_case(k, 1);
}

/* --------------------------------------------------------------- scan, exscan */

static void scan_case(conf_case_t *k, int exclusive)
{
    uint64_t seed = conf_seed(k, 0);
    size_t n = k->count, es = conf_esize(k->dt);
    int me = k->cc->rank;
    void *in = mp_alloc(n * es + 1), *out = alloc_out(k, n), *before = mp_alloc(n * es + 1);
    const void *send = in;
    weft_op_t op = conf_weft_op(k->dt, k->op);
    weft_request_t req = NULL;
    weft_result_t rc;

    conf_fill_input(k, seed, me, in, n);
    if (k->in_place) {
        conf_fill_input(k, seed, me, out, n);
        send = conf_pick_same_pointer() ? out : WEFT_IN_PLACE;
    }
    memcpy(before, out, n * es);
    if (exclusive && k->nonblocking)
        rc = weft_iexscan(send, out, n, k->dt, op, k->cc->comm, &req);
    else if (exclusive)
        rc = weft_exscan(send, out, n, k->dt, op, k->cc->comm);
    else if (k->nonblocking)
        rc = weft_iscan(send, out, n, k->dt, op, k->cc->comm, &req);
    else
        rc = weft_scan(send, out, n, k->dt, op, k->cc->comm);
    conf_check_rc(k, rc, k->func);
    if (k->nonblocking)
        conf_wait(k, &req);
    if (!exclusive)
        conf_check_reduced(k, seed, 0, me, out, n, 0, "recvbuf");
    else if (me > 0)
        conf_check_reduced(k, seed, 0, me - 1, out, n, 0, "recvbuf");
    else
        conf_check_same(k, out, before, n * es, "rank 0's recvbuf (exscan leaves it)");
    check_guard(k, out, n);
    free(in);
    free(out);
    free(before);
}

static void scan_inclusive(conf_case_t *k)
{
    scan_case(k, 0);
}

static void scan_exclusive(conf_case_t *k)
{
    scan_case(k, 1);
}

/* ------------------------------------------------------------- the matrix */

/* Every dtype x legal operator x count x in place of the plan; for rooted
 * operations every root up to all_roots_max elements, the last rank above. */
static void run_matrix(const conf_comm_t *cc, const conf_plan_t *p, int func,
                       reduce_case_fn fn, int rooted)
{
    conf_case_t k = { .func = conf_func_names[func], .cc = cc };

    if (!(p->funcs & (1u << func)))
        return;
    for (int dt = 0; dt < WEFT_DTYPE_COUNT; dt++) {
        if (!(p->dtypes & (1u << dt)))
            continue;
        for (int op = 0; op < CONF_NOPS; op++) {
            if (!(p->ops & (1u << op)) || !conf_legal((weft_dtype_t)dt, op))
                continue;
            for (int c = 0; c < p->ncounts; c++) {
                int first_root = 0;

                if (!rooted)
                    first_root = cc->size - 1;
                else if (p->counts[c] > p->all_roots_max)
                    first_root = cc->size - 1;
                for (int root = first_root; root < cc->size; root++) {
                    for (int ip = 0; ip < 2; ip++) {
                        if (!(p->placements & (1u << ip)))
                            continue;
                        k.dt = (weft_dtype_t)dt;
                        k.op = op;
                        k.count = p->counts[c];
                        k.root = rooted ? root : CONF_NO_ROOT;
                        k.in_place = ip;
                        k.nonblocking = conf_pick_nonblocking();
                        fn(&k);
                        conf_cases++;
                    }
                }
            }
        }
    }
}

void conf_run_reductions(const conf_comm_t *cc, const conf_plan_t *p)
{
    run_matrix(cc, p, CONF_F_ALLREDUCE, allreduce_case, 0);
    run_matrix(cc, p, CONF_F_REDUCE, reduce_case, 1);
    run_matrix(cc, p, CONF_F_REDUCE_SCATTER, reduce_scatter_even, 0);
    run_matrix(cc, p, CONF_F_REDUCE_SCATTERV, reduce_scatter_vector, 0);
    run_matrix(cc, p, CONF_F_SCAN, scan_inclusive, 0);
    run_matrix(cc, p, CONF_F_EXSCAN, scan_exclusive, 0);
}
