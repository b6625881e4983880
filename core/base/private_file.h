/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * private_file.h: files in /dev/shm that only this job's user may use.
 *
 * weft's shared segments and doorbells live under names made of the job's
 * random id, in a directory every user can write to. Another user who
 * learns or guesses a name must not be able to hand weft a file of their
 * own there (to read or change what the ranks exchange), nor redirect it
 * through a symbolic link. So a name is created exclusively, owner-only;
 * one that already exists is used only if it is of the expected type,
 * owned by this user and closed to everybody else; and links are never
 * followed (O_NOFOLLOW, which glibc's shm_open also sets).
 */
#ifndef WEFT_CORE_BASE_PRIVATE_FILE_H
#define WEFT_CORE_BASE_PRIVATE_FILE_H

#include <stddef.h>
#include <sys/types.h>

/* 0 when fd is a file of type (S_IFREG, S_IFIFO) owned by this process's
 * effective user and open to nobody else; -1 otherwise, with the reason
 * ("owned by uid 1001, not this user (uid 1000)") in why. */
int weft__private_file_check(int fd, mode_t type, char *why, size_t cap);

/* shm_open of name read-write: created (0600, exclusively) when absent,
 * else opened and checked as above. *created tells which. -1 with errno
 * set (EPERM for a file that fails the check, its reason in why). */
int weft__private_shm_open(const char *name, int *created, char *why, size_t cap);

/* The same for a FIFO at path (mkfifo, then open O_RDWR | O_NONBLOCK). */
int weft__private_fifo_open(const char *path, char *why, size_t cap);

#endif /* WEFT_CORE_BASE_PRIVATE_FILE_H */
