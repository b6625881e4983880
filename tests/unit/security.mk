# SPDX-License-Identifier: BSD-3-Clause
# unit tests of what guards a job against other users of its machine:
# owner-only files in /dev/shm
WEFT_UNIT_TESTS += tests/unit/test_private_file
tests_unit_test_private_file_SOURCES = tests/unit/test_private_file.c
tests_unit_test_private_file_CPPFLAGS = $(WEFT_UNIT_CPPFLAGS)
tests_unit_test_private_file_CFLAGS = $(WEFT_UNIT_CFLAGS)
tests_unit_test_private_file_LDADD = $(WEFT_UNIT_LIBS)
