/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * hostid.c: the identity of this node, and of the machine under it.
 */
#include "config.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/base/error.h"
#include "topo/topo.h"

/* The kernel's boot id, read once: the host id and the topology summary
 * both name the machine at init. Empty where it cannot be read. */
static char boot_id[64];
static pthread_once_t boot_id_once = PTHREAD_ONCE_INIT;

static void boot_id_read(void)
{
    FILE *f = fopen("/proc/sys/kernel/random/boot_id", "r");

    if (!f)
        return;
    if (fgets(boot_id, (int)sizeof(boot_id), f))
        boot_id[strcspn(boot_id, "\n")] = '\0';
    else
        boot_id[0] = '\0';
    fclose(f);
}

void weft__topo_machine_id(char *buf, size_t cap)
{
    pthread_once(&boot_id_once, boot_id_read);
    snprintf(buf, cap, "%s", boot_id);
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
