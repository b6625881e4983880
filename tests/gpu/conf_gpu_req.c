/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * conf_gpu_req.c: nonblocking calls on device buffers in conf_gpu's shim.
 * A table maps each request of such a call to its buffers; the wrappers of
 * weft_wait, weft_test and weft_waitall copy the result back when they
 * see the request complete, and free the device memory.
 *
 * weft_request_free lets an operation finish in the background, where it
 * still uses the device memory: the shim keeps such a request instead of
 * releasing it (an orphan) and frees the memory once weft_test finds the
 * operation over, copying nothing back (the caller may have freed its
 * host buffers). Destroying a communicator ends its operations, so its
 * entries go with it; weft_mesh_destroy destroys communicators the table
 * cannot name, so the orphans are waited for before it.
 */
#include "config.h"

#include <stdlib.h>

#include "tests/gpu/conf_gpu.h"
#include "tests/mp/mptest.h"

CG_WRAP(weft_wait);
CG_WRAP(weft_test);
CG_WRAP(weft_waitall);
CG_WRAP(weft_request_free);
CG_WRAP(weft_comm_destroy);
CG_WRAP(weft_mesh_destroy);

typedef struct pending {
    weft_request_t req;
    weft_comm_t comm;
    cg_call_t call;
    int orphan;
} pending_t;

static pending_t *table;
static int used, cap, orphans;

static int find(weft_request_t req)
{
    for (int i = 0; i < used; i++)
        if (table[i].req == req)
            return i;
    return -1;
}

static void forget(int i)
{
    orphans -= table[i].orphan;
    table[i] = table[--used];
}

/* Orphans whose operation is over: their memory is no longer used. */
static void reap(void)
{
    for (int i = 0; orphans && i < used; i++) {
        int done = 0;

        if (!table[i].orphan)
            continue;
        __real_weft_test(&table[i].req, &done, NULL);
        if (done || !table[i].req) {
            cg_dev_drop(&table[i].call);
            forget(i--);
        }
    }
}

/* The operation of req is over with rc. */
static void complete(weft_request_t req, weft_result_t rc)
{
    int i = req ? find(req) : -1;

    if (i < 0)
        return;
    cg_dev_finish(&table[i].call, rc);
    forget(i);
}

weft_result_t cg_req_started(cg_call_t *c, weft_result_t rc, weft_comm_t comm,
                             weft_request_t *req)
{
    int stale;

    reap();
    if (rc != WEFT_SUCCESS) {
        cg_dev_finish(c, rc);
        return rc;
    }
    /* an entry of the same address belongs to a request that went with
     * its communicator, unseen (a mesh's) */
    if ((stale = find(*req)) >= 0) {
        cg_dev_drop(&table[stale].call);
        forget(stale);
    }
    if (used == cap) {
        cap = cap ? 2 * cap : 16;
        table = realloc(table, (size_t)cap * sizeof(*table));
        MP_ASSERT(table, "conf_gpu: out of memory");
    }
    table[used++] = (pending_t){ .req = *req, .comm = comm, .call = *c };
    return rc;
}

weft_result_t __wrap_weft_wait(weft_request_t *req, weft_status_t *status)
{
    weft_request_t r = req ? *req : NULL;
    weft_result_t rc;

    reap();
    rc = __real_weft_wait(req, status);
    if (r && !*req)
        complete(r, rc);
    return rc;
}

weft_result_t __wrap_weft_test(weft_request_t *req, int *done, weft_status_t *status)
{
    weft_request_t r = req ? *req : NULL;
    weft_result_t rc;

    reap();
    rc = __real_weft_test(req, done, status);
    if (r && done && *done && !*req)
        complete(r, rc);
    return rc;
}

/* Each request's own result tells whether to copy it back: the statuses
 * are asked for when the caller passed none. */
weft_result_t __wrap_weft_waitall(int n, weft_request_t *reqs, weft_status_t *statuses)
{
    weft_request_t *before;
    weft_status_t *st = statuses;
    weft_result_t rc;

    reap();
    if (n <= 0 || !reqs)
        return __real_weft_waitall(n, reqs, statuses);
    before = mp_alloc((size_t)n * sizeof(*before));
    for (int i = 0; i < n; i++)
        before[i] = reqs[i];
    if (!st)
        st = mp_alloc((size_t)n * sizeof(*st));
    rc = __real_weft_waitall(n, reqs, st);
    for (int i = 0; i < n; i++)
        if (before[i] && !reqs[i])
            complete(before[i], st[i].error);
    if (st != statuses)
        free(st);
    free(before);
    return rc;
}

weft_result_t __wrap_weft_request_free(weft_request_t *req)
{
    int i;

    reap();
    if (!req || !*req || (i = find(*req)) < 0)
        return __real_weft_request_free(req);
    if (!table[i].orphan) {
        table[i].orphan = 1;
        orphans++;
    }
    *req = NULL;
    return WEFT_SUCCESS;
}

weft_result_t __wrap_weft_comm_destroy(weft_comm_t comm)
{
    weft_result_t rc;

    reap();
    rc = __real_weft_comm_destroy(comm);
    if (rc != WEFT_SUCCESS)
        return rc;
    for (int i = 0; i < used; i++)
        if (table[i].comm == comm) {
            cg_dev_drop(&table[i].call);
            forget(i--);
        }
    return rc;
}

weft_result_t __wrap_weft_mesh_destroy(weft_mesh_t mesh)
{
    for (int i = 0; mesh && i < used; i++)
        if (table[i].orphan) {
            __real_weft_wait(&table[i].req, NULL);
            cg_dev_drop(&table[i].call);
            forget(i--);
        }
    return __real_weft_mesh_destroy(mesh);
}
