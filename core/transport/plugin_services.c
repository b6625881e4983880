/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * plugin_services.c: the logging, error and parameter services every
 * transport plugin gets in its weft_transport_core_t.
 */
#include "config.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

#include "core/base/error.h"
#include "core/base/log.h"
#include "core/transport/plugin.h"

static weft__plugin_log_sink_t log_sink;
static void *log_sink_arg;

void weft__plugin_log_capture(weft__plugin_log_sink_t sink, void *arg)
{
    log_sink = sink;
    log_sink_arg = arg;
}

static void plugin_log(int level, const char *plugin, const char *fmt, ...)
{
    va_list ap;

    if (log_sink && (level == WEFT_TRANSPORT_LOG_WARN || level == WEFT_TRANSPORT_LOG_INFO)) {
        char msg[1024];

        va_start(ap, fmt);
        vsnprintf(msg, sizeof(msg), fmt, ap);
        va_end(ap);
        log_sink(log_sink_arg, plugin, level, msg);
    }
    if (level < WEFT_TRANSPORT_LOG_WARN || level > WEFT_TRANSPORT_LOG_TRACE ||
        !weft__log_enabled(level, WEFT__SUBSYS_TRANSPORT))
        return;
    va_start(ap, fmt);
    weft__log_vwrite(level, WEFT__SUBSYS_TRANSPORT, plugin, fmt, ap);
    va_end(ap);
}

/* The loader and the core read a plugin's reasons from weft_last_error(). */
static void plugin_set_error(const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    weft__set_error_v(fmt, ap);
    va_end(ap);
}

static const char *plugin_get_param(const char *name)
{
    return name ? getenv(name) : NULL;
}

/* A core without a job's topology (weft-info's) knows no device: its
 * struct_size covers device_nearness, so a plugin may call it. */
static weft_transport_nearness_t plugin_no_nearness(void *core_ctx, const char *name)
{
    (void)core_ctx;
    (void)name;
    return WEFT_TRANSPORT_NEAR_UNKNOWN;
}

void weft__transport_core_defaults(weft_transport_core_t *core)
{
    core->struct_size = sizeof(*core);
    core->log = plugin_log;
    core->set_error = plugin_set_error;
    core->get_param = plugin_get_param;
    core->device_nearness = plugin_no_nearness;
}
