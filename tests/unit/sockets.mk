# unit tests of the sockets transport: its sources are built into the test,
# which drives several contexts in one process over loopback TCP.
WEFT_UNIT_TESTS += tests/unit/test_sockets
tests_unit_test_sockets_SOURCES = tests/unit/test_sockets.c \
	plugins/sockets/sockets.c plugins/sockets/sockets_iface.c
tests_unit_test_sockets_CPPFLAGS = $(WEFT_UNIT_CPPFLAGS)
tests_unit_test_sockets_CFLAGS = $(WEFT_UNIT_CFLAGS)
tests_unit_test_sockets_LDADD = $(CMOCKA_LIBS)
