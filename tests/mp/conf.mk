# SPDX-License-Identifier: BSD-3-Clause
# The collectives conformance suite (tests/mp/conf.c): every collective
# against a serial reference, on many communicators, under every forced
# algorithm. The conf-*.mp specs of CONF_TESTS run in make check (about
# 90 s on two cores); CONF_LONG_TESTS, the longer sweeps, run with
# `make check-conf-long`. conf-algos.sh fails when core/tune/select.c has
# an algorithm that no spec forces.
check_PROGRAMS += tests/mp/conf
tests_mp_conf_SOURCES = $(MPTEST_SOURCES) tests/mp/conf.h tests/mp/conf.c \
	tests/mp/conf_data.c tests/mp/conf_ref.c tests/mp/conf_buffers.c \
	tests/mp/conf_reduce.c tests/mp/conf_move.c tests/mp/conf_axis.c \
	tests/mp/conf_illegal.c tests/mp/conf_zero.c tests/mp/conf_comms.c tests/mp/conf_overlap.c
tests_mp_conf_LDADD = libweft.la -lm

# The default part: the full matrix at every rank count, every algorithm
# forced at 3, 4, 5 and 8 ranks (on the world; with 256 Ki counts at 5),
# simulated nodes, WEFT_CHECK=1, and 64 MiB+ allreduces.
CONF_ALGO_TESTS = \
	tests/mp/conf-algo-flat-3.mp tests/mp/conf-algo-flat-4.mp \
	tests/mp/conf-algo-flat-5.mp tests/mp/conf-algo-flat-8.mp \
	tests/mp/conf-algo-alt-3.mp tests/mp/conf-algo-alt-4.mp \
	tests/mp/conf-algo-alt-5.mp tests/mp/conf-algo-alt-8.mp \
	tests/mp/conf-algo-rab-3.mp tests/mp/conf-algo-rab-4.mp \
	tests/mp/conf-algo-rab-5.mp tests/mp/conf-algo-rab-8.mp \
	tests/mp/conf-algo-hier-3.mp tests/mp/conf-algo-hier-4.mp \
	tests/mp/conf-algo-hier-5.mp tests/mp/conf-algo-hier-8.mp \
	tests/mp/conf-algo-tree-3.mp tests/mp/conf-algo-tree-4.mp \
	tests/mp/conf-algo-tree-5.mp tests/mp/conf-algo-tree-8.mp \
	tests/mp/conf-algo-dbtree-3.mp tests/mp/conf-algo-dbtree-4.mp \
	tests/mp/conf-algo-dbtree-5.mp tests/mp/conf-algo-dbtree-8.mp \
	tests/mp/conf-algo-direct-3.mp tests/mp/conf-algo-direct-4.mp \
	tests/mp/conf-algo-direct-5.mp tests/mp/conf-algo-direct-8.mp \
	tests/mp/conf-algo-shared-3.mp tests/mp/conf-algo-shared-4.mp \
	tests/mp/conf-algo-shared-5.mp tests/mp/conf-algo-shared-8.mp \
	tests/mp/conf-algo-pipe-3.mp tests/mp/conf-algo-pipe-4.mp \
	tests/mp/conf-algo-pipe-5.mp tests/mp/conf-algo-pipe-8.mp \
	tests/mp/conf-algo-pipe-stream-2.mp tests/mp/conf-algo-pipe-stream-5.mp \
	tests/mp/conf-algo-flat-nodes-7.mp

CONF_TESTS = \
	tests/mp/conf-1.mp tests/mp/conf-2.mp tests/mp/conf-3.mp tests/mp/conf-4.mp \
	tests/mp/conf-5.mp tests/mp/conf-7.mp tests/mp/conf-8.mp \
	$(CONF_ALGO_TESTS) \
	tests/mp/conf-nodes-8.mp tests/mp/conf-check-4.mp tests/mp/conf-huge-2.mp \
	tests/mp/conf-algos.sh

# The long sweeps: every forced algorithm on every communicator with the
# full matrix and the 1 Mi subset at 3, 4, 5 and 8 ranks; every operation x
# dtype x operator at 1 Mi; every operation at 16 Mi (64 MiB and more);
# counts around the sizes where the automatic choice switches.
CONF_LONG_TESTS = \
	tests/mp/conf-long-flat-3.mp tests/mp/conf-long-flat-4.mp \
	tests/mp/conf-long-flat-5.mp tests/mp/conf-long-flat-8.mp \
	tests/mp/conf-long-alt-3.mp tests/mp/conf-long-alt-4.mp \
	tests/mp/conf-long-alt-5.mp tests/mp/conf-long-alt-8.mp \
	tests/mp/conf-long-rab-3.mp tests/mp/conf-long-rab-4.mp \
	tests/mp/conf-long-rab-5.mp tests/mp/conf-long-rab-8.mp \
	tests/mp/conf-long-hier-3.mp tests/mp/conf-long-hier-4.mp \
	tests/mp/conf-long-hier-5.mp tests/mp/conf-long-hier-8.mp \
	tests/mp/conf-long-tree-3.mp tests/mp/conf-long-tree-4.mp \
	tests/mp/conf-long-tree-5.mp tests/mp/conf-long-tree-8.mp \
	tests/mp/conf-long-dbtree-3.mp tests/mp/conf-long-dbtree-4.mp \
	tests/mp/conf-long-dbtree-5.mp tests/mp/conf-long-dbtree-8.mp \
	tests/mp/conf-long-direct-3.mp tests/mp/conf-long-direct-4.mp \
	tests/mp/conf-long-direct-5.mp tests/mp/conf-long-direct-8.mp \
	tests/mp/conf-long-shared-3.mp tests/mp/conf-long-shared-4.mp \
	tests/mp/conf-long-shared-5.mp tests/mp/conf-long-shared-8.mp \
	tests/mp/conf-long-pipe-3.mp tests/mp/conf-long-pipe-4.mp \
	tests/mp/conf-long-pipe-5.mp tests/mp/conf-long-pipe-8.mp \
	tests/mp/conf-long-bigall-3.mp tests/mp/conf-long-bigall-8.mp \
	tests/mp/conf-long-nodes-7.mp tests/mp/conf-long-huge-4.mp \
	tests/mp/conf-long-thresholds-5.mp

TESTS += $(CONF_TESTS)
EXTRA_DIST += $(CONF_TESTS) $(CONF_LONG_TESTS)

# The long sweeps, through the same test harness (logs in tests/mp/*.log).
check-conf-long: all
	$(MAKE) $(AM_MAKEFLAGS) check TESTS='$(CONF_LONG_TESTS)'

.PHONY: check-conf-long
