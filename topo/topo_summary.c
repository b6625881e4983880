/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * topo_summary.c: the few facts about its place in the machine that each
 * rank tells the others at init (topo.h), and how two ranks compare.
 */
#include "config.h"

#include <sched.h>
#include <stdio.h>
#include <string.h>

#include "topo/topo.h"

/* The GPU a rank is closest to: its NUMA node's first, or when the
 * binding spans nodes (or is unknown) the machine's first. */
static const weft__topo_dev_t *rank_gpu(const weft__topo_t *topo)
{
    const weft__topo_dev_t *first = weft__topo_dev(topo, WEFT__TOPO_GPU, 0);

    for (int i = 0; topo->bind_numa >= 0 && i < topo->ndevs; i++)
        if (topo->devs[i].kind == WEFT__TOPO_GPU && topo->devs[i].numa == topo->bind_numa)
            return &topo->devs[i];
    return first;
}

/* Without a GPU: an active RDMA NIC beats any NIC, the binding's NUMA node
 * beats the rest of the machine. */
static const weft__topo_dev_t *rank_nic(const weft__topo_t *topo)
{
    const weft__topo_dev_t *best = NULL;
    int best_score = 0;

    for (int i = 0; i < topo->ndevs; i++) {
        const weft__topo_dev_t *d = &topo->devs[i];
        int score;

        if (d->kind != WEFT__TOPO_NIC)
            continue;
        score = 1 + (d->rdma && d->active_ports != 0) * 2 +
                (topo->bind_numa >= 0 && d->numa == topo->bind_numa) * 4;
        if (score > best_score) {
            best = d;
            best_score = score;
        }
    }
    return best;
}

/* The CPUs this process may run on now (a launcher binds before exec). */
static void rank_cpus(weft__topo_summary_t *out)
{
    cpu_set_t set;

    out->cpu = -1;
    out->ncpus = 0;
    if (sched_getaffinity(0, sizeof(set), &set) != 0)
        return;
    out->ncpus = CPU_COUNT(&set);
    for (int c = 0; out->ncpus == 1 && c < CPU_SETSIZE; c++)
        if (CPU_ISSET(c, &set))
            out->cpu = c;
}

void weft__topo_summarize(const weft__topo_t *topo, const char *host_id,
                          weft__topo_summary_t *out)
{
    const weft__topo_dev_t *gpu, *nic;

    memset(out, 0, sizeof(*out));
    snprintf(out->host_id, sizeof(out->host_id), "%s", host_id ? host_id : "");
    weft__topo_machine_id(out->machine, sizeof(out->machine));
    rank_cpus(out);
    out->numa = topo->bind_numa;
    out->package = -1;
    for (int i = 0; i < topo->nnuma && i < WEFT__TOPO_NUMA_MAX; i++)
        if (topo->numa_os[i] == topo->bind_numa)
            out->package = topo->numa_package[i];
    out->ngpus = (uint16_t)weft__topo_count(topo, WEFT__TOPO_GPU);
    out->nnics = (uint16_t)weft__topo_count(topo, WEFT__TOPO_NIC);
    for (int i = 0; i < topo->ndevs; i++)
        out->nrdma_active += topo->devs[i].kind == WEFT__TOPO_NIC && topo->devs[i].rdma &&
                             topo->devs[i].active_ports > 0;
    gpu = rank_gpu(topo);
    nic = gpu ? weft__topo_nearest_nic(topo, gpu, NULL) : rank_nic(topo);
    if (gpu)
        snprintf(out->gpu, sizeof(out->gpu), "%s", gpu->busid);
    if (nic)
        snprintf(out->nic, sizeof(out->nic), "%s", nic->name);
}

static void put_u32(unsigned char *p, uint32_t v)
{
    for (int i = 0; i < 4; i++)
        p[i] = (unsigned char)(v >> (8 * i));
}

static uint32_t get_u32(const unsigned char *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static void put_u16(unsigned char *p, uint16_t v)
{
    p[0] = (unsigned char)v;
    p[1] = (unsigned char)(v >> 8);
}

static uint16_t get_u16(const unsigned char *p)
{
    return (uint16_t)(p[0] | p[1] << 8);
}

/* Wire layout: numa, package (int32), ngpus, nnics, nrdma_active, 0
 * (uint16), gpu, nic, machine (NUL-padded), cpu, ncpus (int32). */
#define WIRE_MACHINE (16 + WEFT__TOPO_BUSID_MAX + WEFT__TOPO_NAME_MAX)
void weft__topo_summary_encode(const weft__topo_summary_t *s, unsigned char *wire)
{
    memset(wire, 0, WEFT__TOPO_SUMMARY_WIRE);
    put_u32(wire, (uint32_t)s->numa);
    put_u32(wire + 4, (uint32_t)s->package);
    put_u16(wire + 8, s->ngpus);
    put_u16(wire + 10, s->nnics);
    put_u16(wire + 12, s->nrdma_active);
    memcpy(wire + 16, s->gpu, strnlen(s->gpu, WEFT__TOPO_BUSID_MAX - 1));
    memcpy(wire + 16 + WEFT__TOPO_BUSID_MAX, s->nic, strnlen(s->nic, WEFT__TOPO_NAME_MAX - 1));
    memcpy(wire + WIRE_MACHINE, s->machine, strnlen(s->machine, WEFT__MACHINE_ID_MAX - 1));
    put_u32(wire + WIRE_MACHINE + WEFT__MACHINE_ID_MAX, (uint32_t)s->cpu);
    put_u32(wire + WIRE_MACHINE + WEFT__MACHINE_ID_MAX + 4, (uint32_t)s->ncpus);
}

void weft__topo_summary_decode(const unsigned char *wire, const char *host_id,
                               weft__topo_summary_t *out)
{
    memset(out, 0, sizeof(*out));
    snprintf(out->host_id, sizeof(out->host_id), "%s", host_id ? host_id : "");
    out->numa = (int32_t)get_u32(wire);
    out->package = (int32_t)get_u32(wire + 4);
    out->ngpus = get_u16(wire + 8);
    out->nnics = get_u16(wire + 10);
    out->nrdma_active = get_u16(wire + 12);
    memcpy(out->gpu, wire + 16, WEFT__TOPO_BUSID_MAX - 1);
    memcpy(out->nic, wire + 16 + WEFT__TOPO_BUSID_MAX, WEFT__TOPO_NAME_MAX - 1);
    memcpy(out->machine, wire + WIRE_MACHINE, WEFT__MACHINE_ID_MAX - 1);
    out->cpu = (int32_t)get_u32(wire + WIRE_MACHINE + WEFT__MACHINE_ID_MAX);
    out->ncpus = (int32_t)get_u32(wire + WIRE_MACHINE + WEFT__MACHINE_ID_MAX + 4);
}

/* One running kernel; without boot ids, one node. */
static int same_machine(const weft__topo_summary_t *a, const weft__topo_summary_t *b)
{
    if (a->machine[0] && b->machine[0])
        return !strcmp(a->machine, b->machine);
    return !strcmp(a->host_id, b->host_id);
}

unsigned weft__topo_shared(const weft__topo_summary_t *a, const weft__topo_summary_t *b)
{
    unsigned s = 0;

    if (same_machine(a, b)) {
        s |= WEFT__TOPO_SHARE_MACHINE;
        if (a->cpu >= 0 && a->cpu == b->cpu)
            s |= WEFT__TOPO_SHARE_CPU;
    }
    if (strcmp(a->host_id, b->host_id))
        return s;
    s |= WEFT__TOPO_SHARE_NODE;
    if (a->numa >= 0 && a->numa == b->numa)
        s |= WEFT__TOPO_SHARE_NUMA;
    if (a->gpu[0] && !strcmp(a->gpu, b->gpu))
        s |= WEFT__TOPO_SHARE_GPU;
    if (a->nic[0] && !strcmp(a->nic, b->nic))
        s |= WEFT__TOPO_SHARE_NIC;
    return s;
}

int weft__topo_cores_shared(const weft__topo_summary_t *const *ranks, int n, int me)
{
    const weft__topo_summary_t *mine = ranks[me];
    int on_machine = 0;

    for (int i = 0; i < n; i++) {
        unsigned s = weft__topo_shared(mine, ranks[i]);

        if (i != me && (s & WEFT__TOPO_SHARE_CPU))
            return 1;
        on_machine += (s & WEFT__TOPO_SHARE_MACHINE) != 0;
    }
    return mine->cpu < 0 && mine->ncpus > 0 && on_machine > mine->ncpus;
}

weft__topo_nearness_t weft__topo_nearness(const weft__topo_t *topo, const char *name)
{
    const weft__topo_dev_t *d = NULL, *gpu;

    for (int i = 0; name && i < topo->ndevs && !d; i++)
        if (!strcmp(topo->devs[i].name, name) ||
            (topo->devs[i].netdev[0] && !strcmp(topo->devs[i].netdev, name)))
            d = &topo->devs[i];
    if (!d)
        return WEFT__TOPO_NEAR_UNKNOWN;
    gpu = rank_gpu(topo);
    if (gpu && gpu != d && weft__topo_pci_distance(gpu, d) == WEFT__TOPO_PCI_SAME_SWITCH)
        return WEFT__TOPO_NEAR_GPU;
    if (topo->bind_numa >= 0 && d->numa == topo->bind_numa)
        return WEFT__TOPO_NEAR_NUMA;
    return WEFT__TOPO_NEAR_HOST;
}
