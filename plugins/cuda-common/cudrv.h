/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * cudrv.h: the CUDA driver as weft's GPU transports (cuda-ipc, gdr) see
 * it, compiled into each of them from plugins/cuda-common, a static
 * convenience library that libweft never links (tests/build/exports.sh).
 *
 * Loading (cudrv_sym.c)
 *   Nothing links libcuda: libcuda.so.1, or the file WEFT_CUDA_DRIVER
 *   names, is opened with dlopen, cuGetProcAddress_v2 is taken with dlsym
 *   and every other function comes from cuGetProcAddress at the CUDA
 *   version given beside it in the table: cuda.h #defines many names to
 *   _v2 or _v3 variants, so a name alone does not say which ABI a pointer
 *   has. Each field's type is the PFN_<name>_v<version> typedef of
 *   cudaTypedefs.h for the very version the driver is asked for, so type
 *   and ABI cannot drift apart.
 *
 * Opening (cudrv_open.c)
 *   Loads, then cuInit, the driver's version and the device count. Each
 *   way the driver can be of no use has its own status and one line that
 *   says why, which a plugin hands to the core as its "not applicable"
 *   reason (weft-info shows it).
 *
 * Devices (cudrv_dev.c), buffers (cudrv_ptr.c), error text (cudrv_err.c).
 *
 * Ownership: a struct wcu_drv owns its dlopen handle; no state is global,
 * so each plugin (and each of its contexts) opens its own. The library
 * itself stays loaded once cuInit has run (cudrv_open.c says why). Nothing here
 * locks: the core serialises calls into a plugin's context. The CUDA
 * calls themselves are thread-safe, as the driver makes them.
 */
#ifndef WEFT_CUDA_COMMON_CUDRV_H
#define WEFT_CUDA_COMMON_CUDRV_H

#include <stddef.h>
#include <stdint.h>

#include <cuda.h>
#include <cudaTypedefs.h>

#include "weft/transport.h"

#define WCU_DEFAULT_LIB "libcuda.so.1"
/* The exported int a test double of libcuda defines (the one weft's tests
 * build), so that it is never taken for a driver by accident. */
#define WCU_TEST_DOUBLE_SYMBOL "weft_fakecuda_test_double"
/* cuGetProcAddress_v2, which says why a function is missing, came with
 * CUDA 12.0 (driver R525): older drivers are refused. */
#define WCU_DRIVER_MIN 12000

#define WCU_WHY_MAX 512                 /* a path of 256 bytes and its reason */
#define WCU_NAME_MAX 128

/* ------------------------------------------------------------ cudrv_sym.c */

/* Optional groups of functions: each is on only when the driver gave
 * every function of the group. */
enum wcu_feature {
    WCU_FEAT_RANGE_HANDLE = 0,          /* cuMemGetHandleForAddressRange (dma-buf fds) */
    WCU_FEAT_VMM,                       /* cuMemCreate, ..., cuMemAddressReserve */
    WCU_FEAT_LAUNCH,                    /* cuModuleLoadData, cuModuleUnload,
                                         * cuModuleGetFunction, cuLaunchKernel */
    WCU_FEAT_COUNT
};

/* The driver functions the GPU transports call: name, the CUDA version
 * it is resolved at (the ABI of the PFN_<name>_v<version> typedef its
 * field has), and WCU_REQUIRED or the optional group it belongs to. The
 * one list makes both the struct and cudrv_sym.c's table, so a field's
 * type and the version asked for cannot drift apart. */
#define WCU_REQUIRED (-1)
#define WCU_FUNCTIONS(X)                                                             \
    X(cuInit, 2000, WCU_REQUIRED)                                                    \
    X(cuDriverGetVersion, 2020, WCU_REQUIRED)                                        \
    X(cuGetErrorName, 6000, WCU_REQUIRED)                                            \
    X(cuGetErrorString, 6000, WCU_REQUIRED)                                          \
    X(cuDeviceGet, 2000, WCU_REQUIRED)                                               \
    X(cuDeviceGetCount, 2000, WCU_REQUIRED)                                          \
    X(cuDeviceGetName, 2000, WCU_REQUIRED)                                           \
    /* v2: the MIG instance's UUID where MIG is on */                                \
    X(cuDeviceGetUuid, 11040, WCU_REQUIRED)                                          \
    X(cuDeviceGetAttribute, 2000, WCU_REQUIRED)                                      \
    X(cuDeviceGetPCIBusId, 4010, WCU_REQUIRED)                                       \
    X(cuDevicePrimaryCtxRetain, 7000, WCU_REQUIRED)                                  \
    X(cuDevicePrimaryCtxRelease, 11000, WCU_REQUIRED)                                \
    X(cuCtxSetCurrent, 4000, WCU_REQUIRED)                                           \
    X(cuCtxGetCurrent, 4000, WCU_REQUIRED)                                           \
    /* at 13000 it would be the two-argument cuCtxGetDevice_v2 */                   \
    X(cuCtxGetDevice, 2000, WCU_REQUIRED)                                            \
    X(cuMemAlloc, 3020, WCU_REQUIRED)                                                \
    X(cuMemFree, 3020, WCU_REQUIRED)                                                 \
    X(cuMemAllocHost, 3020, WCU_REQUIRED)                                            \
    X(cuMemFreeHost, 2000, WCU_REQUIRED)                                             \
    X(cuMemHostRegister, 6050, WCU_REQUIRED)                                         \
    X(cuMemHostUnregister, 4000, WCU_REQUIRED)                                       \
    X(cuMemcpy, 4000, WCU_REQUIRED)                                                  \
    X(cuMemcpyAsync, 4000, WCU_REQUIRED)                                             \
    X(cuMemcpyHtoD, 3020, WCU_REQUIRED)                                              \
    X(cuMemcpyDtoH, 3020, WCU_REQUIRED)                                              \
    X(cuMemsetD8, 3020, WCU_REQUIRED)                                                \
    X(cuPointerGetAttribute, 4000, WCU_REQUIRED)                                     \
    X(cuPointerGetAttributes, 7000, WCU_REQUIRED)                                    \
    X(cuIpcGetMemHandle, 4010, WCU_REQUIRED)                                         \
    X(cuIpcOpenMemHandle, 11000, WCU_REQUIRED)                                       \
    X(cuIpcCloseMemHandle, 4010, WCU_REQUIRED)                                       \
    X(cuStreamCreate, 2000, WCU_REQUIRED)                                            \
    X(cuStreamDestroy, 4000, WCU_REQUIRED)                                           \
    X(cuStreamSynchronize, 2000, WCU_REQUIRED)                                       \
    X(cuStreamQuery, 2000, WCU_REQUIRED)                                             \
    X(cuStreamWaitEvent, 3020, WCU_REQUIRED)                                         \
    X(cuEventCreate, 2000, WCU_REQUIRED)                                             \
    X(cuEventRecord, 2000, WCU_REQUIRED)                                             \
    X(cuEventSynchronize, 2000, WCU_REQUIRED)                                        \
    X(cuEventQuery, 2000, WCU_REQUIRED)                                              \
    X(cuEventDestroy, 4000, WCU_REQUIRED)                                            \
    /* the v2 stream memory operations, on everywhere since CUDA 11.7 (the v1       \
     * ones needed a kernel module option) */                                        \
    X(cuStreamWriteValue32, 11070, WCU_REQUIRED)                                     \
    X(cuStreamWaitValue32, 11070, WCU_REQUIRED)                                      \
    X(cuMemGetHandleForAddressRange, 11070, WCU_FEAT_RANGE_HANDLE)                   \
    X(cuMemCreate, 10020, WCU_FEAT_VMM)                                              \
    X(cuMemExportToShareableHandle, 10020, WCU_FEAT_VMM)                             \
    X(cuMemImportFromShareableHandle, 10020, WCU_FEAT_VMM)                           \
    X(cuMemMap, 10020, WCU_FEAT_VMM)                                                 \
    X(cuMemSetAccess, 10020, WCU_FEAT_VMM)                                           \
    X(cuMemAddressReserve, 10020, WCU_FEAT_VMM)                                      \
    X(cuMemAddressFree, 10020, WCU_FEAT_VMM)                                         \
    X(cuMemUnmap, 10020, WCU_FEAT_VMM)                                               \
    X(cuMemRelease, 10020, WCU_FEAT_VMM)                                             \
    X(cuMemRetainAllocationHandle, 11000, WCU_FEAT_VMM)                              \
    X(cuModuleLoadData, 2000, WCU_FEAT_LAUNCH)                                       \
    X(cuModuleUnload, 2000, WCU_FEAT_LAUNCH)                                         \
    X(cuModuleGetFunction, 2000, WCU_FEAT_LAUNCH)                                    \
    X(cuLaunchKernel, 4000, WCU_FEAT_LAUNCH)

/* Each function of the ABI of its version; NULL only for an optional one
 * the driver lacks. */
struct wcu_fns {
#define WCU_FIELD(name, ver, group) PFN_##name##_v##ver name;
    WCU_FUNCTIONS(WCU_FIELD)
#undef WCU_FIELD
};

/* Why a driver is of no use; WCU_OK when it is. */
enum wcu_status {
    WCU_OK = 0,
    WCU_NO_LIBRARY,                     /* dlopen failed */
    WCU_TEST_DOUBLE,                    /* a test double, not allowed */
    WCU_NOT_CUDA,                       /* the file is no CUDA driver */
    WCU_STUB,                           /* the toolkit's stub (CUDA_ERROR_STUB_LIBRARY) */
    WCU_TOO_OLD,                        /* older than WCU_DRIVER_MIN, or lacks a
                                         * required function */
    WCU_NO_DEVICE,                      /* CUDA_ERROR_NO_DEVICE, or no device counted */
    WCU_FAILED,                         /* any other failure of the driver */
    WCU_BAD_PARAM                       /* a WEFT_CUDA_* parameter is malformed */
};

struct wcu_drv {
    void *dl;
    char path[256];                     /* as opened */
    int test_double;                    /* exports WCU_TEST_DOUBLE_SYMBOL */
    int test_double_value;              /* and that int's value */
    int version;                        /* cuDriverGetVersion: 1000 * major + 10 * minor */
    int ndev;                           /* devices cuDeviceGetCount saw */
    uint32_t features;                  /* bit (1u << WCU_FEAT_*) per group resolved */
    char feature_why[WCU_FEAT_COUNT][96]; /* why each group that is off is off */
    struct wcu_fns fn;
};

/* Opens path (NULL or "": libcuda.so.1) and resolves every function of
 * struct wcu_fns. Refuses a test double unless allow_test_double. WCU_OK,
 * or another status with why filled and d left closed. Calls nothing but
 * cuGetProcAddress (no cuInit). */
enum wcu_status weft__cudrv_sym_load(struct wcu_drv *d, const char *path,
                                     int allow_test_double, char *why, size_t cap);
void weft__cudrv_sym_unload(struct wcu_drv *d);
/* The refusal of the toolkit's stub library at path. */
void weft__cudrv_sym_stub_why(const char *path, char *why, size_t cap);
/* "cuMemCreate@10020 ..." of the optional functions missing, "" when none
 * is. */
void weft__cudrv_sym_missing(const struct wcu_drv *d, char *buf, size_t cap);
/* The feature's name ("vmm") for logs. */
const char *weft__cudrv_sym_feature_name(enum wcu_feature f);

/* ------------------------------------------------------------ cudrv_open.c */

/* What a GPU transport calls at init: reads WEFT_CUDA_DRIVER and
 * WEFT_CUDA_ALLOW_TEST_DRIVER through core->get_param, loads the driver,
 * calls cuInit(0), checks the version (at least WCU_DRIVER_MIN) and that
 * a device is there. Logs one WARN line (as plugin) when a test double is
 * in use, one INFO line with the driver. WCU_OK, or the reason in why
 * (no "not applicable: " prefix: the core adds it) and d closed; a plugin
 * returns WEFT_ERR_INVALID_ARG for WCU_BAD_PARAM and WEFT_ERR_UNSUPPORTED
 * for the others. */
enum wcu_status weft__cudrv_open(struct wcu_drv *d, const weft_transport_core_t *core,
                                 const char *plugin, char *why, size_t cap);
void weft__cudrv_close(struct wcu_drv *d);

/* ------------------------------------------------------------ cudrv_dev.c */

/* Per-device features, as bits. */
#define WCU_DEV_VMM (1u << 0)           /* VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED and the
                                         * driver's VMM functions */
#define WCU_DEV_POSIX_FD (1u << 1)      /* HANDLE_TYPE_POSIX_FILE_DESCRIPTOR_SUPPORTED */
#define WCU_DEV_DMA_BUF (1u << 2)       /* DMA_BUF_SUPPORTED and
                                         * cuMemGetHandleForAddressRange */
#define WCU_DEV_UVA (1u << 3)           /* UNIFIED_ADDRESSING */
#define WCU_DEV_GDR (1u << 4)           /* GPU_DIRECT_RDMA_SUPPORTED */
#define WCU_DEV_MEMOPS (1u << 5)        /* 32-bit stream memory operations (v2) */
#define WCU_DEV_MEMOPS64 (1u << 6)      /* CAN_USE_64_BIT_STREAM_MEM_OPS */
#define WCU_DEV_WAIT_NOR (1u << 7)      /* CAN_USE_STREAM_WAIT_VALUE_NOR */
#define WCU_DEV_FLUSH (1u << 8)         /* CAN_FLUSH_REMOTE_WRITES */

struct wcu_dev {
    int ordinal;
    CUdevice dev;
    char uuid[48];                      /* "GPU-xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx" */
    char name[WCU_NAME_MAX];
    int cc_major, cc_minor;
    char pci[32];                       /* "0000:18:00.0" */
    uint32_t features;                  /* WCU_DEV_* */
};

/* Fills dev for ordinal (after a successful open). 0, or -1 with why. */
int weft__cudrv_dev_query(const struct wcu_drv *d, int ordinal, struct wcu_dev *dev,
                          char *why, size_t cap);
/* One line for the log and weft-info: "cuda0 GPU-... NVIDIA H100, sm_90,
 * PCI 0000:18:00.0: memops vmm posix-fd dma-buf uva gdr memops64". */
void weft__cudrv_dev_describe(const struct wcu_dev *dev, char *buf, size_t cap);
/* The 16 bytes of a CUuuid as text, as nvidia-smi writes it. */
void weft__cudrv_dev_uuid_text(const CUuuid *u, char *buf, size_t cap);

/* ------------------------------------------------------------ cudrv_ptr.c */

enum wcu_mem {
    WCU_MEM_HOST = 0,                   /* not CUDA's: plain host memory */
    WCU_MEM_PINNED,                     /* host memory CUDA allocated or registered */
    WCU_MEM_DEVICE,
    WCU_MEM_MANAGED
};

struct wcu_ptr {
    enum wcu_mem mem;
    int ordinal;                        /* device it was allocated or registered on;
                                         * -1 for host memory */
    unsigned long long buffer_id;       /* unique per allocation within the process;
                                         * 0 for host memory */
    int legacy_ipc;                     /* fit for cuIpcGetMemHandle */
    unsigned long long handle_types;    /* CU_MEM_HANDLE_TYPE_* it may be exported as */
    uintptr_t start;                    /* the allocation's range */
    size_t size;
};

/* What the attributes of one cuPointerGetAttributes call say. */
struct wcu_ptr_attrs {
    unsigned int memory_type;           /* CUmemorytype, 0 for memory not CUDA's */
    unsigned int is_managed;
    int ordinal;
    unsigned long long buffer_id;
    unsigned int legacy_ipc;
    unsigned long long handle_types;
    CUdeviceptr start;
    size_t size;
};

/* Classifies ptr with one cuPointerGetAttributes call. Memory CUDA does
 * not know is WCU_MEM_HOST, whether the driver says so with CUDA_SUCCESS
 * and no memory type (as its documentation promises) or with
 * CUDA_ERROR_INVALID_CONTEXT (no context with unified addressing knows
 * the pointer). 0, or -1 with why for any other error. */
int weft__cudrv_ptr_query(const struct wcu_drv *d, const void *ptr, struct wcu_ptr *out,
                          char *why, size_t cap);
/* The classification alone, from attributes already read (tests). */
void weft__cudrv_ptr_decode(const struct wcu_ptr_attrs *a, struct wcu_ptr *out);
const char *weft__cudrv_ptr_mem_name(enum wcu_mem mem);

/* ------------------------------------------------------------ cudrv_err.c */

/* "CUDA_ERROR_NO_DEVICE (no CUDA-capable device is detected)", or the
 * number where the driver cannot name it (not loaded, or a stub). */
void weft__cudrv_err_text(const struct wcu_drv *d, CUresult rc, char *buf, size_t cap);

#endif /* WEFT_CUDA_COMMON_CUDRV_H */
