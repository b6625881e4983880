/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * contract.h: the parts the CUDA driver contract test's files share
 * (contract.c says what the test is): the driver's functions, and how a
 * check reports its result.
 *
 * Output. Every check prints one line "NAME: RESULT" on stdout, RESULT a
 * token that holds on any GPU (an error name, "ok", "memory_type=DEVICE",
 * never an address, id or time), so that the lines a real driver prints
 * and the lines the test double prints can be compared one by one. A
 * checked line carries the result NVIDIA's driver API reference promises;
 * a result that differs is said on stderr and makes the program exit 1.
 * An informational line starts with "info ": what the reference leaves
 * open, printed for the record and never compared.
 */
#ifndef WEFT_TESTS_GPU_CONTRACT_H
#define WEFT_TESTS_GPU_CONTRACT_H

#include <stddef.h>

#include <cuda.h>

/* The functions the checks call. Each is taken by the name cuda.h maps
 * it to (cuMemAlloc is cuMemAlloc_v2 there): the names libcuda.so.1
 * exports and a program built with this header would link. */
#define CT_DRIVER_FUNCS(X) \
    X(cuInit) X(cuDriverGetVersion) X(cuGetErrorName) \
    X(cuDeviceGetCount) X(cuDeviceGet) X(cuDeviceGetName) X(cuDeviceGetAttribute) \
    X(cuDevicePrimaryCtxRetain) X(cuDevicePrimaryCtxRelease) \
    X(cuCtxSetCurrent) X(cuCtxGetCurrent) \
    X(cuMemAlloc) X(cuMemFree) X(cuMemGetAddressRange) \
    X(cuMemAllocHost) X(cuMemFreeHost) X(cuMemHostRegister) X(cuMemHostUnregister) \
    X(cuPointerGetAttribute) X(cuPointerGetAttributes) \
    X(cuMemcpy) X(cuMemcpyHtoD) X(cuMemcpyDtoH) X(cuMemcpyHtoDAsync) \
    X(cuMemcpyDtoHAsync) X(cuMemsetD8) \
    X(cuStreamCreate) X(cuStreamDestroy) X(cuStreamQuery) X(cuStreamSynchronize) \
    X(cuStreamWaitEvent) X(cuStreamWriteValue32) X(cuStreamWaitValue32) \
    X(cuEventCreate) X(cuEventRecord) X(cuEventQuery) X(cuEventSynchronize) \
    X(cuEventDestroy) \
    X(cuIpcGetMemHandle) X(cuIpcOpenMemHandle) X(cuIpcCloseMemHandle) \
    X(cuMemGetAllocationGranularity) X(cuMemCreate) X(cuMemRelease) \
    X(cuMemAddressReserve) X(cuMemAddressFree) X(cuMemMap) X(cuMemUnmap) \
    X(cuMemSetAccess) X(cuMemExportToShareableHandle) X(cuMemImportFromShareableHandle) \
    X(cuMemGetHandleForAddressRange)

struct ct_driver {
#define CT_FIELD(name) __typeof__(&name) name;
    CT_DRIVER_FUNCS(CT_FIELD)
#undef CT_FIELD
};

/* The driver's functions, all set (contract.c) before any check runs. */
extern struct ct_driver cu;

/* contract.c: reporting */

/* Prints "NAME: RESULT"; a RESULT other than EXPECT is a failure. */
void ct_check(const char *name, const char *expect, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* Prints "info NAME: RESULT", never a failure. */
void ct_info(const char *name, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* The error's name as cuGetErrorName gives it, else "CUresult=N". */
const char *ct_err(CUresult r);
/* Counts a failure that has no line of its own (a call that prepares a
 * check failed), said on stderr. */
void ct_fail(const char *name, const char *why);
/* Whether a check failed so far (a child's exit status). */
int ct_failed(void);
/* Runs this program again as "SELF ARGS[0] DRIVER ARGS[1]..." (ARGS is
 * NULL-terminated, ARGS[0] the child's mode) and waits; its stdout is
 * ours. Its exit status, 128 + the signal that killed it, or -1. */
int ct_spawn_child(const char *const *args, const char *what);

/* Fills N bytes with a pattern that depends on SEED; ct_pattern_bad
 * gives the first offset that differs from it, or -1. */
void ct_pattern(unsigned char *p, size_t n, unsigned seed);
long ct_pattern_bad(const unsigned char *p, size_t n, unsigned seed);

/* Groups of checks, in the order main runs them. Each needs a current
 * context except ct_check_init, which makes it. */
int ct_check_init(void);                /* contract_init.c; 0: a context is current */
void ct_check_memory(void);             /* contract_mem.c */
void ct_check_pointers(void);           /* contract_ptr.c */
void ct_check_streams(void);            /* contract_stream.c */
void ct_check_ipc(void);                /* contract_ipc.c */
void ct_check_vmm(void);                /* contract_vmm.c */
void ct_check_dmabuf(void);             /* contract_vmm.c */
void ct_check_misaligned(void);         /* contract_stream.c, last: it may break the context */

/* The children's side: exit status 0 when every check passed. */
int ct_child_init(void);                /* cuInit and a current context */
int ct_ipc_child(int argc, char **argv);        /* --ipc-child */
int ct_vmm_child(int argc, char **argv);        /* --vmm-child */

/* contract_ptr.c: the attributes weft asks of every buffer, in the one
 * cuPointerGetAttributes call it makes (plugins/cuda-common/cudrv_ptr.c),
 * outputs zeroed first as weft zeroes them. */
struct ct_ptr {
    unsigned int memory_type;
    unsigned int is_managed;
    int ordinal;
    unsigned long long buffer_id;
    unsigned int legacy_ipc;
    unsigned long long handle_types;
    CUdeviceptr start;
    size_t size;
};
CUresult ct_ptr_query(CUdeviceptr p, struct ct_ptr *out);
/* "DEVICE", "HOST", ... or the number. */
const char *ct_memory_type(unsigned int t);

/* A device attribute of device 0, -1 if the query fails. */
int ct_dev_attr(CUdevice_attribute attr);

#endif
