/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * instance.c: weft_init: joining the job, loading transports, choosing one
 * transport per peer, and the world communicator.
 */
#include "config.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/comm/abort_notice.h"
#include "core/coll/coll.h"
#include "core/comm/comm.h"
#include "core/progress/doorbell.h"
#include "core/base/error.h"
#include "core/boot/init_method.h"
#include "core/progress/instance.h"
#include "core/progress/request.h"
#include "core/base/log.h"
#include "core/progress/shm_sweep.h"

/*
 * The record every rank publishes at the rendezvous: who it is and how each
 * of its transports is reached. Fixed-width little-endian fields, so a
 * record is read the same way everywhere.
 */
#define ADDR_RECORD_MAGIC 0x77656674u /* "weft" */
/* 2: the rank's topology summary follows the host id. */
#define ADDR_RECORD_VERSION 2u

struct addr_entry {
    char name[WEFT__PLUGIN_NAME_MAX];
    const unsigned char *addr;
    size_t len;
};

struct addr_record {
    uint32_t pid;
    char host_id[WEFT__HOSTID_MAX];
    weft__topo_summary_t topo;
    int n;
    struct addr_entry entries[WEFT__PLUGIN_MAX];
};

static void put_u32(unsigned char *p, uint32_t v)
{
    for (int i = 0; i < 4; i++)
        p[i] = (unsigned char)(v >> (8 * i));
}

static uint32_t get_u32(const unsigned char *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

#define RECORD_HEADER (4 + 4 + 4 + 4 + WEFT__HOSTID_MAX + WEFT__TOPO_SUMMARY_WIRE)
#define ENTRY_HEADER (WEFT__PLUGIN_NAME_MAX + 4)

static weft_result_t record_build(weft__instance_t *inst, const char *host_id,
                                  unsigned char **out, size_t *out_len)
{
    size_t cap = RECORD_HEADER + (size_t)inst->plugins.n * (ENTRY_HEADER + WEFT_TRANSPORT_ADDR_MAX);
    unsigned char *buf = calloc(1, cap), *p;
    weft__topo_summary_t summary;

    if (!buf)
        return weft__error(WEFT_ERR_NO_MEMORY, "cannot allocate the address record");
    put_u32(buf, ADDR_RECORD_MAGIC);
    put_u32(buf + 4, ADDR_RECORD_VERSION);
    put_u32(buf + 8, (uint32_t)getpid());
    put_u32(buf + 12, (uint32_t)inst->plugins.n);
    snprintf((char *)buf + 16, WEFT__HOSTID_MAX, "%s", host_id);
    weft__topo_summarize(inst->topo, host_id, &summary);
    weft__topo_summary_encode(&summary, buf + 16 + WEFT__HOSTID_MAX);
    p = buf + RECORD_HEADER;
    for (int i = 0; i < inst->plugins.n; i++) {
        weft__plugin_t *pl = &inst->plugins.plugins[i];
        size_t len = WEFT_TRANSPORT_ADDR_MAX;
        weft_result_t rc;

        pthread_mutex_lock(&pl->lock);
        rc = pl->ops->get_address(pl->ctx, p + ENTRY_HEADER, &len);
        pthread_mutex_unlock(&pl->lock);
        if (rc != WEFT_SUCCESS || len > WEFT_TRANSPORT_ADDR_MAX) {
            free(buf);
            return weft__error(WEFT_ERR_PLUGIN, "transport %s gave no usable address: %s",
                               pl->name, rc != WEFT_SUCCESS ? weft__get_error() : "too long");
        }
        memcpy(p, pl->name, strnlen(pl->name, WEFT__PLUGIN_NAME_MAX - 1));
        put_u32(p + WEFT__PLUGIN_NAME_MAX, (uint32_t)len);
        p += ENTRY_HEADER + len;
    }
    *out = buf;
    *out_len = (size_t)(p - buf);
    return WEFT_SUCCESS;
}

static weft_result_t record_parse(int rank, const unsigned char *buf, size_t len,
                                  struct addr_record *rec)
{
    const unsigned char *p = buf + RECORD_HEADER, *end = buf + len;

    if (len < RECORD_HEADER || get_u32(buf) != ADDR_RECORD_MAGIC)
        return weft__error(WEFT_ERR_BOOTSTRAP, "rank %d published a record weft cannot read "
                           "(another program or weft version?)", rank);
    if (get_u32(buf + 4) != ADDR_RECORD_VERSION)
        return weft__error(WEFT_ERR_BOOTSTRAP, "rank %d runs a weft with address record "
                           "version %u, this rank %u", rank, get_u32(buf + 4),
                           ADDR_RECORD_VERSION);
    rec->pid = get_u32(buf + 8);
    rec->n = (int)get_u32(buf + 12);
    if (rec->n < 0 || rec->n > WEFT__PLUGIN_MAX)
        goto err_bad;
    memcpy(rec->host_id, buf + 16, WEFT__HOSTID_MAX);
    rec->host_id[WEFT__HOSTID_MAX - 1] = '\0';
    weft__topo_summary_decode(buf + 16 + WEFT__HOSTID_MAX, rec->host_id, &rec->topo);
    for (int i = 0; i < rec->n; i++) {
        struct addr_entry *e = &rec->entries[i];

        if ((size_t)(end - p) < ENTRY_HEADER)
            goto err_bad;
        memcpy(e->name, p, WEFT__PLUGIN_NAME_MAX);
        e->name[WEFT__PLUGIN_NAME_MAX - 1] = '\0';
        e->len = get_u32(p + WEFT__PLUGIN_NAME_MAX);
        if (e->len > WEFT_TRANSPORT_ADDR_MAX || (size_t)(end - p) < ENTRY_HEADER + e->len)
            goto err_bad;
        e->addr = p + ENTRY_HEADER;
        p += ENTRY_HEADER + e->len;
    }
    return WEFT_SUCCESS;

err_bad:
    return weft__error(WEFT_ERR_BOOTSTRAP, "rank %d published a malformed address record", rank);
}

/* Picks the transport for world rank w: among the plugins both ranks
 * loaded, the one that reaches it most closely (node-local beats network),
 * ties broken by name so that both ends of a pair choose alike. */
static weft_result_t choose_transport(weft__instance_t *inst, int w,
                                      const struct addr_record *rec)
{
    weft__plugin_t *best = NULL;
    const struct addr_entry *best_entry = NULL;
    weft_transport_reach_t best_reach = WEFT_TRANSPORT_REACH_NONE;
    char tried[512] = "";
    weft_result_t rc;

    for (int i = 0; i < inst->plugins.n; i++) {
        weft__plugin_t *pl = &inst->plugins.plugins[i];

        for (int j = 0; j < rec->n; j++) {
            const struct addr_entry *e = &rec->entries[j];
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
    inst->peers[w].plugin = best;
    best->used = 1;
    return WEFT_SUCCESS;
}

static weft_result_t connect_peers(weft__instance_t *inst)
{
    const weft__plugin_t *used[WEFT__PLUGIN_MAX];
    char line[1024];
    size_t o = 0;

    inst->peers = calloc((size_t)inst->size, sizeof(*inst->peers));
    if (!inst->peers)
        return weft__error(WEFT_ERR_NO_MEMORY, "cannot allocate %d peers", inst->size);
    inst->ntransports_used = 0;
    /* Where every rank runs comes first: some transports are of use only
     * when another rank shares the node. */
    for (int w = 0; w < inst->size; w++) {
        struct addr_record rec;
        size_t len;
        const void *blob = weft__bootstrap_blob(inst->boot, w, &len);
        weft_result_t rc = record_parse(w, blob, len, &rec);

        if (rc != WEFT_SUCCESS)
            return rc;
        snprintf(inst->peers[w].host_id, sizeof(inst->peers[w].host_id), "%s", rec.host_id);
        inst->peers[w].topo = rec.topo;
        inst->peers[w].pid = rec.pid;
    }
    weft__instance_drop_unneeded(inst);
    for (int w = 0; w < inst->size; w++) {
        struct addr_record rec;
        size_t len;
        const void *blob = weft__bootstrap_blob(inst->boot, w, &len);
        weft_result_t rc = record_parse(w, blob, len, &rec);
        int seen = 0;

        if (rc == WEFT_SUCCESS)
            rc = choose_transport(inst, w, &rec);
        if (rc != WEFT_SUCCESS)
            return rc;
        for (int i = 0; i < inst->ntransports_used; i++)
            seen |= used[i] == inst->peers[w].plugin;
        if (!seen)
            used[inst->ntransports_used++] = inst->peers[w].plugin;
        if (o < sizeof(line) - 64)
            o += (size_t)snprintf(line + o, sizeof(line) - o, " %d:%s", w,
                                  inst->peers[w].plugin->name);
    }
    /* Ranks of a node are numbered in world rank order. */
    inst->local_rank = 0;
    inst->local_size = 0;
    for (int w = 0; w < inst->size; w++) {
        if (strcmp(inst->peers[w].host_id, inst->peers[inst->rank].host_id))
            continue;
        if (w == inst->rank)
            inst->local_rank = inst->local_size;
        inst->peers[w].local_rank = inst->local_size++;
    }
    WEFT_INFO(TRANSPORT, "transport per rank:%s%s", line, o >= sizeof(line) - 64 ? " ..." : "");
    return WEFT_SUCCESS;
}

/* ---------------------------------------------------- services for plugins */

static const char *env_lookup(const char *name)
{
    return getenv(name);
}

static weft_result_t plugin_oob_put(void *core_ctx, const char *key, const void *val, size_t len)
{
    weft__instance_t *inst = core_ctx;

    if (!inst->boot || !inst->boot->store)
        return weft__error(WEFT_ERR_UNSUPPORTED, "out-of-band exchange is available from "
                           "connect() on, through weft's store (not under PMIx yet)");
    return weft__store_set(inst->boot->store, key, val, len);
}

static weft_result_t plugin_oob_get(void *core_ctx, const char *key, void *val, size_t cap,
                                    size_t *len, int timeout_ms)
{
    weft__instance_t *inst = core_ctx;

    if (!inst->boot || !inst->boot->store)
        return weft__error(WEFT_ERR_UNSUPPORTED, "out-of-band exchange is available from "
                           "connect() on, through weft's store (not under PMIx yet)");
    return weft__store_get(inst->boot->store, key, val, cap, len, timeout_ms);
}

/* ------------------------------------------------------------ init, release */

void weft__instance_release(weft__instance_t *inst)
{
    int last;

    pthread_mutex_lock(&inst->lock);
    last = --inst->refs == 0;
    pthread_mutex_unlock(&inst->lock);
    if (!last)
        return;
    /* Every request belongs to a communicator, and each communicator
     * freed its own: inst->detached is empty here. */
    weft__abort_finalize(inst);
    weft__request_cache_drain();
    weft__plugins_unload(&inst->plugins);
    weft__doorbell_close(inst);
    weft__bootstrap_finalize(inst->boot);
    weft__topo_free(inst->topo);
    free(inst->peers);
    pthread_mutex_destroy(&inst->lock);
    pthread_mutex_destroy(&inst->coll_lock);
    free(inst);
}

static weft_result_t check_attr(const weft_init_attr_t *attr, weft_init_attr_t *copy)
{
    weft_init_attr_t defaults = WEFT_INIT_ATTR_INITIALIZER;

    *copy = defaults;
    if (!attr)
        return WEFT_SUCCESS;
    if (attr->struct_size < offsetof(weft_init_attr_t, rank) + sizeof(int) * 2)
        return weft__error(WEFT_ERR_INVALID_ARG, "weft_init: attr->struct_size %zu is too "
                           "small (initialise attr with WEFT_INIT_ATTR_INITIALIZER)",
                           attr->struct_size);
    /* Older callers pass a shorter struct: take what they have. */
    memcpy(copy, attr, attr->struct_size < sizeof(*copy) ? attr->struct_size : sizeof(*copy));
    copy->struct_size = sizeof(*copy);
    if (copy->timeout_ms < 0)
        return weft__error(WEFT_ERR_INVALID_ARG, "weft_init: attr->timeout_ms %d is negative",
                           copy->timeout_ms);
    return WEFT_SUCCESS;
}

WEFT_API weft_result_t weft_init(const weft_init_attr_t *attr, weft_comm_t *world)
{
    weft__boot_params_t params;
    weft_init_attr_t a;
    weft__instance_t *inst;
    char host_id[WEFT__HOSTID_MAX];
    unsigned char *record = NULL;
    size_t record_len = 0;
    int *all = NULL;
    weft_result_t rc;

    weft__log_init();
    weft__clear_error();
    if (!world)
        return weft__error(WEFT_ERR_INVALID_ARG, "weft_init: world is NULL");
    rc = check_attr(attr, &a);
    if (rc != WEFT_SUCCESS)
        return rc;
    rc = weft__coll_algo_parse(getenv("WEFT_ALGO"));
    if (rc == WEFT_SUCCESS)
        rc = weft__coll_settings_parse();
    if (rc != WEFT_SUCCESS)
        return weft__error(rc, "weft_init: %s", weft__get_error());
    rc = weft__boot_params_resolve(&a, env_lookup, &params);
    if (rc != WEFT_SUCCESS)
        return rc;
    weft__log_set_rank(params.rank);
    rc = weft__topo_host_id(host_id, sizeof(host_id));
    if (rc != WEFT_SUCCESS)
        return rc;

    inst = calloc(1, sizeof(*inst));
    if (!inst)
        return weft__error(WEFT_ERR_NO_MEMORY, "weft_init: cannot allocate the library state");
    pthread_mutex_init(&inst->lock, NULL);
    pthread_mutex_init(&inst->coll_lock, NULL);
    inst->bell_fd = -1;
    inst->rank = params.rank;
    inst->size = params.size;
    weft__tune_defaults(&inst->tune);
    inst->timeout_ms = params.timeout_ms;
    snprintf(inst->name, sizeof(inst->name), "%s", a.name ? a.name : "world");
    weft__transport_core_defaults(&inst->core);
    inst->core.rank = params.rank;
    inst->core.size = params.size;
    inst->core.job_id = inst->job_id;
    inst->core.master_addr = params.kind == WEFT__BOOT_TCP ? params.host : NULL;
    inst->core.oob_put = plugin_oob_put;
    inst->core.oob_get = plugin_oob_get;
    inst->core.core_ctx = inst;
    WEFT_INFO(INIT, "rank %d of %d joining through %s (timeout %d ms)", params.rank,
              params.size, params.source, params.timeout_ms);

    rc = weft__topo_load(&inst->topo);
    if (rc != WEFT_SUCCESS)
        goto err_unload;
    rc = weft__plugins_load_topo(&inst->core, inst->topo, &inst->plugins);
    if (rc != WEFT_SUCCESS)
        goto err_unload;
    rc = record_build(inst, host_id, &record, &record_len);
    if (rc != WEFT_SUCCESS)
        goto err_unload;
    rc = weft__bootstrap_run(&params, record, record_len, &inst->boot);
    free(record);
    if (rc != WEFT_SUCCESS) {
        inst->boot = NULL;
        goto err_unload;
    }
    snprintf(inst->job_id, sizeof(inst->job_id), "%s", inst->boot->job_id);
    weft__shm_sweep(inst->job_id, WEFT__SHM_SWEEP_MIN_AGE_S);
    rc = connect_peers(inst);
    if (rc != WEFT_SUCCESS)
        goto err_boot;
    weft__instance_topo_report(inst);
    /* Now, not at the first shared collective: the sweep judges a job
     * by its doorbells, so every rank that may map a segment has one.
     * Without, those collectives fail when they first need it. */
    if (inst->local_size > 1 && weft__doorbell_open(inst) != WEFT_SUCCESS)
        WEFT_WARN(INIT, "%s", weft__get_error());

    all = malloc((size_t)inst->size * sizeof(int));
    if (!all) {
        rc = weft__error(WEFT_ERR_NO_MEMORY, "weft_init: cannot allocate the rank list");
        goto err_boot;
    }
    for (int w = 0; w < inst->size; w++)
        all[w] = w;
    /* Context 0 is the world's; every later communicator takes the next
     * even number (the odd one is its internal context). */
    inst->next_context = 2;
    rc = weft__comm_create(inst, inst->size, all, 0, world);
    free(all);
    if (rc != WEFT_SUCCESS)
        goto err_boot;
    (*world)->is_world = 1;
    /* Without notices a sub-communicator's abort is only seen here; the
     * job still runs. */
    if (weft__abort_listen(inst) != WEFT_SUCCESS)
        WEFT_WARN(INIT, "%s", weft__get_error());
    /* Every rank must hold the same tuning parameters before the first
     * collective chooses its algorithm from them. */
    rc = weft__tune_agree(*world, 0);
    if (rc != WEFT_SUCCESS) {
        char why[1024];

        snprintf(why, sizeof(why), "%s", weft__get_error());
        weft__comm_free(*world);
        *world = NULL;
        return weft__error(rc, "weft_init: %s", why);
    }
    WEFT_INFO(INIT, "rank %d of %d ready: job %s, local rank %d of %d", inst->rank, inst->size,
              inst->job_id, inst->local_rank, inst->local_size);
    return WEFT_SUCCESS;

err_boot:
    weft__bootstrap_finalize(inst->boot);
err_unload:
    {
        /* Tearing down may log and touch the error text: keep the cause. */
        char why[1024];

        snprintf(why, sizeof(why), "%s", weft__get_error());
        weft__plugins_unload(&inst->plugins);
        weft__set_error("%s", why);
    }
    weft__topo_free(inst->topo);
    free(inst->peers);
    pthread_mutex_destroy(&inst->lock);
    pthread_mutex_destroy(&inst->coll_lock);
    free(inst);
    return rc;
}
