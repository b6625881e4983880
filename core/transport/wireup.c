/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * wireup.c: this rank's address record for the rendezvous, and choosing
 * and connecting one transport per peer (wireup.h).
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/base/error.h"
#include "core/base/log.h"
#include "core/boot/store.h"
#include "core/transport/addr_record.h"
#include "core/transport/wireup.h"

/* The plugins' out-of-band exchange (weft/transport.h): through the
 * bootstrap's store, which exists from connect() on, through PMIx's
 * publish and lookup in a job that joined through PMIx, or through the
 * caller's key-value store (weft_init_attr_t.kvs). */
static weft_result_t plugin_oob_put(void *core_ctx, const char *key, const void *val, size_t len)
{
    weft__wireup_t *wire = core_ctx;

    if (wire->boot && wire->boot->store)
        return weft__store_set(wire->boot->store, key, val, len);
    if (wire->boot && wire->boot->params.kind == WEFT__BOOT_KVS)
        return weft__kvs_put(wire->boot, key, val, len);
#ifdef WEFT_HAVE_PMIX
    if (wire->boot && wire->boot->params.kind == WEFT__BOOT_PMIX)
        return weft__pmix_put(key, val, len);
#endif
    return weft__error(WEFT_ERR_UNSUPPORTED, "out-of-band exchange is available from "
                       "connect() on");
}

static weft_result_t plugin_oob_get(void *core_ctx, const char *key, void *val, size_t cap,
                                    size_t *len, int timeout_ms)
{
    weft__wireup_t *wire = core_ctx;

    if (wire->boot && wire->boot->store)
        return weft__store_get(wire->boot->store, key, val, cap, len, timeout_ms);
    if (wire->boot && wire->boot->params.kind == WEFT__BOOT_KVS)
        return weft__kvs_get(wire->boot, key, val, cap, len, timeout_ms);
#ifdef WEFT_HAVE_PMIX
    if (wire->boot && wire->boot->params.kind == WEFT__BOOT_PMIX)
        return weft__pmix_get(key, val, cap, len, timeout_ms);
#endif
    return weft__error(WEFT_ERR_UNSUPPORTED, "out-of-band exchange is available from "
                       "connect() on");
}

/* The topology's nearness of a device to this rank, for plugins that
 * order their devices (weft/transport.h). */
static weft_transport_nearness_t plugin_device_nearness(void *core_ctx, const char *name)
{
    static const weft_transport_nearness_t as_abi[] = {
        [WEFT__TOPO_NEAR_GPU] = WEFT_TRANSPORT_NEAR_GPU,
        [WEFT__TOPO_NEAR_NUMA] = WEFT_TRANSPORT_NEAR_NUMA,
        [WEFT__TOPO_NEAR_HOST] = WEFT_TRANSPORT_NEAR_HOST,
        [WEFT__TOPO_NEAR_UNKNOWN] = WEFT_TRANSPORT_NEAR_UNKNOWN,
    };
    weft__wireup_t *wire = core_ctx;

    if (!wire->topo)
        return WEFT_TRANSPORT_NEAR_UNKNOWN;
    return as_abi[weft__topo_nearness(wire->topo, name)];
}

void weft__wireup_init(weft__wireup_t *wire, int rank, int size, const char *master_addr)
{
    wire->rank = rank;
    wire->size = size;
    weft__transport_core_defaults(&wire->core);
    wire->core.rank = rank;
    wire->core.size = size;
    wire->core.job_id = wire->job_id;
    wire->core.master_addr = master_addr;
    wire->core.oob_put = plugin_oob_put;
    wire->core.oob_get = plugin_oob_get;
    wire->core.device_nearness = plugin_device_nearness;
    wire->core.core_ctx = wire;
}

static void put_u32(unsigned char *p, uint32_t v)
{
    for (int i = 0; i < 4; i++)
        p[i] = (unsigned char)(v >> (8 * i));
}

/* The record's format, and how other ranks' are read: addr_record.h. */
weft_result_t weft__wireup_record(weft__wireup_t *wire, const char *host_id,
                                  unsigned char **out, size_t *out_len)
{
    size_t cap = WEFT__ADDR_RECORD_HEADER +
                 (size_t)wire->plugins.n * (WEFT__ADDR_ENTRY_HEADER + WEFT_TRANSPORT_ADDR_MAX);
    unsigned char *buf = calloc(1, cap), *p;
    weft__topo_summary_t summary;

    if (!buf)
        return weft__error(WEFT_ERR_NO_MEMORY, "cannot allocate the address record");
    put_u32(buf, WEFT__ADDR_RECORD_MAGIC);
    put_u32(buf + 4, WEFT__ADDR_RECORD_VERSION);
    put_u32(buf + 8, (uint32_t)getpid());
    put_u32(buf + 12, (uint32_t)wire->plugins.n);
    snprintf((char *)buf + 16, WEFT__HOSTID_MAX, "%s", host_id);
    weft__topo_summarize(wire->topo, host_id, &summary);
    weft__topo_summary_encode(&summary, buf + 16 + WEFT__HOSTID_MAX);
    p = buf + WEFT__ADDR_RECORD_HEADER;
    for (int i = 0; i < wire->plugins.n; i++) {
        weft__plugin_t *pl = &wire->plugins.plugins[i];
        size_t len = WEFT_TRANSPORT_ADDR_MAX;
        weft_result_t rc;

        pthread_mutex_lock(&pl->lock);
        rc = pl->ops->get_address(pl->ctx, p + WEFT__ADDR_ENTRY_HEADER, &len);
        pthread_mutex_unlock(&pl->lock);
        if (rc != WEFT_SUCCESS || len > WEFT_TRANSPORT_ADDR_MAX) {
            free(buf);
            return weft__error(WEFT_ERR_PLUGIN, "transport %s gave no usable address: %s",
                               pl->name, rc != WEFT_SUCCESS ? weft__get_error() : "too long");
        }
        memcpy(p, pl->name, strnlen(pl->name, WEFT__PLUGIN_NAME_MAX - 1));
        put_u32(p + WEFT__PLUGIN_NAME_MAX, (uint32_t)len);
        p += WEFT__ADDR_ENTRY_HEADER + len;
    }
    *out = buf;
    *out_len = (size_t)(p - buf);
    return WEFT_SUCCESS;
}

/* Picks the transport for world rank w: among the plugins both ranks
 * loaded, the one that reaches it most closely (node-local beats network),
 * ties broken by name so that both ends of a pair choose alike. */
static weft_result_t choose_transport(weft__wireup_t *wire, int w,
                                      const weft__addr_record_t *rec)
{
    weft__plugin_t *best = NULL;
    const weft__addr_entry_t *best_entry = NULL;
    weft_transport_reach_t best_reach = WEFT_TRANSPORT_REACH_NONE;
    char tried[512] = "";
    weft_result_t rc;

    for (int i = 0; i < wire->plugins.n; i++) {
        weft__plugin_t *pl = &wire->plugins.plugins[i];

        for (int j = 0; j < rec->n; j++) {
            const weft__addr_entry_t *e = &rec->entries[j];
            weft_transport_reach_t reach = WEFT_TRANSPORT_REACH_NONE;

            if (strcmp(e->name, pl->name))
                continue;
            pthread_mutex_lock(&pl->lock);
            if (pl->ops->reach(pl->ctx, e->addr, e->len, &reach) != WEFT_SUCCESS)
                reach = WEFT_TRANSPORT_REACH_NONE;
            pthread_mutex_unlock(&pl->lock);
            snprintf(tried + strlen(tried), sizeof(tried) - strlen(tried), "%s%s: %s",
                     tried[0] ? ", " : "", pl->name,
                     reach == WEFT_TRANSPORT_REACH_NONE ? "no" : "yes");
            if (reach == WEFT_TRANSPORT_REACH_NONE)
                continue;
            if (!best || reach > best_reach ||
                (reach == best_reach && strcmp(pl->name, best->name) < 0)) {
                best = pl;
                best_entry = e;
                best_reach = reach;
            }
        }
    }
    if (!best)
        return weft__error(WEFT_ERR_PLUGIN, "no transport reaches rank %d (host %s, pid %u)%s%s",
                           w, rec->host_id, rec->pid, tried[0] ? "; tried " : "; no transport "
                           "is loaded on both ranks", tried);
    pthread_mutex_lock(&best->lock);
    rc = best->ops->connect(best->ctx, w, best_entry->addr, best_entry->len);
    pthread_mutex_unlock(&best->lock);
    if (rc != WEFT_SUCCESS)
        return weft__error(rc, "transport %s cannot connect to rank %d: %s", best->name, w,
                           weft__get_error());
    wire->peers[w].plugin = best;
    best->used = 1;
    return WEFT_SUCCESS;
}

weft_result_t weft__wireup_connect(weft__wireup_t *wire)
{
    const weft__plugin_t *used[WEFT__PLUGIN_MAX];
    char line[1024];
    size_t o = 0;
    weft_result_t rc_cores;

    wire->peers = calloc((size_t)wire->size, sizeof(*wire->peers));
    if (!wire->peers)
        return weft__error(WEFT_ERR_NO_MEMORY, "cannot allocate %d peers", wire->size);
    wire->ntransports_used = 0;
    /* Where every rank runs comes first: some transports are of use only
     * when another rank shares the node. */
    for (int w = 0; w < wire->size; w++) {
        weft__addr_record_t rec;
        size_t len;
        const void *blob = weft__bootstrap_blob(wire->boot, w, &len);
        weft_result_t rc = weft__addr_record_parse(w, blob, len, &rec);

        if (rc != WEFT_SUCCESS)
            return rc;
        snprintf(wire->peers[w].host_id, sizeof(wire->peers[w].host_id), "%s", rec.host_id);
        wire->peers[w].topo = rec.topo;
        wire->peers[w].pid = rec.pid;
        for (int j = 0; j < rec.n && wire->plugins.device; j++)
            if (!strcmp(rec.entries[j].name, wire->plugins.device->name))
                wire->peers[w].device_services = 1;
    }
    weft__wireup_drop_unneeded(wire);
    if ((rc_cores = weft__wireup_cores(wire)) != WEFT_SUCCESS)
        return rc_cores;
    for (int w = 0; w < wire->size; w++) {
        weft__addr_record_t rec;
        size_t len;
        const void *blob = weft__bootstrap_blob(wire->boot, w, &len);
        weft_result_t rc = weft__addr_record_parse(w, blob, len, &rec);
        int seen = 0;

        if (rc == WEFT_SUCCESS)
            rc = choose_transport(wire, w, &rec);
        if (rc != WEFT_SUCCESS)
            return rc;
        for (int i = 0; i < wire->ntransports_used; i++)
            seen |= used[i] == wire->peers[w].plugin;
        if (!seen)
            used[wire->ntransports_used++] = wire->peers[w].plugin;
        if (o < sizeof(line) - 64)
            o += (size_t)snprintf(line + o, sizeof(line) - o, " %d:%s", w,
                                  wire->peers[w].plugin->name);
    }
    /* Ranks of a node are numbered in world rank order. */
    wire->local_rank = 0;
    wire->local_size = 0;
    for (int w = 0; w < wire->size; w++) {
        if (strcmp(wire->peers[w].host_id, wire->peers[wire->rank].host_id))
            continue;
        if (w == wire->rank)
            wire->local_rank = wire->local_size;
        wire->peers[w].local_rank = wire->local_size++;
    }
    WEFT_INFO(TRANSPORT, "transport per rank:%s%s", line, o >= sizeof(line) - 64 ? " ..." : "");
    return WEFT_SUCCESS;
}

void weft__wireup_fini(weft__wireup_t *wire)
{
    /* Tearing down may log and touch the error text: keep the cause. */
    char why[1024];

    snprintf(why, sizeof(why), "%s", weft__get_error());
    weft__plugins_unload(&wire->plugins);
    weft__bootstrap_finalize(wire->boot);
    wire->boot = NULL;
    weft__topo_free(wire->topo);
    wire->topo = NULL;
    free(wire->peers);
    wire->peers = NULL;
    weft__set_error("%s", why);
}
