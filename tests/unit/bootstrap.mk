# unit tests of the bootstrap: wire format and init-method resolution
WEFT_UNIT_TESTS += tests/unit/test_frame tests/unit/test_init_method
tests_unit_test_frame_SOURCES = tests/unit/test_frame.c
tests_unit_test_frame_CPPFLAGS = $(WEFT_UNIT_CPPFLAGS)
tests_unit_test_frame_CFLAGS = $(WEFT_UNIT_CFLAGS)
tests_unit_test_frame_LDADD = $(WEFT_UNIT_LIBS)
tests_unit_test_init_method_SOURCES = tests/unit/test_init_method.c
tests_unit_test_init_method_CPPFLAGS = $(WEFT_UNIT_CPPFLAGS)
tests_unit_test_init_method_CFLAGS = $(WEFT_UNIT_CFLAGS)
tests_unit_test_init_method_LDADD = $(WEFT_UNIT_LIBS)
