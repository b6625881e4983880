/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * bench_tune.c: weft-bench --tune FILE: measures the tuner's parameters on
 * this job, longer than weft_init's probe does, and writes them where
 * WEFT_TUNE_FILE can load them in later jobs of the same machines and
 * shape, sparing them the probe; then prints what the tuner predicts and
 * measures it (bench_tune_measure.c).
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>

#include "tools/bench.h"
#include "core/comm/comm.h"
#include "core/base/error.h"
#include "core/tune/tune.h"

/* Repetitions of every probe exchange, against weft_init's. */
#define TUNE_REPS_SCALE 10

void bench_tune_prepare(void)
{
    /* weft_init need not probe, and must not read the file about to be
     * written (it may be stale or malformed): the measurement below is
     * the one that counts. */
    setenv("WEFT_TUNE", "0", 1);
    unsetenv("WEFT_TUNE_FILE");
}

int bench_tune(weft_comm_t world, const bench_opts_t *o)
{
    const char *path = o->tune;
    weft__tune_shape_t shape;
    weft_result_t rc = weft__tune_agree(world, TUNE_REPS_SCALE);
    int saved;

    if (rc != WEFT_SUCCESS) {
        fprintf(stderr, "weft-bench: --tune: %s\n", weft__get_error());
        return 1;
    }
    /* Rank 0 writes the file; the others learn whether it could before
     * they all go on measuring, or stop together. */
    saved = world->rank != 0 ||
            weft__tune_save(path, &world->inst->tune->params) == WEFT_SUCCESS;
    if (!saved)
        fprintf(stderr, "weft-bench: --tune: %s\n", weft__get_error());
    bench_check(weft_allreduce(WEFT_IN_PLACE, &saved, 1, WEFT_INT32, WEFT_MIN, world),
                "allreduce", world->rank);
    if (!saved)
        return 1;
    if (world->rank == 0) {
        printf("# weft-bench --tune: measured in %.1f ms, written to %s (use it with "
               "WEFT_TUNE_FILE=%s)\n", world->inst->tune->probe_ms, path, path);
        weft__tune_shape_of(world, &shape);
        if (shape.nodes < 2)
            printf("# one node: the inter-node parameters are the built-in ones; run across "
                   "nodes to measure them\n");
        weft__tune_print_table(stdout, &world->inst->tune->params, &shape);
        fflush(stdout);
    }
    return bench_tune_measure(world, o);
}
