/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * mr.c: memory registration. What the kernel's ib_umem_get() checks is
 * checked here: access flags (remote write and atomic need local write,
 * on-demand paging is not offered), address and IOVA on the same page
 * offset, the pages present and writable where the access needs it
 * (they are faulted in now, as pinning does), and the pages pinned by
 * the process against RLIMIT_MEMLOCK unless it holds CAP_IPC_LOCK.
 *
 * A real NIC keeps the physical pages it pinned: memory freed and mapped
 * again at the same address after registration is not what it writes to,
 * and the program silently loses data. To see that here, the page frame
 * of each page is recorded at registration (readable from
 * /proc/PID/pagemap with CAP_SYS_ADMIN; without it nothing is recorded
 * and only unmapped pages are caught) and compared at each access. The
 * kernel may also move a page that nobody pinned (compaction, khugepaged,
 * copy-on-write after fork); to tell that from a new mapping, the range
 * is marked MADV_DONTDUMP at registration, a flag a new mapping lacks.
 * The range is also kept out of core dumps, the one visible side effect.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/capability.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "tests/swrdma/swrdma.h"

#ifndef MADV_POPULATE_READ
#define MADV_POPULATE_READ 22
#define MADV_POPULATE_WRITE 23
#endif

#define SW_PFN_MASK ((1ull << 55) - 1)
#define SW_WRITABLE (IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_ATOMIC)

static bool has_ipc_lock(void)
{
    struct __user_cap_header_struct hdr = { _LINUX_CAPABILITY_VERSION_3, 0 };
    struct __user_cap_data_struct data[2];
    if (syscall(SYS_capget, &hdr, data) < 0)
        return false;
    return data[CAP_IPC_LOCK / 32].effective & (1u << (CAP_IPC_LOCK % 32));
}

static uint64_t page_count(uint64_t addr, uint64_t len)
{
    return ((addr + len + 4095) >> 12) - (addr >> 12);
}

/* Whether [START, END) is mapped, with write permission if WRITE. */
static bool range_mapped(uintptr_t start, uintptr_t end, bool write)
{
    FILE *f = fopen("/proc/self/maps", "re");
    if (!f)
        return true;
    char line[512];
    uintptr_t at = start;
    while (at < end && fgets(line, sizeof(line), f)) {
        unsigned long lo, hi;
        char perms[5];
        if (sscanf(line, "%lx-%lx %4s", &lo, &hi, perms) != 3 || hi <= at)
            continue;
        if (lo > at || (write && perms[1] != 'w') || perms[0] != 'r')
            break;
        at = hi;
    }
    fclose(f);
    return at >= end;
}

/* Faults the pages in as get_user_pages() would, or says why it cannot. */
static int populate(void *addr, size_t len, unsigned access)
{
    char *start = (char *)((uintptr_t)addr & ~4095ul);
    size_t span = page_count((uintptr_t)addr, len) * 4096;
    bool write = access & SW_WRITABLE;
    if (madvise(start, span, write ? MADV_POPULATE_WRITE : MADV_POPULATE_READ) == 0)
        return 0;
    /* EINVAL: a kernel before 5.14, write to a read-only mapping, or
     * memory it will not populate; the mapping tells which */
    if (errno == EINVAL && range_mapped((uintptr_t)start, (uintptr_t)start + span, write))
        return 0;
    return EFAULT;
}

static int read_pfns(pid_t pid, uint64_t va, uint64_t npages, uint64_t *out)
{
    char path[64];
    snprintf(path, sizeof(path), "/proc/%d/pagemap", (int)pid);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -1;
    ssize_t want = (ssize_t)(npages * 8);
    ssize_t n = pread(fd, out, (size_t)want, (off_t)((va >> 12) * 8));
    close(fd);
    if (n != want)
        return -1;
    for (uint64_t i = 0; i < npages; i++)
        out[i] = out[i] >> 63 ? out[i] & SW_PFN_MASK : 0;
    return 0;
}

static struct sw_mr *reg(struct ibv_pd *ibpd, void *addr, size_t length, uint64_t iova,
                         unsigned access, void *nic_map, size_t nic_len)
{
    int err = EINVAL;
    if (!ibpd || !sw_ctx_ok(ibpd->context))
        goto err;
    struct sw_pd *pd = SW_CONTAINER(ibpd, struct sw_pd, pd);
    struct sw_reg_host *h = &sw.reg->host[sw.host];
    /* optional flags are dropped where unsupported, as libibverbs does */
    access &= ~(unsigned)IBV_ACCESS_OPTIONAL_RANGE;
    if (access & IBV_ACCESS_ON_DEMAND) {
        err = EOPNOTSUPP;
        goto err;
    }
    unsigned known = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ |
                     IBV_ACCESS_REMOTE_ATOMIC | IBV_ACCESS_MW_BIND | IBV_ACCESS_ZERO_BASED |
                     IBV_ACCESS_HUGETLB;
    if (access & ~known)
        goto err;
    if ((access & (IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_ATOMIC)) &&
        !(access & IBV_ACCESS_LOCAL_WRITE))
        goto err;
    uintptr_t a = (uintptr_t)addr;
    if (length == 0 || a + length < a || length > h->conf.lim.max_mr_size)
        goto err;
    if ((a & 4095) != (iova & 4095))
        goto err;
    uint64_t npages = page_count(a, length);
    if (!has_ipc_lock()) {
        struct rlimit rl;
        if (getrlimit(RLIMIT_MEMLOCK, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY &&
            (sw.pinned_pages + npages) * 4096 > rl.rlim_cur) {
            err = ENOMEM;
            goto err;
        }
    }
    if ((err = populate(addr, length, access)))
        goto err;
    if (sw_reg_count(&h->n_mr, h->conf.lim.max_mr, 1) < 0) {
        err = ENOMEM;
        goto err;
    }
    struct sw_mr *mr = calloc(1, sizeof(*mr));
    if (!mr) {
        err = ENOMEM;
        goto err_count;
    }
    uint32_t idx, key;
    if (sw_reg_mr_alloc(&idx, &key) < 0) {
        err = ENOMEM;
        goto err_free;
    }
    struct sw_reg_mr f;
    memset(&f, 0, sizeof(f));
    f.key = key;
    f.proc = sw.proc;
    f.proc_gen = sw.proc_gen;
    f.host = sw.host;
    f.pd = pd->id;
    f.access = access;
    f.addr = a;
    f.length = length;
    f.iova = iova;
    f.npages = (uint32_t)SW_MIN(npages, UINT32_MAX);
    f.pfn_off = npages <= UINT32_MAX ? sw_seg_pfn_alloc(npages) : 0;
    if (f.pfn_off) {
        uint64_t *pfn = sw_seg_pfn(sw.seg, f.pfn_off);
        bool any = false;
        if (read_pfns(getpid(), a, npages, pfn) == 0)
            for (uint64_t i = 0; i < npages && !any; i++)
                any = pfn[i] != 0;
        if (any) {
            madvise((void *)(a & ~4095ul), npages * 4096, MADV_DONTDUMP);
        } else {
            sw_seg_pfn_free(f.pfn_off, npages);
            f.pfn_off = 0;
        }
    }
    sw_reg_mr_publish(idx, &f);
    mr->idx = idx;
    mr->iova = iova;
    mr->access = access;
    mr->npages = npages;
    mr->nic_map = nic_map;
    mr->nic_map_len = nic_len;
    mr->mr.context = ibpd->context;
    mr->mr.pd = ibpd;
    mr->mr.addr = addr;
    mr->mr.length = length;
    mr->mr.handle = idx;
    mr->mr.lkey = key;
    mr->mr.rkey = key;
    atomic_fetch_add(&pd->users, 1);
    pthread_mutex_lock(&sw.obj_lock);
    sw.mrs[idx] = mr;
    sw.pinned_pages += npages;
    pthread_mutex_unlock(&sw.obj_lock);
    struct sw_context *ctx = sw_ctx(ibpd->context);
    pthread_mutex_lock(&ctx->lock);
    ctx->n_mr++;
    pthread_mutex_unlock(&ctx->lock);
    return mr;
err_free:
    free(mr);
err_count:
    sw_reg_count(&h->n_mr, h->conf.lim.max_mr, -1);
err:
    errno = err;
    return NULL;
}

struct ibv_mr *ibv_reg_mr_iova2(struct ibv_pd *pd, void *addr, size_t length, uint64_t iova,
                                unsigned int access)
{
    struct sw_mr *mr = reg(pd, addr, length, iova, access, NULL, 0);
    return mr ? &mr->mr : NULL;
}

#undef ibv_reg_mr
SW_DEFAULT(ibv_reg_mr) struct ibv_mr *sw_reg_mr(struct ibv_pd *pd, void *addr, size_t length,
                                                int access);
struct ibv_mr *sw_reg_mr(struct ibv_pd *pd, void *addr, size_t length, int access)
{
    uint64_t iova = (unsigned)access & IBV_ACCESS_ZERO_BASED ? (uintptr_t)addr & 4095 : (uintptr_t)addr;
    return ibv_reg_mr_iova2(pd, addr, length, iova, (unsigned)access);
}

#undef ibv_reg_mr_iova
struct ibv_mr *ibv_reg_mr_iova(struct ibv_pd *pd, void *addr, size_t length, uint64_t iova,
                               int access)
{
    return ibv_reg_mr_iova2(pd, addr, length, iova, (unsigned)access);
}

/* Whether FD is device memory of weft's CUDA test double (tests/fakecuda),
 * a memfd named "fakecuda:ID" or "fakecuda-vmm:DEV": its
 * cuMemGetHandleForAddressRange hands one out as its dma-buf, there being
 * no kernel exporter to make a real one. Taken as a dma-buf so that the
 * two doubles can be tested together; no other memfd is. */
static bool fakecuda_memory(int fd)
{
    char path[64], link[80];
    snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
    ssize_t n = readlink(path, link, sizeof(link) - 1);
    if (n < 0)
        return false;
    link[n] = '\0';
    return !strncmp(link, "/memfd:fakecuda:", 16) || !strncmp(link, "/memfd:fakecuda-vmm:", 20);
}

/* A dma-buf is registered through a mapping of the device's own, which
 * is what the NIC then reads and writes; the exporter must allow mmap
 * (udmabuf does; most GPU exporters do not, and then this fails with
 * EOPNOTSUPP as a NIC without dma-buf support would). */
struct ibv_mr *ibv_reg_dmabuf_mr(struct ibv_pd *pd, uint64_t offset, size_t length, uint64_t iova,
                                 int fd, int access)
{
    unsigned allowed = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ |
                       IBV_ACCESS_REMOTE_ATOMIC | IBV_ACCESS_RELAXED_ORDERING;
    if (!pd || !sw_ctx_ok(pd->context) || ((unsigned)access & ~allowed) ||
        (offset & 4095) != (iova & 4095) || length == 0) {
        errno = EINVAL;
        return NULL;
    }
    /* a dma-buf's fdinfo names its exporter */
    char path[64], line[256];
    snprintf(path, sizeof(path), "/proc/self/fdinfo/%d", fd);
    FILE *f = fd >= 0 ? fopen(path, "re") : NULL;
    if (!f) {
        errno = EBADF;
        return NULL;
    }
    bool dmabuf = false;
    while (fgets(line, sizeof(line), f))
        dmabuf |= !strncmp(line, "exp_name:", 9);
    fclose(f);
    if (!dmabuf && !fakecuda_memory(fd)) {
        errno = EINVAL;
        return NULL;
    }
    size_t map_len = (size_t)(offset & ~4095ull) + ((offset & 4095) + length + 4095) / 4096 * 4096;
    int prot = PROT_READ | (access & SW_WRITABLE ? PROT_WRITE : 0);
    char *map = mmap(NULL, map_len, prot, MAP_SHARED, fd, 0);
    if (map == MAP_FAILED) {
        errno = EOPNOTSUPP;
        return NULL;
    }
    struct sw_mr *mr = reg(pd, map + offset, length, iova, (unsigned)access, map, map_len);
    if (!mr) {
        int e = errno;
        munmap(map, map_len);
        errno = e;
        return NULL;
    }
    mr->mr.addr = NULL;    /* a dma-buf region has no address in the process */
    return &mr->mr;
}

SW_DEFAULT(ibv_dereg_mr) int sw_dereg_mr(struct ibv_mr *ibmr);
int sw_dereg_mr(struct ibv_mr *ibmr)
{
    if (!ibmr || !sw_ctx_ok(ibmr->context))
        return EINVAL;
    struct sw_mr *mr = SW_CONTAINER(ibmr, struct sw_mr, mr);
    uint32_t inflight = atomic_load(&mr->inflight);
    if (inflight)
        sw_check_report("ibv_dereg_mr() of lkey 0x%x while %u posted work requests name it: "
                        "they will fail with IBV_WC_LOC_PROT_ERR", ibmr->lkey, inflight);
    uint64_t pfn_off = sw.reg->mr[mr->idx].pfn_off;
    sw_reg_mr_kill(mr->idx);
    sw_seg_pfn_free(pfn_off, mr->npages);
    pthread_mutex_lock(&sw.obj_lock);
    sw.mrs[mr->idx] = NULL;
    sw.pinned_pages -= mr->npages;
    pthread_mutex_unlock(&sw.obj_lock);
    struct sw_reg_host *h = &sw.reg->host[sw.host];
    sw_reg_count(&h->n_mr, h->conf.lim.max_mr, -1);
    struct sw_pd *pd = SW_CONTAINER(ibmr->pd, struct sw_pd, pd);
    atomic_fetch_sub(&pd->users, 1);
    struct sw_context *ctx = sw_ctx(ibmr->context);
    pthread_mutex_lock(&ctx->lock);
    ctx->n_mr--;
    pthread_mutex_unlock(&ctx->lock);
    if (mr->nic_map)
        munmap(mr->nic_map, mr->nic_map_len);
    free(mr);
    return 0;
}

SW_DEFAULT(ibv_rereg_mr) int sw_rereg_mr(struct ibv_mr *mr, int flags, struct ibv_pd *pd,
                                         void *addr, size_t length, int access);
int sw_rereg_mr(struct ibv_mr *mr, int flags, struct ibv_pd *pd, void *addr, size_t length,
                int access)
{
    errno = EOPNOTSUPP;
    return IBV_REREG_MR_ERR_INPUT;
}

/* Whether the pages under [VA, VA+LEN) of region M, owned by process
 * PROC (pid PID, segment SEG), are still those registered. On the NIC
 * thread. */
static struct { pid_t pid; int fd; } pagemaps[SW_REG_PROCS];

static int pagemap_fd(uint32_t proc, pid_t pid)
{
    if (pagemaps[proc].fd > 0 && pagemaps[proc].pid == pid)
        return pagemaps[proc].fd;
    if (pagemaps[proc].fd > 0)
        close(pagemaps[proc].fd);
    char path[64];
    snprintf(path, sizeof(path), "/proc/%d/pagemap", (int)pid);
    pagemaps[proc].fd = open(path, O_RDONLY | O_CLOEXEC);
    pagemaps[proc].pid = pid;
    return pagemaps[proc].fd;
}

/* Whether the mapping holding VA still carries the mark set at
 * registration (smaps' VmFlags "dd"). */
static bool still_marked(pid_t pid, uint64_t va)
{
    char path[64], line[512];
    snprintf(path, sizeof(path), "/proc/%d/smaps", (int)pid);
    FILE *f = fopen(path, "re");
    if (!f)
        return true;
    bool in = false, marked = true;
    while (fgets(line, sizeof(line), f)) {
        unsigned long lo, hi;
        if (sscanf(line, "%lx-%lx ", &lo, &hi) == 2 && strchr(line, '-') < strchr(line, ' ')) {
            in = va >= lo && va < hi;
            continue;
        }
        if (in && !strncmp(line, "VmFlags:", 8)) {
            marked = strstr(line, " dd") != NULL;
            break;
        }
    }
    fclose(f);
    return marked;
}

bool sw_mr_pages_ok(uint32_t proc, pid_t pid, struct sw_seg *seg, const struct sw_reg_mr *m,
                    uint64_t va, uint64_t len)
{
    if (!m->pfn_off || len == 0)
        return true;
    uint64_t first = (va >> 12) - (m->addr >> 12);
    uint64_t n = page_count(va, len);
    if (first + n > m->npages)
        return true;
    int fd = pagemap_fd(proc, pid);
    if (fd < 0)
        return true;
    uint64_t buf[512];
    uint64_t *rec = sw_seg_pfn(seg, m->pfn_off);
    for (uint64_t done = 0; done < n;) {
        uint64_t k = SW_MIN(n - done, 512);
        uint64_t page = (va >> 12) + done;
        if (pread(fd, buf, k * 8, (off_t)(page * 8)) != (ssize_t)(k * 8))
            return true;
        for (uint64_t i = 0; i < k; i++) {
            uint64_t now = buf[i] >> 63 ? buf[i] & SW_PFN_MASK : 0;
            uint64_t *was = &rec[first + done + i];
            if (now == *was)
                continue;
            if (now && still_marked(pid, (page + i) << 12)) {
                /* the kernel moved the page: what a pin would have prevented */
                *was = now;
                continue;
            }
            sw_check_report("the pages under key 0x%x of process %d changed after registration "
                            "(freed and mapped again at 0x%llx): a NIC keeps writing the old "
                            "pages, so this data is lost", m->key, (int)pid,
                            (unsigned long long)((page + i) << 12));
            return false;
        }
        done += k;
    }
    return true;
}
