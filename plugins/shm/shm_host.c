/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * shm_host.c: the node's identity, computed as topo/hostid.c does in the
 * core (a plugin does not link the core): WEFT_HOSTID when set, otherwise
 * the host name and the kernel's boot id. Two ranks share memory exactly
 * when the core puts them on one node.
 */
#include "config.h"

#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "plugins/shm/shm.h"

void weft__shm_host_id(const weft_transport_core_t *core, char *buf, size_t cap)
{
    const char *forced = core->get_param ? core->get_param("WEFT_HOSTID") : NULL;
    char host[64], boot[64] = "";
    FILE *f;

    if (forced && *forced) {
        snprintf(buf, cap, "%s", forced);
        return;
    }
    if (gethostname(host, sizeof(host)) != 0)
        snprintf(host, sizeof(host), "unknown");
    host[sizeof(host) - 1] = '\0';
    f = fopen("/proc/sys/kernel/random/boot_id", "re");
    if (f) {
        if (fgets(boot, sizeof(boot), f))
            boot[strcspn(boot, "\n")] = '\0';
        fclose(f);
    }
    snprintf(buf, cap, "%s/%s", host, boot[0] ? boot : "noboot");
}
