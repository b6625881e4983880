/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * cudrv_fds.c: the descriptor server of VMM allocations and its client
 * (cudrv_fds.h says what and why).
 */
#include "config.h"

#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "plugins/cuda-common/cudrv_fds.h"

#define FDS_MAGIC "weftfds1"

/* A request, and its answer (with the descriptor as SCM_RIGHTS where
 * status is CUDA_SUCCESS). */
struct fds_request {
    char magic[8];
    uint64_t base, buffer_id;
};

struct fds_reply {
    int32_t status;                     /* a CUresult */
    int32_t pad;
};

/* The abstract socket address of name; its length. */
static socklen_t sock_addr(struct sockaddr_un *sa, const char *name)
{
    size_t n = strnlen(name, WCU_FDS_NAME - 1);

    memset(sa, 0, sizeof(*sa));
    sa->sun_family = AF_UNIX;
    memcpy(sa->sun_path + 1, name, n); /* sun_path[0] = 0: abstract */
    return (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + n);
}

static void set_timeouts(int fd)
{
    struct timeval tv = { .tv_sec = 10 };

    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
    setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
}

/* A descriptor of the VMM allocation at base with buffer_id, or -1 with
 * *status. */
static int export_fd(const struct wcu_drv *d, uint64_t base, uint64_t buffer_id,
                     CUresult *status)
{
    CUmemGenericAllocationHandle h;
    char why[WCU_WHY_MAX];
    struct wcu_ptr p;
    int fd = -1;

    if (weft__cudrv_ptr_query(d, (const void *)(uintptr_t)base, &p, why, sizeof(why)) != 0 ||
        p.mem != WCU_MEM_DEVICE || p.start != base || p.buffer_id != buffer_id) {
        *status = CUDA_ERROR_INVALID_HANDLE; /* freed, or another allocation now */
        return -1;
    }
    if ((*status = d->fn.cuMemRetainAllocationHandle(&h, (void *)(uintptr_t)base)) !=
        CUDA_SUCCESS)
        return -1;
    *status = d->fn.cuMemExportToShareableHandle(&fd, h,
                                                 CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0);
    d->fn.cuMemRelease(h);
    return *status == CUDA_SUCCESS ? fd : -1;
}

/* One request on conn: answered, with the descriptor where it is one of
 * this process's allocations and the asker runs as this user. */
static void serve_one(struct wcu_fds_server *s, int conn)
{
    struct fds_reply rep = { .status = CUDA_ERROR_INVALID_HANDLE };
    struct fds_request req;
    struct ucred cred;
    socklen_t clen = sizeof(cred);
    char cbuf[CMSG_SPACE(sizeof(int))];
    struct iovec iov = { &rep, sizeof(rep) };
    struct msghdr msg = { .msg_iov = &iov, .msg_iovlen = 1 };
    int fd = -1;
    CUresult st;

    set_timeouts(conn);
    if (getsockopt(conn, SOL_SOCKET, SO_PEERCRED, &cred, &clen) != 0 || cred.uid != getuid())
        return; /* another user's process: no answer at all */
    if (recv(conn, &req, sizeof(req), MSG_WAITALL) != (ssize_t)sizeof(req) ||
        memcmp(req.magic, FDS_MAGIC, sizeof(req.magic)))
        return;
    if ((fd = export_fd(s->drv, req.base, req.buffer_id, &st)) >= 0) {
        struct cmsghdr *cm;

        rep.status = CUDA_SUCCESS;
        memset(cbuf, 0, sizeof(cbuf));
        msg.msg_control = cbuf;
        msg.msg_controllen = sizeof(cbuf);
        cm = CMSG_FIRSTHDR(&msg);
        cm->cmsg_level = SOL_SOCKET;
        cm->cmsg_type = SCM_RIGHTS;
        cm->cmsg_len = CMSG_LEN(sizeof(int));
        memcpy(CMSG_DATA(cm), &fd, sizeof(int));
    } else {
        rep.status = (int32_t)st;
    }
    if (sendmsg(conn, &msg, MSG_NOSIGNAL) == (ssize_t)sizeof(rep) && fd >= 0)
        __atomic_add_fetch(&s->served, 1, __ATOMIC_RELAXED);
    if (fd >= 0)
        close(fd);
}

static void *server_main(void *arg)
{
    struct wcu_fds_server *s = arg;
    int conn;

    if (s->thread_init)
        s->thread_init(s->arg);
    __atomic_store_n(&s->started, 1, __ATOMIC_RELEASE);
    for (;;) {
        conn = accept4(s->fd, NULL, NULL, SOCK_CLOEXEC);
        if (conn < 0) {
            if (errno == EINTR || errno == ECONNABORTED)
                continue;
            return NULL; /* shut down: weft__cudrv_fds_stop */
        }
        serve_one(s, conn);
        close(conn);
    }
}

void weft__cudrv_fds_init(struct wcu_fds_server *s)
{
    memset(s, 0, sizeof(*s));
    s->fd = -1;
}

int weft__cudrv_fds_start(struct wcu_fds_server *s, const struct wcu_drv *d,
                          const char *owner, void (*thread_init)(void *), void *arg,
                          char *why, size_t cap)
{
    struct sockaddr_un sa;
    unsigned long long pidns = 0;
    struct stat st;
    socklen_t len;
    int fd;

    if (s->fd >= 0)
        return 0;
    if (stat("/proc/self/ns/pid", &st) == 0)
        pidns = (unsigned long long)st.st_ino;
    snprintf(s->name, sizeof(s->name), "weft-cuda-fds-%llu-%u-%s", pidns, (unsigned)getpid(),
             owner);
    len = sock_addr(&sa, s->name);
    fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0 || bind(fd, (struct sockaddr *)&sa, len) != 0 || listen(fd, 64) != 0) {
        snprintf(why, cap, "cannot serve VMM descriptors on @%s: %s", s->name,
                 strerror(errno));
        if (fd >= 0)
            close(fd);
        return -1;
    }
    s->fd = fd;
    s->drv = d;
    s->thread_init = thread_init;
    s->arg = arg;
    s->started = 0;
    if (pthread_create(&s->thread, NULL, server_main, s) != 0) {
        snprintf(why, cap, "cannot start the VMM descriptor server's thread");
        close(fd);
        s->fd = -1;
        return -1;
    }
    /* Returns once the thread is past its start-up and thread_init: a
     * program that forks while a thread is still inside an allocation
     * (the C library's thread start, a sanitizer runtime's, the driver's
     * context set-up) leaves its child a lock nobody will release, and
     * ASan's allocator has no fork handler to prevent it. */
    while (!__atomic_load_n(&s->started, __ATOMIC_ACQUIRE)) {
        struct timespec ts = { 0, 50000 };
        nanosleep(&ts, NULL);
    }
    return 0;
}

void weft__cudrv_fds_stop(struct wcu_fds_server *s)
{
    if (s->fd < 0)
        return;
    /* accept() returns at the shutdown; the thread then ends */
    shutdown(s->fd, SHUT_RDWR);
    pthread_join(s->thread, NULL);
    close(s->fd);
    s->fd = -1;
}

int weft__cudrv_fds_fetch(const char *name, uint64_t base, uint64_t buffer_id, CUresult *rc)
{
    struct fds_request req;
    struct fds_reply rep;
    struct sockaddr_un sa;
    char cbuf[CMSG_SPACE(sizeof(int))];
    struct iovec iov = { &rep, sizeof(rep) };
    struct msghdr msg = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = cbuf,
                          .msg_controllen = sizeof(cbuf) };
    struct cmsghdr *cm;
    socklen_t len = sock_addr(&sa, name);
    int sock, fd = -1;

    *rc = CUDA_ERROR_OPERATING_SYSTEM;
    memset(&req, 0, sizeof(req));
    memcpy(req.magic, FDS_MAGIC, sizeof(req.magic));
    req.base = base;
    req.buffer_id = buffer_id;
    if ((sock = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0)) < 0)
        return -1;
    set_timeouts(sock);
    if (connect(sock, (struct sockaddr *)&sa, len) != 0 ||
        send(sock, &req, sizeof(req), MSG_NOSIGNAL) != (ssize_t)sizeof(req) ||
        recvmsg(sock, &msg, MSG_WAITALL | MSG_CMSG_CLOEXEC) != (ssize_t)sizeof(rep)) {
        close(sock);
        return -1;
    }
    close(sock);
    for (cm = CMSG_FIRSTHDR(&msg); cm; cm = CMSG_NXTHDR(&msg, cm))
        if (cm->cmsg_level == SOL_SOCKET && cm->cmsg_type == SCM_RIGHTS)
            memcpy(&fd, CMSG_DATA(cm), sizeof(int));
    if (rep.status != CUDA_SUCCESS || fd < 0) {
        if (fd >= 0)
            close(fd);
        *rc = rep.status != CUDA_SUCCESS ? (CUresult)rep.status : CUDA_ERROR_INVALID_HANDLE;
        return -1;
    }
    return fd;
}
