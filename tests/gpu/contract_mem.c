/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * contract_mem.c: the contract test's checks of device memory, page-locked
 * host memory and synchronous copies: what weft's staging of device
 * buffers through host memory does with them.
 *
 * Sizes are odd on purpose (not a multiple of a page or of 256), so that
 * a driver or double that rounds a length shows it.
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/gpu/contract.h"

#define CT_MEM_BYTES ((size_t)65536 + 12)

/* "ok", an error name, or where the bytes first differ. */
static const char *copy_result(CUresult r, const unsigned char *got, size_t n, unsigned seed)
{
    static char buf[48];
    long bad;

    if (r)
        return ct_err(r);
    if ((bad = ct_pattern_bad(got, n, seed)) < 0)
        return "ok";
    snprintf(buf, sizeof(buf), "mismatch at %ld", bad);
    return buf;
}

/* cuMemcpyHtoD then DtoH; cuMemcpy both ways through unified addressing;
 * cuMemsetD8 inside the buffer, its edges kept. */
static void copies(CUdeviceptr d, size_t n, unsigned char *a, unsigned char *b)
{
    CUresult r;
    long bad = -1;

    ct_pattern(a, n, 1);
    memset(b, 0, n);
    if (!(r = cu.cuMemcpyHtoD(d, a, n)))
        r = cu.cuMemcpyDtoH(b, d, n);
    ct_check("copy-htod-dtoh", "ok", "%s", copy_result(r, b, n, 1));

    ct_pattern(a, n, 2);
    memset(b, 0, n);
    if (!(r = cu.cuMemcpy(d, (CUdeviceptr)(uintptr_t)a, n)))
        r = cu.cuMemcpy((CUdeviceptr)(uintptr_t)b, d, n);
    ct_check("copy-unified", "ok", "%s", copy_result(r, b, n, 2));

    memset(b, 0, n);
    if (!(r = cu.cuMemsetD8(d + 5, 0x3c, n - 10)))
        r = cu.cuMemcpyDtoH(b, d, n);
    for (size_t i = 0; !r && i < n && bad < 0; i++)
        if (b[i] != (i < 5 || i >= n - 5 ? a[i] : 0x3c))
            bad = (long)i;
    if (r)
        ct_check("memset-d8", "ok", "%s", ct_err(r));
    else if (bad >= 0)
        ct_check("memset-d8", "ok", "mismatch at %ld", bad);
    else
        ct_check("memset-d8", "ok", "ok");
}

/* cuMemGetAddressRange of an interior pointer: the allocation's base,
 * and at least the size asked for. */
static void address_range(CUdeviceptr d, size_t n)
{
    CUdeviceptr base = 0;
    size_t size = 0;
    CUresult r = cu.cuMemGetAddressRange(&base, &size, d + 4099);

    ct_check("address-range-interior", "base size>=requested", "%s%s%s",
             r ? ct_err(r) : base == d ? "base" : "not-base", r ? "" : " ",
             r ? "" : size >= n ? "size>=requested" : "size<requested");
}

/* Page-locked host memory, allocated and registered. Registering a range
 * twice and unregistering one that is not are errors the reference
 * names. */
static void host_memory(void)
{
    size_t n = 1 << 16;
    void *h = NULL, *p = NULL;
    CUresult r;

    r = cu.cuMemAllocHost(&h, CT_MEM_BYTES);
    ct_check("mem-alloc-host", "CUDA_SUCCESS", "%s", ct_err(r));
    if (!r)
        ct_check("mem-free-host", "CUDA_SUCCESS", "%s", ct_err(cu.cuMemFreeHost(h)));

    if (posix_memalign(&p, 4096, n)) {
        ct_fail("host-register", "posix_memalign failed");
        return;
    }
    memset(p, 0, n);
    r = cu.cuMemHostRegister(p, n, 0);
    ct_check("host-register", "CUDA_SUCCESS", "%s", ct_err(r));
    if (!r) {
        ct_check("host-register-again", "CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED", "%s",
                 ct_err(cu.cuMemHostRegister(p, n, 0)));
        ct_check("host-unregister", "CUDA_SUCCESS", "%s", ct_err(cu.cuMemHostUnregister(p)));
        ct_check("host-unregister-again", "CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED", "%s",
                 ct_err(cu.cuMemHostUnregister(p)));
    }
    free(p);
}

void ct_check_memory(void)
{
    size_t n = CT_MEM_BYTES;
    unsigned char *a = malloc(n), *b = malloc(n);
    CUdeviceptr d = 0;
    CUresult r;

    if (!a || !b) {
        ct_fail("memory", "out of host memory");
        goto out_free;
    }
    ct_check("mem-alloc-zero", "CUDA_ERROR_INVALID_VALUE", "%s", ct_err(cu.cuMemAlloc(&d, 0)));
    r = cu.cuMemAlloc(&d, n);
    ct_check("mem-alloc", "CUDA_SUCCESS", "%s", ct_err(r));
    if (!r) {
        copies(d, n, a, b);
        address_range(d, n);
        ct_check("mem-free", "CUDA_SUCCESS", "%s", ct_err(cu.cuMemFree(d)));
    }
    host_memory();
out_free:
    free(a);
    free(b);
}
