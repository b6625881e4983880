# The collectives conformance suite (tests/mp/conf.c): every collective
# against a serial reference, on many communicators, under every forced
# algorithm. The conf-*.mp specs of CONF_TESTS run in make check (about
# 90 s on two cores); CONF_LONG_TESTS, the longer sweeps, run with
# `make check-conf-long`. conf-algos.sh fails when core/coll_select.c has
# an algorithm that no spec forces.
check_PROGRAMS += tests/mp/conf
tests_mp_conf_SOURCES = $(MPTEST_SOURCES) tests/mp/conf.h tests/mp/conf.c \
	tests/mp/conf_data.c tests/mp/conf_ref.c tests/mp/conf_buffers.c \
	tests/mp/conf_reduce.c tests/mp/conf_move.c tests/mp/conf_axis.c \
	tests/mp/conf_illegal.c tests/mp/conf_comms.c tests/mp/conf_overlap.c
tests_mp_conf_LDADD = libweft.la -lm

CONF_TESTS = \
	tests/mp/conf-1.mp tests/mp/conf-2.mp tests/mp/conf-3.mp tests/mp/conf-4.mp \
	tests/mp/conf-5.mp tests/mp/conf-7.mp tests/mp/conf-8.mp

CONF_LONG_TESTS =

TESTS += $(CONF_TESTS)
EXTRA_DIST += $(CONF_TESTS) $(CONF_LONG_TESTS)
