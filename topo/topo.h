/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * topo.h: what weft knows about the machine it runs on.
 *
 * The only place that calls hwloc. weft__topo_load probes this host with
 * hwloc 2.x, or reads the hwloc XML file WEFT_TOPO_FILE names instead, and
 * boils the result down to plain data: counts of packages, NUMA nodes,
 * cores, PUs and last-level caches; the NUMA node this process is bound
 * to; and the devices weft cares about, GPUs and NICs, each with its NUMA
 * node and its path through the PCI tree. Everything else in weft reads
 * that data, never hwloc, so a build without hwloc only loses detail: it
 * sees a flat machine (topo->known = 0) and says so.
 *
 * A loaded topology is read-only and may be shared between threads.
 */
#ifndef WEFT_TOPO_TOPO_H
#define WEFT_TOPO_TOPO_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "weft.h"

#define WEFT__HOSTID_MAX 128

/* A string equal on two ranks exactly when they run on the same node:
 * WEFT_HOSTID when set (tests that simulate several hosts on one machine),
 * otherwise the host name and the kernel's boot id, so that two containers
 * with the same host name on different machines are told apart. */
weft_result_t weft__topo_host_id(char *buf, size_t cap);

/* The running kernel's boot id: one machine, whatever WEFT_HOSTID says,
 * so equal on simulated hosts and containers that share its cores. ""
 * where /proc does not tell. */
#define WEFT__MACHINE_ID_MAX 40
void weft__topo_machine_id(char *buf, size_t cap);

/* ------------------------------------------------------------- the model */

#define WEFT__TOPO_NAME_MAX 32
#define WEFT__TOPO_BUSID_MAX 16     /* "0000:07:00.0" */
#define WEFT__TOPO_DEV_MAX 64       /* GPUs and NICs together; more are ignored */
#define WEFT__TOPO_NUMA_MAX 64
#define WEFT__TOPO_PCI_DEPTH 8      /* bridges remembered above a device */

typedef enum weft__topo_dev_kind {
    WEFT__TOPO_GPU = 0,
    WEFT__TOPO_NIC
} weft__topo_dev_kind_t;

/* How far apart two PCI devices are, nearest first (NCCL's PIX/PXB, PHB,
 * NODE and SYS, folded into four). */
typedef enum weft__topo_pci_class {
    WEFT__TOPO_PCI_SAME_SWITCH = 0, /* below a common PCI bridge: traffic stays in a switch */
    WEFT__TOPO_PCI_SAME_ROOT,       /* same host bridge (root complex), different root ports */
    WEFT__TOPO_PCI_SAME_NUMA,       /* different root complexes of one NUMA node */
    WEFT__TOPO_PCI_OTHER            /* across the CPU interconnect, or not known */
} weft__topo_pci_class_t;

typedef struct weft__topo_dev {
    weft__topo_dev_kind_t kind;
    /* The OS name ("cuda0", "mlx5_0", "eno1"); for a device without one,
     * the kind and its index among its kind ("gpu1"). */
    char name[WEFT__TOPO_NAME_MAX];
    char busid[WEFT__TOPO_BUSID_MAX];   /* "" when not on PCI */
    unsigned vendor, device, pci_class; /* PCI ids, class as 0x0302 */
    int numa;                           /* OS index of its NUMA node; -1 unknown or several */
    int package;                        /* logical index of its package; -1 unknown */
    /* NICs: an OpenFabrics (RDMA) device, its ports and how many are ACTIVE
     * (-1 when hwloc shows no port state), and the network interface. */
    int rdma;
    int ports, active_ports;
    char netdev[WEFT__TOPO_NAME_MAX];
    /* The bridges above it, nearest first, by hwloc gp_index; the last one
     * is the host bridge. npath 0: not on PCI. */
    int npath;
    uint64_t path[WEFT__TOPO_PCI_DEPTH];
    int host_bridge;                    /* path ends in a host bridge */
} weft__topo_dev_t;

typedef struct weft__topo {
    int known;               /* 0: flat fallback, counts are guesses, no devices */
    char source[256];        /* "this host", "file <path>", "flat (...)" */
    int npackages, nnuma, ncores, npus;
    int nllc;                /* last-level caches */
    int llc_level;           /* 3 for L3, 0 when none seen */
    uint64_t llc_size;       /* bytes of one of them */
    int numa_os[WEFT__TOPO_NUMA_MAX];      /* OS index of each NUMA node */
    int numa_package[WEFT__TOPO_NUMA_MAX]; /* its package, -1 unknown */
    /* This process's binding: the NUMA node holding every PU it may run on,
     * or -1 (not bound within one node, or a topology read from a file,
     * which says nothing about this process). */
    int bind_numa;
    char bind_cpus[64];      /* the bound PUs as a list, "" unknown */
    int ndevs;
    weft__topo_dev_t devs[WEFT__TOPO_DEV_MAX];
    void *hwloc;             /* hwloc_topology_t for exports, NULL when flat */
} weft__topo_t;

/* Loads the topology: from the hwloc XML file WEFT_TOPO_FILE names when
 * set, else by probing this host. Results: WEFT_SUCCESS (built without
 * hwloc, or hwloc failing to probe, give the flat view and an INFO or WARN
 * line, not an error); WEFT_ERR_INVALID_ARG when WEFT_TOPO_FILE names a
 * file hwloc cannot read (weft_last_error() names the variable and file);
 * WEFT_ERR_NO_MEMORY. *out is written only on success; free with
 * weft__topo_free. */
weft_result_t weft__topo_load(weft__topo_t **out);
/* The same from an explicit XML file, or probing when path is NULL. */
weft_result_t weft__topo_load_from(const char *path, weft__topo_t **out);
void weft__topo_free(weft__topo_t *topo);

/* -------------------------------------------------------------- queries */

int weft__topo_count(const weft__topo_t *topo, weft__topo_dev_kind_t kind);
/* The i-th device of a kind (in PCI order), NULL past the end. */
const weft__topo_dev_t *weft__topo_dev(const weft__topo_t *topo, weft__topo_dev_kind_t kind,
                                       int i);
/* By OS name or bus id, NULL when none. */
const weft__topo_dev_t *weft__topo_find(const weft__topo_t *topo, const char *name);
weft__topo_pci_class_t weft__topo_pci_distance(const weft__topo_dev_t *a,
                                               const weft__topo_dev_t *b);
/* "same PCI switch", "same root complex", "same NUMA node", "other". */
const char *weft__topo_pci_class_name(weft__topo_pci_class_t c);
/* The NIC nearest to gpu: lowest PCI distance class, then an RDMA NIC
 * with an active port, then Ethernet (or port state unknown), then RDMA
 * NICs with every port down, then PCI order. NULL when the
 * machine has no NIC; *cls (may be NULL) gets the class. */
const weft__topo_dev_t *weft__topo_nearest_nic(const weft__topo_t *topo,
                                               const weft__topo_dev_t *gpu,
                                               weft__topo_pci_class_t *cls);

/* Plugin needs (WEFT_TRANSPORT_NEED_* of weft/transport.h) the hardware
 * of this topology does not meet, ignoring WEFT_TRANSPORT_NEED_LOCAL_PEER
 * (a property of the job, known after the rendezvous). 0 when all are
 * met; otherwise why names the first unmet one ("no OpenFabrics device
 * with an active port (mlx5_0: port down)"). A flat topology meets every
 * hardware need: without hwloc weft cannot tell, and the plugin's init
 * decides. Bits this weft does not know are unmet. */
uint64_t weft__topo_unmet_needs(const weft__topo_t *topo, uint64_t needs, char *why,
                                size_t why_len);
/* "local-peer,rdma-port" for a needs mask; "none" for 0. */
void weft__topo_needs_string(uint64_t needs, char *buf, size_t cap);

/* ----------------------------------------------------- per-rank summary */

/* What one rank tells the others about where it runs (exchanged at init).
 * gpu is the bus id of the GPU nearest to the rank's binding (its NUMA
 * node's first GPU; the machine's first GPU when unbound), nic the name of
 * the NIC nearest to that GPU, or without a GPU the first RDMA NIC with an
 * active port (else any NIC) of the binding's NUMA node or the machine. */
typedef struct weft__topo_summary {
    char host_id[WEFT__HOSTID_MAX];
    char machine[WEFT__MACHINE_ID_MAX]; /* weft__topo_machine_id */
    int32_t cpu;                        /* the one CPU it may run on, -1 if several */
    int32_t ncpus;                      /* CPUs it may run on, 0 unknown */
    int32_t numa;                       /* NUMA node of the binding, -1 */
    int32_t package;                    /* package of that node, -1 */
    uint16_t ngpus, nnics, nrdma_active;
    char gpu[WEFT__TOPO_BUSID_MAX];
    char nic[WEFT__TOPO_NAME_MAX];
} weft__topo_summary_t;

/* Bytes of an encoded summary (fixed width, little-endian, no host id:
 * the address record carries that already). */
#define WEFT__TOPO_SUMMARY_WIRE (4 + 4 + 2 + 2 + 2 + 2 + WEFT__TOPO_BUSID_MAX + \
                                 WEFT__TOPO_NAME_MAX + WEFT__MACHINE_ID_MAX + 4 + 4)

void weft__topo_summarize(const weft__topo_t *topo, const char *host_id,
                          weft__topo_summary_t *out);
void weft__topo_summary_encode(const weft__topo_summary_t *s, unsigned char *wire);
/* host_id is copied in; the wire's strings are cut to their fields. */
void weft__topo_summary_decode(const unsigned char *wire, const char *host_id,
                               weft__topo_summary_t *out);
/* What two ranks share: every bit that holds. MACHINE and CPU hold
 * between nodes too (simulated hosts of one machine). */
enum {
    WEFT__TOPO_SHARE_NODE = 1 << 0,
    WEFT__TOPO_SHARE_NUMA = 1 << 1,
    WEFT__TOPO_SHARE_GPU = 1 << 2,
    WEFT__TOPO_SHARE_NIC = 1 << 3,
    WEFT__TOPO_SHARE_MACHINE = 1 << 4,  /* one running kernel */
    WEFT__TOPO_SHARE_CPU = 1 << 5       /* both pinned to the same one CPU */
};
unsigned weft__topo_shared(const weft__topo_summary_t *a, const weft__topo_summary_t *b);
/* Whether rank me of the n ranks at *ranks[i] competes with other ranks
 * of the job for its cores: pinned to one CPU, when another rank of its
 * machine is pinned to the same; otherwise when its machine's ranks
 * outnumber the CPUs it may run on. */
int weft__topo_cores_shared(const weft__topo_summary_t *const *ranks, int n, int me);

/* How near a device is to this rank, nearest first. */
typedef enum weft__topo_nearness {
    WEFT__TOPO_NEAR_GPU = 0,     /* below the PCI switch of the rank's GPU */
    WEFT__TOPO_NEAR_NUMA,        /* on the NUMA node the rank is bound to */
    WEFT__TOPO_NEAR_HOST,        /* elsewhere on the host */
    WEFT__TOPO_NEAR_UNKNOWN      /* the topology does not show it */
} weft__topo_nearness_t;

/* The nearness of the device the OS names name (an RDMA device "mlx5_0",
 * a GPU, or a NIC's network interface "ibp21s0") to this rank: its GPU
 * (the one weft__topo_summarize picks) and the NUMA node of its binding. */
weft__topo_nearness_t weft__topo_nearness(const weft__topo_t *topo, const char *name);

/* ---------------------------------------------------------- CPU binding */

/* The levels of the machine a launcher binds processes to. */
typedef enum weft__topo_bind_level {
    WEFT__TOPO_BIND_CORE = 0, /* PUs when the topology shows no cores */
    WEFT__TOPO_BIND_NUMA,
    WEFT__TOPO_BIND_PACKAGE
} weft__topo_bind_level_t;

/* One object of a level, as the CPUs of it a process may be bound to. */
typedef struct weft__topo_place {
    int index;   /* logical index among the objects of its level (hwloc's) */
    int os_index;/* NUMA nodes: the kernel's node number; others: as index */
    int ncpus;
    int *cpus;   /* OS numbers of its PUs, ascending */
    char *list;  /* the same as a list, "0-3,8", as in Cpus_allowed_list */
} weft__topo_place_t;

typedef struct weft__topo_places {
    weft__topo_bind_level_t level;
    int nplaces;
    weft__topo_place_t *place; /* in logical order: neighbours share caches */
} weft__topo_places_t;

/* The objects of a level that hold at least one of the allowed CPUs,
 * each cut down to those CPUs; allowed NULL allows every CPU. Results:
 * WEFT_SUCCESS (nplaces may be 0: none of the allowed CPUs is in the
 * topology); WEFT_ERR_UNSUPPORTED for the flat view, which knows no
 * cores or NUMA nodes; WEFT_ERR_INVALID_ARG; WEFT_ERR_NO_MEMORY. *out is
 * written only on success; free with weft__topo_places_free. */
weft_result_t weft__topo_places(const weft__topo_t *topo, weft__topo_bind_level_t level,
                                const int *allowed, int nallowed, weft__topo_places_t **out);
void weft__topo_places_free(weft__topo_places_t *places);
/* "core", "NUMA node", "package". */
const char *weft__topo_bind_level_name(weft__topo_bind_level_t level);

/* ------------------------------------------------------------- printing */

/* A human summary, several lines each starting with prefix: where the
 * topology came from, the counts, the binding, every GPU and NIC with NUMA
 * node, and each GPU's nearest NIC with the PCI distance class. */
void weft__topo_print(const weft__topo_t *topo, FILE *out, const char *prefix);
/* hwloc XML of the topology (the flat view has none: WEFT_ERR_UNSUPPORTED). */
weft_result_t weft__topo_write_xml(const weft__topo_t *topo, FILE *out);
/* A graphviz graph: packages holding NUMA nodes, GPUs and NICs attached to
 * their NUMA node, and PCI switches as boxes around the devices below them. */
weft_result_t weft__topo_write_dot(const weft__topo_t *topo, FILE *out);

#endif /* WEFT_TOPO_TOPO_H */
