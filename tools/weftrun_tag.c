/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * weftrun_tag.c: --tag-output, every line a rank writes prefixed "[rank]:".
 *
 * weftrun is the only writer of its stdout and stderr here, and writes
 * whole lines, so lines of different ranks never mix. The buffer of a
 * stream grows to hold its longest line; only a line longer than
 * WEFTRUN_TAG_LINE_MAX is written in pieces, the prefix before the first,
 * and other ranks' lines may come between those pieces.
 */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <unistd.h>

#include "tools/weftrun.h"

/* Reads per call, so that a rank writing without pause cannot keep weftrun
 * from its signals and the other ranks' output. */
#define READS_PER_CALL 32

/* A reader that went away (EPIPE, SIGPIPE is ignored) or a full disk must
 * not stop the job: the output is dropped. */
static void write_all(int fd, struct iovec *iov, int n)
{
    while (n > 0) {
        ssize_t w = writev(fd, iov, n);

        if (w < 0) {
            if (errno == EINTR)
                continue;
            return;
        }
        while (n > 0 && (size_t)w >= iov->iov_len) {
            w -= (ssize_t)iov->iov_len;
            iov++;
            n--;
        }
        if (n > 0) {
            iov->iov_base = (char *)iov->iov_base + w;
            iov->iov_len -= (size_t)w;
        }
    }
}

static void emit(struct weftrun_tag *t, const char *data, size_t len, int add_newline)
{
    struct iovec iov[3];
    int n = 0;

    if (!t->midline)
        iov[n++] = (struct iovec){ t->prefix, t->prefix_len };
    iov[n++] = (struct iovec){ (void *)data, len };
    if (add_newline)
        iov[n++] = (struct iovec){ "\n", 1 };
    write_all(t->out, iov, n);
}

static void close_stream(struct weftrun_tag *t)
{
    close(t->fd);
    t->fd = -1;
}

int weftrun_tag_init(struct weftrun_tag *t, int fd, int out, int rank)
{
    t->fd = fd;
    t->out = out;
    t->midline = 0;
    t->len = 0;
    t->cap = WEFTRUN_TAG_BUF_MIN;
    snprintf(t->prefix, sizeof(t->prefix), "[%d]:", rank);
    t->prefix_len = strlen(t->prefix);
    t->buf = malloc(t->cap);
    if (t->buf == NULL) {
        t->cap = 0;
        close_stream(t);
        return -1;
    }
    return 0;
}

/* Writes the complete lines in buf and keeps the rest. */
static void emit_lines(struct weftrun_tag *t)
{
    size_t start = 0;
    char *nl;

    while ((nl = memchr(t->buf + start, '\n', t->len - start)) != NULL) {
        size_t end = (size_t)(nl - t->buf) + 1;

        emit(t, t->buf + start, end - start, 0);
        t->midline = 0;
        start = end;
    }
    memmove(t->buf, t->buf + start, t->len - start);
    t->len -= start;
}

/* Room for more of an unfinished line: a bigger buffer, or, past
 * WEFTRUN_TAG_LINE_MAX (or out of memory), the line so far written as a
 * piece. */
static void make_room(struct weftrun_tag *t)
{
    char *buf;

    if (t->len < t->cap)
        return;
    if (t->cap < WEFTRUN_TAG_LINE_MAX) {
        buf = realloc(t->buf, t->cap * 2);
        if (buf != NULL) {
            t->buf = buf;
            t->cap *= 2;
            return;
        }
    }
    emit(t, t->buf, t->len, 0);
    t->midline = 1;
    t->len = 0;
}

void weftrun_tag_read(struct weftrun_tag *t)
{
    for (int i = 0; i < READS_PER_CALL && t->fd >= 0; i++) {
        ssize_t n;

        make_room(t);
        n = read(t->fd, t->buf + t->len, t->cap - t->len);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
            return;
        if (n <= 0) {
            close_stream(t);
            return;
        }
        t->len += (size_t)n;
        emit_lines(t);
    }
}

void weftrun_tag_finish(struct weftrun_tag *t)
{
    /* The rank exited; a process it left behind may still hold the pipe
     * open, so read what is there and do not wait for end of file. */
    weftrun_tag_read(t);
    if (t->len > 0)
        emit(t, t->buf, t->len, 1);
    else if (t->midline)
        emit(t, "", 0, 1);
    if (t->fd >= 0)
        close_stream(t);
    free(t->buf);
    t->buf = NULL;
    t->len = t->cap = 0;
    t->midline = 0;
}
