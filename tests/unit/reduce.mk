# SPDX-License-Identifier: BSD-3-Clause
# unit tests of the reduction kernels
WEFT_UNIT_TESTS += tests/unit/test_reduce
tests_unit_test_reduce_SOURCES = tests/unit/test_reduce.c
tests_unit_test_reduce_CPPFLAGS = $(WEFT_UNIT_CPPFLAGS)
tests_unit_test_reduce_CFLAGS = $(WEFT_UNIT_CFLAGS)
tests_unit_test_reduce_LDADD = $(WEFT_UNIT_LIBS) -lm
