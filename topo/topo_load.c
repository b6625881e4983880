/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * topo_load.c: builds weft's model of the machine (topo.h) from hwloc, or
 * the flat view when weft was built without it.
 */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#ifdef WEFT_HAVE_HWLOC
#include <hwloc.h>
#endif

#include "core/base/error.h"
#include "core/base/log.h"
#include "topo/topo.h"

#define PCI_VENDOR_NVIDIA 0x10de
/* OpenFabrics port state ACTIVE, as /sys/class/infiniband/<dev>/ports/<n>/state
 * numbers it and hwloc copies it into Port<n>State. */
#define IB_PORT_ACTIVE 4

static void flat_counts(weft__topo_t *topo)
{
    long n = sysconf(_SC_NPROCESSORS_ONLN);

    topo->npus = n > 0 ? (int)n : 1;
    topo->ncores = topo->npus;
    topo->npackages = 1;
    topo->nnuma = 1;
    topo->numa_os[0] = 0;
    topo->numa_package[0] = 0;
    topo->bind_numa = -1;
}

#ifdef WEFT_HAVE_HWLOC

static int osdev_is(hwloc_obj_t os, hwloc_obj_osdev_type_t type, const char *subtype)
{
    return os->attr->osdev.type == type &&
           (!subtype || (os->subtype && !strcmp(os->subtype, subtype)));
}

/* The first OS device below pci of a type (and subtype, when given). */
static hwloc_obj_t find_osdev(hwloc_obj_t pci, hwloc_obj_osdev_type_t type, const char *subtype)
{
    for (hwloc_obj_t os = pci->io_first_child; os; os = os->next_sibling)
        if (os->type == HWLOC_OBJ_OS_DEVICE && osdev_is(os, type, subtype))
            return os;
    return NULL;
}

static int pci_is_gpu(hwloc_obj_t pci)
{
    unsigned cls = pci->attr->pcidev.class_id;

    /* Display (0x0300) and 3D (0x0302) controllers of NVIDIA, or whatever
     * the CUDA or NVML backends of hwloc claim. */
    return ((cls == 0x0300 || cls == 0x0302) && pci->attr->pcidev.vendor_id == PCI_VENDOR_NVIDIA) ||
           find_osdev(pci, HWLOC_OBJ_OSDEV_COPROC, "CUDA") ||
           find_osdev(pci, HWLOC_OBJ_OSDEV_GPU, "NVML");
}

static int pci_is_nic(hwloc_obj_t pci)
{
    /* PCI base class 0x02 is "network controller" (Ethernet 0x0200,
     * InfiniBand 0x0207); an OpenFabrics or network OS device says the same
     * of devices with an odd class. */
    return (pci->attr->pcidev.class_id >> 8) == 0x02 ||
           find_osdev(pci, HWLOC_OBJ_OSDEV_OPENFABRICS, NULL) ||
           find_osdev(pci, HWLOC_OBJ_OSDEV_NETWORK, NULL);
}

/* The one NUMA node (OS index) of a nodeset, -1 for none or several. */
static int single_node(hwloc_const_nodeset_t set)
{
    if (!set || hwloc_bitmap_weight(set) != 1)
        return -1;
    return hwloc_bitmap_first(set);
}

static void locality(hwloc_topology_t t, hwloc_obj_t obj, weft__topo_dev_t *d)
{
    hwloc_obj_t cpu = hwloc_get_non_io_ancestor_obj(t, obj);
    hwloc_obj_t pkg = NULL;

    d->numa = cpu ? single_node(cpu->nodeset) : -1;
    if (cpu)
        pkg = cpu->type == HWLOC_OBJ_PACKAGE ? cpu :
              hwloc_get_ancestor_obj_by_type(t, HWLOC_OBJ_PACKAGE, cpu);
    d->package = pkg ? (int)pkg->logical_index : -1;
}

static void pci_path(hwloc_obj_t obj, weft__topo_dev_t *d)
{
    for (hwloc_obj_t b = obj->parent; b && b->type == HWLOC_OBJ_BRIDGE; b = b->parent) {
        if (d->npath == WEFT__TOPO_PCI_DEPTH) {
            /* Deeper than we remember: the nearest bridges matter most,
             * but the root is what tells root complexes apart. */
            d->host_bridge = 0;
            break;
        }
        d->path[d->npath++] = b->gp_index;
        d->host_bridge = b->attr->bridge.upstream_type == HWLOC_OBJ_BRIDGE_HOST;
    }
}

/* "Port<n>State", hwloc's name for an OpenFabrics port's state. */
static int is_port_state(const char *name)
{
    size_t len = strlen(name);

    return len > strlen("Port") + strlen("State") && !strncmp(name, "Port", 4) &&
           !strcmp(name + len - strlen("State"), "State");
}

static void nic_ports(hwloc_obj_t ofa, weft__topo_dev_t *d)
{
    d->ports = 0;
    d->active_ports = 0;
    for (unsigned i = 0; i < ofa->infos_count; i++) {
        if (!is_port_state(ofa->infos[i].name))
            continue;
        d->ports++;
        d->active_ports += atoi(ofa->infos[i].value) == IB_PORT_ACTIVE;
    }
    /* No port information at all (old XML, no permission): unknown, not 0. */
    if (d->ports == 0)
        d->active_ports = -1;
}

static void add_device(weft__topo_t *topo, hwloc_topology_t t, hwloc_obj_t pci,
                       weft__topo_dev_kind_t kind)
{
    weft__topo_dev_t *d;
    hwloc_obj_t os;
    int nth = weft__topo_count(topo, kind);

    if (topo->ndevs == WEFT__TOPO_DEV_MAX) {
        WEFT_WARN(TOPO, "more than %d GPUs and NICs; PCI %04x:%02x:%02x.%x is ignored",
                  WEFT__TOPO_DEV_MAX, pci->attr->pcidev.domain, pci->attr->pcidev.bus,
                  pci->attr->pcidev.dev, pci->attr->pcidev.func);
        return;
    }
    d = &topo->devs[topo->ndevs++];
    memset(d, 0, sizeof(*d));
    d->kind = kind;
    d->vendor = pci->attr->pcidev.vendor_id;
    d->device = pci->attr->pcidev.device_id;
    d->pci_class = pci->attr->pcidev.class_id;
    snprintf(d->busid, sizeof(d->busid), "%04x:%02x:%02x.%x", pci->attr->pcidev.domain & 0xffffu,
             pci->attr->pcidev.bus, pci->attr->pcidev.dev, pci->attr->pcidev.func & 0xfu);
    locality(t, pci, d);
    pci_path(pci, d);
    if (kind == WEFT__TOPO_GPU) {
        os = find_osdev(pci, HWLOC_OBJ_OSDEV_COPROC, "CUDA");
        if (!os)
            os = find_osdev(pci, HWLOC_OBJ_OSDEV_GPU, NULL);
        d->ports = d->active_ports = -1;
    } else {
        hwloc_obj_t net = find_osdev(pci, HWLOC_OBJ_OSDEV_NETWORK, NULL);

        os = find_osdev(pci, HWLOC_OBJ_OSDEV_OPENFABRICS, NULL);
        d->rdma = os != NULL;
        if (os)
            nic_ports(os, d);
        else
            d->ports = d->active_ports = -1;
        if (net && net->name)
            snprintf(d->netdev, sizeof(d->netdev), "%s", net->name);
        if (!os)
            os = net;
    }
    if (os && os->name)
        snprintf(d->name, sizeof(d->name), "%s", os->name);
    else
        snprintf(d->name, sizeof(d->name), "%s%d", kind == WEFT__TOPO_GPU ? "gpu" : "nic", nth);
}

static void count_caches(weft__topo_t *topo, hwloc_topology_t t)
{
    static const struct {
        hwloc_obj_type_t type;
        int level;
    } levels[] = {
        { HWLOC_OBJ_L5CACHE, 5 }, { HWLOC_OBJ_L4CACHE, 4 }, { HWLOC_OBJ_L3CACHE, 3 },
        { HWLOC_OBJ_L2CACHE, 2 }, { HWLOC_OBJ_L1CACHE, 1 },
    };

    for (size_t i = 0; i < sizeof(levels) / sizeof(levels[0]); i++) {
        int n = hwloc_get_nbobjs_by_type(t, levels[i].type);
        hwloc_obj_t c;

        if (n <= 0)
            continue;
        c = hwloc_get_obj_by_type(t, levels[i].type, 0);
        topo->nllc = n;
        topo->llc_level = levels[i].level;
        topo->llc_size = c ? c->attr->cache.size : 0;
        return;
    }
}

static void read_binding(weft__topo_t *topo, hwloc_topology_t t)
{
    hwloc_bitmap_t cpus = hwloc_bitmap_alloc();
    hwloc_bitmap_t nodes = hwloc_bitmap_alloc();

    topo->bind_numa = -1;
    /* A topology read from a file describes another machine, or this one
     * at another time: this process's binding means nothing in it. */
    if (!cpus || !nodes || !hwloc_topology_is_thissystem(t))
        goto out_free;
    if (hwloc_get_cpubind(t, cpus, HWLOC_CPUBIND_PROCESS) != 0) {
        WEFT_INFO(TOPO, "cannot read this process's CPU binding: %m");
        goto out_free;
    }
    hwloc_bitmap_list_snprintf(topo->bind_cpus, sizeof(topo->bind_cpus), cpus);
    hwloc_cpuset_to_nodeset(t, cpus, nodes);
    topo->bind_numa = single_node(nodes);

out_free:
    hwloc_bitmap_free(cpus);
    hwloc_bitmap_free(nodes);
}

static void fill_from_hwloc(weft__topo_t *topo, hwloc_topology_t t)
{
    hwloc_obj_t obj = NULL;
    int n = 0;

    topo->known = 1;
    topo->npackages = hwloc_get_nbobjs_by_type(t, HWLOC_OBJ_PACKAGE);
    topo->nnuma = hwloc_get_nbobjs_by_type(t, HWLOC_OBJ_NUMANODE);
    topo->ncores = hwloc_get_nbobjs_by_type(t, HWLOC_OBJ_CORE);
    topo->npus = hwloc_get_nbobjs_by_type(t, HWLOC_OBJ_PU);
    if (topo->npackages < 1)
        topo->npackages = 1;
    while ((obj = hwloc_get_next_obj_by_type(t, HWLOC_OBJ_NUMANODE, obj)) &&
           n < WEFT__TOPO_NUMA_MAX) {
        hwloc_obj_t pkg = hwloc_get_ancestor_obj_by_type(t, HWLOC_OBJ_PACKAGE, obj);

        topo->numa_os[n] = (int)obj->os_index;
        topo->numa_package[n] = pkg ? (int)pkg->logical_index : -1;
        n++;
    }
    count_caches(topo, t);
    read_binding(topo, t);
    obj = NULL;
    while ((obj = hwloc_get_next_pcidev(t, obj))) {
        if (pci_is_gpu(obj))
            add_device(topo, t, obj, WEFT__TOPO_GPU);
        else if (pci_is_nic(obj))
            add_device(topo, t, obj, WEFT__TOPO_NIC);
    }
}

static weft_result_t load_hwloc(weft__topo_t *topo, const char *path)
{
    hwloc_topology_t t;

    if (hwloc_topology_init(&t) != 0)
        return weft__error(WEFT_ERR_NO_MEMORY, "hwloc_topology_init failed: %m");
    /* Bridges, PCI devices and OS devices that lead to something useful
     * (GPUs, NICs, disks); the rest of the PCI tree is noise to weft. */
    hwloc_topology_set_io_types_filter(t, HWLOC_TYPE_FILTER_KEEP_IMPORTANT);
    if (path && hwloc_topology_set_xml(t, path) != 0) {
        hwloc_topology_destroy(t);
        return weft__error(WEFT_ERR_INVALID_ARG, "WEFT_TOPO_FILE=%s: hwloc cannot use it as "
                           "an XML topology: %m", path);
    }
    if (hwloc_topology_load(t) != 0) {
        int err = errno;

        hwloc_topology_destroy(t);
        if (path)
            return weft__error(WEFT_ERR_INVALID_ARG, "WEFT_TOPO_FILE=%s: hwloc cannot load it "
                               "(not hwloc XML? check with lstopo --if xml -i %s): %s", path,
                               path, strerror(err));
        WEFT_WARN(TOPO, "hwloc cannot probe this host (%s); topology unknown", strerror(err));
        flat_counts(topo);
        snprintf(topo->source, sizeof(topo->source), "flat (hwloc failed to probe)");
        return WEFT_SUCCESS;
    }
    topo->hwloc = t;
    fill_from_hwloc(topo, t);
    return WEFT_SUCCESS;
}

#else /* !WEFT_HAVE_HWLOC */

static weft_result_t load_hwloc(weft__topo_t *topo, const char *path)
{
    if (path)
        return weft__error(WEFT_ERR_UNSUPPORTED, "WEFT_TOPO_FILE=%s: this weft was built "
                           "without hwloc and cannot read topology files", path);
    WEFT_INFO(TOPO, "built without hwloc: flat topology, no GPU or NIC locality");
    flat_counts(topo);
    snprintf(topo->source, sizeof(topo->source), "flat (built without hwloc)");
    return WEFT_SUCCESS;
}

#endif

weft_result_t weft__topo_load_from(const char *path, weft__topo_t **out)
{
    weft__topo_t *topo;
    weft_result_t rc;

    if (!out)
        return weft__error(WEFT_ERR_INVALID_ARG, "topology load: out is NULL");
    if (path && !*path)
        return weft__error(WEFT_ERR_INVALID_ARG, "WEFT_TOPO_FILE is set but empty");
    topo = calloc(1, sizeof(*topo));
    if (!topo)
        return weft__error(WEFT_ERR_NO_MEMORY, "cannot allocate the topology");
    topo->bind_numa = -1;
    if (path)
        snprintf(topo->source, sizeof(topo->source), "file %s", path);
    else
        snprintf(topo->source, sizeof(topo->source), "this host");
    rc = load_hwloc(topo, path);
    if (rc != WEFT_SUCCESS) {
        free(topo);
        return rc;
    }
    WEFT_TRACE(TOPO, "topology from %s: %d packages, %d NUMA nodes, %d cores, %d GPUs, %d NICs",
              topo->source, topo->npackages, topo->nnuma, topo->ncores,
              weft__topo_count(topo, WEFT__TOPO_GPU), weft__topo_count(topo, WEFT__TOPO_NIC));
    *out = topo;
    return WEFT_SUCCESS;
}

weft_result_t weft__topo_load(weft__topo_t **out)
{
    return weft__topo_load_from(getenv("WEFT_TOPO_FILE"), out);
}

void weft__topo_free(weft__topo_t *topo)
{
    if (!topo)
        return;
#ifdef WEFT_HAVE_HWLOC
    if (topo->hwloc)
        hwloc_topology_destroy((hwloc_topology_t)topo->hwloc);
#endif
    free(topo);
}
