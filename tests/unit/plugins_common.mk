# SPDX-License-Identifier: BSD-3-Clause
# unit tests of plugins/common, linked against its convenience library: tag
# matching through a fake transport (test_match), and requests, their pool
# and the context's head (test_req_pool).
WEFT_UNIT_TESTS += tests/unit/test_match tests/unit/test_req_pool
tests_unit_test_match_SOURCES = tests/unit/test_match.c
tests_unit_test_match_CPPFLAGS = $(WEFT_UNIT_CPPFLAGS)
tests_unit_test_match_CFLAGS = $(WEFT_UNIT_CFLAGS)
tests_unit_test_match_LDADD = plugins/common/libtp_common.la $(CMOCKA_LIBS)
tests_unit_test_req_pool_SOURCES = tests/unit/test_req_pool.c
tests_unit_test_req_pool_CPPFLAGS = $(WEFT_UNIT_CPPFLAGS)
tests_unit_test_req_pool_CFLAGS = $(WEFT_UNIT_CFLAGS)
tests_unit_test_req_pool_LDADD = plugins/common/libtp_common.la $(CMOCKA_LIBS)
