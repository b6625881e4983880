/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * cuda_ipc_share.c: the sharing half of the device services: device
 * memory exported to and mapped from the other processes of a node
 * (legacy CUDA IPC), a stream for the core's own device work, and the
 * reduction kernels on it. The core's GPU-to-GPU collectives inside a
 * node (core/api/coll_device.c) stand on these.
 *
 * A handle names the exporter (its pid, PID namespace and boot id) and
 * the device by UUID, so that the importer can tell, before asking the
 * driver, whether it can map it at all: another boot is another node,
 * another PID namespace a container whose processes cuIpcOpenMemHandle
 * cannot find, a UUID this process does not see (CUDA_VISIBLE_DEVICES) a
 * GPU it cannot reach. Those answer WEFT_ERR_UNSUPPORTED, which the core
 * takes as "stage through host memory". A handle of this very process is
 * not opened (the driver refuses): the address is used as it is.
 *
 * Memory of cuMemAlloc crosses as a legacy IPC handle. A VMM allocation
 * (cuMemCreate, as PyTorch's expandable segments make them) has none: it
 * crosses as a POSIX file descriptor from a descriptor server
 * (plugins/cuda-common/cudrv_fds.h), started at the first VMM export and
 * named in the handle; an importer that misses its cache asks it for the
 * allocation, imports the descriptor and maps it. Ranks of one node in
 * different network namespaces cannot reach each other's server, and
 * their calls are staged.
 *
 * Mappings are cached (plugins/cuda-common/cudrv_ipc.h) by exporter pid
 * and allocation, checked against the buffer id, at most CIPC_MAP_KEEP of
 * them and CIPC_MAP_KEEP_BYTES; each ipc_open holds a reference until its
 * ipc_close. The caches are the only state these services change, under
 * share_lock, since any thread may call them; the server thread reads the
 * context and calls the driver only.
 */
#include "config.h"

#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "plugins/cuda-common/cudrv_fds.h"
#include "plugins/cuda-common/cudrv_ipc.h"
#include "plugins/cuda-ipc/cuda_ipc.h"

#define CIPC_MAP_KEEP 64
#define CIPC_MAP_KEEP_BYTES (4ull << 30)
#define CIPC_HANDLE_MAGIC "weftcip1"

enum { KIND_LEGACY = 1, KIND_VMM = 2 };

/* What ipc_export writes (WEFT_TRANSPORT_IPC_HANDLE_MAX bytes at most). */
struct cipc_handle {
    char magic[8];
    uint32_t kind;                      /* KIND_* */
    uint32_t pid;
    uint64_t pidns;                     /* inode of the exporter's /proc/self/ns/pid */
    char boot_id[40];
    unsigned char uuid[16];             /* the device the memory is on */
    CUipcMemHandle ipc;                 /* KIND_LEGACY */
    char sock[WCU_FDS_NAME];            /* KIND_VMM: the exporter's descriptor server */
    uint64_t base, size, offset, buffer_id;
};

_Static_assert(sizeof(struct cipc_handle) <= WEFT_TRANSPORT_IPC_HANDLE_MAX,
               "a cuda-ipc handle must fit the ABI's room");

struct cipc_share {
    pthread_mutex_t lock;
    struct wcu_ipc_exports exp;
    struct wcu_ipc_imports imp;         /* owner: the exporter's pid */
    uint64_t pidns;
    char boot_id[40];
    unsigned long long exports, opens_self;
    struct wcu_fds_server fds;          /* VMM descriptors, served from the first export */
};

/* ------------------------------------------------------------ set-up */

static void read_identity(struct cipc_share *s)
{
    struct stat st;
    int fd = open("/proc/sys/kernel/random/boot_id", O_RDONLY | O_CLOEXEC);

    if (fd >= 0) {
        ssize_t n = read(fd, s->boot_id, sizeof(s->boot_id) - 1);

        close(fd);
        if (n > 0)
            s->boot_id[n] = '\0';
        s->boot_id[strcspn(s->boot_id, "\n")] = '\0';
    }
    if (stat("/proc/self/ns/pid", &st) == 0)
        s->pidns = (uint64_t)st.st_ino;
}

int weft__cuda_ipc_share_init(struct cipc_ctx *c)
{
    struct cipc_share *s = calloc(1, sizeof(*s));

    if (!s)
        return -1;
    pthread_mutex_init(&s->lock, NULL);
    weft__cudrv_ipc_imports_init(&s->imp, CIPC_MAP_KEEP, CIPC_MAP_KEEP_BYTES);
    weft__cudrv_fds_init(&s->fds);
    read_identity(s);
    c->share = s;
    return 0;
}

void weft__cuda_ipc_share_fini(struct cipc_ctx *c)
{
    struct cipc_share *s = c->share;

    if (!s)
        return;
    weft__cudrv_fds_stop(&s->fds);
    c->core->log(WEFT_TRANSPORT_LOG_INFO, CIPC_NAME, "ipc: exports=%llu opens=%llu hits=%llu "
                 "self=%llu vmm_opens=%llu vmm_fds_served=%llu", s->exports, s->imp.opens,
                 s->imp.hits, s->opens_self, s->imp.vmm_opens, s->fds.served);
    if (weft__cuda_ipc_device_ready(c) == WEFT_SUCCESS)
        weft__cudrv_ipc_close_all(&c->drv, &s->imp);
    pthread_mutex_destroy(&s->lock);
    free(s);
    c->share = NULL;
}


/* ------------------------------------------------------------ VMM descriptors */

/* The descriptor server's thread needs a context for its queries. */
static void server_thread_init(void *arg)
{
    weft__cuda_ipc_device_ready(arg);
}

/* wcu_ipc_source.fetch_fd: asks the exporter's server for the
 * descriptor of the allocation the handle arg names. */
static int fetch_fd(void *arg, CUresult *rc)
{
    const struct cipc_handle *h = arg;
    char name[WCU_FDS_NAME];

    memcpy(name, h->sock, sizeof(name));
    name[sizeof(name) - 1] = '\0';
    return weft__cudrv_fds_fetch(name, h->base, h->buffer_id, rc);
}

/* ------------------------------------------------------------ services */

unsigned weft__cuda_ipc_share_features(void *ctx)
{
    const struct cipc_ctx *c = ctx;
    unsigned f = 0;

    if (c->share && (c->dev.features & WCU_DEV_UVA))
        f |= WEFT_TRANSPORT_DEVICE_IPC;
    if (c->kern.module)
        f |= WEFT_TRANSPORT_DEVICE_REDUCE;
    return f;
}

/* The UUID of ordinal's device, or -1. */
static int uuid_of(const struct cipc_ctx *c, int ordinal, unsigned char uuid[16])
{
    CUdevice dev;
    CUuuid u;

    if (c->drv.fn.cuDeviceGet(&dev, ordinal) != CUDA_SUCCESS ||
        c->drv.fn.cuDeviceGetUuid(&u, dev) != CUDA_SUCCESS)
        return -1;
    memcpy(uuid, u.bytes, 16);
    return 0;
}

weft_result_t weft__cuda_ipc_share_ipc_export(void *ctx, const void *ptr, size_t len,
                                              void *handle)
{
    struct cipc_ctx *c = ctx;
    struct cipc_share *s = c->share;
    struct cipc_handle h;
    char why[WCU_WHY_MAX];
    struct wcu_ptr p;
    weft_result_t r;
    CUresult rc;
    int vmm;

    if (!s) {
        c->core->set_error("ipc_export: sharing is off");
        return WEFT_ERR_UNSUPPORTED;
    }
    if ((r = weft__cuda_ipc_device_ready(c)) != WEFT_SUCCESS)
        return r;
    if (weft__cudrv_ptr_query(&c->drv, ptr, &p, why, sizeof(why)) != 0) {
        c->core->set_error("%s", why);
        return WEFT_ERR_SYSTEM;
    }
    vmm = p.mem == WCU_MEM_DEVICE && !p.legacy_ipc &&
          (p.handle_types & CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR) &&
          (c->drv.features & (1u << WCU_FEAT_VMM));
    if (p.mem != WCU_MEM_DEVICE || (!p.legacy_ipc && !vmm)) {
        c->core->set_error("ipc_export: %p is %s memory %s", ptr,
                           weft__cudrv_ptr_mem_name(p.mem),
                           p.mem == WCU_MEM_DEVICE ? "that neither legacy IPC nor a POSIX "
                                                     "descriptor can export"
                                                   : "(not device memory)");
        return WEFT_ERR_UNSUPPORTED;
    }
    if ((uintptr_t)ptr < p.start || len > p.size - ((uintptr_t)ptr - p.start)) {
        c->core->set_error("ipc_export: %zu bytes at %p run past their CUDA allocation (%zu "
                           "bytes at 0x%llx)", len, ptr, p.size, (unsigned long long)p.start);
        return WEFT_ERR_INVALID_ARG;
    }
    memset(&h, 0, sizeof(h));
    memcpy(h.magic, CIPC_HANDLE_MAGIC, sizeof(h.magic));
    h.pid = (uint32_t)getpid();
    h.pidns = s->pidns;
    memcpy(h.boot_id, s->boot_id, sizeof(h.boot_id));
    if (uuid_of(c, p.ordinal, h.uuid) != 0) {
        c->core->set_error("ipc_export: device %d of %p has no UUID", p.ordinal, ptr);
        return WEFT_ERR_SYSTEM;
    }
    h.base = p.start;
    h.size = p.size;
    h.offset = (uintptr_t)ptr - p.start;
    h.buffer_id = p.buffer_id;
    pthread_mutex_lock(&s->lock);
    if (vmm) {
        /* the importer asks this process's server for a descriptor */
        h.kind = KIND_VMM;
        rc = weft__cudrv_fds_start(&s->fds, &c->drv, CIPC_NAME, server_thread_init, c, why,
                                   sizeof(why)) == 0
                 ? CUDA_SUCCESS
                 : CUDA_ERROR_OPERATING_SYSTEM;
        memcpy(h.sock, s->fds.name, sizeof(h.sock));
    } else {
        h.kind = KIND_LEGACY;
        rc = weft__cudrv_ipc_export(&c->drv, &s->exp, p.start, p.buffer_id, &h.ipc);
    }
    if (rc == CUDA_SUCCESS)
        s->exports++;
    pthread_mutex_unlock(&s->lock);
    if (vmm && rc != CUDA_SUCCESS) {
        c->core->set_error("ipc_export: %s", why);
        return WEFT_ERR_UNSUPPORTED;
    }
    if (rc != CUDA_SUCCESS) {
        r = weft__cuda_ipc_err_report(c, rc, "cuIpcGetMemHandle");
        return r == WEFT_ERR_INVALID_ARG ? WEFT_ERR_UNSUPPORTED : r;
    }
    memset(handle, 0, WEFT_TRANSPORT_IPC_HANDLE_MAX);
    memcpy(handle, &h, sizeof(h));
    return WEFT_SUCCESS;
}

/* 0 when this process can map what h describes, else -1 with the error
 * set (WEFT_ERR_UNSUPPORTED). */
static int reachable(const struct cipc_ctx *c, const struct cipc_handle *h)
{
    const struct cipc_share *s = c->share;
    unsigned char uuid[16];

    if (strncmp(h->boot_id, s->boot_id, sizeof(h->boot_id))) {
        c->core->set_error("ipc_open: the memory of pid %u is on another node (boot id %.36s, "
                           "here %.36s)", h->pid, h->boot_id, s->boot_id);
        return -1;
    }
    if (h->pidns != s->pidns) {
        c->core->set_error("ipc_open: pid %u runs in another PID namespace", h->pid);
        return -1;
    }
    for (int i = 0; i < c->drv.ndev; i++)
        if (uuid_of(c, i, uuid) == 0 && !memcmp(uuid, h->uuid, 16))
            return 0;
    c->core->set_error("ipc_open: pid %u's memory is on a GPU this process does not see "
                       "(CUDA_VISIBLE_DEVICES?)", h->pid);
    return -1;
}

weft_result_t weft__cuda_ipc_share_ipc_open(void *ctx, const void *handle, void **ptr,
                                            void **token)
{
    struct cipc_ctx *c = ctx;
    struct cipc_share *s = c->share;
    struct wcu_ipc_source src = { 0 };
    struct cipc_handle h;
    struct wcu_ipc_map *e;
    char call[128];
    weft_result_t r;
    CUresult rc;

    memcpy(&h, handle, sizeof(h));
    if (!s) {
        c->core->set_error("ipc_open: sharing is off");
        return WEFT_ERR_UNSUPPORTED;
    }
    if (memcmp(h.magic, CIPC_HANDLE_MAGIC, sizeof(h.magic)) || h.offset > h.size ||
        (h.kind != KIND_LEGACY && h.kind != KIND_VMM)) {
        c->core->set_error("ipc_open: not a cuda-ipc handle of this version");
        return WEFT_ERR_INVALID_ARG;
    }
    if (reachable(c, &h) != 0)
        return WEFT_ERR_UNSUPPORTED;
    if (h.pid == (uint32_t)getpid()) {
        pthread_mutex_lock(&s->lock);
        s->opens_self++;
        pthread_mutex_unlock(&s->lock);
        *ptr = (void *)(uintptr_t)(h.base + h.offset);
        *token = NULL;
        return WEFT_SUCCESS;
    }
    if ((r = weft__cuda_ipc_device_ready(c)) != WEFT_SUCCESS)
        return r;
    src.handle = h.kind == KIND_LEGACY ? &h.ipc : NULL;
    src.fetch_fd = fetch_fd;
    src.arg = &h;
    src.device = c->dev.ordinal;
    pthread_mutex_lock(&s->lock);
    e = weft__cudrv_ipc_get(&c->drv, &s->imp, h.pid, h.base, h.size, h.buffer_id, &src, &rc);
    pthread_mutex_unlock(&s->lock);
    if (!e) {
        snprintf(call, sizeof(call), h.kind == KIND_LEGACY ? "cuIpcOpenMemHandle" :
                 "importing the VMM allocation of pid %u (descriptor from @%.63s)", h.pid,
                 h.sock);
        return weft__cuda_ipc_err_report(c, rc, call);
    }
    *ptr = (void *)(uintptr_t)(e->mapped + h.offset);
    *token = e;
    return WEFT_SUCCESS;
}

weft_result_t weft__cuda_ipc_share_ipc_close(void *ctx, void *token)
{
    struct cipc_ctx *c = ctx;
    struct cipc_share *s = c->share;
    weft_result_t r;

    if (!token || !s)
        return WEFT_SUCCESS;
    if ((r = weft__cuda_ipc_device_ready(c)) != WEFT_SUCCESS)
        return r;
    pthread_mutex_lock(&s->lock);
    weft__cudrv_ipc_put(&c->drv, &s->imp, token);
    pthread_mutex_unlock(&s->lock);
    return WEFT_SUCCESS;
}

/* Non-blocking: the core's work must not wait for the legacy default
 * stream, which the user's other work may fill. */
weft_result_t weft__cuda_ipc_share_stream_create(void *ctx, void **stream)
{
    struct cipc_ctx *c = ctx;
    weft_result_t r;
    CUstream st;
    CUresult rc;

    if ((r = weft__cuda_ipc_device_ready(c)) != WEFT_SUCCESS)
        return r;
    rc = c->drv.fn.cuStreamCreate(&st, CU_STREAM_NON_BLOCKING);
    if (rc != CUDA_SUCCESS)
        return weft__cuda_ipc_err_report(c, rc, "cuStreamCreate");
    *stream = st;
    return WEFT_SUCCESS;
}

weft_result_t weft__cuda_ipc_share_stream_destroy(void *ctx, void *stream)
{
    struct cipc_ctx *c = ctx;
    weft_result_t r;
    CUresult rc;

    if (!stream)
        return WEFT_SUCCESS;
    if ((r = weft__cuda_ipc_device_ready(c)) != WEFT_SUCCESS)
        return r;
    rc = c->drv.fn.cuStreamDestroy((CUstream)stream);
    return rc == CUDA_SUCCESS ? WEFT_SUCCESS
                              : weft__cuda_ipc_err_report(c, rc, "cuStreamDestroy");
}

weft_result_t weft__cuda_ipc_share_stream_reduce(void *ctx, void *stream, void *dst,
                                                 const void *a, const void *b, size_t count,
                                                 weft_dtype_t dt, weft_op_t op)
{
    return weft__cuda_ipc_reduce(ctx, (CUstream)stream, dst, a, b, count, dt, op);
}

weft_result_t weft__cuda_ipc_share_stream_avg(void *ctx, void *stream, void *buf,
                                              size_t count, weft_dtype_t dt, int divisor)
{
    return weft__cuda_ipc_reduce_avg(ctx, (CUstream)stream, buf, count, dt, divisor);
}
