/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * topo_bind.c: the places a launcher can bind processes to (topo.h): the
 * cores, NUMA nodes or packages of a loaded topology, each as the OS
 * numbers of its PUs, so that the launcher binds with sched_setaffinity
 * between fork and exec without touching hwloc there.
 */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#ifdef WEFT_HAVE_HWLOC
#include <hwloc.h>
#endif

#include "core/base/error.h"
#include "topo/topo.h"

const char *weft__topo_bind_level_name(weft__topo_bind_level_t level)
{
    switch (level) {
    case WEFT__TOPO_BIND_CORE:
        return "core";
    case WEFT__TOPO_BIND_NUMA:
        return "NUMA node";
    case WEFT__TOPO_BIND_PACKAGE:
        return "package";
    }
    return "unknown level";
}

void weft__topo_places_free(weft__topo_places_t *places)
{
    if (!places)
        return;
    for (int i = 0; i < places->nplaces; i++) {
        free(places->place[i].cpus);
        free(places->place[i].list);
    }
    free(places->place);
    free(places);
}

#ifdef WEFT_HAVE_HWLOC

static hwloc_obj_type_t level_type(hwloc_topology_t t, weft__topo_bind_level_t level)
{
    switch (level) {
    case WEFT__TOPO_BIND_NUMA:
        return HWLOC_OBJ_NUMANODE;
    case WEFT__TOPO_BIND_PACKAGE:
        /* hwloc shows no package where the platform does not tell (some
         * ARM and virtual machines): the machine is then the one package. */
        return hwloc_get_nbobjs_by_type(t, HWLOC_OBJ_PACKAGE) > 0 ? HWLOC_OBJ_PACKAGE
                                                                 : HWLOC_OBJ_MACHINE;
    case WEFT__TOPO_BIND_CORE:
        break;
    }
    /* Some virtual machines and odd platforms show PUs and no cores; a PU
     * is then the closest thing to a core. */
    return hwloc_get_nbobjs_by_type(t, HWLOC_OBJ_CORE) > 0 ? HWLOC_OBJ_CORE : HWLOC_OBJ_PU;
}

/* Fills p from set (not empty); returns -1 when out of memory. */
static int fill_place(weft__topo_place_t *p, hwloc_const_bitmap_t set)
{
    int cpu, n = 0;

    p->ncpus = hwloc_bitmap_weight(set);
    p->cpus = calloc((size_t)p->ncpus, sizeof(*p->cpus));
    if (!p->cpus || hwloc_bitmap_list_asprintf(&p->list, set) < 0)
        return -1;
    hwloc_bitmap_foreach_begin(cpu, set)
        p->cpus[n++] = cpu;
    hwloc_bitmap_foreach_end();
    return 0;
}

static weft_result_t collect(hwloc_topology_t t, weft__topo_bind_level_t level,
                             hwloc_const_bitmap_t allowed, weft__topo_places_t *places)
{
    hwloc_obj_type_t type = level_type(t, level);
    int nobjs = hwloc_get_nbobjs_by_type(t, type);
    hwloc_bitmap_t set = hwloc_bitmap_alloc();
    weft_result_t rc = WEFT_SUCCESS;

    places->place = calloc(nobjs > 0 ? (size_t)nobjs : 1, sizeof(*places->place));
    if (!set || !places->place) {
        rc = weft__error(WEFT_ERR_NO_MEMORY, "cannot allocate %d binding places", nobjs);
        goto out_free_set;
    }
    for (int i = 0; i < nobjs; i++) {
        hwloc_obj_t obj = hwloc_get_obj_by_type(t, type, (unsigned)i);
        weft__topo_place_t *p = &places->place[places->nplaces];

        /* A NUMA node with memory and no CPUs (CXL, HBM-only) is nowhere
         * to run. */
        if (!obj || !obj->cpuset)
            continue;
        hwloc_bitmap_copy(set, obj->cpuset);
        if (allowed)
            hwloc_bitmap_and(set, set, allowed);
        if (hwloc_bitmap_iszero(set))
            continue;
        p->index = (int)obj->logical_index;
        p->os_index = type == HWLOC_OBJ_NUMANODE ? (int)obj->os_index : (int)obj->logical_index;
        places->nplaces++;
        if (fill_place(p, set) != 0) {
            rc = weft__error(WEFT_ERR_NO_MEMORY, "cannot allocate the CPUs of a %s",
                             weft__topo_bind_level_name(level));
            goto out_free_set;
        }
    }

out_free_set:
    hwloc_bitmap_free(set);
    return rc;
}

weft_result_t weft__topo_places(const weft__topo_t *topo, weft__topo_bind_level_t level,
                                const int *allowed, int nallowed, weft__topo_places_t **out)
{
    weft__topo_places_t *places;
    hwloc_bitmap_t allowed_set = NULL;
    weft_result_t rc;

    if (!topo || !out)
        return weft__error(WEFT_ERR_INVALID_ARG, "binding places: %s is NULL",
                           !topo ? "topo" : "out");
    if (level != WEFT__TOPO_BIND_CORE && level != WEFT__TOPO_BIND_NUMA &&
        level != WEFT__TOPO_BIND_PACKAGE)
        return weft__error(WEFT_ERR_INVALID_ARG, "binding places: level %d is not a level",
                           (int)level);
    if (nallowed < 0 || (nallowed > 0 && !allowed))
        return weft__error(WEFT_ERR_INVALID_ARG, "binding places: allowed has %d CPUs%s",
                           nallowed, nallowed > 0 ? " but is NULL" : "");
    if (!topo->known || !topo->hwloc)
        return weft__error(WEFT_ERR_UNSUPPORTED, "the topology is %s: no cores or NUMA "
                           "nodes to bind to", topo->source);
    places = calloc(1, sizeof(*places));
    if (!places)
        return weft__error(WEFT_ERR_NO_MEMORY, "cannot allocate the binding places");
    places->level = level;
    if (allowed) {
        allowed_set = hwloc_bitmap_alloc();
        if (!allowed_set) {
            rc = weft__error(WEFT_ERR_NO_MEMORY, "cannot allocate a CPU set");
            goto err_free_places;
        }
        for (int i = 0; i < nallowed; i++)
            if (allowed[i] >= 0)
                hwloc_bitmap_set(allowed_set, (unsigned)allowed[i]);
    }
    rc = collect((hwloc_topology_t)topo->hwloc, level, allowed_set, places);
    hwloc_bitmap_free(allowed_set);
    if (rc != WEFT_SUCCESS)
        goto err_free_places;
    *out = places;
    return WEFT_SUCCESS;

err_free_places:
    weft__topo_places_free(places);
    return rc;
}

#else /* !WEFT_HAVE_HWLOC */

weft_result_t weft__topo_places(const weft__topo_t *topo, weft__topo_bind_level_t level,
                                const int *allowed, int nallowed, weft__topo_places_t **out)
{
    (void)level;
    (void)allowed;
    (void)nallowed;
    if (!topo || !out)
        return weft__error(WEFT_ERR_INVALID_ARG, "binding places: %s is NULL",
                           !topo ? "topo" : "out");
    return weft__error(WEFT_ERR_UNSUPPORTED, "weft was built without hwloc: no cores or "
                       "NUMA nodes to bind to");
}

#endif
