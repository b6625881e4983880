/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * p2p_stage.c: point-to-point operations on device buffers, and on
 * communicators with a CUDA stream (p2p_stage.h).
 *
 * A device buffer goes to the transport as it is where the transport
 * that reaches the peer moves device memory itself (it announces
 * WEFT_TRANSPORT_MEM_CUDA: ib-verbs with GPUDirect RDMA): the buffer is
 * registered with it for the operation (mem_register, whose handle goes
 * with the send or receive) and released when the operation is done.
 * Elsewhere, and for receives from any source, whose transport is not
 * known in advance, it is staged through host memory as for collectives
 * (coll_stage.c): a send copies its buffer to the host when it is
 * posted; a receive lands in host memory and is copied to the device
 * buffer when it completes. The user's request is then one an owner
 * drives (the request layer's ops), polling the request inside it.
 *
 * On a stream, the operations are queued on it and run on the stream
 * thread when the stream gets there (stream.h); the request is complete
 * at once, and a receive's status is not known to the call.
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "weft/transport.h"

#include "core/api/p2p_stage.h"
#include "core/api/stream.h"
#include "core/base/error.h"
#include "core/base/log.h"
#include "core/dt/dtype.h"
#include "core/progress/progress.h"
#include "core/progress/request.h"
#include "core/transport/plugin.h"

typedef struct p2p_stage {
    weft__plugin_t *dev;
    weft_comm_t comm;
    int n;
    weft_p2p_op_t *ops;            /* the operations, on staged buffers */
    void **user_buf;               /* each one's device buffer, or NULL */
    void **host;                   /* each one's staging, or NULL */
    void **mh;                     /* each one's registration with its transport */
    weft__plugin_t **mh_plugin;    /* that transport */
    int on_stream;
    struct weft_request *inner;    /* the operations on host memory */
    char why[256];
    char fn[48];
} p2p_stage_t;

static void stage_free(p2p_stage_t *s)
{
    for (int i = 0; i < s->n && s->mh; i++) {
        weft__plugin_t *pl = s->mh_plugin[i];

        if (!s->mh[i])
            continue;
        pthread_mutex_lock(&pl->lock);
        pl->ops->mem_deregister(pl->ctx, s->mh[i]);
        pthread_mutex_unlock(&pl->lock);
    }
    for (int i = 0; i < s->n; i++) {
        if (!s->host || !s->host[i])
            continue;
        if (s->on_stream)
            weft__stream_host_free(s->comm, s->host[i]);
        else
            free(s->host[i]);
    }
    free(s->ops);
    free(s->user_buf);
    free(s->host);
    free(s->mh);
    free(s->mh_plugin);
    free(s);
}

/* Copies what the receives got to their device buffers. */
static weft_result_t copy_back(p2p_stage_t *s, const struct weft_request *inner)
{
    weft_result_t rc = WEFT_SUCCESS;

    for (int i = 0; i < s->n && rc == WEFT_SUCCESS; i++) {
        const weft__subop_t *sub = &inner->subs[i];
        size_t got = sub->len < sub->bytes ? sub->len : sub->bytes;

        if (!s->host[i] || s->ops[i].kind != WEFT_P2P_RECV || !got)
            continue;
        weft__clear_error();
        rc = s->dev->device->copy(s->dev->ctx, s->user_buf[i], s->host[i], got);
        if (rc != WEFT_SUCCESS)
            snprintf(s->why, sizeof(s->why), "copying the message to device memory failed: %s",
                     weft__get_error());
    }
    return rc;
}

/* ------------------------------------------------ the owner's request */

static void owner_poll(struct weft_request *req, int *done)
{
    p2p_stage_t *s = req->owner;
    weft_result_t rc;

    weft__request_poll(s->inner, done);
    if (!*done)
        return;
    req->result = s->inner->result;
    if (req->result == WEFT_SUCCESS && (rc = copy_back(s, s->inner)) != WEFT_SUCCESS)
        req->result = rc;
    /* A single operation's status is read from the request's own. */
    if (s->n == 1) {
        req->subs[0] = s->inner->subs[0];
        req->subs[0].buf = s->user_buf[0] ? s->user_buf[0] : s->inner->subs[0].buf;
        if (req->result != WEFT_SUCCESS)
            req->subs[0].result = req->result;
    }
}

static void owner_cancel(struct weft_request *req, weft_result_t rc)
{
    p2p_stage_t *s = req->owner;

    weft__request_cancel(s->inner, rc);
}

/* Called once the request is done (a request freed early is held until
 * then), so the transports are through with the staging. */
static void owner_release(struct weft_request *req)
{
    p2p_stage_t *s = req->owner;

    weft__request_free(s->inner);
    stage_free(s);
}

static void owner_describe(const struct weft_request *req, char *buf, size_t cap)
{
    const p2p_stage_t *s = req->owner;

    weft__request_describe(s->inner, buf, cap);
}

static const char *owner_why(const struct weft_request *req)
{
    const p2p_stage_t *s = req->owner;

    return s->why[0] ? s->why : weft__request_why(s->inner);
}

static const weft__request_ops_t owner_ops = {
    owner_poll, owner_cancel, owner_release, owner_describe, owner_why
};

/* ------------------------------------------------ on a stream */

static weft_result_t stream_run(weft_comm_t comm, void *arg)
{
    p2p_stage_t *s = arg;
    struct weft_request *r;
    weft_result_t rc = weft__request_post_batch(&comm->ctx, s->n, s->ops, &r);

    if (rc != WEFT_SUCCESS)
        return rc;
    rc = weft__request_wait(r, comm->inst->timeout_ms);
    if (rc == WEFT_ERR_TIMEOUT) {
        char what[128];

        weft__request_describe(r, what, sizeof(what));
        weft__request_cancel(r, rc);
        weft__request_release(r);
        return weft__error(rc, "%s: %s did not complete within %d ms (WEFT_TIMEOUT)", s->fn,
                           what, comm->inst->timeout_ms);
    }
    rc = r->result;
    if (rc != WEFT_SUCCESS)
        weft__error(rc, "%s: %s", s->fn, weft__request_why(r) ? weft__request_why(r)
                                                               : weft_strerror(rc));
    weft__request_free(r);
    return rc;
}

/* The stream owns the staging now. */
static void stream_release(void *arg)
{
    p2p_stage_t *s = arg;

    free(s->host);
    s->host = NULL;
    stage_free(s);
}

/* ------------------------------------------------ the entry */

/* Registers operation i's device buffer with the transport that reaches
 * its peer, where that one moves device memory: WEFT_SUCCESS then, else
 * the buffer is to be staged (a refusal is logged once per transport). */
static weft_result_t register_direct(p2p_stage_t *s, int i)
{
    const weft_p2p_op_t *op = &s->ops[i];
    size_t bytes = op->count * weft__dtype_bytes(op->dt);
    weft__plugin_t *pl;
    weft_result_t rc;

    if (op->peer == WEFT_ANY_SOURCE)
        return WEFT_ERR_UNSUPPORTED;
    pl = s->comm->inst->wire.peers[s->comm->world_ranks[op->peer]].plugin;
    if (!pl || !((pl->caps.mem_types >> WEFT_TRANSPORT_MEM_CUDA) & 1))
        return WEFT_ERR_UNSUPPORTED;
    weft__clear_error();
    pthread_mutex_lock(&pl->lock);
    rc = pl->ops->mem_register(pl->ctx, op->buf, bytes, WEFT_TRANSPORT_MEM_CUDA, &s->mh[i]);
    pthread_mutex_unlock(&pl->lock);
    if (rc != WEFT_SUCCESS) {
        s->mh[i] = NULL;
        WEFT_INFO(TRANSPORT, "%s: %s cannot register %zu bytes of device memory (%s): "
                  "staged through host memory", s->fn, pl->name, bytes, weft__get_error());
        return rc;
    }
    s->mh_plugin[i] = pl;
    return WEFT_SUCCESS;
}

/* Stages the device buffers among s's operations, or registers them with
 * their transports; *any when one is in device memory. */
static weft_result_t stage_buffers(p2p_stage_t *s, int *any, weft__stream_copy_t *in,
                                   weft__stream_copy_t *out)
{
    int nin = 0, nout = 0;

    *any = 0;
    for (int i = 0; i < s->n; i++) {
        weft_p2p_op_t *op = &s->ops[i];
        size_t bytes = op->count * weft__dtype_bytes(op->dt);
        int type = WEFT_TRANSPORT_MEM_HOST, ordinal = -1;
        weft_result_t rc;

        if (!s->dev || !op->buf || !bytes)
            continue;
        weft__clear_error();
        rc = s->dev->device->mem_query(s->dev->ctx, op->buf, &type, &ordinal);
        if (rc != WEFT_SUCCESS)
            return weft__error(rc, "%s: buf %p: cannot tell host from device memory: %s",
                               s->fn, op->buf, weft__get_error());
        if (type != WEFT_TRANSPORT_MEM_CUDA)
            continue;
        *any = 1;
        s->user_buf[i] = op->buf;
        if (!s->on_stream && register_direct(s, i) == WEFT_SUCCESS)
            continue;
        s->host[i] = s->on_stream ? weft__stream_host_alloc(s->comm, bytes) : malloc(bytes);
        if (!s->host[i])
            return weft__error(WEFT_ERR_NO_MEMORY, "%s: cannot allocate %zu bytes of staging",
                               s->fn, bytes);
        if (op->kind == WEFT_P2P_SEND)
            in[nin++] = (weft__stream_copy_t){ s->host[i], op->buf, bytes };
        else if (out)
            out[nout++] = (weft__stream_copy_t){ op->buf, s->host[i], bytes };
        op->buf = s->host[i];
    }
    return WEFT_SUCCESS;
}

static weft_result_t copy_sends(p2p_stage_t *s, const weft__stream_copy_t *in, int nin)
{
    weft_result_t rc = WEFT_SUCCESS;

    weft__clear_error();
    for (int i = 0; i < nin && rc == WEFT_SUCCESS; i++)
        rc = s->dev->device->copy(s->dev->ctx, in[i].dst, in[i].src, in[i].len);
    if (rc != WEFT_SUCCESS)
        rc = weft__error(rc, "%s: copying the message from device memory failed: %s", s->fn,
                         weft__get_error());
    return rc;
}

/* Counts the copies stage_buffers listed. */
static int count_copies(const p2p_stage_t *s, int kind)
{
    int n = 0;

    for (int i = 0; i < s->n; i++)
        n += s->host[i] && s->ops[i].kind == kind;
    return n;
}

/* The operations on their staging or with their registrations. */
static weft_result_t post_inner(p2p_stage_t *s)
{
    weft__mctx_t *ctx = &s->comm->ctx;
    weft_result_t rc = weft__request_create(ctx, s->n, &s->inner);

    if (rc != WEFT_SUCCESS)
        return rc;
    for (int i = 0; i < s->n; i++) {
        const weft_p2p_op_t *op = &s->ops[i];
        size_t elem = weft__dtype_bytes(op->dt);

        weft__subop_fill(&s->inner->subs[i], ctx, op->kind, op->buf, op->count * elem, elem,
                         op->peer, op->tag);
        s->inner->subs[i].mhandle = s->mh[i];
    }
    weft__request_start(s->inner);
    return WEFT_SUCCESS;
}

/* Whether a buffer of ops may be device memory (a failed query counts:
 * stage_buffers reports it). */
static int any_on_device(weft_comm_t comm, int n, const weft_p2p_op_t *ops)
{
    weft__plugin_t *dev = weft__plugins_device(&comm->inst->wire.plugins);

    for (int i = 0; i < n && dev; i++) {
        int type = WEFT_TRANSPORT_MEM_HOST, ordinal;

        if (!ops[i].buf || !ops[i].count)
            continue;
        if (dev->device->mem_query(dev->ctx, ops[i].buf, &type, &ordinal) != WEFT_SUCCESS ||
            type == WEFT_TRANSPORT_MEM_CUDA)
            return 1;
    }
    return 0;
}

weft_result_t weft__p2p_stage_post(weft_comm_t comm, int n, const weft_p2p_op_t *ops,
                                   weft_request_t *req, const char *fn, int *handled)
{
    weft__stream_copy_t *in = NULL, *out = NULL;
    struct weft_request *r;
    weft_result_t rc;
    p2p_stage_t *s;
    int any = 0;

    *handled = 0;
    /* Host memory and no stream, the common case: the caller posts as
     * usual, and nothing is allocated here. */
    if (!comm->stream && !any_on_device(comm, n, ops))
        return WEFT_SUCCESS;
    if (!(s = calloc(1, sizeof(*s))))
        return weft__error(WEFT_ERR_NO_MEMORY, "%s: out of memory", fn);
    s->dev = weft__plugins_device(&comm->inst->wire.plugins);
    s->comm = comm;
    s->n = n;
    s->on_stream = comm->stream != NULL;
    snprintf(s->fn, sizeof(s->fn), "%s", fn);
    s->ops = malloc((size_t)(n ? n : 1) * sizeof(*s->ops));
    s->user_buf = calloc((size_t)(n ? n : 1), sizeof(*s->user_buf));
    s->host = calloc((size_t)(n ? n : 1), sizeof(*s->host));
    s->mh = calloc((size_t)(n ? n : 1), sizeof(*s->mh));
    s->mh_plugin = calloc((size_t)(n ? n : 1), sizeof(*s->mh_plugin));
    in = malloc((size_t)(n ? n : 1) * sizeof(*in));
    out = malloc((size_t)(n ? n : 1) * sizeof(*out));
    if (!s->ops || !s->user_buf || !s->host || !s->mh || !s->mh_plugin || !in || !out) {
        rc = weft__error(WEFT_ERR_NO_MEMORY, "%s: out of memory", fn);
        goto fail;
    }
    if (n)
        memcpy(s->ops, ops, (size_t)n * sizeof(*ops));
    if ((rc = stage_buffers(s, &any, in, out)) != WEFT_SUCCESS)
        goto fail;
    if (s->on_stream) {
        weft__stream_job_t job = { stream_run, stream_release, s, s->fn };
        int nin = count_copies(s, WEFT_P2P_SEND), nout = count_copies(s, WEFT_P2P_RECV);
        void **staging = s->host;
        int nstaging = 0;

        /* The stream frees the staging: it is handed over packed. */
        for (int i = 0; i < n; i++)
            if (staging[i])
                staging[nstaging++] = staging[i];
        *handled = 1;
        *req = NULL;
        s->n = n; /* stream_release frees s->host's array, not its entries */
        rc = weft__stream_submit(comm, in, nin, out, nout, &job, staging, nstaging);
        free(in);
        free(out);
        return rc;
    }
    if (!any) {
        stage_free(s);
        free(in);
        free(out);
        return WEFT_SUCCESS; /* host memory only: the caller posts as usual */
    }
    *handled = 1;
    rc = copy_sends(s, in, count_copies(s, WEFT_P2P_SEND));
    free(in);
    free(out);
    in = out = NULL;
    if (rc == WEFT_SUCCESS)
        rc = post_inner(s);
    if (rc == WEFT_SUCCESS && (rc = weft__request_create_complete(&comm->ctx, &r)) !=
                                  WEFT_SUCCESS) {
        weft__request_cancel(s->inner, rc);
        weft__request_release(s->inner);
        /* the staging may still be in the transports' hands: left to leak
         * rather than freed under them (out of memory only) */
        return rc;
    }
    if (rc != WEFT_SUCCESS)
        goto fail;
    r->ops = &owner_ops;
    r->owner = s;
    *req = r;
    return WEFT_SUCCESS;

fail:
    *handled = 1;
    free(in);
    free(out);
    stage_free(s);
    return rc;
}
