/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_ibv_hca.c: WEFT_IB_HCA of the ib-verbs transport, parsed and
 * matched as NCCL_IB_HCA is: selection, exclusion, exact names, ports,
 * and the mistakes that must be refused.
 */
#include "config.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "plugins/ib-verbs/ibv.h"

static struct wib_hca_spec parse_ok(const char *s)
{
    struct wib_hca_spec spec;
    char why[128] = "";

    if (weft__ibv_hca_parse(s, &spec, why, sizeof(why)) != 0)
        fail_msg("\"%s\" refused: %s", s ? s : "(null)", why);
    return spec;
}

static void test_empty_selects_all(void **state)
{
    struct wib_hca_spec s;

    (void)state;
    s = parse_ok(NULL);
    assert_true(weft__ibv_hca_match(&s, "mlx5_0", 1));
    s = parse_ok("");
    assert_true(weft__ibv_hca_match(&s, "mlx5_0", 1));
    s = parse_ok(" , ,");
    assert_int_equal(s.n, 0);
    assert_true(weft__ibv_hca_match(&s, "irdma0", 2));
    /* "^" alone excludes nothing. */
    s = parse_ok("^");
    assert_true(weft__ibv_hca_match(&s, "mlx5_0", 1));
}

static void test_prefix_and_ports(void **state)
{
    struct wib_hca_spec s = parse_ok("mlx5_0:1,mlx5_1");

    (void)state;
    assert_int_equal(s.n, 2);
    assert_false(s.exclude);
    assert_false(s.exact);
    assert_true(weft__ibv_hca_match(&s, "mlx5_0", 1));
    assert_false(weft__ibv_hca_match(&s, "mlx5_0", 2));
    assert_true(weft__ibv_hca_match(&s, "mlx5_1", 1));
    assert_true(weft__ibv_hca_match(&s, "mlx5_1", 2));
    /* A prefix: mlx5_1 selects mlx5_10 as well, as NCCL does. */
    assert_true(weft__ibv_hca_match(&s, "mlx5_10", 1));
    assert_false(weft__ibv_hca_match(&s, "mlx5_2", 1));
    assert_false(weft__ibv_hca_match(&s, "mlx4_0", 1));

    s = parse_ok("mlx5");
    assert_true(weft__ibv_hca_match(&s, "mlx5_7", 1));
    assert_false(weft__ibv_hca_match(&s, "bnxt_re0", 1));
}

static void test_blanks(void **state)
{
    struct wib_hca_spec s = parse_ok(" mlx5_0:2 , rxe0 ");

    (void)state;
    assert_int_equal(s.n, 2);
    assert_string_equal(s.e[0].name, "mlx5_0");
    assert_int_equal(s.e[0].port, 2);
    assert_string_equal(s.e[1].name, "rxe0");
    assert_int_equal(s.e[1].port, 0);
}

static void test_exclude(void **state)
{
    struct wib_hca_spec s = parse_ok("^mlx5_2");

    (void)state;
    assert_true(s.exclude);
    assert_true(weft__ibv_hca_match(&s, "mlx5_0", 1));
    assert_false(weft__ibv_hca_match(&s, "mlx5_2", 1));
    assert_false(weft__ibv_hca_match(&s, "mlx5_20", 1));
    s = parse_ok("^mlx5_0:2");
    assert_true(weft__ibv_hca_match(&s, "mlx5_0", 1));
    assert_false(weft__ibv_hca_match(&s, "mlx5_0", 2));
}

static void test_exact(void **state)
{
    struct wib_hca_spec s = parse_ok("=mlx5_1");

    (void)state;
    assert_true(s.exact);
    assert_true(weft__ibv_hca_match(&s, "mlx5_1", 1));
    assert_false(weft__ibv_hca_match(&s, "mlx5_10", 1));
    assert_false(weft__ibv_hca_match(&s, "mlx5_", 1));
    s = parse_ok("^=mlx5_1");
    assert_true(s.exclude && s.exact);
    assert_false(weft__ibv_hca_match(&s, "mlx5_1", 1));
    assert_true(weft__ibv_hca_match(&s, "mlx5_10", 1));
}

static void expect_refused(const char *s, const char *part)
{
    struct wib_hca_spec spec;
    char why[128] = "";

    if (weft__ibv_hca_parse(s, &spec, why, sizeof(why)) == 0)
        fail_msg("\"%s\" accepted", s);
    if (!strstr(why, part))
        fail_msg("\"%s\": \"%s\" does not say \"%s\"", s, why, part);
}

static void test_refused(void **state)
{
    char many[1024] = "";

    (void)state;
    expect_refused("mlx5_0:", "port");
    expect_refused("mlx5_0:0", "port");
    expect_refused("mlx5_0:256", "port");
    expect_refused("mlx5_0:x", "port");
    expect_refused("mlx5_0:1x", "port");
    expect_refused(":1", "names no device");
    expect_refused("=", "no device");
    expect_refused("mlx5_0,0123456789012345678901234567890123456789012345678901234567890123456789",
                   "names no device");
    for (int i = 0; i <= WIB_HCA_MAX; i++)
        snprintf(many + strlen(many), sizeof(many) - strlen(many), "d%d,", i);
    expect_refused(many, "more than");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_empty_selects_all),
        cmocka_unit_test(test_prefix_and_ports),
        cmocka_unit_test(test_blanks),
        cmocka_unit_test(test_exclude),
        cmocka_unit_test(test_exact),
        cmocka_unit_test(test_refused),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
