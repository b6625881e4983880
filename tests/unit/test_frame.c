/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_frame.c: the rendezvous wire format: round trips of every frame
 * type, and hostile or broken input rejected by the limits instead of
 * crashing or allocating.
 */
#include "config.h"

#include <arpa/inet.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "core/boot/frame.h"

static void test_buffer_round_trip(void **state)
{
    weft__wbuf_t w = { 0 };
    weft__rbuf_t r;
    const void *p;
    char s[16];

    (void)state;
    weft__wbuf_u32(&w, 0xdeadbeef);
    weft__wbuf_str(&w, "hello");
    weft__wbuf_bytes(&w, "\0\1\2", 3);
    assert_false(w.failed);
    weft__rbuf_init(&r, w.data, w.len);
    assert_int_equal(weft__rbuf_u32(&r), 0xdeadbeef);
    weft__rbuf_str(&r, s, sizeof(s));
    assert_string_equal(s, "hello");
    assert_int_equal(weft__rbuf_bytes(&r, &p, 16), 3);
    assert_memory_equal(p, "\0\1\2", 3);
    assert_false(r.failed);
    /* Reading past the end fails and stays failed. */
    weft__rbuf_u32(&r);
    assert_true(r.failed);
    weft__wbuf_free(&w);
}

static void test_field_limits(void **state)
{
    weft__wbuf_t w = { 0 };
    weft__rbuf_t r;
    const void *p;
    char small[4];

    (void)state;
    weft__wbuf_str(&w, "longer than four");
    weft__rbuf_init(&r, w.data, w.len);
    weft__rbuf_str(&r, small, sizeof(small));
    assert_true(r.failed);
    assert_string_equal(small, "");
    /* A length prefix that claims more than the buffer holds. */
    weft__rbuf_init(&r, w.data, 8);
    assert_int_equal(weft__rbuf_bytes(&r, &p, 1u << 20), 0);
    assert_true(r.failed);
    assert_null(p);
    weft__wbuf_free(&w);
    /* A NUL inside a string. */
    weft__wbuf_bytes(&w, "a\0b", 3);
    weft__rbuf_init(&r, w.data, w.len);
    weft__rbuf_str(&r, small, sizeof(small));
    assert_true(r.failed);
    weft__wbuf_free(&w);
}

static void test_header_checks(void **state)
{
    unsigned char hdr[WEFT__FRAME_HEADER];
    uint32_t type, len, magic = htonl(0x47455420); /* "GET ": somebody's HTTP client */

    (void)state;
    weft__frame_header(hdr, WEFT__FRAME_JOIN, 1234);
    assert_int_equal(weft__frame_parse_header(hdr, WEFT__FRAME_MAX, &type, &len), WEFT_SUCCESS);
    assert_int_equal(type, WEFT__FRAME_JOIN);
    assert_int_equal(len, 1234);
    /* Over the caller's limit, and over the absolute one whatever the
     * caller says. */
    assert_int_equal(weft__frame_parse_header(hdr, 1000, &type, &len), WEFT_ERR_BOOTSTRAP);
    assert_non_null(strstr(weft_last_error(), "exceeds"));
    weft__frame_header(hdr, WEFT__FRAME_JOIN, WEFT__FRAME_MAX + 1);
    assert_int_equal(weft__frame_parse_header(hdr, SIZE_MAX, &type, &len), WEFT_ERR_BOOTSTRAP);
    weft__frame_header(hdr, WEFT__FRAME_JOIN, 0xffffffffu);
    assert_int_equal(weft__frame_parse_header(hdr, SIZE_MAX, &type, &len), WEFT_ERR_BOOTSTRAP);
    memcpy(hdr, &magic, 4);
    assert_int_equal(weft__frame_parse_header(hdr, WEFT__FRAME_MAX, &type, &len),
                     WEFT_ERR_BOOTSTRAP);
    assert_non_null(strstr(weft_last_error(), "magic"));
    /* Another protocol version. */
    weft__frame_header(hdr, WEFT__FRAME_JOIN, 10);
    hdr[5] = WEFT__FRAME_VERSION + 1;
    assert_int_equal(weft__frame_parse_header(hdr, WEFT__FRAME_MAX, &type, &len),
                     WEFT_ERR_BOOTSTRAP);
    assert_non_null(strstr(weft_last_error(), "version"));
}

/* Encodes m, decodes the result, and checks it is one whole frame. */
static void round_trip(const weft__msg_t *m, weft__msg_t *out, weft__wbuf_t *w)
{
    size_t used = 0;

    memset(w, 0, sizeof(*w));
    assert_int_equal(weft__msg_encode(m, w), WEFT_SUCCESS);
    assert_int_equal(weft__frame_decode(w->data, w->len, WEFT__FRAME_MAX, out, &used),
                     WEFT_SUCCESS);
    assert_int_equal(used, w->len);
    assert_int_equal(out->type, m->type);
    assert_string_equal(out->text, m->text);
}

static void test_message_round_trips(void **state)
{
    weft__msg_t m, d;
    weft__wbuf_t w, recs = { 0 };
    uint32_t ranks[3] = { htonl(0), htonl(2), htonl(5) };
    weft__rbuf_t r;
    const void *p;

    (void)state;
    m = (weft__msg_t){ .type = WEFT__FRAME_HELLO };
    strcpy(m.text, "token");
    round_trip(&m, &d, &w);
    weft__wbuf_free(&w);

    m = (weft__msg_t){ .type = WEFT__FRAME_ERROR, .code = WEFT_ERR_TIMEOUT };
    strcpy(m.text, "a message");
    round_trip(&m, &d, &w);
    assert_int_equal(d.code, WEFT_ERR_TIMEOUT);
    weft__wbuf_free(&w);

    m = (weft__msg_t){ .type = WEFT__FRAME_JOIN, .rank = 3, .size = 7, .pid = 4242,
                       .data = (const unsigned char *)"blob", .len = 4 };
    strcpy(m.text, "node07");
    round_trip(&m, &d, &w);
    assert_int_equal(d.rank, 3);
    assert_int_equal(d.size, 7);
    assert_int_equal(d.pid, 4242);
    assert_int_equal(d.len, 4);
    assert_memory_equal(d.data, "blob", 4);
    weft__wbuf_free(&w);

    weft__wbuf_bytes(&recs, "zero", 4);
    weft__wbuf_bytes(&recs, "", 0);
    weft__wbuf_bytes(&recs, "two!!", 5);
    m = (weft__msg_t){ .type = WEFT__FRAME_JOINED, .size = 3, .data = recs.data,
                       .len = recs.len };
    strcpy(m.text, "job-1");
    round_trip(&m, &d, &w);
    assert_int_equal(d.size, 3);
    weft__rbuf_init(&r, d.data, d.len);
    assert_int_equal(weft__rbuf_bytes(&r, &p, 100), 4);
    assert_int_equal(weft__rbuf_bytes(&r, &p, 100), 0);
    assert_int_equal(weft__rbuf_bytes(&r, &p, 100), 5);
    assert_memory_equal(p, "two!!", 5);
    weft__wbuf_free(&w);

    m = (weft__msg_t){ .type = WEFT__FRAME_QUERIED, .size = 6, .count = 3,
                       .data = (const unsigned char *)ranks, .len = sizeof(ranks) };
    round_trip(&m, &d, &w);
    assert_int_equal(d.count, 3);
    assert_memory_equal(d.data, ranks, sizeof(ranks));
    weft__wbuf_free(&w);

    m = (weft__msg_t){ .type = WEFT__FRAME_SET, .data = (const unsigned char *)"v", .len = 1 };
    strcpy(m.text, "key");
    round_trip(&m, &d, &w);
    assert_int_equal(d.len, 1);
    weft__wbuf_free(&w);

    m = (weft__msg_t){ .type = WEFT__FRAME_VALUE, .data = (const unsigned char *)"val",
                       .len = 3 };
    round_trip(&m, &d, &w);
    assert_memory_equal(d.data, "val", 3);
    weft__wbuf_free(&w);

    m = (weft__msg_t){ .type = WEFT__FRAME_BARRIER, .count = 9 };
    strcpy(m.text, "b");
    round_trip(&m, &d, &w);
    assert_int_equal(d.count, 9);
    weft__wbuf_free(&w);

    for (uint32_t t = WEFT__FRAME_QUERY; t <= WEFT__FRAME_CANCELLED; t++) {
        if (t != WEFT__FRAME_QUERY && t != WEFT__FRAME_CANCEL && t != WEFT__FRAME_CANCELLED)
            continue;
        m = (weft__msg_t){ .type = t };
        round_trip(&m, &d, &w);
        assert_int_equal(w.len, WEFT__FRAME_HEADER);
        weft__wbuf_free(&w);
    }
    weft__wbuf_free(&recs);
}

/* A payload built by hand: a sequence of u32 and raw pieces. */
static weft_result_t decode_raw(uint32_t type, const weft__wbuf_t *w)
{
    weft__msg_t m;

    return weft__msg_decode(type, w->data, w->len, &m);
}

static void expect_malformed(uint32_t type, weft__wbuf_t *w, const char *needle)
{
    weft_result_t rc = decode_raw(type, w);

    if (rc != WEFT_ERR_BOOTSTRAP || !strstr(weft_last_error(), needle))
        fail_msg("type %u: rc %d '%s', expected a complaint about '%s'", type, rc,
                 weft_last_error(), needle);
    weft__wbuf_free(w);
}

static void test_decode_limits(void **state)
{
    weft__wbuf_t w = { 0 };
    unsigned char buf[64];
    weft__msg_t m;
    size_t used;
    char key[WEFT__STORE_KEY_MAX + 8];

    (void)state;
    /* Truncated frames: more is needed, nothing is wrong yet. */
    weft__frame_header(buf, WEFT__FRAME_GET, 20);
    assert_int_equal(weft__frame_decode(buf, 5, WEFT__FRAME_MAX, &m, &used),
                     WEFT_ERR_TRUNCATED);
    assert_int_equal(weft__frame_decode(buf, WEFT__FRAME_HEADER + 3, WEFT__FRAME_MAX, &m,
                                        &used), WEFT_ERR_TRUNCATED);

    /* Join: rank not below size, size 0, a world too large. */
    weft__wbuf_u32(&w, 4);
    weft__wbuf_u32(&w, 4);
    weft__wbuf_u32(&w, 1);
    weft__wbuf_str(&w, "h");
    weft__wbuf_bytes(&w, "", 0);
    expect_malformed(WEFT__FRAME_JOIN, &w, "not below");
    weft__wbuf_u32(&w, 0);
    weft__wbuf_u32(&w, 0);
    expect_malformed(WEFT__FRAME_JOIN, &w, "world size is out of range");
    weft__wbuf_u32(&w, 0);
    weft__wbuf_u32(&w, WEFT__FRAME_MAX_RANKS + 1);
    expect_malformed(WEFT__FRAME_JOIN, &w, "world size is out of range");
    /* A record announced longer than a value may be. */
    weft__wbuf_u32(&w, 0);
    weft__wbuf_u32(&w, 1);
    weft__wbuf_u32(&w, 1);
    weft__wbuf_str(&w, "h");
    weft__wbuf_u32(&w, WEFT__STORE_VALUE_MAX + 1);
    expect_malformed(WEFT__FRAME_JOIN, &w, "record");

    /* Joined: a count of a million records in a few bytes is refused
     * before anything walks them. */
    weft__wbuf_str(&w, "job");
    weft__wbuf_u32(&w, WEFT__FRAME_MAX_RANKS);
    weft__wbuf_u32(&w, 0);
    expect_malformed(WEFT__FRAME_JOINED, &w, "more records");
    weft__wbuf_str(&w, "job");
    weft__wbuf_u32(&w, 2);
    weft__wbuf_bytes(&w, "a", 1);
    weft__wbuf_u32(&w, 1000);
    expect_malformed(WEFT__FRAME_JOINED, &w, "record");

    /* Queried: more ranks than the size, a rank out of range, a count
     * that does not match the list. */
    weft__wbuf_u32(&w, 2);
    weft__wbuf_u32(&w, 3);
    expect_malformed(WEFT__FRAME_QUERIED, &w, "count is out of range");
    weft__wbuf_u32(&w, 2);
    weft__wbuf_u32(&w, 1);
    weft__wbuf_u32(&w, 2);
    expect_malformed(WEFT__FRAME_QUERIED, &w, "not below");
    weft__wbuf_u32(&w, 4);
    weft__wbuf_u32(&w, 2);
    weft__wbuf_u32(&w, 1);
    expect_malformed(WEFT__FRAME_QUERIED, &w, "does not match");

    /* Set: a key at and over its limit. */
    memset(key, 'k', sizeof(key));
    key[WEFT__STORE_KEY_MAX - 1] = '\0';
    weft__wbuf_str(&w, key);
    weft__wbuf_bytes(&w, "v", 1);
    assert_int_equal(decode_raw(WEFT__FRAME_SET, &w), WEFT_SUCCESS);
    weft__wbuf_free(&w);
    key[WEFT__STORE_KEY_MAX - 1] = 'k';
    key[WEFT__STORE_KEY_MAX] = '\0';
    weft__wbuf_str(&w, key);
    weft__wbuf_bytes(&w, "v", 1);
    expect_malformed(WEFT__FRAME_SET, &w, "key");

    /* Bytes left over, an unknown type, an error without a code, a
     * barrier for nobody. */
    weft__wbuf_str(&w, "key");
    weft__wbuf_u32(&w, 7);
    expect_malformed(WEFT__FRAME_GET, &w, "left over");
    weft__wbuf_u32(&w, 7);
    assert_int_equal(decode_raw(99, &w), WEFT_ERR_BOOTSTRAP);
    assert_non_null(strstr(weft_last_error(), "unknown type 99"));
    weft__wbuf_free(&w);
    weft__wbuf_u32(&w, 0);
    weft__wbuf_str(&w, "no code");
    expect_malformed(WEFT__FRAME_ERROR, &w, "result code");
    weft__wbuf_str(&w, "b");
    weft__wbuf_u32(&w, 0);
    expect_malformed(WEFT__FRAME_BARRIER, &w, "number of ranks");
    /* An empty payload where fields are due. */
    assert_int_equal(weft__msg_decode(WEFT__FRAME_JOIN, NULL, 0, &m), WEFT_ERR_BOOTSTRAP);
}

static void test_encode_limits(void **state)
{
    weft__msg_t m = { .type = WEFT__FRAME_SET, .len = 1, .data = (const unsigned char *)"v" };
    weft__wbuf_t w = { 0 };

    (void)state;
    weft__wbuf_u32(&w, 42);
    memset(m.text, 'k', WEFT__STORE_KEY_MAX);
    m.text[WEFT__STORE_KEY_MAX] = '\0';
    assert_int_equal(weft__msg_encode(&m, &w), WEFT_ERR_INVALID_ARG);
    assert_int_equal(w.len, 4); /* untouched */
    m = (weft__msg_t){ .type = WEFT__FRAME_VALUE, .len = WEFT__STORE_VALUE_MAX + 1 };
    assert_int_equal(weft__msg_encode(&m, &w), WEFT_ERR_INVALID_ARG);
    m = (weft__msg_t){ .type = WEFT__FRAME_JOIN, .rank = 2, .size = 2 };
    assert_int_equal(weft__msg_encode(&m, &w), WEFT_ERR_INVALID_ARG);
    m = (weft__msg_t){ .type = WEFT__FRAME_ERROR, .code = 0 };
    assert_int_equal(weft__msg_encode(&m, &w), WEFT_ERR_INVALID_ARG);
    m = (weft__msg_t){ .type = 77 };
    assert_int_equal(weft__msg_encode(&m, &w), WEFT_ERR_INVALID_ARG);
    assert_int_equal(w.len, 4);
    weft__wbuf_free(&w);
}

/* Valid frames of every type, mutated at random (a fixed seed): the
 * decoder must answer every one with a result, never a crash or a read
 * outside the buffer (run under valgrind or ASan to see the latter). */
static void test_mutations(void **state)
{
    weft__wbuf_t frames[10], recs = { 0 };
    weft__msg_t m = { 0 };
    uint32_t ranks[2] = { htonl(1), htonl(3) };
    unsigned seed = 12345, ok = 0, bad = 0;
    int n = 0;

    (void)state;
    memset(frames, 0, sizeof(frames));
    weft__wbuf_bytes(&recs, "abc", 3);
    weft__wbuf_bytes(&recs, "de", 2);
#define ADD(...)                                                         \
    do {                                                                 \
        m = (weft__msg_t){ __VA_ARGS__ };                                \
        assert_int_equal(weft__msg_encode(&m, &frames[n++]), WEFT_SUCCESS); \
    } while (0)
    ADD(.type = WEFT__FRAME_HELLO, .text = "tok");
    ADD(.type = WEFT__FRAME_ERROR, .code = 9, .text = "why");
    ADD(.type = WEFT__FRAME_JOIN, .rank = 1, .size = 4, .pid = 7, .text = "host",
        .data = (const unsigned char *)"rec", .len = 3);
    ADD(.type = WEFT__FRAME_JOINED, .size = 2, .text = "job", .data = recs.data,
        .len = recs.len);
    ADD(.type = WEFT__FRAME_QUERIED, .size = 4, .count = 2,
        .data = (const unsigned char *)ranks, .len = 8);
    ADD(.type = WEFT__FRAME_SET, .text = "k", .data = (const unsigned char *)"v", .len = 1);
    ADD(.type = WEFT__FRAME_GET, .text = "k");
    ADD(.type = WEFT__FRAME_VALUE, .data = (const unsigned char *)"value", .len = 5);
    ADD(.type = WEFT__FRAME_BARRIER, .text = "b", .count = 3);
    ADD(.type = WEFT__FRAME_QUERY);
#undef ADD
    for (int iter = 0; iter < 40000; iter++) {
        const weft__wbuf_t *f = &frames[iter % n];
        size_t len = f->len, used;
        unsigned char *buf = malloc(len + 8);
        weft_result_t rc;

        assert_non_null(buf);
        memcpy(buf, f->data, len);
        for (int k = 0, flips = 1 + (int)(rand_r(&seed) % 4); k < flips; k++) {
            size_t at = (size_t)rand_r(&seed) % len;

            switch (rand_r(&seed) % 3) {
            case 0: buf[at] ^= (unsigned char)(1u << (rand_r(&seed) % 8)); break;
            case 1: buf[at] = (unsigned char)rand_r(&seed); break;
            default: buf[at] = 0xff; break;
            }
        }
        if (rand_r(&seed) % 4 == 0)
            len = (size_t)rand_r(&seed) % (len + 1);
        /* Exactly len bytes, so that any read past them is caught. */
        {
            unsigned char *exact = malloc(len ? len : 1);

            assert_non_null(exact);
            memcpy(exact, buf, len);
            rc = weft__frame_decode(exact, len, WEFT__FRAME_MAX, &m, &used);
            free(exact);
        }
        if (rc == WEFT_SUCCESS) {
            assert_true(used <= len);
            assert_true(strlen(m.text) < sizeof(m.text));
            ok++;
        } else {
            assert_true(rc == WEFT_ERR_BOOTSTRAP || rc == WEFT_ERR_TRUNCATED);
            bad++;
        }
        free(buf);
    }
    /* Both outcomes happen: the mutations are neither all harmless nor
     * all fatal. */
    assert_true(ok > 100);
    assert_true(bad > 100);
    for (int i = 0; i < n; i++)
        weft__wbuf_free(&frames[i]);
    weft__wbuf_free(&recs);
}

static void test_format_missing(void **state)
{
    unsigned char present[12] = { 1, 1, 0, 1, 1, 0, 1, 0, 0, 0, 1, 0 };
    unsigned char all[3] = { 1, 1, 1 };
    unsigned char none[1000] = { 0 };
    char buf[64];

    (void)state;
    weft__format_missing(present, 12, buf, sizeof(buf));
    assert_string_equal(buf, "2, 5, 7-9, 11");
    weft__format_missing(all, 3, buf, sizeof(buf));
    assert_string_equal(buf, "");
    weft__format_missing(none, 1000, buf, sizeof(buf));
    assert_string_equal(buf, "0-999");
    for (int i = 0; i < 1000; i += 2)
        none[i] = 1;
    weft__format_missing(none, 1000, buf, sizeof(buf));
    assert_true(strlen(buf) < sizeof(buf));
    assert_non_null(strstr(buf, "1, 3, 5"));
    assert_non_null(strstr(buf, "..."));
}

static void test_socket_io(void **state)
{
    enum { BIG = 200000 };
    int sv[2], status;
    unsigned char *payload = NULL, *big = malloc(BIG);
    weft__msg_t m;
    pid_t pid;

    (void)state;
    assert_non_null(big);
    assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
    for (size_t i = 0; i < BIG; i++)
        big[i] = (unsigned char)(i * 31);
    /* Larger than the socket buffer: the writer and reader take turns. */
    pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        weft__wbuf_t w = { 0 };

        close(sv[1]);
        m = (weft__msg_t){ .type = WEFT__FRAME_VALUE, .data = big, .len = BIG };
        _exit(weft__msg_encode(&m, &w) != WEFT_SUCCESS ||
              weft__frame_send(sv[0], w.data, w.len, -1) != WEFT_SUCCESS);
    }
    close(sv[0]);
    assert_int_equal(weft__frame_recv(sv[1], WEFT__FRAME_MAX, &m, &payload, -1), WEFT_SUCCESS);
    assert_int_equal(m.type, WEFT__FRAME_VALUE);
    assert_int_equal(m.len, BIG);
    assert_memory_equal(m.data, big, BIG);
    free(payload);
    /* The writer is gone: end of stream, not a hang. */
    assert_int_equal(weft__frame_recv(sv[1], WEFT__FRAME_MAX, &m, &payload, -1),
                     WEFT_ERR_PEER_LOST);
    assert_null(payload);
    assert_int_equal(waitpid(pid, &status, 0), pid);
    assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    close(sv[1]);
    free(big);
}

static void test_recv_limits_and_timeouts(void **state)
{
    int sv[2];
    unsigned char *payload = (unsigned char *)"x", hdr[WEFT__FRAME_HEADER];
    weft__msg_t m;
    int64_t t0;

    (void)state;
    assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
    /* Nothing arrives: the deadline holds. */
    t0 = weft__frame_clock_ms();
    assert_int_equal(weft__frame_recv(sv[1], WEFT__FRAME_MAX, &m, &payload, t0 + 100),
                     WEFT_ERR_TIMEOUT);
    assert_true(weft__frame_clock_ms() - t0 >= 95);
    assert_null(payload);
    /* A frame over the reader's limit is refused from its header. */
    weft__frame_header(hdr, WEFT__FRAME_VALUE, 5000);
    assert_int_equal(write(sv[0], hdr, sizeof(hdr)), (ssize_t)sizeof(hdr));
    assert_int_equal(weft__frame_recv(sv[1], 4096, &m, &payload, t0 + 1000),
                     WEFT_ERR_BOOTSTRAP);
    /* A well-sized frame whose payload is nonsense. */
    weft__frame_header(hdr, WEFT__FRAME_GET, 2);
    assert_int_equal(write(sv[0], hdr, sizeof(hdr)), (ssize_t)sizeof(hdr));
    assert_int_equal(write(sv[0], "zz", 2), 2);
    assert_int_equal(weft__frame_recv(sv[1], WEFT__FRAME_MAX, &m, &payload, -1),
                     WEFT_ERR_BOOTSTRAP);
    assert_null(payload);
    /* A header promising 1000 bytes, then the writer leaves after 10. */
    weft__frame_header(hdr, WEFT__FRAME_VALUE, 1000);
    assert_int_equal(write(sv[0], hdr, sizeof(hdr)), (ssize_t)sizeof(hdr));
    assert_int_equal(write(sv[0], "0123456789", 10), 10);
    close(sv[0]);
    assert_int_equal(weft__frame_recv(sv[1], WEFT__FRAME_MAX, &m, &payload, -1),
                     WEFT_ERR_PEER_LOST);
    close(sv[1]);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_buffer_round_trip),
        cmocka_unit_test(test_field_limits),
        cmocka_unit_test(test_header_checks),
        cmocka_unit_test(test_message_round_trips),
        cmocka_unit_test(test_decode_limits),
        cmocka_unit_test(test_encode_limits),
        cmocka_unit_test(test_mutations),
        cmocka_unit_test(test_format_missing),
        cmocka_unit_test(test_socket_io),
        cmocka_unit_test(test_recv_limits_and_timeouts),
    };

    return cmocka_run_group_tests_name("frame", tests, NULL, NULL);
}
