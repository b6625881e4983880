/*
 * frame.h: the wire format of the rendezvous store.
 *
 * A frame is a 12-byte header (magic, type, payload length; network byte
 * order) and a payload. Lengths are checked against hard limits before any
 * allocation, and payloads are parsed with bounds-checked cursors, so a
 * malformed or hostile frame is an error, never a crash.
 */
#ifndef WEFT_CORE_FRAME_H
#define WEFT_CORE_FRAME_H

#include <stddef.h>
#include <stdint.h>

#include "weft.h"

#define WEFT__FRAME_MAGIC 0x57465431u /* "WFT1" */
#define WEFT__FRAME_HEADER 12
/* Largest payload: a join reply carries every rank's record. */
#define WEFT__FRAME_MAX (64u << 20)
#define WEFT__FRAME_MAX_RANKS (1 << 20)

enum weft__frame_type {
    WEFT__FRAME_HELLO = 1,   /* token */
    WEFT__FRAME_OK = 2,      /* job id (reply to HELLO), or empty */
    WEFT__FRAME_ERROR = 3,   /* u32 result code, text */
    WEFT__FRAME_JOIN = 4,    /* rank, size, pid, host, blob */
    WEFT__FRAME_JOINED = 5,  /* size, then size x (len, bytes) */
    WEFT__FRAME_QUERY = 6,   /* empty; reply: QUERIED */
    WEFT__FRAME_QUERIED = 7, /* size, count, count x rank */
    WEFT__FRAME_SET = 8,     /* key, value */
    WEFT__FRAME_GET = 9,     /* key; reply: VALUE when it exists */
    WEFT__FRAME_VALUE = 10,  /* value */
    WEFT__FRAME_BARRIER = 11 /* name, n; reply: OK when n arrived */
};

/* A growable output buffer and a bounds-checked input cursor. */
typedef struct weft__wbuf {
    unsigned char *data;
    size_t len, cap;
    int failed;              /* an allocation failed */
} weft__wbuf_t;

typedef struct weft__rbuf {
    const unsigned char *p, *end;
    int failed;              /* read past the end or a bad field */
} weft__rbuf_t;

void weft__wbuf_u32(weft__wbuf_t *w, uint32_t v);
void weft__wbuf_bytes(weft__wbuf_t *w, const void *p, size_t n); /* u32 length + bytes */
void weft__wbuf_str(weft__wbuf_t *w, const char *s);
void weft__wbuf_free(weft__wbuf_t *w);

uint32_t weft__rbuf_u32(weft__rbuf_t *r);
/* Points *p at a length-prefixed field of at most max bytes. */
size_t weft__rbuf_bytes(weft__rbuf_t *r, const void **p, size_t max);
/* Copies a length-prefixed string into buf (NUL-terminated, at most cap-1). */
void weft__rbuf_str(weft__rbuf_t *r, char *buf, size_t cap);

/* Encodes a header for a payload of len bytes of type. */
void weft__frame_header(unsigned char hdr[WEFT__FRAME_HEADER], uint32_t type, uint32_t len);
/* Decodes and validates a header: WEFT_ERR_BOOTSTRAP for a bad magic or a
 * payload over WEFT__FRAME_MAX. */
weft_result_t weft__frame_parse_header(const unsigned char hdr[WEFT__FRAME_HEADER],
                                       uint32_t *type, uint32_t *len);

/* Blocking whole-frame I/O with a deadline (monotonic ms, -1: none).
 * recv allocates *payload (free it); WEFT_ERR_TIMEOUT, WEFT_ERR_PEER_LOST
 * on EOF, WEFT_ERR_BOOTSTRAP on a bad frame. */
weft_result_t weft__frame_send(int fd, uint32_t type, const void *payload, size_t len,
                               int64_t deadline_ms);
weft_result_t weft__frame_recv(int fd, uint32_t *type, unsigned char **payload, size_t *len,
                               int64_t deadline_ms);

#endif /* WEFT_CORE_FRAME_H */
