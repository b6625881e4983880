/*
 * coll.c: running collective algorithms round by round (see coll.h).
 */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "core/coll.h"
#include "core/error.h"
#include "core/request.h"

/* Internal tags: bit 30 keeps them apart from communicator creation's; the
 * collective's sequence number keeps overlapping collectives apart. Within
 * one collective, the messages of a pair match in the order they were sent
 * (the transport's per-pair ordering): ranks count their rounds
 * differently (a broadcast's root has no receive round), so rounds must
 * not be part of the tag. */
#define COLL_TAG(seq) ((int)(0x40000000u | ((seq) & 0x3fffffffu)))

weft_result_t weft__coll_post(weft__coll_t *c, int n, const weft_p2p_op_t *ops)
{
    weft_p2p_op_t tagged[WEFT__COLL_MAX_OPS];

    if (n > WEFT__COLL_MAX_OPS)
        return weft__error(WEFT_ERR_INTERNAL, "a round of %d operations exceeds %d", n,
                           WEFT__COLL_MAX_OPS);
    for (int i = 0; i < n; i++) {
        tagged[i] = ops[i];
        tagged[i].tag = COLL_TAG(c->seq);
    }
    c->round++;
    return weft_batch_isend_irecv(n, tagged, c->comm->internal, &c->inner);
}

weft_result_t weft__coll_poll(weft__coll_t *c, int *done)
{
    *done = c->finished;
    while (!c->finished) {
        if (c->inner) {
            int inner_done = 0;

            weft__request_poll(c->inner, &inner_done);
            if (!inner_done)
                return WEFT_SUCCESS;
            if (c->inner->result != WEFT_SUCCESS && c->result == WEFT_SUCCESS)
                c->result = c->inner->result;
            weft__request_free(c->inner);
            c->inner = NULL;
        }
        if (c->result == WEFT_SUCCESS) {
            weft_result_t rc = c->step(c, done);

            if (rc != WEFT_SUCCESS)
                c->result = rc;
        }
        if (c->result != WEFT_SUCCESS || *done) {
            c->finished = 1;
            *done = 1;
            return WEFT_SUCCESS;
        }
        if (!c->inner)
            return WEFT_SUCCESS;
    }
    return WEFT_SUCCESS;
}

void weft__coll_free(weft__coll_t *c)
{
    if (c->inner)
        weft__request_free(c->inner);
    free(c->tmp);
    free(c->offs);
    free(c);
}

weft_result_t weft__coll_start(weft_comm_t comm, weft__coll_t *c, weft_request_t *req)
{
    struct weft_request *r;
    weft_result_t rc = weft__request_create(comm, 1, &r);

    if (rc != WEFT_SUCCESS) {
        weft__coll_free(c);
        return rc;
    }
    r->subs[0].state = WEFT__SUBOP_DONE;
    c->comm = comm;
    c->seq = comm->coll_seq++;
    c->result = WEFT_SUCCESS;
    r->coll = c;
    {
        int done = 0;

        /* The first round goes out now, as a nonblocking call promises. */
        weft__coll_poll(c, &done);
    }
    *req = r;
    return WEFT_SUCCESS;
}
