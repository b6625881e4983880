/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * hostid.c: the identity of this node, and of the machine under it.
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/base/error.h"
#include "topo/topo.h"

void weft__topo_machine_id(char *buf, size_t cap)
{
    FILE *f = fopen("/proc/sys/kernel/random/boot_id", "r");

    buf[0] = '\0';
    if (!f)
        return;
    if (fgets(buf, (int)cap, f))
        buf[strcspn(buf, "\n")] = '\0';
    fclose(f);
}

weft_result_t weft__topo_host_id(char *buf, size_t cap)
{
    const char *forced = getenv("WEFT_HOSTID");
    char host[64], boot[64];

    if (forced && *forced) {
        if (strlen(forced) >= cap)
            return weft__error(WEFT_ERR_INVALID_ARG, "WEFT_HOSTID is longer than %zu bytes",
                               cap - 1);
        snprintf(buf, cap, "%s", forced);
        return WEFT_SUCCESS;
    }
    if (gethostname(host, sizeof(host)) != 0)
        return weft__error(WEFT_ERR_SYSTEM, "gethostname failed: %m");
    host[sizeof(host) - 1] = '\0';
    weft__topo_machine_id(boot, sizeof(boot));
    snprintf(buf, cap, "%s/%s", host, boot[0] ? boot : "noboot");
    return WEFT_SUCCESS;
}
