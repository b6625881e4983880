/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * ipc_event.c: interprocess events: the shared state of an event made
 * with CU_EVENT_INTERPROCESS, cuIpcGetEventHandle and cuIpcOpenEventHandle.
 *
 * A local event is a point in one stream of this process (event.c); an
 * interprocess one must be recorded, queried and waited on from any
 * process that opened it, so its state is a pair of counters in a memfd
 * page (struct fc_event_word) that every such process maps. A record
 * takes the next number and queues a stream memop that writes it to
 * "completed" when the stream gets there; the event has completed when
 * "completed" has caught up with "recorded" (an event never recorded
 * has). A wait, by the host or by a stream, waits for the number
 * recorded when the wait was asked for, as for local events.
 *
 * The handle, as for memory (ipc.c): the exporter's pid, the memfd's
 * descriptor there and the event's id, which the memfd's name
 * "fakecuda-event:ID" must match when the importer opens /proc/PID/fd/FD.
 * Errors from the reference's lists: an event made without
 * CU_EVENT_INTERPROCESS is CUDA_ERROR_INVALID_VALUE; no event,
 * CUDA_ERROR_INVALID_HANDLE; a handle that names no event (junk, a gone
 * process or event) CUDA_ERROR_INVALID_HANDLE; a handle of this process,
 * CUDA_ERROR_INVALID_CONTEXT, as for memory handles.
 * WEFT_FAKECUDA_FAULTS=noipc makes cuIpcGetEventHandle
 * CUDA_ERROR_NOT_SUPPORTED (IPC_EVENT_SUPPORTED is then 0).
 *
 * The page is never unmapped: a stream may still write to it after
 * cuEventDestroy, which the reference allows to return before the
 * event's work is done. A page per interprocess event is the price.
 */
#define _GNU_SOURCE
#include "config.h"

#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "tests/fakecuda/fakecuda.h"

struct fc_ipc_event {
    char magic[8];
    int32_t pid;
    int32_t fd;
    uint64_t id;
};

_Static_assert(sizeof(struct fc_ipc_event) <= CU_IPC_HANDLE_SIZE, "IPC event handle too large");

static const char event_magic[8] = "fcevent";

static struct fc_event_word *map_word(int fd)
{
    void *m = mmap(NULL, sizeof(struct fc_event_word), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    return m == MAP_FAILED ? NULL : m;
}

CUresult fc_event_word_new(struct CUevent_st *e)
{
    pthread_mutex_lock(&fc.lock);
    e->word_id = fc.next_buffer_id++;
    pthread_mutex_unlock(&fc.lock);
    char name[48];
    snprintf(name, sizeof(name), "fakecuda-event:%llu", e->word_id);
    e->word_fd = memfd_create(name, MFD_CLOEXEC);
    if (e->word_fd < 0) {
        fc_log("memfd_create: %m");
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    if (ftruncate(e->word_fd, (off_t)sizeof(struct fc_event_word)) || !(e->word = map_word(e->word_fd))) {
        fc_log("an interprocess event's page: %m");
        close(e->word_fd);
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    return CUDA_SUCCESS;
}

void fc_event_word_free(struct CUevent_st *e)
{
    if (e->word_fd >= 0)
        close(e->word_fd);
}

FC_API CUresult cuIpcGetEventHandle(CUipcEventHandle *pHandle, CUevent event)
{
    FC_FAULT("cuIpcGetEventHandle");
    CUresult r = fc_ctx_ready(NULL);
    if (r)
        return r;
    if (fc.no_ipc)
        return CUDA_ERROR_NOT_SUPPORTED;
    if (!event || event->magic != FC_MAGIC_EVENT)
        return CUDA_ERROR_INVALID_HANDLE;
    /* an imported event has no descriptor to hand on */
    if (!pHandle || !event->word || event->word_fd < 0)
        return CUDA_ERROR_INVALID_VALUE;
    struct fc_ipc_event h = { .pid = (int32_t)getpid(), .fd = event->word_fd, .id = event->word_id };
    memcpy(h.magic, event_magic, sizeof(h.magic));
    memset(pHandle, 0, sizeof(*pHandle));
    memcpy(pHandle->reserved, &h, sizeof(h));
    return CUDA_SUCCESS;
}

/* The exporter's memfd if it is still the event the handle names. */
static int open_event(const struct fc_ipc_event *h)
{
    char name[48];
    snprintf(name, sizeof(name), "fakecuda-event:%llu ", (unsigned long long)h->id);
    return fc_ipc_open_memfd(h->pid, h->fd, name);
}

FC_API CUresult cuIpcOpenEventHandle(CUevent *phEvent, CUipcEventHandle handle)
{
    FC_FAULT("cuIpcOpenEventHandle");
    CUresult r = fc_ctx_ready(NULL);
    if (r)
        return r;
    if (!phEvent)
        return CUDA_ERROR_INVALID_VALUE;
    struct fc_ipc_event h;
    memcpy(&h, handle.reserved, sizeof(h));
    if (memcmp(h.magic, event_magic, sizeof(h.magic)))
        return CUDA_ERROR_INVALID_HANDLE;
    if (h.pid == (int32_t)getpid())
        return CUDA_ERROR_INVALID_CONTEXT;
    int fd = open_event(&h);
    if (fd < 0)
        return CUDA_ERROR_INVALID_HANDLE;
    struct CUevent_st *e = calloc(1, sizeof(*e));
    if (!e) {
        r = CUDA_ERROR_OUT_OF_MEMORY;
        goto out_close_fd;
    }
    /* the mapping keeps the page; the importer needs no descriptor */
    if (!(e->word = map_word(fd))) {
        free(e);
        r = CUDA_ERROR_MAP_FAILED;
        goto out_close_fd;
    }
    e->magic = FC_MAGIC_EVENT;
    e->flags = CU_EVENT_INTERPROCESS | CU_EVENT_DISABLE_TIMING;
    e->word_fd = -1;
    e->word_id = h.id;
    *phEvent = e;
out_close_fd:
    close(fd);
    return r;
}
