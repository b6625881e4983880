/*
 * coll_select.c: which algorithm runs a collective.
 *
 * Each operation has a flat algorithm, correct everywhere (the first
 * non-hierarchical entry of algos[] for its operation), and may have others
 * that pay off in some shapes. The tuner (tune.h) predicts each one's time
 * from its cost formula (tune_model.c) and the job's measured parameters
 * and runs the fastest that applies; an algorithm without a cost formula
 * is never chosen that way, only when WEFT_ALGO forces it
 * ("allreduce:ring,bcast:hier"). Without any formula for an operation, its
 * flat algorithm runs.
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/coll.h"
#include "core/error.h"
#include "core/log.h"
#include "core/tune.h"

static const weft__coll_algo_t algos[] = {
    { WEFT__COLL_BARRIER, "barrier", "dissemination", weft__barrier_dissemination, 0 },
    { WEFT__COLL_BARRIER, "barrier", "hier", weft__barrier_hier, 1 },
    { WEFT__COLL_BCAST, "bcast", "binomial", weft__bcast_binomial, 0 },
    { WEFT__COLL_BCAST, "bcast", "hier", weft__bcast_hier, 1 },
    { WEFT__COLL_REDUCE, "reduce", "binomial", weft__reduce_binomial, 0 },
    { WEFT__COLL_REDUCE, "reduce", "hier", weft__reduce_hier, 1 },
    { WEFT__COLL_ALLREDUCE, "allreduce", "ring", weft__allreduce_ring, 0 },
    { WEFT__COLL_ALLREDUCE, "allreduce", "rd", weft__allreduce_rd, 0 },
    { WEFT__COLL_ALLREDUCE, "allreduce", "rabenseifner", weft__allreduce_rabenseifner, 0 },
    { WEFT__COLL_ALLREDUCE, "allreduce", "hier", weft__allreduce_hier, 1 },
    { WEFT__COLL_ALLGATHER, "allgather", "ring", weft__allgatherv_ring, 0 },
    { WEFT__COLL_ALLGATHER, "allgather", "bruck", weft__allgather_bruck, 0 },
    { WEFT__COLL_ALLGATHER, "allgather", "hier", weft__allgather_hier, 1 },
    { WEFT__COLL_REDUCE_SCATTER, "reduce_scatter", "ring", weft__reduce_scatterv_ring, 0 },
    { WEFT__COLL_REDUCE_SCATTER, "reduce_scatter", "rd", weft__reduce_scatterv_rd, 0 },
    { WEFT__COLL_ALLTOALL, "alltoall", "pairwise", weft__alltoallv_pairwise, 0 },
    { WEFT__COLL_ALLTOALL, "alltoall", "scattered", weft__alltoallv_scattered, 0 },
};
#define NALGOS (sizeof(algos) / sizeof(algos[0]))

/* WEFT_ALGO's choice per operation (index into algos, or -1). */
static int forced[WEFT__COLL_NKINDS];
static int forced_set;

weft_result_t weft__coll_algo_parse(const char *spec)
{
    char buf[512], *save = NULL;

    for (int k = 0; k < WEFT__COLL_NKINDS; k++)
        forced[k] = -1;
    forced_set = 1;
    if (!spec || !*spec)
        return WEFT_SUCCESS;
    if (strlen(spec) >= sizeof(buf))
        return weft__error(WEFT_ERR_INVALID_ARG, "WEFT_ALGO is longer than %zu characters",
                           sizeof(buf) - 1);
    strcpy(buf, spec);
    for (char *item = strtok_r(buf, ",", &save); item; item = strtok_r(NULL, ",", &save)) {
        char *colon = strchr(item, ':'), valid[256] = "";
        int found = -1, op_known = 0;

        if (colon)
            *colon = '\0';
        for (size_t i = 0; i < NALGOS; i++) {
            if (strcmp(algos[i].op_name, item))
                continue;
            op_known = 1;
            snprintf(valid + strlen(valid), sizeof(valid) - strlen(valid), "%s%s",
                     valid[0] ? ", " : "", algos[i].name);
            if (colon && !strcmp(algos[i].name, colon + 1))
                found = (int)i;
        }
        if (!op_known) {
            for (size_t i = 0; i < NALGOS; i++)
                if (i == 0 || strcmp(algos[i].op_name, algos[i - 1].op_name))
                    snprintf(valid + strlen(valid), sizeof(valid) - strlen(valid), "%s%s",
                             valid[0] ? ", " : "", algos[i].op_name);
            return weft__error(WEFT_ERR_INVALID_ARG, "WEFT_ALGO: '%s' is not an operation "
                               "with a choice of algorithm (%s)", item, valid);
        }
        if (found < 0)
            return weft__error(WEFT_ERR_INVALID_ARG, "WEFT_ALGO: '%s' is not an algorithm of "
                               "%s (valid: %s)", colon ? colon + 1 : "", item, valid);
        forced[algos[found].kind] = found;
    }
    return WEFT_SUCCESS;
}

const weft__coll_algo_t *weft__coll_algos(size_t *n)
{
    *n = NALGOS;
    return algos;
}

/* Node-aware allgather needs each node's ranks consecutive (their blocks
 * adjacent) and equal counts; Bruck's equal counts. */
int weft__coll_algo_applies(const weft__coll_algo_t *a, int contiguous, int even)
{
    if (a->kind == WEFT__COLL_ALLGATHER && !strcmp(a->name, "bruck"))
        return even;
    if (!a->hierarchical)
        return 1;
    if (a->kind == WEFT__COLL_ALLGATHER)
        return contiguous && even;
    return 1;
}

void weft__coll_choose(weft__coll_t *c, weft_comm_t comm, weft__coll_kind_t kind, size_t bytes,
                       int even)
{
    const weft__node_map_t *m = &comm->nodes;
    int flat = -1, pick;

    for (size_t i = 0; i < NALGOS && flat < 0; i++)
        if (algos[i].kind == kind && !algos[i].hierarchical)
            flat = (int)i;
    if (flat < 0)
        return; /* no choice for this operation: the caller set its algorithm */
    pick = weft__tune_pick(comm, kind, bytes, even);
    if (pick < 0)
        pick = flat;
    if (forced_set && forced[kind] >= 0) {
        if (weft__coll_algo_applies(&algos[forced[kind]], m->contiguous, even))
            pick = forced[kind];
        else
            WEFT_INFO(COLL, "WEFT_ALGO %s:%s does not apply to this call; using %s",
                      algos[forced[kind]].op_name, algos[forced[kind]].name, algos[pick].name);
    }
    algos[pick].set(c);
    /* A flat allreduce ring visits each node's ranks in a row, so that it
     * crosses between nodes once per node rather than at every step. */
    if (kind == WEFT__COLL_ALLREDUCE && !strcmp(algos[pick].name, "ring") && m->nnodes > 1 &&
        !m->contiguous)
        weft__coll_set_group(c, comm->size, m->my_order, m->order);
}

void weft__allreduce_flat(weft__coll_t *c, weft_comm_t comm, size_t bytes)
{
    const weft__tune_params_t *p = &comm->inst->tune;
    weft__tune_shape_t leaders = { comm->nodes.nnodes, comm->nodes.nnodes, 1, 1 };
    int pick = weft__tune_best(p, &leaders, WEFT__COLL_ALLREDUCE, bytes, 1, 1, NULL);

    if (pick < 0)
        weft__allreduce_ring(c);
    else
        algos[pick].set(c);
}
