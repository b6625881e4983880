/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * frame.h: the wire format of the rendezvous store.
 *
 * A frame is a 12-byte header and a payload:
 *
 *     u32 magic "WEFT" | u16 version | u16 type | u32 payload length
 *
 * all in network byte order. Payload fields are u32 numbers, and strings
 * and byte strings as a u32 length followed by the bytes (strings carry no
 * NUL). Every length is checked against a hard limit before anything is
 * allocated, and decoding is a pure function over a byte buffer
 * (weft__frame_decode, weft__msg_decode), so a malformed or hostile frame
 * is an error, never a crash; a fuzzer can be pointed at either.
 *
 * Requests and their replies (one request at a time per connection):
 *     HELLO token                  -> OK job id | ERROR
 *     JOIN rank size pid host blob -> JOINED (once all joined) | ERROR
 *     QUERY                        -> QUERIED size count rank...
 *     SET key value                -> OK
 *     GET key                      -> VALUE (once the key exists)
 *     BARRIER name n               -> OK (once n arrived)
 *     CANCEL                       -> CANCELLED: a pending GET or BARRIER
 *                                     is withdrawn (its own reply may
 *                                     come first)
 * Any request can also be answered with ERROR (u32 result, text).
 */
#ifndef WEFT_CORE_FRAME_H
#define WEFT_CORE_FRAME_H

#include <stddef.h>
#include <stdint.h>

#include "weft.h"
#include "core/boot/store.h"

#define WEFT__FRAME_MAGIC 0x57454654u /* "WEFT" */
#define WEFT__FRAME_VERSION 1u
#define WEFT__FRAME_HEADER 12
/* Largest frame of all: a join reply carries every rank's record. */
#define WEFT__FRAME_MAX (64u << 20)
/* Largest frame a client may send: one value and its key, with room for
 * the other fields of a join. */
#define WEFT__FRAME_REQUEST_MAX (WEFT__STORE_VALUE_MAX + 4096u)
/* Largest frame before authentication: a hello. */
#define WEFT__FRAME_HELLO_MAX 4096u
#define WEFT__FRAME_MAX_RANKS WEFT__STORE_MAX_RANKS
#define WEFT__FRAME_TEXT_MAX 512 /* the longest string field, with its NUL */
#define WEFT__FRAME_HOST_MAX 256 /* a host name or token, with its NUL */
#define WEFT__FRAME_TAIL_MS 5000 /* see weft__frame_recv */

enum weft__frame_type {
    WEFT__FRAME_HELLO = 1,
    WEFT__FRAME_OK = 2,
    WEFT__FRAME_ERROR = 3,
    WEFT__FRAME_JOIN = 4,
    WEFT__FRAME_JOINED = 5,
    WEFT__FRAME_QUERY = 6,
    WEFT__FRAME_QUERIED = 7,
    WEFT__FRAME_SET = 8,
    WEFT__FRAME_GET = 9,
    WEFT__FRAME_VALUE = 10,
    WEFT__FRAME_BARRIER = 11,
    WEFT__FRAME_CANCEL = 12,
    WEFT__FRAME_CANCELLED = 13
};

/* One frame, decoded. Which fields mean something depends on type; data
 * points into the payload it was decoded from. */
typedef struct weft__msg {
    uint32_t type;
    uint32_t code;       /* ERROR: the weft_result_t, never WEFT_SUCCESS */
    int rank;            /* JOIN */
    int size;            /* JOIN, JOINED, QUERIED */
    uint32_t pid;        /* JOIN */
    uint32_t count;      /* BARRIER: ranks to wait for; QUERIED: ranks listed */
    /* HELLO token, OK job id, ERROR text, JOIN host, SET/GET key, BARRIER
     * name; always NUL-terminated ("" when the type has none). */
    char text[WEFT__FRAME_TEXT_MAX];
    /* JOIN blob, SET/VALUE value, JOINED records (size length-prefixed
     * byte strings, already checked), QUERIED ranks (count u32, each
     * below size, already checked). */
    const unsigned char *data;
    size_t len;
} weft__msg_t;

/* A growable output buffer and a bounds-checked input cursor. Once failed,
 * they stay failed and every later call is a no-op. */
typedef struct weft__wbuf {
    unsigned char *data;
    size_t len, cap;
    int failed;          /* an allocation failed or a field was too long */
} weft__wbuf_t;

typedef struct weft__rbuf {
    const unsigned char *p, *end;
    int failed;          /* read past the end or a field over its limit */
} weft__rbuf_t;

void weft__wbuf_u32(weft__wbuf_t *w, uint32_t v);
void weft__wbuf_bytes(weft__wbuf_t *w, const void *p, size_t n); /* u32 length + bytes */
void weft__wbuf_str(weft__wbuf_t *w, const char *s);
void weft__wbuf_free(weft__wbuf_t *w);

void weft__rbuf_init(weft__rbuf_t *r, const void *p, size_t len);
uint32_t weft__rbuf_u32(weft__rbuf_t *r);
/* Points *p at a length-prefixed field of at most max bytes. */
size_t weft__rbuf_bytes(weft__rbuf_t *r, const void **p, size_t max);
/* Copies a length-prefixed string into buf (NUL-terminated, at most cap-1
 * bytes, no NUL inside); fails (and leaves "") when it does not fit. */
void weft__rbuf_str(weft__rbuf_t *r, char *buf, size_t cap);

/* Encodes a header for a payload of len bytes of type. */
void weft__frame_header(unsigned char hdr[WEFT__FRAME_HEADER], uint32_t type, uint32_t len);
/* Decodes and checks a header: WEFT_ERR_BOOTSTRAP for a bad magic or
 * version, or a payload over max bytes (and over WEFT__FRAME_MAX). */
weft_result_t weft__frame_parse_header(const unsigned char hdr[WEFT__FRAME_HEADER], size_t max,
                                       uint32_t *type, uint32_t *len);

/* Checks and decodes the payload of a frame of type into *m:
 * WEFT_ERR_BOOTSTRAP naming what is wrong (unknown type, a field over its
 * limit, a count above WEFT__FRAME_MAX_RANKS, bytes missing or left over). */
weft_result_t weft__msg_decode(uint32_t type, const unsigned char *payload, size_t len,
                               weft__msg_t *m);
/* A whole frame at the start of buf: on success *used is its length.
 * WEFT_ERR_TRUNCATED when buf holds only part of it (read more), other
 * errors as weft__frame_parse_header and weft__msg_decode. */
weft_result_t weft__frame_decode(const unsigned char *buf, size_t len, size_t max,
                                 weft__msg_t *m, size_t *used);
/* Appends m as a whole frame (header and payload) to w. For JOINED, m->data
 * holds the records as weft__wbuf_bytes wrote them. WEFT_ERR_INVALID_ARG
 * for a field over its limit (w unchanged), WEFT_ERR_NO_MEMORY. */
weft_result_t weft__msg_encode(const weft__msg_t *m, weft__wbuf_t *w);

/* Blocking whole-frame I/O on a (nonblocking or blocking) socket, with a
 * deadline in monotonic ms (-1: none). send writes len bytes as they are
 * (a frame weft__msg_encode built); recv reads one frame of at most max
 * payload bytes, decodes it into *m and hands over *payload, which m->data
 * points into (free it; NULL after a failure). Once a header arrived, the
 * payload gets WEFT__FRAME_TAIL_MS past the deadline if it needs them, so
 * that a timeout leaves the stream at a frame boundary. WEFT_ERR_TIMEOUT,
 * WEFT_ERR_PEER_LOST on EOF or a reset, WEFT_ERR_BOOTSTRAP on a bad frame. */
weft_result_t weft__frame_send(int fd, const void *buf, size_t len, int64_t deadline_ms);
weft_result_t weft__frame_recv(int fd, size_t max, weft__msg_t *m, unsigned char **payload,
                               int64_t deadline_ms);

/* For messages: the ranks r < size with !present[r], as "2, 5, 7-9" (", ..."
 * at the end when they do not all fit in cap). */
void weft__format_missing(const unsigned char *present, int size, char *buf, size_t cap);

/* The clock of those deadlines: CLOCK_MONOTONIC in ms. */
int64_t weft__frame_clock_ms(void);

#endif /* WEFT_CORE_FRAME_H */
