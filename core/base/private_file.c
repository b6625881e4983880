/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * private_file.c: files in /dev/shm that only this job's user may use
 * (see private_file.h).
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/base/private_file.h"

int weft__private_file_check(int fd, mode_t type, char *why, size_t cap)
{
    struct stat st;

    if (fstat(fd, &st) != 0) {
        snprintf(why, cap, "fstat: %s", strerror(errno));
        return -1;
    }
    if ((st.st_mode & S_IFMT) != type) {
        snprintf(why, cap, "not a %s", type == S_IFIFO ? "FIFO" : "regular file");
        return -1;
    }
    if (st.st_uid != geteuid()) {
        snprintf(why, cap, "owned by uid %u, not this user (uid %u)", (unsigned)st.st_uid,
                 (unsigned)geteuid());
        return -1;
    }
    if (st.st_mode & (S_IRWXG | S_IRWXO)) {
        snprintf(why, cap, "open to other users (mode %04o)", (unsigned)(st.st_mode & 07777));
        return -1;
    }
    return 0;
}

/* Closes fd and fails with EPERM once a check failed. */
static int refuse(int fd)
{
    close(fd);
    errno = EPERM;
    return -1;
}

int weft__private_shm_open(const char *name, int *created, char *why, size_t cap)
{
    int fd = shm_open(name, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);

    *created = fd >= 0;
    if (fd >= 0 || errno != EEXIST) {
        if (fd < 0)
            snprintf(why, cap, "%s", strerror(errno));
        return fd;
    }
    /* Another rank of the job created it first, or somebody planted it. */
    fd = shm_open(name, O_RDWR | O_NOFOLLOW | O_CLOEXEC, 0);
    if (fd < 0) {
        snprintf(why, cap, "%s", errno == ELOOP ? "a symbolic link" : strerror(errno));
        return -1;
    }
    if (weft__private_file_check(fd, S_IFREG, why, cap) != 0)
        return refuse(fd);
    return fd;
}

int weft__private_fifo_open(const char *path, char *why, size_t cap)
{
    int fd;

    if (mkfifo(path, 0600) != 0 && errno != EEXIST) {
        snprintf(why, cap, "mkfifo: %s", strerror(errno));
        return -1;
    }
    /* O_RDWR: a FIFO read end without any writer polls as hung up. */
    fd = open(path, O_RDWR | O_NONBLOCK | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0) {
        snprintf(why, cap, "%s", errno == ELOOP ? "a symbolic link" : strerror(errno));
        return -1;
    }
    if (weft__private_file_check(fd, S_IFIFO, why, cap) != 0)
        return refuse(fd);
    return fd;
}
