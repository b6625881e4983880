/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * bench_main.c: weft-bench's options and measuring loop. Run it under a
 * launcher: weftrun -n 4 weft-bench -o allreduce -b 8 -e 128M -f 2.
 */
#include "config.h"

#include <ctype.h>
#include <getopt.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tools/bench.h"

static int rank;

static void usage(FILE *f)
{
    fputs("usage: weftrun -n N weft-bench [options]\n"
          "  -o, --op OPS          allreduce, reduce, broadcast, allgather, reduce_scatter,\n"
          "                        alltoall, gather, scatter, pingpong, bw, a comma list of\n"
          "                        them, or all (the collectives; default allreduce)\n"
          "  -b, --minbytes SIZE   smallest size (default 8); K, M, G suffixes\n"
          "  -e, --maxbytes SIZE   largest size (default 32M)\n"
          "  -f, --stepfactor F    size multiplier between rows (default 2)\n"
          "  -d, --datatype TYPE   int8 ... float64, or half/float/double (default float32)\n"
          "  -r, --op-type OP      sum, prod, min, max, avg (default sum)\n"
          "  -R, --root R          root of broadcast, reduce, gather, scatter (default 0)\n"
          "  -c, --check 0|1       count wrong result elements (default 1)\n"
          "  -w, --warmup N        untimed iterations per size (default 5)\n"
          "      --warmup-ms MS    and more of them until MS milliseconds passed (default 0)\n"
          "  -n, --iters N         timed iterations per size (default 20)\n"
          "  -a, --algo NAME       force an algorithm (sets WEFT_ALGO for the operations)\n"
          "      --csv FILE        also write one line per measurement to FILE\n"
          "      --json FILE       also write every measurement to FILE as JSON\n"
          "      --plot FILE       draw busbw against size, one line per operation (SVG)\n"
          "      --tune FILE       measure the tuner's parameters, write them to FILE for\n"
          "                        WEFT_TUNE_FILE, print the predicted times, then time\n"
          "                        every algorithm against them (-o all, -n 1000 at most\n"
          "                        by default)\n"
          "  -m, --memory KIND     host, or cuda: the buffers in CUDA device memory (the\n"
          "                        driver of WEFT_CUDA_DRIVER or libcuda.so.1)\n"
          "  -h, --help\n", f);
}

static void die(const char *fmt, const char *arg)
{
    if (rank == 0) {
        fprintf(stderr, "weft-bench: ");
        fprintf(stderr, fmt, arg);
        fputc('\n', stderr);
    }
    exit(2);
}

static size_t parse_size(const char *s)
{
    char *end;
    double v = strtod(s, &end);
    int shift = 0;

    switch (toupper((unsigned char)*end)) {
    case 'K': shift = 10; end++; break;
    case 'M': shift = 20; end++; break;
    case 'G': shift = 30; end++; break;
    }
    if (*end == 'B' || *end == 'b')
        end++;
    if (end == s || *end || v < 0)
        die("'%s' is not a size", s);
    return (size_t)(v * (double)(1ull << shift));
}

static int parse_int(const char *s, int min)
{
    char *end;
    long v = strtol(s, &end, 10);

    if (end == s || *end || v < min || v > 1000000000)
        die("'%s' is not a valid number here", s);
    return (int)v;
}

/* WEFT_ALGO's name of an operation with a choice of algorithm. */
static const char *algo_op(bench_kind_t k)
{
    switch (k) {
    case BENCH_ALLREDUCE: return "allreduce";
    case BENCH_REDUCE: return "reduce";
    case BENCH_BROADCAST: return "bcast";
    case BENCH_ALLGATHER: return "allgather";
    case BENCH_REDUCE_SCATTER: return "reduce_scatter";
    case BENCH_ALLTOALL: return "alltoall";
    case BENCH_GATHER: return "gather";
    case BENCH_SCATTER: return "scatter";
    default: return NULL;
    }
}

static void parse(int argc, char **argv, bench_opts_t *o)
{
    static const struct option longs[] = {
        { "op", required_argument, NULL, 'o' }, { "minbytes", required_argument, NULL, 'b' },
        { "maxbytes", required_argument, NULL, 'e' }, { "stepfactor", required_argument, NULL, 'f' },
        { "datatype", required_argument, NULL, 'd' }, { "op-type", required_argument, NULL, 'r' },
        { "root", required_argument, NULL, 'R' }, { "check", required_argument, NULL, 'c' },
        { "warmup", required_argument, NULL, 'w' }, { "iters", required_argument, NULL, 'n' },
        { "algo", required_argument, NULL, 'a' }, { "csv", required_argument, NULL, 'C' },
        { "json", required_argument, NULL, 'J' }, { "plot", required_argument, NULL, 'P' },
        { "tune", required_argument, NULL, 'T' }, { "warmup-ms", required_argument, NULL, 'W' },
        { "memory", required_argument, NULL, 'm' }, { "help", no_argument, NULL, 'h' },
        { NULL, 0, NULL, 0 }
    };
    const char *ops = NULL, *algo = NULL;
    char list[256], spec[512] = "", *save = NULL;
    int c, v, iters_given = 0;

    *o = (bench_opts_t){ .min_bytes = 8, .max_bytes = 32u << 20, .factor = 2,
                         .dt = WEFT_FLOAT32, .redop = WEFT_SUM, .check = 1, .warmup = 5,
                         .iters = 20 };
    while ((c = getopt_long(argc, argv, "o:b:e:f:d:r:R:c:w:n:a:m:h", longs, NULL)) != -1) {
        switch (c) {
        case 'o': ops = optarg; break;
        case 'b': o->min_bytes = parse_size(optarg); break;
        case 'e': o->max_bytes = parse_size(optarg); break;
        case 'f':
            o->factor = strtod(optarg, NULL);
            if (!(o->factor > 1.0))
                die("-f %s: the step factor must be above 1", optarg);
            break;
        case 'd':
            if ((v = bench_dtype_from_name(optarg)) < 0)
                die("-d %s: not a data type (int8 ... float64, half, float, double)", optarg);
            o->dt = (weft_dtype_t)v;
            break;
        case 'r':
            if ((v = bench_redop_from_name(optarg)) < 0)
                die("-r %s: not a reduction (sum, prod, min, max, avg)", optarg);
            o->redop = (weft_op_t)v;
            break;
        case 'R': o->root = parse_int(optarg, 0); break;
        case 'c': o->check = parse_int(optarg, 0) != 0; break;
        case 'w': o->warmup = parse_int(optarg, 0); break;
        case 'W': o->warmup_ms = parse_int(optarg, 0); break;
        case 'n': o->iters = parse_int(optarg, 1); iters_given = 1; break;
        case 'a': algo = o->algo = optarg; break;
        case 'C': o->csv = optarg; break;
        case 'J': o->json = optarg; break;
        case 'P': o->plot = optarg; break;
        case 'T': o->tune = optarg; break;
        case 'm':
            if (strcmp(optarg, "host") && strcmp(optarg, "cuda"))
                die("-m %s: the memory is host or cuda", optarg);
            o->cuda = !strcmp(optarg, "cuda");
            break;
        case 'h': usage(stdout); exit(0);
        default: usage(stderr); exit(2);
        }
    }
    if (optind < argc)
        die("unexpected argument '%s'", argv[optind]);
    /* --tune measures every algorithm of every collective; it times each
     * for a few milliseconds, -n capping its iterations. */
    if (!ops)
        ops = o->tune ? "all" : "allreduce";
    if (o->tune && !iters_given)
        o->iters = 1000;
    if (o->tune && algo)
        die("-a %s: --tune forces every algorithm in turn", algo);
    if (o->tune && o->cuda)
        die("%s: --tune measures host memory", "-m cuda");
    if (o->min_bytes > o->max_bytes)
        die("%s: -b is larger than -e", "sizes");
    if (strlen(ops) >= sizeof(list))
        die("-o %s: too long", ops);
    strcpy(list, ops);
    for (char *t = strtok_r(list, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
        if (!strcmp(t, "all")) {
            for (int k = 0; k < BENCH_NKINDS; k++)
                o->kinds[k] = k != BENCH_PINGPONG && k != BENCH_BW;
        } else if ((v = bench_kind_from_name(t)) >= 0) {
            o->kinds[v] = 1;
        } else {
            die("-o: '%s' is not an operation (allreduce, reduce, broadcast, allgather, "
                "reduce_scatter, alltoall, gather, scatter, pingpong, bw, all)", t);
        }
    }
    for (int k = 0; k < BENCH_NKINDS; k++)
        if (o->tune && o->kinds[k] && !algo_op((bench_kind_t)k))
            die("--tune: %s has no choice of algorithm", bench_kind_name((bench_kind_t)k));
    if (algo) {
        for (int k = 0; k < BENCH_NKINDS; k++) {
            if (!o->kinds[k])
                continue;
            if (!algo_op((bench_kind_t)k))
                die("-a: %s has no choice of algorithm", bench_kind_name((bench_kind_t)k));
            snprintf(spec + strlen(spec), sizeof(spec) - strlen(spec), "%s%s:%s",
                     spec[0] ? "," : "", algo_op((bench_kind_t)k), algo);
        }
        setenv("WEFT_ALGO", spec, 1); /* weft_init checks the name */
    }
}

static void write_report(const char *path, const bench_opts_t *o, int n,
                         const bench_result_t *r, size_t nr,
                         void (*write)(FILE *, const bench_opts_t *, int,
                                       const bench_result_t *, size_t))
{
    FILE *f;

    if (!path)
        return;
    if (!(f = fopen(path, "w"))) {
        fprintf(stderr, "weft-bench: cannot write %s\n", path);
        return;
    }
    write(f, o, n, r, nr);
    fclose(f);
}

static void check(weft_result_t rc, const char *what)
{
    bench_check(rc, what, rank);
}

int main(int argc, char **argv)
{
    bench_opts_t o;
    weft_comm_t world;
    size_t esize = 0, send, recv;
    FILE *csv = NULL;
    void *sb, *rb;
    bench_mirror_t dev = { NULL, NULL, 0, 0 };
    long long total_wrong = 0;
    bench_result_t *results = NULL;
    size_t nresults = 0, cap = 0;
    int n;

    parse(argc, argv, &o);
    if (o.tune)
        bench_tune_prepare();
    check(weft_init(NULL, &world), "weft_init");
    if (o.tune) {
        int failed = bench_tune(world, &o);

        weft_comm_destroy(world);
        return failed;
    }
    check(weft_comm_rank(world, &rank), "weft_comm_rank");
    check(weft_comm_size(world, &n), "weft_comm_size");
    if (o.root >= n)
        die("-R: the root is not a rank of the job%s", "");
    weft_dtype_size(o.dt, &esize);
    bench_buffers(BENCH_ALLTOALL, bench_count(BENCH_ALLREDUCE, o.max_bytes, esize, n), n, &send,
                  &recv);
    sb = calloc(send + 1, esize);
    rb = calloc(recv + 1, esize);
    if (!sb || !rb)
        die("cannot allocate the buffers for -e %s", "the largest size");
    /* --memory cuda: the operations run on device copies of sb and rb */
    if (o.cuda) {
        bench_cuda_open();
        dev.sbytes = (send + 1) * esize;
        dev.rbytes = (recv + 1) * esize;
        dev.sb = bench_cuda_alloc(dev.sbytes);
        dev.rb = bench_cuda_alloc(dev.rbytes);
    }
    if (o.csv && rank == 0) {
        if (!(csv = fopen(o.csv, "w")))
            die("cannot write %s", o.csv);
        fputs("op,ranks,size,count,type,redop,root,placement,time_us,algbw_gbs,busbw_gbs,"
              "wrong\n", csv);
    }
    for (int k = 0; k < BENCH_NKINDS; k++) {
        if (!o.kinds[k])
            continue;
        if (rank == 0)
            bench_print_header(stdout, (bench_kind_t)k, &o, n);
        for (double b = (double)o.min_bytes; b <= (double)o.max_bytes; b *= o.factor) {
            size_t count = bench_count((bench_kind_t)k, (size_t)b, esize, n);
            size_t bytes = bench_size((bench_kind_t)k, count, esize, n);
            double t[2];
            long long wrong[2] = { 0, 0 };

            for (int p = 0; p < 2; p++) {
                bench_fill((bench_kind_t)k, sb, rb, count, &o, rank, n, p);
                if (dev.sb) {
                    bench_cuda_to(dev.sb, sb, dev.sbytes);
                    bench_cuda_to(dev.rb, rb, dev.rbytes);
                }
                t[p] = bench_measure((bench_kind_t)k, dev.sb ? dev.sb : sb,
                                     dev.sb ? dev.rb : rb, count, &o, p, world);
                if (o.check)
                    wrong[p] = bench_wrong_elements((bench_kind_t)k, sb, rb, count, &o, p,
                                                    world, &dev);
                total_wrong += wrong[p];
            }
            if (rank == 0) {
                bench_print_row(stdout, csv, (bench_kind_t)k, bytes, count, &o, t, n, wrong);
                fflush(stdout);
                if (nresults == cap) {
                    bench_result_t *grown = realloc(results, (cap = cap * 2 + 16) *
                                                    sizeof(*results));

                    if (!grown)
                        die("out of memory for the %s", "results");
                    results = grown;
                }
                results[nresults++] = (bench_result_t){ (bench_kind_t)k, bytes, count,
                                                        { t[0], t[1] }, { wrong[0], wrong[1] } };
                /* A long sweep shows that it is alive. */
                if (isatty(STDERR_FILENO) && t[0] * (o.iters + o.warmup) > 1e6)
                    fprintf(stderr, "weft-bench: %s %zu B done\n",
                            bench_kind_name((bench_kind_t)k), bytes);
            }
            if (b * o.factor <= b)
                break;
        }
    }
    if (rank == 0) {
        printf("# Out of bounds values : %lld %s\n#\n", total_wrong, total_wrong ? "FAILED"
                                                                                 : "OK");
        if (csv)
            fclose(csv);
        write_report(o.json, &o, n, results, nresults, bench_write_json);
        write_report(o.plot, &o, n, results, nresults, bench_write_svg);
    }
    free(results);
    free(sb);
    free(rb);
    if (dev.sb) {
        bench_cuda_free(dev.sb);
        bench_cuda_free(dev.rb);
    }
    check(weft_comm_destroy(world), "weft_comm_destroy");
    return total_wrong ? 1 : 0;
}
