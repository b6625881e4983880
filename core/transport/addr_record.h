/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * addr_record.h: the record every rank publishes at the rendezvous: who it
 * is (pid, host id), where it runs (its topology summary) and how each of
 * its transports is reached. Fixed-width little-endian fields, so a
 * record is read the same way everywhere:
 *
 *     u32 magic | u32 version | u32 pid | u32 n | host id (WEFT__HOSTID_MAX)
 *     | topology summary (WEFT__TOPO_SUMMARY_WIRE) | n entries
 *
 * an entry being a NUL-padded transport name (WEFT__PLUGIN_NAME_MAX), a u32
 * length and that many address bytes. wireup.c writes records (it asks
 * the plugins for their addresses); this file reads them, from other
 * ranks, so it trusts nothing in them.
 */
#ifndef WEFT_CORE_ADDR_RECORD_H
#define WEFT_CORE_ADDR_RECORD_H

#include <stddef.h>
#include <stdint.h>

#include "weft.h"
#include "weft/transport.h"
#include "core/transport/plugin.h"
#include "topo/topo.h"

#define WEFT__ADDR_RECORD_MAGIC 0x77656674u /* "weft" */
/* 2: the rank's topology summary follows the host id. 3: the summary
 * names the machine and the rank's CPUs. */
#define WEFT__ADDR_RECORD_VERSION 3u
#define WEFT__ADDR_RECORD_HEADER (4 + 4 + 4 + 4 + WEFT__HOSTID_MAX + WEFT__TOPO_SUMMARY_WIRE)
#define WEFT__ADDR_ENTRY_HEADER (WEFT__PLUGIN_NAME_MAX + 4)

typedef struct weft__addr_entry {
    char name[WEFT__PLUGIN_NAME_MAX];   /* NUL-terminated */
    const unsigned char *addr;          /* buf */
    size_t len;                         /* at most WEFT_TRANSPORT_ADDR_MAX */
    /* Records pack addresses at any offset; a plugin may read its own as
     * a struct, so it gets an aligned copy. */
    _Alignas(16) unsigned char buf[WEFT_TRANSPORT_ADDR_MAX];
} weft__addr_entry_t;

typedef struct weft__addr_record {
    uint32_t pid;
    char host_id[WEFT__HOSTID_MAX];     /* NUL-terminated */
    weft__topo_summary_t topo;
    int n;                              /* entries, at most WEFT__PLUGIN_MAX */
    weft__addr_entry_t entries[WEFT__PLUGIN_MAX];
} weft__addr_record_t;

/* Reads the len bytes of rank's record at buf into *rec. Bytes past the
 * last entry are ignored. WEFT_ERR_BOOTSTRAP naming rank when the record
 * is not weft's, of another version, or malformed (an entry count over
 * WEFT__PLUGIN_MAX, an entry cut short or an address over
 * WEFT_TRANSPORT_ADDR_MAX); *rec is then partly written. */
weft_result_t weft__addr_record_parse(int rank, const unsigned char *buf, size_t len,
                                      weft__addr_record_t *rec);

#endif /* WEFT_CORE_ADDR_RECORD_H */
