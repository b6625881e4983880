# SPDX-License-Identifier: BSD-3-Clause
# unit tests of the shm transport: its ring alone, then two contexts in one
# process through the ABI (its sources are built into the test).
WEFT_UNIT_TESTS += tests/unit/test_shm
tests_unit_test_shm_SOURCES = tests/unit/test_shm.c $(WEFT_SHM_SOURCES)
tests_unit_test_shm_CPPFLAGS = $(WEFT_UNIT_CPPFLAGS) $(WEFT_SHM_CPPFLAGS)
tests_unit_test_shm_CFLAGS = $(WEFT_UNIT_CFLAGS)
tests_unit_test_shm_LDADD = $(CMOCKA_LIBS) $(WEFT_SHM_LIBADD) -lpthread
