/*
 * frame.c: encoding, decoding and whole-frame socket I/O of the store
 * protocol.
 */
#include "config.h"

#include <arpa/inet.h>
#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "core/error.h"
#include "core/frame.h"

static int64_t now_ms(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void wbuf_reserve(weft__wbuf_t *w, size_t n)
{
    size_t cap;
    unsigned char *p;

    if (w->failed || w->len + n <= w->cap)
        return;
    cap = w->cap ? w->cap : 256;
    while (cap < w->len + n)
        cap *= 2;
    p = realloc(w->data, cap);
    if (!p) {
        w->failed = 1;
        return;
    }
    w->data = p;
    w->cap = cap;
}

void weft__wbuf_u32(weft__wbuf_t *w, uint32_t v)
{
    uint32_t be = htonl(v);

    wbuf_reserve(w, 4);
    if (w->failed)
        return;
    memcpy(w->data + w->len, &be, 4);
    w->len += 4;
}

void weft__wbuf_bytes(weft__wbuf_t *w, const void *p, size_t n)
{
    if (n > UINT32_MAX) {
        w->failed = 1;
        return;
    }
    weft__wbuf_u32(w, (uint32_t)n);
    wbuf_reserve(w, n);
    if (w->failed)
        return;
    if (n)
        memcpy(w->data + w->len, p, n);
    w->len += n;
}

void weft__wbuf_str(weft__wbuf_t *w, const char *s)
{
    weft__wbuf_bytes(w, s, strlen(s));
}

void weft__wbuf_free(weft__wbuf_t *w)
{
    free(w->data);
    memset(w, 0, sizeof(*w));
}

uint32_t weft__rbuf_u32(weft__rbuf_t *r)
{
    uint32_t be;

    if (r->failed || r->end - r->p < 4) {
        r->failed = 1;
        return 0;
    }
    memcpy(&be, r->p, 4);
    r->p += 4;
    return ntohl(be);
}

size_t weft__rbuf_bytes(weft__rbuf_t *r, const void **p, size_t max)
{
    uint32_t n = weft__rbuf_u32(r);

    if (r->failed || n > max || (size_t)(r->end - r->p) < n) {
        r->failed = 1;
        *p = NULL;
        return 0;
    }
    *p = r->p;
    r->p += n;
    return n;
}

void weft__rbuf_str(weft__rbuf_t *r, char *buf, size_t cap)
{
    const void *p;
    size_t n = weft__rbuf_bytes(r, &p, cap - 1);

    if (r->failed) {
        buf[0] = '\0';
        return;
    }
    memcpy(buf, p, n);
    buf[n] = '\0';
}

void weft__frame_header(unsigned char hdr[WEFT__FRAME_HEADER], uint32_t type, uint32_t len)
{
    uint32_t v[3] = { htonl(WEFT__FRAME_MAGIC), htonl(type), htonl(len) };

    memcpy(hdr, v, sizeof(v));
}

weft_result_t weft__frame_parse_header(const unsigned char hdr[WEFT__FRAME_HEADER],
                                       uint32_t *type, uint32_t *len)
{
    uint32_t v[3];

    memcpy(v, hdr, sizeof(v));
    if (ntohl(v[0]) != WEFT__FRAME_MAGIC)
        return weft__error(WEFT_ERR_BOOTSTRAP, "rendezvous frame with a bad magic number "
                           "(not a weft peer, or another version)");
    *type = ntohl(v[1]);
    *len = ntohl(v[2]);
    if (*len > WEFT__FRAME_MAX)
        return weft__error(WEFT_ERR_BOOTSTRAP, "rendezvous frame of %u bytes exceeds the "
                           "limit of %u", *len, WEFT__FRAME_MAX);
    return WEFT_SUCCESS;
}

/* Waits until fd is ready for events or the deadline passes. */
static weft_result_t wait_fd(int fd, short events, int64_t deadline_ms)
{
    struct pollfd pfd = { .fd = fd, .events = events };
    int timeout = -1, rc;

    if (deadline_ms >= 0) {
        int64_t left = deadline_ms - now_ms();

        if (left <= 0)
            return WEFT_ERR_TIMEOUT;
        timeout = left > 1000 ? 1000 : (int)left;
    }
    rc = poll(&pfd, 1, timeout);
    if (rc < 0 && errno != EINTR)
        return weft__error(WEFT_ERR_SYSTEM, "poll: %m");
    return WEFT_SUCCESS;
}

static weft_result_t io_all(int fd, void *buf, size_t len, int writing, int64_t deadline_ms)
{
    size_t done = 0;

    while (done < len) {
        ssize_t n = writing ? send(fd, (char *)buf + done, len - done, MSG_NOSIGNAL | MSG_DONTWAIT)
                            : recv(fd, (char *)buf + done, len - done, MSG_DONTWAIT);
        weft_result_t rc;

        if (n > 0) {
            done += (size_t)n;
            continue;
        }
        if (n == 0 && !writing)
            return weft__error(WEFT_ERR_PEER_LOST, "the rendezvous connection was closed");
        if (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)
            return weft__error(WEFT_ERR_PEER_LOST, "rendezvous connection: %m");
        rc = wait_fd(fd, writing ? POLLOUT : POLLIN, deadline_ms);
        if (rc != WEFT_SUCCESS)
            return rc;
    }
    return WEFT_SUCCESS;
}

weft_result_t weft__frame_send(int fd, uint32_t type, const void *payload, size_t len,
                               int64_t deadline_ms)
{
    unsigned char hdr[WEFT__FRAME_HEADER];
    weft_result_t rc;

    if (len > WEFT__FRAME_MAX)
        return weft__error(WEFT_ERR_INVALID_ARG, "rendezvous message of %zu bytes exceeds "
                           "the limit of %u", len, WEFT__FRAME_MAX);
    weft__frame_header(hdr, type, (uint32_t)len);
    rc = io_all(fd, hdr, sizeof(hdr), 1, deadline_ms);
    if (rc == WEFT_SUCCESS && len)
        rc = io_all(fd, (void *)payload, len, 1, deadline_ms);
    return rc;
}

weft_result_t weft__frame_recv(int fd, uint32_t *type, unsigned char **payload, size_t *len,
                               int64_t deadline_ms)
{
    unsigned char hdr[WEFT__FRAME_HEADER], *buf;
    uint32_t t, n;
    weft_result_t rc = io_all(fd, hdr, sizeof(hdr), 0, deadline_ms);

    if (rc != WEFT_SUCCESS)
        return rc;
    rc = weft__frame_parse_header(hdr, &t, &n);
    if (rc != WEFT_SUCCESS)
        return rc;
    buf = malloc(n ? n : 1);
    if (!buf)
        return weft__error(WEFT_ERR_NO_MEMORY, "cannot allocate a %u-byte frame", n);
    rc = io_all(fd, buf, n, 0, deadline_ms);
    if (rc != WEFT_SUCCESS) {
        free(buf);
        return rc;
    }
    *type = t;
    *payload = buf;
    *len = n;
    return WEFT_SUCCESS;
}
