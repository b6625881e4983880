/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * tp_mem.h: host memory only, for transports that copy (through a ring, a
 * socket, or another process's memory with process_vm_readv): any host
 * buffer serves as it is, so registering one does nothing and gives a
 * NULL handle, and other memory types are refused (weft__tp_describe
 * announces host memory alone). Part of plugins/common (see tp.h).
 */
#ifndef WEFT_TP_MEM_H
#define WEFT_TP_MEM_H

#include <stddef.h>
#include <stdint.h>

#include "weft/transport.h"

/* Entry points, for the plugin's weft_transport_v1 table. */
weft_result_t weft__tp_mem_register(void *ctx, void *buf, size_t len, int mem_type,
                                    void **mhandle);
weft_result_t weft__tp_mem_deregister(void *ctx, void *mhandle);

#endif /* WEFT_TP_MEM_H */
