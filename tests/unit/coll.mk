# SPDX-License-Identifier: BSD-3-Clause
# unit tests of the collective engine's choices (WEFT_ALGO)
WEFT_UNIT_TESTS += tests/unit/test_coll_select
tests_unit_test_coll_select_SOURCES = tests/unit/test_coll_select.c tests/unit/fake_comm.h
tests_unit_test_coll_select_CPPFLAGS = $(WEFT_UNIT_CPPFLAGS)
tests_unit_test_coll_select_CFLAGS = $(WEFT_UNIT_CFLAGS)
tests_unit_test_coll_select_LDADD = $(WEFT_UNIT_LIBS)

# the double binary tree's shape at every size up to 70 ranks
WEFT_UNIT_TESTS += tests/unit/test_coll_trees
tests_unit_test_coll_trees_SOURCES = tests/unit/test_coll_trees.c
tests_unit_test_coll_trees_CPPFLAGS = $(WEFT_UNIT_CPPFLAGS)
tests_unit_test_coll_trees_CFLAGS = $(WEFT_UNIT_CFLAGS)
tests_unit_test_coll_trees_LDADD = $(WEFT_UNIT_LIBS)
