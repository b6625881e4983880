/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * select.c: which algorithm runs a collective: the one place that sets it.
 *
 * Each operation has a default, correct everywhere (its first flat entry
 * in the registry), and may have others that pay off in some shapes. The
 * tuner predicts each one's time from its cost formula (model.c) and the
 * job's measured parameters and runs the fastest that applies. WEFT_ALGO
 * forces an algorithm per operation ("allreduce:ring,bcast:hier"); one
 * forced where it cannot run (the registry says what each needs of a
 * call) gives way to the automatic choice.
 */
#include "config.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/base/error.h"
#include "core/base/log.h"
#include "core/coll/algo/algo.h"
#include "core/coll/shared/shared.h"
#include "core/tune/tune.h"

/* WEFT_ALGO's choice per operation (an algorithm id, or -1). */
static int forced[WEFT__COLL_NKINDS];
static int forced_set;

weft_result_t weft__tune_algo_parse(const char *spec)
{
    const weft__algo_t *algos = weft__algos;
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
        for (int i = 0; i < WEFT__ALGO_COUNT; i++) {
            if (strcmp(algos[i].op_name, item))
                continue;
            op_known = 1;
            snprintf(valid + strlen(valid), sizeof(valid) - strlen(valid), "%s%s",
                     valid[0] ? ", " : "", algos[i].name);
            if (colon && !strcmp(algos[i].name, colon + 1))
                found = i;
        }
        if (!op_known) {
            for (int i = 0; i < WEFT__ALGO_COUNT; i++)
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

/* The first flat entry of each operation, -1 where it has none: looked up
 * once rather than on every call (a scan of the table was 3% of a small
 * allreduce). */
static int first_flat[WEFT__COLL_NKINDS];
static pthread_once_t first_flat_once = PTHREAD_ONCE_INIT;

static void first_flat_find(void)
{
    for (int k = 0; k < WEFT__COLL_NKINDS; k++)
        first_flat[k] = -1;
    for (int i = WEFT__ALGO_COUNT; i-- > 0;)
        if (!weft__algos[i].hierarchical)
            first_flat[weft__algos[i].kind] = i;
}

/* weft__tune_choose, and with sample the timed choice of adapt.c where
 * it applies. */
static void choose(weft__coll_t *c, weft_comm_t comm, weft__coll_kind_t kind, size_t bytes,
                   int even, weft__tune_sample_t *sample)
{
    int flat, pick;

    pthread_once(&first_flat_once, first_flat_find);
    flat = first_flat[kind];
    if (flat < 0)
        return; /* no choice for this operation: the caller set its algorithm */
    /* An allgatherv's bytes are this rank's own block, which differs
     * between ranks, and its algorithms do not interoperate: it keeps the
     * flat ring unless forced. (The other v-forms may choose by their own
     * bytes: the all-to-all exchanges send the same messages, and the
     * rooted ones have only the linear algorithm.) */
    if (kind == WEFT__COLL_ALLGATHER && !even)
        pick = flat;
    else
        pick = weft__tune_pick(comm, kind, bytes, even);
    if (pick < 0)
        pick = flat;
    if (forced_set && forced[kind] >= 0) {
        weft__tune_shape_t shape;

        weft__tune_shape_of(comm, &shape);
        if (weft__tune_applies(&weft__algos[forced[kind]], &shape, even, bytes))
            pick = forced[kind];
        else
            WEFT_INFO(COLL, "WEFT_ALGO %s:%s does not apply to this call; using %s",
                      weft__algos[forced[kind]].op_name, weft__algos[forced[kind]].name,
                      weft__algos[pick].name);
    } else if (sample && even) {
        /* Every rank's call has the same bytes here, and so the same
         * entry and the same schedule. */
        pick = weft__tune_adapt(c, comm, kind, bytes, pick, sample);
        if (pick < 0)
            return; /* c waits for a calibration, then sets its algorithm */
    }
    weft__tune_apply(c, comm, pick);
}

void weft__tune_choose(weft__coll_t *c, weft_comm_t comm, weft__coll_kind_t kind, size_t bytes,
                       int even)
{
    choose(c, comm, kind, bytes, even, NULL);
}

void weft__tune_choose_timed(weft__coll_t *c, weft_comm_t comm, weft__coll_kind_t kind,
                             size_t bytes, int even, weft__tune_sample_t *sample)
{
    sample->entry = NULL;
    choose(c, comm, kind, bytes, even, sample);
}
