/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * segment.c: each process's shared segment, the part of its "NIC" that
 * other processes' NICs reach into: the QP slots (state, attributes, the
 * receive queue ring), the CQ rings, the doorbell its NIC thread sleeps
 * on, a ring of async events raised from outside, and the page-frame
 * records of its memory regions. Slots are fixed-size, sized by the
 * host's limits, in a sparse tmpfs file: only what is used takes memory.
 * Only the owner allocates slots; others only read and write inside them.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/futex.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "tests/swrdma/swrdma.h"

#define SW_SEG_MAGIC 0x737772646d615331ull
#define SW_PFN_ARENA (64ull << 20)     /* page records of 32 GiB of regions */

static uint64_t align_up(uint64_t v, uint64_t a)
{
    return (v + a - 1) / a * a;
}

static uint32_t pow2_at_least(uint32_t v)
{
    uint32_t p = 1;
    while (p < v)
        p <<= 1;
    return p;
}

int sw_seg_create(const struct sw_limits *lim)
{
    struct sw_seg hdr = { 0 };
    uint64_t off = align_up(sizeof(struct sw_seg), 4096);
    hdr.max_qp = lim->max_qp;
    hdr.max_cq = lim->max_cq;
    hdr.qp_off = off;
    off = align_up(off + (uint64_t)lim->max_qp * sizeof(struct sw_sqp), 4096);
    hdr.rq_stride = (uint32_t)(sizeof(struct sw_rwqe) + lim->max_sge * sizeof(struct ibv_sge));
    hdr.rq_slot_bytes = align_up((uint64_t)pow2_at_least(lim->max_qp_wr) * hdr.rq_stride, 4096);
    hdr.rq_off = off;
    off += hdr.rq_slot_bytes * lim->max_qp;
    hdr.cq_off = off;
    off = align_up(off + (uint64_t)lim->max_cq * sizeof(struct sw_scq), 4096);
    hdr.cq_cap_max = pow2_at_least(lim->max_cqe + 1);
    hdr.cqe_slot_bytes = align_up((uint64_t)hdr.cq_cap_max * sizeof(struct sw_cqe), 4096);
    hdr.cqe_off = off;
    off += hdr.cqe_slot_bytes * lim->max_cq;
    hdr.pfn_off = off;
    hdr.pfn_bytes = SW_PFN_ARENA;
    off += SW_PFN_ARENA;

    const char *name = sw.reg->proc[sw.proc].seg_name;
    int fd = open(name, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (fd < 0) {
        sw_log("cannot create %s: %m", name);
        return -1;
    }
    if (ftruncate(fd, (off_t)off) < 0) {
        sw_log("cannot size %s to %llu bytes: %m", name, (unsigned long long)off);
        goto err_unlink;
    }
    struct sw_seg *s = mmap(NULL, off, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (s == MAP_FAILED) {
        sw_log("cannot map %s: %m", name);
        goto err_unlink;
    }
    close(fd);
    *s = hdr;
    s->pid = sw.pid;
    s->proc = sw.proc;
    /* arena offset 0 means "not tracked": start its allocations past it */
    s->pfn_used = 8;
    sw_shm_mutex_init(&s->ev_lock);
    atomic_thread_fence(memory_order_seq_cst);
    s->magic = SW_SEG_MAGIC;
    sw.seg = s;
    sw.seg_size = off;
    sw.reg->proc[sw.proc].seg_size = off;
    return 0;
err_unlink:
    unlink(name);
    close(fd);
    return -1;
}

void sw_seg_destroy(void)
{
    if (!sw.seg)
        return;
    unlink(sw.reg->proc[sw.proc].seg_name);
    munmap(sw.seg, sw.seg_size);
    sw.seg = NULL;
}

/* The NIC thread's view of other processes' segments, by process slot. */
static struct peer_map {
    uint32_t gen;
    struct sw_seg *seg;
    size_t size;
    pid_t pid;
} peers[SW_REG_PROCS];

struct sw_seg *sw_seg_map_peer(uint32_t proc, uint32_t gen, pid_t *pid)
{
    if (proc >= SW_REG_PROCS)
        return NULL;
    if (proc == sw.proc && gen == sw.proc_gen) {
        *pid = sw.pid;
        return sw.seg;
    }
    struct peer_map *m = &peers[proc];
    if (m->seg && m->gen == gen) {
        *pid = m->pid;
        return m->seg;
    }
    if (m->seg) {
        munmap(m->seg, m->size);
        m->seg = NULL;
    }
    struct sw_reg_proc *p = &sw.reg->proc[proc];
    char name[sizeof(p->seg_name)];
    sw_reg_lock();
    bool ok = p->used && p->gen == gen;
    memcpy(name, p->seg_name, sizeof(name));
    pid_t ppid = p->pid;
    sw_reg_unlock();
    if (!ok)
        return NULL;
    int fd = open(name, O_RDWR | O_CLOEXEC);
    if (fd < 0)
        return NULL;
    struct stat st;
    if (fstat(fd, &st) < 0 || st.st_size < (off_t)sizeof(struct sw_seg)) {
        close(fd);
        return NULL;
    }
    struct sw_seg *s = mmap(NULL, st.st_size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    close(fd);
    if (s == MAP_FAILED)
        return NULL;
    if (s->magic != SW_SEG_MAGIC || s->pid != ppid) {
        munmap(s, st.st_size);
        return NULL;
    }
    m->seg = s;
    m->size = st.st_size;
    m->gen = gen;
    m->pid = ppid;
    *pid = ppid;
    return s;
}

void sw_seg_unmap_peers(void)
{
    for (unsigned i = 0; i < SW_REG_PROCS; i++)
        if (peers[i].seg) {
            munmap(peers[i].seg, peers[i].size);
            peers[i].seg = NULL;
        }
}

/* Rings S's doorbell: the futex wake is paid only when its NIC sleeps. */
void sw_seg_wake(struct sw_seg *s)
{
    atomic_fetch_add(&s->doorbell, 1);
    if (atomic_load(&s->sleeping))
        syscall(SYS_futex, &s->doorbell, FUTEX_WAKE, INT_MAX, NULL, NULL, 0);
}

/* Hands an async event to the owner of S, whose NIC thread turns it into
 * an ibv_async_event of the right context, as a kernel's interrupt
 * handler would. */
void sw_seg_post_event(struct sw_seg *s, uint32_t type, uint32_t kind, uint32_t slot,
                       uint32_t gen)
{
    sw_shm_lock(&s->ev_lock);
    if (s->ev_tail - s->ev_head < SW_EV_RING) {
        struct sw_ev_req *e = &s->ev[s->ev_tail % SW_EV_RING];
        e->type = type;
        e->kind = kind;
        e->slot = slot;
        e->gen = gen;
        s->ev_tail++;
    }
    sw_shm_unlock(&s->ev_lock);
    sw_seg_wake(s);
}

/* The page-record arena: first fit over a small list of free extents,
 * touched only by the owner. When it is exhausted a region goes
 * untracked rather than failing to register. */
#define SW_PFN_FREE_MAX 256
static struct { uint64_t off, n; } pfn_free[SW_PFN_FREE_MAX];
static unsigned pfn_nfree;
static pthread_mutex_t pfn_lock = PTHREAD_MUTEX_INITIALIZER;

uint64_t sw_seg_pfn_alloc(uint64_t n)
{
    uint64_t bytes = n * sizeof(uint64_t), off = 0;
    pthread_mutex_lock(&pfn_lock);
    for (unsigned i = 0; i < pfn_nfree; i++) {
        if (pfn_free[i].n < bytes)
            continue;
        off = pfn_free[i].off;
        pfn_free[i].off += bytes;
        pfn_free[i].n -= bytes;
        if (pfn_free[i].n == 0)
            pfn_free[i] = pfn_free[--pfn_nfree];
        break;
    }
    if (!off && sw.seg->pfn_used + bytes <= sw.seg->pfn_bytes) {
        off = sw.seg->pfn_off + sw.seg->pfn_used;
        sw.seg->pfn_used += bytes;
    }
    pthread_mutex_unlock(&pfn_lock);
    return off;
}

void sw_seg_pfn_free(uint64_t off, uint64_t n)
{
    if (!off)
        return;
    pthread_mutex_lock(&pfn_lock);
    if (pfn_nfree < SW_PFN_FREE_MAX) {
        pfn_free[pfn_nfree].off = off;
        pfn_free[pfn_nfree].n = n * sizeof(uint64_t);
        pfn_nfree++;
    }
    pthread_mutex_unlock(&pfn_lock);
}
