/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * frame.c: encoding, decoding and whole-frame socket I/O of the store
 * protocol.
 */
#include "config.h"

#include <arpa/inet.h>
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "core/base/error.h"
#include "core/boot/frame.h"

int64_t weft__frame_clock_ms(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* ------------------------------------------------------------- buffers */

static void wbuf_reserve(weft__wbuf_t *w, size_t n)
{
    size_t cap;
    unsigned char *p;

    if (w->failed || n <= w->cap - w->len)
        return;
    if (n > SIZE_MAX / 4 - w->len) {
        w->failed = 1;
        return;
    }
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

static void wbuf_raw(weft__wbuf_t *w, const void *p, size_t n)
{
    wbuf_reserve(w, n);
    if (w->failed)
        return;
    if (n)
        memcpy(w->data + w->len, p, n);
    w->len += n;
}

void weft__wbuf_u32(weft__wbuf_t *w, uint32_t v)
{
    uint32_t be = htonl(v);

    wbuf_raw(w, &be, 4);
}

void weft__wbuf_bytes(weft__wbuf_t *w, const void *p, size_t n)
{
    if (n > UINT32_MAX) {
        w->failed = 1;
        return;
    }
    weft__wbuf_u32(w, (uint32_t)n);
    wbuf_raw(w, p, n);
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

void weft__rbuf_init(weft__rbuf_t *r, const void *p, size_t len)
{
    r->p = p;
    r->end = r->p + len;
    r->failed = 0;
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

    *p = NULL;
    if (r->failed || n > max || (size_t)(r->end - r->p) < n) {
        r->failed = 1;
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

    buf[0] = '\0';
    if (r->failed)
        return;
    /* A NUL inside would make two different keys compare equal. */
    if (memchr(p, '\0', n)) {
        r->failed = 1;
        return;
    }
    memcpy(buf, p, n);
    buf[n] = '\0';
}

/* -------------------------------------------------------------- headers */

void weft__frame_header(unsigned char hdr[WEFT__FRAME_HEADER], uint32_t type, uint32_t len)
{
    uint32_t magic = htonl(WEFT__FRAME_MAGIC), n = htonl(len);
    uint16_t version = htons(WEFT__FRAME_VERSION), t = htons((uint16_t)type);

    memcpy(hdr, &magic, 4);
    memcpy(hdr + 4, &version, 2);
    memcpy(hdr + 6, &t, 2);
    memcpy(hdr + 8, &n, 4);
}

weft_result_t weft__frame_parse_header(const unsigned char hdr[WEFT__FRAME_HEADER], size_t max,
                                       uint32_t *type, uint32_t *len)
{
    uint32_t magic, n;
    uint16_t version, t;

    memcpy(&magic, hdr, 4);
    memcpy(&version, hdr + 4, 2);
    memcpy(&t, hdr + 6, 2);
    memcpy(&n, hdr + 8, 4);
    if (ntohl(magic) != WEFT__FRAME_MAGIC)
        return weft__error(WEFT_ERR_BOOTSTRAP, "rendezvous frame with a bad magic number "
                           "(not a weft rendezvous peer)");
    if (ntohs(version) != WEFT__FRAME_VERSION)
        return weft__error(WEFT_ERR_BOOTSTRAP, "rendezvous peer speaks protocol version %u, "
                           "this weft speaks %u (mixed weft versions in one job?)",
                           ntohs(version), WEFT__FRAME_VERSION);
    if (max > WEFT__FRAME_MAX)
        max = WEFT__FRAME_MAX;
    if (ntohl(n) > max)
        return weft__error(WEFT_ERR_BOOTSTRAP, "rendezvous frame of %u bytes exceeds the "
                           "limit of %zu", ntohl(n), max);
    *type = ntohs(t);
    *len = ntohl(n);
    return WEFT_SUCCESS;
}

/* ------------------------------------------------------------ messages */

static const char *type_name(uint32_t type)
{
    static const char *const names[] = {
        [WEFT__FRAME_HELLO] = "hello",     [WEFT__FRAME_OK] = "ok",
        [WEFT__FRAME_ERROR] = "error",     [WEFT__FRAME_JOIN] = "join",
        [WEFT__FRAME_JOINED] = "joined",   [WEFT__FRAME_QUERY] = "query",
        [WEFT__FRAME_QUERIED] = "queried", [WEFT__FRAME_SET] = "set",
        [WEFT__FRAME_GET] = "get",         [WEFT__FRAME_VALUE] = "value",
        [WEFT__FRAME_BARRIER] = "barrier", [WEFT__FRAME_CANCEL] = "cancel",
        [WEFT__FRAME_CANCELLED] = "cancelled",
    };

    return type < sizeof(names) / sizeof(names[0]) && names[type] ? names[type] : "unknown";
}

static weft_result_t malformed(uint32_t type, const char *field)
{
    return weft__error(WEFT_ERR_BOOTSTRAP, "malformed rendezvous %s frame: %s", type_name(type),
                       field);
}

/* Each field: read it, and on failure say which one it was. */
#define FIELD(what, expr)                                             \
    do {                                                              \
        expr;                                                         \
        if (r.failed)                                                 \
            return malformed(type, what " is cut short or too long"); \
    } while (0)

/* A u32 that must lie in [lo, hi]: 0, or -1 when cut short, -2 when out
 * of range. */
static int read_bounded(weft__rbuf_t *r, uint32_t lo, uint32_t hi, uint32_t *out)
{
    uint32_t v = weft__rbuf_u32(r);

    if (r->failed)
        return -1;
    if (v < lo || v > hi)
        return -2;
    *out = v;
    return 0;
}

#define BOUNDED(var, what, lo, hi)                                            \
    do {                                                                      \
        uint32_t v_ = 0;                                                      \
        int e_ = read_bounded(&r, (uint32_t)(lo), (uint32_t)(hi), &v_);       \
        if (e_)                                                               \
            return malformed(type, e_ == -1 ? what " is cut short"            \
                                            : what " is out of range");       \
        var = v_;                                                             \
    } while (0)

weft_result_t weft__msg_decode(uint32_t type, const unsigned char *payload, size_t len,
                               weft__msg_t *m)
{
    weft__rbuf_t r;
    const void *p;

    memset(m, 0, sizeof(*m));
    m->type = type;
    weft__rbuf_init(&r, payload, len);
    switch (type) {
    case WEFT__FRAME_HELLO:
        FIELD("the token", weft__rbuf_str(&r, m->text, WEFT__FRAME_HOST_MAX));
        break;
    case WEFT__FRAME_OK:
        FIELD("the job id", weft__rbuf_str(&r, m->text, WEFT__JOB_ID_MAX));
        break;
    case WEFT__FRAME_ERROR:
        BOUNDED(m->code, "the result code", 1, INT32_MAX);
        FIELD("the message", weft__rbuf_str(&r, m->text, sizeof(m->text)));
        break;
    case WEFT__FRAME_JOIN:
        BOUNDED(m->rank, "the rank", 0, WEFT__FRAME_MAX_RANKS - 1);
        BOUNDED(m->size, "the world size", 1, WEFT__FRAME_MAX_RANKS);
        FIELD("the pid", m->pid = weft__rbuf_u32(&r));
        FIELD("the host name", weft__rbuf_str(&r, m->text, WEFT__FRAME_HOST_MAX));
        FIELD("the record", m->len = weft__rbuf_bytes(&r, &p, WEFT__STORE_VALUE_MAX));
        m->data = p;
        if (m->rank >= m->size)
            return malformed(type, "the rank is not below the world size");
        break;
    case WEFT__FRAME_JOINED:
        FIELD("the job id", weft__rbuf_str(&r, m->text, WEFT__JOB_ID_MAX));
        BOUNDED(m->size, "the world size", 1, WEFT__FRAME_MAX_RANKS);
        /* Every record has at least its length: a count the payload
         * cannot hold is refused before walking it. */
        if ((size_t)(r.end - r.p) / 4 < (size_t)m->size)
            return malformed(type, "more records announced than the frame holds");
        m->data = r.p;
        for (int i = 0; i < m->size; i++)
            FIELD("a record", weft__rbuf_bytes(&r, &p, WEFT__STORE_VALUE_MAX));
        m->len = (size_t)(r.p - m->data);
        break;
    case WEFT__FRAME_QUERIED:
        BOUNDED(m->size, "the world size", 0, WEFT__FRAME_MAX_RANKS);
        BOUNDED(m->count, "the count", 0, m->size);
        if ((size_t)(r.end - r.p) != (size_t)m->count * 4)
            return malformed(type, "the rank list does not match its count");
        m->data = r.p;
        m->len = (size_t)m->count * 4;
        for (uint32_t i = 0; i < m->count; i++)
            if (weft__rbuf_u32(&r) >= (uint32_t)m->size)
                return malformed(type, "a rank is not below the world size");
        break;
    case WEFT__FRAME_SET:
        FIELD("the key", weft__rbuf_str(&r, m->text, WEFT__STORE_KEY_MAX));
        FIELD("the value", m->len = weft__rbuf_bytes(&r, &p, WEFT__STORE_VALUE_MAX));
        m->data = p;
        break;
    case WEFT__FRAME_GET:
        FIELD("the key", weft__rbuf_str(&r, m->text, WEFT__STORE_KEY_MAX));
        break;
    case WEFT__FRAME_VALUE:
        if (len > WEFT__STORE_VALUE_MAX)
            return malformed(type, "the value is too long");
        m->data = payload;
        m->len = len;
        r.p = r.end;
        break;
    case WEFT__FRAME_BARRIER:
        FIELD("the name", weft__rbuf_str(&r, m->text, WEFT__STORE_KEY_MAX));
        BOUNDED(m->count, "the number of ranks", 1, WEFT__FRAME_MAX_RANKS);
        break;
    case WEFT__FRAME_QUERY:
    case WEFT__FRAME_CANCEL:
    case WEFT__FRAME_CANCELLED:
        break;
    default:
        return weft__error(WEFT_ERR_BOOTSTRAP, "rendezvous frame of unknown type %u", type);
    }
    if (r.p != r.end)
        return malformed(type, "bytes left over after the last field");
    return WEFT_SUCCESS;
}

#undef FIELD
#undef BOUNDED

weft_result_t weft__frame_decode(const unsigned char *buf, size_t len, size_t max,
                                 weft__msg_t *m, size_t *used)
{
    uint32_t type, n;
    weft_result_t rc;

    if (len < WEFT__FRAME_HEADER)
        return weft__error(WEFT_ERR_TRUNCATED, "%zu bytes of a %d-byte frame header", len,
                           WEFT__FRAME_HEADER);
    rc = weft__frame_parse_header(buf, max, &type, &n);
    if (rc != WEFT_SUCCESS)
        return rc;
    if (len - WEFT__FRAME_HEADER < n)
        return weft__error(WEFT_ERR_TRUNCATED, "%zu bytes of a %u-byte frame payload",
                           len - WEFT__FRAME_HEADER, n);
    rc = weft__msg_decode(type, buf + WEFT__FRAME_HEADER, n, m);
    if (rc == WEFT_SUCCESS)
        *used = WEFT__FRAME_HEADER + (size_t)n;
    return rc;
}

static int str_fits(const char *s, size_t cap)
{
    return strnlen(s, cap) < cap;
}

weft_result_t weft__msg_encode(const weft__msg_t *m, weft__wbuf_t *w)
{
    size_t start = w->len, cap = 0, payload;
    unsigned char hdr[WEFT__FRAME_HEADER] = { 0 };
    int ok = 1;

    switch (m->type) {
    case WEFT__FRAME_HELLO: cap = WEFT__FRAME_HOST_MAX; break;
    case WEFT__FRAME_OK: cap = WEFT__JOB_ID_MAX; break;
    case WEFT__FRAME_ERROR:
        /* The decoder's range: a code it would refuse must not be sent. */
        cap = sizeof(m->text);
        ok = m->code >= 1 && m->code <= INT32_MAX;
        break;
    case WEFT__FRAME_JOIN:
        cap = WEFT__FRAME_HOST_MAX;
        ok = m->size >= 1 && m->size <= WEFT__FRAME_MAX_RANKS && m->rank >= 0 &&
             m->rank < m->size && m->len <= WEFT__STORE_VALUE_MAX;
        break;
    case WEFT__FRAME_JOINED:
        cap = WEFT__JOB_ID_MAX;
        ok = m->size >= 1 && m->size <= WEFT__FRAME_MAX_RANKS;
        break;
    case WEFT__FRAME_QUERIED:
        ok = m->size >= 0 && m->size <= WEFT__FRAME_MAX_RANKS &&
             m->count <= (uint32_t)m->size && m->len == (size_t)m->count * 4;
        break;
    case WEFT__FRAME_SET: cap = WEFT__STORE_KEY_MAX; ok = m->len <= WEFT__STORE_VALUE_MAX; break;
    case WEFT__FRAME_GET: cap = WEFT__STORE_KEY_MAX; break;
    case WEFT__FRAME_VALUE: ok = m->len <= WEFT__STORE_VALUE_MAX; break;
    case WEFT__FRAME_BARRIER:
        cap = WEFT__STORE_KEY_MAX;
        ok = m->count >= 1 && m->count <= WEFT__FRAME_MAX_RANKS;
        break;
    case WEFT__FRAME_QUERY:
    case WEFT__FRAME_CANCEL:
    case WEFT__FRAME_CANCELLED:
        break;
    default:
        ok = 0;
        break;
    }
    if (!ok || (cap && !str_fits(m->text, cap)))
        return weft__error(WEFT_ERR_INVALID_ARG, "rendezvous %s frame: a field is over its "
                           "limit (key < %d bytes, value <= %u bytes, rank < size <= %d)",
                           type_name(m->type), WEFT__STORE_KEY_MAX, WEFT__STORE_VALUE_MAX,
                           WEFT__FRAME_MAX_RANKS);
    wbuf_raw(w, hdr, sizeof(hdr));
    switch (m->type) {
    case WEFT__FRAME_ERROR:
        weft__wbuf_u32(w, m->code);
        weft__wbuf_str(w, m->text);
        break;
    case WEFT__FRAME_JOIN:
        weft__wbuf_u32(w, (uint32_t)m->rank);
        weft__wbuf_u32(w, (uint32_t)m->size);
        weft__wbuf_u32(w, m->pid);
        weft__wbuf_str(w, m->text);
        weft__wbuf_bytes(w, m->data, m->len);
        break;
    case WEFT__FRAME_JOINED:
        weft__wbuf_str(w, m->text);
        weft__wbuf_u32(w, (uint32_t)m->size);
        wbuf_raw(w, m->data, m->len);
        break;
    case WEFT__FRAME_QUERIED:
        weft__wbuf_u32(w, (uint32_t)m->size);
        weft__wbuf_u32(w, m->count);
        wbuf_raw(w, m->data, m->len);
        break;
    case WEFT__FRAME_SET:
        weft__wbuf_str(w, m->text);
        weft__wbuf_bytes(w, m->data, m->len);
        break;
    case WEFT__FRAME_VALUE:
        wbuf_raw(w, m->data, m->len);
        break;
    case WEFT__FRAME_BARRIER:
        weft__wbuf_str(w, m->text);
        weft__wbuf_u32(w, m->count);
        break;
    case WEFT__FRAME_HELLO:
    case WEFT__FRAME_OK:
    case WEFT__FRAME_GET:
        weft__wbuf_str(w, m->text);
        break;
    default:
        break;
    }
    if (w->failed)
        return weft__error(WEFT_ERR_NO_MEMORY, "cannot build a rendezvous %s frame",
                           type_name(m->type));
    payload = w->len - start - WEFT__FRAME_HEADER;
    if (payload > WEFT__FRAME_MAX) {
        w->len = start;
        return weft__error(WEFT_ERR_INVALID_ARG, "rendezvous %s frame of %zu bytes exceeds the "
                           "limit of %u", type_name(m->type), payload, WEFT__FRAME_MAX);
    }
    weft__frame_header(w->data + start, m->type, (uint32_t)payload);
    return WEFT_SUCCESS;
}

void weft__format_missing(const unsigned char *present, int size, char *buf, size_t cap)
{
    size_t o = 0;
    int n = 0;

    if (cap == 0)
        return;
    buf[0] = '\0';
    for (int r = 0; r < size; r++) {
        int e = r, k;

        if (present[r])
            continue;
        while (e + 1 < size && !present[e + 1])
            e++;
        /* Room for this entry and a final ", ..." (at most 32 bytes). */
        if (o + 32 >= cap) {
            snprintf(buf + o, cap - o, "%s...", n ? ", " : "");
            return;
        }
        k = e > r ? snprintf(buf + o, cap - o, "%s%d-%d", n ? ", " : "", r, e)
                  : snprintf(buf + o, cap - o, "%s%d", n ? ", " : "", r);
        o += (size_t)k;
        n++;
        r = e;
    }
}

/* ------------------------------------------------------------ socket I/O */

/* Waits until fd is ready for events or the deadline passes. */
static weft_result_t wait_fd(int fd, short events, int64_t deadline_ms)
{
    struct pollfd pfd = { .fd = fd, .events = events };
    int timeout = -1;

    if (deadline_ms >= 0) {
        int64_t left = deadline_ms - weft__frame_clock_ms();

        if (left <= 0)
            return WEFT_ERR_TIMEOUT;
        timeout = left > 1000 ? 1000 : (int)left;
    }
    if (poll(&pfd, 1, timeout) < 0 && errno != EINTR)
        return weft__error(WEFT_ERR_SYSTEM, "poll: %m");
    return WEFT_SUCCESS;
}

static weft_result_t io_all(int fd, void *buf, size_t len, int writing, int64_t deadline_ms)
{
    size_t done = 0;

    while (done < len) {
        ssize_t n = writing ? send(fd, (char *)buf + done, len - done,
                                   MSG_NOSIGNAL | MSG_DONTWAIT)
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

weft_result_t weft__frame_send(int fd, const void *buf, size_t len, int64_t deadline_ms)
{
    return io_all(fd, (void *)buf, len, 1, deadline_ms);
}

weft_result_t weft__frame_recv(int fd, size_t max, weft__msg_t *m, unsigned char **payload,
                               int64_t deadline_ms)
{
    unsigned char hdr[WEFT__FRAME_HEADER], *buf;
    uint32_t type, n;
    weft_result_t rc = io_all(fd, hdr, sizeof(hdr), 0, deadline_ms);

    *payload = NULL;
    if (rc == WEFT_SUCCESS)
        rc = weft__frame_parse_header(hdr, max, &type, &n);
    if (rc != WEFT_SUCCESS)
        return rc;
    buf = malloc(n ? n : 1);
    if (!buf)
        return weft__error(WEFT_ERR_NO_MEMORY, "cannot allocate a %u-byte frame", n);
    /* The answer is arriving: giving up halfway would leave the stream
     * out of step, so the rest gets a little time past the deadline. */
    if (deadline_ms >= 0 && deadline_ms < weft__frame_clock_ms() + WEFT__FRAME_TAIL_MS)
        deadline_ms = weft__frame_clock_ms() + WEFT__FRAME_TAIL_MS;
    rc = io_all(fd, buf, n, 0, deadline_ms);
    if (rc == WEFT_SUCCESS)
        rc = weft__msg_decode(type, buf, n, m);
    if (rc != WEFT_SUCCESS) {
        free(buf);
        return rc;
    }
    *payload = buf;
    return WEFT_SUCCESS;
}
