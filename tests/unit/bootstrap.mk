# SPDX-License-Identifier: BSD-3-Clause
# unit tests of the bootstrap: wire format, init-method resolution, the
# store (server and clients in one process) and the bootstrap itself
WEFT_UNIT_TESTS += tests/unit/test_frame tests/unit/test_init_method tests/unit/test_store \
	tests/unit/test_bootstrap
tests_unit_test_frame_SOURCES = tests/unit/test_frame.c
tests_unit_test_frame_CPPFLAGS = $(WEFT_UNIT_CPPFLAGS)
tests_unit_test_frame_CFLAGS = $(WEFT_UNIT_CFLAGS)
tests_unit_test_frame_LDADD = $(WEFT_UNIT_LIBS)
tests_unit_test_init_method_SOURCES = tests/unit/test_init_method.c
tests_unit_test_init_method_CPPFLAGS = $(WEFT_UNIT_CPPFLAGS)
tests_unit_test_init_method_CFLAGS = $(WEFT_UNIT_CFLAGS)
tests_unit_test_init_method_LDADD = $(WEFT_UNIT_LIBS)
tests_unit_test_store_SOURCES = tests/unit/test_store.c
tests_unit_test_store_CPPFLAGS = $(WEFT_UNIT_CPPFLAGS)
tests_unit_test_store_CFLAGS = $(WEFT_UNIT_CFLAGS)
tests_unit_test_store_LDADD = $(WEFT_UNIT_LIBS)
tests_unit_test_bootstrap_SOURCES = tests/unit/test_bootstrap.c
tests_unit_test_bootstrap_CPPFLAGS = $(WEFT_UNIT_CPPFLAGS)
tests_unit_test_bootstrap_CFLAGS = $(WEFT_UNIT_CFLAGS)
tests_unit_test_bootstrap_LDADD = $(WEFT_UNIT_LIBS)
