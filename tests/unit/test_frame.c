/*
 * test_frame.c: the rendezvous wire format: round trips, and hostile or
 * broken input rejected by the limits instead of crashing or allocating.
 */
#include "config.h"

#include <arpa/inet.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "core/frame.h"

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
    r.p = w.data;
    r.end = w.data + w.len;
    r.failed = 0;
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
    r.p = w.data;
    r.end = w.data + w.len;
    r.failed = 0;
    weft__rbuf_str(&r, small, sizeof(small));
    assert_true(r.failed);
    assert_string_equal(small, "");
    /* A length prefix that claims more than the buffer holds. */
    r.p = w.data;
    r.end = w.data + 8;
    r.failed = 0;
    assert_int_equal(weft__rbuf_bytes(&r, &p, 1u << 20), 0);
    assert_true(r.failed);
    assert_null(p);
    weft__wbuf_free(&w);
}

static void test_header_checks(void **state)
{
    unsigned char hdr[WEFT__FRAME_HEADER];
    uint32_t type, len, v[3];

    (void)state;
    weft__frame_header(hdr, WEFT__FRAME_JOIN, 1234);
    assert_int_equal(weft__frame_parse_header(hdr, &type, &len), WEFT_SUCCESS);
    assert_int_equal(type, WEFT__FRAME_JOIN);
    assert_int_equal(len, 1234);
    weft__frame_header(hdr, WEFT__FRAME_JOIN, WEFT__FRAME_MAX + 1);
    assert_int_equal(weft__frame_parse_header(hdr, &type, &len), WEFT_ERR_BOOTSTRAP);
    assert_non_null(strstr(weft_last_error(), "exceeds"));
    v[0] = htonl(0x47455420); /* "GET ": somebody's HTTP client */
    v[1] = v[2] = 0;
    memcpy(hdr, v, sizeof(v));
    assert_int_equal(weft__frame_parse_header(hdr, &type, &len), WEFT_ERR_BOOTSTRAP);
    assert_non_null(strstr(weft_last_error(), "magic"));
}

static void test_socket_io(void **state)
{
    int sv[2];
    unsigned char *payload = NULL, big[100000];
    uint32_t type;
    size_t len;

    (void)state;
    assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
    for (size_t i = 0; i < sizeof(big); i++)
        big[i] = (unsigned char)(i * 31);
    /* Larger than the socket buffer: the writer and reader take turns. */
    if (fork() == 0) {
        close(sv[1]);
        _exit(weft__frame_send(sv[0], WEFT__FRAME_VALUE, big, sizeof(big), -1) != WEFT_SUCCESS);
    }
    close(sv[0]);
    assert_int_equal(weft__frame_recv(sv[1], &type, &payload, &len, -1), WEFT_SUCCESS);
    assert_int_equal(type, WEFT__FRAME_VALUE);
    assert_int_equal(len, sizeof(big));
    assert_memory_equal(payload, big, sizeof(big));
    free(payload);
    /* The writer is gone: end of stream, not a hang. */
    assert_int_equal(weft__frame_recv(sv[1], &type, &payload, &len, -1), WEFT_ERR_PEER_LOST);
    close(sv[1]);
}

static void test_timeout_and_truncated_stream(void **state)
{
    int sv[2];
    unsigned char *payload = NULL, hdr[WEFT__FRAME_HEADER];
    uint32_t type;
    size_t len;
    struct timespec ts;
    int64_t now;

    (void)state;
    assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
    clock_gettime(CLOCK_MONOTONIC, &ts);
    now = (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
    assert_int_equal(weft__frame_recv(sv[1], &type, &payload, &len, now + 100), WEFT_ERR_TIMEOUT);
    /* A header promising 1000 bytes, then the writer leaves after 10. */
    weft__frame_header(hdr, WEFT__FRAME_VALUE, 1000);
    assert_int_equal(write(sv[0], hdr, sizeof(hdr)), (ssize_t)sizeof(hdr));
    assert_int_equal(write(sv[0], "0123456789", 10), 10);
    close(sv[0]);
    assert_int_equal(weft__frame_recv(sv[1], &type, &payload, &len, -1), WEFT_ERR_PEER_LOST);
    close(sv[1]);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_buffer_round_trip),
        cmocka_unit_test(test_field_limits),
        cmocka_unit_test(test_header_checks),
        cmocka_unit_test(test_socket_io),
        cmocka_unit_test(test_timeout_and_truncated_stream),
    };

    return cmocka_run_group_tests_name("frame", tests, NULL, NULL);
}
