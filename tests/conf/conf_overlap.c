/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * conf_overlap.c: nonblocking collectives in flight on several
 * communicators at once. Every rank starts two operations on each of its
 * communicators before waiting for any, then waits for them in an order
 * that differs between ranks (forward on odd world ranks, backward on
 * even ones), so that progress on one communicator must not depend on
 * waiting for another. The operation a communicator gets depends on its
 * name only, so that all its members start the same ones. Then every kind
 * of operation at once on each communicator, a blocking barrier behind
 * them, and the operations completed newest first by polling weft_test.
 */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "tests/conf/conf.h"

#define PER_COMM 2
#define MAX_PENDING 64
#define OVERLAP_COUNT 1031

enum { OV_ALLREDUCE, OV_ALLGATHER, OV_BCAST, OV_ALLTOALL, OV_REDUCE_SCATTER, OV_KINDS };

typedef struct pending {
    int kind;
    conf_case_t k;
    conf_move_t m;
    uint64_t seed;
    void *in, *out;
    weft_request_t req;
} pending_t;

static void start(pending_t *p, const conf_comm_t *cc, int kind)
{
    conf_case_t *k = &p->k;
    size_t n = OVERLAP_COUNT, size = (size_t)cc->size;
    int me = cc->rank;
    weft_result_t rc = WEFT_SUCCESS;

    memset(p, 0, sizeof(*p));
    p->kind = kind;
    *k = (conf_case_t){ .cc = cc, .count = n, .root = CONF_NO_ROOT, .op = -1,
                        .nonblocking = 1 };
    switch (kind) {
    case OV_ALLREDUCE:
    case OV_REDUCE_SCATTER:
        k->func = kind == OV_ALLREDUCE ? "overlap iallreduce" : "overlap ireduce_scatter";
        k->dt = kind == OV_ALLREDUCE ? WEFT_FLOAT32 : WEFT_INT64;
        k->op = kind == OV_ALLREDUCE ? WEFT_SUM : CONF_PREMUL;
        p->seed = conf_seed(k, 5);
        p->in = mp_alloc(n * size * conf_esize(k->dt));
        p->out = mp_alloc(n * conf_esize(k->dt));
        conf_fill_input(k, p->seed, me, p->in, kind == OV_ALLREDUCE ? n : n * size);
        if (kind == OV_ALLREDUCE)
            rc = weft_iallreduce(p->in, p->out, n, k->dt, conf_weft_op(k->dt, k->op),
                                 cc->comm, &p->req);
        else
            rc = weft_ireduce_scatter(p->in, p->out, n, k->dt, conf_weft_op(k->dt, k->op),
                                      cc->comm, &p->req);
        break;
    case OV_ALLGATHER:
        k->func = "overlap iallgather";
        k->dt = WEFT_UINT8;
        conf_move_begin(&p->m, k, n * size);
        p->in = conf_input_of(&p->m, me, n);
        for (int i = 0; i < cc->size; i++)
            conf_expect_block(&p->m, p->m.want, (size_t)i * n, i, 0, n);
        rc = weft_iallgather(p->in, p->m.got, n, k->dt, cc->comm, &p->req);
        break;
    case OV_BCAST:
        k->func = "overlap ibroadcast";
        k->dt = WEFT_FLOAT16;
        k->root = cc->size - 1;
        conf_move_begin(&p->m, k, n);
        if (me == k->root)
            conf_expect_block(&p->m, p->m.got, 0, me, 0, n);
        conf_expect_block(&p->m, p->m.want, 0, k->root, 0, n);
        rc = weft_ibroadcast(p->m.got, n, k->dt, k->root, cc->comm, &p->req);
        break;
    case OV_ALLTOALL:
        k->func = "overlap ialltoall";
        k->dt = WEFT_INT32;
        conf_move_begin(&p->m, k, n * size);
        p->in = conf_input_of(&p->m, me, n * size);
        for (int i = 0; i < cc->size; i++)
            conf_expect_block(&p->m, p->m.want, (size_t)i * n, i, (size_t)me * n, n);
        rc = weft_ialltoall(p->in, p->m.got, n, k->dt, cc->comm, &p->req);
        break;
    }
    conf_check_rc(k, rc, k->func);
}

/* Polls with weft_test, sleeping between polls: ranks outnumber cores. */
static void test_until_done(pending_t *p)
{
    int done = 0;

    while (!done) {
        weft_result_t rc = weft_test(&p->req, &done, NULL);

        conf_check_rc(&p->k, rc, "weft_test");
        if (!done)
            mp_sleep_us(50);
    }
    if (p->req)
        conf_fail(&p->k, "weft_test reported done but left the request set");
}

static void finish(pending_t *p, int by_test)
{
    conf_case_t *k = &p->k;

    if (by_test)
        test_until_done(p);
    else
        conf_wait(k, &p->req);
    if (p->kind == OV_ALLREDUCE)
        conf_check_reduced(k, p->seed, 0, k->cc->size - 1, p->out, k->count, 0, "recvbuf");
    else if (p->kind == OV_REDUCE_SCATTER)
        conf_check_reduced(k, p->seed, 0, k->cc->size - 1, p->out, k->count,
                           (size_t)k->cc->rank * k->count, "recvbuf");
    else
        conf_move_end(&p->m);
    free(p->in);
    free(p->out);
    conf_cases++;
}

void conf_run_overlap(conf_comm_t *ccs, int n)
{
    static pending_t pend[MAX_PENDING];
    int npend = 0, world_rank = ccs[0].rank;

    for (int i = 0; i < n; i++) {
        uint64_t h = ccs[i].salt;

        for (int j = 0; j < PER_COMM && npend < MAX_PENDING; j++)
            start(&pend[npend++], &ccs[i], (int)((h >> (8 * j)) % OV_KINDS));
    }
    for (int i = 0; i < npend; i++)
        finish(&pend[world_rank % 2 ? i : npend - 1 - i], 0);

    for (int i = 0; i < n; i++) {
        conf_case_t k = { .func = "barrier among pending operations", .op = -1,
                          .root = CONF_NO_ROOT, .cc = &ccs[i] };

        for (int kind = 0; kind < OV_KINDS; kind++)
            start(&pend[kind], &ccs[i], kind);
        /* a blocking call must complete behind the pending ones */
        conf_check_rc(&k, weft_barrier(ccs[i].comm), "weft_barrier");
        for (int kind = OV_KINDS - 1; kind >= 0; kind--)
            finish(&pend[kind], 1);
    }
}
