/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_topo.c: what weft concludes from the hwloc XML fixtures of
 * tests/topo/: devices, NUMA nodes, PCI distance classes, each GPU's
 * nearest NIC, which transports are eligible, the per-rank summary, and
 * the places a launcher binds ranks to.
 */
#include "config.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "weft.h"
#include "weft/transport.h"
#include "core/transport/plugin.h"
#include "topo/topo.h"

#define FIXTURE(name) WEFT_TEST_SRCDIR "/tests/topo/" name
#define TEST_PLUGINS WEFT_TEST_BUILDDIR "/tests/plugins/.libs:" \
    WEFT_TEST_BUILDDIR "/plugins/sockets/.libs"

static weft__topo_t *load(const char *path)
{
    weft__topo_t *topo = NULL;

    assert_int_equal(weft__topo_load_from(path, &topo), WEFT_SUCCESS);
    assert_non_null(topo);
    return topo;
}

static const weft__topo_dev_t *dev(const weft__topo_t *topo, const char *name)
{
    const weft__topo_dev_t *d = weft__topo_find(topo, name);

    if (!d)
        fail_msg("no device %s in %s", name, topo->source);
    return d;
}

static void assert_nearest(const weft__topo_t *topo, const char *gpu, const char *nic,
                           weft__topo_pci_class_t cls)
{
    weft__topo_pci_class_t got = WEFT__TOPO_PCI_OTHER;
    const weft__topo_dev_t *n = weft__topo_nearest_nic(topo, dev(topo, gpu), &got);

    assert_non_null(n);
    assert_string_equal(n->name, nic);
    assert_int_equal(got, cls);
}

/* ------------------------------------------------------------ the shapes */

static void test_dgx8(void **state)
{
    weft__topo_t *topo = load(FIXTURE("dgx8.xml"));
    static const char *nearest[8] = { "mlx5_0", "mlx5_0", "mlx5_1", "mlx5_1",
                                      "mlx5_2", "mlx5_2", "mlx5_3", "mlx5_3" };

    assert_true(topo->known);
    assert_int_equal(topo->npackages, 2);
    assert_int_equal(topo->nnuma, 2);
    assert_int_equal(topo->ncores, 16);
    assert_int_equal(topo->llc_level, 3);
    assert_int_equal(topo->nllc, 2);
    /* A file says nothing about this process's binding. */
    assert_int_equal(topo->bind_numa, -1);
    assert_int_equal(weft__topo_count(topo, WEFT__TOPO_GPU), 8);
    assert_int_equal(weft__topo_count(topo, WEFT__TOPO_NIC), 5);
    for (int i = 0; i < 8; i++) {
        const weft__topo_dev_t *g = weft__topo_dev(topo, WEFT__TOPO_GPU, i);
        char name[16];

        snprintf(name, sizeof(name), "cuda%d", i);
        assert_string_equal(g->name, name);
        assert_int_equal(g->numa, i < 4 ? 0 : 1);
        assert_int_equal(g->package, i < 4 ? 0 : 1);
        assert_nearest(topo, name, nearest[i], WEFT__TOPO_PCI_SAME_SWITCH);
    }
    assert_string_equal(dev(topo, "cuda0")->busid, "0000:13:00.0");
    assert_true(dev(topo, "mlx5_2")->rdma);
    assert_int_equal(dev(topo, "mlx5_2")->numa, 1);
    assert_int_equal(dev(topo, "mlx5_2")->ports, 1);
    assert_int_equal(dev(topo, "mlx5_2")->active_ports, 1);
    assert_string_equal(dev(topo, "mlx5_2")->netdev, "ibp53s0");
    assert_false(dev(topo, "eno1")->rdma);
    assert_int_equal(dev(topo, "eno1")->numa, 0);
    /* Other switch of the same socket, the onboard port, the other socket. */
    assert_int_equal(weft__topo_pci_distance(dev(topo, "cuda0"), dev(topo, "mlx5_1")),
                     WEFT__TOPO_PCI_SAME_NUMA);
    assert_int_equal(weft__topo_pci_distance(dev(topo, "cuda0"), dev(topo, "eno1")),
                     WEFT__TOPO_PCI_SAME_NUMA);
    assert_int_equal(weft__topo_pci_distance(dev(topo, "cuda0"), dev(topo, "mlx5_2")),
                     WEFT__TOPO_PCI_OTHER);
    assert_int_equal(weft__topo_pci_distance(dev(topo, "cuda6"), dev(topo, "cuda7")),
                     WEFT__TOPO_PCI_SAME_SWITCH);
    assert_int_equal(weft__topo_unmet_needs(topo, WEFT_TRANSPORT_NEED_RDMA_PORT |
                                            WEFT_TRANSPORT_NEED_CUDA_GPU |
                                            WEFT_TRANSPORT_NEED_GPU_NIC_SWITCH, NULL, 0), 0);
    weft__topo_free(topo);
}

/* How near each device is to the rank: below its GPU's switch, on its
 * binding's NUMA node, elsewhere (the core's device_nearness service). */
static void test_nearness(void **state)
{
    weft__topo_t *topo = load(FIXTURE("dgx8.xml"));

    (void)state;
    /* Binding unknown: the rank's GPU is the machine's first, cuda0. */
    assert_int_equal(weft__topo_nearness(topo, "mlx5_0"), WEFT__TOPO_NEAR_GPU);
    assert_int_equal(weft__topo_nearness(topo, "ibp21s0"), WEFT__TOPO_NEAR_GPU);
    assert_int_equal(weft__topo_nearness(topo, "mlx5_1"), WEFT__TOPO_NEAR_HOST);
    assert_int_equal(weft__topo_nearness(topo, "mlx5_2"), WEFT__TOPO_NEAR_HOST);
    assert_int_equal(weft__topo_nearness(topo, "mlx5_9"), WEFT__TOPO_NEAR_UNKNOWN);
    assert_int_equal(weft__topo_nearness(topo, NULL), WEFT__TOPO_NEAR_UNKNOWN);
    /* Bound to NUMA node 1: its first GPU is cuda4, below mlx5_2's switch;
     * mlx5_3 shares the node, mlx5_0 does not. */
    topo->bind_numa = 1;
    assert_int_equal(weft__topo_nearness(topo, "mlx5_2"), WEFT__TOPO_NEAR_GPU);
    assert_int_equal(weft__topo_nearness(topo, "mlx5_3"), WEFT__TOPO_NEAR_NUMA);
    assert_int_equal(weft__topo_nearness(topo, "ibp69s0"), WEFT__TOPO_NEAR_NUMA);
    assert_int_equal(weft__topo_nearness(topo, "mlx5_0"), WEFT__TOPO_NEAR_HOST);
    weft__topo_free(topo);
}

static void test_cpu2s(void **state)
{
    weft__topo_t *topo = load(FIXTURE("cpu2s.xml"));
    const weft__topo_dev_t *nic;
    char why[256];

    assert_int_equal(topo->npackages, 2);
    assert_int_equal(topo->nnuma, 2);
    assert_int_equal(topo->ncores, 24);
    assert_int_equal(topo->numa_os[1], 1);
    assert_int_equal(topo->numa_package[1], 1);
    assert_int_equal(weft__topo_count(topo, WEFT__TOPO_GPU), 0);
    assert_int_equal(weft__topo_count(topo, WEFT__TOPO_NIC), 1);
    nic = weft__topo_dev(topo, WEFT__TOPO_NIC, 0);
    assert_string_equal(nic->name, "enp3s0f0");
    assert_string_equal(nic->netdev, "enp3s0f0");
    assert_int_equal(nic->numa, 0);
    assert_false(nic->rdma);
    /* The NVMe drive is neither. */
    assert_null(weft__topo_find(topo, "nvme0n1"));
    assert_int_equal(weft__topo_unmet_needs(topo, WEFT_TRANSPORT_NEEDS_NONE, why, sizeof(why)), 0);
    assert_int_equal(weft__topo_unmet_needs(topo, WEFT_TRANSPORT_NEED_RDMA_PORT, why,
                                            sizeof(why)), WEFT_TRANSPORT_NEED_RDMA_PORT);
    assert_non_null(strstr(why, "no OpenFabrics device at all"));
    assert_int_equal(weft__topo_unmet_needs(topo, WEFT_TRANSPORT_NEED_CUDA_GPU, why, sizeof(why)),
                     WEFT_TRANSPORT_NEED_CUDA_GPU);
    assert_non_null(strstr(why, "no NVIDIA GPU"));
    /* A local peer is a matter of the job, not of the machine. */
    assert_int_equal(weft__topo_unmet_needs(topo, WEFT_TRANSPORT_NEED_LOCAL_PEER, why,
                                            sizeof(why)), 0);
    weft__topo_free(topo);
}

static void test_workstation(void **state)
{
    weft__topo_t *topo = load(FIXTURE("workstation.xml"));
    char why[256];

    assert_int_equal(topo->npackages, 1);
    assert_int_equal(weft__topo_count(topo, WEFT__TOPO_GPU), 1);
    assert_int_equal(weft__topo_count(topo, WEFT__TOPO_NIC), 2);
    assert_int_equal(dev(topo, "cuda0")->numa, 0);
    assert_int_equal(dev(topo, "mlx5_0")->ports, 1);
    assert_int_equal(dev(topo, "mlx5_0")->active_ports, 0);
    /* Both on the root complex of the one socket; the ConnectX port is
     * down, so the onboard Ethernet port is what the GPU can use. */
    assert_int_equal(weft__topo_pci_distance(dev(topo, "cuda0"), dev(topo, "mlx5_0")),
                     WEFT__TOPO_PCI_SAME_ROOT);
    assert_nearest(topo, "cuda0", "eno1", WEFT__TOPO_PCI_SAME_ROOT);
    assert_int_equal(weft__topo_unmet_needs(topo, WEFT_TRANSPORT_NEED_RDMA_PORT, why,
                                            sizeof(why)), WEFT_TRANSPORT_NEED_RDMA_PORT);
    assert_non_null(strstr(why, "mlx5_0: 0 of 1 ports active"));
    assert_int_equal(weft__topo_unmet_needs(topo, WEFT_TRANSPORT_NEED_CUDA_GPU, why, sizeof(why)),
                     0);
    assert_int_equal(weft__topo_unmet_needs(topo, WEFT_TRANSPORT_NEED_GPU_NIC_SWITCH, why,
                                            sizeof(why)), WEFT_TRANSPORT_NEED_GPU_NIC_SWITCH);
    assert_non_null(strstr(why, "no RDMA NIC with an active port"));
    weft__topo_free(topo);
}

static void test_this_vm(void **state)
{
    weft__topo_t *topo = load(FIXTURE("this-vm.xml"));

    assert_int_equal(topo->npackages, 1);
    assert_int_equal(topo->nnuma, 1);
    assert_int_equal(topo->ncores, 2);
    assert_int_equal(weft__topo_count(topo, WEFT__TOPO_GPU), 0);
    assert_int_equal(weft__topo_count(topo, WEFT__TOPO_NIC), 1);
    assert_string_equal(dev(topo, "eth0")->busid, "0000:00:03.0");
    assert_int_equal(dev(topo, "eth0")->numa, 0);
    assert_null(weft__topo_nearest_nic(topo, NULL, NULL));
    weft__topo_free(topo);
}

/* Probing the machine the test runs on must work, whatever it holds. */
static void test_probe(void **state)
{
    weft__topo_t *topo = load(NULL);

    assert_string_equal(topo->source, "this host");
    assert_true(topo->npus >= 1);
    assert_true(topo->ncores >= 1);
    assert_true(topo->nnuma >= 1);
    weft__topo_free(topo);
}

/* ---------------------------------------------------------- bad input */

static void test_bad_file(void **state)
{
    weft__topo_t *topo = NULL;

    assert_int_equal(weft__topo_load_from(WEFT_TEST_SRCDIR "/tests/topo/missing.xml", &topo),
                     WEFT_ERR_INVALID_ARG);
    assert_null(topo);
    assert_non_null(strstr(weft_last_error(), "WEFT_TOPO_FILE"));
    assert_non_null(strstr(weft_last_error(), "missing.xml"));
    /* Not XML at all. */
    assert_int_equal(weft__topo_load_from(WEFT_TEST_SRCDIR "/tests/topo/gen_fixtures.py", &topo),
                     WEFT_ERR_INVALID_ARG);
    assert_null(topo);
    assert_int_equal(weft__topo_load_from("", &topo), WEFT_ERR_INVALID_ARG);
    assert_non_null(strstr(weft_last_error(), "WEFT_TOPO_FILE"));
    assert_int_equal(weft__topo_load_from(NULL, NULL), WEFT_ERR_INVALID_ARG);
    assert_non_null(strstr(weft_last_error(), "out"));
}

static void test_env_file(void **state)
{
    weft__topo_t *topo = NULL;

    setenv("WEFT_TOPO_FILE", FIXTURE("workstation.xml"), 1);
    assert_int_equal(weft__topo_load(&topo), WEFT_SUCCESS);
    unsetenv("WEFT_TOPO_FILE");
    assert_non_null(strstr(topo->source, "workstation.xml"));
    assert_int_equal(weft__topo_count(topo, WEFT__TOPO_GPU), 1);
    weft__topo_free(topo);
}

static void test_unknown_need(void **state)
{
    weft__topo_t *topo = load(FIXTURE("dgx8.xml"));
    char why[256], names[128];

    assert_int_equal(weft__topo_unmet_needs(topo, 1ull << 40, why, sizeof(why)), 1ull << 40);
    assert_non_null(strstr(why, "does not know"));
    weft__topo_needs_string(WEFT_TRANSPORT_NEED_LOCAL_PEER | WEFT_TRANSPORT_NEED_RDMA_PORT,
                            names, sizeof(names));
    assert_string_equal(names, "local-peer,rdma-port");
    weft__topo_needs_string(0, names, sizeof(names));
    assert_string_equal(names, "none");
    weft__topo_free(topo);
}

/* ------------------------------------------------------------ summaries */

static void test_summary(void **state)
{
    weft__topo_t *topo = load(FIXTURE("dgx8.xml"));
    weft__topo_summary_t a, b, c;
    unsigned char wire[WEFT__TOPO_SUMMARY_WIRE];

    weft__topo_summarize(topo, "nodeA", &a);
    assert_int_equal(a.ngpus, 8);
    assert_int_equal(a.nnics, 5);
    assert_int_equal(a.nrdma_active, 4);
    assert_int_equal(a.numa, -1);
    /* Unbound: the machine's first GPU and the NIC nearest to it. */
    assert_string_equal(a.gpu, "0000:13:00.0");
    assert_string_equal(a.nic, "mlx5_0");
    /* A rank bound to socket 1 takes that socket's first GPU. */
    topo->bind_numa = 1;
    weft__topo_summarize(topo, "nodeA", &c);
    assert_string_equal(c.gpu, "0000:33:00.0");
    assert_string_equal(c.nic, "mlx5_2");
    assert_int_equal(c.package, 1);

    /* The machine and the CPUs are this process's, whatever the file. */
    assert_true(c.ncpus >= 1);
    assert_true(c.cpu == -1 || c.ncpus == 1);
    c.cpu = 3;
    c.ncpus = 1;
    weft__topo_summary_encode(&c, wire);
    weft__topo_summary_decode(wire, "nodeA", &b);
    assert_memory_equal(&b, &c, sizeof(b));
    assert_int_equal(weft__topo_shared(&b, &c), WEFT__TOPO_SHARE_NODE | WEFT__TOPO_SHARE_NUMA |
                                                WEFT__TOPO_SHARE_GPU | WEFT__TOPO_SHARE_NIC |
                                                WEFT__TOPO_SHARE_MACHINE | WEFT__TOPO_SHARE_CPU);
    a.cpu = -1;
    assert_int_equal(weft__topo_shared(&a, &c), WEFT__TOPO_SHARE_NODE | WEFT__TOPO_SHARE_MACHINE);
    /* Another node name on the same machine: a simulated host. */
    weft__topo_summary_decode(wire, "nodeB", &b);
    assert_int_equal(weft__topo_shared(&b, &c), WEFT__TOPO_SHARE_MACHINE | WEFT__TOPO_SHARE_CPU);
    snprintf(b.machine, sizeof(b.machine), "another-boot-id");
    assert_int_equal(weft__topo_shared(&b, &c), 0);
    weft__topo_free(topo);
}

/* A rank's summary for test_cores_shared: its node, machine and CPUs. */
static weft__topo_summary_t placed(const char *node, const char *machine, int cpu, int ncpus)
{
    weft__topo_summary_t s;

    memset(&s, 0, sizeof(s));
    snprintf(s.host_id, sizeof(s.host_id), "%s", node);
    snprintf(s.machine, sizeof(s.machine), "%s", machine);
    s.cpu = cpu;
    s.ncpus = ncpus;
    return s;
}

static void test_cores_shared(void **state)
{
    weft__topo_summary_t s[4];
    const weft__topo_summary_t *all[4] = { &s[0], &s[1], &s[2], &s[3] };

    /* Two simulated hosts of one 2-core machine, one rank each, pinned
     * apart: nobody competes. */
    s[0] = placed("h0", "m", 0, 1);
    s[1] = placed("h1", "m", 1, 1);
    assert_false(weft__topo_cores_shared(all, 2, 0));
    assert_false(weft__topo_cores_shared(all, 2, 1));
    /* Two ranks each: every core holds one rank of each host. */
    s[0] = placed("h0", "m", 0, 1);
    s[1] = placed("h0", "m", 1, 1);
    s[2] = placed("h1", "m", 0, 1);
    s[3] = placed("h1", "m", 1, 1);
    for (int r = 0; r < 4; r++)
        assert_true(weft__topo_cores_shared(all, 4, r));
    /* The same pinning on two machines: nobody competes. */
    s[2] = placed("h1", "m2", 0, 1);
    s[3] = placed("h1", "m2", 1, 1);
    for (int r = 0; r < 4; r++)
        assert_false(weft__topo_cores_shared(all, 4, r));
    /* Unpinned: the machine's ranks against the CPUs a rank may use. */
    s[0] = placed("h0", "m", -1, 2);
    s[1] = placed("h0", "m", -1, 2);
    s[2] = placed("h1", "m", -1, 2);
    assert_false(weft__topo_cores_shared(all, 2, 0));
    assert_true(weft__topo_cores_shared(all, 3, 0));
    /* Without boot ids, the node decides what a machine is. */
    s[0] = placed("h0", "", 0, 1);
    s[1] = placed("h1", "", 0, 1);
    s[2] = placed("h0", "", 0, 1);
    assert_false(weft__topo_cores_shared(all, 2, 0));
    assert_true(weft__topo_cores_shared(all, 3, 0));
    (void)state;
}

/* ------------------------------------------------- eligible transports */

static weft__plugin_state_t state_of(const weft__plugin_set_t *set, const char *name,
                                     const char **reason)
{
    for (int i = 0; i < set->ncandidates; i++) {
        if (strcmp(set->candidates[i].name, name))
            continue;
        if (reason)
            *reason = set->candidates[i].reason;
        return set->candidates[i].state;
    }
    fail_msg("no candidate %s", name);
    return WEFT__PLUGIN_BAD_NAME;
}

/* Scans the test plugins against a fixture; transports may force. */
static void scan(const char *fixture, const char *transports, weft__plugin_set_t *set)
{
    weft__topo_t *topo = load(fixture);
    weft__plugin_config_t cfg = {
        .path = TEST_PLUGINS, .transports = transports, .no_default_dirs = 1, .topo = topo,
    };

    assert_int_equal(weft__plugins_open(&cfg, NULL, set), WEFT_SUCCESS);
    weft__topo_free(topo);
}

static void test_eligible(void **state)
{
    weft__plugin_set_t set;
    const char *why = NULL;

    scan(FIXTURE("dgx8.xml"), NULL, &set);
    assert_int_equal(state_of(&set, "sockets", NULL), WEFT__PLUGIN_USABLE);
    assert_int_equal(state_of(&set, "needgdr", NULL), WEFT__PLUGIN_USABLE);
    assert_int_equal(state_of(&set, "oldabi", NULL), WEFT__PLUGIN_USABLE);
    /* Decided after the rendezvous, not here. */
    assert_int_equal(state_of(&set, "needlocal", NULL), WEFT__PLUGIN_USABLE);
    weft__plugins_unload(&set);

    scan(FIXTURE("workstation.xml"), NULL, &set);
    assert_int_equal(state_of(&set, "sockets", NULL), WEFT__PLUGIN_USABLE);
    assert_int_equal(state_of(&set, "needgdr", &why), WEFT__PLUGIN_REFUSED);
    assert_non_null(strstr(why, "not applicable: no GPU shares a PCI switch"));
    weft__plugins_unload(&set);

    scan(FIXTURE("cpu2s.xml"), NULL, &set);
    assert_int_equal(state_of(&set, "sockets", NULL), WEFT__PLUGIN_USABLE);
    assert_int_equal(state_of(&set, "needgdr", &why), WEFT__PLUGIN_REFUSED);
    assert_non_null(strstr(why, "(no GPU)"));
    /* Its needs field lies beyond its struct_size: never read. */
    assert_int_equal(state_of(&set, "oldabi", NULL), WEFT__PLUGIN_USABLE);
    weft__plugins_unload(&set);

    /* Named in WEFT_TRANSPORTS: started anyway; denied: not even opened. */
    scan(FIXTURE("cpu2s.xml"), "needgdr,sockets", &set);
    assert_int_equal(state_of(&set, "needgdr", NULL), WEFT__PLUGIN_USABLE);
    weft__plugins_unload(&set);
    scan(FIXTURE("dgx8.xml"), "^needgdr", &set);
    assert_int_equal(state_of(&set, "needgdr", NULL), WEFT__PLUGIN_DENIED);
    assert_int_equal(state_of(&set, "sockets", NULL), WEFT__PLUGIN_USABLE);
    weft__plugins_unload(&set);
}

/* Printing and exporting never fail on a real shape and say what matters. */
static void test_print(void **state)
{
    weft__topo_t *topo = load(FIXTURE("dgx8.xml"));
    char *text = NULL;
    size_t len = 0;
    FILE *mem = open_memstream(&text, &len);

    assert_non_null(mem);
    weft__topo_print(topo, mem, "");
    assert_int_equal(weft__topo_write_dot(topo, mem), WEFT_SUCCESS);
    assert_int_equal(weft__topo_write_xml(topo, mem), WEFT_SUCCESS);
    fclose(mem);
    assert_non_null(strstr(text, "nearest NIC of cuda5: mlx5_2 (same PCI switch)"));
    assert_non_null(strstr(text, "2 packages, 2 NUMA nodes, 16 cores"));
    assert_non_null(strstr(text, "graph weft_topology {"));
    assert_non_null(strstr(text, "cluster_package1"));
    assert_non_null(strstr(text, "numa1 -- \"dev_0000:43:00.0\""));
    assert_non_null(strstr(text, "<topology"));
    free(text);
    weft__topo_free(topo);
}

static weft__topo_places_t *places(const weft__topo_t *topo, weft__topo_bind_level_t level,
                                   const int *allowed, int nallowed)
{
    weft__topo_places_t *p = NULL;

    assert_int_equal(weft__topo_places(topo, level, allowed, nallowed, &p), WEFT_SUCCESS);
    assert_non_null(p);
    assert_int_equal(p->level, level);
    return p;
}

static void test_places_cpu2s(void **state)
{
    weft__topo_t *topo = load(FIXTURE("cpu2s.xml"));
    static const int middle[] = { 10, 11, 12, 13 }, second[] = { 23, 12, 18 },
                     elsewhere[] = { 100, 101 };
    weft__topo_places_t *p;

    p = places(topo, WEFT__TOPO_BIND_CORE, NULL, 0);
    assert_int_equal(p->nplaces, 24);
    assert_int_equal(p->place[13].index, 13);
    assert_int_equal(p->place[13].ncpus, 1);
    assert_int_equal(p->place[13].cpus[0], 13);
    assert_string_equal(p->place[13].list, "13");
    weft__topo_places_free(p);

    p = places(topo, WEFT__TOPO_BIND_NUMA, NULL, 0);
    assert_int_equal(p->nplaces, 2);
    assert_int_equal(p->place[1].os_index, 1);
    assert_int_equal(p->place[1].ncpus, 12);
    assert_int_equal(p->place[1].cpus[0], 12);
    assert_int_equal(p->place[1].cpus[11], 23);
    assert_string_equal(p->place[1].list, "12-23");
    weft__topo_places_free(p);

    p = places(topo, WEFT__TOPO_BIND_PACKAGE, NULL, 0);
    assert_int_equal(p->nplaces, 2);
    assert_string_equal(p->place[0].list, "0-11");
    weft__topo_places_free(p);

    /* Cut down to the allowed CPUs: a NUMA node keeps only those, one
     * without any is left out, and the places keep their own numbers. */
    p = places(topo, WEFT__TOPO_BIND_NUMA, middle, 4);
    assert_int_equal(p->nplaces, 2);
    assert_string_equal(p->place[0].list, "10-11");
    assert_string_equal(p->place[1].list, "12-13");
    weft__topo_places_free(p);
    p = places(topo, WEFT__TOPO_BIND_CORE, middle, 4);
    assert_int_equal(p->nplaces, 4);
    assert_int_equal(p->place[0].index, 10);
    assert_int_equal(p->place[3].index, 13);
    weft__topo_places_free(p);
    p = places(topo, WEFT__TOPO_BIND_PACKAGE, second, 3);
    assert_int_equal(p->nplaces, 1);
    assert_int_equal(p->place[0].index, 1);
    assert_string_equal(p->place[0].list, "12,18,23");
    weft__topo_places_free(p);
    /* None of the allowed CPUs in the topology: no place, no error. */
    p = places(topo, WEFT__TOPO_BIND_CORE, elsewhere, 2);
    assert_int_equal(p->nplaces, 0);
    weft__topo_places_free(p);
    weft__topo_free(topo);
}

static void test_places_smt(void **state)
{
    weft__topo_t *topo = load(FIXTURE("smt2s.xml"));
    static const int first_threads[] = { 0, 1, 2, 3, 4, 5, 6, 7 };
    weft__topo_places_t *p;

    assert_int_equal(topo->ncores, 8);
    assert_int_equal(topo->npus, 16);
    /* A core is both its hyperthreads, however far apart their numbers. */
    p = places(topo, WEFT__TOPO_BIND_CORE, NULL, 0);
    assert_int_equal(p->nplaces, 8);
    assert_int_equal(p->place[1].ncpus, 2);
    assert_int_equal(p->place[1].cpus[0], 1);
    assert_int_equal(p->place[1].cpus[1], 9);
    assert_string_equal(p->place[1].list, "1,9");
    weft__topo_places_free(p);
    p = places(topo, WEFT__TOPO_BIND_PACKAGE, NULL, 0);
    assert_int_equal(p->nplaces, 2);
    assert_string_equal(p->place[1].list, "4-7,12-15");
    weft__topo_places_free(p);
    /* Restricted to one thread of each core (a cpuset without SMT
     * siblings), each core is that thread. */
    p = places(topo, WEFT__TOPO_BIND_CORE, first_threads, 8);
    assert_int_equal(p->nplaces, 8);
    assert_string_equal(p->place[5].list, "5");
    weft__topo_places_free(p);
    weft__topo_free(topo);
}

static void test_places_bad(void **state)
{
    weft__topo_t *topo = load(FIXTURE("workstation.xml"));
    weft__topo_t flat = { .known = 0, .source = "flat (test)" };
    weft__topo_places_t *p = NULL;

    assert_int_equal(weft__topo_places(NULL, WEFT__TOPO_BIND_CORE, NULL, 0, &p),
                     WEFT_ERR_INVALID_ARG);
    assert_non_null(strstr(weft_last_error(), "topo"));
    assert_int_equal(weft__topo_places(topo, WEFT__TOPO_BIND_CORE, NULL, 0, NULL),
                     WEFT_ERR_INVALID_ARG);
    assert_non_null(strstr(weft_last_error(), "out"));
    assert_int_equal(weft__topo_places(topo, (weft__topo_bind_level_t)7, NULL, 0, &p),
                     WEFT_ERR_INVALID_ARG);
    assert_non_null(strstr(weft_last_error(), "level"));
    assert_int_equal(weft__topo_places(topo, WEFT__TOPO_BIND_CORE, NULL, 3, &p),
                     WEFT_ERR_INVALID_ARG);
    assert_non_null(strstr(weft_last_error(), "allowed"));
    assert_int_equal(weft__topo_places(&flat, WEFT__TOPO_BIND_NUMA, NULL, 0, &p),
                     WEFT_ERR_UNSUPPORTED);
    assert_non_null(strstr(weft_last_error(), "flat (test)"));
    assert_null(p);
    assert_string_equal(weft__topo_bind_level_name(WEFT__TOPO_BIND_NUMA), "NUMA node");
    weft__topo_free(topo);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_dgx8),
        cmocka_unit_test(test_nearness),
        cmocka_unit_test(test_cpu2s),
        cmocka_unit_test(test_workstation),
        cmocka_unit_test(test_this_vm),
        cmocka_unit_test(test_probe),
        cmocka_unit_test(test_bad_file),
        cmocka_unit_test(test_env_file),
        cmocka_unit_test(test_unknown_need),
        cmocka_unit_test(test_summary),
        cmocka_unit_test(test_cores_shared),
        cmocka_unit_test(test_eligible),
        cmocka_unit_test(test_print),
        cmocka_unit_test(test_places_cpu2s),
        cmocka_unit_test(test_places_smt),
        cmocka_unit_test(test_places_bad),
    };

    /* The loader's skips are expected here; keep the output to results. */
    setenv("WEFT_DEBUG", "NONE", 1);
    return cmocka_run_group_tests(tests, NULL, NULL);
}
