/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * comm_create.c: new communicators from old ones: split, create_group,
 * split_node and dup.
 *
 * Each is collective over the parent: the members exchange what they need
 * (color, key, a fingerprint of the arguments, and the next context id
 * free in their process) with an allgather on the parent's internal
 * context, then build the same groups locally. A new communicator's
 * context id is the largest "next free" id among the parent's members, so
 * it is unused in every member's process; every member then moves its
 * counter past it.
 */
#include "config.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core/base/error.h"
#include "core/base/log.h"
#include "core/comm/comm.h"
#include "core/progress/progress.h"
#include "core/progress/request.h"

/* Internal tag of the exchange (the internal context is context_id + 1,
 * which user operations never use). */
#define CREATE_TAG 1

/* What every member contributes. */
struct member_info {
    int32_t color;
    int32_t key;
    uint32_t next_context;
    uint32_t fingerprint;     /* of arguments that must agree */
};

/* Ring allgather of one fixed-size record per rank over the parent's
 * internal context: size - 1 steps, each forwarding the record received in
 * the previous one. */
static weft_result_t allgather_records(weft_comm_t comm, const struct member_info *mine,
                                       struct member_info *all)
{
    int n = comm->size, me = comm->rank;
    int right = (me + 1) % n, left = (me - 1 + n) % n;
    weft_p2p_op_t ops[2];
    weft_result_t rc = WEFT_SUCCESS;

    all[me] = *mine;
    for (int step = 0; step < n - 1 && rc == WEFT_SUCCESS; step++) {
        int send_block = (me - step + n) % n, recv_block = (me - step - 1 + n) % n;
        struct weft_request *req = NULL;

        ops[0] = (weft_p2p_op_t){ WEFT_P2P_SEND, &all[send_block], sizeof(*all), WEFT_UINT8,
                                  right, CREATE_TAG };
        ops[1] = (weft_p2p_op_t){ WEFT_P2P_RECV, &all[recv_block], sizeof(*all), WEFT_UINT8,
                                  left, CREATE_TAG };
        if (weft__mctx_aborted(&comm->internal))
            return weft__error(WEFT_ERR_ABORTED, "the communicator was aborted");
        rc = weft__request_post_batch(&comm->internal, 2, ops, &req);
        if (rc != WEFT_SUCCESS)
            break;
        rc = weft__request_wait(req, comm->inst->timeout_ms);
        if (rc != WEFT_SUCCESS) {
            char what[128];

            /* Timed out with operations still in flight on `all`: it must
             * outlive them, so it is let go. */
            weft__request_describe(req, what, sizeof(what));
            weft__request_cancel(req, rc);
            weft__request_release(req);
            return weft__error(rc, "%s did not complete within %d ms (WEFT_TIMEOUT)", what,
                               comm->inst->timeout_ms);
        }
        rc = req->result;
        for (int i = 0; i < 2 && rc != WEFT_SUCCESS; i++)
            if (req->subs[i].result == rc) {
                weft__error(rc, "%s rank %d failed: %s", i == 0 ? "send to" : "receive from",
                            i == 0 ? right : left, weft_strerror(rc));
                break;
            }
        weft__request_free(req);
    }
    return rc;
}

static uint32_t fnv1a(uint32_t h, const void *p, size_t n)
{
    const unsigned char *b = p;

    for (size_t i = 0; i < n; i++)
        h = (h ^ b[i]) * 16777619u;
    return h;
}

struct order {
    int key;
    int parent_rank;
};

static int order_cmp(const void *a, const void *b)
{
    const struct order *x = a, *y = b;

    if (x->key != y->key)
        return x->key < y->key ? -1 : 1;
    return x->parent_rank - y->parent_rank;
}

/* The collective core of every creator: exchange, check, and build this
 * rank's group (members of parent with the same color as this rank,
 * ordered by key then parent rank), or NULL for WEFT_UNDEFINED. */
static weft_result_t create(weft_comm_t parent, const char *fn, int color, int key,
                            uint32_t fingerprint, weft_comm_t *out)
{
    weft__instance_t *inst = parent->inst;
    struct member_info mine, *all;
    struct order *order = NULL;
    int *world = NULL, n = 0;
    uint32_t context = 0;
    weft_result_t rc;

    all = calloc((size_t)parent->size, sizeof(*all));
    if (!all)
        return weft__error(WEFT_ERR_NO_MEMORY, "%s: cannot allocate %d records", fn,
                           parent->size);
    pthread_mutex_lock(&inst->lock);
    mine.next_context = inst->next_context;
    pthread_mutex_unlock(&inst->lock);
    mine.color = color;
    mine.key = key;
    mine.fingerprint = fingerprint;
    rc = allgather_records(parent, &mine, all);
    if (rc == WEFT_ERR_TIMEOUT) {
        all = NULL; /* still in the transport's hands */
        goto out;
    }
    if (rc != WEFT_SUCCESS)
        goto out;
    for (int r = 0; r < parent->size; r++) {
        if (all[r].fingerprint != fingerprint) {
            rc = weft__error(WEFT_ERR_MISMATCH, "%s: rank %d of the parent communicator "
                             "passed other arguments than rank %d", fn, r, parent->rank);
            goto out;
        }
        if (all[r].next_context > context)
            context = all[r].next_context;
    }
    /* Every member moves past the id, whether or not it joins a group. */
    pthread_mutex_lock(&inst->lock);
    if (inst->next_context <= context)
        inst->next_context = context + 2;
    pthread_mutex_unlock(&inst->lock);
    if (color == WEFT_UNDEFINED) {
        *out = NULL;
        goto out;
    }
    order = malloc((size_t)parent->size * sizeof(*order));
    world = malloc((size_t)parent->size * sizeof(*world));
    if (!order || !world) {
        rc = weft__error(WEFT_ERR_NO_MEMORY, "%s: cannot allocate the group", fn);
        goto out;
    }
    for (int r = 0; r < parent->size; r++)
        if (all[r].color == color)
            order[n++] = (struct order){ all[r].key, r };
    qsort(order, (size_t)n, sizeof(*order), order_cmp);
    for (int i = 0; i < n; i++)
        world[i] = parent->world_ranks[order[i].parent_rank];
    rc = weft__comm_create(inst, n, world, context, out);
    if (rc == WEFT_SUCCESS)
        WEFT_INFO(COLL, "%s: new communicator %u of %d ranks (this rank %d)", fn, context, n,
                  (*out)->rank);
out:
    free(order);
    free(world);
    free(all);
    return rc;
}

static weft_result_t check_parent(weft_comm_t comm, const char *fn, weft_comm_t *out)
{
    weft_result_t rc = weft__comm_check(comm, fn);

    if (rc == WEFT_SUCCESS)
        rc = weft__comm_quiesce(comm, fn);
    if (rc != WEFT_SUCCESS)
        return rc;
    if (weft__comm_aborted(comm))
        return weft__error(WEFT_ERR_ABORTED, "%s: the communicator was aborted", fn);
    if (!out)
        return weft__error(WEFT_ERR_INVALID_ARG, "%s: out is NULL", fn);
    return WEFT_SUCCESS;
}

WEFT_API weft_result_t weft_comm_split(weft_comm_t comm, int color, int key, weft_comm_t *out)
{
    weft_result_t rc = check_parent(comm, "weft_comm_split", out);

    if (rc != WEFT_SUCCESS)
        return rc;
    if (color < 0 && color != WEFT_UNDEFINED)
        return weft__error(WEFT_ERR_INVALID_ARG, "weft_comm_split: color %d is negative and "
                           "not WEFT_UNDEFINED", color);
    return create(comm, "weft_comm_split", color, key, 0, out);
}

WEFT_API weft_result_t weft_comm_dup(weft_comm_t comm, weft_comm_t *out)
{
    weft_result_t rc = check_parent(comm, "weft_comm_dup", out);

    if (rc != WEFT_SUCCESS)
        return rc;
    return create(comm, "weft_comm_dup", 0, comm->rank, 0, out);
}

WEFT_API weft_result_t weft_comm_split_node(weft_comm_t comm, weft_comm_t *out)
{
    weft_result_t rc = check_parent(comm, "weft_comm_split_node", out);
    const weft__peer_t *peers;
    int color = -1;

    if (rc != WEFT_SUCCESS)
        return rc;
    /* Color: the lowest parent rank on this node, which every rank of the
     * node computes alike from the host ids of the rendezvous. */
    peers = comm->inst->wire.peers;
    for (int r = 0; r < comm->size && color < 0; r++)
        if (!strcmp(peers[comm->world_ranks[r]].host_id, peers[comm->inst->wire.rank].host_id))
            color = r;
    return create(comm, "weft_comm_split_node", color, comm->rank, 0, out);
}

WEFT_API weft_result_t weft_comm_create_group(weft_comm_t comm, int n, const int *ranks,
                                              weft_comm_t *out)
{
    weft_result_t rc = check_parent(comm, "weft_comm_create_group", out);
    unsigned char *seen;
    int pos = -1;
    uint32_t fp;

    if (rc != WEFT_SUCCESS)
        return rc;
    if (n < 1 || n > comm->size)
        return weft__error(WEFT_ERR_INVALID_ARG, "weft_comm_create_group: n is %d, the "
                           "communicator has %d ranks", n, comm->size);
    if (!ranks)
        return weft__error(WEFT_ERR_INVALID_ARG, "weft_comm_create_group: ranks is NULL");
    seen = calloc((size_t)comm->size, 1);
    if (!seen)
        return weft__error(WEFT_ERR_NO_MEMORY, "weft_comm_create_group: out of memory");
    for (int i = 0; i < n; i++) {
        if (ranks[i] < 0 || ranks[i] >= comm->size || seen[ranks[i]]) {
            rc = weft__error(WEFT_ERR_INVALID_ARG, "weft_comm_create_group: ranks[%d] = %d %s",
                             i, ranks[i], ranks[i] < 0 || ranks[i] >= comm->size
                             ? "is not a rank of the communicator" : "appears twice");
            free(seen);
            return rc;
        }
        seen[ranks[i]] = 1;
        if (ranks[i] == comm->rank)
            pos = i;
    }
    free(seen);
    /* Every member must pass the same list: its fingerprint travels with
     * the exchange, and a difference fails everywhere alike. */
    fp = fnv1a(fnv1a(2166136261u, &n, sizeof(n)), ranks, (size_t)n * sizeof(*ranks));
    return create(comm, "weft_comm_create_group", pos >= 0 ? 0 : WEFT_UNDEFINED, pos, fp, out);
}
