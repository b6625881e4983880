/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * addr_record.c: reading the address records of other ranks
 * (addr_record.h).
 */
#include "config.h"

#include <string.h>

#include "core/base/error.h"
#include "core/transport/addr_record.h"

static uint32_t get_u32(const unsigned char *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

weft_result_t weft__addr_record_parse(int rank, const unsigned char *buf, size_t len,
                                      weft__addr_record_t *rec)
{
    const unsigned char *p = buf + WEFT__ADDR_RECORD_HEADER, *end = buf + len;

    if (len < WEFT__ADDR_RECORD_HEADER || get_u32(buf) != WEFT__ADDR_RECORD_MAGIC)
        return weft__error(WEFT_ERR_BOOTSTRAP, "rank %d published a record weft cannot read "
                           "(another program or weft version?)", rank);
    if (get_u32(buf + 4) != WEFT__ADDR_RECORD_VERSION)
        return weft__error(WEFT_ERR_BOOTSTRAP, "rank %d runs a weft with address record "
                           "version %u, this rank %u", rank, get_u32(buf + 4),
                           WEFT__ADDR_RECORD_VERSION);
    rec->pid = get_u32(buf + 8);
    rec->n = (int)get_u32(buf + 12);
    if (rec->n < 0 || rec->n > WEFT__PLUGIN_MAX)
        goto err_bad;
    memcpy(rec->host_id, buf + 16, WEFT__HOSTID_MAX);
    rec->host_id[WEFT__HOSTID_MAX - 1] = '\0';
    weft__topo_summary_decode(buf + 16 + WEFT__HOSTID_MAX, rec->host_id, &rec->topo);
    for (int i = 0; i < rec->n; i++) {
        weft__addr_entry_t *e = &rec->entries[i];

        if ((size_t)(end - p) < WEFT__ADDR_ENTRY_HEADER)
            goto err_bad;
        memcpy(e->name, p, WEFT__PLUGIN_NAME_MAX);
        e->name[WEFT__PLUGIN_NAME_MAX - 1] = '\0';
        e->len = get_u32(p + WEFT__PLUGIN_NAME_MAX);
        if (e->len > WEFT_TRANSPORT_ADDR_MAX ||
            (size_t)(end - p) < WEFT__ADDR_ENTRY_HEADER + e->len)
            goto err_bad;
        memcpy(e->buf, p + WEFT__ADDR_ENTRY_HEADER, e->len);
        e->addr = e->buf;
        p += WEFT__ADDR_ENTRY_HEADER + e->len;
    }
    return WEFT_SUCCESS;

err_bad:
    return weft__error(WEFT_ERR_BOOTSTRAP, "rank %d published a malformed address record", rank);
}
