/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * unsupported.c: the rest of libibverbs' exported interface, so that
 * every name and version a program may resolve exists. What this device
 * does not offer (shared receive queues, multicast, memory import, ECE)
 * fails as a provider without it fails, with EOPNOTSUPP. Fork support needs no set-up on the kernels this runs
 * on (IBV_FORK_UNNEEDED), so the fork calls succeed doing nothing.
 *
 * The IBVERBS_1.0 versions of the names that have a 1.1 version belong
 * to the ABI of libibverbs before 2007, with other structures; they exist
 * so that a program resolving them finds them, and fail with ENOSYS
 * saying so, rather than be mistaken for the current ones.
 */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

#include "tests/swrdma/swrdma.h"

SW_DEFAULT(ibv_create_srq) struct ibv_srq *sw_create_srq(struct ibv_pd *pd,
                                                         struct ibv_srq_init_attr *attr);
struct ibv_srq *sw_create_srq(struct ibv_pd *pd, struct ibv_srq_init_attr *attr)
{
    errno = EOPNOTSUPP;
    return NULL;
}

SW_DEFAULT(ibv_modify_srq) int sw_modify_srq(struct ibv_srq *srq, struct ibv_srq_attr *attr, int mask);
int sw_modify_srq(struct ibv_srq *srq, struct ibv_srq_attr *attr, int mask)
{
    return EOPNOTSUPP;
}

SW_DEFAULT(ibv_query_srq) int sw_query_srq(struct ibv_srq *srq, struct ibv_srq_attr *attr);
int sw_query_srq(struct ibv_srq *srq, struct ibv_srq_attr *attr)
{
    return EOPNOTSUPP;
}

SW_DEFAULT(ibv_destroy_srq) int sw_destroy_srq(struct ibv_srq *srq);
int sw_destroy_srq(struct ibv_srq *srq)
{
    return EOPNOTSUPP;
}

SW_DEFAULT(ibv_attach_mcast) int sw_attach_mcast(struct ibv_qp *qp, const union ibv_gid *gid,
                                                 uint16_t lid);
int sw_attach_mcast(struct ibv_qp *qp, const union ibv_gid *gid, uint16_t lid)
{
    return EOPNOTSUPP;
}

SW_DEFAULT(ibv_detach_mcast) int sw_detach_mcast(struct ibv_qp *qp, const union ibv_gid *gid,
                                                 uint16_t lid);
int sw_detach_mcast(struct ibv_qp *qp, const union ibv_gid *gid, uint16_t lid)
{
    return EOPNOTSUPP;
}

int ibv_fork_init(void)
{
    return 0;
}

enum ibv_fork_status ibv_is_fork_initialized(void)
{
    return IBV_FORK_UNNEEDED;
}

int ibv_dontfork_range(void *base, size_t size);
int ibv_dontfork_range(void *base, size_t size)
{
    return 0;
}

int ibv_dofork_range(void *base, size_t size);
int ibv_dofork_range(void *base, size_t size)
{
    return 0;
}

/* Providers are built in: there is nothing to register. Like rdma-core,
 * only the non-default version exists, for programs linked long ago. */
void sw_register_driver(const char *name, void *init_func)
    __attribute__((symver("ibv_register_driver@IBVERBS_1.1")));
void sw_register_driver(const char *name, void *init_func)
{
}

struct ibv_qp_ex *ibv_qp_to_qp_ex(struct ibv_qp *qp)
{
    return NULL;    /* no QP here is created with send-ops flags */
}

struct ibv_context *ibv_import_device(int cmd_fd)
{
    errno = EOPNOTSUPP;
    return NULL;
}

struct ibv_pd *ibv_import_pd(struct ibv_context *context, uint32_t pd_handle)
{
    errno = EOPNOTSUPP;
    return NULL;
}

void ibv_unimport_pd(struct ibv_pd *pd)
{
}

struct ibv_mr *ibv_import_mr(struct ibv_pd *pd, uint32_t mr_handle)
{
    errno = EOPNOTSUPP;
    return NULL;
}

void ibv_unimport_mr(struct ibv_mr *mr)
{
}

struct ibv_dm *ibv_import_dm(struct ibv_context *context, uint32_t dm_handle)
{
    errno = EOPNOTSUPP;
    return NULL;
}

void ibv_unimport_dm(struct ibv_dm *dm)
{
}

int ibv_query_ece(struct ibv_qp *qp, struct ibv_ece *ece)
{
    return EOPNOTSUPP;
}

int ibv_set_ece(struct ibv_qp *qp, struct ibv_ece *ece)
{
    return EOPNOTSUPP;
}

/* Data within a message may land in any order on a real NIC: say so. */
int ibv_query_qp_data_in_order(struct ibv_qp *qp, enum ibv_wr_opcode op, uint32_t flags)
{
    return 0;
}

int ibv_resolve_eth_l2_from_gid(struct ibv_context *context, struct ibv_ah_attr *attr,
                                uint8_t eth_mac[ETHERNET_LL_SIZE], uint16_t *vid)
{
    return EOPNOTSUPP;
}

/* rdma-core's own libraries use these; no program should. */
const char *ibv_get_sysfs_path(void);
const char *ibv_get_sysfs_path(void)
{
    return "/sys";
}

int ibv_read_sysfs_file(const char *dir, const char *file, char *buf, size_t size);
int ibv_read_sysfs_file(const char *dir, const char *file, char *buf, size_t size)
{
    return -1;
}

static void not_emulated(const char *name)
{
    sw_log("%s: not emulated by this device", name);
}

void ibv_copy_qp_attr_from_kern(void *dst, void *src);
void ibv_copy_qp_attr_from_kern(void *dst, void *src)
{
    not_emulated(__func__);
}

void ibv_copy_ah_attr_from_kern(void *dst, void *src);
void ibv_copy_ah_attr_from_kern(void *dst, void *src)
{
    not_emulated(__func__);
}

void ibv_copy_path_rec_from_kern(void *dst, void *src);
void ibv_copy_path_rec_from_kern(void *dst, void *src)
{
    not_emulated(__func__);
}

void ibv_copy_path_rec_to_kern(void *dst, void *src);
void ibv_copy_path_rec_to_kern(void *dst, void *src)
{
    not_emulated(__func__);
}

/* ---------------------------------------------------------------- IBVERBS_1.0 */
static void compat_call(const char *name)
{
    sw_log("%s@IBVERBS_1.0: the libibverbs 1.0 ABI is not emulated; resolve IBVERBS_1.1", name);
    errno = ENOSYS;
}

#define SW_COMPAT_PTR(name)                                                        \
    void *sw_compat_##name(void) __attribute__((symver(#name "@IBVERBS_1.0")));    \
    void *sw_compat_##name(void)                                                   \
    {                                                                              \
        compat_call(#name);                                                        \
        return NULL;                                                               \
    }
#define SW_COMPAT_INT(name)                                                        \
    int sw_compat_##name(void) __attribute__((symver(#name "@IBVERBS_1.0")));      \
    int sw_compat_##name(void)                                                     \
    {                                                                              \
        compat_call(#name);                                                        \
        return ENOSYS;                                                             \
    }
#define SW_COMPAT_VOID(name)                                                       \
    void sw_compat_##name(void) __attribute__((symver(#name "@IBVERBS_1.0")));     \
    void sw_compat_##name(void)                                                    \
    {                                                                              \
        compat_call(#name);                                                        \
    }

SW_COMPAT_PTR(ibv_get_device_list)
SW_COMPAT_VOID(ibv_free_device_list)
SW_COMPAT_PTR(ibv_get_device_name)
SW_COMPAT_INT(ibv_get_device_guid)
SW_COMPAT_PTR(ibv_open_device)
SW_COMPAT_INT(ibv_close_device)
SW_COMPAT_INT(ibv_get_async_event)
SW_COMPAT_VOID(ibv_ack_async_event)
SW_COMPAT_INT(ibv_query_device)
SW_COMPAT_INT(ibv_query_port)
SW_COMPAT_INT(ibv_query_gid)
SW_COMPAT_INT(ibv_query_pkey)
SW_COMPAT_PTR(ibv_alloc_pd)
SW_COMPAT_INT(ibv_dealloc_pd)
SW_COMPAT_PTR(ibv_reg_mr)
SW_COMPAT_INT(ibv_dereg_mr)
SW_COMPAT_PTR(ibv_create_cq)
SW_COMPAT_INT(ibv_resize_cq)
SW_COMPAT_INT(ibv_destroy_cq)
SW_COMPAT_INT(ibv_get_cq_event)
SW_COMPAT_VOID(ibv_ack_cq_events)
SW_COMPAT_PTR(ibv_create_srq)
SW_COMPAT_INT(ibv_modify_srq)
SW_COMPAT_INT(ibv_query_srq)
SW_COMPAT_INT(ibv_destroy_srq)
SW_COMPAT_PTR(ibv_create_qp)
SW_COMPAT_INT(ibv_query_qp)
SW_COMPAT_INT(ibv_modify_qp)
SW_COMPAT_INT(ibv_destroy_qp)
SW_COMPAT_PTR(ibv_create_ah)
SW_COMPAT_INT(ibv_destroy_ah)
SW_COMPAT_INT(ibv_attach_mcast)
SW_COMPAT_INT(ibv_detach_mcast)
