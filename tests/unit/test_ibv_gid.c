/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_ibv_gid.c: which GID of a RoCE port the ib-verbs transport picks:
 * the priority of RoCE v2 on the bootstrap network, v2 IPv4 elsewhere,
 * v2 IPv6, v1, link-local ones last, unknown types after known ones,
 * WEFT_IB_GID_INDEX, and the bootstrap subnet of a real route.
 */
#include "config.h"

#include <arpa/inet.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <sys/socket.h>

#include <cmocka.h>

#include "plugins/ib-verbs/ibv.h"

static struct wib_gid_cand cand(uint32_t index, int kind, const char *addr)
{
    struct wib_gid_cand c;

    memset(&c, 0, sizeof(c));
    c.index = index;
    c.kind = kind;
    if (strchr(addr, ':')) {
        assert_int_equal(inet_pton(AF_INET6, addr, c.raw), 1);
    } else {
        /* IPv4-mapped: ::ffff:a.b.c.d */
        c.raw[10] = c.raw[11] = 0xff;
        assert_int_equal(inet_pton(AF_INET, addr, c.raw + 12), 1);
    }
    return c;
}

static struct wib_subnet subnet4(const char *addr, int prefix)
{
    struct wib_subnet s;

    memset(&s, 0, sizeof(s));
    s.family = AF_INET;
    assert_int_equal(inet_pton(AF_INET, addr, s.addr), 1);
    s.prefix = prefix;
    return s;
}

static void test_rank(void **state)
{
    struct wib_subnet boot = subnet4("10.1.0.7", 16);
    struct wib_gid_cand c;

    (void)state;
    c = cand(0, WIB_GID_ROCE_V2, "10.1.200.3");
    assert_int_equal(weft__ibv_gid_rank(&c, &boot), 0);
    c = cand(0, WIB_GID_ROCE_V2, "10.2.0.3");
    assert_int_equal(weft__ibv_gid_rank(&c, &boot), 1);
    /* Without a known bootstrap network no IPv4 GID is on it. */
    assert_int_equal(weft__ibv_gid_rank(&c, NULL), 1);
    c = cand(0, WIB_GID_ROCE_V2, "fd00::5");
    assert_int_equal(weft__ibv_gid_rank(&c, &boot), 2);
    c = cand(0, WIB_GID_ROCE_V1, "10.1.0.9");
    assert_int_equal(weft__ibv_gid_rank(&c, &boot), 3);
    c = cand(0, WIB_GID_ROCE_V2, "fe80::1");
    assert_int_equal(weft__ibv_gid_rank(&c, &boot), 4);
    c = cand(0, WIB_GID_ROCE_V1, "fe80::1");
    assert_int_equal(weft__ibv_gid_rank(&c, &boot), 5);
    c = cand(0, WIB_GID_UNKNOWN, "10.1.0.9");
    assert_int_equal(weft__ibv_gid_rank(&c, &boot), 6);
    c = cand(0, WIB_GID_UNKNOWN, "fe80::2");
    assert_int_equal(weft__ibv_gid_rank(&c, &boot), 7);
    c = cand(0, WIB_GID_IB, "fe80::2");
    assert_int_equal(weft__ibv_gid_rank(&c, &boot), -1);
    memset(c.raw, 0, sizeof(c.raw));
    c.kind = WIB_GID_ROCE_V2;
    assert_int_equal(weft__ibv_gid_rank(&c, &boot), -1);
}

/* The subnet test looks at exactly prefix bits. */
static void test_prefix_bits(void **state)
{
    struct wib_subnet boot = subnet4("192.168.5.130", 25);
    struct wib_gid_cand in = cand(1, WIB_GID_ROCE_V2, "192.168.5.129");
    struct wib_gid_cand out = cand(1, WIB_GID_ROCE_V2, "192.168.5.127");

    (void)state;
    assert_int_equal(weft__ibv_gid_rank(&in, &boot), 0);
    assert_int_equal(weft__ibv_gid_rank(&out, &boot), 1);
    boot.prefix = 0;
    assert_int_equal(weft__ibv_gid_rank(&out, &boot), 0);
}

/* A typical RoCE table: v1 and v2 of link-local, IPv4 and IPv6. */
static void test_choose_typical(void **state)
{
    struct wib_subnet boot = subnet4("10.1.0.7", 24);
    struct wib_gid_cand t[] = {
        cand(0, WIB_GID_ROCE_V1, "fe80::a"),
        cand(1, WIB_GID_ROCE_V2, "fe80::a"),
        cand(2, WIB_GID_ROCE_V1, "10.9.0.7"),
        cand(3, WIB_GID_ROCE_V2, "10.9.0.7"),
        cand(4, WIB_GID_ROCE_V1, "10.1.0.7"),
        cand(5, WIB_GID_ROCE_V2, "10.1.0.7"),
        cand(6, WIB_GID_ROCE_V2, "fd00::7"),
    };
    struct wib_gid_pick pick;

    (void)state;
    assert_int_equal(weft__ibv_gid_choose(t, 7, &boot, -1, &pick), 0);
    assert_int_equal(pick.index, 5);
    assert_int_equal(pick.rank, 0);
    assert_non_null(strstr(pick.why, "RoCE v2 ::ffff:10.1.0.7 (index 5)"));
    assert_non_null(strstr(pick.why, "bootstrap"));
    /* The bootstrap elsewhere: the lowest v2 IPv4 index. */
    boot = subnet4("172.16.0.1", 16);
    assert_int_equal(weft__ibv_gid_choose(t, 7, &boot, -1, &pick), 0);
    assert_int_equal(pick.index, 3);
    /* Only link-local ones: v2 before v1; then a routable v2 IPv6. */
    assert_int_equal(weft__ibv_gid_choose(t, 2, &boot, -1, &pick), 0);
    assert_int_equal(pick.index, 1);
    assert_int_equal(pick.rank, 4);
    assert_int_equal(weft__ibv_gid_choose(t + 6, 1, &boot, -1, &pick), 0);
    assert_int_equal(pick.index, 6);
    /* Only v1 and v2 link-local: the routable v1 wins. */
    {
        struct wib_gid_cand u[] = { t[1], t[2] };

        assert_int_equal(weft__ibv_gid_choose(u, 2, &boot, -1, &pick), 0);
        assert_int_equal(pick.index, 2);
        assert_int_equal(pick.kind, WIB_GID_ROCE_V1);
    }
}

/* Within a class, the bootstrap's IPv6 network first, then the lowest index. */
static void test_choose_ipv6_boot(void **state)
{
    struct wib_subnet boot;
    struct wib_gid_cand t[] = {
        cand(2, WIB_GID_ROCE_V2, "fd00:1::7"),
        cand(3, WIB_GID_ROCE_V2, "fd00:2::7"),
    };
    struct wib_gid_pick pick;

    (void)state;
    memset(&boot, 0, sizeof(boot));
    boot.family = AF_INET6;
    assert_int_equal(inet_pton(AF_INET6, "fd00:2::1", boot.addr), 1);
    boot.prefix = 64;
    assert_int_equal(weft__ibv_gid_choose(t, 2, &boot, -1, &pick), 0);
    assert_int_equal(pick.index, 3);
    boot.family = 0;
    assert_int_equal(weft__ibv_gid_choose(t, 2, &boot, -1, &pick), 0);
    assert_int_equal(pick.index, 2);
}

static void test_choose_forced(void **state)
{
    struct wib_gid_cand t[] = {
        cand(0, WIB_GID_ROCE_V1, "fe80::a"),
        cand(3, WIB_GID_ROCE_V2, "10.9.0.7"),
    };
    struct wib_gid_pick pick;

    (void)state;
    assert_int_equal(weft__ibv_gid_choose(t, 2, NULL, 0, &pick), 0);
    assert_int_equal(pick.index, 0);
    assert_non_null(strstr(pick.why, "WEFT_IB_GID_INDEX"));
    assert_int_equal(weft__ibv_gid_choose(t, 2, NULL, 1, &pick), -1);
    assert_int_equal(pick.index, -1);
    assert_non_null(strstr(pick.why, "WEFT_IB_GID_INDEX=1"));
}

static void test_choose_none(void **state)
{
    struct wib_gid_cand t[] = {
        cand(0, WIB_GID_IB, "fe80::a"),
    };
    struct wib_gid_pick pick;

    (void)state;
    assert_int_equal(weft__ibv_gid_choose(t, 1, NULL, -1, &pick), -1);
    assert_int_equal(pick.index, -1);
    assert_non_null(strstr(pick.why, "no RoCE GID"));
    assert_int_equal(weft__ibv_gid_choose(t, 0, NULL, -1, &pick), -1);
}

/* Unknown types (no _ibv_query_gid_ex, no sysfs): after every known one,
 * IPv4 before link-local. */
static void test_choose_unknown(void **state)
{
    struct wib_gid_cand t[] = {
        cand(0, WIB_GID_UNKNOWN, "fe80::a"),
        cand(1, WIB_GID_UNKNOWN, "10.0.0.1"),
    };
    struct wib_gid_cand u[] = { t[0], t[1], cand(2, WIB_GID_ROCE_V1, "fe80::b") };
    struct wib_gid_pick pick;

    (void)state;
    assert_int_equal(weft__ibv_gid_choose(t, 2, NULL, -1, &pick), 0);
    assert_int_equal(pick.index, 1);
    assert_non_null(strstr(pick.why, "type unknown"));
    assert_int_equal(weft__ibv_gid_choose(u, 3, NULL, -1, &pick), 0);
    assert_int_equal(pick.index, 2);
}

/* The route to the loopback address is through lo, 127.0.0.0/8. */
static void test_boot_subnet(void **state)
{
    struct wib_subnet s;

    (void)state;
    weft__ibv_boot_subnet("127.0.0.1", &s);
    assert_int_equal(s.family, AF_INET);
    assert_int_equal(s.addr[0], 127);
    assert_int_equal(s.prefix, 8);
    weft__ibv_boot_subnet(NULL, &s);
    assert_int_equal(s.family, 0);
    weft__ibv_boot_subnet("no-such-host.invalid", &s);
    assert_int_equal(s.family, 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_rank),
        cmocka_unit_test(test_prefix_bits),
        cmocka_unit_test(test_choose_typical),
        cmocka_unit_test(test_choose_ipv6_boot),
        cmocka_unit_test(test_choose_forced),
        cmocka_unit_test(test_choose_none),
        cmocka_unit_test(test_choose_unknown),
        cmocka_unit_test(test_boot_subnet),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
