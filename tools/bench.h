/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * bench.h: weft-bench, collective benchmarks reported the way nccl-tests
 * reports them: for each size, the time of one operation, the algorithm
 * bandwidth (bytes / time) and the bus bandwidth (algbw times the
 * operation's factor, comparable across rank counts), out of place and in
 * place, and the number of wrong elements when checking.
 */
#ifndef WEFT_TOOLS_BENCH_H
#define WEFT_TOOLS_BENCH_H

#include <stddef.h>
#include <stdio.h>

#include <weft.h>

typedef enum bench_kind {
    BENCH_ALLREDUCE, BENCH_REDUCE, BENCH_BROADCAST, BENCH_ALLGATHER, BENCH_REDUCE_SCATTER,
    BENCH_ALLTOALL, BENCH_GATHER, BENCH_SCATTER, BENCH_PINGPONG, BENCH_BW, BENCH_NKINDS
} bench_kind_t;

/* Messages in flight in one window of the bw operation (as OSU's
 * osu_bw): its time is the window's over this. */
#define BENCH_BW_WINDOW 64

typedef struct bench_opts {
    int kinds[BENCH_NKINDS];  /* -o: which operations run */
    size_t min_bytes, max_bytes;
    double factor;            /* -f: size multiplier */
    weft_dtype_t dt;
    weft_op_t redop;
    int root;
    int check;                /* -c */
    int warmup, iters;
    int warmup_ms;             /* and warm up until this long has passed */
    const char *csv;          /* --csv FILE */
    const char *json;         /* --json FILE */
    const char *plot;         /* --plot FILE.svg */
    const char *tune;         /* --tune FILE */
    const char *algo;         /* -a, for the reports */
    int cuda;                 /* --memory cuda: buffers in device memory */
} bench_opts_t;

/* One row of the report, kept for --json and --plot. */
typedef struct bench_result {
    bench_kind_t kind;
    size_t bytes, count;
    double t_us[2];           /* out of place, in place */
    long long wrong[2];
} bench_result_t;

/* bench_cuda.c: --memory cuda. Opens the driver (exits on failure);
 * device memory and copies to and from it (exit on failure). */
void bench_cuda_open(void);
void *bench_cuda_alloc(size_t bytes);
void bench_cuda_free(void *dev);
void bench_cuda_to(void *dev, const void *host, size_t bytes);
void bench_cuda_from(void *host, const void *dev, size_t bytes);

/* bench_tune.c: --tune. Before weft_init; then, on every rank, measures
 * the tuner's parameters, writes them to o->tune (rank 0), prints the
 * predicted table and runs bench_tune_measure; 0 on success. */
void bench_tune_prepare(void);
int bench_tune(weft_comm_t world, const bench_opts_t *o);
/* bench_tune_measure.c: every algorithm the table predicts for the
 * operations and sizes of o, forced and measured on a duplicate of world,
 * against its prediction (rank 0 prints); 0 when every result was right. */
int bench_tune_measure(weft_comm_t world, const bench_opts_t *o);

/* bench_ops.c: the operations. */
const char *bench_kind_name(bench_kind_t k);
int bench_kind_from_name(const char *name); /* -1 when unknown */
int bench_reduces(bench_kind_t k);
int bench_rooted(bench_kind_t k);
/* Elements per rank ("count") for a "size" column of bytes, and back. */
size_t bench_count(bench_kind_t k, size_t bytes, size_t esize, int n);
size_t bench_size(bench_kind_t k, size_t count, size_t esize, int n);
double bench_busbw_factor(bench_kind_t k, int n);
/* Elements of the send and receive buffers. */
void bench_buffers(bench_kind_t k, size_t count, int n, size_t *send, size_t *recv);
weft_result_t bench_run(bench_kind_t k, void *sb, void *rb, size_t count,
                        const bench_opts_t *o, int in_place, weft_comm_t comm);
/* Input of this rank; then the elements of the result that are wrong. */
void bench_fill(bench_kind_t k, void *sb, void *rb, size_t count, const bench_opts_t *o,
                int rank, int n, int in_place);
size_t bench_wrong(bench_kind_t k, const void *rb, size_t count, const bench_opts_t *o,
                   int rank, int n, int in_place);

/* bench_measure.c: one operation at one size, collective over comm. */
/* Device mirrors of the buffers (--memory cuda), or NULLs, and their bytes. */
typedef struct bench_mirror {
    void *sb, *rb;
    size_t sbytes, rbytes;
} bench_mirror_t;

/* Exits 1 naming what failed on rank when rc is not success. */
void bench_check(weft_result_t rc, const char *what, int rank);
/* Runs o->warmup (and --warmup-ms of) untimed operations, then o->iters
 * timed ones; their mean time in microseconds, the slowest rank's
 * (pingpong: one way; bw: one message of the window). */
double bench_measure(bench_kind_t k, void *sb, void *rb, size_t count, const bench_opts_t *o,
                     int in_place, weft_comm_t comm);
/* Fills the inputs, runs the operation once (on dev's copies unless dev is
 * NULL or holds none) and returns the wrong elements summed over the
 * ranks. */
long long bench_wrong_elements(bench_kind_t k, void *sb, void *rb, size_t count,
                               const bench_opts_t *o, int in_place, weft_comm_t comm,
                               const bench_mirror_t *dev);

/* bench_out.c: the report. */
const char *bench_dtype_name(weft_dtype_t dt);
const char *bench_redop_name(weft_op_t op);
int bench_dtype_from_name(const char *name);
int bench_redop_from_name(const char *name);
void bench_print_header(FILE *f, bench_kind_t k, const bench_opts_t *o, int n);
void bench_print_row(FILE *f, FILE *csv, bench_kind_t k, size_t bytes, size_t count,
                     const bench_opts_t *o, const double t_us[2], int n,
                     const long long wrong[2]);

/* bench_plot.c: machine-readable and graphical reports of all rows. */
void bench_write_json(FILE *f, const bench_opts_t *o, int n, const bench_result_t *r,
                      size_t nr);
void bench_write_svg(FILE *f, const bench_opts_t *o, int n, const bench_result_t *r,
                     size_t nr);

#endif /* WEFT_TOOLS_BENCH_H */
