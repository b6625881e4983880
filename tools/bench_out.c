/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * bench_out.c: weft-bench's table (nccl-tests' columns) and CSV.
 */
#include "config.h"

#include <string.h>

#include "tools/bench.h"

static const char *const dtype_names[WEFT_DTYPE_COUNT] = {
    "int8", "uint8", "int32", "uint32", "int64", "uint64", "float16", "bfloat16", "float32",
    "float64"
};
static const char *const redop_names[] = { "sum", "prod", "min", "max", "avg" };

const char *bench_dtype_name(weft_dtype_t dt)
{
    return (unsigned)dt < WEFT_DTYPE_COUNT ? dtype_names[dt] : "?";
}

const char *bench_redop_name(weft_op_t op)
{
    return (unsigned)op < sizeof(redop_names) / sizeof(redop_names[0]) ? redop_names[op] : "?";
}

int bench_dtype_from_name(const char *name)
{
    for (int i = 0; i < WEFT_DTYPE_COUNT; i++)
        if (!strcmp(dtype_names[i], name))
            return i;
    /* nccl-tests' spellings */
    if (!strcmp(name, "half"))
        return WEFT_FLOAT16;
    if (!strcmp(name, "float"))
        return WEFT_FLOAT32;
    if (!strcmp(name, "double"))
        return WEFT_FLOAT64;
    return -1;
}

int bench_redop_from_name(const char *name)
{
    for (size_t i = 0; i < sizeof(redop_names) / sizeof(redop_names[0]); i++)
        if (!strcmp(redop_names[i], name))
            return (int)i;
    return -1;
}

void bench_print_header(FILE *f, bench_kind_t k, const bench_opts_t *o, int n)
{
    fprintf(f, "#\n# %s, %d ranks, %s, %d warm-up and %d timed iterations%s\n#\n",
            bench_kind_name(k), n, bench_dtype_name(o->dt), o->warmup, o->iters,
            o->check ? ", checked" : "");
    fprintf(f, "# %10s %12s %8s %6s %6s %30s %30s\n", "", "", "", "", "", "out-of-place",
            "in-place");
    fprintf(f, "# %10s %12s %8s %6s %6s %9s %6s %6s %6s %9s %6s %6s %6s\n", "size", "count",
            "type", "redop", "root", "time", "algbw", "busbw", "#wrong", "time", "algbw", "busbw",
            "#wrong");
    fprintf(f, "# %10s %12s %8s %6s %6s %9s %6s %6s %6s %9s %6s %6s %6s\n", "(B)", "(elements)",
            "", "", "", "(us)", "(GB/s)", "(GB/s)", "", "(us)", "(GB/s)", "(GB/s)", "");
}

void bench_print_row(FILE *f, FILE *csv, bench_kind_t k, size_t bytes, size_t count,
                     const bench_opts_t *o, const double t_us[2], int n,
                     const long long wrong[2])
{
    const char *redop = bench_reduces(k) ? bench_redop_name(o->redop) : "none";
    char root[16], cols[2][64];

    snprintf(root, sizeof(root), "%d", bench_rooted(k) ? o->root : -1);
    for (int p = 0; p < 2; p++) {
        double algbw = t_us[p] > 0 ? (double)bytes / t_us[p] / 1e3 : 0;
        char w[16];

        if (o->check)
            snprintf(w, sizeof(w), "%lld", wrong[p]);
        else
            snprintf(w, sizeof(w), "N/A");
        snprintf(cols[p], sizeof(cols[p]), "%9.2f %6.2f %6.2f %6s", t_us[p], algbw,
                 algbw * bench_busbw_factor(k, n), w);
        if (csv)
            fprintf(csv, "%s,%d,%zu,%zu,%s,%s,%s,%s,%.3f,%.4f,%.4f,%s\n", bench_kind_name(k), n,
                    bytes, count, bench_dtype_name(o->dt), redop, root,
                    p ? "in-place" : "out-of-place", t_us[p], algbw,
                    algbw * bench_busbw_factor(k, n), o->check ? w : "");
    }
    fprintf(f, "  %10zu %12zu %8s %6s %6s %s %s\n", bytes, count, bench_dtype_name(o->dt), redop,
            root, cols[0], cols[1]);
}
