/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * shm_sweep.h: removing what killed jobs left in /dev/shm.
 *
 * A rank that exits normally removes its doorbell, and the last member
 * of a communicator to map a shared segment removes its name; a rank
 * killed first leaves them behind, and a pipelined collectives' segment
 * holds up to 16 MiB of the node's memory. The files of a job are
 * weft-<job>-bell-<world rank>-<pid> (every rank of a node that has
 * company there creates its doorbell at weft_init) and
 * weft-<job>-coll-... and weft-<job>-pipe-...; a job whose doorbells'
 * processes are all gone, or that has no doorbell left (its ranks all
 * exited, one of them before it mapped a segment), is over on this node:
 * every rank that may map its segments has a doorbell while it runs.
 */
#ifndef WEFT_CORE_SHM_SWEEP_H
#define WEFT_CORE_SHM_SWEEP_H

/* A file younger than this is left alone: its job may still be starting
 * and not have all its doorbells yet. */
#define WEFT__SHM_SWEEP_MIN_AGE_S 60

/* Removes the files of this user's jobs other than own_job whose
 * processes on this node are all gone, each file at least min_age_s
 * seconds old. */
void weft__shm_sweep(const char *own_job, int min_age_s);

/* Removes every file of this user's job `job` (the core's and the shm
 * transport's): for a launcher whose ranks on this node are all gone,
 * some of them killed before they could remove their own. */
void weft__shm_sweep_job(const char *job);

#endif /* WEFT_CORE_SHM_SWEEP_H */
