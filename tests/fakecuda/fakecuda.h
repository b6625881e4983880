/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * fakecuda.h: the CUDA driver test double's own objects, shared by its
 * files (fakecuda.c says what the double is). Every exported cu* name is
 * declared by cuda.h; the structs behind CUcontext, CUstream and CUevent,
 * which cuda.h leaves opaque, are defined here.
 *
 * Locking: fc.lock guards the allocation lists, the devices' arenas and
 * the contexts' stream lists; a stream's own lock guards its queue and
 * counters. fc.lock is never taken while a stream lock is held.
 */
#ifndef FAKECUDA_H
#define FAKECUDA_H

#include <cuda.h>
#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define FC_API __attribute__((visibility("default")))

/* The driver version the double claims: the toolkit's cuda.h is 13.0. */
#define FC_DRIVER_VERSION 13000
#define FC_MAX_DEVICES 16

/* One allocation the double knows: device memory (its own, an imported
 * IPC mapping, or a VMM mapping of a physical allocation) or page-locked
 * host memory (allocated or registered). */
enum fc_kind { FC_DEVICE, FC_IPC_IMPORT, FC_VMM, FC_HOST_ALLOC, FC_HOST_REGISTERED };

/* A VMM physical allocation (cuMemCreate, cuMemImportFromShareableHandle):
 * a memfd with no address of its own. Its CUmemGenericAllocationHandle is
 * the struct's address. HANDLES counts the handle's references (the
 * first, and one per cuMemRetainAllocationHandle, each to be given back
 * by cuMemRelease), MAPS the mappings; the handle is valid while HANDLES
 * is not zero, and the memory lives until both are. */
struct fc_phys {
    struct fc_phys *next;
    int fd;
    size_t size;
    int dev;
    unsigned long long types;   /* CUmemAllocationHandleType bits requested */
    int handles, maps;
};

/* An address range of cuMemAddressReserve, in device 0's arena: the VMM
 * address space is the process's, not a device's. */
struct fc_resv {
    struct fc_resv *next;
    uintptr_t base;
    size_t size;
};

struct fc_alloc {
    struct fc_alloc *next;
    enum fc_kind kind;
    uintptr_t base;             /* the address the program sees */
    size_t size;                /* as asked */
    size_t span;                /* rounded to pages: what is reserved */
    char *alias;                /* where the double reads and writes it */
    int fd;                     /* memfd of device memory, else -1 */
    int dev;
    struct CUctx_st *ctx;
    unsigned long long buffer_id;
    /* IPC: the handle an import came from, and how often it was opened */
    pid_t ipc_pid;
    int ipc_fd;
    unsigned long long ipc_buffer_id;
    int ipc_refs;
    /* VMM: the physical allocation mapped, and whether cuMemSetAccess has
     * made the mapping readable and writable (mappings start with none) */
    struct fc_phys *phys;
    bool accessible;
};

struct CUctx_st {
    uint32_t magic;
    int dev;
    int retained;               /* primary context references */
    struct CUstream_st *legacy; /* the NULL stream, made on first use */
    struct CUstream_st *streams;
};

enum fc_op_kind { FC_OP_NOP, FC_OP_COPY, FC_OP_SET8, FC_OP_WRITE32, FC_OP_WAIT32, FC_OP_KERNEL };

/* A dependency: the op waits until STREAM has completed SEQ ops. */
struct fc_dep {
    struct CUstream_st *stream;
    uint64_t seq;
};

struct fc_op {
    struct fc_op *next;
    enum fc_op_kind kind;
    void *dst;
    const void *src;
    size_t n;
    uint32_t value;
    unsigned flags;
    int ndeps;
    struct fc_dep *deps;
    struct fc_launch *launch;   /* FC_OP_KERNEL's, freed with the op */
};

struct CUstream_st {
    uint32_t magic;
    struct CUctx_st *ctx;
    struct CUstream_st *next;   /* in ctx->streams */
    unsigned flags;
    bool legacy;
    pthread_t thread;
    pthread_mutex_t lock;       /* guards everything below */
    pthread_cond_t cond;        /* work queued, work done, stop */
    struct fc_op *head, *tail;
    uint64_t queued, done;      /* ops ever queued and completed */
    bool started;               /* the worker runs its own code */
    bool destroyed;
    unsigned seed;              /* for WEFT_FAKECUDA_DELAY_US */
};

/* An interprocess event's state, in a memfd page every process that has
 * the event maps: how many times it was recorded, and which record last
 * completed (both count up, compared cyclically). */
struct fc_event_word {
    uint32_t recorded;
    uint32_t completed;
};

struct CUevent_st {
    uint32_t magic;
    unsigned flags;
    struct CUstream_st *stream; /* NULL until recorded */
    uint64_t seq;
    /* CU_EVENT_INTERPROCESS: the shared state, its memfd (-1 in an
     * importer, which needs none) and id */
    struct fc_event_word *word;
    int word_fd;
    unsigned long long word_id;
};

#define FC_MAGIC_CTX 0xC0C7C0C7u
#define FC_MAGIC_STREAM 0x57AE4A11u
#define FC_MAGIC_EVENT 0xE7E47E47u
#define FC_MAGIC_MODULE 0x30D01E00u
#define FC_MAGIC_FUNC 0xF0F0C0DEu
#define FC_MAGIC_DEAD 0xDEADDEADu

struct fc_device {
    struct CUctx_st primary;
    uintptr_t arena;            /* reserved, never readable */
    size_t arena_size, arena_top;
    struct fc_hole *holes;      /* freed ranges, last freed first */
};

struct fc_hole {
    struct fc_hole *next;
    uintptr_t addr;
    size_t size;
};

struct fc_state {
    bool initialized;           /* cuInit succeeded */
    int ndevices;
    unsigned delay_us;
    pthread_mutex_t lock;
    struct fc_device dev[FC_MAX_DEVICES];
    struct fc_alloc *allocs;
    unsigned long long next_buffer_id;
    struct fc_phys *phys;       /* VMM physical allocations */
    struct fc_resv *resvs;      /* VMM address reservations */
    /* fault switches (fault.c) */
    bool no_vmm, no_memops, no_ipc, no_launch;
};

extern struct fc_state fc;

/* fakecuda.c */
void fc_setup(void);
CUresult fc_ready(void);           /* NOT_INITIALIZED before cuInit */
CUresult fc_ctx_ready(struct CUctx_st **ctx);   /* and a current context */
void fc_log(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* context.c */
struct CUctx_st *fc_current(void);

/* fault.c: parses WEFT_FAKECUDA_FAULTS; fc_fault(name) is the error the
 * Nth call of NAME is to fail with, or CUDA_SUCCESS. */
void fc_fault_setup(void);
CUresult fc_fault(const char *name);
/* Opens each exported function: its injected fault, if any. */
#define FC_FAULT(name) \
    do { \
        CUresult fc_f_ = fc_fault(name); \
        if (fc_f_ != CUDA_SUCCESS) \
            return fc_f_; \
    } while (0)

/* memory.c; callers hold fc.lock for fc_find and while using its result */
struct fc_alloc *fc_find(uintptr_t addr);
CUresult fc_reserve(int dev, size_t span, uintptr_t *addr);
void fc_unreserve(int dev, uintptr_t addr, size_t span);
size_t fc_round(size_t n);
/* Takes the allocation of KIND based at ADDR off the list; NULL if none. */
struct fc_alloc *fc_unlink(uintptr_t addr, enum fc_kind kind);
/* Unmaps an unlinked device allocation and gives its addresses back. */
void fc_release(struct fc_alloc *a);
/* Where the double reads or writes N bytes at ADDR: device memory
 * through its alias, host memory as it is. FC_ON_DEVICE wants one device
 * allocation (own or imported) holding all N bytes; FC_ON_HOST wants
 * host memory, known or not; FC_KNOWN any allocation the double made or
 * recorded (what memops take); FC_ANY any of these. NULL otherwise. */
enum fc_where { FC_ANY, FC_ON_DEVICE, FC_ON_HOST, FC_KNOWN };
void *fc_resolve(uintptr_t addr, size_t n, enum fc_where where);

/* vmm_phys.c; called with fc.lock held */
struct fc_phys *fc_phys_find(CUmemGenericAllocationHandle h);  /* NULL if released */
void fc_phys_put(struct fc_phys *p);    /* frees it once unreferenced and unmapped */
#define FC_VMM_GRANULARITY ((size_t)2 << 20)    /* as the driver reports on x86 GPUs */

/* ipc.c: descriptor fd of process pid (both from a handle), opened
 * through /proc when it is still a memfd whose name starts with name
 * ("fakecuda:ID "): a handle outliving what it named fails. -1 if not. */
int fc_ipc_open_memfd(pid_t pid, int fd, const char *name);

/* ipc_event.c: an interprocess event's shared word, made by cuEventCreate */
CUresult fc_event_word_new(struct CUevent_st *e);
void fc_event_word_free(struct CUevent_st *e);

/* kernels.c: the kernels the double knows by name, each with its
 * parameters: the first NPTRS are device pointers to N elements of ESIZE
 * bytes (N the next parameter); PARAM_SIZE gives each one's bytes. */
enum fc_kernel_kind { FC_K_REDUCE, FC_K_AVG, FC_K_SCALE };
#define FC_KERNEL_MAX_PARAMS 8
struct fc_kernel {
    char name[32];
    enum fc_kernel_kind kind;
    int type;                   /* kernels.c's element type */
    size_t esize;
    int nparams, nptrs;
    unsigned char param_size[FC_KERNEL_MAX_PARAMS];
};

/* One launch, its parameters read when it was queued. */
struct fc_launch {
    const struct fc_kernel *k;
    void *ptr[3];               /* the pointer parameters, as the double reaches them */
    uint64_t n;
    int32_t iarg;               /* op or nranks */
    unsigned char scalar[8];    /* SCALE's k */
};

/* The kernel named NAME and its index (0..fc_kernel_count() - 1), or
 * NULL if the double knows none by that name. */
const struct fc_kernel *fc_kernel_find(const char *name, size_t *index);
size_t fc_kernel_count(void);
/* Runs the launch's reference on the calling thread (a stream's worker). */
void fc_kernel_run(const struct fc_launch *l);

/* module.c: CUmodule and CUfunction, which cuda.h leaves opaque */
struct CUmod_st {
    uint32_t magic;
    struct CUctx_st *ctx;
    struct CUfunc_st *funcs;    /* one per known kernel, made at load */
    struct CUmod_st *next;      /* every module ever loaded (module.c) */
};

struct CUfunc_st {
    uint32_t magic;
    struct CUmod_st *mod;
    const struct fc_kernel *k;
};

/* stream.c */
CUresult fc_stream_get(CUstream h, struct CUctx_st *ctx, struct CUstream_st **s);
CUresult fc_enqueue(struct CUstream_st *s, const struct fc_op *op, uint64_t *seq);
void fc_stream_wait(struct CUstream_st *s, uint64_t seq);
uint64_t fc_stream_done(struct CUstream_st *s);

#endif
