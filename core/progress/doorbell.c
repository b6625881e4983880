/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * doorbell.c: waking a sleeping rank of this node (see doorbell.h).
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/base/error.h"
#include "core/base/log.h"
#include "core/base/private_file.h"
#include "core/progress/doorbell.h"
#include "core/progress/instance.h"

/* The pid in the name tells a later job's sweep (shm_sweep.c) whether
 * the doorbell's owner is gone. */
static void bell_path(const weft__instance_t *inst, int rank, char *buf, size_t cap)
{
    snprintf(buf, cap, "/dev/shm/weft-%s-bell-%d-%u", inst->wire.job_id, rank,
             inst->wire.peers[rank].pid);
}

weft_result_t weft__doorbell_open(weft__instance_t *inst)
{
    char path[160], why[160];
    int fd;

    pthread_mutex_lock(&inst->lock);
    if (inst->bell_fd >= 0) {
        pthread_mutex_unlock(&inst->lock);
        return WEFT_SUCCESS;
    }
    bell_path(inst, inst->wire.rank, path, sizeof(path));
    if ((fd = weft__private_fifo_open(path, why, sizeof(why))) < 0) {
        pthread_mutex_unlock(&inst->lock);
        return weft__error(WEFT_ERR_SYSTEM, "cannot create the doorbell %s: %s", path, why);
    }
    inst->bell_fd = fd;
    pthread_mutex_unlock(&inst->lock);
    return WEFT_SUCCESS;
}

void weft__doorbell_ring(weft__instance_t *inst, int rank)
{
    char path[160], why[160];
    int fd;

    if (rank < 0 || rank >= inst->wire.size)
        return;
    /* Rare (only sleepers are rung): one lock keeps the threads of an
     * instance from opening a peer's doorbell twice. */
    pthread_mutex_lock(&inst->lock);
    if (!inst->bell_peers && (inst->bell_peers = malloc((size_t)inst->wire.size * sizeof(int))))
        for (int r = 0; r < inst->wire.size; r++)
            inst->bell_peers[r] = -1;
    if (!inst->bell_peers) {
        pthread_mutex_unlock(&inst->lock);
        return;
    }
    if ((fd = inst->bell_peers[rank]) < 0) {
        bell_path(inst, rank, path, sizeof(path));
        /* Read-write: a write to a FIFO nobody reads raises SIGPIPE, and
         * the peer may have just woken and exited. */
        fd = open(path, O_RDWR | O_NONBLOCK | O_NOFOLLOW | O_CLOEXEC);
        if (fd < 0) {
            WEFT_WARN(COLL, "cannot open the doorbell of rank %d (%s): %m", rank, path);
        } else if (weft__private_file_check(fd, S_IFIFO, why, sizeof(why)) != 0) {
            WEFT_WARN(COLL, "refusing the doorbell of rank %d (%s): %s", rank, path, why);
            close(fd);
            fd = -1;
        }
        inst->bell_peers[rank] = fd;
    }
    pthread_mutex_unlock(&inst->lock);
    /* A full FIFO already holds a wake-up. */
    if (fd >= 0 && write(fd, "", 1) < 0 && errno != EAGAIN)
        WEFT_WARN(COLL, "cannot ring the doorbell of rank %d: %m", rank);
}

void weft__doorbell_drain(weft__instance_t *inst)
{
    char buf[64];

    if (inst->bell_fd >= 0)
        while (read(inst->bell_fd, buf, sizeof(buf)) > 0)
            ;
}

void weft__doorbell_close(weft__instance_t *inst)
{
    char path[160];

    if (inst->bell_peers) {
        for (int r = 0; r < inst->wire.size; r++)
            if (inst->bell_peers[r] >= 0)
                close(inst->bell_peers[r]);
        free(inst->bell_peers);
        inst->bell_peers = NULL;
    }
    if (inst->bell_fd >= 0) {
        close(inst->bell_fd);
        inst->bell_fd = -1;
        bell_path(inst, inst->wire.rank, path, sizeof(path));
        unlink(path);
    }
}
