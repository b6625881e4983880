/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * weftrun_args.c: weftrun's command line.
 */
#include "config.h"

#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tools/weftrun.h"

enum {
    OPT_NNODES = 256,
    OPT_NODE_RANK,
    OPT_MASTER_ADDR,
    OPT_MASTER_PORT,
    OPT_TAG_OUTPUT,
    OPT_TIMEOUT,
    OPT_KILL_GRACE,
    OPT_JOB_NAME,
    OPT_BIND_TO,
    OPT_REPORT_BINDINGS
};

/* torchrun spells its options with underscores; both spellings work so
 * that torchrun command lines carry over. */
static const struct option long_options[] = {
    { "nproc-per-node", required_argument, NULL, 'n' },
    { "nproc_per_node", required_argument, NULL, 'n' },
    { "nnodes", required_argument, NULL, OPT_NNODES },
    { "node-rank", required_argument, NULL, OPT_NODE_RANK },
    { "node_rank", required_argument, NULL, OPT_NODE_RANK },
    { "master-addr", required_argument, NULL, OPT_MASTER_ADDR },
    { "master_addr", required_argument, NULL, OPT_MASTER_ADDR },
    { "master-port", required_argument, NULL, OPT_MASTER_PORT },
    { "master_port", required_argument, NULL, OPT_MASTER_PORT },
    { "tag-output", no_argument, NULL, OPT_TAG_OUTPUT },
    { "timeout", required_argument, NULL, OPT_TIMEOUT },
    { "kill-grace", required_argument, NULL, OPT_KILL_GRACE },
    { "job-name", required_argument, NULL, OPT_JOB_NAME },
    { "bind-to", required_argument, NULL, OPT_BIND_TO },
    { "report-bindings", no_argument, NULL, OPT_REPORT_BINDINGS },
    { "help", no_argument, NULL, 'h' },
    { "version", no_argument, NULL, 'V' },
    { NULL, 0, NULL, 0 }
};

static const char synopsis[] =
    "Usage: weftrun [-n N] [options] program [argument ...]\n"
    "       weftrun --nnodes M --node-rank K --nproc-per-node N\n"
    "               --master-addr HOST --master-port PORT [options] program [argument ...]\n";

/* After an error: the synopsis, and where the rest is. */
static void usage(FILE *f)
{
    fputs(synopsis, f);
    fputs("Try 'weftrun --help' for the options.\n", f);
}

static void help(FILE *f)
{
    fputs(synopsis, f);
    fputs("Starts N ranks of program on this node (M*N ranks on M nodes), hosts weft's\n"
          "rendezvous store and stops the whole job when one rank fails.\n"
          "\n"
          "  -n, --nproc-per-node N  ranks on this node (default 1)\n"
          "      --nnodes M          nodes of the job (default 1)\n"
          "      --node-rank K       this node's number, 0 to M-1; node 0 hosts the store\n"
          "      --master-addr HOST  node 0's address, MASTER_ADDR and WEFT_MASTER_ADDR\n"
          "                          (default 127.0.0.1 on one node)\n"
          "      --master-port PORT  the port of weft's store, WEFT_MASTER_PORT (default a\n"
          "                          free one on one node)\n"
          "      --tag-output        prefix every output line with \"[rank]:\"\n"
          "      --timeout SECONDS   stop the job after SECONDS and exit 124 (default: never)\n"
          "      --kill-grace SECONDS\n"
          "                          wait between SIGTERM and SIGKILL (default 3)\n"
          "      --job-name NAME     passed to the ranks as WEFT_JOB_NAME\n"
          "      --bind-to none|core|numa|socket\n"
          "                          bind each rank to a core, NUMA node or socket (default:\n"
          "                          a share of the cores each; none past one rank per core)\n"
          "      --report-bindings   print each rank's CPUs to stderr\n"
          "  -h, --help              print this help and exit\n"
          "  -V, --version           print the version and exit\n"
          "\n"
          "MASTER_PORT, for the program's own framework (torch.distributed's env://),\n"
          "is the MASTER_PORT of node 0's environment, else a port free there.\n"
          "On several nodes every weftrun needs the same WEFT_AUTH_TOKEN in its\n"
          "environment. See weftrun(1).\n",
          f);
}

static enum weftrun_args_result bad(const char *fmt, const char *what)
{
    fputs("weftrun: ", stderr);
    fprintf(stderr, fmt, what);
    fputs("\n", stderr);
    usage(stderr);
    return WEFTRUN_ARGS_BAD;
}

static int parse_int(const char *opt, const char *s, long min, long max, int *out)
{
    char *end;
    long v;

    errno = 0;
    v = strtol(s, &end, 10);
    if (errno != 0 || end == s || *end != '\0' || v < min || v > max) {
        fprintf(stderr, "weftrun: %s '%s' is not a whole number from %ld to %ld\n", opt, s,
                min, max);
        return -1;
    }
    *out = (int)v;
    return 0;
}

static int parse_seconds(const char *opt, const char *s, double *out)
{
    char *end;
    double v;

    errno = 0;
    v = strtod(s, &end);
    /* Bounded so that the deadline in milliseconds fits any integer type. */
    if (errno != 0 || end == s || *end != '\0' || !isfinite(v) || v < 0 || v > 1e9) {
        fprintf(stderr, "weftrun: %s '%s' is not a number of seconds from 0 to 1e9\n", opt, s);
        return -1;
    }
    *out = v;
    return 0;
}

/* The job name travels as WEFT_JOB_NAME and as the store's job id, which
 * has WEFT__JOB_ID_MAX (40) bytes with its NUL. */
static int job_name_ok(const char *name)
{
    size_t n = strlen(name);

    if (n == 0 || n > 39)
        return 0;
    return strspn(name, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789._-") == n;
}

/* mpirun's names; "package" is hwloc's for a socket. */
static int parse_bind(const char *s, enum weftrun_bind_policy *out)
{
    static const struct {
        const char *name;
        enum weftrun_bind_policy policy;
    } names[] = {
        { "none", WEFTRUN_BIND_NONE },     { "core", WEFTRUN_BIND_CORE },
        { "numa", WEFTRUN_BIND_NUMA },     { "socket", WEFTRUN_BIND_SOCKET },
        { "package", WEFTRUN_BIND_SOCKET },
    };

    for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
        if (strcmp(s, names[i].name) == 0) {
            *out = names[i].policy;
            return 0;
        }
    }
    fprintf(stderr, "weftrun: --bind-to '%s' is not one of none, core, numa, socket\n", s);
    return -1;
}

static enum weftrun_args_result check(struct weftrun_opts *o)
{
    if (o->nnodes > 1) {
        if (o->node_rank < 0)
            return bad("%s needs --node-rank", "--nnodes above 1");
        if (o->master_addr == NULL)
            return bad("%s needs --master-addr", "--nnodes above 1");
        if (o->master_port <= 0)
            return bad("%s needs --master-port from 1 to 65535", "--nnodes above 1");
    }
    if (o->node_rank >= o->nnodes) {
        fprintf(stderr, "weftrun: --node-rank %d is not below --nnodes %d\n", o->node_rank,
                o->nnodes);
        usage(stderr);
        return WEFTRUN_ARGS_BAD;
    }
    if (o->node_rank < 0)
        o->node_rank = 0;
    if ((long long)o->nnodes * o->nproc > WEFTRUN_MAX_WORLD) {
        fprintf(stderr, "weftrun: %d nodes of %d ranks exceed %d ranks\n", o->nnodes, o->nproc,
                WEFTRUN_MAX_WORLD);
        usage(stderr);
        return WEFTRUN_ARGS_BAD;
    }
    if (o->master_addr != NULL && o->master_addr[0] == '\0')
        return bad("%s must not be empty", "--master-addr");
    if (o->job_name != NULL && !job_name_ok(o->job_name))
        return bad("--job-name '%s' must be 1 to 39 of the characters A-Z a-z 0-9 . _ -",
                   o->job_name);
    return WEFTRUN_ARGS_RUN;
}

enum weftrun_args_result weftrun_parse_args(int argc, char **argv, struct weftrun_opts *o)
{
    int c;

    memset(o, 0, sizeof(*o));
    o->nproc = 1;
    o->nnodes = 1;
    o->node_rank = -1;
    o->master_port = -1;
    o->kill_grace_s = WEFTRUN_DEFAULT_KILL_GRACE;

    /* '+': options end at the program, whose own options are its business;
     * ':': report a missing value ourselves. */
    opterr = 0;
    while ((c = getopt_long(argc, argv, "+:n:hV", long_options, NULL)) != -1) {
        switch (c) {
        case 'n':
            if (parse_int("--nproc-per-node", optarg, 1, WEFTRUN_MAX_NPROC, &o->nproc) != 0)
                goto err_usage;
            break;
        case OPT_NNODES:
            if (parse_int("--nnodes", optarg, 1, WEFTRUN_MAX_NNODES, &o->nnodes) != 0)
                goto err_usage;
            break;
        case OPT_NODE_RANK:
            if (parse_int("--node-rank", optarg, 0, WEFTRUN_MAX_NNODES - 1, &o->node_rank) != 0)
                goto err_usage;
            break;
        case OPT_MASTER_ADDR:
            o->master_addr = optarg;
            break;
        case OPT_MASTER_PORT:
            if (parse_int("--master-port", optarg, 0, 65535, &o->master_port) != 0)
                goto err_usage;
            break;
        case OPT_TAG_OUTPUT:
            o->tag_output = 1;
            break;
        case OPT_TIMEOUT:
            if (parse_seconds("--timeout", optarg, &o->timeout_s) != 0)
                goto err_usage;
            break;
        case OPT_KILL_GRACE:
            if (parse_seconds("--kill-grace", optarg, &o->kill_grace_s) != 0)
                goto err_usage;
            break;
        case OPT_JOB_NAME:
            o->job_name = optarg;
            break;
        case OPT_BIND_TO:
            if (parse_bind(optarg, &o->bind_to) != 0)
                goto err_usage;
            break;
        case OPT_REPORT_BINDINGS:
            o->report_bindings = 1;
            break;
        case 'h':
            help(stdout);
            return WEFTRUN_ARGS_DONE;
        case 'V':
            printf("weftrun (weft) %s\n", PACKAGE_VERSION);
            return WEFTRUN_ARGS_DONE;
        case ':':
            return bad("option '%s' needs a value", argv[optind - 1]);
        case '?':
        default:
            if (optopt != 0) {
                char opt[3] = { '-', (char)optopt, '\0' };

                return bad("unknown option '%s'", opt);
            }
            return bad("unknown option '%s'", argv[optind - 1]);
        }
    }
    if (optind >= argc)
        return bad("%s", "no program to run");
    o->argv = argv + optind;
    return check(o);

err_usage:
    usage(stderr);
    return WEFTRUN_ARGS_BAD;
}
