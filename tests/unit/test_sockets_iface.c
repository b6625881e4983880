/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_sockets_iface.c: how the sockets transport picks its address:
 * WEFT_SOCKET_IFNAME lists, the choice among interfaces, the route to the
 * rendezvous host.
 */
#include "config.h"

#include <arpa/inet.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "plugins/sockets/sockets.h"

static char last_error[256];

static void fake_set_error(const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(last_error, sizeof(last_error), fmt, ap);
    va_end(ap);
}

static const char *fake_param(const char *name)
{
    return getenv(name);
}

static void test_ifname_match(void **state)
{
    (void)state;
    assert_true(weft__sock_ifname_match("eth0", "eth0"));
    assert_true(weft__sock_ifname_match("eth", "eth0"));
    assert_true(weft__sock_ifname_match("eth", "eth12"));
    assert_false(weft__sock_ifname_match("eth", "enp3s0"));
    assert_false(weft__sock_ifname_match("eth0", "eth"));
    assert_true(weft__sock_ifname_match("ib0,eth0", "eth0"));
    assert_true(weft__sock_ifname_match("ib0, eth0 ", "eth0"));
    assert_false(weft__sock_ifname_match("ib0,eth0", "eth1"));
    assert_false(weft__sock_ifname_match("^docker,lo", "docker0"));
    assert_false(weft__sock_ifname_match("^docker,lo", "lo"));
    assert_true(weft__sock_ifname_match("^docker,lo", "enp3s0"));
    assert_true(weft__sock_ifname_match("^", "anything"));
    assert_false(weft__sock_ifname_match("", "eth0"));
    assert_false(weft__sock_ifname_match(",,", "eth0"));
    assert_false(weft__sock_ifname_match(NULL, "eth0"));
}

/* A fake getifaddrs list. */
struct fake_if {
    struct ifaddrs ifa;
    struct sockaddr_storage ss;
};

static void fake_if_set(struct fake_if *f, const char *name, unsigned flags, const char *ip,
                        struct fake_if *next)
{
    memset(f, 0, sizeof(*f));
    f->ifa.ifa_name = (char *)name;
    f->ifa.ifa_flags = flags;
    f->ifa.ifa_next = next ? &next->ifa : NULL;
    if (!ip)
        return;
    if (strchr(ip, ':')) {
        struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)&f->ss;

        s6->sin6_family = AF_INET6;
        assert_int_equal(inet_pton(AF_INET6, ip, &s6->sin6_addr), 1);
    } else {
        struct sockaddr_in *s4 = (struct sockaddr_in *)&f->ss;

        s4->sin_family = AF_INET;
        assert_int_equal(inet_pton(AF_INET, ip, &s4->sin_addr), 1);
    }
    f->ifa.ifa_addr = (struct sockaddr *)&f->ss;
}

static const char *picked(const struct ifaddrs *list, const char *spec)
{
    const struct ifaddrs *i = weft__sock_iface_pick(list, spec);

    return i ? i->ifa_name : "(none)";
}

static void test_iface_pick(void **state)
{
    enum { UP = IFF_UP | IFF_RUNNING };
    struct fake_if f[7];

    (void)state;
    fake_if_set(&f[0], "lo", UP | IFF_LOOPBACK, "127.0.0.1", &f[1]);
    fake_if_set(&f[1], "docker0", IFF_UP, "172.17.0.1", &f[2]);   /* up, no carrier */
    fake_if_set(&f[2], "eth0", UP, "fe80::1", &f[3]);             /* link-local only */
    fake_if_set(&f[3], "eth0", UP, NULL, &f[4]);                  /* no address */
    fake_if_set(&f[4], "ib0", UP, "2001:db8::5", &f[5]);
    fake_if_set(&f[5], "eth1", UP, "10.1.2.3", &f[6]);
    fake_if_set(&f[6], "eth2", 0, "10.9.9.9", NULL);              /* down */

    /* Running, non-loopback IPv4 first. */
    assert_string_equal(picked(&f[0].ifa, NULL), "eth1");
    assert_string_equal(picked(&f[0].ifa, ""), "eth1");
    assert_string_equal(picked(&f[0].ifa, "eth"), "eth1");
    assert_string_equal(picked(&f[0].ifa, "ib"), "ib0");
    assert_string_equal(picked(&f[0].ifa, "lo"), "lo");
    assert_string_equal(picked(&f[0].ifa, "docker"), "docker0");
    /* An interface without carrier reaches nobody; loopback at least this
     * host. */
    assert_string_equal(picked(&f[0].ifa, "^eth,ib"), "lo");
    assert_string_equal(picked(&f[0].ifa, "^eth,ib,lo"), "docker0");
    assert_string_equal(picked(&f[0].ifa, "^eth,ib,docker"), "lo");
    assert_string_equal(picked(&f[0].ifa, "eth2"), "(none)");
    assert_string_equal(picked(&f[0].ifa, "eth0"), "(none)");
    /* Without eth1: IPv6 beats loopback and the interface without carrier. */
    f[4].ifa.ifa_next = NULL;
    assert_string_equal(picked(&f[0].ifa, NULL), "ib0");
    /* Only loopback left. */
    f[0].ifa.ifa_next = NULL;
    assert_string_equal(picked(&f[0].ifa, NULL), "lo");
    assert_string_equal(picked(NULL, NULL), "(none)");
}

static void test_route_to(void **state)
{
    struct sockaddr_storage ss;
    socklen_t len = 0;
    char buf[80];

    (void)state;
    assert_int_equal(weft__sock_route_to("127.0.0.1", &ss, &len), 0);
    assert_int_equal(len, sizeof(struct sockaddr_in));
    weft__sock_sa_str((struct sockaddr *)&ss, buf, sizeof(buf));
    assert_non_null(strstr(buf, "127.0.0.1:"));
    assert_int_equal(weft__sock_route_to("localhost", &ss, &len), 0);
    assert_int_equal(weft__sock_route_to("", &ss, &len), -1);
    assert_int_equal(weft__sock_route_to(NULL, &ss, &len), -1);
    assert_int_equal(weft__sock_route_to("no-such-host.invalid", &ss, &len), -1);
    /* IPv6 loopback where the host has IPv6. */
    if (weft__sock_route_to("::1", &ss, &len) == 0) {
        assert_int_equal(ss.ss_family, AF_INET6);
        weft__sock_sa_str((struct sockaddr *)&ss, buf, sizeof(buf));
        assert_non_null(strstr(buf, "[::1]:"));
    }
}

static void test_pick_address(void **state)
{
    weft_transport_core_t core;
    struct sockaddr_storage ss;
    socklen_t len;
    char desc[200], ip[80];

    (void)state;
    memset(&core, 0, sizeof(core));
    core.struct_size = sizeof(core);
    core.set_error = fake_set_error;
    core.get_param = fake_param;
    /* Loopback rendezvous host: loopback. */
    core.master_addr = "127.0.0.1";
    assert_int_equal(weft__sock_pick_address(&core, &ss, &len, desc, sizeof(desc)),
                     WEFT_SUCCESS);
    weft__sock_sa_str((struct sockaddr *)&ss, ip, sizeof(ip));
    assert_non_null(strstr(ip, "127.0.0.1"));
    assert_non_null(strstr(desc, "rendezvous"));
    /* The variable wins over the rendezvous host. */
    setenv("WEFT_SOCKET_IFNAME", "no-such-if", 1);
    assert_int_equal(weft__sock_pick_address(&core, &ss, &len, desc, sizeof(desc)),
                     WEFT_ERR_UNSUPPORTED);
    assert_non_null(strstr(last_error, "WEFT_SOCKET_IFNAME=no-such-if"));
    setenv("WEFT_SOCKET_IFNAME", "lo", 1);
    core.master_addr = NULL;
    assert_int_equal(weft__sock_pick_address(&core, &ss, &len, desc, sizeof(desc)),
                     WEFT_SUCCESS);
    assert_non_null(strstr(desc, "WEFT_SOCKET_IFNAME"));
    assert_non_null(strstr(desc, "lo"));
    unsetenv("WEFT_SOCKET_IFNAME");
    /* Neither: some interface that is up. */
    assert_int_equal(weft__sock_pick_address(&core, &ss, &len, desc, sizeof(desc)),
                     WEFT_SUCCESS);
    assert_true(ss.ss_family == AF_INET || ss.ss_family == AF_INET6);
}

static void test_addr_blob(void **state)
{
    struct sockaddr_in s4;
    struct sockaddr_in6 s6;
    struct sockaddr_storage back;
    struct sock_addr a;

    (void)state;
    memset(&s4, 0, sizeof(s4));
    s4.sin_family = AF_INET;
    s4.sin_port = htons(4242);
    inet_pton(AF_INET, "10.0.0.7", &s4.sin_addr);
    weft__sock_addr_from_sa(&a, (struct sockaddr *)&s4);
    assert_true(weft__sock_addr_valid(&a, sizeof(a)));
    assert_false(weft__sock_addr_valid(&a, sizeof(a) - 1));
    assert_false(weft__sock_addr_valid(NULL, sizeof(a)));
    assert_int_equal(weft__sock_addr_to_sa(&a, &back), sizeof(s4));
    assert_memory_equal(&back, &s4, sizeof(s4));
    memset(&s6, 0, sizeof(s6));
    s6.sin6_family = AF_INET6;
    s6.sin6_port = htons(5353);
    inet_pton(AF_INET6, "2001:db8::9", &s6.sin6_addr);
    weft__sock_addr_from_sa(&a, (struct sockaddr *)&s6);
    assert_true(weft__sock_addr_valid(&a, sizeof(a)));
    assert_int_equal(weft__sock_addr_to_sa(&a, &back), sizeof(s6));
    assert_memory_equal(&back, &s6, sizeof(s6));
    a.port = 0;
    assert_false(weft__sock_addr_valid(&a, sizeof(a)));
    a.port = htons(1);
    a.family = 99;
    assert_false(weft__sock_addr_valid(&a, sizeof(a)));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_ifname_match),
        cmocka_unit_test(test_iface_pick),
        cmocka_unit_test(test_route_to),
        cmocka_unit_test(test_pick_address),
        cmocka_unit_test(test_addr_blob),
    };

    return cmocka_run_group_tests_name("sockets_iface", tests, NULL, NULL);
}
