# SPDX-License-Identifier: BSD-3-Clause
# unit tests of the request and progress layers over a transport the
# tests drive by hand
WEFT_UNIT_TESTS += tests/unit/test_request tests/unit/test_progress
tests_unit_test_request_SOURCES = tests/unit/test_request.c tests/unit/fake_transport.h
tests_unit_test_request_CPPFLAGS = $(WEFT_UNIT_CPPFLAGS)
tests_unit_test_request_CFLAGS = $(WEFT_UNIT_CFLAGS)
tests_unit_test_request_LDADD = $(WEFT_UNIT_LIBS)
tests_unit_test_progress_SOURCES = tests/unit/test_progress.c tests/unit/fake_transport.h
tests_unit_test_progress_CPPFLAGS = $(WEFT_UNIT_CPPFLAGS)
tests_unit_test_progress_CFLAGS = $(WEFT_UNIT_CFLAGS)
tests_unit_test_progress_LDADD = $(WEFT_UNIT_LIBS)
