/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * conf_zero.c: "a count of 0 is legal everywhere and completes without
 * touching buffers" (API.md), taken at its word: every collective, and
 * its nonblocking twin, with nothing to move and NULL for every buffer,
 * v-variants whose counts are all 0, an array with an empty dimension
 * along and across the axis, and empty byte strings; and the two forms
 * mixed across the ranks.
 */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "tests/conf/conf.h"

static void zero_case(const conf_comm_t *cc, const char *func, int nonblocking)
{
    conf_case_t k = { .func = func, .dt = WEFT_FLOAT32, .op = -1, .count = 0,
                      .root = cc->size - 1, .cc = cc, .nonblocking = nonblocking };
    weft_comm_t comm = cc->comm;
    size_t size = (size_t)cc->size, *zeros = calloc(size, sizeof(size_t));
    size_t empty_along[2] = { 0, 3 }, empty_across[2] = { 3, 0 };
    size_t whole_across[2] = { 3 * size, 0 }; /* the split forms divide shape[axis] */
    int root = cc->size - 1;
    weft_dtype_t dt = WEFT_FLOAT32;

    MP_ASSERT(zeros, "out of memory");
#define ZERO(name, blocking_call, nb_call)                     \
    if (!strcmp(func, name)) {                                 \
        CONF_RUN(&k, blocking_call, nb_call);                  \
        conf_cases++;                                          \
    }
    ZERO("broadcast", weft_broadcast(NULL, 0, dt, root, comm),
         weft_ibroadcast(NULL, 0, dt, root, comm, &req_));
    ZERO("reduce", weft_reduce(NULL, NULL, 0, dt, WEFT_SUM, root, comm),
         weft_ireduce(NULL, NULL, 0, dt, WEFT_SUM, root, comm, &req_));
    ZERO("allreduce", weft_allreduce(NULL, NULL, 0, dt, WEFT_AVG, comm),
         weft_iallreduce(NULL, NULL, 0, dt, WEFT_AVG, comm, &req_));
    ZERO("gather", weft_gather(NULL, NULL, 0, dt, root, comm),
         weft_igather(NULL, NULL, 0, dt, root, comm, &req_));
    ZERO("gatherv", weft_gatherv(NULL, 0, NULL, zeros, zeros, dt, root, comm),
         weft_igatherv(NULL, 0, NULL, zeros, zeros, dt, root, comm, &req_));
    ZERO("scatter", weft_scatter(NULL, NULL, 0, dt, root, comm),
         weft_iscatter(NULL, NULL, 0, dt, root, comm, &req_));
    ZERO("scatterv", weft_scatterv(NULL, zeros, zeros, NULL, 0, dt, root, comm),
         weft_iscatterv(NULL, zeros, zeros, NULL, 0, dt, root, comm, &req_));
    ZERO("allgather", weft_allgather(NULL, NULL, 0, dt, comm),
         weft_iallgather(NULL, NULL, 0, dt, comm, &req_));
    ZERO("allgatherv", weft_allgatherv(NULL, 0, NULL, zeros, zeros, dt, comm),
         weft_iallgatherv(NULL, 0, NULL, zeros, zeros, dt, comm, &req_));
    ZERO("reduce_scatter", weft_reduce_scatter(NULL, NULL, 0, dt, WEFT_MAX, comm),
         weft_ireduce_scatter(NULL, NULL, 0, dt, WEFT_MAX, comm, &req_));
    ZERO("reduce_scatterv", weft_reduce_scatterv(NULL, NULL, zeros, dt, WEFT_SUM, comm),
         weft_ireduce_scatterv(NULL, NULL, zeros, dt, WEFT_SUM, comm, &req_));
    ZERO("alltoall", weft_alltoall(NULL, NULL, 0, dt, comm),
         weft_ialltoall(NULL, NULL, 0, dt, comm, &req_));
    ZERO("alltoall in place", weft_alltoall(WEFT_IN_PLACE, NULL, 0, dt, comm),
         weft_ialltoall(WEFT_IN_PLACE, NULL, 0, dt, comm, &req_));
    ZERO("alltoallv", weft_alltoallv(NULL, zeros, zeros, NULL, zeros, zeros, dt, comm),
         weft_ialltoallv(NULL, zeros, zeros, NULL, zeros, zeros, dt, comm, &req_));
    ZERO("scan", weft_scan(NULL, NULL, 0, dt, WEFT_PROD, comm),
         weft_iscan(NULL, NULL, 0, dt, WEFT_PROD, comm, &req_));
    ZERO("exscan", weft_exscan(NULL, NULL, 0, dt, WEFT_MIN, comm),
         weft_iexscan(NULL, NULL, 0, dt, WEFT_MIN, comm, &req_));
    ZERO("gather_axis (empty along)",
         weft_gather_axis(NULL, NULL, 2, empty_along, 0, dt, root, comm),
         weft_igather_axis(NULL, NULL, 2, empty_along, 0, dt, root, comm, &req_));
    ZERO("allgather_axis (empty across)",
         weft_allgather_axis(NULL, NULL, 2, empty_across, 0, dt, comm),
         weft_iallgather_axis(NULL, NULL, 2, empty_across, 0, dt, comm, &req_));
    ZERO("scatter_axis (empty along)",
         weft_scatter_axis(NULL, NULL, 2, empty_along, 0, dt, root, comm),
         weft_iscatter_axis(NULL, NULL, 2, empty_along, 0, dt, root, comm, &req_));
    ZERO("reduce_scatter_axis (empty across)",
         weft_reduce_scatter_axis(NULL, NULL, 2, whole_across, 0, dt, WEFT_SUM, comm),
         weft_ireduce_scatter_axis(NULL, NULL, 2, whole_across, 0, dt, WEFT_SUM, comm,
                                   &req_));
    ZERO("alltoall_axis (empty along)",
         weft_alltoall_axis(NULL, NULL, 2, empty_along, 0, dt, comm),
         weft_ialltoall_axis(NULL, NULL, 2, empty_along, 0, dt, comm, &req_));
#undef ZERO
    if (!strcmp(func, "broadcast_bytes") || !strcmp(func, "allgather_bytes")) {
        void *buf = NULL;
        size_t len = 0, *lens = mp_alloc(size * sizeof(size_t));

        for (size_t i = 0; i < size; i++)
            lens[i] = 1; /* to be overwritten */
        if (func[0] == 'b')
            CONF_RUN(&k, weft_broadcast_bytes(&buf, &len, root, comm),
                     weft_ibroadcast_bytes(&buf, &len, root, comm, &req_));
        else
            CONF_RUN(&k, weft_allgather_bytes(NULL, 0, &buf, lens, comm),
                     weft_iallgather_bytes(NULL, 0, &buf, lens, comm, &req_));
        if (len != 0)
            conf_fail(&k, "len is %zu after broadcasting 0 bytes", len);
        for (size_t i = 0; func[0] == 'a' && i < size; i++)
            if (lens[i] != 0)
                conf_fail(&k, "lens[%zu] is %zu, expected 0", i, lens[i]);
        if (cc->rank != root || func[0] == 'a')
            weft_free(buf);
        free(lens);
        conf_cases++;
    }
    free(zeros);
}

static const char *const zero_funcs[] = {
    "broadcast", "reduce", "allreduce", "gather", "gatherv", "scatter", "scatterv",
    "allgather", "allgatherv", "reduce_scatter", "reduce_scatterv", "alltoall",
    "alltoall in place", "alltoallv", "scan", "exscan", "gather_axis (empty along)",
    "allgather_axis (empty across)", "scatter_axis (empty along)",
    "reduce_scatter_axis (empty across)", "alltoall_axis (empty along)",
    "broadcast_bytes", "allgather_bytes"
};

void conf_run_zero(const conf_comm_t *cc)
{
    /* nb 2 and 3: the forms mixed, odd ranks nonblocking and then even
     * ones. An empty call may finish without a message only if both forms
     * do so alike (a nonblocking root would wait for what a blocking rank
     * that skipped never sends). */
    for (size_t f = 0; f < sizeof(zero_funcs) / sizeof(zero_funcs[0]); f++)
        for (int nb = 0; nb < 4; nb++)
            zero_case(cc, zero_funcs[f], nb < 2 ? nb : (cc->rank + nb) % 2);
}
