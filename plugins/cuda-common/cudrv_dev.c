/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * cudrv_dev.c: what each device is and can do, for the GPU transports'
 * choices and one line of weft-info per device.
 *
 * An attribute the driver does not know (CUDA_ERROR_INVALID_VALUE from an
 * older driver) reads as "not supported": a feature is on only when the
 * driver says it is. A device feature that needs optional driver
 * functions (VMM, dma-buf) is on only when those were resolved too. The
 * 32-bit stream memory operations have had no device attribute since
 * CUDA 12 (the v2 ones work everywhere); their functions are required.
 */
#include "config.h"

#include <stdio.h>
#include <string.h>

#include "plugins/cuda-common/cudrv.h"

static const struct {
    CUdevice_attribute attr;
    uint32_t bit;
    const char *name;
} dev_attrs[] = {
    { CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED, WCU_DEV_VMM, "vmm" },
    { CU_DEVICE_ATTRIBUTE_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR_SUPPORTED, WCU_DEV_POSIX_FD,
      "posix-fd" },
    { CU_DEVICE_ATTRIBUTE_DMA_BUF_SUPPORTED, WCU_DEV_DMA_BUF, "dma-buf" },
    { CU_DEVICE_ATTRIBUTE_UNIFIED_ADDRESSING, WCU_DEV_UVA, "uva" },
    { CU_DEVICE_ATTRIBUTE_GPU_DIRECT_RDMA_SUPPORTED, WCU_DEV_GDR, "gdr" },
    { CU_DEVICE_ATTRIBUTE_CAN_USE_64_BIT_STREAM_MEM_OPS, WCU_DEV_MEMOPS64, "memops64" },
    { CU_DEVICE_ATTRIBUTE_CAN_USE_STREAM_WAIT_VALUE_NOR, WCU_DEV_WAIT_NOR, "wait-nor" },
    { CU_DEVICE_ATTRIBUTE_CAN_FLUSH_REMOTE_WRITES, WCU_DEV_FLUSH, "flush" },
};

#define NATTRS (sizeof(dev_attrs) / sizeof(dev_attrs[0]))

void weft__cudrv_dev_uuid_text(const CUuuid *u, char *buf, size_t cap)
{
    const unsigned char *b = (const unsigned char *)u->bytes;

    snprintf(buf, cap, "GPU-%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-"
             "%02x%02x%02x%02x%02x%02x", b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7], b[8],
             b[9], b[10], b[11], b[12], b[13], b[14], b[15]);
}

static int failed(const struct wcu_drv *d, CUresult rc, const char *call, int ordinal,
                  char *why, size_t cap)
{
    char err[160];

    weft__cudrv_err_text(d, rc, err, sizeof(err));
    snprintf(why, cap, "CUDA device %d: %s failed: %s", ordinal, call, err);
    return -1;
}

int weft__cudrv_dev_query(const struct wcu_drv *d, int ordinal, struct wcu_dev *dev,
                          char *why, size_t cap)
{
    const struct wcu_fns *f = &d->fn;
    CUuuid uuid;
    CUresult rc;

    memset(dev, 0, sizeof(*dev));
    dev->ordinal = ordinal;
    rc = f->cuDeviceGet(&dev->dev, ordinal);
    if (rc != CUDA_SUCCESS)
        return failed(d, rc, "cuDeviceGet", ordinal, why, cap);
    rc = f->cuDeviceGetName(dev->name, (int)sizeof(dev->name), dev->dev);
    if (rc != CUDA_SUCCESS)
        return failed(d, rc, "cuDeviceGetName", ordinal, why, cap);
    dev->name[sizeof(dev->name) - 1] = '\0';
    rc = f->cuDeviceGetUuid(&uuid, dev->dev);
    if (rc != CUDA_SUCCESS)
        return failed(d, rc, "cuDeviceGetUuid", ordinal, why, cap);
    weft__cudrv_dev_uuid_text(&uuid, dev->uuid, sizeof(dev->uuid));
    rc = f->cuDeviceGetPCIBusId(dev->pci, (int)sizeof(dev->pci), dev->dev);
    if (rc != CUDA_SUCCESS)
        return failed(d, rc, "cuDeviceGetPCIBusId", ordinal, why, cap);
    dev->pci[sizeof(dev->pci) - 1] = '\0';
    rc = f->cuDeviceGetAttribute(&dev->cc_major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR,
                                 dev->dev);
    if (rc == CUDA_SUCCESS)
        rc = f->cuDeviceGetAttribute(&dev->cc_minor,
                                     CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, dev->dev);
    if (rc != CUDA_SUCCESS)
        return failed(d, rc, "cuDeviceGetAttribute(compute capability)", ordinal, why, cap);
    for (size_t i = 0; i < NATTRS; i++) {
        int v = 0;

        if (f->cuDeviceGetAttribute(&v, dev_attrs[i].attr, dev->dev) == CUDA_SUCCESS && v)
            dev->features |= dev_attrs[i].bit;
    }
    dev->features |= WCU_DEV_MEMOPS;
    if (!(d->features & (1u << WCU_FEAT_VMM)))
        dev->features &= ~(WCU_DEV_VMM | WCU_DEV_POSIX_FD);
    if (!(d->features & (1u << WCU_FEAT_RANGE_HANDLE)))
        dev->features &= ~WCU_DEV_DMA_BUF;
    return 0;
}

void weft__cudrv_dev_describe(const struct wcu_dev *dev, char *buf, size_t cap)
{
    size_t o;

    o = (size_t)snprintf(buf, cap, "cuda%d %s %s, sm_%d%d, PCI %s:", dev->ordinal, dev->uuid,
                         dev->name, dev->cc_major, dev->cc_minor, dev->pci);
    if (o < cap && (dev->features & WCU_DEV_MEMOPS))
        o += (size_t)snprintf(buf + o, cap - o, " memops");
    for (size_t i = 0; i < NATTRS && o < cap; i++)
        if (dev->features & dev_attrs[i].bit)
            o += (size_t)snprintf(buf + o, cap - o, " %s", dev_attrs[i].name);
    if (o < cap && !dev->features)
        snprintf(buf + o, cap - o, " no features");
}
