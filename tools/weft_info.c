/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * weft_info.c: weft-info, what this weft installation consists of and
 * which transports a program started here would get.
 *
 * The transports are found and initialised by the library's own loader,
 * with a core that describes a job of one rank, so what is printed is what
 * weft_init would see on this node, refusals and their reasons included.
 * The library's log is off unless WEFT_DEBUG asks for it: every skipped
 * plugin is in the table already. The topology is loaded as weft_init
 * loads it (hwloc, or WEFT_TOPO_FILE), and the plugins' needs are judged
 * against it; --xml and --dot print only the topology.
 */
#include "config.h"

#include <getopt.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "weft.h"
#include "weft/transport.h"
#include "core/base/error.h"
#include "core/base/log.h"
#include "core/transport/plugin.h"
#include "topo/topo.h"

#define EXIT_USAGE 2
/* Long options without a short form. */
#define OPT_XML 256
#define OPT_DOT 257

/* ----------------------------------------------- a core of one rank */

/* There is no job, so no rendezvous to exchange through; init must not
 * need one (the ABI makes it available from connect() on only). */
static weft_result_t info_oob_put(void *core_ctx, const char *key, const void *val, size_t len)
{
    weft__set_error("weft-info runs no job: no out-of-band exchange");
    return WEFT_ERR_UNSUPPORTED;
}

static weft_result_t info_oob_get(void *core_ctx, const char *key, void *val, size_t cap,
                                  size_t *len, int timeout_ms)
{
    weft__set_error("weft-info runs no job: no out-of-band exchange");
    return WEFT_ERR_UNSUPPORTED;
}

/* A core of one rank with the library's own services. */
static void info_core_init(weft_transport_core_t *core)
{
    memset(core, 0, sizeof(*core));
    weft__transport_core_defaults(core);
    core->rank = 0;
    core->size = 1;
    core->job_id = "";
    core->oob_put = info_oob_put;
    core->oob_get = info_oob_get;
}

/* ---------------------------------------------------------------- output */

static const char *yes_no(int yes)
{
    return yes ? "yes" : "no";
}

static void print_build(void)
{
    int hwloc = 0, verbs = 0, cuda = 0, pmix = 0, trace = 0;

#ifdef WEFT_HAVE_HWLOC
    hwloc = 1;
#endif
#ifdef WEFT_HAVE_VERBS
    verbs = 1;
#endif
#ifdef WEFT_HAVE_CUDA
    cuda = 1;
#endif
#ifdef WEFT_HAVE_PMIX
    pmix = 1;
#endif
#ifdef WEFT_ENABLE_TRACE
    trace = 1;
#endif
    printf("build configuration:\n");
    printf("  %-22s %s\n", "hwloc topology", yes_no(hwloc));
    printf("  %-22s %s\n", "verbs (rdma-core)", yes_no(verbs));
    printf("  %-22s %s\n", "CUDA", yes_no(cuda));
    printf("  %-22s %s\n", "PMIx bootstrap", yes_no(pmix));
    printf("  %-22s %s\n", "TRACE logging", yes_no(trace));
    printf("  %-22s %s\n", "plugin directory", WEFT_PLUGIN_DIR);
}

static const char *dir_origin(weft__plugin_dir_origin_t origin)
{
    switch (origin) {
    case WEFT__PLUGIN_DIR_PATH: return "WEFT_PLUGIN_PATH";
    case WEFT__PLUGIN_DIR_BESIDE: return "beside the library";
    case WEFT__PLUGIN_DIR_CONFIGURED: return "plugin directory";
    }
    return "?";
}

static const char *dir_status(weft__plugin_dir_status_t status)
{
    switch (status) {
    case WEFT__PLUGIN_DIR_SEARCHED: return "";
    case WEFT__PLUGIN_DIR_MISSING: return ", missing";
    case WEFT__PLUGIN_DIR_UNREADABLE: return ", unreadable";
    case WEFT__PLUGIN_DIR_DUPLICATE: return ", searched already";
    }
    return "";
}

static void print_dirs(const weft__plugin_set_t *set)
{
    printf("plugin folders, in search order:\n");
    if (set->ndirs == 0)
        printf("  (none)\n");
    for (int i = 0; i < set->ndirs; i++)
        printf("  %s (%s%s)\n", set->dirs[i].path, dir_origin(set->dirs[i].origin),
               dir_status(set->dirs[i].status));
}

/* Indent of the lines under a candidate: below its state. */
#define DETAIL_INDENT "                  "

static void print_caps(const weft_transport_caps_t *caps)
{
    uint64_t known = WEFT_TRANSPORT_CAP_SELF | WEFT_TRANSPORT_CAP_MPROBE | WEFT_TRANSPORT_CAP_PUT;

    printf(DETAIL_INDENT "features:%s%s%s%s; memory:%s%s%s",
           caps->flags & WEFT_TRANSPORT_CAP_SELF ? " self" : "",
           caps->flags & WEFT_TRANSPORT_CAP_MPROBE ? " matched-probe" : "",
           caps->flags & WEFT_TRANSPORT_CAP_PUT ? " put" : "",
           caps->flags & known ? "" : " none",
           caps->mem_types & (1u << WEFT_TRANSPORT_MEM_HOST) ? " host" : "",
           caps->mem_types & (1u << WEFT_TRANSPORT_MEM_CUDA) ? " cuda" : "",
           caps->mem_types ? "" : " none");
    /* 0 means the plugin did not say. */
    if (caps->max_msg_size == SIZE_MAX)
        printf("; messages of any size");
    else if (caps->max_msg_size)
        printf("; messages up to %zu bytes", caps->max_msg_size);
    if (caps->latency_us > 0)
        printf("; latency ~%g us", caps->latency_us);
    if (caps->bandwidth_gbps > 0)
        printf("; bandwidth ~%g Gbit/s", caps->bandwidth_gbps);
    printf("\n");
}

/* What the plugins said while they started (weft__plugin_log_capture):
 * devices, ports and addresses they found, or why they left some out. */
struct said {
    char plugin[WEFT__PLUGIN_NAME_MAX];
    char msg[512];
};
static struct said *said;
static int nsaid, said_cap;

static void keep_said(void *arg, const char *plugin, int level, const char *msg)
{
    (void)arg;
    (void)level;
    if (nsaid == said_cap) {
        int cap = said_cap ? 2 * said_cap : 32;
        struct said *n = realloc(said, (size_t)cap * sizeof(*n));

        if (!n)
            return;
        said = n;
        said_cap = cap;
    }
    snprintf(said[nsaid].plugin, sizeof(said[nsaid].plugin), "%s", plugin ? plugin : "");
    snprintf(said[nsaid].msg, sizeof(said[nsaid].msg), "%s", msg);
    nsaid++;
}

static void print_said(const char *plugin)
{
    for (int i = 0; i < nsaid; i++)
        if (!strcmp(said[i].plugin, plugin))
            printf(DETAIL_INDENT "said: %s\n", said[i].msg);
}

static const weft__plugin_t *loaded_plugin(const weft__plugin_set_t *set,
                                           const weft__plugin_candidate_t *c)
{
    for (int i = 0; i < set->n; i++)
        if (!strcmp(set->plugins[i].path, c->path))
            return &set->plugins[i];
    return NULL;
}

static void print_candidates(const weft__plugin_set_t *set, int no_init)
{
    const char *filter = getenv("WEFT_TRANSPORTS");

    printf("transports (WEFT_TRANSPORTS %s%s%s%s):\n", filter ? "\"" : "",
           filter ? filter : "unset", filter ? "\"" : "", no_init ? "; not initialised" : "");
    if (set->ncandidates == 0)
        printf("  no file weft-<name>.so in these folders\n");
    for (int i = 0; i < set->ncandidates; i++) {
        const weft__plugin_candidate_t *c = &set->candidates[i];
        const char *state = weft__plugin_state_name(c->state);
        const char *reason = c->reason;
        const weft__plugin_t *pl = loaded_plugin(set, c);

        printf("  %-15s %-14s %s\n", c->name, state, c->path);
        /* "not applicable: why" under the state "not applicable" says it twice. */
        if (!strncmp(reason, state, strlen(state)) && !strncmp(reason + strlen(state), ": ", 2))
            reason += strlen(state) + 2;
        if (*reason)
            printf(DETAIL_INDENT "%s\n", reason);
        else if (c->description[0])
            printf(DETAIL_INDENT "%s\n", c->description);
        if (c->needs || c->state == WEFT__PLUGIN_LOADED || c->state == WEFT__PLUGIN_USABLE) {
            char needs[128];

            weft__topo_needs_string(c->needs, needs, sizeof(needs));
            printf(DETAIL_INDENT "needs: %s%s\n", needs,
                   c->needs & WEFT_TRANSPORT_NEED_LOCAL_PEER ? " (a local peer is judged "
                   "by weft_init, once the job is known)" : "");
        }
        if (pl)
            print_caps(&pl->caps);
        print_said(c->name);
    }
}

static void usage(FILE *out, const char *prog)
{
    fprintf(out,
            "Usage: %s [-n] [-t | --xml | --dot] [-h] [-V]\n"
            "Print weft's version and build configuration, the folders searched for\n"
            "transport plugins, what became of each plugin found, and the topology\n"
            "of this node as weft sees it.\n"
            "\n"
            "  -n, --no-init   check the plugins without initialising them\n"
            "  -t, --topology  print only the topology summary\n"
            "      --xml       print only the topology, as hwloc XML\n"
            "      --dot       print only the topology, as a graphviz graph\n"
            "  -h, --help      print this help and exit\n"
            "  -V, --version   print the version and exit\n"
            "\n"
            "Reads WEFT_PLUGIN_PATH, WEFT_TRANSPORTS and WEFT_TOPO_FILE as weft_init\n"
            "does; WEFT_DEBUG\n"
            "shows the library's log as well. Exit status: 0 when at least one transport\n"
            "is usable, 1 when none is, 2 for a wrong command line.\n",
            prog);
}

int main(int argc, char **argv)
{
    static const struct option options[] = {
        { "no-init", no_argument, NULL, 'n' },
        { "topology", no_argument, NULL, 't' },
        { "xml", no_argument, NULL, OPT_XML },
        { "dot", no_argument, NULL, OPT_DOT },
        { "help", no_argument, NULL, 'h' },
        { "version", no_argument, NULL, 'V' },
        { NULL, 0, NULL, 0 },
    };
    weft__plugin_set_t *set;
    weft_transport_core_t core;
    weft__topo_t *topo = NULL;
    int no_init = 0, usable = 0, opt, export = 0;
    weft_result_t rc;

    while ((opt = getopt_long(argc, argv, "nthV", options, NULL)) != -1) {
        switch (opt) {
        case 'n':
            no_init = 1;
            break;
        case 't':
        case OPT_XML:
        case OPT_DOT:
            if (export && export != opt) {
                fprintf(stderr, "%s: --topology, --xml and --dot exclude each other\n",
                        argv[0]);
                return EXIT_USAGE;
            }
            export = opt;
            break;
        case 'h':
            usage(stdout, argv[0]);
            return 0;
        case 'V':
            printf("weft-info (weft) %d.%d.%d\n", WEFT_VERSION_MAJOR, WEFT_VERSION_MINOR,
                   WEFT_VERSION_PATCH);
            return 0;
        default:
            usage(stderr, argv[0]);
            return EXIT_USAGE;
        }
    }
    if (optind < argc) {
        fprintf(stderr, "%s: unexpected argument '%s'\n", argv[0], argv[optind]);
        usage(stderr, argv[0]);
        return EXIT_USAGE;
    }
    /* The table says why each plugin was skipped; the same as log lines
     * would only be noise, unless asked for. */
    if (!getenv("WEFT_DEBUG"))
        setenv("WEFT_DEBUG", "NONE", 0);
    weft__log_init();

    rc = weft__topo_load(&topo);
    if (rc != WEFT_SUCCESS) {
        fprintf(stderr, "%s: %s\n", argv[0], weft_last_error());
        return 1;
    }
    if (export == 't') {
        weft__topo_print(topo, stdout, "");
        weft__topo_free(topo);
        return 0;
    }
    if (export) {
        rc = export == OPT_XML ? weft__topo_write_xml(topo, stdout)
                               : weft__topo_write_dot(topo, stdout);
        if (rc != WEFT_SUCCESS)
            fprintf(stderr, "%s: %s\n", argv[0], weft_last_error());
        weft__topo_free(topo);
        return rc == WEFT_SUCCESS ? 0 : 1;
    }
    set = calloc(1, sizeof(*set));
    if (!set) {
        fprintf(stderr, "%s: out of memory\n", argv[0]);
        weft__topo_free(topo);
        return 1;
    }
    printf("weft %d.%d.%d\n\n", WEFT_VERSION_MAJOR, WEFT_VERSION_MINOR, WEFT_VERSION_PATCH);
    print_build();
    printf("\n");
    info_core_init(&core);
    weft__plugin_log_capture(keep_said, NULL);
    rc = no_init ? weft__plugins_scan_topo(topo, set) : weft__plugins_load_topo(&core, topo, set);
    weft__plugin_log_capture(NULL, NULL);
    if (rc == WEFT_ERR_INVALID_ARG || rc == WEFT_ERR_NO_MEMORY) {
        fprintf(stderr, "%s: %s\n", argv[0], weft_last_error());
        weft__plugins_unload(set);
        free(set);
        free(said);
        weft__topo_free(topo);
        return 1;
    }
    weft__topo_print(topo, stdout, "");
    printf("\n");
    print_dirs(set);
    printf("\n");
    print_candidates(set, no_init);
    for (int i = 0; i < set->ncandidates; i++)
        usable += set->candidates[i].state == WEFT__PLUGIN_LOADED ||
                  set->candidates[i].state == WEFT__PLUGIN_USABLE;
    printf("\n");
    if (usable && no_init)
        printf("%d transport%s passed every check short of initialisation\n", usable,
               usable == 1 ? "" : "s");
    else if (usable)
        printf("%d usable transport%s\n", usable, usable == 1 ? "" : "s");
    else
        printf("weft_init would fail here: %s\n",
               rc == WEFT_ERR_PLUGIN ? weft_last_error() : "no usable transport");
    weft__plugins_unload(set);
    free(set);
    free(said);
    weft__topo_free(topo);
    return usable ? 0 : 1;
}
