# SPDX-License-Identifier: BSD-3-Clause
# unit tests of the tuner: cost model, choices, cache file
WEFT_UNIT_TESTS += tests/unit/test_tune
tests_unit_test_tune_SOURCES = tests/unit/test_tune.c tests/unit/fake_comm.h
tests_unit_test_tune_CPPFLAGS = $(WEFT_UNIT_CPPFLAGS)
tests_unit_test_tune_CFLAGS = $(WEFT_UNIT_CFLAGS)
tests_unit_test_tune_LDADD = $(WEFT_UNIT_LIBS)
