/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * instance.c: weft_init: every layer's settings, joining the job, loading
 * transports, choosing one transport per peer, the hooks of the layers
 * above the progress engine, and the world communicator; and the
 * instance's end when its last reference goes.
 */
#include "config.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/base/error.h"
#include "core/base/log.h"
#include "core/boot/init_method.h"
#include "core/coll/algo/algo.h"
#include "core/coll/coll.h"
#include "core/coll/shared/shared.h"
#include "core/comm/abort_notice.h"
#include "core/api/coll_device.h"
#include "core/comm/comm.h"
#include "core/init/instance.h"
#include "core/progress/doorbell.h"
#include "core/progress/instance.h"
#include "core/progress/progress.h"
#include "core/progress/request.h"
#include "core/progress/shm_sweep.h"
#include "core/transport/wireup.h"
#include "core/tune/tune.h"

static const char *env_lookup(const char *name)
{
    return getenv(name);
}

weft_result_t weft__settings_parse(void)
{
    weft_result_t rc = weft__tune_algo_parse(getenv("WEFT_ALGO"));

    if (rc == WEFT_SUCCESS)
        rc = weft__algo_settings_parse();
    if (rc == WEFT_SUCCESS)
        rc = weft__shared_settings_parse();
    if (rc == WEFT_SUCCESS)
        rc = weft__progress_settings_parse();
    if (rc == WEFT_SUCCESS)
        rc = weft__coll_device_settings_parse();
    return rc;
}

/* The last reference went (inst->finalize): every layer lets go of its
 * part, from the top down. Every request belongs to a communicator, and
 * each communicator freed its own: inst->detached is empty here. */
static void instance_finalize(weft__instance_t *inst)
{
    weft__abort_finalize(inst);
    weft__request_cache_drain();
    weft__tune_fini(inst);
    weft__coll_engine_fini(inst);
    weft__doorbell_close(inst);
    weft__wireup_fini(&inst->wire);
    weft__instance_free(inst);
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
    weft__wireup_t *wire;
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
    rc = weft__settings_parse();
    if (rc != WEFT_SUCCESS)
        return weft__error(rc, "weft_init: %s", weft__get_error());
    rc = weft__boot_params_resolve(&a, env_lookup, &params);
    if (rc != WEFT_SUCCESS)
        return rc;
    weft__log_set_rank(params.rank);
    rc = weft__topo_host_id(host_id, sizeof(host_id));
    if (rc != WEFT_SUCCESS)
        return rc;

    rc = weft__instance_new(&inst);
    if (rc != WEFT_SUCCESS)
        return rc;
    inst->timeout_ms = params.timeout_ms;
    inst->finalize = instance_finalize;
    snprintf(inst->name, sizeof(inst->name), "%s", a.name ? a.name : "world");
    wire = &inst->wire;
    weft__wireup_init(wire, params.rank, params.size,
                      params.kind == WEFT__BOOT_TCP ? params.host : NULL);
    WEFT_INFO(INIT, "rank %d of %d joining through %s (timeout %d ms)", params.rank,
              params.size, params.source, params.timeout_ms);

    rc = weft__coll_engine_init(inst);
    if (rc != WEFT_SUCCESS)
        goto err_free;
    rc = weft__topo_load(&wire->topo);
    if (rc != WEFT_SUCCESS)
        goto err_free;
    rc = weft__plugins_load_topo(&wire->core, wire->topo, &wire->plugins);
    if (rc != WEFT_SUCCESS)
        goto err_free;
    rc = weft__wireup_record(wire, host_id, &record, &record_len);
    if (rc != WEFT_SUCCESS)
        goto err_free;
    rc = weft__bootstrap_run(&params, record, record_len, &wire->boot);
    free(record);
    if (rc != WEFT_SUCCESS) {
        wire->boot = NULL;
        goto err_free;
    }
    snprintf(wire->job_id, sizeof(wire->job_id), "%s", wire->boot->job_id);
    weft__shm_sweep(wire->job_id, WEFT__SHM_SWEEP_MIN_AGE_S);
    rc = weft__wireup_connect(wire);
    if (rc != WEFT_SUCCESS)
        goto err_free;
    weft__wireup_report(wire, inst->timeout_ms);
    /* Now, not at the first shared collective: the sweep judges a job
     * by its doorbells, so every rank that may map a segment has one.
     * Without, those collectives fail when they first need it. */
    if (wire->local_size > 1 && weft__doorbell_open(inst) != WEFT_SUCCESS)
        WEFT_WARN(INIT, "%s", weft__get_error());

    all = malloc((size_t)wire->size * sizeof(int));
    if (!all) {
        rc = weft__error(WEFT_ERR_NO_MEMORY, "weft_init: cannot allocate the rank list");
        goto err_free;
    }
    for (int w = 0; w < wire->size; w++)
        all[w] = w;
    /* Context 0 is the world's; every later communicator takes the next
     * even number (the odd one is its internal context). */
    inst->next_context = 2;
    rc = weft__comm_create(inst, wire->size, all, 0, world);
    free(all);
    if (rc != WEFT_SUCCESS)
        goto err_free;
    /* From here the world communicator holds the instance: freeing it
     * finalizes everything. */
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
    WEFT_INFO(INIT, "rank %d of %d ready: job %s, local rank %d of %d", wire->rank, wire->size,
              wire->job_id, wire->local_rank, wire->local_size);
    return WEFT_SUCCESS;

err_free:
    weft__doorbell_close(inst);
    weft__coll_engine_fini(inst);
    weft__wireup_fini(wire);
    weft__instance_free(inst);
    return rc;
}
