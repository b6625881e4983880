/* SPDX-License-Identifier: BSD-3-Clause */
/* kvs_dir.c: a key-value store in a folder (kvs_dir.h). */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "tests/init/kvs_dir.h"
#include "tests/mp/mptest.h"

void kvs_dir_open(kvs_dir_t *d, const char *path)
{
    memset(d, 0, sizeof(*d));
    snprintf(d->path, sizeof(d->path), "%s", path);
    if (mkdir(path, 0700) != 0 && errno != EEXIST)
        MP_FAIL("mkdir %s: %s", path, strerror(errno));
}

static int file_of(const kvs_dir_t *d, const char *key, char *out, size_t cap)
{
    size_t n = (size_t)snprintf(out, cap, "%s/", d->path);

    for (const unsigned char *k = (const unsigned char *)key; *k; k++) {
        if (n + 3 > cap)
            return -1;
        n += (size_t)snprintf(out + n, cap - n, "%02x", *k);
    }
    return 0;
}

int kvs_dir_has(const kvs_dir_t *d, const char *key)
{
    char file[4096];

    return file_of(d, key, file, sizeof(file)) == 0 && access(file, F_OK) == 0;
}

static weft_result_t dir_set(void *ctx, const char *key, const void *val, size_t len)
{
    kvs_dir_t *d = ctx;
    char file[4096], tmp[4200];
    int fd;

    d->sets++;
    if (file_of(d, key, file, sizeof(file)) != 0)
        return WEFT_ERR_INVALID_ARG;
    snprintf(tmp, sizeof(tmp), "%s.tmp.%d", file, (int)getpid());
    fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    if (fd < 0)
        return WEFT_ERR_SYSTEM;
    if (len && write(fd, val, len) != (ssize_t)len) {
        close(fd);
        unlink(tmp);
        return WEFT_ERR_SYSTEM;
    }
    close(fd);
    return rename(tmp, file) == 0 ? WEFT_SUCCESS : WEFT_ERR_SYSTEM;
}

static weft_result_t dir_get(void *ctx, const char *key, void *val, size_t cap, size_t *len,
                             int timeout_ms)
{
    kvs_dir_t *d = ctx;
    char file[4096];
    double until = mp_now() + timeout_ms / 1000.0;
    struct stat st;
    ssize_t got;
    int fd;

    d->gets++;
    if (file_of(d, key, file, sizeof(file)) != 0)
        return WEFT_ERR_INVALID_ARG;
    while ((fd = open(file, O_RDONLY)) < 0) {
        if (mp_now() >= until)
            return WEFT_ERR_TIMEOUT;
        mp_sleep_us(1000);
    }
    if (fstat(fd, &st) != 0) {
        close(fd);
        return WEFT_ERR_SYSTEM;
    }
    *len = (size_t)st.st_size;
    got = read(fd, val, *len < cap ? *len : cap);
    close(fd);
    if (got < 0)
        return WEFT_ERR_SYSTEM;
    if (*len <= cap)
        return WEFT_SUCCESS;
    d->truncated++;
    return WEFT_ERR_TRUNCATED;
}

weft_kvs_t kvs_dir_kvs(kvs_dir_t *d)
{
    weft_kvs_t kvs = { d, dir_set, dir_get };

    return kvs;
}
