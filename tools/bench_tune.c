/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * bench_tune.c: weft-bench --tune FILE: measures the tuner's parameters on
 * this job, longer than weft_init's probe does, and writes them where
 * WEFT_TUNE_FILE can load them in later jobs of the same machines and
 * shape, sparing them the probe.
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

int bench_tune(weft_comm_t world, const char *path)
{
    weft__tune_shape_t shape;
    weft_result_t rc = weft__tune_agree(world, TUNE_REPS_SCALE);

    if (rc != WEFT_SUCCESS) {
        fprintf(stderr, "weft-bench: --tune: %s\n", weft__get_error());
        return 1;
    }
    if (world->rank != 0)
        return 0;
    rc = weft__tune_save(path, &world->inst->tune->params);
    if (rc != WEFT_SUCCESS) {
        fprintf(stderr, "weft-bench: --tune: %s\n", weft__get_error());
        return 1;
    }
    printf("# weft-bench --tune: measured in %.1f ms, written to %s (use it with "
           "WEFT_TUNE_FILE=%s)\n", world->inst->tune->probe_ms, path, path);
    weft__tune_shape_of(world, &shape);
    if (shape.nodes < 2)
        printf("# one node: the inter-node parameters are the built-in ones; run across "
               "nodes to measure them\n");
    weft__tune_print_table(stdout, &world->inst->tune->params, &shape);
    return 0;
}
