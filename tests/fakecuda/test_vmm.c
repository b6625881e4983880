/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_vmm.c: virtual memory management as the driver API reference
 * describes it: granularity, create, reserve, map, access, unmap and
 * free, with the errors it names (sizes and addresses off the
 * granularity, mapping over a mapping, unmapping part of one, export of
 * a handle type not requested, novmm); the attributes of a mapping; and
 * a POSIX file descriptor export that another process (this program run
 * as "import") receives over a Unix socket with SCM_RIGHTS, imports,
 * maps and writes to.
 */
#include "config.h"

#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "tests/fakecuda/fctest.h"

static CUmemAllocationProp prop_of(int dev, unsigned long long types)
{
    CUmemAllocationProp p;
    memset(&p, 0, sizeof(p));
    p.type = CU_MEM_ALLOCATION_TYPE_PINNED;
    p.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    p.location.id = dev;
    p.requestedHandleTypes = (CUmemAllocationHandleType)types;
    return p;
}

static void grant(CUdeviceptr p, size_t n)
{
    CUmemAccessDesc a = { .location = { CU_MEM_LOCATION_TYPE_DEVICE, 0 },
                          .flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE };
    FCT_OK(cuMemSetAccess(p, n, &a, 1));
}

static void lifecycle_child(void)
{
    fct_up(0);
    CUmemAllocationProp prop = prop_of(0, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR);
    size_t g, rg;
    FCT_OK(cuMemGetAllocationGranularity(&g, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM));
    FCT_OK(cuMemGetAllocationGranularity(&rg, &prop, CU_MEM_ALLOC_GRANULARITY_RECOMMENDED));
    FCT_TRUE(g > 0 && rg % g == 0);
    CUmemGenericAllocationHandle h, h2;
    FCT_EXPECT(cuMemCreate(&h, g + 4096, &prop, 0), CUDA_ERROR_INVALID_VALUE);
    FCT_OK(cuMemCreate(&h, 2 * g, &prop, 0));
    CUdeviceptr va, va2;
    FCT_EXPECT(cuMemAddressReserve(&va, g / 2, 0, 0, 0), CUDA_ERROR_INVALID_VALUE);
    FCT_OK(cuMemAddressReserve(&va, 4 * g, 0, 0, 0));
    FCT_TRUE(va % g == 0);
    FCT_EXPECT(cuMemMap(va + 4096, 2 * g, 0, h, 0), CUDA_ERROR_INVALID_VALUE);
    FCT_EXPECT(cuMemMap(va, 2 * g, g, h, 0), CUDA_ERROR_INVALID_VALUE);
    FCT_OK(cuMemMap(va, 2 * g, 0, h, 0));
    /* over the mapping, or partly over it */
    FCT_EXPECT(cuMemMap(va, 2 * g, 0, h, 0), CUDA_ERROR_INVALID_VALUE);
    FCT_EXPECT(cuMemMap(va + g, 2 * g, 0, h, 0), CUDA_ERROR_INVALID_VALUE);
    /* no access yet: a copy fails */
    char buf[64];
    FCT_EXPECT(cuMemcpyDtoH(buf, va, sizeof(buf)), CUDA_ERROR_INVALID_VALUE);
    grant(va, 2 * g);
    FCT_OK(cuMemsetD8(va + g, 0x3c, 64));
    FCT_OK(cuMemcpyDtoH(buf, va + g, sizeof(buf)));
    FCT_TRUE(buf[0] == 0x3c && buf[63] == 0x3c);

    unsigned long long types = 0, id1, id2;
    unsigned ipc = 1, mtype = 0;
    CUdeviceptr start;
    size_t size;
    FCT_OK(cuPointerGetAttribute(&types, CU_POINTER_ATTRIBUTE_ALLOWED_HANDLE_TYPES, va + 8));
    FCT_TRUE(types == CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR);
    FCT_OK(cuPointerGetAttribute(&ipc, CU_POINTER_ATTRIBUTE_IS_LEGACY_CUDA_IPC_CAPABLE, va));
    FCT_TRUE(ipc == 0);
    FCT_OK(cuPointerGetAttribute(&mtype, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, va));
    FCT_TRUE(mtype == CU_MEMORYTYPE_DEVICE);
    FCT_OK(cuPointerGetAttribute(&start, CU_POINTER_ATTRIBUTE_RANGE_START_ADDR, va + g));
    FCT_OK(cuPointerGetAttribute(&size, CU_POINTER_ATTRIBUTE_RANGE_SIZE, va + g));
    FCT_TRUE(start == va && size == 2 * g);
    FCT_OK(cuPointerGetAttribute(&id1, CU_POINTER_ATTRIBUTE_BUFFER_ID, va));
    CUipcMemHandle ih;
    FCT_EXPECT(cuIpcGetMemHandle(&ih, va), CUDA_ERROR_INVALID_VALUE);

    FCT_OK(cuMemRetainAllocationHandle(&h2, (void *)(uintptr_t)(va + 100)));
    FCT_TRUE(h2 == h);
    FCT_OK(cuMemRelease(h2));
    /* the handle goes; the mapping keeps the memory */
    FCT_OK(cuMemRelease(h));
    FCT_OK(cuMemcpyDtoH(buf, va + g, 1));
    FCT_TRUE(buf[0] == 0x3c);
    FCT_EXPECT(cuMemRelease(h), CUDA_ERROR_INVALID_VALUE);

    FCT_EXPECT(cuMemUnmap(va, g), CUDA_ERROR_INVALID_VALUE);
    FCT_EXPECT(cuMemAddressFree(va, 4 * g), CUDA_ERROR_INVALID_VALUE);
    FCT_OK(cuMemUnmap(va, 2 * g));
    FCT_EXPECT(cuMemcpyDtoH(buf, va, 1), CUDA_ERROR_INVALID_VALUE);
    /* mapped again: new memory, a new buffer id */
    FCT_OK(cuMemCreate(&h, g, &prop, 0));
    FCT_OK(cuMemMap(va, g, 0, h, 0));
    grant(va, g);
    FCT_OK(cuPointerGetAttribute(&id2, CU_POINTER_ATTRIBUTE_BUFFER_ID, va));
    FCT_TRUE(id1 != id2);
    FCT_OK(cuMemUnmap(va, g));
    FCT_OK(cuMemRelease(h));
    FCT_EXPECT(cuMemAddressFree(va, 2 * g), CUDA_ERROR_INVALID_VALUE);
    FCT_OK(cuMemAddressFree(va, 4 * g));
    FCT_OK(cuMemAddressReserve(&va2, g, 8 * g, 0, 0));
    FCT_TRUE(va2 % (8 * g) == 0);
    FCT_OK(cuMemAddressFree(va2, g));

    /* export of a type not asked for */
    CUmemAllocationProp none = prop_of(0, CU_MEM_HANDLE_TYPE_NONE);
    int fd;
    FCT_OK(cuMemCreate(&h, g, &none, 0));
    FCT_EXPECT(cuMemExportToShareableHandle(&fd, h, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0),
               CUDA_ERROR_INVALID_VALUE);
    FCT_OK(cuMemRelease(h));
}

static void lifecycle(void **state)
{
    assert_int_equal(fct_child(lifecycle_child), 0);
}

/* A mapping is no more host-readable than cuMemAlloc's memory. */
static void host_load_child(void)
{
    fct_up(0);
    CUmemAllocationProp prop = prop_of(0, 0);
    size_t g;
    FCT_OK(cuMemGetAllocationGranularity(&g, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM));
    CUmemGenericAllocationHandle h;
    CUdeviceptr va;
    FCT_OK(cuMemCreate(&h, g, &prop, 0));
    FCT_OK(cuMemAddressReserve(&va, g, 0, 0, 0));
    FCT_OK(cuMemMap(va, g, 0, h, 0));
    grant(va, g);
    signal(SIGSEGV, SIG_DFL);       /* cmocka's handler would catch it */
    volatile char c = *(volatile char *)(uintptr_t)va;
    (void)c;
}

static void host_load(void **state)
{
    assert_int_equal(fct_child(host_load_child), 128 + SIGSEGV);
}

static void novmm_child(void)
{
    setenv("WEFT_FAKECUDA_FAULTS", "novmm", 1);
    fct_up(0);
    CUmemAllocationProp prop = prop_of(0, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR);
    size_t g;
    CUmemGenericAllocationHandle h;
    CUdeviceptr va;
    FCT_EXPECT(cuMemGetAllocationGranularity(&g, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM),
               CUDA_ERROR_NOT_SUPPORTED);
    FCT_EXPECT(cuMemCreate(&h, 2 << 20, &prop, 0), CUDA_ERROR_NOT_SUPPORTED);
    FCT_EXPECT(cuMemAddressReserve(&va, 2 << 20, 0, 0, 0), CUDA_ERROR_NOT_SUPPORTED);
}

static void novmm(void **state)
{
    assert_int_equal(fct_child(novmm_child), 0);
}

static int send_fd(int sock, int fd)
{
    char byte = 0, ctl[CMSG_SPACE(sizeof(int))];
    struct iovec iov = { &byte, 1 };
    struct msghdr m = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = ctl,
                        .msg_controllen = sizeof(ctl) };
    struct cmsghdr *c = CMSG_FIRSTHDR(&m);
    c->cmsg_level = SOL_SOCKET;
    c->cmsg_type = SCM_RIGHTS;
    c->cmsg_len = CMSG_LEN(sizeof(int));
    memcpy(CMSG_DATA(c), &fd, sizeof(int));
    return sendmsg(sock, &m, 0) == 1 ? 0 : -1;
}

static int recv_fd(int sock)
{
    char byte, ctl[CMSG_SPACE(sizeof(int))];
    struct iovec iov = { &byte, 1 };
    struct msghdr m = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = ctl,
                        .msg_controllen = sizeof(ctl) };
    if (recvmsg(sock, &m, 0) != 1)
        return -1;
    struct cmsghdr *c = CMSG_FIRSTHDR(&m);
    int fd = -1;
    if (c && c->cmsg_type == SCM_RIGHTS)
        memcpy(&fd, CMSG_DATA(c), sizeof(int));
    return fd;
}

/* The importing process: the descriptor arrives on SOCK. */
static int importer(int sock)
{
    fct_up(0);
    int fd = recv_fd(sock);
    FCT_TRUE(fd >= 0);
    CUmemGenericAllocationHandle h;
    FCT_OK(cuMemImportFromShareableHandle(&h, (void *)(uintptr_t)fd,
                                          CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR));
    close(fd);      /* the import does not need it any more */
    size_t g = 2 << 20;
    CUdeviceptr va;
    FCT_OK(cuMemAddressReserve(&va, g, 0, 0, 0));
    FCT_OK(cuMemMap(va, g, 0, h, 0));
    grant(va, g);
    char buf[16];
    FCT_OK(cuMemcpyDtoH(buf, va + g - 16, 16));
    FCT_TRUE(buf[0] == 0x71 && buf[15] == 0x71);
    FCT_OK(cuMemsetD8(va, 0x72, 16));
    FCT_OK(cuMemUnmap(va, g));
    FCT_OK(cuMemRelease(h));
    FCT_OK(cuMemAddressFree(va, g));
    /* junk is no allocation of the double */
    FCT_EXPECT(cuMemImportFromShareableHandle(&h, (void *)(uintptr_t)0,
                                              CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR),
               CUDA_ERROR_INVALID_VALUE);
    return 0;
}

static void share_child(void)
{
    fct_up(0);
    CUmemAllocationProp prop = prop_of(0, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR);
    size_t g = 2 << 20;
    CUmemGenericAllocationHandle h;
    CUdeviceptr va;
    FCT_OK(cuMemCreate(&h, g, &prop, 0));
    FCT_OK(cuMemAddressReserve(&va, g, 0, 0, 0));
    FCT_OK(cuMemMap(va, g, 0, h, 0));
    grant(va, g);
    FCT_OK(cuMemsetD8(va, 0x71, g));
    int fd;
    FCT_OK(cuMemExportToShareableHandle(&fd, h, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0));
    int sv[2];
    FCT_TRUE(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) == 0);
    fflush(NULL);
    pid_t pid = fork();
    if (pid == 0) {
        /* exec, as a forked child must before using the driver; the
         * socket end is kept open across it */
        char arg[16];
        snprintf(arg, sizeof(arg), "%d", dup(sv[1]));
        execl("/proc/self/exe", "test_vmm", "import", arg, (char *)NULL);
        _exit(127);
    }
    FCT_TRUE(send_fd(sv[0], fd) == 0);
    close(fd);
    int st;
    FCT_TRUE(waitpid(pid, &st, 0) == pid && WIFEXITED(st) && WEXITSTATUS(st) == 0);
    char buf[17];
    FCT_OK(cuMemcpyDtoH(buf, va, 17));
    FCT_TRUE(buf[0] == 0x72 && buf[15] == 0x72 && buf[16] == 0x71);
}

static void share(void **state)
{
    assert_int_equal(fct_child(share_child), 0);
}

int main(int argc, char **argv)
{
    if (argc == 3 && !strcmp(argv[1], "import"))
        return importer(atoi(argv[2]));
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(lifecycle),
        cmocka_unit_test(host_load),
        cmocka_unit_test(novmm),
        cmocka_unit_test(share),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
