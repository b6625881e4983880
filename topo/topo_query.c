/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * topo_query.c: questions the core asks of a loaded topology (topo.h):
 * devices by kind, PCI distance, nearest NIC, and whether the machine
 * meets a transport's needs.
 */
#include "config.h"

#include <stdio.h>
#include <string.h>

#include "weft/transport.h"
#include "topo/topo.h"

int weft__topo_count(const weft__topo_t *topo, weft__topo_dev_kind_t kind)
{
    int n = 0;

    for (int i = 0; topo && i < topo->ndevs; i++)
        n += topo->devs[i].kind == kind;
    return n;
}

const weft__topo_dev_t *weft__topo_dev(const weft__topo_t *topo, weft__topo_dev_kind_t kind,
                                       int i)
{
    for (int j = 0; topo && j < topo->ndevs; j++)
        if (topo->devs[j].kind == kind && i-- == 0)
            return &topo->devs[j];
    return NULL;
}

const weft__topo_dev_t *weft__topo_find(const weft__topo_t *topo, const char *name)
{
    for (int i = 0; topo && name && i < topo->ndevs; i++)
        if (!strcmp(topo->devs[i].name, name) || !strcmp(topo->devs[i].busid, name))
            return &topo->devs[i];
    return NULL;
}

weft__topo_pci_class_t weft__topo_pci_distance(const weft__topo_dev_t *a,
                                               const weft__topo_dev_t *b)
{
    /* The lowest common bridge decides: a host bridge means the traffic
     * crosses the root complex, any other bridge keeps it in a switch. */
    for (int i = 0; i < a->npath; i++) {
        for (int j = 0; j < b->npath; j++) {
            if (a->path[i] != b->path[j])
                continue;
            if (i == a->npath - 1 && a->host_bridge)
                return WEFT__TOPO_PCI_SAME_ROOT;
            return WEFT__TOPO_PCI_SAME_SWITCH;
        }
    }
    if (a->numa >= 0 && a->numa == b->numa)
        return WEFT__TOPO_PCI_SAME_NUMA;
    return WEFT__TOPO_PCI_OTHER;
}

const char *weft__topo_pci_class_name(weft__topo_pci_class_t c)
{
    switch (c) {
    case WEFT__TOPO_PCI_SAME_SWITCH: return "same PCI switch";
    case WEFT__TOPO_PCI_SAME_ROOT: return "same root complex";
    case WEFT__TOPO_PCI_SAME_NUMA: return "same NUMA node";
    case WEFT__TOPO_PCI_OTHER: return "other";
    }
    return "?";
}

/* How much a NIC is worth to a GPU beyond distance, lower is better: an
 * RDMA NIC with an active port, then one that may work (Ethernet, or
 * port state unknown), then an RDMA NIC whose ports are all down. */
static int nic_rank(const weft__topo_dev_t *nic)
{
    if (nic->rdma && nic->active_ports > 0)
        return 0;
    return nic->rdma && nic->active_ports == 0 ? 2 : 1;
}

const weft__topo_dev_t *weft__topo_nearest_nic(const weft__topo_t *topo,
                                               const weft__topo_dev_t *gpu,
                                               weft__topo_pci_class_t *cls)
{
    const weft__topo_dev_t *best = NULL;
    weft__topo_pci_class_t best_cls = WEFT__TOPO_PCI_OTHER;

    for (int i = 0; topo && gpu && i < topo->ndevs; i++) {
        const weft__topo_dev_t *nic = &topo->devs[i];
        weft__topo_pci_class_t c;

        if (nic->kind != WEFT__TOPO_NIC)
            continue;
        c = weft__topo_pci_distance(gpu, nic);
        /* Devices are in PCI order, so ties keep the first one. */
        if (!best || c < best_cls || (c == best_cls && nic_rank(nic) < nic_rank(best))) {
            best = nic;
            best_cls = c;
        }
    }
    if (best && cls)
        *cls = best_cls;
    return best;
}

/* ---------------------------------------------------------------- needs */

static const struct {
    uint64_t bit;
    const char *name;
} need_names[] = {
    { WEFT_TRANSPORT_NEED_LOCAL_PEER, "local-peer" },
    { WEFT_TRANSPORT_NEED_RDMA_PORT, "rdma-port" },
    { WEFT_TRANSPORT_NEED_CUDA_GPU, "cuda-gpu" },
    { WEFT_TRANSPORT_NEED_GPU_NIC_SWITCH, "gpu-nic-switch" },
};

#define N_NEEDS ((int)(sizeof(need_names) / sizeof(need_names[0])))

void weft__topo_needs_string(uint64_t needs, char *buf, size_t cap)
{
    size_t o = 0;
    uint64_t known = 0;

    if (cap == 0)
        return;
    buf[0] = '\0';
    for (int i = 0; i < N_NEEDS; i++) {
        known |= need_names[i].bit;
        if ((needs & need_names[i].bit) && o < cap)
            o += (size_t)snprintf(buf + o, cap - o, "%s%s", o ? "," : "", need_names[i].name);
    }
    if ((needs & ~known) && o < cap)
        o += (size_t)snprintf(buf + o, cap - o, "%sunknown 0x%llx", o ? "," : "",
                              (unsigned long long)(needs & ~known));
    if (o == 0)
        snprintf(buf, cap, "none");
}

static int has_active_rdma(const weft__topo_t *topo)
{
    for (int i = 0; i < topo->ndevs; i++)
        if (topo->devs[i].kind == WEFT__TOPO_NIC && topo->devs[i].rdma &&
            topo->devs[i].active_ports != 0)
            return 1;
    return 0;
}

static void why_no_rdma_port(const weft__topo_t *topo, char *why, size_t len)
{
    size_t o = (size_t)snprintf(why, len, "no OpenFabrics device with an active port");
    int listed = 0;

    for (int i = 0; i < topo->ndevs && o < len; i++) {
        const weft__topo_dev_t *d = &topo->devs[i];

        if (d->kind != WEFT__TOPO_NIC || !d->rdma)
            continue;
        o += (size_t)snprintf(why + o, len - o, "%s%s: %d of %d ports active",
                              listed++ ? ", " : " (", d->name, d->active_ports, d->ports);
    }
    if (listed && o < len)
        snprintf(why + o, len - o, ")");
    else if (!listed && o < len)
        snprintf(why + o, len - o, " (no OpenFabrics device at all)");
}

static int has_cuda_gpu(const weft__topo_t *topo)
{
    return weft__topo_count(topo, WEFT__TOPO_GPU) > 0;
}

/* A GPU and an RDMA NIC (port not known to be down) below one switch. */
static int has_gpu_nic_switch(const weft__topo_t *topo, char *why, size_t len)
{
    weft__topo_pci_class_t closest = WEFT__TOPO_PCI_OTHER;
    const weft__topo_dev_t *cg = NULL, *cn = NULL;

    for (int i = 0; i < topo->ndevs; i++) {
        const weft__topo_dev_t *g = &topo->devs[i];

        if (g->kind != WEFT__TOPO_GPU)
            continue;
        for (int j = 0; j < topo->ndevs; j++) {
            const weft__topo_dev_t *n = &topo->devs[j];
            weft__topo_pci_class_t c;

            if (n->kind != WEFT__TOPO_NIC || !n->rdma || n->active_ports == 0)
                continue;
            c = weft__topo_pci_distance(g, n);
            if (c == WEFT__TOPO_PCI_SAME_SWITCH)
                return 1;
            if (!cg || c < closest) {
                closest = c;
                cg = g;
                cn = n;
            }
        }
    }
    if (cg)
        snprintf(why, len, "no GPU shares a PCI switch with an RDMA NIC (closest: %s and %s, "
                 "%s)", cg->name, cn->name, weft__topo_pci_class_name(closest));
    else if (!has_cuda_gpu(topo))
        snprintf(why, len, "no GPU shares a PCI switch with an RDMA NIC (no GPU)");
    else
        snprintf(why, len, "no GPU shares a PCI switch with an RDMA NIC (no RDMA NIC with "
                 "an active port)");
    return 0;
}

uint64_t weft__topo_unmet_needs(const weft__topo_t *topo, uint64_t needs, char *why,
                                size_t why_len)
{
    uint64_t unmet = 0, known = 0;
    char scratch[256];

    if (why_len)
        why[0] = '\0';
    for (int i = 0; i < N_NEEDS; i++)
        known |= need_names[i].bit;
    if (needs & ~known) {
        unmet |= needs & ~known;
        snprintf(why, why_len, "needs 0x%llx, which this weft does not know (built for a "
                 "newer weft?)", (unsigned long long)(needs & ~known));
    }
    needs &= known & ~WEFT_TRANSPORT_NEED_LOCAL_PEER;
    if (!topo || !topo->known)
        return unmet;
    if ((needs & WEFT_TRANSPORT_NEED_RDMA_PORT) && !has_active_rdma(topo)) {
        if (!unmet)
            why_no_rdma_port(topo, why, why_len);
        unmet |= WEFT_TRANSPORT_NEED_RDMA_PORT;
    }
    if ((needs & WEFT_TRANSPORT_NEED_CUDA_GPU) && !has_cuda_gpu(topo)) {
        if (!unmet)
            snprintf(why, why_len, "no NVIDIA GPU on this node");
        unmet |= WEFT_TRANSPORT_NEED_CUDA_GPU;
    }
    if ((needs & WEFT_TRANSPORT_NEED_GPU_NIC_SWITCH) &&
        !has_gpu_nic_switch(topo, scratch, sizeof(scratch))) {
        if (!unmet)
            snprintf(why, why_len, "%s", scratch);
        unmet |= WEFT_TRANSPORT_NEED_GPU_NIC_SWITCH;
    }
    return unmet;
}
