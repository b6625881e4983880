/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * swrdma.c: the software RDMA device, a test double of libibverbs.so.1.
 *
 * What it is. No machine that builds or tests weft has an RDMA NIC, so
 * tests/swrdma/ builds a stand-in for rdma-core's libibverbs.so.1 that
 * behaves like one RDMA NIC per host: the same exported names at the
 * same symbol versions (rdma-core v44), the same extended context whose
 * ops carry post_send, post_recv, poll_cq and req_notify_cq for verbs.h's
 * inline functions, and the semantics the verbs man pages give
 * reliable-connected and unreliable-datagram QPs and address handles on
 * a ConnectX, strictly: states, keys, ordering, limits, error codes and
 * completion fields. It is never installed and
 * nothing links it but its own tests: a program gets it only by asking.
 *
 * Where it is. Built by `make` (and `make check`) as
 *     tests/swrdma/.libs/libibverbs.so.1              (IBVERBS_1.0 .. 1.14)
 *     tests/swrdma/no-1.13/.libs/libibverbs.so.1      (up to IBVERBS_1.12)
 *     tests/swrdma/no-1.12/.libs/libibverbs.so.1      (up to IBVERBS_1.11)
 * in the build tree, each with SONAME libibverbs.so.1. weft's ib-verbs
 * plugin loads it with WEFT_IBVERBS_LIB=$builddir/tests/swrdma/.libs/
 * libibverbs.so.1; the variants are rdma-core releases without
 * ibv_reg_dmabuf_mr (1.12) or ibv_is_fork_initialized (1.13).
 *
 * What a host is. Each network namespace is a host with one device,
 * "swrdma0", with one RoCE v2 port whose GIDs are the namespace's
 * addresses (host.c). Processes of one namespace share the device: its
 * QP numbers, keys and limits, as processes of a node share its HCA.
 * WEFT_SWRDMA_CONFIG (config.c) changes the device, for all processes of
 * the host, set by the first one to open it:
 *     ports=N  link=roce|ib  mtu=BYTES  max_mtu=BYTES  portN.link=..
 *     portN.mtu=..  gids=v2|v1v2  max_qp=  max_qp_wr=  max_sge=  max_cq=
 *     max_cqe=  max_mr=  max_pd=  max_inline=  max_rd_atom=
 *     max_init_rd_atom=  comp_vectors=  max_mr_size=
 * e.g. WEFT_SWRDMA_CONFIG="link=ib,mtu=2048,max_qp=8" or =@FILE.
 * InfiniBand ports are LID-addressed; the registry hands out LIDs.
 *
 * How data moves. One-sidedly: a NIC thread in each process (nic.c)
 * executes its QPs' send queues in order and writes the payload straight
 * into the target's registered memory with process_vm_writev(), takes
 * the target's posted receive from its shared segment and writes the
 * target's completion into its shared CQ (exec.c; ud.c for datagrams,
 * which carry their 40 bytes of GRH and are lost silently where a
 * connection would retry; ah.c for address handles); the target
 * process does nothing, so a program may spin on memory its peer fills.
 * Its owner may grow or shrink a CQ with ibv_resize_cq() while NICs of
 * any process write into it (cq.c), as weft's plugin grows its CQ. A
 * registry under /dev/shm (registry.c; `ip netns exec` keeps /dev/shm)
 * maps GIDs and LIDs to hosts, QP numbers to processes, keys to regions.
 * WEFT_SWRDMA_REGISTRY=NAME gives a job a fabric of its own (a file
 * /dev/shm/NAME, or a path); the default is /dev/shm/weft-swrdma-UID.
 * Concurrent jobs that configure the device differently need their own.
 *
 * Faults and checks. WEFT_SWRDMA_FAULTS (fault.c) fails the Nth request,
 * delays requests, forces RNR storms, takes a port down, takes this
 * process off the fabric. The checker (check.c, WEFT_SWRDMA_CHECK,
 * WEFT_SWRDMA_CHECK_LOG) reports buffers changed before completion,
 * regions deregistered while in use, PDs freed while busy, pages
 * remapped under a registration, and leaks. WEFT_SWRDMA_VERBOSE=1 says
 * more about the fabric.
 *
 * What it is not. RC and UD only (no UC, SRQ, memory windows,
 * multicast, extended CQs or QPs, rereg_mr, device memory, ODP);
 * dma-buf regions only where the exporter allows mmap; no
 * congestion, reordering or loss other than what is injected. The
 * IBVERBS_1.0 versions exist and fail with ENOSYS.
 *
 * This file: the library's life in a process: joining the fabric lazily
 * (ibv_get_device_list), leaving it at exit, and fork().
 */
#include "config.h"

#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

#include "tests/swrdma/swrdma.h"

static void at_prepare(void)
{
    pthread_mutex_lock(&sw.nic_lock);
    pthread_mutex_lock(&sw.lock);
    pthread_mutex_lock(&sw.obj_lock);
}

static void at_parent(void)
{
    pthread_mutex_unlock(&sw.obj_lock);
    pthread_mutex_unlock(&sw.lock);
    pthread_mutex_unlock(&sw.nic_lock);
}

/* The child is not on the fabric: its parent's QPs, keys and NIC thread
 * stay the parent's (a child using them is reported). It may open the
 * device itself and join as a process of its own. */
/* What a forked child inherited of its parent's device (at_child), one
 * entry per generation of fork (a child of a child keeps both). */
#define INHERITED_MAX 8
static struct {
    struct sw_device *dev;
    struct sw_context *contexts;
    void *qps, *cqs, *mrs;
} inherited[INHERITED_MAX];
static int ninherited;

static void at_child(void)
{
    pthread_mutex_init(&sw.obj_lock, NULL);
    pthread_mutex_init(&sw.lock, NULL);
    pthread_mutex_init(&sw.nic_lock, NULL);
    if (!sw.attached)
        return;
    /* The parent's objects stay allocated, and reachable from here: the
     * program may still hold their pointers, and a use of them must be
     * refused, not read freed memory. */
    int g = ninherited < INHERITED_MAX ? ninherited++ : INHERITED_MAX - 1;

    inherited[g].dev = sw.dev;
    inherited[g].contexts = sw.contexts;
    inherited[g].qps = sw.qps;
    inherited[g].cqs = sw.cqs;
    inherited[g].mrs = sw.mrs;
    if (sw.reg_fd >= 0)
        close(sw.reg_fd);
    sw.reg_fd = -1;
    sw.attached = false;
    sw.nic_running = false;
    sw.reg = NULL;
    sw.seg = NULL;
    sw.dev = NULL;
    sw.contexts = NULL;
    sw.lists_out = 0;
    sw.dev_opened = false;
    sw.qps = NULL;
    sw.cqs = NULL;
    sw.mrs = NULL;
    sw.pinned_pages = 0;
    atomic_store(&sw.wr_count, 0);
    atomic_store(&sw.lost, false);
    sw.port_taken_down = sw.port_brought_up = false;
}

__attribute__((constructor)) static void sw_init(void)
{
    pthread_atfork(at_prepare, at_parent, at_child);
}

__attribute__((destructor)) static void sw_fini(void)
{
    if (!sw.attached || sw.pid != getpid())
        return;
    sw_check_exit();
    /* the NIC thread takes sw.lock: stop it before taking it here */
    sw_nic_stop();
    pthread_mutex_lock(&sw.lock);
    sw_detach();
    /* The device outlives its lists, as rdma-core's do, until the library
     * goes: unloaded with no context open, it is given back. */
    if (!sw.contexts) {
        free(sw.dev);
        sw.dev = NULL;
    }
    pthread_mutex_unlock(&sw.lock);
}
