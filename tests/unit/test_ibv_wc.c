/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_ibv_wc.c: the ib-verbs transport's decoder of error completions:
 * every status of verbs.h has a name, a class and a hint; the line names
 * the status, the QP, the peer and the operation.
 */
#include "config.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "plugins/ib-verbs/ibv.h"

static void test_every_status(void **state)
{
    (void)state;
    /* verbs.h numbers them from IBV_WC_SUCCESS to IBV_WC_TM_RNDV_INCOMPLETE. */
    for (int s = IBV_WC_SUCCESS; s <= IBV_WC_TM_RNDV_INCOMPLETE; s++) {
        char line[512];

        assert_non_null(strstr(weft__ibv_wc_status_name(s), "IBV_WC_"));
        assert_string_not_equal(weft__ibv_wc_status_name(s), "IBV_WC_(unknown)");
        weft__ibv_wc_explain(s, IBV_WC_SEND, 0, 0x12, 3, line, sizeof(line));
        assert_non_null(strstr(line, weft__ibv_wc_status_name(s)));
        assert_non_null(strstr(line, "QP 0x12"));
        assert_non_null(strstr(line, "rank 3"));
        if (s != IBV_WC_SUCCESS)
            assert_non_null(strstr(line, ": "));
    }
}

static void test_classes(void **state)
{
    (void)state;
    assert_int_equal(weft__ibv_wc_class(IBV_WC_SUCCESS), WIB_WC_CLASS_OK);
    assert_int_equal(weft__ibv_wc_class(IBV_WC_WR_FLUSH_ERR), WIB_WC_CLASS_FLUSH);
    assert_int_equal(weft__ibv_wc_class(IBV_WC_RETRY_EXC_ERR), WIB_WC_CLASS_PEER);
    assert_int_equal(weft__ibv_wc_class(IBV_WC_RNR_RETRY_EXC_ERR), WIB_WC_CLASS_PEER);
    assert_int_equal(weft__ibv_wc_class(IBV_WC_LOC_LEN_ERR), WIB_WC_CLASS_LOCAL);
    assert_int_equal(weft__ibv_wc_class(IBV_WC_LOC_PROT_ERR), WIB_WC_CLASS_LOCAL);
    assert_int_equal(weft__ibv_wc_class(IBV_WC_REM_ACCESS_ERR), WIB_WC_CLASS_REMOTE);
    /* Unknown: the worst is assumed. */
    assert_int_equal(weft__ibv_wc_class(999), WIB_WC_CLASS_PEER);
}

static void test_lines(void **state)
{
    char line[512];

    (void)state;
    weft__ibv_wc_explain(IBV_WC_RETRY_EXC_ERR, IBV_WC_RDMA_WRITE, 0x81, 0x1a2b, 7, line,
                         sizeof(line));
    assert_non_null(strstr(line, "IBV_WC_RETRY_EXC_ERR (transport retry counter exceeded) "
                                 "on QP 0x1a2b to rank 7 during an RDMA write"));
    assert_non_null(strstr(line, "[vendor error 0x81]"));
    assert_non_null(strstr(line, "WEFT_IB_TIMEOUT"));
    assert_non_null(strstr(line, "PFC"));
    /* A flushed one's opcode means nothing: not printed. */
    weft__ibv_wc_explain(IBV_WC_WR_FLUSH_ERR, IBV_WC_RDMA_WRITE, 0, 1, -1, line, sizeof(line));
    assert_null(strstr(line, "during"));
    assert_null(strstr(line, "rank"));
    assert_non_null(strstr(line, "first error completion"));
    weft__ibv_wc_explain(IBV_WC_REM_ACCESS_ERR, IBV_WC_RDMA_WRITE, 0, 1, 2, line, sizeof(line));
    assert_non_null(strstr(line, "deregistered or freed"));
    weft__ibv_wc_explain(IBV_WC_RNR_RETRY_EXC_ERR, IBV_WC_SEND, 0, 1, 2, line, sizeof(line));
    assert_non_null(strstr(line, "WEFT_IB_RNR_RETRY"));
    weft__ibv_wc_explain(77, IBV_WC_RECV, 0, 5, 1, line, sizeof(line));
    assert_non_null(strstr(line, "status 77"));
    assert_non_null(strstr(line, "a receive"));
    /* Cut to the buffer, and terminated. */
    weft__ibv_wc_explain(IBV_WC_RETRY_EXC_ERR, IBV_WC_SEND, 0, 1, 2, line, 24);
    assert_int_equal(strlen(line), 23);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_every_status),
        cmocka_unit_test(test_classes),
        cmocka_unit_test(test_lines),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
