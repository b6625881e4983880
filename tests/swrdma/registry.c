/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * registry.c: the fabric's shared registry, one file under /dev/shm that
 * every process of the machine maps, whatever its network namespace
 * (`ip netns exec` gives a new mount namespace but keeps /dev/shm's
 * tmpfs). It holds the hosts (one per network namespace: its ports,
 * GIDs, limits), the processes with their segments, and the tables a NIC
 * consults for each packet: QP number -> owner, key -> memory region.
 *
 * Creation is published with link() so that no process maps a file that
 * is still being initialised; the last process to leave unlinks it under
 * the lock, and one that opened it just before sees st_nlink == 0 and
 * starts again. Processes that died without leaving are reaped by the
 * next one to look: their entries would otherwise hold QP numbers, keys
 * and the host's counters for ever.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "tests/swrdma/swrdma.h"

#define SW_REG_MAGIC 0x737772646d615231ull   /* "swrdmaR1" */
#define SW_REG_VERSION 3

struct sw_self sw = {
    .lock = PTHREAD_MUTEX_INITIALIZER,
    .obj_lock = PTHREAD_MUTEX_INITIALIZER,
    .nic_lock = PTHREAD_MUTEX_INITIALIZER,
    .reg_fd = -1,
};

void sw_shm_mutex_init(pthread_mutex_t *m)
{
    pthread_mutexattr_t a;
    pthread_mutexattr_init(&a);
    pthread_mutexattr_setpshared(&a, PTHREAD_PROCESS_SHARED);
    pthread_mutexattr_setrobust(&a, PTHREAD_MUTEX_ROBUST);
    pthread_mutex_init(m, &a);
    pthread_mutexattr_destroy(&a);
}

/* A holder that died leaves the lock to the next taker: the state it
 * guarded may be half written, which a NIC losing power mid-update would
 * leave too; the fabric carries on. */
void sw_shm_lock(pthread_mutex_t *m)
{
    int rc = pthread_mutex_lock(m);
    if (rc == EOWNERDEAD)
        pthread_mutex_consistent(m);
}

void sw_shm_unlock(pthread_mutex_t *m)
{
    pthread_mutex_unlock(m);
}

void sw_reg_lock(void)
{
    sw_shm_lock(&sw.reg->lock);
}

void sw_reg_unlock(void)
{
    sw_shm_unlock(&sw.reg->lock);
}

static uint64_t proc_start_time(pid_t pid, char *state)
{
    char path[64], buf[1024];
    snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return 0;
    ssize_t n = read(fd, buf, sizeof(buf) - 1);
    close(fd);
    if (n <= 0)
        return 0;
    buf[n] = '\0';
    char *p = strrchr(buf, ')');
    if (!p)
        return 0;
    if (state)
        *state = p[2];
    /* fields after the command: state is field 3, starttime field 22 */
    unsigned long long v = 0;
    int field = 2;
    for (char *tok = p + 1; *tok; tok++) {
        if (*tok == ' ') {
            field++;
            if (field == 22) {
                v = strtoull(tok + 1, NULL, 10);
                break;
            }
        }
    }
    return v;
}

static bool pid_alive(pid_t pid, uint64_t start_time)
{
    if (kill(pid, 0) < 0 && errno == ESRCH)
        return false;
    char state = 0;
    uint64_t st = proc_start_time(pid, &state);
    if (st == 0)
        return true;        /* cannot tell: assume it lives */
    return st == start_time && state != 'Z' && state != 'X';
}

bool sw_proc_alive(uint32_t proc, uint32_t gen)
{
    struct sw_reg_proc *p = &sw.reg->proc[proc];
    if (!p->used || p->gen != gen)
        return false;
    return pid_alive(p->pid, p->start_time);
}

/* Frees what process slot I held, with the registry locked. */
static void release_proc_locked(uint32_t i)
{
    struct sw_registry *r = sw.reg;
    struct sw_reg_proc *p = &r->proc[i];
    for (uint32_t q = 0; q < SW_REG_QPS; q++)
        if (r->qp[q].used && r->qp[q].proc == i && r->qp[q].proc_gen == p->gen) {
            r->qp[q].used = 0;
            if (r->host[p->host].n_qp)
                r->host[p->host].n_qp--;
        }
    for (uint32_t m = 0; m < SW_REG_MRS; m++) {
        struct sw_reg_mr *e = &r->mr[m];
        if (e->taken && e->proc == i && e->proc_gen == p->gen) {
            atomic_fetch_add(&e->seq, 1);
            atomic_store(&e->live, 0);
            atomic_fetch_add(&e->seq, 1);
            e->taken = 0;
            if (r->host[p->host].n_mr)
                r->host[p->host].n_mr--;
        }
    }
    struct sw_reg_host *h = &r->host[p->host];
    if (h->used && h->refs && --h->refs == 0)
        h->used = 0;
    for (unsigned b = 0; b < SW_BUSY_KEYS; b++)
        atomic_store(&p->busy[b], 0);
    p->used = 0;
    if (r->attached)
        r->attached--;
}

void sw_reap_dead(void)
{
    struct sw_registry *r = sw.reg;
    for (uint32_t i = 0; i < SW_REG_PROCS; i++) {
        struct sw_reg_proc *p = &r->proc[i];
        if (!p->used || (sw.attached && i == sw.proc))
            continue;
        if (pid_alive(p->pid, p->start_time))
            continue;
        if (sw.env.verbose)
            sw_log("reaping process %d, gone without closing its device", (int)p->pid);
        unlink(p->seg_name);
        /* Its CQ and QP counters died with it: a host's n_cq, n_pd are
         * process-local in effect, recounted from the living. */
        release_proc_locked(i);
    }
}

static int registry_create(const char *path)
{
    char tmp[sizeof(sw.env.registry) + 32];
    snprintf(tmp, sizeof(tmp), "%s.new%d", path, (int)getpid());
    int fd = open(tmp, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    if (fd < 0)
        return -1;
    if (ftruncate(fd, sizeof(struct sw_registry)) < 0)
        goto err_unlink;
    struct sw_registry *r = mmap(NULL, sizeof(*r), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (r == MAP_FAILED)
        goto err_unlink;
    r->version = SW_REG_VERSION;
    sw_shm_mutex_init(&r->lock);
    sw_shm_mutex_init(&r->atomic_lock);
    r->next_lid = 1;
    r->next_pd = 1;
    r->qp_rotor = 1;
    r->mr_rotor = 1;
    atomic_thread_fence(memory_order_seq_cst);
    r->magic = SW_REG_MAGIC;
    munmap(r, sizeof(*r));
    if (link(tmp, path) < 0 && errno != EEXIST)
        goto err_unlink;
    unlink(tmp);
    close(fd);
    return 0;
err_unlink:
    unlink(tmp);
    close(fd);
    return -1;
}

static int registry_open(void)
{
    const char *path = sw.env.registry;
    for (int attempt = 0; attempt < 100; attempt++) {
        int fd = open(path, O_RDWR | O_CLOEXEC);
        if (fd < 0) {
            if (errno != ENOENT || registry_create(path) < 0) {
                sw_log("cannot open the registry %s: %m", path);
                return -1;
            }
            continue;
        }
        struct stat st;
        if (fstat(fd, &st) < 0 || st.st_size != (off_t)sizeof(struct sw_registry)) {
            sw_log("%s is not a registry of this build (size %lld, want %zu): remove it",
                   path, (long long)st.st_size, sizeof(struct sw_registry));
            close(fd);
            return -1;
        }
        struct sw_registry *r = mmap(NULL, sizeof(*r), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
        if (r == MAP_FAILED) {
            sw_log("cannot map the registry %s: %m", path);
            close(fd);
            return -1;
        }
        if (r->magic != SW_REG_MAGIC || r->version != SW_REG_VERSION) {
            sw_log("%s is not a registry of this build: remove it", path);
            munmap(r, sizeof(*r));
            close(fd);
            return -1;
        }
        sw_shm_lock(&r->lock);
        if (fstat(fd, &st) == 0 && st.st_nlink == 0) {
            /* the last user left and unlinked it while we opened it */
            sw_shm_unlock(&r->lock);
            munmap(r, sizeof(*r));
            close(fd);
            continue;
        }
        sw.reg = r;
        sw.reg_fd = fd;
        return 0;       /* locked */
    }
    sw_log("the registry %s keeps vanishing", path);
    return -1;
}

static int host_join_locked(void)
{
    struct sw_registry *r = sw.reg;
    uint64_t netns = sw_netns_id();
    struct sw_conf conf;
    if (sw_config_load(&conf) < 0)
        return -1;
    for (uint32_t h = 0; h < SW_REG_HOSTS; h++) {
        if (r->host[h].used && r->host[h].netns == netns) {
            if (memcmp(&r->host[h].conf, &conf, sizeof(conf)) && getenv("WEFT_SWRDMA_CONFIG"))
                sw_log("this host's device exists already: WEFT_SWRDMA_CONFIG of this "
                       "process is ignored (give concurrent jobs their own "
                       "WEFT_SWRDMA_REGISTRY)");
            r->host[h].refs++;
            sw.host = h;
            return 0;
        }
    }
    for (uint32_t h = 0; h < SW_REG_HOSTS; h++) {
        if (r->host[h].used)
            continue;
        memset(&r->host[h], 0, sizeof(r->host[h]));
        if (sw_host_build(&r->host[h], &conf, netns) < 0)
            return -1;
        r->host[h].used = 1;
        r->host[h].refs = 1;
        sw.host = h;
        return 0;
    }
    sw_log("more than %d hosts on this fabric", SW_REG_HOSTS);
    return -1;
}

static int proc_join_locked(void)
{
    struct sw_registry *r = sw.reg;
    for (uint32_t i = 0; i < SW_REG_PROCS; i++) {
        struct sw_reg_proc *p = &r->proc[i];
        if (p->used)
            continue;
        p->gen++;
        p->pid = getpid();
        p->start_time = proc_start_time(p->pid, NULL);
        p->host = sw.host;
        atomic_store(&p->lost, 0);
        for (unsigned b = 0; b < SW_BUSY_KEYS; b++)
            atomic_store(&p->busy[b], 0);
        snprintf(p->seg_name, sizeof(p->seg_name), "%s.p%d.%u", sw.env.registry,
                 (int)p->pid, p->gen);
        p->used = 1;
        r->attached++;
        sw.proc = i;
        sw.proc_gen = p->gen;
        return 0;
    }
    sw_log("more than %d processes on this fabric", SW_REG_PROCS);
    return -1;
}

/* Joins the fabric: registry, host, process slot, segment. With sw.lock. */
int sw_attach(void)
{
    if (sw.attached)
        return 0;
    if (sw_env_load(&sw.env) < 0)
        return -1;
    sw.pid = getpid();
    /* Peers write into this process with process_vm_writev, which Yama's
     * ptrace_scope=1 allows only to ancestors unless we say so. */
    prctl(PR_SET_PTRACER, PR_SET_PTRACER_ANY, 0, 0, 0);
    if (registry_open() < 0)
        return -1;
    sw_reap_dead();
    if (host_join_locked() < 0)
        goto err_unlock;
    if (proc_join_locked() < 0)
        goto err_host;
    sw.attached = true;
    sw_reg_unlock();
    const struct sw_limits *lim = &sw.reg->host[sw.host].conf.lim;
    if (sw_seg_create(lim) < 0)
        goto err_detach;
    sw.qps = calloc(lim->max_qp, sizeof(*sw.qps));
    sw.cqs = calloc(lim->max_cq, sizeof(*sw.cqs));
    sw.mrs = calloc(SW_REG_MRS, sizeof(*sw.mrs));
    if (!sw.qps || !sw.cqs || !sw.mrs)
        goto err_detach;
    return 0;
err_host:
    if (--sw.reg->host[sw.host].refs == 0)
        sw.reg->host[sw.host].used = 0;
err_unlock:
    if (sw.reg->attached == 0)
        unlink(sw.env.registry);
    sw_reg_unlock();
    munmap(sw.reg, sizeof(*sw.reg));
    close(sw.reg_fd);
    sw.reg = NULL;
    sw.reg_fd = -1;
    return -1;
err_detach:
    sw_detach();
    return -1;
}

/* Leaves the fabric. With sw.lock; the NIC thread is stopped. */
void sw_detach(void)
{
    if (!sw.attached)
        return;
    sw_seg_unmap_peers();
    sw_reg_lock();
    /* the dead would keep the registry alive after the last live process */
    sw_reap_dead();
    release_proc_locked(sw.proc);
    bool last = sw.reg->attached == 0;
    if (last)
        unlink(sw.env.registry);
    sw_reg_unlock();
    sw_seg_destroy();
    munmap(sw.reg, sizeof(*sw.reg));
    close(sw.reg_fd);
    sw.reg = NULL;
    sw.reg_fd = -1;
    free(sw.qps);
    free(sw.cqs);
    free(sw.mrs);
    sw.qps = NULL;
    sw.cqs = NULL;
    sw.mrs = NULL;
    sw.attached = false;
}

int sw_reg_count(uint32_t *counter, uint32_t limit, int delta)
{
    int rc = 0;
    sw_reg_lock();
    if (delta > 0 && *counter + (uint32_t)delta > limit)
        rc = -1;
    else if (delta < 0 && *counter < (uint32_t)-delta)
        *counter = 0;
    else
        *counter += (uint32_t)delta;
    sw_reg_unlock();
    return rc;
}

uint32_t sw_reg_new_pd(void)
{
    sw_reg_lock();
    uint32_t id = sw.reg->next_pd++;
    if (sw.reg->next_pd == 0)
        sw.reg->next_pd = 1;
    sw_reg_unlock();
    return id;
}

int sw_reg_qp_alloc(uint32_t slot, uint32_t *qpn)
{
    struct sw_registry *r = sw.reg;
    int rc = -1;
    sw_reg_lock();
    for (uint32_t n = 0; n < SW_REG_QPS; n++) {
        uint32_t i = (r->qp_rotor + n) % SW_REG_QPS;
        if (i == 0 || r->qp[i].used)
            continue;
        r->qp_rotor = i + 1;
        /* a new generation each time: a stale QP number misses */
        uint32_t g = (r->qp_gen[i] % 1023) + 1;
        r->qp_gen[i] = g;
        struct sw_reg_qp *e = &r->qp[i];
        e->qpn = g << SW_QPN_IDX_BITS | i;
        e->proc = sw.proc;
        e->proc_gen = sw.proc_gen;
        e->slot = slot;
        e->host = sw.host;
        e->gen = g;
        e->used = 1;
        *qpn = e->qpn;
        rc = 0;
        break;
    }
    sw_reg_unlock();
    return rc;
}

void sw_reg_qp_free(uint32_t qpn)
{
    uint32_t i = qpn & ((1u << SW_QPN_IDX_BITS) - 1);
    sw_reg_lock();
    if (sw.reg->qp[i].used && sw.reg->qp[i].qpn == qpn)
        sw.reg->qp[i].used = 0;
    sw_reg_unlock();
}

bool sw_reg_qp_find(uint32_t qpn, struct sw_reg_qp *out)
{
    uint32_t i = qpn & ((1u << SW_QPN_IDX_BITS) - 1);
    if (qpn >> 24)
        return false;
    sw_reg_lock();
    *out = sw.reg->qp[i];
    sw_reg_unlock();
    return out->used && out->qpn == qpn;
}

int sw_reg_mr_alloc(uint32_t *idx, uint32_t *key)
{
    struct sw_registry *r = sw.reg;
    int rc = -1;
    sw_reg_lock();
    for (uint32_t n = 0; n < SW_REG_MRS; n++) {
        uint32_t i = (r->mr_rotor + n) % SW_REG_MRS;
        struct sw_reg_mr *e = &r->mr[i];
        if (i == 0 || e->taken)
            continue;
        r->mr_rotor = i + 1;
        /* the low byte changes with each use, as an mkey's does: a key
         * kept past its deregistration misses even if the index returns */
        e->taken = 1;
        e->key = i << 8 | ((e->key + 1) & 0xff);
        e->proc = sw.proc;
        e->proc_gen = sw.proc_gen;
        *idx = i;
        *key = e->key;
        rc = 0;
        break;
    }
    sw_reg_unlock();
    return rc;
}

void sw_reg_mr_publish(uint32_t idx, const struct sw_reg_mr *f)
{
    struct sw_reg_mr *e = &sw.reg->mr[idx];
    atomic_fetch_add(&e->seq, 1);
    atomic_thread_fence(memory_order_seq_cst);
    e->key = f->key;
    e->proc = f->proc;
    e->proc_gen = f->proc_gen;
    e->host = f->host;
    e->pd = f->pd;
    e->access = f->access;
    e->addr = f->addr;
    e->length = f->length;
    e->iova = f->iova;
    e->pfn_off = f->pfn_off;
    e->npages = f->npages;
    atomic_store(&e->live, 1);
    atomic_fetch_add(&e->seq, 1);
}

/* Stops a key at once: after this returns no NIC touches the region. A
 * NIC that read the entry before it died has marked the key busy first,
 * so either it sees the entry dead or we see its mark and wait. */
void sw_reg_mr_kill(uint32_t idx)
{
    struct sw_registry *r = sw.reg;
    struct sw_reg_mr *e = &r->mr[idx];
    uint32_t key = e->key;
    atomic_fetch_add(&e->seq, 1);
    atomic_store(&e->live, 0);
    atomic_fetch_add(&e->seq, 1);
    atomic_thread_fence(memory_order_seq_cst);
    for (uint32_t p = 0; p < SW_REG_PROCS; p++) {
        if (!r->proc[p].used)
            continue;
        for (unsigned b = 0; b < SW_BUSY_KEYS; b++) {
            unsigned spins = 0;
            while (atomic_load(&r->proc[p].busy[b]) == key) {
                if (!sw_proc_alive(p, r->proc[p].gen))
                    break;
                if (++spins > 100) {
                    struct timespec ts = { 0, 50000 };
                    nanosleep(&ts, NULL);
                }
            }
        }
    }
    sw_reg_lock();
    e->taken = 0;
    sw_reg_unlock();
}

bool sw_reg_mr_read(uint32_t key, struct sw_reg_mr *out)
{
    uint32_t idx = key >> 8;
    if (idx == 0 || idx >= SW_REG_MRS)
        return false;
    struct sw_reg_mr *e = &sw.reg->mr[idx];
    for (;;) {
        uint32_t s1 = atomic_load(&e->seq);
        if (s1 & 1)
            continue;
        out->key = e->key;
        out->proc = e->proc;
        out->proc_gen = e->proc_gen;
        out->host = e->host;
        out->pd = e->pd;
        out->access = e->access;
        out->addr = e->addr;
        out->length = e->length;
        out->iova = e->iova;
        out->pfn_off = e->pfn_off;
        out->npages = e->npages;
        atomic_store_explicit(&out->live, atomic_load(&e->live), memory_order_relaxed);
        atomic_thread_fence(memory_order_acquire);
        if (atomic_load(&e->seq) == s1)
            break;
    }
    return atomic_load_explicit(&out->live, memory_order_relaxed) && out->key == key;
}

/* Marks KEY as being touched by this process's NIC (slot I). */
int sw_busy_enter(unsigned i, uint32_t key)
{
    atomic_store(&sw.reg->proc[sw.proc].busy[i], key);
    return 0;
}

void sw_busy_leave(unsigned i)
{
    atomic_store(&sw.reg->proc[sw.proc].busy[i], 0);
}
