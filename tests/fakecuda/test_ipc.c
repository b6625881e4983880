/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_ipc.c: legacy CUDA IPC between processes as the driver API
 * reference describes it. An exporter hands a CUipcMemHandle to a
 * program it forks and execs (this program, run as "import HEX MODE"),
 * which maps the memory, reads what the exporter wrote and writes back.
 * Errors: opening in the exporting process (CUDA_ERROR_INVALID_CONTEXT),
 * a second open in one process (same address, one more reference), the
 * handle of freed memory even when a new allocation took its address
 * (CUDA_ERROR_INVALID_HANDLE), flags the reference does not allow.
 */
#include "config.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "tests/fakecuda/fctest.h"

enum { N = 8192 };

static void to_hex(const CUipcMemHandle *h, char *out)
{
    for (size_t i = 0; i < sizeof(h->reserved); i++)
        sprintf(out + 2 * i, "%02x", (unsigned char)h->reserved[i]);
}

static void from_hex(const char *s, CUipcMemHandle *h)
{
    for (size_t i = 0; i < sizeof(h->reserved); i++) {
        unsigned v;
        sscanf(s + 2 * i, "%2x", &v);
        h->reserved[i] = (char)v;
    }
}

/* Runs this program as an importer of H; its exit status. */
static int import(const CUipcMemHandle *h, const char *mode)
{
    char hex[2 * CU_IPC_HANDLE_SIZE + 1];
    to_hex(h, hex);
    fflush(NULL);
    pid_t pid = fork();
    if (pid == 0) {
        execl("/proc/self/exe", "test_ipc", "import", hex, mode, (char *)NULL);
        _exit(127);
    }
    int st;
    waitpid(pid, &st, 0);
    return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

static int importer(const char *hex, const char *mode)
{
    CUipcMemHandle h;
    CUdeviceptr p, q;
    from_hex(hex, &h);
    fct_up(0);
    if (!strcmp(mode, "freed")) {
        FCT_EXPECT(cuIpcOpenMemHandle(&p, h, CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS),
                   CUDA_ERROR_INVALID_HANDLE);
        return 0;
    }
    FCT_EXPECT(cuIpcOpenMemHandle(&p, h, 0), CUDA_ERROR_INVALID_VALUE);
    FCT_OK(cuIpcOpenMemHandle(&p, h, CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS));
    FCT_OK(cuIpcOpenMemHandle(&q, h, CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS));
    FCT_TRUE(p == q);
    unsigned type;
    FCT_OK(cuPointerGetAttribute(&type, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, p));
    FCT_TRUE(type == CU_MEMORYTYPE_DEVICE);
    static char buf[N];
    FCT_OK(cuMemcpyDtoH(buf, p, N));
    FCT_TRUE(buf[0] == 0x11 && buf[N - 1] == 0x11);
    FCT_OK(cuMemsetD8(p + 1, 0x22, N - 1));
    /* imported memory is freed by closing, not by cuMemFree */
    FCT_EXPECT(cuMemFree(p), CUDA_ERROR_INVALID_VALUE);
    FCT_OK(cuIpcCloseMemHandle(p));
    FCT_OK(cuMemcpyDtoH(buf, p, 1));            /* one reference is left */
    FCT_OK(cuIpcCloseMemHandle(p));
    FCT_EXPECT(cuIpcCloseMemHandle(p), CUDA_ERROR_INVALID_VALUE);
    FCT_EXPECT(cuMemcpyDtoH(buf, p, 1), CUDA_ERROR_INVALID_VALUE);
    CUipcMemHandle junk;
    memset(&junk, 0x5a, sizeof(junk));
    FCT_EXPECT(cuIpcOpenMemHandle(&p, junk, CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS), CUDA_ERROR_INVALID_HANDLE);
    return 0;
}

static void share_child(void)
{
    fct_up(0);
    CUdeviceptr d, p;
    CUipcMemHandle h;
    FCT_OK(cuMemAlloc(&d, N));
    FCT_OK(cuMemsetD8(d, 0x11, N));
    FCT_OK(cuIpcGetMemHandle(&h, d));
    FCT_EXPECT(cuIpcOpenMemHandle(&p, h, CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS), CUDA_ERROR_INVALID_CONTEXT);
    FCT_TRUE(import(&h, "rw") == 0);
    char buf[N];
    FCT_OK(cuMemcpyDtoH(buf, d, N));
    FCT_TRUE(buf[0] == 0x11 && buf[1] == 0x22 && buf[N - 1] == 0x22);
    /* a host pointer, or memory the double does not know, has no handle */
    FCT_EXPECT(cuIpcGetMemHandle(&h, (CUdeviceptr)(uintptr_t)buf), CUDA_ERROR_INVALID_VALUE);
}

static void share(void **state)
{
    assert_int_equal(fct_child(share_child), 0);
}

static void freed_child(void)
{
    fct_up(0);
    CUdeviceptr d, e;
    CUipcMemHandle old, new;
    FCT_OK(cuMemAlloc(&d, N));
    FCT_OK(cuIpcGetMemHandle(&old, d));
    FCT_OK(cuMemFree(d));
    FCT_TRUE(import(&old, "freed") == 0);
    /* the address comes back, and likely the descriptor number too: the
     * old handle must still not open the new memory */
    FCT_OK(cuMemAlloc(&e, N));
    FCT_TRUE(e == d);
    FCT_OK(cuIpcGetMemHandle(&new, e));
    FCT_TRUE(memcmp(&old, &new, sizeof(old)) != 0);
    FCT_TRUE(import(&old, "freed") == 0);
}

static void freed(void **state)
{
    assert_int_equal(fct_child(freed_child), 0);
}

int main(int argc, char **argv)
{
    if (argc == 4 && !strcmp(argv[1], "import"))
        return importer(argv[2], argv[3]);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(share),
        cmocka_unit_test(freed),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
