/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * topo_print.c: the topology for people: a text summary (logs, weft-info),
 * hwloc XML and a graphviz graph (weft-info --xml, --dot).
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifdef WEFT_HAVE_HWLOC
#include <hwloc.h>
#endif

#include "core/base/error.h"
#include "topo/topo.h"

static void print_dev(const weft__topo_dev_t *d, FILE *out, const char *prefix)
{
    fprintf(out, "%s  %-4s %-10s %-12s NUMA %s", prefix, d->kind == WEFT__TOPO_GPU ? "GPU" : "NIC",
            d->name, d->busid[0] ? d->busid : "-", d->numa >= 0 ? "" : "?");
    if (d->numa >= 0)
        fprintf(out, "%d", d->numa);
    if (d->kind == WEFT__TOPO_NIC) {
        fprintf(out, ", %s", d->rdma ? "RDMA" : "Ethernet");
        if (d->rdma && d->ports > 0)
            fprintf(out, ", %d of %d ports active", d->active_ports, d->ports);
        else if (d->rdma)
            fprintf(out, ", port state unknown");
        if (d->netdev[0] && strcmp(d->netdev, d->name))
            fprintf(out, ", interface %s", d->netdev);
    }
    fprintf(out, "\n");
}

void weft__topo_print(const weft__topo_t *topo, FILE *out, const char *prefix)
{
    int ngpus = weft__topo_count(topo, WEFT__TOPO_GPU);

    fprintf(out, "%stopology from %s%s\n", prefix, topo->source,
            topo->known ? "" : ": no locality information");
    fprintf(out, "%s  %d package%s, %d NUMA node%s, %d cores, %d PUs", prefix, topo->npackages,
            topo->npackages == 1 ? "" : "s", topo->nnuma, topo->nnuma == 1 ? "" : "s",
            topo->ncores, topo->npus);
    if (topo->llc_level)
        fprintf(out, ", %d L%d cache%s of %llu KiB", topo->nllc, topo->llc_level,
                topo->nllc == 1 ? "" : "s", (unsigned long long)(topo->llc_size >> 10));
    fprintf(out, "\n");
    if (topo->bind_numa >= 0)
        fprintf(out, "%s  bound to PUs %s, NUMA node %d\n", prefix, topo->bind_cpus,
                topo->bind_numa);
    else if (topo->bind_cpus[0])
        fprintf(out, "%s  bound to PUs %s, more than one NUMA node\n", prefix, topo->bind_cpus);
    else
        fprintf(out, "%s  binding unknown\n", prefix);
    if (!topo->known) {
        fprintf(out, "%s  GPUs and NICs not known\n", prefix);
        return;
    }
    fprintf(out, "%s  %d GPU%s, %d NIC%s\n", prefix, ngpus, ngpus == 1 ? "" : "s",
            weft__topo_count(topo, WEFT__TOPO_NIC),
            weft__topo_count(topo, WEFT__TOPO_NIC) == 1 ? "" : "s");
    for (int i = 0; i < topo->ndevs; i++)
        print_dev(&topo->devs[i], out, prefix);
    for (int i = 0; i < ngpus; i++) {
        const weft__topo_dev_t *g = weft__topo_dev(topo, WEFT__TOPO_GPU, i);
        weft__topo_pci_class_t c;
        const weft__topo_dev_t *n = weft__topo_nearest_nic(topo, g, &c);

        if (n)
            fprintf(out, "%s  nearest NIC of %s: %s (%s)\n", prefix, g->name, n->name,
                    weft__topo_pci_class_name(c));
        else
            fprintf(out, "%s  nearest NIC of %s: none\n", prefix, g->name);
    }
}

weft_result_t weft__topo_write_xml(const weft__topo_t *topo, FILE *out)
{
#ifdef WEFT_HAVE_HWLOC
    char *buf = NULL;
    int len = 0;

    if (topo->hwloc) {
        if (hwloc_topology_export_xmlbuffer((hwloc_topology_t)topo->hwloc, &buf, &len, 0) != 0)
            return weft__error(WEFT_ERR_SYSTEM, "hwloc cannot export the topology as XML: %m");
        /* len counts the terminating NUL. */
        fwrite(buf, 1, len > 0 ? (size_t)len - 1 : 0, out);
        hwloc_free_xmlbuffer((hwloc_topology_t)topo->hwloc, buf);
        return WEFT_SUCCESS;
    }
#endif
    return weft__error(WEFT_ERR_UNSUPPORTED, "no XML for a %s topology", topo->source);
}

/* ------------------------------------------------------------------ dot */

/* A PCI switch worth drawing: the bridge nearest the device that is not a
 * host bridge, when two devices or more lie below it. */
static int dev_switch(const weft__topo_dev_t *d, uint64_t *id)
{
    int n = d->npath - (d->host_bridge ? 1 : 0);

    if (n <= 0)
        return 0;
    /* The bridge just below the root complex: the root port, or the
     * switch's upstream port behind it. Devices sharing it share a switch. */
    *id = d->path[n - 1];
    return 1;
}

static int switch_members(const weft__topo_t *topo, uint64_t id)
{
    int n = 0;
    uint64_t other;

    for (int i = 0; i < topo->ndevs; i++)
        n += dev_switch(&topo->devs[i], &other) && other == id;
    return n;
}

static void dot_dev(const weft__topo_dev_t *d, FILE *out, const char *indent)
{
    fprintf(out, "%s\"dev_%s\" [label=\"%s %s\\n%s\", shape=box, style=filled, "
            "fillcolor=\"%s\"];\n", indent, d->busid[0] ? d->busid : d->name,
            d->kind == WEFT__TOPO_GPU ? "GPU" : (d->rdma ? "RDMA NIC" : "NIC"), d->name,
            d->busid, d->kind == WEFT__TOPO_GPU ? "palegreen" : "lightblue");
}

weft_result_t weft__topo_write_dot(const weft__topo_t *topo, FILE *out)
{
    uint64_t drawn[WEFT__TOPO_DEV_MAX];
    int ndrawn = 0;

    fprintf(out, "graph weft_topology {\n  label=\"weft topology: %s\";\n  node [fontsize=10];\n",
            topo->source);
    fprintf(out, "  machine [label=\"Machine\\n%d cores, %d PUs\", shape=doubleoctagon];\n",
            topo->ncores, topo->npus);
    for (int p = 0; p < topo->npackages; p++) {
        fprintf(out, "  subgraph cluster_package%d {\n    label=\"Package %d\";\n", p, p);
        for (int i = 0; i < topo->nnuma && i < WEFT__TOPO_NUMA_MAX; i++)
            if (topo->numa_package[i] == p || (topo->numa_package[i] < 0 && p == 0))
                fprintf(out, "    numa%d [label=\"NUMA node %d\", shape=ellipse];\n",
                        topo->numa_os[i], topo->numa_os[i]);
        fprintf(out, "  }\n");
    }
    for (int i = 0; i < topo->nnuma && i < WEFT__TOPO_NUMA_MAX; i++)
        fprintf(out, "  machine -- numa%d;\n", topo->numa_os[i]);
    /* Devices below a shared switch sit in a box of their own. */
    for (int i = 0; i < topo->ndevs; i++) {
        uint64_t id;
        int seen = 0;

        if (!dev_switch(&topo->devs[i], &id) || switch_members(topo, id) < 2)
            continue;
        for (int j = 0; j < ndrawn; j++)
            seen |= drawn[j] == id;
        if (seen)
            continue;
        drawn[ndrawn++] = id;
        fprintf(out, "  subgraph cluster_switch%llu {\n    label=\"PCI switch\";\n"
                "    style=dashed;\n", (unsigned long long)id);
        for (int j = 0; j < topo->ndevs; j++) {
            uint64_t other;

            if (dev_switch(&topo->devs[j], &other) && other == id)
                dot_dev(&topo->devs[j], out, "    ");
        }
        fprintf(out, "  }\n");
    }
    for (int i = 0; i < topo->ndevs; i++) {
        const weft__topo_dev_t *d = &topo->devs[i];
        uint64_t id;

        if (!dev_switch(d, &id) || switch_members(topo, id) < 2)
            dot_dev(d, out, "  ");
        if (d->numa >= 0)
            fprintf(out, "  numa%d -- \"dev_%s\";\n", d->numa, d->busid[0] ? d->busid : d->name);
        else
            fprintf(out, "  machine -- \"dev_%s\";\n", d->busid[0] ? d->busid : d->name);
    }
    fprintf(out, "}\n");
    return WEFT_SUCCESS;
}
