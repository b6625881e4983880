/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_cudrv_ipc.c: the legacy IPC caches of plugins/cuda-common
 * (cudrv_ipc.h), with the three driver calls they make replaced by
 * strict stand-ins: an open maps a handle at a fresh address and counts
 * a reference on it, as the driver does; a close of an address that is
 * not open fails the test, and so does a mapping left open at the end.
 * The cases: a hit, a stale buffer id (closed and opened again, or left
 * to its user while in use), the bounds by count and by bytes with the
 * least recently used going first and mappings in use never closed under
 * their users, forgetting an owner, closing everything, the export
 * cache asking the driver once per allocation, and a VMM allocation
 * mapped from a descriptor (fetched on a miss only, closed once
 * imported; the range reserved, mapped and made accessible, and unmapped
 * and freed at the close).
 */
#include "config.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <fcntl.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "plugins/cuda-common/cudrv_ipc.h"

#define MAX_OPEN 32

/* The stand-in driver's state: open mappings by address. */
static struct {
    CUdeviceptr addr[MAX_OPEN];
    int refs[MAX_OPEN];
    uint64_t handle_of[MAX_OPEN];       /* first 8 bytes of the handle opened */
    int opens, closes, exports;
    CUdeviceptr next;
    CUresult open_rc;
} drv_state;

static CUipcMemHandle handle_for(uint64_t tag)
{
    CUipcMemHandle h;

    memset(&h, 0, sizeof(h));
    memcpy(h.reserved, &tag, sizeof(tag));
    return h;
}

static CUresult CUDAAPI stub_open(CUdeviceptr *p, CUipcMemHandle h, unsigned int flags)
{
    uint64_t tag;

    assert_int_equal(flags, CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS);
    if (drv_state.open_rc != CUDA_SUCCESS)
        return drv_state.open_rc;
    memcpy(&tag, h.reserved, sizeof(tag));
    drv_state.opens++;
    /* The driver counts a second open of an open handle as a reference. */
    for (int i = 0; i < MAX_OPEN; i++)
        if (drv_state.refs[i] && drv_state.handle_of[i] == tag) {
            drv_state.refs[i]++;
            *p = drv_state.addr[i];
            return CUDA_SUCCESS;
        }
    for (int i = 0; i < MAX_OPEN; i++)
        if (!drv_state.refs[i]) {
            drv_state.next += 0x100000;
            drv_state.addr[i] = drv_state.next;
            drv_state.refs[i] = 1;
            drv_state.handle_of[i] = tag;
            *p = drv_state.addr[i];
            return CUDA_SUCCESS;
        }
    fail_msg("more than %d mappings open", MAX_OPEN);
    return CUDA_ERROR_OUT_OF_MEMORY;
}

static CUresult CUDAAPI stub_close(CUdeviceptr p)
{
    for (int i = 0; i < MAX_OPEN; i++)
        if (drv_state.refs[i] && drv_state.addr[i] == p) {
            drv_state.refs[i]--;
            drv_state.closes++;
            return CUDA_SUCCESS;
        }
    fail_msg("cuIpcCloseMemHandle of 0x%llx, which is not open", (unsigned long long)p);
    return CUDA_ERROR_INVALID_VALUE;
}

static CUresult CUDAAPI stub_get(CUipcMemHandle *h, CUdeviceptr p)
{
    drv_state.exports++;
    *h = handle_for((uint64_t)p);
    return CUDA_SUCCESS;
}

static int open_count(void)
{
    int n = 0;

    for (int i = 0; i < MAX_OPEN; i++)
        n += drv_state.refs[i];
    return n;
}

static struct wcu_drv drv;

static int setup(void **state)
{
    (void)state;
    memset(&drv_state, 0, sizeof(drv_state));
    memset(&drv, 0, sizeof(drv));
    drv.fn.cuIpcOpenMemHandle = stub_open;
    drv.fn.cuIpcCloseMemHandle = stub_close;
    drv.fn.cuIpcGetMemHandle = stub_get;
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    assert_int_equal(open_count(), 0); /* nothing left mapped */
    return 0;
}

/* get of owner's allocation at base with buffer id, size bytes. */
static struct wcu_ipc_map *get(struct wcu_ipc_imports *m, uint64_t owner, uint64_t base,
                               uint64_t size, unsigned long long id)
{
    CUipcMemHandle h = handle_for(base ^ (id << 40) ^ (owner << 56));
    struct wcu_ipc_source src = { .handle = &h };
    CUresult rc;
    struct wcu_ipc_map *e = weft__cudrv_ipc_get(&drv, m, owner, base, size, id, &src, &rc);

    assert_non_null(e);
    return e;
}

static void test_hit(void **state)
{
    struct wcu_ipc_imports m;
    struct wcu_ipc_map *a, *b;

    (void)state;
    weft__cudrv_ipc_imports_init(&m, 8, 1ull << 30);
    a = get(&m, 1, 0x1000, 4096, 7);
    b = get(&m, 1, 0x1000, 4096, 7);
    assert_ptr_equal(a, b);
    assert_int_equal(m.opens, 1);
    assert_int_equal(m.hits, 1);
    assert_int_equal(a->refs, 2);
    weft__cudrv_ipc_put(&drv, &m, a);
    weft__cudrv_ipc_put(&drv, &m, b);
    /* kept for the next call: still mapped, no reference */
    assert_int_equal(open_count(), 1);
    assert_int_equal(m.n, 1);
    /* the same base of another owner is another mapping */
    b = get(&m, 2, 0x1000, 4096, 7);
    assert_ptr_not_equal(a, b);
    assert_int_equal(m.opens, 2);
    weft__cudrv_ipc_put(&drv, &m, b);
    weft__cudrv_ipc_close_all(&drv, &m);
    assert_int_equal(m.n, 0);
    assert_int_equal(m.bytes, 0);
}

static void test_stale(void **state)
{
    struct wcu_ipc_imports m;
    struct wcu_ipc_map *a, *b;
    CUdeviceptr old;

    (void)state;
    weft__cudrv_ipc_imports_init(&m, 8, 1ull << 30);
    a = get(&m, 1, 0x1000, 4096, 7);
    old = a->mapped;
    weft__cudrv_ipc_put(&drv, &m, a);
    /* freed and allocated again at the same address: a new buffer id */
    b = get(&m, 1, 0x1000, 4096, 8);
    assert_int_equal(m.opens, 2);
    assert_int_equal(m.hits, 0);
    assert_int_equal(drv_state.closes, 1); /* the stale one went */
    assert_int_not_equal(b->mapped, old);
    assert_int_equal(m.n, 1);
    weft__cudrv_ipc_put(&drv, &m, b);
    weft__cudrv_ipc_close_all(&drv, &m);
}

static void test_stale_in_use(void **state)
{
    struct wcu_ipc_imports m;
    struct wcu_ipc_map *a, *b;

    (void)state;
    weft__cudrv_ipc_imports_init(&m, 8, 1ull << 30);
    a = get(&m, 1, 0x1000, 4096, 7);
    b = get(&m, 1, 0x1000, 8192, 9);
    /* a's user still reads through it: not closed, out of the cache */
    assert_int_equal(drv_state.closes, 0);
    assert_int_equal(a->listed, 0);
    assert_int_equal(m.n, 1);
    assert_int_equal(m.bytes, 8192);
    weft__cudrv_ipc_put(&drv, &m, a); /* its last user: closed now */
    assert_int_equal(drv_state.closes, 1);
    weft__cudrv_ipc_put(&drv, &m, b);
    weft__cudrv_ipc_close_all(&drv, &m);
}

static void test_bound_count(void **state)
{
    struct wcu_ipc_imports m;
    struct wcu_ipc_map *e[3];

    (void)state;
    weft__cudrv_ipc_imports_init(&m, 2, 1ull << 30);
    for (int i = 0; i < 3; i++) {
        e[i] = get(&m, 1, 0x1000 * (uint64_t)(i + 1), 4096, (unsigned long long)i + 1);
        weft__cudrv_ipc_put(&drv, &m, e[i]);
    }
    /* the least recently used (the first) went */
    assert_int_equal(m.n, 2);
    assert_int_equal(drv_state.closes, 1);
    e[1] = get(&m, 1, 0x2000, 4096, 2); /* a hit, now the most recent */
    assert_int_equal(m.hits, 1);
    weft__cudrv_ipc_put(&drv, &m, e[1]);
    e[0] = get(&m, 1, 0x1000, 4096, 1); /* opened again: the third goes */
    assert_int_equal(m.opens, 4);
    weft__cudrv_ipc_put(&drv, &m, e[0]);
    assert_int_equal(m.n, 2);
    for (struct wcu_ipc_map *x = m.head; x; x = x->next)
        assert_int_not_equal(x->base, 0x3000);
    weft__cudrv_ipc_close_all(&drv, &m);
}

static void test_in_use_kept(void **state)
{
    struct wcu_ipc_imports m;
    struct wcu_ipc_map *e[3];

    (void)state;
    weft__cudrv_ipc_imports_init(&m, 1, 1ull << 30);
    for (int i = 0; i < 3; i++)
        e[i] = get(&m, 1, 0x1000 * (uint64_t)(i + 1), 4096, (unsigned long long)i + 1);
    /* every one in use: the bound waits */
    assert_int_equal(m.n, 3);
    assert_int_equal(drv_state.closes, 0);
    weft__cudrv_ipc_put(&drv, &m, e[0]);
    weft__cudrv_ipc_put(&drv, &m, e[1]);
    /* unused now and over the bound; the one still in use stays */
    assert_int_equal(m.n, 1);
    assert_ptr_equal(m.head, e[2]);
    weft__cudrv_ipc_put(&drv, &m, e[2]);
    assert_int_equal(m.n, 1);
    weft__cudrv_ipc_close_all(&drv, &m);
}

static void test_bound_bytes(void **state)
{
    struct wcu_ipc_imports m;
    struct wcu_ipc_map *a, *b;

    (void)state;
    weft__cudrv_ipc_imports_init(&m, 64, 10000);
    a = get(&m, 1, 0x1000, 6000, 1);
    weft__cudrv_ipc_put(&drv, &m, a);
    b = get(&m, 1, 0x9000, 6000, 2);
    weft__cudrv_ipc_put(&drv, &m, b);
    assert_int_equal(m.n, 1);
    assert_int_equal(m.bytes, 6000);
    assert_int_equal(m.head->base, 0x9000);
    weft__cudrv_ipc_close_all(&drv, &m);
}

static void test_forget(void **state)
{
    struct wcu_ipc_imports m;
    struct wcu_ipc_map *a, *b, *c;

    (void)state;
    weft__cudrv_ipc_imports_init(&m, 8, 1ull << 30);
    a = get(&m, 1, 0x1000, 4096, 1);
    b = get(&m, 1, 0x2000, 4096, 2);
    c = get(&m, 2, 0x1000, 4096, 3);
    weft__cudrv_ipc_put(&drv, &m, a);
    weft__cudrv_ipc_put(&drv, &m, c);
    weft__cudrv_ipc_forget(&drv, &m, 1);
    /* owner 1's unused one closed, its one in use out of the cache */
    assert_int_equal(drv_state.closes, 1);
    assert_int_equal(m.n, 1);
    assert_ptr_equal(m.head, c);
    weft__cudrv_ipc_put(&drv, &m, b);
    assert_int_equal(drv_state.closes, 2);
    weft__cudrv_ipc_close_all(&drv, &m);
}

static void test_open_fails(void **state)
{
    struct wcu_ipc_imports m;
    CUipcMemHandle h = handle_for(1);
    struct wcu_ipc_source src = { .handle = &h };
    CUresult rc = CUDA_SUCCESS;

    (void)state;
    weft__cudrv_ipc_imports_init(&m, 8, 1ull << 30);
    drv_state.open_rc = CUDA_ERROR_INVALID_HANDLE;
    assert_null(weft__cudrv_ipc_get(&drv, &m, 1, 0x1000, 4096, 1, &src, &rc));
    assert_int_equal(rc, CUDA_ERROR_INVALID_HANDLE);
    assert_int_equal(m.n, 0);
    assert_int_equal(m.opens, 0);
}

static void test_exports(void **state)
{
    struct wcu_ipc_exports x;
    CUipcMemHandle a, b, c;

    (void)state;
    memset(&x, 0, sizeof(x));
    assert_int_equal(weft__cudrv_ipc_export(&drv, &x, 0x1000, 5, &a), CUDA_SUCCESS);
    assert_int_equal(weft__cudrv_ipc_export(&drv, &x, 0x1000, 5, &b), CUDA_SUCCESS);
    assert_int_equal(drv_state.exports, 1);
    assert_memory_equal(&a, &b, sizeof(a));
    /* the same address, another allocation: asked again */
    assert_int_equal(weft__cudrv_ipc_export(&drv, &x, 0x1000, 6, &c), CUDA_SUCCESS);
    assert_int_equal(drv_state.exports, 2);
    /* more allocations than slots: the oldest is asked again */
    for (int i = 0; i < WCU_IPC_EXPORTS; i++)
        weft__cudrv_ipc_export(&drv, &x, 0x100000 + (uintptr_t)i * 0x1000,
                               100 + (unsigned long long)i, &c);
    assert_int_equal(weft__cudrv_ipc_export(&drv, &x, 0x1000, 5, &b), CUDA_SUCCESS);
    assert_int_equal(drv_state.exports, 3 + WCU_IPC_EXPORTS);
}

/* ------------------------------------------------ VMM */

static struct {
    int fetches, imports, reserved, mapped, access, released;
    int fd;                             /* the descriptor fetch_fd handed out */
    CUdeviceptr va;
    size_t size;
} vmm;

static int stub_fetch(void *arg, CUresult *rc)
{
    int p[2];

    (void)rc;
    assert_int_equal(*(int *)arg, 42);
    assert_int_equal(pipe(p), 0);
    close(p[1]);
    vmm.fetches++;
    vmm.fd = p[0];
    return p[0];
}

static CUresult CUDAAPI stub_import(CUmemGenericAllocationHandle *h, void *os,
                                   CUmemAllocationHandleType type)
{
    assert_int_equal((int)(intptr_t)os, vmm.fd);
    assert_int_equal(type, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR);
    vmm.imports++;
    *h = 0x77;
    return CUDA_SUCCESS;
}

static CUresult CUDAAPI stub_reserve(CUdeviceptr *p, size_t size, size_t align, CUdeviceptr addr,
                                    unsigned long long flags)
{
    (void)align, (void)addr, (void)flags;
    assert_int_equal(vmm.reserved, 0);
    vmm.reserved = 1;
    vmm.size = size;
    vmm.va = 0x7000000;
    *p = vmm.va;
    return CUDA_SUCCESS;
}

static CUresult CUDAAPI stub_map(CUdeviceptr p, size_t size, size_t off,
                                CUmemGenericAllocationHandle h, unsigned long long flags)
{
    (void)flags;
    assert_int_equal(p, vmm.va);
    assert_int_equal(size, vmm.size);
    assert_int_equal(off, 0);
    assert_int_equal(h, 0x77);
    vmm.mapped = 1;
    return CUDA_SUCCESS;
}

static CUresult CUDAAPI stub_release(CUmemGenericAllocationHandle h)
{
    assert_int_equal(h, 0x77);
    vmm.released++;
    return CUDA_SUCCESS;
}

static CUresult CUDAAPI stub_access(CUdeviceptr p, size_t size, const CUmemAccessDesc *desc,
                                   size_t count)
{
    assert_int_equal(p, vmm.va);
    assert_int_equal(size, vmm.size);
    assert_int_equal(count, 1);
    assert_int_equal(desc->location.type, CU_MEM_LOCATION_TYPE_DEVICE);
    assert_int_equal(desc->location.id, 3);
    assert_int_equal(desc->flags, CU_MEM_ACCESS_FLAGS_PROT_READWRITE);
    assert_int_equal(vmm.mapped, 1); /* access is set on what is mapped */
    vmm.access = 1;
    return CUDA_SUCCESS;
}

static CUresult CUDAAPI stub_unmap(CUdeviceptr p, size_t size)
{
    assert_int_equal(p, vmm.va);
    assert_int_equal(size, vmm.size);
    assert_int_equal(vmm.mapped, 1);
    vmm.mapped = 0;
    return CUDA_SUCCESS;
}

static CUresult CUDAAPI stub_free(CUdeviceptr p, size_t size)
{
    assert_int_equal(p, vmm.va);
    assert_int_equal(size, vmm.size);
    assert_int_equal(vmm.mapped, 0); /* unmapped first */
    vmm.reserved = 0;
    return CUDA_SUCCESS;
}

static void test_vmm(void **state)
{
    struct wcu_ipc_imports m;
    struct wcu_ipc_map *a, *b;
    int tag = 42;
    struct wcu_ipc_source src = { .fetch_fd = stub_fetch, .arg = &tag, .device = 3 };
    CUresult rc;

    (void)state;
    memset(&vmm, 0, sizeof(vmm));
    drv.features |= 1u << WCU_FEAT_VMM;
    drv.fn.cuMemImportFromShareableHandle = stub_import;
    drv.fn.cuMemAddressReserve = stub_reserve;
    drv.fn.cuMemMap = stub_map;
    drv.fn.cuMemRelease = stub_release;
    drv.fn.cuMemSetAccess = stub_access;
    drv.fn.cuMemUnmap = stub_unmap;
    drv.fn.cuMemAddressFree = stub_free;
    weft__cudrv_ipc_imports_init(&m, 8, 1ull << 30);
    a = weft__cudrv_ipc_get(&drv, &m, 1, 0x200000, 2u << 20, 9, &src, &rc);
    assert_non_null(a);
    assert_int_equal(a->mapped, vmm.va);
    assert_int_equal(a->vmm, 1);
    assert_int_equal(vmm.access, 1);
    assert_int_equal(vmm.released, 1); /* the mapping keeps the memory */
    assert_int_equal(fcntl(vmm.fd, F_GETFD), -1); /* the descriptor was closed */
    /* a hit asks the exporter for nothing */
    b = weft__cudrv_ipc_get(&drv, &m, 1, 0x200000, 2u << 20, 9, &src, &rc);
    assert_ptr_equal(a, b);
    assert_int_equal(vmm.fetches, 1);
    assert_int_equal(m.vmm_opens, 1);
    weft__cudrv_ipc_put(&drv, &m, a);
    weft__cudrv_ipc_put(&drv, &m, b);
    weft__cudrv_ipc_close_all(&drv, &m);
    assert_int_equal(vmm.mapped, 0);
    assert_int_equal(vmm.reserved, 0);
    /* without the driver's VMM functions nothing is asked for */
    drv.features = 0;
    assert_null(weft__cudrv_ipc_get(&drv, &m, 1, 0x200000, 2u << 20, 9, &src, &rc));
    assert_int_equal(rc, CUDA_ERROR_NOT_SUPPORTED);
    assert_int_equal(vmm.fetches, 1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_hit, setup, teardown),
        cmocka_unit_test_setup_teardown(test_stale, setup, teardown),
        cmocka_unit_test_setup_teardown(test_stale_in_use, setup, teardown),
        cmocka_unit_test_setup_teardown(test_bound_count, setup, teardown),
        cmocka_unit_test_setup_teardown(test_in_use_kept, setup, teardown),
        cmocka_unit_test_setup_teardown(test_bound_bytes, setup, teardown),
        cmocka_unit_test_setup_teardown(test_forget, setup, teardown),
        cmocka_unit_test_setup_teardown(test_open_fails, setup, teardown),
        cmocka_unit_test_setup_teardown(test_exports, setup, teardown),
        cmocka_unit_test_setup_teardown(test_vmm, setup, teardown),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
