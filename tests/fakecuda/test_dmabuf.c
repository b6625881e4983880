/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_dmabuf.c: cuMemGetHandleForAddressRange's dma-buf descriptor
 * used as a NIC uses it, end to end with the software RDMA device
 * (tests/swrdma): device memory from cuMemAlloc, and a VMM mapping, are
 * registered from their descriptor with ibv_reg_dmabuf_mr, written by an
 * RDMA write from another QP, and read back with cuMemcpyDtoH at the
 * device address. Errors: ranges off the host page size, a handle type
 * that is not dma-buf, memory the double did not allocate.
 */
#include "config.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "tests/fakecuda/fctest.h"
#include "tests/swrdma/swtest.h"

enum { N = 1 << 16 };

/* RDMA-writes N bytes of 0x6e from a host buffer into the region that
 * FD (a dma-buf of device memory) registers, through a pair of QPs. */
static void rdma_write_into(int fd)
{
    struct swt_dev d;
    FCT_TRUE(swt_open(&d) == 0);
    struct ibv_cq *cq_a = ibv_create_cq(d.ctx, 15, NULL, NULL, 0);
    struct ibv_cq *cq_b = ibv_create_cq(d.ctx, 15, NULL, NULL, 0);
    FCT_TRUE(cq_a && cq_b);
    struct ibv_qp_init_attr ia = { .send_cq = cq_a, .recv_cq = cq_a, .qp_type = IBV_QPT_RC,
                                   .cap = { 4, 4, 1, 1, 0 } };
    struct ibv_qp *a = ibv_create_qp(d.pd, &ia);
    ia.send_cq = ia.recv_cq = cq_b;
    struct ibv_qp *b = ibv_create_qp(d.pd, &ia);
    struct swt_conn c = swt_conn_default();
    FCT_TRUE(a && b && swt_pair(&d, a, b, &c) == 0);
    static char src[N];
    memset(src, 0x6e, N);
    struct ibv_mr *smr = ibv_reg_mr(d.pd, src, N, IBV_ACCESS_LOCAL_WRITE);
    /* iova 0: the region's first byte, as a GPU transport would offer it */
    struct ibv_mr *dmr = ibv_reg_dmabuf_mr(d.pd, 0, N, 0, fd,
                                           IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
    FCT_TRUE(smr && dmr);
    FCT_TRUE(swt_send(a, IBV_WR_RDMA_WRITE, 1, src, N, smr->lkey, IBV_SEND_SIGNALED, 0,
                      dmr->rkey, 0) == 0);
    struct ibv_wc wc;
    FCT_TRUE(swt_poll(cq_a, &wc, 1, 5000) == 1 && wc.status == IBV_WC_SUCCESS);
    ibv_dereg_mr(dmr);
    ibv_dereg_mr(smr);
    ibv_destroy_qp(a);
    ibv_destroy_qp(b);
    ibv_destroy_cq(cq_a);
    ibv_destroy_cq(cq_b);
    swt_close(&d);
}

static void check_written(CUdeviceptr p)
{
    static char buf[N];
    FCT_OK(cuMemcpyDtoH(buf, p, N));
    for (size_t i = 0; i < N; i++)
        FCT_TRUE(buf[i] == 0x6e);
}

static void alloc_child(void)
{
    fct_up(0);
    int attr = 0;
    FCT_OK(cuDeviceGetAttribute(&attr, CU_DEVICE_ATTRIBUTE_DMA_BUF_SUPPORTED, 0));
    FCT_TRUE(attr == 1);
    CUdeviceptr p;
    int fd = -1;
    FCT_OK(cuMemAlloc(&p, 2 * N));
    FCT_OK(cuMemsetD8(p, 0, 2 * N));
    FCT_EXPECT(cuMemGetHandleForAddressRange(&fd, p, N + 1, CU_MEM_RANGE_HANDLE_TYPE_DMA_BUF_FD, 0),
               CUDA_ERROR_INVALID_VALUE);
    FCT_EXPECT(cuMemGetHandleForAddressRange(&fd, p + 8, N, CU_MEM_RANGE_HANDLE_TYPE_DMA_BUF_FD, 0),
               CUDA_ERROR_INVALID_VALUE);
    FCT_EXPECT(cuMemGetHandleForAddressRange(&fd, p, N, (CUmemRangeHandleType)2, 0),
               CUDA_ERROR_INVALID_VALUE);
    static char host[N];
    FCT_EXPECT(cuMemGetHandleForAddressRange(&fd, (CUdeviceptr)(uintptr_t)host, 4096,
                                             CU_MEM_RANGE_HANDLE_TYPE_DMA_BUF_FD, 0),
               CUDA_ERROR_INVALID_VALUE);
    FCT_OK(cuMemGetHandleForAddressRange(&fd, p, N, CU_MEM_RANGE_HANDLE_TYPE_DMA_BUF_FD, 0));
    FCT_TRUE(fd >= 0);
    rdma_write_into(fd);
    close(fd);
    check_written(p);
    /* nothing past the range was touched */
    char after;
    FCT_OK(cuMemcpyDtoH(&after, p + N, 1));
    FCT_TRUE(after == 0);
}

static void alloc(void **state)
{
    assert_int_equal(fct_child(alloc_child), 0);
}

static void vmm_child(void)
{
    fct_up(0);
    CUmemAllocationProp prop;
    memset(&prop, 0, sizeof(prop));
    prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
    prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    size_t g;
    FCT_OK(cuMemGetAllocationGranularity(&g, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM));
    CUmemGenericAllocationHandle h;
    CUdeviceptr va;
    FCT_OK(cuMemCreate(&h, g, &prop, 0));
    FCT_OK(cuMemAddressReserve(&va, g, 0, 0, 0));
    FCT_OK(cuMemMap(va, g, 0, h, 0));
    CUmemAccessDesc acc = { .location = { CU_MEM_LOCATION_TYPE_DEVICE, 0 },
                            .flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE };
    FCT_OK(cuMemSetAccess(va, g, &acc, 1));
    int fd = -1;
    FCT_OK(cuMemGetHandleForAddressRange(&fd, va, g, CU_MEM_RANGE_HANDLE_TYPE_DMA_BUF_FD, 0));
    rdma_write_into(fd);
    close(fd);
    check_written(va);
}

static void vmm(void **state)
{
    assert_int_equal(fct_child(vmm_child), 0);
}

int main(void)
{
    swt_fabric("fakecuda-dmabuf");
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(alloc),
        cmocka_unit_test(vmm),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
