# SPDX-License-Identifier: BSD-3-Clause
# unit test of the sweep of what killed jobs left in /dev/shm
WEFT_UNIT_TESTS += tests/unit/test_shm_sweep
tests_unit_test_shm_sweep_SOURCES = tests/unit/test_shm_sweep.c
tests_unit_test_shm_sweep_CPPFLAGS = $(WEFT_UNIT_CPPFLAGS)
tests_unit_test_shm_sweep_CFLAGS = $(WEFT_UNIT_CFLAGS)
tests_unit_test_shm_sweep_LDADD = $(WEFT_UNIT_LIBS)
