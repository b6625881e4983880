/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * segment.c: a communicator's node-shared segment (see coll/shared/segment.h).
 *
 * The segment's name is derived from what every member knows: the job,
 * the communicator's context id and the world rank of its first member.
 * Context ids only move forward in every process, and communicators that
 * share one (the colours of a split) have disjoint first members, so the
 * name is never reused within a job. Each member opens or creates it,
 * sizes it (the same size on every rank, so a late ftruncate changes
 * nothing) and counts itself in; the last to arrive removes the name, so
 * nothing is left in /dev/shm once every member has mapped it, even if
 * the first ones have already freed the communicator.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/base/error.h"
#include "core/base/log.h"
#include "core/base/private_file.h"
#include "core/coll/shared/segment.h"
#include "core/comm/comm.h"
#include "core/progress/doorbell.h"
#include "core/progress/progress.h"

_Static_assert(sizeof(weft__shared_ctrl_t) == 64, "a control line is one cache line");
_Static_assert(sizeof(weft__shared_cell_t) == 64, "a cell is one cache line");

/* The first line counts the members that mapped the segment. */
typedef struct shared_header {
    uint32_t attached;
    uint32_t pad[15];
} shared_header_t;

int weft__shared_usable(const struct weft_comm *comm)
{
    const weft__plugin_t *pl = comm->ctx.single_plugin;

    return comm->size >= 2 && comm->nodes.nnodes == 1 && pl &&
           (pl->needs & WEFT_TRANSPORT_NEED_LOCAL_PEER);
}

/* Maps comm's segment of this kind ("coll", "pipe") and len bytes,
 * creating it if this rank is the first, and counts this rank in: the
 * last member to arrive removes the name. reserve: allocate its memory
 * now (posix_fallocate), so that a full /dev/shm is an error here rather
 * than a SIGBUS at the first touch of a page beyond it. */
static weft_result_t map_segment(struct weft_comm *comm, const char *kind, size_t len,
                                 int reserve, void **out)
{
    char name[160], why[160] = "";
    void *base = MAP_FAILED;
    int fd, err = 0, created;

    snprintf(name, sizeof(name), "/weft-%s-%s-%u-%d", comm->inst->wire.job_id, kind,
             comm->ctx.context_id, comm->world_ranks[0]);
    fd = weft__private_shm_open(name, &created, why, sizeof(why));
    if (fd < 0 && errno == EPERM)
        return weft__error(WEFT_ERR_SYSTEM, "shared segment /dev/shm%s exists and is not "
                           "this job's: %s; refusing it", name, why);
    if (fd < 0 || ftruncate(fd, (off_t)len) < 0)
        err = errno;
    else if (reserve)
        err = posix_fallocate(fd, 0, (off_t)len);
    /* A reserved segment's pages exist: map them all now, which costs a
     * fraction of the page faults that the pipelined collectives' first
     * calls took otherwise (their steps move round the whole segment: at
     * 2 ranks an allreduce of 128 KiB took 47 us instead of 5 for its
     * first twenty calls). */
    if (!err && (base = mmap(NULL, len, PROT_READ | PROT_WRITE,
                             MAP_SHARED | (reserve ? MAP_POPULATE : 0), fd, 0)) == MAP_FAILED)
        err = errno;
    if (fd >= 0)
        close(fd);
    if (err) {
        /* This rank does not count itself in, so the name stays in
         * /dev/shm, as after a rank killed before it attached. */
        return weft__error(WEFT_ERR_SYSTEM, "shared segment %s of %zu bytes: %s%s", name, len,
                           strerror(err), err == ENOSPC ? " (/dev/shm is full or too small: "
                           "mount it larger, or choose other algorithms with "
                           "WEFT_ALGO)" : "");
    }
    if (__atomic_add_fetch(&((shared_header_t *)base)->attached, 1, __ATOMIC_ACQ_REL) ==
        (uint32_t)comm->size)
        shm_unlink(name);
    *out = base;
    return WEFT_SUCCESS;
}

/* comm's destructor (weft__comm_add_destructor): unmaps the segments. */
static void shared_detach(struct weft_comm *comm, void *arg)
{
    weft__shared_t *s = arg;

    if (s->chunks)
        munmap(s->chunks - sizeof(shared_header_t), s->chunks_len);
    munmap(s->base, s->len);
    free(s->abandoned);
    free(s);
    comm->shared = NULL;
}

/* The inode of this process's pid namespace, low 32 bits (0: unknown). */
static uint32_t own_pidns(void)
{
    struct stat st;

    return stat("/proc/self/ns/pid", &st) == 0 ? (uint32_t)st.st_ino : 0;
}

weft_result_t weft__shared_attach(struct weft_comm *comm)
{
    int n = comm->size;
    size_t len = sizeof(shared_header_t) + (size_t)n * sizeof(weft__shared_ctrl_t) +
                 (size_t)n * WEFT__SHARED_DEPTH * sizeof(weft__shared_cell_t) +
                 (size_t)n * WEFT__SHARED_DEPTH * WEFT__SHARED_SMALL +
                 2 * (size_t)n * WEFT__SHARED_SLOT;
    weft__shared_t *s;
    void *base;
    weft_result_t rc;

    if (comm->shared)
        return WEFT_SUCCESS;
    /* Before the first sleep on the segment, which may come next. */
    if ((rc = weft__doorbell_open(comm->inst)) != WEFT_SUCCESS)
        return rc;
    if (!(s = calloc(1, sizeof(*s))))
        return weft__error(WEFT_ERR_NO_MEMORY, "cannot allocate a shared segment");
    if ((rc = map_segment(comm, "coll", len, 0, &base)) != WEFT_SUCCESS) {
        free(s);
        return rc;
    }
    s->base = base;
    s->len = len;
    s->n = n;
    s->ctrl = (weft__shared_ctrl_t *)((unsigned char *)base + sizeof(shared_header_t));
    s->cells = (weft__shared_cell_t *)(s->ctrl + n);
    s->small = (unsigned char *)(s->cells + (size_t)n * WEFT__SHARED_DEPTH);
    s->data = s->small + (size_t)n * WEFT__SHARED_DEPTH * WEFT__SHARED_SMALL;
    s->pidns = own_pidns();
    s->ctrl[comm->rank].pidns = s->pidns;
    __atomic_store_n(&s->ctrl[comm->rank].pid, (uint32_t)getpid(), __ATOMIC_RELEASE);
    if ((rc = weft__comm_add_destructor(comm, shared_detach, s)) != WEFT_SUCCESS) {
        munmap(base, len);
        free(s);
        return rc;
    }
    comm->shared = s;
    return WEFT_SUCCESS;
}

weft_result_t weft__shared_attach_chunks(struct weft_comm *comm)
{
    weft__shared_t *s = comm->shared;
    size_t slot = weft__shared_chunk_bytes(comm->size);
    size_t len = sizeof(shared_header_t) + 2 * (size_t)comm->size * slot;
    void *base;
    weft_result_t rc;

    if (s->chunks)
        return WEFT_SUCCESS;
    if ((rc = map_segment(comm, "pipe", len, 1, &base)) != WEFT_SUCCESS)
        return rc;
    s->chunks = (unsigned char *)base + sizeof(shared_header_t);
    s->chunk_bytes = slot;
    s->chunks_len = len;
    return WEFT_SUCCESS;
}


/* Whether every rank has published gen; the first that has not in
 * *late. */
static int all_published(const weft__shared_t *s, uint32_t gen, int *late)
{
    for (int r = 0; r < s->n; r++)
        if (!weft__shared_published(s, gen, r)) {
            *late = r;
            return 0;
        }
    return 1;
}

int weft__shared_all_published(weft__shared_t *s, uint32_t gen, uint32_t latest, int *late)
{
    if ((int32_t)(s->all_published - gen) >= 0)
        return 1;
    /* The latest generation first: when every rank has it, no look is
     * needed for the next generations (a broadcast root's case). */
    if (all_published(s, latest, late))
        s->all_published = latest;
    else if (all_published(s, gen, late))
        s->all_published = gen;
    else
        return 0;
    return 1;
}

/* Sequentially consistent on both sides: a sleeper sets its flag and
 * then reads the segment, a rank writes to the segment and then reads the
 * flags (here), so one of the two sees the other's write. */
static void wake_sleepers(struct weft_comm *comm)
{
    weft__shared_t *s = comm->shared;

    for (int r = 0; r < s->n; r++)
        if (r != comm->rank && __atomic_load_n(&s->ctrl[r].sleeping, __ATOMIC_SEQ_CST))
            weft__doorbell_ring(comm->inst, comm->world_ranks[r]);
}

void weft__shared_publish(struct weft_comm *comm, uint32_t gen, int abandoned)
{
    weft__shared_t *s = comm->shared;

    /* The generation, not a flag: a reader of the cell's previous use
     * must not mistake this for its own. */
    if (abandoned)
        __atomic_store_n(&weft__shared_cell(s, gen, comm->rank)->abandoned, gen,
                         __ATOMIC_RELAXED);
    __atomic_store_n(&weft__shared_cell(s, gen, comm->rank)->gen, gen, __ATOMIC_SEQ_CST);
    wake_sleepers(comm);
}

int weft__shared_all_progressed(weft__shared_t *s, uint32_t gen, uint32_t t, int *late)
{
    uint64_t want = (uint64_t)gen << 32 | t;

    if (s->all_progress == want)
        return 1;
    for (int r = 0; r < s->n; r++)
        if (!weft__shared_progressed(s, r, gen, t)) {
            *late = r;
            return 0;
        }
    s->all_progress = want;
    return 1;
}

void weft__shared_progress(struct weft_comm *comm, uint32_t gen, uint32_t t)
{
    weft__shared_t *s = comm->shared;

    __atomic_store_n(&s->ctrl[comm->rank].progress, (uint64_t)gen << 32 | t, __ATOMIC_SEQ_CST);
    wake_sleepers(comm);
}

/* The bit of generation gen in a ring of words x 64 bits of given-up
 * generations. */
static uint64_t *abandoned_word(uint64_t *ring, uint32_t words, uint32_t gen, uint64_t *bit)
{
    uint32_t at = gen % (64 * words);

    *bit = (uint64_t)1 << (at % 64);
    return &ring[at / 64];
}

/* Takes gen off the ring if it is there; whether it was. */
static int abandoned_take(weft__shared_t *s, uint32_t gen)
{
    uint64_t bit, *w;

    if (!s->abandoned_words)
        return 0;
    w = abandoned_word(s->abandoned, s->abandoned_words, gen, &bit);
    if (!(*w & bit))
        return 0;
    *w &= ~bit;
    return 1;
}

/* Puts gen, ahead generations past the last retired, on the ring, which
 * grows to hold it: WEFT_ERR_NO_MEMORY when it cannot. */
static weft_result_t abandoned_put(weft__shared_t *s, uint32_t gen, uint32_t ahead)
{
    uint64_t bit;

    if (ahead >= 64 * (uint64_t)s->abandoned_words) {
        uint32_t words = s->abandoned_words ? s->abandoned_words : 1;
        uint64_t *ring;

        while (ahead >= 64 * (uint64_t)words)
            words *= 2;
        if (!(ring = calloc(words, sizeof(uint64_t))))
            return weft__error(WEFT_ERR_NO_MEMORY, "cannot record a shared collective given up");
        /* The old ring held the generations after the last retired. */
        for (uint32_t g = s->retired + 1; g - s->retired <= 64 * s->abandoned_words; g++)
            if (abandoned_take(s, g))
                *abandoned_word(ring, words, g, &bit) |= bit;
        free(s->abandoned);
        s->abandoned = ring;
        s->abandoned_words = words;
    }
    *abandoned_word(s->abandoned, s->abandoned_words, gen, &bit) |= bit;
    return WEFT_SUCCESS;
}

void weft__shared_retire(struct weft_comm *comm, uint32_t gen)
{
    weft__shared_t *s = comm->shared;

    abandoned_take(s, gen); /* never on the ring, as generations retire in turn */
    s->retired = gen;
    /* Publishing an abandoned generation writes only its cell's counters,
     * never a payload a reader might still be reading: no need to wait
     * for the cell to come free. */
    while (abandoned_take(s, s->retired + 1))
        weft__shared_publish(comm, ++s->retired, 1);
}

void weft__shared_abandon(struct weft_comm *comm, uint32_t gen)
{
    weft__shared_t *s;
    uint32_t ahead;
    weft_result_t rc;

    if (!comm->shared && (rc = weft__shared_attach(comm)) != WEFT_SUCCESS) {
        WEFT_WARN(COLL, "cannot give up a shared collective: %s", weft__get_error());
        return;
    }
    s = comm->shared;
    ahead = gen - s->retired - 1;
    if (ahead == 0) {
        weft__shared_publish(comm, gen, 1);
        weft__shared_retire(comm, gen);
    } else if ((rc = abandoned_put(s, gen, ahead)) != WEFT_SUCCESS) {
        WEFT_WARN(COLL, "cannot give up shared collective %u: %s", gen, weft__get_error());
    }
}

void weft__shared_sleeping(struct weft_comm *comm, int on)
{
    __atomic_store_n(&comm->shared->ctrl[comm->rank].sleeping, on ? 1u : 0u, __ATOMIC_SEQ_CST);
}

/* Whether rank r's process is known to be gone (see segment.h). */
static int rank_gone(const weft__shared_t *s, int r, uint32_t *pid)
{
    uint32_t ns;

    /* pid is stored last, with release: its namespace is in place. */
    *pid = __atomic_load_n(&s->ctrl[r].pid, __ATOMIC_ACQUIRE);
    ns = s->ctrl[r].pidns;
    /* ESRCH only: a zombie, or a process of another user, still exists. */
    return s->pidns && *pid && ns == s->pidns && kill((pid_t)*pid, 0) != 0 && errno == ESRCH;
}

static weft_result_t lost(int r, uint32_t pid)
{
    return weft__error(WEFT_ERR_PEER_LOST, "rank %d (pid %u) exited while this rank waited "
                       "for it on the shared segment", r, pid);
}

weft_result_t weft__shared_check_alive(struct weft_comm *comm, int r)
{
    weft__shared_t *s = comm->shared;
    uint32_t pid;
    int64_t now;

    /* The clock is read every 64 waits only: a wait is a poll of the
     * segment, and the first ones spin. */
    if (!s || !s->pidns || r < 0 || r >= s->n || ++s->waits % 64)
        return WEFT_SUCCESS;
    if ((now = weft__now_ms()) < s->next_look_ms)
        return WEFT_SUCCESS;
    s->next_look_ms = now + WEFT__SHARED_LOOK_MS;
    return rank_gone(s, r, &pid) ? lost(r, pid) : WEFT_SUCCESS;
}

weft_result_t weft__shared_find_lost(struct weft_comm *comm, uint32_t gen)
{
    weft__shared_t *s = comm->shared;
    uint32_t pid;

    for (int r = 0; s && r < s->n; r++)
        if (r != comm->rank && !weft__shared_published(s, gen, r) && rank_gone(s, r, &pid))
            return lost(r, pid);
    return WEFT_SUCCESS;
}
