/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * fuzz_topo_file.c: topology files, WEFT_TOPO_FILE: the input is written
 * to a file and loaded as WEFT_TOPO_FILE has it loaded
 * (weft__topo_load_from, topo/topo_load.c), then every view weft takes
 * of a topology is asked of it.
 *
 * hwloc itself crashes on some malformed files (hwloc 2.9: a cpuset wider
 * than its parent's). That is hwloc's to fix, and no property of weft:
 * each file is first loaded by hwloc alone in a child process, as
 * topo_load.c has hwloc load it, and a file that kills the child is
 * skipped, so that what the harness reports is weft's.
 *
 * Properties: a file hwloc refuses is WEFT_ERR_INVALID_ARG naming
 * WEFT_TOPO_FILE and the file; a topology that loads has its counts and
 * devices within topo.h's limits, strings ending within their fields, a
 * device count per kind that adds up, lookups that find what they list,
 * symmetric PCI distances, nearest NICs that are NICs, binding places
 * whose CPUs ascend, and a summary that counts its devices. (Its export
 * as XML is hwloc's alone, and a PU without an OS index makes that
 * 134 MB: not exercised here.)
 */
#include "config.h"

#include <errno.h>
#include <signal.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#ifdef WEFT_HAVE_HWLOC
#include <hwloc.h>
#endif

#include "core/base/error.h"
#include "topo/topo.h"
#include "tests/fuzz/fuzz.h"

static const char *scratch(char *path, size_t cap, const char *what)
{
    const char *dir = getenv("TMPDIR");

    snprintf(path, cap, "%s/weft-fuzz-%s-%d.xml", dir && *dir ? dir : "/tmp", what,
             (int)getpid());
    return path;
}

static int terminated(const char *s, size_t cap)
{
    return strnlen(s, cap) < cap;
}

static void check_devices(const weft__topo_t *t)
{
    int ngpus = weft__topo_count(t, WEFT__TOPO_GPU), nnics = weft__topo_count(t, WEFT__TOPO_NIC);

    FUZZ_REQUIRE(t->ndevs >= 0 && t->ndevs <= WEFT__TOPO_DEV_MAX, "%d devices", t->ndevs);
    FUZZ_REQUIRE(ngpus + nnics == t->ndevs, "%d GPUs and %d NICs of %d devices", ngpus, nnics,
                 t->ndevs);
    for (int i = 0; i < t->ndevs; i++) {
        const weft__topo_dev_t *d = &t->devs[i], *found;

        FUZZ_REQUIRE(d->kind == WEFT__TOPO_GPU || d->kind == WEFT__TOPO_NIC, "kind %d", d->kind);
        FUZZ_REQUIRE(terminated(d->name, sizeof(d->name)) && terminated(d->busid,
                     sizeof(d->busid)) && terminated(d->netdev, sizeof(d->netdev)),
                     "device %d: a string runs past its field", i);
        FUZZ_REQUIRE(d->npath >= 0 && d->npath <= WEFT__TOPO_PCI_DEPTH, "path of %d", d->npath);
        found = weft__topo_find(t, d->name);
        FUZZ_REQUIRE(found && !strcmp(found->name, d->name), "device '%s' not found by name",
                     d->name);
        for (int j = 0; j < t->ndevs; j++)
            FUZZ_REQUIRE(weft__topo_pci_distance(d, &t->devs[j]) ==
                         weft__topo_pci_distance(&t->devs[j], d), "distance %d-%d asymmetric",
                         i, j);
    }
    for (int i = 0; i < ngpus; i++) {
        const weft__topo_dev_t *g = weft__topo_dev(t, WEFT__TOPO_GPU, i), *n;
        weft__topo_pci_class_t c;

        FUZZ_REQUIRE(g && g->kind == WEFT__TOPO_GPU, "GPU %d of %d missing", i, ngpus);
        n = weft__topo_nearest_nic(t, g, &c);
        FUZZ_REQUIRE(nnics ? n && n->kind == WEFT__TOPO_NIC : !n, "nearest NIC of GPU %d", i);
        FUZZ_REQUIRE(weft__topo_pci_class_name(c) != NULL, "class %d has no name", c);
    }
    FUZZ_REQUIRE(!weft__topo_dev(t, WEFT__TOPO_GPU, ngpus) &&
                 !weft__topo_dev(t, WEFT__TOPO_NIC, nnics), "a device past the end");
}

static void check_places(const weft__topo_t *t)
{
    static const weft__topo_bind_level_t levels[] = {
        WEFT__TOPO_BIND_CORE, WEFT__TOPO_BIND_NUMA, WEFT__TOPO_BIND_PACKAGE
    };

    for (size_t l = 0; l < sizeof(levels) / sizeof(levels[0]); l++) {
        weft__topo_places_t *pl = NULL;
        weft_result_t rc = weft__topo_places(t, levels[l], NULL, 0, &pl);

        if (rc != WEFT_SUCCESS) {
            FUZZ_REQUIRE(rc == WEFT_ERR_UNSUPPORTED || rc == WEFT_ERR_NO_MEMORY,
                         "places at level %zu: %d", l, rc);
            continue;
        }
        FUZZ_REQUIRE(pl->nplaces >= 0, "%d places", pl->nplaces);
        for (int i = 0; i < pl->nplaces; i++) {
            const weft__topo_place_t *p = &pl->place[i];

            FUZZ_REQUIRE(p->ncpus > 0 && p->list && p->list[0], "place %d: %d CPUs '%s'", i,
                         p->ncpus, p->list ? p->list : "(null)");
            for (int k = 1; k < p->ncpus; k++)
                FUZZ_REQUIRE(p->cpus[k - 1] < p->cpus[k], "place %d: CPUs out of order", i);
        }
        weft__topo_places_free(pl);
    }
}

/* Every view of t, printed where nobody reads it; then the checks. */
static void check_topology(const weft__topo_t *t, FILE *sink)
{
    weft__topo_summary_t s;
    char why[256];

    FUZZ_REQUIRE(t->npackages >= 1 && t->nnuma >= 0 && t->ncores >= 0 && t->npus >= 0,
                 "counts %d %d %d %d", t->npackages, t->nnuma, t->ncores, t->npus);
    FUZZ_REQUIRE(terminated(t->source, sizeof(t->source)) &&
                 terminated(t->bind_cpus, sizeof(t->bind_cpus)), "a string runs past its field");
    check_devices(t);
    check_places(t);
    weft__topo_print(t, sink, "# ");
    weft__topo_write_dot(t, sink);
    weft__topo_summarize(t, "fuzz-host", &s);
    FUZZ_REQUIRE(s.ngpus == weft__topo_count(t, WEFT__TOPO_GPU) &&
                 s.nnics == weft__topo_count(t, WEFT__TOPO_NIC) && s.nrdma_active <= s.nnics,
                 "summary counts %u %u %u", s.ngpus, s.nnics, s.nrdma_active);
    FUZZ_REQUIRE(terminated(s.gpu, sizeof(s.gpu)) && terminated(s.nic, sizeof(s.nic)),
                 "a summary string runs past its field");
    weft__topo_unmet_needs(t, ~0ull, why, sizeof(why));
    FUZZ_REQUIRE(terminated(why, sizeof(why)), "unmet needs: text runs past its buffer");
    for (int i = 0; i < t->ndevs; i++)
        FUZZ_REQUIRE(weft__topo_nearness(t, t->devs[i].name) != WEFT__TOPO_NEAR_UNKNOWN,
                     "device '%s' of unknown nearness", t->devs[i].name);
}

/* 0 when hwloc alone survives loading path (with topo_load.c's
 * settings), -1 when it crashed. */
static int hwloc_survives(const char *path)
{
#ifdef WEFT_HAVE_HWLOC
    static const int deadly[] = { SIGSEGV, SIGBUS, SIGABRT, SIGILL, SIGFPE };
    const struct rlimit no_core = { 0, 0 };
    pid_t pid = fork();
    int status = 0;

    FUZZ_REQUIRE(pid >= 0, "fork failed");
    if (pid == 0) {
        hwloc_topology_t t;

        /* Die quietly: the sanitizer's and libFuzzer's handlers would
         * report the crash as this harness's, and keep its input. */
        for (size_t i = 0; i < sizeof(deadly) / sizeof(deadly[0]); i++)
            signal(deadly[i], SIG_DFL);
        setrlimit(RLIMIT_CORE, &no_core);
        if (hwloc_topology_init(&t) == 0) {
            hwloc_topology_set_io_types_filter(t, HWLOC_TYPE_FILTER_KEEP_IMPORTANT);
            if (hwloc_topology_set_xml(t, path) == 0)
                hwloc_topology_load(t);
            hwloc_topology_destroy(t);
        }
        _exit(0);
    }
    while (waitpid(pid, &status, 0) < 0)
        FUZZ_REQUIRE(errno == EINTR, "waitpid failed");
    return WIFSIGNALED(status) ? -1 : 0;
#else
    (void)path;
    return 0;
#endif
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static FILE *sink;
    char path[256], want[300];
    weft__topo_t *t = NULL;
    weft_result_t rc;
    FILE *f;

    if (!sink) {
#ifdef WEFT_HAVE_HWLOC
        /* hwloc unloads its XML component with the last topology, and a
         * leak in it would then be reported without a name to tell whose
         * it is: one topology kept for the process keeps it loaded. */
        static hwloc_topology_t keep;

        hwloc_topology_init(&keep);
#endif
        weft_fuzz_quiet();
        sink = fopen("/dev/null", "w");
        FUZZ_REQUIRE(sink != NULL, "cannot open /dev/null");
    }
    f = fopen(scratch(path, sizeof(path), "topo"), "wb");
    FUZZ_REQUIRE(f && fwrite(data, 1, size, f) == size && fclose(f) == 0, "cannot write %s",
                 path);
    if (hwloc_survives(path) != 0) {
        unlink(path);
        return 0;
    }
    rc = weft__topo_load_from(path, &t);
    if (rc != WEFT_SUCCESS) {
        snprintf(want, sizeof(want), "WEFT_TOPO_FILE=%s", path);
        FUZZ_REQUIRE(rc == WEFT_ERR_INVALID_ARG || rc == WEFT_ERR_UNSUPPORTED,
                     "refused with %d", rc);
        FUZZ_REQUIRE(strstr(weft__get_error(), want), "the refusal does not name %s: %s", want,
                     weft__get_error());
    } else {
        FUZZ_REQUIRE(t->known || !t->hwloc, "an hwloc topology not known");
        check_topology(t, sink);
        weft__topo_free(t);
    }
    unlink(path);
    return 0;
}
