# SPDX-License-Identifier: BSD-3-Clause
# unit tests of topo/: the hwloc XML fixtures of tests/topo/ and the test
# plugins that state needs (tests/plugins/), which must be built first.
if WEFT_HAVE_HWLOC
WEFT_UNIT_TESTS += tests/unit/test_topo
endif
tests_unit_test_topo_SOURCES = tests/unit/test_topo.c
tests_unit_test_topo_CPPFLAGS = $(WEFT_UNIT_CPPFLAGS)
tests_unit_test_topo_CFLAGS = $(WEFT_UNIT_CFLAGS)
tests_unit_test_topo_LDADD = $(WEFT_UNIT_LIBS)
EXTRA_tests_unit_test_topo_DEPENDENCIES = $(WEFT_TEST_PLUGINS) \
	plugins/sockets/weft-sockets.la
