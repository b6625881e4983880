/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * fake_comm.h: a communicator as the tuner sees it (size, node map,
 * instance), without a job behind it, for the unit tests of the tuner and
 * of the choice of algorithm.
 */
#ifndef WEFT_TEST_FAKE_COMM_H
#define WEFT_TEST_FAKE_COMM_H

#include <string.h>

#include "core/comm/comm.h"
#include "core/tune/tune.h"

static inline void fake_comm(struct weft_comm *c, weft__instance_t *inst,
                             const weft__tune_shape_t *s)
{
    memset(c, 0, sizeof(*c));
    c->inst = inst;
    c->size = s->ranks;
    c->nodes.nnodes = s->nodes;
    c->nodes.max_per_node = s->per_node;
    c->nodes.contiguous = s->contiguous;
}

/* Frees what the layers attached to c, as weft__comm_free does. */
static inline void fake_comm_free(struct weft_comm *c)
{
    while (c->ndtors > 0) {
        c->ndtors--;
        c->dtors[c->ndtors].fn(c, c->dtors[c->ndtors].arg);
    }
}

#endif /* WEFT_TEST_FAKE_COMM_H */
