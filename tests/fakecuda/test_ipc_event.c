/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_ipc_event.c: interprocess events as the driver API reference
 * describes them. An exporter queues, on a stream, a wait for a flag in
 * device memory, a memset and the record of an interprocess event, and
 * hands the event's and the memory's IPC handles to a program it forks
 * and execs (this program, run as "import HEX HEX"). The importer sees
 * the event pending, queues a wait for it and a copy on a stream of its
 * own, checks that the copy waits, releases the flag, and then finds
 * the exporter's memset done through both cuStreamWaitEvent and
 * cuEventSynchronize. Errors: an event without CU_EVENT_INTERPROCESS,
 * junk, and opening in the exporting process.
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

enum { N = 4096 };

static void to_hex(const char *h, char *out)
{
    for (size_t i = 0; i < CU_IPC_HANDLE_SIZE; i++)
        sprintf(out + 2 * i, "%02x", (unsigned char)h[i]);
}

static void from_hex(const char *s, char *h)
{
    for (size_t i = 0; i < CU_IPC_HANDLE_SIZE; i++) {
        unsigned v;
        sscanf(s + 2 * i, "%2x", &v);
        h[i] = (char)v;
    }
}

/* The flag is the first word of the memory, the data the page after. */
static int importer(const char *ev_hex, const char *mem_hex)
{
    CUipcEventHandle eh;
    CUipcMemHandle mh;
    from_hex(ev_hex, eh.reserved);
    from_hex(mem_hex, mh.reserved);
    fct_up(0);
    CUevent ev;
    CUdeviceptr d;
    FCT_OK(cuIpcOpenEventHandle(&ev, eh));
    FCT_OK(cuIpcOpenMemHandle(&d, mh, CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS));
    FCT_EXPECT(cuEventQuery(ev), CUDA_ERROR_NOT_READY);
    /* non-blocking: the flag's release below goes by the NULL stream */
    CUstream s;
    FCT_OK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    static char buf[N];
    FCT_OK(cuStreamWaitEvent(s, ev, 0));
    FCT_OK(cuMemcpyDtoHAsync(buf, d + N, N, s));
    usleep(50000);
    FCT_EXPECT(cuStreamQuery(s), CUDA_ERROR_NOT_READY);
    uint32_t one = 1;
    FCT_OK(cuMemcpyHtoD(d, &one, sizeof(one)));
    FCT_OK(cuStreamSynchronize(s));
    FCT_TRUE(buf[0] == 0x5c && buf[N - 1] == 0x5c);
    FCT_OK(cuEventSynchronize(ev));
    FCT_OK(cuEventQuery(ev));
    FCT_OK(cuEventDestroy(ev));
    CUipcEventHandle junk;
    memset(&junk, 0x5a, sizeof(junk));
    FCT_EXPECT(cuIpcOpenEventHandle(&ev, junk), CUDA_ERROR_INVALID_HANDLE);
    return 0;
}

static void share_child(void)
{
    fct_up(0);
    CUevent local, ev, again;
    CUipcEventHandle eh;
    CUipcMemHandle mh;
    FCT_OK(cuEventCreate(&local, CU_EVENT_DISABLE_TIMING));
    FCT_EXPECT(cuIpcGetEventHandle(&eh, local), CUDA_ERROR_INVALID_VALUE);
    FCT_EXPECT(cuEventCreate(&ev, CU_EVENT_INTERPROCESS), CUDA_ERROR_INVALID_VALUE);
    FCT_OK(cuEventCreate(&ev, CU_EVENT_INTERPROCESS | CU_EVENT_DISABLE_TIMING));
    FCT_OK(cuEventQuery(ev));                   /* never recorded: complete */
    FCT_OK(cuIpcGetEventHandle(&eh, ev));
    FCT_EXPECT(cuIpcOpenEventHandle(&again, eh), CUDA_ERROR_INVALID_CONTEXT);

    CUdeviceptr d;
    FCT_OK(cuMemAlloc(&d, 2 * N));
    FCT_OK(cuMemsetD8(d, 0, 2 * N));
    FCT_OK(cuIpcGetMemHandle(&mh, d));
    CUstream s;
    FCT_OK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    FCT_OK(cuStreamWaitValue32(s, d, 1, CU_STREAM_WAIT_VALUE_EQ));
    FCT_OK(cuMemsetD8Async(d + N, 0x5c, N, s));
    FCT_OK(cuEventRecord(ev, s));
    FCT_EXPECT(cuEventQuery(ev), CUDA_ERROR_NOT_READY);

    char ev_hex[2 * CU_IPC_HANDLE_SIZE + 1], mem_hex[2 * CU_IPC_HANDLE_SIZE + 1];
    to_hex(eh.reserved, ev_hex);
    to_hex(mh.reserved, mem_hex);
    fflush(NULL);
    pid_t pid = fork();
    if (pid == 0) {
        execl("/proc/self/exe", "test_ipc_event", "import", ev_hex, mem_hex, (char *)NULL);
        _exit(127);
    }
    int st;
    FCT_TRUE(waitpid(pid, &st, 0) == pid && WIFEXITED(st) && WEXITSTATUS(st) == 0);
    FCT_OK(cuEventSynchronize(ev));
    FCT_OK(cuEventDestroy(ev));
    FCT_OK(cuEventDestroy(local));
}

static void share(void **state)
{
    assert_int_equal(fct_child(share_child), 0);
}

static void noipc_child(void)
{
    setenv("WEFT_FAKECUDA_FAULTS", "noipc", 1);
    fct_up(0);
    CUevent ev;
    CUipcEventHandle eh;
    FCT_OK(cuEventCreate(&ev, CU_EVENT_INTERPROCESS | CU_EVENT_DISABLE_TIMING));
    FCT_EXPECT(cuIpcGetEventHandle(&eh, ev), CUDA_ERROR_NOT_SUPPORTED);
    FCT_OK(cuEventDestroy(ev));
}

static void noipc(void **state)
{
    assert_int_equal(fct_child(noipc_child), 0);
}

int main(int argc, char **argv)
{
    if (argc == 4 && !strcmp(argv[1], "import"))
        return importer(argv[2], argv[3]);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(share),
        cmocka_unit_test(noipc),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
