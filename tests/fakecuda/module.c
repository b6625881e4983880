/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * module.c: modules and kernel launches. The double runs no GPU code: a
 * module's image is only checked to be one the driver could load, and
 * its functions are the kernels kernels.c knows by name, computed on the
 * host. A launch is a stream operation like a copy (stream.c), run on the
 * stream's worker in order with the others.
 *
 * Images (cuModuleLoadData) are taken in the three forms the reference
 * names for it:
 *  - a fatbin, as nvcc --fatbin writes it (no toolkit header documents
 *    the layout; this is read from nvcc 13's output): a 16-byte header
 *    (u32 magic 0xBA55ED50, u16 version 1, u16 header size 16, u64 size
 *    of the entries), then entries, each a header (u16 kind, 1 PTX or 2
 *    ELF; u16; u32 header size; u64 payload size; ...; u32 at offset 28
 *    the architecture, 90 for sm_90) and its payload. It must hold an
 *    ELF for the device's sm_90 or PTX of compute_90 or older, which
 *    the driver could compile: else CUDA_ERROR_NO_BINARY_FOR_GPU.
 *  - an ELF cubin: "\x7fELF", 64-bit, e_machine EM_CUDA (190); its
 *    architecture is not checked.
 *  - PTX text: after blanks and // comments, ".version".
 * Anything else is CUDA_ERROR_INVALID_IMAGE; NULL CUDA_ERROR_INVALID_VALUE.
 * cuModuleGetFunction answers from the double's own table whatever the
 * image holds: CUDA_ERROR_NOT_FOUND for a name it does not know.
 *
 * Launches are checked as the reference says the driver checks them:
 * grid and block dimensions at least 1 and within the device's limits
 * (cuDeviceGetAttribute's MAX_GRID_DIM_*, MAX_BLOCK_DIM_*,
 * MAX_THREADS_PER_BLOCK), shared memory within MAX_SHARED_MEMORY_PER_BLOCK,
 * kernelParams given (the double does not take "extra": it is
 * CUDA_ERROR_NOT_SUPPORTED there), a live function of the stream's
 * context (else CUDA_ERROR_INVALID_HANDLE). The parameters are read when
 * the launch is made, as the driver copies them. Where the driver would
 * only fault later, on the GPU (a pointer parameter whose N elements are
 * not memory the device reaches, or a NULL kernelParams[i]), the double
 * fails the launch itself with CUDA_ERROR_INVALID_VALUE and says why on
 * stderr: a test sees the mistake at the call that made it.
 *
 * Modules and functions are not freed by cuModuleUnload, which marks them
 * dead, so a handle used afterwards is recognised, and work already queued
 * (which holds no handle) still runs. They are freed when the library is
 * unloaded (at exit, or a dlclose by weft's driver loader).
 */
#include "config.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "tests/fakecuda/fakecuda.h"

#define FATBIN_MAGIC 0xBA55ED50u
#define FATBIN_KIND_PTX 1
#define FATBIN_KIND_ELF 2
#define EM_CUDA 190
/* The devices are compute capability 9.0 (device.c). */
#define FC_SM 90

/* The device's limits a launch is checked against, as device.c reports. */
#define FC_MAX_THREADS 1024u
static const unsigned max_block[3] = { 1024, 1024, 64 };
static const unsigned max_grid[3] = { 2147483647u, 65535, 65535 };
#define FC_MAX_SHARED 49152u

/* Every module loaded, dead or alive, for the destructor to free. */
static struct CUmod_st *all_modules;
static pthread_mutex_t all_modules_lock = PTHREAD_MUTEX_INITIALIZER;

__attribute__((destructor)) static void free_modules(void)
{
    while (all_modules) {
        struct CUmod_st *m = all_modules;

        all_modules = m->next;
        free(m->funcs);
        free(m);
    }
}

static uint16_t rd16(const unsigned char *p)
{
    uint16_t v;
    memcpy(&v, p, 2);
    return v;
}

static uint32_t rd32(const unsigned char *p)
{
    uint32_t v;
    memcpy(&v, p, 4);
    return v;
}

static uint64_t rd64(const unsigned char *p)
{
    uint64_t v;
    memcpy(&v, p, 8);
    return v;
}

static CUresult check_fatbin(const unsigned char *img)
{
    if (rd16(img + 4) != 1 || rd16(img + 6) != 16)
        return CUDA_ERROR_INVALID_IMAGE;
    uint64_t size = rd64(img + 8);
    const unsigned char *e = img + 16, *end = e + size;
    bool runnable = false;
    if (size == 0)
        return CUDA_ERROR_INVALID_IMAGE;
    while (e < end) {
        if ((size_t)(end - e) < 32)
            return CUDA_ERROR_INVALID_IMAGE;
        uint16_t kind = rd16(e);
        uint32_t hsize = rd32(e + 4);
        uint64_t psize = rd64(e + 8);
        uint32_t arch = rd32(e + 28);
        if (hsize < 32 || hsize > (size_t)(end - e) || psize > (size_t)(end - e) - hsize)
            return CUDA_ERROR_INVALID_IMAGE;
        if ((kind == FATBIN_KIND_ELF && arch == FC_SM) ||
            (kind == FATBIN_KIND_PTX && arch <= FC_SM))
            runnable = true;
        e += hsize + psize;
    }
    return runnable ? CUDA_SUCCESS : CUDA_ERROR_NO_BINARY_FOR_GPU;
}

static bool is_ptx(const char *s)
{
    for (;;) {
        while (*s == ' ' || *s == '\t' || *s == '\n' || *s == '\r')
            s++;
        if (s[0] != '/' || s[1] != '/')
            break;
        s = strchr(s, '\n');
        if (!s)
            return false;
    }
    return !strncmp(s, ".version", 8);
}

static CUresult check_image(const void *image)
{
    const unsigned char *img = image;
    if (rd32(img) == FATBIN_MAGIC)
        return check_fatbin(img);
    if (!memcmp(img, "\177ELF", 4))
        return img[4] == 2 && rd16(img + 18) == EM_CUDA ? CUDA_SUCCESS : CUDA_ERROR_INVALID_IMAGE;
    return is_ptx(image) ? CUDA_SUCCESS : CUDA_ERROR_INVALID_IMAGE;
}

FC_API CUresult cuModuleLoadData(CUmodule *module, const void *image)
{
    FC_FAULT("cuModuleLoadData");
    struct CUctx_st *ctx;
    CUresult r = fc_ctx_ready(&ctx);
    if (r)
        return r;
    if (fc.no_launch)
        return CUDA_ERROR_NOT_SUPPORTED;
    if (!module || !image)
        return CUDA_ERROR_INVALID_VALUE;
    if ((r = check_image(image)))
        return r;
    struct CUmod_st *m = calloc(1, sizeof(*m));
    size_t n = fc_kernel_count();
    if (!m || !(m->funcs = calloc(n, sizeof(*m->funcs)))) {
        free(m);
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    m->magic = FC_MAGIC_MODULE;
    m->ctx = ctx;
    for (size_t i = 0; i < n; i++) {
        m->funcs[i].magic = FC_MAGIC_FUNC;
        m->funcs[i].mod = m;
    }
    pthread_mutex_lock(&all_modules_lock);
    m->next = all_modules;
    all_modules = m;
    pthread_mutex_unlock(&all_modules_lock);
    *module = m;
    return CUDA_SUCCESS;
}

FC_API CUresult cuModuleUnload(CUmodule hmod)
{
    FC_FAULT("cuModuleUnload");
    CUresult r = fc_ready();
    if (r)
        return r;
    if (fc.no_launch)
        return CUDA_ERROR_NOT_SUPPORTED;
    if (!hmod || hmod->magic != FC_MAGIC_MODULE)
        return CUDA_ERROR_INVALID_HANDLE;
    hmod->magic = FC_MAGIC_DEAD;
    for (size_t i = 0; i < fc_kernel_count(); i++)
        hmod->funcs[i].magic = FC_MAGIC_DEAD;
    return CUDA_SUCCESS;
}

FC_API CUresult cuModuleGetFunction(CUfunction *hfunc, CUmodule hmod, const char *name)
{
    FC_FAULT("cuModuleGetFunction");
    CUresult r = fc_ready();
    if (r)
        return r;
    if (fc.no_launch)
        return CUDA_ERROR_NOT_SUPPORTED;
    if (!hfunc || !name)
        return CUDA_ERROR_INVALID_VALUE;
    if (!hmod || hmod->magic != FC_MAGIC_MODULE)
        return CUDA_ERROR_INVALID_HANDLE;
    size_t i;
    const struct fc_kernel *k = fc_kernel_find(name, &i);
    if (!k)
        return CUDA_ERROR_NOT_FOUND;
    /* the same handle for the same name, as the driver gives */
    struct CUfunc_st *f = &hmod->funcs[i];
    f->k = k;
    *hfunc = f;
    return CUDA_SUCCESS;
}

/* Reads the parameters into l; CUDA_ERROR_INVALID_VALUE, said on stderr,
 * where the GPU would fault. */
static CUresult read_params(const struct fc_kernel *k, void **params, struct fc_launch *l)
{
    uint64_t ptrs[3] = { 0 };
    for (int i = 0; i < k->nparams; i++) {
        if (!params[i]) {
            fc_log("%s: kernelParams[%d] is NULL", k->name, i);
            return CUDA_ERROR_INVALID_VALUE;
        }
    }
    /* each parameter is as many bytes as the kernel declares it */
    for (int i = 0; i < k->nptrs; i++)
        memcpy(&ptrs[i], params[i], k->param_size[i]);
    memcpy(&l->n, params[k->nptrs], k->param_size[k->nptrs]);
    if (k->kind == FC_K_SCALE)
        memcpy(l->scalar, params[k->nptrs + 1], k->param_size[k->nptrs + 1]);
    else
        memcpy(&l->iarg, params[k->nptrs + 1], k->param_size[k->nptrs + 1]);
    l->k = k;
    if (l->n == 0)
        return CUDA_SUCCESS;
    if (l->n > SIZE_MAX / k->esize) {
        fc_log("%s: n = %llu elements is more than any memory", k->name,
               (unsigned long long)l->n);
        return CUDA_ERROR_INVALID_VALUE;
    }
    for (int i = 0; i < k->nptrs; i++) {
        /* device memory, or page-locked host memory the device maps */
        l->ptr[i] = fc_resolve((uintptr_t)ptrs[i], l->n * k->esize, FC_KNOWN);
        if (!l->ptr[i]) {
            fc_log("%s: parameter %d (%#llx) is not %llu bytes of memory the device "
                   "reaches; a GPU would fault (CUDA_ERROR_ILLEGAL_ADDRESS)", k->name, i,
                   (unsigned long long)ptrs[i], (unsigned long long)(l->n * k->esize));
            return CUDA_ERROR_INVALID_VALUE;
        }
    }
    return CUDA_SUCCESS;
}

FC_API CUresult cuLaunchKernel(CUfunction f, unsigned int gridDimX, unsigned int gridDimY,
                               unsigned int gridDimZ, unsigned int blockDimX,
                               unsigned int blockDimY, unsigned int blockDimZ,
                               unsigned int sharedMemBytes, CUstream hStream,
                               void **kernelParams, void **extra)
{
    FC_FAULT("cuLaunchKernel");
    struct CUctx_st *ctx;
    struct CUstream_st *s;
    CUresult r = fc_ctx_ready(&ctx);
    if (r)
        return r;
    if (fc.no_launch)
        return CUDA_ERROR_NOT_SUPPORTED;
    if (!f || f->magic != FC_MAGIC_FUNC || !f->k)
        return CUDA_ERROR_INVALID_HANDLE;
    const unsigned grid[3] = { gridDimX, gridDimY, gridDimZ };
    const unsigned block[3] = { blockDimX, blockDimY, blockDimZ };
    for (int d = 0; d < 3; d++)
        if (!grid[d] || !block[d] || grid[d] > max_grid[d] || block[d] > max_block[d])
            return CUDA_ERROR_INVALID_VALUE;
    if ((uint64_t)blockDimX * blockDimY * blockDimZ > FC_MAX_THREADS ||
        sharedMemBytes > FC_MAX_SHARED)
        return CUDA_ERROR_INVALID_VALUE;
    if (extra)
        return kernelParams ? CUDA_ERROR_INVALID_VALUE : CUDA_ERROR_NOT_SUPPORTED;
    if (!kernelParams && f->k->nparams)
        return CUDA_ERROR_INVALID_VALUE;
    if ((r = fc_stream_get(hStream, ctx, &s)))
        return r;
    if (s->ctx != f->mod->ctx)
        return CUDA_ERROR_INVALID_HANDLE;
    struct fc_launch *l = calloc(1, sizeof(*l));
    if (!l)
        return CUDA_ERROR_OUT_OF_MEMORY;
    if ((r = read_params(f->k, kernelParams, l))) {
        free(l);
        return r;
    }
    struct fc_op op = { .kind = FC_OP_KERNEL, .launch = l };
    if ((r = fc_enqueue(s, &op, NULL)))
        free(l);
    return r;
}
