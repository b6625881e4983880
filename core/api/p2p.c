/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * p2p.c: the point-to-point API: argument checks, requests, completion.
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/api/p2p_stage.h"
#include "core/base/error.h"
#include "core/base/log.h"
#include "core/comm/comm.h"
#include "core/dt/dtype.h"
#include "core/progress/progress.h"
#include "core/progress/request.h"

static weft_result_t check_op(const char *fn, int kind, const void *buf, size_t count,
                              weft_dtype_t dt, int peer, int tag, weft_comm_t comm,
                              size_t *bytes)
{
    weft_result_t rc = weft__comm_check(comm, fn);
    size_t elem;

    if (rc != WEFT_SUCCESS)
        return rc;
    if (weft__comm_aborted(comm))
        return weft__error(WEFT_ERR_ABORTED, "%s: the communicator was aborted", fn);
    elem = weft__dtype_bytes(dt);
    if (!elem)
        return weft__error(WEFT_ERR_INVALID_ARG, "%s: dt %d is not a weft_dtype_t", fn, (int)dt);
    if (count > SIZE_MAX / elem)
        return weft__error(WEFT_ERR_INVALID_ARG, "%s: count %zu overflows the buffer size",
                           fn, count);
    if (count > 0 && !buf)
        return weft__error(WEFT_ERR_INVALID_ARG, "%s: buf is NULL with count %zu", fn, count);
    if (kind == WEFT_P2P_RECV && peer == WEFT_ANY_SOURCE)
        ;
    else if (peer < 0 || peer >= comm->size)
        return weft__error(WEFT_ERR_INVALID_ARG,
                           "%s: peer %d is not a rank of the communicator (size %d)", fn, peer,
                           comm->size);
    if (kind == WEFT_P2P_RECV && tag == WEFT_ANY_TAG)
        ;
    else if (tag < 0)
        return weft__error(WEFT_ERR_INVALID_ARG, "%s: tag %d is negative (0..WEFT_TAG_MAX%s)",
                           fn, tag, kind == WEFT_P2P_RECV ? " or WEFT_ANY_TAG" : "");
    *bytes = count * elem;
    return WEFT_SUCCESS;
}

static weft_result_t post_one(const char *fn, int kind, const void *buf, size_t count,
                              weft_dtype_t dt, int peer, int tag, weft_comm_t comm,
                              weft_request_t *req)
{
    struct weft_request *r;
    size_t bytes = 0;
    weft_result_t rc;

    if (!req)
        return weft__error(WEFT_ERR_INVALID_ARG, "%s: req is NULL", fn);
    rc = check_op(fn, kind, buf, count, dt, peer, tag, comm, &bytes);
    if (rc != WEFT_SUCCESS)
        return rc;
    if (__builtin_expect(weft__p2p_maybe_staged(comm), 0)) {
        weft_p2p_op_t op = { kind, (void *)buf, count, dt, peer, tag };
        int handled;

        rc = weft__p2p_stage_post(comm, 1, &op, req, fn, &handled);
        if (handled || rc != WEFT_SUCCESS)
            return rc;
    }
    rc = weft__request_create(&comm->ctx, 1, &r);
    if (rc != WEFT_SUCCESS)
        return rc;
    weft__subop_fill(&r->subs[0], &comm->ctx, kind, buf, bytes, weft__dtype_bytes(dt), peer,
                     tag);
    weft__request_start(r);
    *req = r;
    return WEFT_SUCCESS;
}

WEFT_API weft_result_t weft_isend(const void *buf, size_t count, weft_dtype_t dt, int peer,
                                  int tag, weft_comm_t comm, weft_request_t *req)
{
    return post_one("weft_isend", WEFT_P2P_SEND, buf, count, dt, peer, tag, comm, req);
}

WEFT_API weft_result_t weft_irecv(void *buf, size_t count, weft_dtype_t dt, int peer, int tag,
                                  weft_comm_t comm, weft_request_t *req)
{
    return post_one("weft_irecv", WEFT_P2P_RECV, buf, count, dt, peer, tag, comm, req);
}

WEFT_API weft_result_t weft_batch_isend_irecv(int n, const weft_p2p_op_t *ops, weft_comm_t comm,
                                              weft_request_t *req)
{
    weft_result_t rc = weft__comm_check(comm, "weft_batch_isend_irecv");

    if (rc != WEFT_SUCCESS)
        return rc;
    if (!req)
        return weft__error(WEFT_ERR_INVALID_ARG, "weft_batch_isend_irecv: req is NULL");
    if (n < 0 || (n > 0 && !ops))
        return weft__error(WEFT_ERR_INVALID_ARG,
                           "weft_batch_isend_irecv: n is %d and ops is %p", n, (void *)ops);
    if (n == 0 && weft__comm_aborted(comm))
        return weft__error(WEFT_ERR_ABORTED, "the communicator was aborted");
    for (int i = 0; i < n; i++) {
        size_t bytes;
        char fn[64];

        if (ops[i].kind != WEFT_P2P_SEND && ops[i].kind != WEFT_P2P_RECV)
            return weft__error(WEFT_ERR_INVALID_ARG, "weft_batch_isend_irecv: ops[%d]: kind %d "
                               "is neither WEFT_P2P_SEND nor WEFT_P2P_RECV", i, ops[i].kind);
        rc = check_op("weft_batch_isend_irecv", ops[i].kind, ops[i].buf, ops[i].count,
                      ops[i].dt, ops[i].peer, ops[i].tag, comm, &bytes);
        if (rc == WEFT_SUCCESS)
            continue;
        /* Only a bad element is worth naming: formatting the name of every
         * one took a tenth of a small collective's time (every round of a
         * collective is a batch). The check gives the same verdict again. */
        snprintf(fn, sizeof(fn), "weft_batch_isend_irecv: ops[%d]", i);
        return check_op(fn, ops[i].kind, ops[i].buf, ops[i].count, ops[i].dt, ops[i].peer,
                        ops[i].tag, comm, &bytes);
    }
    if (__builtin_expect(weft__p2p_maybe_staged(comm), 0)) {
        int handled;

        rc = weft__p2p_stage_post(comm, n, ops, req, "weft_batch_isend_irecv", &handled);
        if (handled || rc != WEFT_SUCCESS)
            return rc;
    }
    return weft__request_post_batch(&comm->ctx, n, ops, req);
}

/* Waits for *req; on completion (success or failure of the operation)
 * frees it and clears *req; on timeout leaves it pending. */
static weft_result_t wait_one(const char *fn, weft_request_t *req, weft_status_t *status)
{
    struct weft_request *r;
    weft_result_t rc;

    if (!req)
        return weft__error(WEFT_ERR_INVALID_ARG, "%s: req is NULL", fn);
    r = *req;
    if (!r) {
        if (status) {
            memset(status, 0, sizeof(*status));
            status->source = WEFT_ANY_SOURCE;
            status->tag = WEFT_ANY_TAG;
        }
        return WEFT_SUCCESS;
    }
    rc = weft__request_wait(r, r->inst->timeout_ms);
    if (rc == WEFT_ERR_TIMEOUT) {
        char what[128];

        weft__request_describe(r, what, sizeof(what));
        return weft__error(WEFT_ERR_TIMEOUT, "%s: %s did not complete within %d ms "
                           "(WEFT_TIMEOUT); the request is still pending", fn, what,
                           r->inst->timeout_ms);
    }
    weft__request_status(r, status);
    rc = r->result;
    if (rc != WEFT_SUCCESS) {
        char what[128];

        snprintf(what, sizeof(what), "%s", "operation");
        for (int i = 0; i < r->nsub; i++)
            if (r->subs[i].result == rc) {
                const weft__subop_t *sub = &r->subs[i];

                snprintf(what, sizeof(what), "%s rank %d", sub->kind == WEFT_P2P_SEND ?
                         "send to" : "receive from",
                         sub->peer == WEFT_ANY_SOURCE ? sub->source : sub->peer);
                break;
            }
        if (weft__request_why(r))
            weft__error(rc, "%s: %s", fn, weft__request_why(r));
        else if (rc == WEFT_ERR_TRUNCATED)
            weft__error(rc, "%s: %s: the message had %zu bytes, the buffer holds %zu", fn,
                        what, r->subs[0].len, r->subs[0].bytes);
        else
            weft__error(rc, "%s: %s failed: %s", fn, what, weft_strerror(rc));
    }
    weft__request_free(r);
    *req = NULL;
    return rc;
}

WEFT_API weft_result_t weft_wait(weft_request_t *req, weft_status_t *status)
{
    return wait_one("weft_wait", req, status);
}

WEFT_API weft_result_t weft_test(weft_request_t *req, int *done, weft_status_t *status)
{
    struct weft_request *r;

    if (!req || !done)
        return weft__error(WEFT_ERR_INVALID_ARG, "weft_test: %s is NULL", req ? "done" : "req");
    r = *req;
    if (!r) {
        *done = 1;
        return wait_one("weft_test", req, status);
    }
    weft__progress(r->inst);
    /* An abort notice found by any thread's progress is applied here, on
     * the communicator's thread, and fails r. */
    weft__mctx_aborted(r->ctx);
    weft__request_poll(r, done);
    if (!*done)
        return WEFT_SUCCESS;
    return wait_one("weft_test", req, status);
}

WEFT_API weft_result_t weft_waitall(int n, weft_request_t *reqs, weft_status_t *statuses)
{
    weft_result_t first = WEFT_SUCCESS;

    if (n < 0 || (n > 0 && !reqs))
        return weft__error(WEFT_ERR_INVALID_ARG, "weft_waitall: n is %d and reqs is %p", n,
                           (void *)reqs);
    for (int i = 0; i < n; i++) {
        weft_result_t rc = wait_one("weft_waitall", &reqs[i], statuses ? &statuses[i] : NULL);

        if (statuses)
            statuses[i].error = rc;
        if (rc != WEFT_SUCCESS && first == WEFT_SUCCESS)
            first = rc;
        /* The deadline passed: the rest stay pending (non-NULL), and the
         * caller must hear of it whatever failed before. */
        if (rc == WEFT_ERR_TIMEOUT)
            return rc;
    }
    return first;
}

WEFT_API weft_result_t weft_request_free(weft_request_t *req)
{
    struct weft_request *r;

    if (!req)
        return weft__error(WEFT_ERR_INVALID_ARG, "weft_request_free: req is NULL");
    r = *req;
    if (!r)
        return WEFT_SUCCESS;
    /* Freed now if done, else once the transport is done. */
    weft__request_release(r);
    *req = NULL;
    return WEFT_SUCCESS;
}

/* A blocking call that timed out gives its operation up: the request is
 * cancelled and reaped in the background. */
static weft_result_t wait_blocking(const char *fn, weft_request_t *req, weft_status_t *status)
{
    weft_result_t rc = wait_one(fn, req, status);

    if (rc == WEFT_ERR_TIMEOUT && *req) {
        weft__request_cancel(*req, WEFT_ERR_TIMEOUT);
        weft_request_free(req);
    }
    return rc;
}

WEFT_API weft_result_t weft_send(const void *buf, size_t count, weft_dtype_t dt, int peer,
                                 int tag, weft_comm_t comm)
{
    weft_request_t req = NULL;
    weft_result_t rc = post_one("weft_send", WEFT_P2P_SEND, buf, count, dt, peer, tag, comm,
                                &req);

    if (rc != WEFT_SUCCESS)
        return rc;
    return wait_blocking("weft_send", &req, NULL);
}

WEFT_API weft_result_t weft_recv(void *buf, size_t count, weft_dtype_t dt, int peer, int tag,
                                 weft_comm_t comm, weft_status_t *status)
{
    weft_request_t req = NULL;
    weft_result_t rc = post_one("weft_recv", WEFT_P2P_RECV, buf, count, dt, peer, tag, comm,
                                &req);

    if (rc != WEFT_SUCCESS)
        return rc;
    return wait_blocking("weft_recv", &req, status);
}
