# SPDX-License-Identifier: BSD-3-Clause
# libweft unloaded while a thread that used it lives on. Not a cmocka
# program, so it runs without cmocka too; it dlopen()s the build tree's
# libweft.so rather than linking it, and skips without a shared build.
check_PROGRAMS += tests/unit/test_unload
TESTS += tests/unit/test_unload
tests_unit_test_unload_SOURCES = tests/unit/test_unload.c
tests_unit_test_unload_CPPFLAGS = $(WEFT_UNIT_CPPFLAGS)
tests_unit_test_unload_CFLAGS = $(AM_CFLAGS)
