/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * fuzz_frame.c: the rendezvous store's wire format (core/boot/frame.h).
 *
 * The input is read three ways:
 *   - as a stream of whole frames (weft__frame_decode), as the store and
 *     its clients see them;
 *   - as the payload of a frame whose type is the first byte
 *     (weft__msg_decode), so that every type is reached without a valid
 *     header;
 *   - as the fields of a frame to send (weft__msg_encode).
 * Properties: a decoder reads only the bytes it was given (ASan); a frame
 * that decodes has fields within the limits frame.h documents, and
 * encodes back to exactly its own bytes; a frame weft encodes, weft
 * decodes to the same fields; a refusal is the documented result with a
 * message.
 */
#include "config.h"

#include <arpa/inet.h>
#include <string.h>

#include "core/base/error.h"
#include "core/boot/frame.h"
#include "tests/fuzz/fuzz.h"

/* The longest text each type may carry, with its NUL (0: none). */
static size_t text_cap(uint32_t type)
{
    switch (type) {
    case WEFT__FRAME_HELLO:
    case WEFT__FRAME_JOIN: return WEFT__FRAME_HOST_MAX;
    case WEFT__FRAME_OK:
    case WEFT__FRAME_JOINED: return WEFT__JOB_ID_MAX;
    case WEFT__FRAME_ERROR: return WEFT__FRAME_TEXT_MAX;
    case WEFT__FRAME_SET:
    case WEFT__FRAME_GET:
    case WEFT__FRAME_BARRIER: return WEFT__STORE_KEY_MAX;
    default: return 0;
    }
}

static void require_refusal(weft_result_t rc, weft_result_t expected, const char *what)
{
    FUZZ_REQUIRE(rc == expected, "%s: result %d, expected %d", what, rc, expected);
    FUZZ_REQUIRE(weft__get_error()[0] != '\0', "%s refused without a message", what);
}

/* m decoded from the len bytes at payload: its fields keep frame.h's
 * limits and point into the payload. */
static void check_fields(const weft__msg_t *m, const unsigned char *payload, size_t len)
{
    size_t cap = text_cap(m->type), tl = strnlen(m->text, sizeof(m->text));

    FUZZ_REQUIRE(tl < sizeof(m->text), "type %u: text not NUL-terminated", m->type);
    FUZZ_REQUIRE(cap ? tl < cap : tl == 0, "type %u: text of %zu bytes", m->type, tl);
    if (m->data) {
        FUZZ_REQUIRE(m->data >= payload && m->len <= len &&
                     (size_t)(m->data - payload) <= len - m->len,
                     "type %u: data outside the payload", m->type);
    } else {
        FUZZ_REQUIRE(m->len == 0, "type %u: %zu bytes of no data", m->type, m->len);
    }
    switch (m->type) {
    case WEFT__FRAME_ERROR:
        FUZZ_REQUIRE(m->code >= 1 && m->code <= INT32_MAX, "error code %u", m->code);
        break;
    case WEFT__FRAME_JOIN:
        FUZZ_REQUIRE(m->size >= 1 && m->size <= WEFT__FRAME_MAX_RANKS && m->rank >= 0 &&
                     m->rank < m->size, "join of rank %d of %d", m->rank, m->size);
        FUZZ_REQUIRE(m->len <= WEFT__STORE_VALUE_MAX, "join record of %zu bytes", m->len);
        break;
    case WEFT__FRAME_JOINED: {
        /* size length-prefixed records, each within its limit, filling
         * data exactly: what a client walks without checking again. */
        weft__rbuf_t r;
        const void *p;

        FUZZ_REQUIRE(m->size >= 1 && m->size <= WEFT__FRAME_MAX_RANKS, "joined size %d",
                     m->size);
        weft__rbuf_init(&r, m->data, m->len);
        for (int i = 0; i < m->size; i++)
            weft__rbuf_bytes(&r, &p, WEFT__STORE_VALUE_MAX);
        FUZZ_REQUIRE(!r.failed && r.p == r.end, "joined records do not walk");
        break;
    }
    case WEFT__FRAME_QUERIED:
        FUZZ_REQUIRE(m->size >= 0 && m->size <= WEFT__FRAME_MAX_RANKS &&
                     m->count <= (uint32_t)m->size && m->len == (size_t)m->count * 4,
                     "queried %u of %d in %zu bytes", m->count, m->size, m->len);
        for (uint32_t i = 0; i < m->count; i++) {
            uint32_t be, rank;

            memcpy(&be, m->data + 4 * i, 4);
            rank = ntohl(be);
            FUZZ_REQUIRE(rank < (uint32_t)m->size, "queried rank %u of %d", rank, m->size);
        }
        break;
    case WEFT__FRAME_SET:
    case WEFT__FRAME_VALUE:
        FUZZ_REQUIRE(m->len <= WEFT__STORE_VALUE_MAX, "value of %zu bytes", m->len);
        break;
    case WEFT__FRAME_BARRIER:
        FUZZ_REQUIRE(m->count >= 1 && m->count <= WEFT__FRAME_MAX_RANKS, "barrier of %u",
                     m->count);
        break;
    default:
        break;
    }
}

static int same_fields(const weft__msg_t *a, const weft__msg_t *b)
{
    return a->type == b->type && a->code == b->code && a->rank == b->rank &&
           a->size == b->size && a->pid == b->pid && a->count == b->count &&
           !strcmp(a->text, b->text) && a->len == b->len &&
           (a->len == 0 || !memcmp(a->data, b->data, a->len));
}

/* A frame that decoded encodes back to its own bytes (header and payload),
 * and those decode to the same fields. */
static void check_round_trip(const weft__msg_t *m, const unsigned char *hdr_or_null,
                             const unsigned char *payload, size_t len)
{
    weft__wbuf_t w = { 0 };
    weft__msg_t again;
    size_t used = 0;
    weft_result_t rc = weft__msg_encode(m, &w);

    FUZZ_REQUIRE(rc == WEFT_SUCCESS, "type %u decoded but does not encode: %s", m->type,
                 weft__get_error());
    FUZZ_REQUIRE(w.len == WEFT__FRAME_HEADER + len, "type %u: %zu payload bytes encode to %zu",
                 m->type, len, w.len - WEFT__FRAME_HEADER);
    if (hdr_or_null)
        FUZZ_REQUIRE(!memcmp(w.data, hdr_or_null, WEFT__FRAME_HEADER), "type %u: header differs",
                     m->type);
    FUZZ_REQUIRE(!memcmp(w.data + WEFT__FRAME_HEADER, payload, len),
                 "type %u: payload encodes differently", m->type);
    rc = weft__frame_decode(w.data, w.len, WEFT__FRAME_MAX, &again, &used);
    FUZZ_REQUIRE(rc == WEFT_SUCCESS && used == w.len, "type %u: own encoding does not decode: %s",
                 m->type, weft__get_error());
    FUZZ_REQUIRE(same_fields(m, &again), "type %u: fields change over a round trip", m->type);
    weft__wbuf_free(&w);
}

static void stream_of_frames(const uint8_t *data, size_t size)
{
    while (size > 0) {
        weft__msg_t m;
        size_t used = 0;
        uint32_t type, n;
        weft_result_t rc = weft__frame_decode(data, size, WEFT__FRAME_MAX, &m, &used);

        if (rc == WEFT_ERR_TRUNCATED) {
            /* Only when the header or the payload it announces is cut. */
            FUZZ_REQUIRE(size < WEFT__FRAME_HEADER ||
                         (weft__frame_parse_header(data, WEFT__FRAME_MAX, &type, &n) ==
                              WEFT_SUCCESS && size - WEFT__FRAME_HEADER < n),
                         "%zu whole bytes called truncated", size);
            return;
        }
        if (rc != WEFT_SUCCESS) {
            require_refusal(rc, WEFT_ERR_BOOTSTRAP, "a malformed frame");
            return;
        }
        FUZZ_REQUIRE(used >= WEFT__FRAME_HEADER && used <= size, "used %zu of %zu", used, size);
        check_fields(&m, data + WEFT__FRAME_HEADER, used - WEFT__FRAME_HEADER);
        check_round_trip(&m, data, data + WEFT__FRAME_HEADER, used - WEFT__FRAME_HEADER);
        data += used;
        size -= used;
    }
}

static void one_payload(const uint8_t *data, size_t size)
{
    weft__msg_t m;
    uint32_t type;
    weft_result_t rc;

    if (size < 1)
        return;
    type = data[0] % 16u; /* the 13 types and a few unknown ones */
    rc = weft__msg_decode(type, data + 1, size - 1, &m);
    if (rc != WEFT_SUCCESS) {
        require_refusal(rc, WEFT_ERR_BOOTSTRAP, "a malformed payload");
        return;
    }
    FUZZ_REQUIRE(m.type == type, "decoded type %u from %u", m.type, type);
    check_fields(&m, data + 1, size - 1);
    check_round_trip(&m, NULL, data + 1, size - 1);
}

/* Reads a u32 of the input, 0 past its end. */
static uint32_t take_u32(const uint8_t **p, const uint8_t *end)
{
    uint32_t v = 0;

    for (int i = 0; i < 4 && *p < end; i++)
        v = v << 8 | *(*p)++;
    return v;
}

/* The fields of a frame to send: type, code, rank, size, pid, count, a
 * text length, then the text and the data. Joined and queried frames
 * are built by the store from checked parts (frame.h), so only the other
 * types take arbitrary data here. */
static void encode_fields(const uint8_t *data, size_t size)
{
    const uint8_t *p = data, *end = data + size;
    weft__msg_t m, back;
    weft__wbuf_t w = { 0 };
    size_t tl, used = 0;
    weft_result_t rc;

    memset(&m, 0, sizeof(m));
    m.type = take_u32(&p, end) % 16u;
    if (m.type == WEFT__FRAME_JOINED || m.type == WEFT__FRAME_QUERIED)
        return;
    m.code = take_u32(&p, end);
    m.rank = (int)take_u32(&p, end);
    m.size = (int)take_u32(&p, end);
    m.pid = take_u32(&p, end);
    m.count = take_u32(&p, end);
    tl = take_u32(&p, end) % sizeof(m.text);
    if (tl > (size_t)(end - p))
        tl = (size_t)(end - p);
    memcpy(m.text, p, tl);
    m.text[tl] = '\0';
    p += tl;
    m.data = p;
    m.len = (size_t)(end - p);
    if (m.len == 0)
        m.data = NULL;

    weft__wbuf_u32(&w, 0x5a5a5a5a); /* something already in the buffer */
    rc = weft__msg_encode(&m, &w);
    if (rc != WEFT_SUCCESS) {
        require_refusal(rc, WEFT_ERR_INVALID_ARG, "a frame to send");
        FUZZ_REQUIRE(w.len == 4, "a refused frame left %zu bytes behind", w.len - 4);
        weft__wbuf_free(&w);
        return;
    }
    rc = weft__frame_decode(w.data + 4, w.len - 4, WEFT__FRAME_MAX, &back, &used);
    FUZZ_REQUIRE(rc == WEFT_SUCCESS, "type %u encoded, but its decoder refuses it: %s", m.type,
                 weft__get_error());
    FUZZ_REQUIRE(used == w.len - 4, "type %u: %zu of %zu bytes decoded", m.type, used,
                 w.len - 4);
    /* Fields a type does not carry come back zero. */
    FUZZ_REQUIRE(back.type == m.type, "type %u came back as %u", m.type, back.type);
    if (text_cap(m.type))
        FUZZ_REQUIRE(!strcmp(back.text, m.text), "type %u: text changed", m.type);
    if (m.type == WEFT__FRAME_ERROR)
        FUZZ_REQUIRE(back.code == m.code, "error code %u came back as %u", m.code, back.code);
    if (m.type == WEFT__FRAME_JOIN)
        FUZZ_REQUIRE(back.rank == m.rank && back.size == m.size && back.pid == m.pid,
                     "join fields changed");
    if (m.type == WEFT__FRAME_BARRIER)
        FUZZ_REQUIRE(back.count == m.count, "barrier count changed");
    if (m.type == WEFT__FRAME_JOIN || m.type == WEFT__FRAME_SET || m.type == WEFT__FRAME_VALUE)
        FUZZ_REQUIRE(back.len == m.len && (m.len == 0 || !memcmp(back.data, m.data, m.len)),
                     "type %u: data changed", m.type);
    weft__wbuf_free(&w);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    stream_of_frames(data, size);
    one_payload(data, size);
    encode_fields(data, size);
    return 0;
}
