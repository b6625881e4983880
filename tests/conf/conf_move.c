/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * conf_move.c: the operations that move data without reducing it:
 * barrier, broadcast, gather, scatter, allgather, alltoall and their
 * v-variants (uneven counts, empty blocks, displacements in reverse rank
 * order with a gap after every block). Rank r's data is conf_fill_bytes
 * of (seed, r); conf_buffers.c checks every byte of the outputs.
 */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "tests/conf/conf.h"

/* ------------------------------------------------------------ even blocks */

static void broadcast_case(conf_case_t *k)
{
    conf_move_t m;
    size_t n = k->count;

    conf_move_begin(&m, k, n);
    if (k->cc->rank == k->root)
        conf_expect_block(&m, m.got, 0, k->root, 0, n);
    conf_expect_block(&m, m.want, 0, k->root, 0, n);
    CONF_RUN(k, weft_broadcast(m.got, n, k->dt, k->root, k->cc->comm),
        weft_ibroadcast(m.got, n, k->dt, k->root, k->cc->comm, &req_));
    conf_move_end(&m);
}

static void gather_case(conf_case_t *k)
{
    conf_move_t m;
    size_t n = k->count;
    int me = k->cc->rank, size = k->cc->size, at_root = me == k->root;
    void *in;
    const void *send;

    conf_move_begin(&m, k, (size_t)size * n);
    in = conf_input_of(&m, me, n);
    send = in;
    if (at_root && k->in_place) {
        conf_expect_block(&m, m.got, (size_t)me * n, me, 0, n);
        send = conf_pick_same_pointer() ? (char *)m.got + (size_t)me * n * m.es : WEFT_IN_PLACE;
    }
    if (at_root)
        for (int i = 0; i < size; i++)
            conf_expect_block(&m, m.want, (size_t)i * n, i, 0, n);
    CONF_RUN(k, weft_gather(send, at_root ? m.got : NULL, n, k->dt, k->root, k->cc->comm),
        weft_igather(send, at_root ? m.got : NULL, n, k->dt, k->root, k->cc->comm, &req_));
    conf_check_input(&m, in, me, n);
    conf_move_end(&m);
    free(in);
}

static void scatter_case(conf_case_t *k)
{
    conf_move_t m;
    size_t n = k->count;
    int me = k->cc->rank, size = k->cc->size, at_root = me == k->root;
    void *in = NULL, *recv;

    conf_move_begin(&m, k, n);
    recv = m.got;
    if (at_root) {
        in = conf_input_of(&m, me, (size_t)size * n);
        if (k->in_place)
            recv = WEFT_IN_PLACE; /* root's block stays in sendbuf */
    }
    if (!(at_root && k->in_place))
        conf_expect_block(&m, m.want, 0, k->root, (size_t)me * n, n);
    CONF_RUN(k, weft_scatter(in, recv, n, k->dt, k->root, k->cc->comm),
        weft_iscatter(in, recv, n, k->dt, k->root, k->cc->comm, &req_));
    if (at_root)
        conf_check_input(&m, in, me, (size_t)size * n);
    conf_move_end(&m);
    free(in);
}

static void allgather_case(conf_case_t *k)
{
    conf_move_t m;
    size_t n = k->count;
    int me = k->cc->rank, size = k->cc->size;
    void *in;
    const void *send;

    conf_move_begin(&m, k, (size_t)size * n);
    in = conf_input_of(&m, me, n);
    send = in;
    if (k->in_place) {
        conf_expect_block(&m, m.got, (size_t)me * n, me, 0, n);
        send = conf_pick_same_pointer() ? (char *)m.got + (size_t)me * n * m.es : WEFT_IN_PLACE;
    }
    for (int i = 0; i < size; i++)
        conf_expect_block(&m, m.want, (size_t)i * n, i, 0, n);
    CONF_RUN(k, weft_allgather(send, m.got, n, k->dt, k->cc->comm),
        weft_iallgather(send, m.got, n, k->dt, k->cc->comm, &req_));
    conf_check_input(&m, in, me, n);
    conf_move_end(&m);
    free(in);
}

static void alltoall_case(conf_case_t *k)
{
    conf_move_t m;
    size_t n = k->count;
    int me = k->cc->rank, size = k->cc->size;
    void *in;
    const void *send;

    conf_move_begin(&m, k, (size_t)size * n);
    in = conf_input_of(&m, me, (size_t)size * n);
    send = in;
    if (k->in_place) {
        conf_expect_block(&m, m.got, 0, me, 0, (size_t)size * n);
        send = WEFT_IN_PLACE;
    }
    for (int i = 0; i < size; i++)
        conf_expect_block(&m, m.want, (size_t)i * n, i, (size_t)me * n, n);
    CONF_RUN(k, weft_alltoall(send, m.got, n, k->dt, k->cc->comm),
        weft_ialltoall(send, m.got, n, k->dt, k->cc->comm, &req_));
    conf_check_input(&m, in, me, (size_t)size * n);
    conf_move_end(&m);
    free(in);
}

/* ------------------------------------------------------------- v-variants */

/* Blocks in reverse rank order, one element of gap after each; returns
 * the span. */
static size_t layout(const size_t *counts, int size, size_t *displs)
{
    size_t at = 0;

    for (int i = size - 1; i >= 0; i--) {
        displs[i] = at;
        at += counts[i] + 1;
    }
    return at;
}

/* Elements rank from sends rank to in alltoallv: depends on both, some 0. */
static size_t pair_count(size_t count, int from, int to)
{
    if (count == 0 || (from + 2 * to) % 3 == 1)
        return 0;
    return count + (size_t)((from * 7 + to * 3) % 5);
}

static void gatherv_case(conf_case_t *k, int all)
{
    conf_move_t m;
    int me = k->cc->rank, size = k->cc->size, at_root = all || me == k->root;
    size_t *counts = mp_alloc((size_t)size * sizeof(size_t));
    size_t *displs = mp_alloc((size_t)size * sizeof(size_t)), span, mine;
    void *in, *recv;
    const void *send;

    for (int i = 0; i < size; i++)
        counts[i] = conf_uneven(k->count, i);
    span = layout(counts, size, displs);
    mine = counts[me];
    conf_move_begin(&m, k, span);
    in = conf_input_of(&m, me, mine);
    send = in;
    if (at_root && k->in_place) {
        conf_expect_block(&m, m.got, displs[me], me, 0, mine);
        send = conf_pick_same_pointer() ? (char *)m.got + displs[me] * m.es : WEFT_IN_PLACE;
    }
    if (at_root)
        for (int i = 0; i < size; i++)
            conf_expect_block(&m, m.want, displs[i], i, 0, counts[i]);
    recv = at_root ? m.got : NULL;
    if (all)
        CONF_RUN(k, weft_allgatherv(send, mine, recv, counts, displs, k->dt, k->cc->comm),
            weft_iallgatherv(send, mine, recv, counts, displs, k->dt, k->cc->comm, &req_));
    else
        CONF_RUN(k, weft_gatherv(send, mine, recv, at_root ? counts : NULL,
                            at_root ? displs : NULL, k->dt, k->root, k->cc->comm),
            weft_igatherv(send, mine, recv, at_root ? counts : NULL, at_root ? displs : NULL,
                          k->dt, k->root, k->cc->comm, &req_));
    conf_check_input(&m, in, me, mine);
    conf_move_end(&m);
    free(in);
    free(counts);
    free(displs);
}

static void scatterv_case(conf_case_t *k)
{
    conf_move_t m;
    int me = k->cc->rank, size = k->cc->size, at_root = me == k->root;
    size_t *counts = mp_alloc((size_t)size * sizeof(size_t));
    size_t *displs = mp_alloc((size_t)size * sizeof(size_t)), span, mine;
    void *in = NULL, *recv;

    for (int i = 0; i < size; i++)
        counts[i] = conf_uneven(k->count, i);
    span = layout(counts, size, displs);
    mine = counts[me];
    conf_move_begin(&m, k, mine);
    recv = m.got;
    if (at_root) {
        in = conf_input_of(&m, me, span);
        if (k->in_place)
            recv = WEFT_IN_PLACE;
    }
    if (!(at_root && k->in_place))
        conf_expect_block(&m, m.want, 0, k->root, displs[me], mine);
    CONF_RUN(k, weft_scatterv(in, at_root ? counts : NULL, at_root ? displs : NULL, recv, mine,
                         k->dt, k->root, k->cc->comm),
        weft_iscatterv(in, at_root ? counts : NULL, at_root ? displs : NULL, recv, mine,
                       k->dt, k->root, k->cc->comm, &req_));
    if (at_root)
        conf_check_input(&m, in, me, span);
    conf_move_end(&m);
    free(in);
    free(counts);
    free(displs);
}

static void alltoallv_case(conf_case_t *k)
{
    conf_move_t m;
    int me = k->cc->rank, size = k->cc->size;
    size_t *scounts = mp_alloc((size_t)size * sizeof(size_t));
    size_t *sdispls = mp_alloc((size_t)size * sizeof(size_t));
    size_t *rcounts = mp_alloc((size_t)size * sizeof(size_t));
    size_t *rdispls = mp_alloc((size_t)size * sizeof(size_t));
    size_t *theirs = mp_alloc((size_t)size * sizeof(size_t));
    size_t *their_displs = mp_alloc((size_t)size * sizeof(size_t));
    size_t sspan, rspan;
    void *in;

    for (int j = 0; j < size; j++) {
        scounts[j] = pair_count(k->count, me, j);
        rcounts[j] = pair_count(k->count, j, me);
    }
    sspan = layout(scounts, size, sdispls);
    rspan = layout(rcounts, size, rdispls);
    conf_move_begin(&m, k, rspan);
    in = conf_input_of(&m, me, sspan);
    for (int i = 0; i < size; i++) {
        /* where rank i keeps what it sends here */
        for (int j = 0; j < size; j++)
            theirs[j] = pair_count(k->count, i, j);
        layout(theirs, size, their_displs);
        conf_expect_block(&m, m.want, rdispls[i], i, their_displs[me], rcounts[i]);
    }
    CONF_RUN(k, weft_alltoallv(in, scounts, sdispls, m.got, rcounts, rdispls, k->dt, k->cc->comm),
        weft_ialltoallv(in, scounts, sdispls, m.got, rcounts, rdispls, k->dt, k->cc->comm,
                        &req_));
    conf_check_input(&m, in, me, sspan);
    conf_move_end(&m);
    free(in);
    free(scounts);
    free(sdispls);
    free(rcounts);
    free(rdispls);
    free(theirs);
    free(their_displs);
}

static void gatherv_root(conf_case_t *k)
{
    gatherv_case(k, 0);
}

static void allgatherv_all(conf_case_t *k)
{
    gatherv_case(k, 1);
}

/* ---------------------------------------------------------------- barrier */

/* Nobody leaves before the last rank enters: the last rank enters late and
 * tells the others when (the monotonic clock is the machine's). */
static void barrier_case(const conf_comm_t *cc, int nonblocking)
{
    conf_case_t k = { .func = "barrier", .op = -1, .root = CONF_NO_ROOT, .cc = cc,
                      .nonblocking = nonblocking };
    double entered = 0, left;
    int last = cc->rank == cc->size - 1;

    if (last) {
        mp_sleep_us(20000);
        entered = mp_now();
    }
    CONF_RUN(&k, weft_barrier(cc->comm), weft_ibarrier(cc->comm, &req_));
    left = mp_now();
    conf_check_rc(&k, weft_broadcast(&entered, 1, WEFT_FLOAT64, cc->size - 1, cc->comm),
                  "weft_broadcast of the entry time");
    if (left < entered)
        conf_fail(&k, "left the barrier at %.6f s, before rank %d entered it at %.6f s", left,
                  cc->size - 1, entered);
    conf_cases++;
}

/* ------------------------------------------------------------- the matrix */

typedef void (*move_fn)(conf_case_t *k);

static void run_matrix(const conf_comm_t *cc, const conf_plan_t *p, int func, move_fn fn,
                       int rooted, int has_in_place)
{
    conf_case_t k = { .func = conf_func_names[func], .cc = cc, .op = -1 };

    if (!(p->funcs & (1u << func)))
        return;
    for (int dt = 0; dt < WEFT_DTYPE_COUNT; dt++) {
        if (!(p->dtypes & (1u << dt)))
            continue;
        for (int c = 0; c < p->ncounts; c++) {
            int first_root = rooted && p->counts[c] <= p->all_roots_max ? 0 : cc->size - 1;

            for (int root = first_root; root < cc->size; root++)
                for (int ip = 0; ip <= has_in_place; ip++) {
                    if (!(p->placements & (1u << ip)))
                        continue;
                    k.dt = (weft_dtype_t)dt;
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

void conf_run_movement(const conf_comm_t *cc, const conf_plan_t *p)
{
    if (p->funcs & (1u << CONF_F_BARRIER)) {
        barrier_case(cc, 0);
        barrier_case(cc, 1);
    }
    run_matrix(cc, p, CONF_F_BCAST, broadcast_case, 1, 0);
    run_matrix(cc, p, CONF_F_GATHER, gather_case, 1, 1);
    run_matrix(cc, p, CONF_F_SCATTER, scatter_case, 1, 1);
    run_matrix(cc, p, CONF_F_ALLGATHER, allgather_case, 0, 1);
    run_matrix(cc, p, CONF_F_ALLTOALL, alltoall_case, 0, 1);
}

void conf_run_vectors(const conf_comm_t *cc, const conf_plan_t *p)
{
    run_matrix(cc, p, CONF_F_GATHERV, gatherv_root, 1, 1);
    run_matrix(cc, p, CONF_F_SCATTERV, scatterv_case, 1, 1);
    run_matrix(cc, p, CONF_F_ALLGATHERV, allgatherv_all, 0, 1);
    run_matrix(cc, p, CONF_F_ALLTOALLV, alltoallv_case, 0, 0);
}
