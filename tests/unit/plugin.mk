# SPDX-License-Identifier: BSD-3-Clause
# unit tests of the plugin module: the loader, against the example transport
# and the broken plugins of tests/plugins/, which must be built first.
WEFT_UNIT_TESTS += tests/unit/test_plugin
tests_unit_test_plugin_SOURCES = tests/unit/test_plugin.c
tests_unit_test_plugin_CPPFLAGS = $(WEFT_UNIT_CPPFLAGS)
tests_unit_test_plugin_CFLAGS = $(WEFT_UNIT_CFLAGS)
tests_unit_test_plugin_LDADD = $(WEFT_UNIT_LIBS)
EXTRA_tests_unit_test_plugin_DEPENDENCIES = $(WEFT_TEST_PLUGINS) \
	plugins/example/weft-example.la
