/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * ibv_sys.c: what the transport asks of the operating system: where the
 * rank and the devices sit (NUMA nodes, from sysfs), how much memory it
 * may pin (RLIMIT_MEMLOCK), and whether a fork needs ibv_fork_init.
 */
#include "config.h"

#include <errno.h>
#include <sched.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

#include "plugins/ib-verbs/ibv.h"

#define WIB_NODES_MAX 1024

/* ------------------------------------------------------------ places */

/* Parses a sysfs CPU list ("0-3,8,10-11") into set. */
static void cpulist_parse(const char *s, cpu_set_t *set)
{
    CPU_ZERO(set);
    while (*s && *s != '\n') {
        char *end;
        long lo = strtol(s, &end, 10), hi = lo;

        if (end == s)
            return;
        s = end;
        if (*s == '-') {
            hi = strtol(s + 1, &end, 10);
            s = end;
        }
        for (long c = lo; c <= hi && c < CPU_SETSIZE; c++)
            if (c >= 0)
                CPU_SET((int)c, set);
        if (*s == ',')
            s++;
    }
}

int weft__ibv_rank_numa(void)
{
    cpu_set_t mine, node, both;
    int found = -1, last_seen = 0;

    if (sched_getaffinity(0, sizeof(mine), &mine) != 0)
        return -1;
    /* Node numbers may have holes; past a long run of them, stop. */
    for (int n = 0; n < WIB_NODES_MAX && n - last_seen <= 64; n++) {
        char path[96], line[4096];
        FILE *f;

        snprintf(path, sizeof(path), "/sys/devices/system/node/node%d/cpulist", n);
        f = fopen(path, "re");
        if (!f)
            continue;
        last_seen = n;
        if (!fgets(line, sizeof(line), f))
            line[0] = '\0';
        fclose(f);
        cpulist_parse(line, &node);
        CPU_AND(&both, &mine, &node);
        if (CPU_COUNT(&both) == 0)
            continue;
        if (found >= 0 || CPU_COUNT(&both) != CPU_COUNT(&mine))
            return -1;          /* the binding spans nodes */
        found = n;
    }
    return found;
}

int weft__ibv_dev_numa(const char *sysfs_dev)
{
    char path[512];
    FILE *f;
    int numa = -1;

    if (!sysfs_dev || !*sysfs_dev)
        return -1;
    snprintf(path, sizeof(path), "%s/device/numa_node", sysfs_dev);
    f = fopen(path, "re");
    if (!f)
        return -1;
    if (fscanf(f, "%d", &numa) != 1)
        numa = -1;
    fclose(f);
    return numa;
}

/* The core's topology knows where the device sits against the rank's
 * GPU and binding (hwloc's PCI tree); sysfs alone knows only its NUMA
 * node, so it answers where the topology does not show the device (a
 * container without its sysfs, a software device). */
int weft__ibv_dev_near(const weft_transport_core_t *core, const char *name,
                       const char *sysfs_dev, int rank_numa)
{
    int numa;

    if (core && core->struct_size >= offsetof(weft_transport_core_t, device_nearness) +
                                         sizeof(core->device_nearness) &&
        core->device_nearness) {
        switch (core->device_nearness(core->core_ctx, name)) {
        case WEFT_TRANSPORT_NEAR_GPU: return WIB_NEAR_GPU_SWITCH;
        case WEFT_TRANSPORT_NEAR_NUMA: return WIB_NEAR_NUMA;
        case WEFT_TRANSPORT_NEAR_HOST: return WIB_NEAR_FAR;
        default: break;
        }
    }
    numa = weft__ibv_dev_numa(sysfs_dev);
    if (numa < 0 || rank_numa < 0)
        return WIB_NEAR_UNKNOWN;
    return numa == rank_numa ? WIB_NEAR_NUMA : WIB_NEAR_FAR;
}

const char *weft__ibv_near_name(int near)
{
    switch (near) {
    case WIB_NEAR_GPU_SWITCH: return "under the PCI switch of the rank's GPU";
    case WIB_NEAR_NUMA: return "on the rank's NUMA node";
    case WIB_NEAR_FAR: return "on another NUMA node";
    default: return "place unknown";
    }
}

/* ------------------------------------------------------------ memlock */

static void bytes_str(unsigned long long v, char *buf, size_t cap)
{
    if (v == (unsigned long long)RLIM_INFINITY)
        snprintf(buf, cap, "unlimited");
    else if (v >= (1ull << 30) && v % (1ull << 30) == 0)
        snprintf(buf, cap, "%llu GiB", v >> 30);
    else if (v >= (1ull << 20))
        snprintf(buf, cap, "%llu MiB", v >> 20);
    else
        snprintf(buf, cap, "%llu KiB", v >> 10);
}

#define MEMLOCK_HOWTO "raise it with 'ulimit -l unlimited' before starting the job, " \
    "'* - memlock unlimited' in /etc/security/limits.conf, LimitMEMLOCK=infinity for " \
    "a systemd service, or '--ulimit memlock=-1' for a container"

int weft__ibv_memlock_judge(unsigned long long cur, unsigned long long max, size_t need,
                            size_t want, char *msg, size_t cap)
{
    char c[32], m[32], n[32];

    if (cap)
        msg[0] = '\0';
    if (cur == (unsigned long long)RLIM_INFINITY || cur >= want)
        return 0;
    bytes_str(cur, c, sizeof(c));
    bytes_str(max, m, sizeof(m));
    if (cur < need) {
        bytes_str(need, n, sizeof(n));
        snprintf(msg, cap, "RLIMIT_MEMLOCK is %s (hard limit %s) but the transport pins at "
                 "least %s: " MEMLOCK_HOWTO, c, m, n);
        return -1;
    }
    snprintf(msg, cap, "RLIMIT_MEMLOCK is %s (hard limit %s): registering more than that "
             "fails, and such buffers then go through staging; " MEMLOCK_HOWTO, c, m);
    return 1;
}

/* 1 when the process may lock memory beyond RLIMIT_MEMLOCK: the kernel
 * does not count its registrations against the limit (CAP_IPC_LOCK, as
 * root usually has). */
static int can_lock_any(void)
{
    char line[256];
    int yes = 0;
    FILE *f = fopen("/proc/self/status", "re");

    if (!f)
        return 0;
    while (fgets(line, sizeof(line), f)) {
        unsigned long long eff;

        if (sscanf(line, "CapEff: %llx", &eff) == 1) {
            yes = (eff >> 14) & 1;      /* CAP_IPC_LOCK */
            break;
        }
    }
    fclose(f);
    return yes;
}

int weft__ibv_memlock_check(size_t need, size_t want, char *msg, size_t cap)
{
    struct rlimit rl;

    if (can_lock_any()) {
        if (cap)
            msg[0] = '\0';
        return 0;
    }
    if (getrlimit(RLIMIT_MEMLOCK, &rl) != 0) {
        if (cap)
            msg[0] = '\0';
        return 0;       /* nothing to judge by: registration will tell */
    }
    /* Raising the soft limit to the hard one needs no privilege. */
    if (rl.rlim_cur != RLIM_INFINITY && rl.rlim_cur < want && rl.rlim_max > rl.rlim_cur) {
        struct rlimit up = { rl.rlim_max, rl.rlim_max };

        if (setrlimit(RLIMIT_MEMLOCK, &up) == 0)
            rl.rlim_cur = rl.rlim_max;
    }
    return weft__ibv_memlock_judge(rl.rlim_cur, rl.rlim_max, need, want, msg, cap);
}

/* ------------------------------------------------------------ fork */

void weft__ibv_fork_setup(const struct wib_fns *f, int enabled, char *msg, size_t cap)
{
    int rc;

    if (!enabled) {
        snprintf(msg, cap, "fork protection off (WEFT_IB_FORK_INIT=0): a child process that "
                 "writes to pages registered here may corrupt transfers");
        return;
    }
    if (f->is_fork_initialized) {
        enum ibv_fork_status st = f->is_fork_initialized();

        if (st == IBV_FORK_UNNEEDED) {
            snprintf(msg, cap, "the kernel keeps registered memory safe across fork: "
                     "ibv_fork_init not needed");
            return;
        }
        if (st == IBV_FORK_ENABLED) {
            snprintf(msg, cap, "fork protection already on (ibv_fork_init or RDMAV_FORK_SAFE)");
            return;
        }
    }
    rc = f->fork_init();
    if (rc != 0)
        snprintf(msg, cap, "ibv_fork_init failed (%s; verbs were used in this process "
                 "before): a fork while memory is registered may corrupt transfers",
                 strerror(rc));
    else
        snprintf(msg, cap, "ibv_fork_init: registered memory is kept out of child processes");
}
