/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * weftrun_bind.c: which CPUs each rank of this node may run on (--bind-to).
 *
 * The places come from topo/ (the one user of hwloc), cut down to the CPUs
 * weftrun itself may use, so that weftrun started inside a cpuset, a Slurm
 * allocation or taskset binds within it. Cores go to ranks round robin in
 * hwloc's logical order, as mpirun maps by core: neighbouring ranks share
 * a package and its caches. NUMA nodes and packages go in blocks, so
 * that neighbouring ranks (a ring's peers) share the node's memory. The
 * default gives each rank a share of the cores of its own (Intel MPI's
 * automatic domains): no two ranks share a core, as with core, yet a
 * rank's threads (OpenMP, data loaders) keep room to run.
 */
#include "config.h"

#include <errno.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/base/error.h"
#include "topo/topo.h"
#include "tools/weftrun.h"

/* Beyond CPU_SETSIZE (1024) CPUs the mask must grow; the kernel says
 * EINVAL while it is smaller than its own. */
#define MAX_CPUS (1 << 20)

/* The CPUs weftrun may run on, ascending; returns their count, or -1
 * (message on stderr). */
static int own_cpus(int **out)
{
    for (int ncpus = CPU_SETSIZE; ncpus <= MAX_CPUS; ncpus *= 2) {
        size_t size = CPU_ALLOC_SIZE(ncpus);
        cpu_set_t *set = CPU_ALLOC(ncpus);
        int n = 0, *cpus;

        if (!set)
            goto err_oom;
        if (sched_getaffinity(0, size, set) != 0) {
            int err = errno;

            CPU_FREE(set);
            if (err == EINVAL)
                continue;
            fprintf(stderr, "weftrun: sched_getaffinity: %s\n", strerror(err));
            return -1;
        }
        cpus = calloc((size_t)CPU_COUNT_S(size, set) + 1, sizeof(*cpus));
        if (!cpus) {
            CPU_FREE(set);
            goto err_oom;
        }
        for (int c = 0; c < ncpus; c++)
            if (CPU_ISSET_S(c, size, set))
                cpus[n++] = c;
        CPU_FREE(set);
        *out = cpus;
        return n;
    }
    fprintf(stderr, "weftrun: sched_getaffinity: more than %d CPUs\n", MAX_CPUS);
    return -1;

err_oom:
    fprintf(stderr, "weftrun: out of memory for a CPU set\n");
    return -1;
}

/* "0-3,8" from ascending CPU numbers; NULL when out of memory. */
static char *cpu_list(const int *cpus, int n)
{
    /* Each number has at most 7 digits (MAX_CPUS) plus a separator. */
    char *s = malloc((size_t)n * 8 + 1), *p = s;

    if (!s)
        return NULL;
    *p = '\0';
    for (int i = 0; i < n;) {
        int j = i;

        while (j + 1 < n && cpus[j + 1] == cpus[j] + 1)
            j++;
        p += sprintf(p, i == 0 ? "%d" : ",%d", cpus[i]);
        if (j > i)
            p += sprintf(p, "-%d", cpus[j]);
        i = j + 1;
    }
    return s;
}

static weft__topo_bind_level_t policy_level(enum weftrun_bind_policy policy)
{
    switch (policy) {
    case WEFTRUN_BIND_NUMA:
        return WEFT__TOPO_BIND_NUMA;
    case WEFTRUN_BIND_SOCKET:
        return WEFT__TOPO_BIND_PACKAGE;
    default:
        return WEFT__TOPO_BIND_CORE;
    }
}

/* The places of a level within weftrun's CPUs. Returns 0, with *out NULL
 * when the topology offers none (said on stderr unless quiet), or -1 when
 * out of memory. */
static int load_places(weft__topo_t *topo, weft__topo_bind_level_t level, const int *cpus,
                       int ncpus, int quiet, weft__topo_places_t **out)
{
    weft_result_t rc = weft__topo_places(topo, level, cpus, ncpus, out);

    if (rc == WEFT_ERR_NO_MEMORY) {
        fprintf(stderr, "weftrun: %s\n", weft__get_error());
        return -1;
    }
    if (rc != WEFT_SUCCESS) {
        *out = NULL;
        if (!quiet)
            fprintf(stderr, "weftrun: cannot bind to a %s (%s); the ranks run unbound\n",
                    weft__topo_bind_level_name(level), weft__get_error());
        return 0;
    }
    if ((*out)->nplaces == 0) {
        if (!quiet)
            fprintf(stderr, "weftrun: no %s of the topology (%s) holds a CPU weftrun may "
                            "use; the ranks run unbound\n",
                    weft__topo_bind_level_name(level), topo->source);
        weft__topo_places_free(*out);
        *out = NULL;
    }
    return 0;
}

/* Bytes of a set holding every CPU of the places; their CPUs are among
 * weftrun's own, all below MAX_CPUS. */
static size_t set_cpus(const weft__topo_places_t *tp)
{
    size_t ncpus = 1;

    for (int i = 0; i < tp->nplaces; i++)
        for (int c = 0; c < tp->place[i].ncpus; c++)
            if ((size_t)tp->place[i].cpus[c] >= ncpus)
                ncpus = (size_t)tp->place[i].cpus[c] + 1;
    return ncpus;
}

/* Place k of the plan: the topology's places first to last together (a
 * share of cores, or one of them). Returns -1 when out of memory. */
static int make_place(struct weftrun_bind_plan *plan, int k, const weft__topo_places_t *tp,
                      int first, int last, size_t ncpus)
{
    struct weftrun_bind_place *p = &plan->places[k];
    const char *what = weft__topo_bind_level_name(tp->level);
    int *cpus, n = 0;

    p->set = CPU_ALLOC(ncpus);
    cpus = calloc(ncpus, sizeof(*cpus));
    if (!p->set || !cpus)
        goto err_free;
    CPU_ZERO_S(plan->setsize, p->set);
    for (int i = first; i <= last; i++)
        for (int c = 0; c < tp->place[i].ncpus; c++)
            CPU_SET_S(tp->place[i].cpus[c], plan->setsize, p->set);
    /* In CPU order: a core's hyperthreads may be numbered far apart. */
    for (size_t c = 0; c < ncpus; c++)
        if (CPU_ISSET_S(c, plan->setsize, p->set))
            cpus[n++] = (int)c;
    p->list = cpu_list(cpus, n);
    free(cpus);
    if (!p->list)
        return -1;
    if (first == last)
        snprintf(p->desc, sizeof(p->desc), "%s %d", what, tp->place[first].os_index);
    else
        snprintf(p->desc, sizeof(p->desc), "%ss %d-%d", what, tp->place[first].os_index,
                 tp->place[last].os_index);
    return 0;

err_free:
    free(cpus);
    return -1;
}

/* The plan's places and which rank goes where. By policy:
 *   core: a core each, round robin;
 *   numa, socket: rank i of n to place i * nplaces / n, in blocks;
 *   default: with no more ranks than cores, rank i gets cores
 *     i * ncores / n up to (i + 1) * ncores / n - 1, its own share. */
static int assign(struct weftrun_bind_plan *plan, const weft__topo_places_t *tp,
                  enum weftrun_bind_policy policy)
{
    size_t ncpus = set_cpus(tp);
    int shares = policy == WEFTRUN_BIND_DEFAULT;
    int nplaces = shares ? plan->nproc : tp->nplaces;

    if (ncpus > MAX_CPUS || nplaces <= 0)
        return -1;
    plan->setsize = CPU_ALLOC_SIZE(ncpus);
    plan->places = calloc((size_t)nplaces, sizeof(*plan->places));
    if (!plan->places)
        return -1;
    plan->nplaces = nplaces;
    for (int k = 0; k < nplaces; k++) {
        int first = k, last = k;

        if (shares) {
            first = (int)((long long)k * tp->nplaces / plan->nproc);
            last = (int)((long long)(k + 1) * tp->nplaces / plan->nproc) - 1;
        }
        if (make_place(plan, k, tp, first, last, ncpus) != 0)
            return -1;
    }
    for (int i = 0; i < plan->nproc; i++) {
        if (shares)
            plan->rank_place[i] = i;
        else if (policy == WEFTRUN_BIND_CORE)
            plan->rank_place[i] = i % nplaces;
        else
            plan->rank_place[i] = (int)((long long)i * nplaces / plan->nproc);
    }
    return 0;
}

int weftrun_bind_plan(struct weftrun_bind_plan *plan, enum weftrun_bind_policy policy,
                      int nproc)
{
    int quiet = policy == WEFTRUN_BIND_DEFAULT;
    weft__topo_places_t *tp = NULL;
    weft__topo_t *topo = NULL;
    int *cpus = NULL, ncpus;

    memset(plan, 0, sizeof(*plan));
    plan->nproc = nproc;
    plan->required = !quiet && policy != WEFTRUN_BIND_NONE;
    plan->rank_place = malloc((size_t)nproc * sizeof(*plan->rank_place));
    if (!plan->rank_place)
        goto err_oom;
    for (int i = 0; i < nproc; i++)
        plan->rank_place[i] = -1;
    ncpus = own_cpus(&cpus);
    if (ncpus < 0)
        goto err;
    plan->inherited = cpu_list(cpus, ncpus);
    if (!plan->inherited)
        goto err_oom;
    if (policy == WEFTRUN_BIND_NONE)
        goto out;

    if (weft__topo_load(&topo) != WEFT_SUCCESS) {
        if (!quiet)
            fprintf(stderr, "weftrun: cannot bind: %s; the ranks run unbound\n",
                    weft__get_error());
        plan->required = 0;
        goto out;
    }
    if (load_places(topo, policy_level(policy), cpus, ncpus, quiet, &tp) != 0)
        goto err;
    if (!tp) {
        plan->required = 0;
        goto out;
    }
    /* More ranks than cores: a rank pinned to a share could only wait for
     * another on its core, so the default leaves the scheduler free. */
    if (quiet && nproc > tp->nplaces)
        goto out;
    if (policy == WEFTRUN_BIND_CORE && nproc > tp->nplaces)
        fprintf(stderr, "weftrun: %d ranks on %d core%s: --bind-to core puts several ranks "
                        "on one core, round robin\n",
                nproc, tp->nplaces, tp->nplaces == 1 ? "" : "s");
    if (assign(plan, tp, policy) != 0)
        goto err_oom;

out:
    weft__topo_places_free(tp);
    weft__topo_free(topo);
    free(cpus);
    return 0;

err_oom:
    fprintf(stderr, "weftrun: out of memory for the binding of %d ranks\n", nproc);
err:
    weft__topo_places_free(tp);
    weft__topo_free(topo);
    free(cpus);
    weftrun_bind_fini(plan);
    return -1;
}

const cpu_set_t *weftrun_bind_set(const struct weftrun_bind_plan *plan, int local_rank)
{
    int p = plan->rank_place ? plan->rank_place[local_rank] : -1;

    return p < 0 ? NULL : plan->places[p].set;
}

void weftrun_bind_report(const struct weftrun_bind_plan *plan, int rank, int local_rank)
{
    int p = plan->rank_place ? plan->rank_place[local_rank] : -1;

    if (p < 0)
        fprintf(stderr, "weftrun: rank %d not bound: cpus %s\n", rank, plan->inherited);
    else
        fprintf(stderr, "weftrun: rank %d bound to %s: cpus %s\n", rank, plan->places[p].desc,
                plan->places[p].list);
}

void weftrun_bind_fini(struct weftrun_bind_plan *plan)
{
    for (int i = 0; plan->places && i < plan->nplaces; i++) {
        if (plan->places[i].set)
            CPU_FREE(plan->places[i].set);
        free(plan->places[i].list);
    }
    free(plan->places);
    free(plan->rank_place);
    free(plan->inherited);
    memset(plan, 0, sizeof(*plan));
}
