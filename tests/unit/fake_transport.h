/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * fake_transport.h: a transport the test drives by hand, for the unit
 * tests of the request and progress layers, and an instance that uses it.
 *
 * Every isend, irecv and imrecv becomes an operation the test can see
 * (peer, tag, ignore mask, length) and complete when it chooses, with the
 * status, source, tag and length it chooses, as a transport's test would
 * report them (weft/transport.h: a finished operation is reported once,
 * then its handle is gone). improbe finds what the test queued as
 * unexpected. Nothing moves bytes.
 */
#ifndef WEFT_TEST_FAKE_TRANSPORT_H
#define WEFT_TEST_FAKE_TRANSPORT_H

#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "weft/transport.h"
#include "core/progress/instance.h"
#include "core/progress/mctx.h"

#define FAKE_OPS_MAX 64

typedef struct fake_op {
    int kind;                      /* WEFT_P2P_SEND, WEFT_P2P_RECV */
    int peer;                      /* world rank, or WEFT_TRANSPORT_ANY_PEER */
    uint64_t tag, ignore;
    size_t len;
    int done, reported, cancelled;
    weft_transport_completion_t c;
} fake_op_t;

typedef struct fake_transport {
    fake_op_t ops[FAKE_OPS_MAX];
    int nops;
    int progressed;                /* progress() calls */
    int tests;                     /* test() calls */
    /* A message improbe finds once (unexpected), or none. */
    int have_unexpected;
    weft_transport_completion_t unexpected;
} fake_transport_t;

static fake_op_t *fake_add(fake_transport_t *t, int kind, int peer, uint64_t tag,
                           uint64_t ignore, size_t len)
{
    fake_op_t *op = &t->ops[t->nops++];

    memset(op, 0, sizeof(*op));
    op->kind = kind;
    op->peer = peer;
    op->tag = tag;
    op->ignore = ignore;
    op->len = len;
    return op;
}

static weft_result_t fake_isend(void *ctx, int peer, const void *buf, size_t len, uint64_t tag,
                                void *mhandle, void **req)
{
    (void)buf;
    (void)mhandle;
    *req = fake_add(ctx, WEFT_P2P_SEND, peer, tag, 0, len);
    return WEFT_SUCCESS;
}

static weft_result_t fake_irecv(void *ctx, int peer, void *buf, size_t len, uint64_t tag,
                                uint64_t ignore, void *mhandle, void **req)
{
    (void)buf;
    (void)mhandle;
    *req = fake_add(ctx, WEFT_P2P_RECV, peer, tag, ignore, len);
    return WEFT_SUCCESS;
}

static weft_result_t fake_test(void *ctx, void *req, int *done, weft_transport_completion_t *c)
{
    fake_transport_t *t = ctx;
    fake_op_t *op = req;

    t->tests++;
    if (op->reported) /* the ABI: a reported handle is gone */
        return WEFT_ERR_INVALID_ARG;
    *done = op->done;
    if (op->done) {
        *c = op->c;
        op->reported = 1;
    }
    return WEFT_SUCCESS;
}

/* A cancel finishes the operation with WEFT_ERR_ABORTED, as transports do. */
static weft_result_t fake_cancel(void *ctx, void *req)
{
    fake_op_t *op = req;

    (void)ctx;
    op->cancelled = 1;
    if (!op->done) {
        op->done = 1;
        op->c.status = WEFT_ERR_ABORTED;
    }
    return WEFT_SUCCESS;
}

static weft_result_t fake_progress(void *ctx)
{
    ((fake_transport_t *)ctx)->progressed++;
    return WEFT_SUCCESS;
}

static weft_result_t fake_wait_fd(void *ctx, int *fd)
{
    (void)ctx;
    *fd = -1;
    return WEFT_SUCCESS;
}

static weft_result_t fake_improbe(void *ctx, int peer, uint64_t tag, uint64_t ignore,
                                  int *found, void **msg, weft_transport_completion_t *info)
{
    fake_transport_t *t = ctx;

    (void)peer;
    *found = t->have_unexpected && ((t->unexpected.tag ^ tag) & ~ignore) == 0;
    if (*found) {
        *info = t->unexpected;
        *msg = &t->unexpected;
        t->have_unexpected = 0;
    }
    return WEFT_SUCCESS;
}

/* The matched message is received at once: its operation is done. */
static weft_result_t fake_imrecv(void *ctx, void *msg, void *buf, size_t len, void *mhandle,
                                 void **req)
{
    const weft_transport_completion_t *m = msg;
    fake_op_t *op = fake_add(ctx, WEFT_P2P_RECV, m->peer, m->tag, 0, len);

    (void)buf;
    (void)mhandle;
    op->done = 1;
    op->c = *m;
    *req = op;
    return WEFT_SUCCESS;
}

static const weft_transport_v1_t fake_ops = {
    .abi_version = WEFT_TRANSPORT_ABI_VERSION,
    .struct_size = sizeof(weft_transport_v1_t),
    .name = "fake",
    .isend = fake_isend,
    .irecv = fake_irecv,
    .test = fake_test,
    .cancel = fake_cancel,
    .progress = fake_progress,
    .get_wait_fd = fake_wait_fd,
    .improbe = fake_improbe,
    .imrecv = fake_imrecv,
};

/* Finishes op as the transport would: status, source (world rank), tag
 * and length as given. */
static void fake_complete(fake_op_t *op, weft_result_t status, int peer, uint64_t tag,
                          size_t len)
{
    op->done = 1;
    op->c.status = status;
    op->c.peer = peer;
    op->c.tag = tag;
    op->c.len = len;
}

/* An instance of size world ranks, this one rank 0, whose peers are all
 * reached through nplugins fake transports: world rank w through plugin
 * w % nplugins. */
static weft__instance_t *fake_instance(int size, int nplugins, fake_transport_t *fakes)
{
    weft__instance_t *inst;

    if (weft__instance_new(&inst) != WEFT_SUCCESS)
        return NULL;
    inst->timeout_ms = 1000;
    inst->wire.rank = 0;
    inst->wire.size = size;
    inst->wire.local_size = 1;
    inst->wire.plugins.n = nplugins;
    for (int i = 0; i < nplugins; i++) {
        weft__plugin_t *pl = &inst->wire.plugins.plugins[i];

        memset(&fakes[i], 0, sizeof(fakes[i]));
        strcpy(pl->name, "fake");
        pl->ops = &fake_ops;
        pl->ctx = &fakes[i];
        pl->used = 1;
        pthread_mutex_init(&pl->lock, NULL);
    }
    inst->wire.ntransports_used = nplugins;
    inst->wire.peers = calloc((size_t)size, sizeof(*inst->wire.peers));
    for (int w = 0; w < size; w++)
        inst->wire.peers[w].plugin = &inst->wire.plugins.plugins[w % nplugins];
    return inst;
}

static void fake_instance_free(weft__instance_t *inst)
{
    for (int i = 0; i < inst->wire.plugins.n; i++)
        pthread_mutex_destroy(&inst->wire.plugins.plugins[i].lock);
    free(inst->wire.peers);
    weft__instance_free(inst);
}

/* A matching context of n members with the given world ranks (and their
 * reverse map, kept in member_of of the instance's size). */
static void fake_ctx(weft__mctx_t *ctx, weft__instance_t *inst, uint32_t context, int n,
                     const int *world, int *member_of)
{
    for (int w = 0; w < inst->wire.size; w++)
        member_of[w] = -1;
    for (int r = 0; r < n; r++)
        member_of[world[r]] = r;
    weft__mctx_init(ctx, inst, context, n, world, member_of);
}

#endif /* WEFT_TEST_FAKE_TRANSPORT_H */
