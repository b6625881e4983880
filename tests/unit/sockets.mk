# SPDX-License-Identifier: BSD-3-Clause
# unit tests of the sockets transport: its sources are built into the
# tests, which drive several contexts in one process over loopback TCP
# (test_sockets) and check interface selection (test_sockets_iface).
WEFT_UNIT_TESTS += tests/unit/test_sockets tests/unit/test_sockets_iface
tests_unit_test_sockets_SOURCES = tests/unit/test_sockets.c $(WEFT_SOCKETS_SOURCES)
tests_unit_test_sockets_CPPFLAGS = $(WEFT_UNIT_CPPFLAGS)
tests_unit_test_sockets_CFLAGS = $(WEFT_UNIT_CFLAGS)
tests_unit_test_sockets_LDADD = $(CMOCKA_LIBS) $(WEFT_SOCKETS_LIBADD)
tests_unit_test_sockets_iface_SOURCES = tests/unit/test_sockets_iface.c \
	$(WEFT_SOCKETS_SOURCES)
tests_unit_test_sockets_iface_CPPFLAGS = $(WEFT_UNIT_CPPFLAGS)
tests_unit_test_sockets_iface_CFLAGS = $(WEFT_UNIT_CFLAGS)
tests_unit_test_sockets_iface_LDADD = $(CMOCKA_LIBS) $(WEFT_SOCKETS_LIBADD)
