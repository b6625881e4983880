/*
 * shared_seg.c: a communicator's node-shared segment (see shared_seg.h).
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
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/comm.h"
#include "core/doorbell.h"
#include "core/error.h"
#include "core/log.h"
#include "core/shared_seg.h"

_Static_assert(sizeof(weft__shared_ctrl_t) == 64, "a control line is one cache line");
_Static_assert(sizeof(weft__shared_cell_t) == 64, "a cell is one cache line");

/* The first line counts the members that mapped the segment. */
typedef struct shared_header {
    uint32_t attached;
    uint32_t pad[15];
} shared_header_t;

int weft__shared_usable(const struct weft_comm *comm)
{
    const weft__plugin_t *pl = comm->single_plugin;

    return comm->size >= 2 && comm->nodes.nnodes == 1 && pl &&
           (pl->needs & WEFT_TRANSPORT_NEED_LOCAL_PEER);
}

weft_result_t weft__shared_attach(struct weft_comm *comm)
{
    weft__instance_t *inst = comm->inst;
    int n = comm->size;
    size_t len = sizeof(shared_header_t) + (size_t)n * sizeof(weft__shared_ctrl_t) +
                 (size_t)n * WEFT__SHARED_DEPTH * sizeof(weft__shared_cell_t) +
                 2 * (size_t)n * WEFT__SHARED_SLOT;
    weft__shared_t *s;
    shared_header_t *hdr;
    char name[160];
    void *base;
    int fd, err;
    weft_result_t rc;

    if (comm->shared)
        return WEFT_SUCCESS;
    /* Before the first sleep on the segment, which may come next. */
    if ((rc = weft__doorbell_open(inst)) != WEFT_SUCCESS)
        return rc;
    snprintf(name, sizeof(name), "/weft-%s-coll-%u-%d", inst->job_id, comm->context_id,
             comm->world_ranks[0]);
    if (!(s = calloc(1, sizeof(*s))))
        return weft__error(WEFT_ERR_NO_MEMORY, "cannot allocate a shared segment");
    fd = shm_open(name, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
    if (fd < 0 || ftruncate(fd, (off_t)len) < 0 ||
        (base = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0)) == MAP_FAILED) {
        err = errno;
        if (fd >= 0)
            close(fd);
        free(s);
        return weft__error(WEFT_ERR_SYSTEM, "shared segment %s of %zu bytes: %s", name, len,
                           strerror(err));
    }
    close(fd);
    s->base = base;
    s->len = len;
    s->n = n;
    s->ctrl = (weft__shared_ctrl_t *)((unsigned char *)base + sizeof(shared_header_t));
    s->cells = (weft__shared_cell_t *)(s->ctrl + n);
    s->data = (unsigned char *)(s->cells + (size_t)n * WEFT__SHARED_DEPTH);
    hdr = base;
    if (__atomic_add_fetch(&hdr->attached, 1, __ATOMIC_ACQ_REL) == (uint32_t)n)
        shm_unlink(name);
    comm->shared = s;
    return WEFT_SUCCESS;
}

void weft__shared_detach(struct weft_comm *comm)
{
    if (!comm->shared)
        return;
    munmap(comm->shared->base, comm->shared->len);
    free(comm->shared);
    comm->shared = NULL;
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

void weft__shared_publish(struct weft_comm *comm, uint32_t gen, int abandoned)
{
    weft__shared_t *s = comm->shared;

    /* Sequentially consistent on both sides: a sleeper sets its flag and
     * then reads the cells, this rank writes a cell and then reads the
     * flags, so one of the two sees the other's write. */
    /* The generation, not a flag: a reader of the cell's previous use
     * must not mistake this for its own. */
    if (abandoned)
        __atomic_store_n(&weft__shared_cell(s, gen, comm->rank)->abandoned, gen,
                         __ATOMIC_RELAXED);
    __atomic_store_n(&weft__shared_cell(s, gen, comm->rank)->gen, gen, __ATOMIC_SEQ_CST);
    for (int r = 0; r < s->n; r++)
        if (r != comm->rank && __atomic_load_n(&s->ctrl[r].sleeping, __ATOMIC_SEQ_CST))
            weft__doorbell_ring(comm->inst, comm->world_ranks[r]);
}

void weft__shared_retire(struct weft_comm *comm, uint32_t gen)
{
    weft__shared_t *s = comm->shared;

    s->retired = gen;
    s->abandoned >>= 1;
    /* Publishing an abandoned generation writes only its cell's counters,
     * never a payload a reader might still be reading: no need to wait
     * for the cell to come free. */
    while (s->abandoned & 1) {
        weft__shared_publish(comm, ++s->retired, 1);
        s->abandoned >>= 1;
    }
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
    } else if (ahead < 64) {
        s->abandoned |= (uint64_t)1 << ahead;
    } else {
        WEFT_WARN(COLL, "cannot give up shared collective %u: %u generations ahead", gen, ahead);
    }
}

void weft__shared_sleeping(struct weft_comm *comm, int on)
{
    __atomic_store_n(&comm->shared->ctrl[comm->rank].sleeping, on ? 1u : 0u, __ATOMIC_SEQ_CST);
}
