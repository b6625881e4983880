# SPDX-License-Identifier: BSD-3-Clause
# unit tests of the ib-verbs transport, one program per module, linked
# against the plugin's convenience library: what needs no RDMA device
# (WEFT_IB_HCA, GID choice, port order and rails, QP attributes,
# parameters, the registration cache, the completion decoder), and what
# runs against a fake libibverbs (ibv_fake.c, built in one variant per
# kind of library the loader must take or refuse).
if WEFT_BUILD_IB_VERBS
WEFT_IBV_UNIT_TESTS = tests/unit/test_ibv_gid tests/unit/test_ibv_hca \
	tests/unit/test_ibv_init tests/unit/test_ibv_loop tests/unit/test_ibv_param \
	tests/unit/test_ibv_port \
	tests/unit/test_ibv_qp tests/unit/test_ibv_rcache tests/unit/test_ibv_sym \
	tests/unit/test_ibv_wc
WEFT_UNIT_TESTS += $(WEFT_IBV_UNIT_TESTS)
WEFT_IBV_UNIT_CPPFLAGS = $(WEFT_UNIT_CPPFLAGS) $(VERBS_CFLAGS)
WEFT_IBV_UNIT_LDADD = plugins/ib-verbs/libibv.la plugins/common/libtp_common.la $(CMOCKA_LIBS)
tests_unit_test_ibv_gid_SOURCES = tests/unit/test_ibv_gid.c
tests_unit_test_ibv_gid_CPPFLAGS = $(WEFT_IBV_UNIT_CPPFLAGS)
tests_unit_test_ibv_gid_CFLAGS = $(WEFT_UNIT_CFLAGS)
tests_unit_test_ibv_gid_LDADD = $(WEFT_IBV_UNIT_LDADD)
tests_unit_test_ibv_hca_SOURCES = tests/unit/test_ibv_hca.c
tests_unit_test_ibv_hca_CPPFLAGS = $(WEFT_IBV_UNIT_CPPFLAGS)
tests_unit_test_ibv_hca_CFLAGS = $(WEFT_UNIT_CFLAGS)
tests_unit_test_ibv_hca_LDADD = $(WEFT_IBV_UNIT_LDADD)
tests_unit_test_ibv_param_SOURCES = tests/unit/test_ibv_param.c
tests_unit_test_ibv_param_CPPFLAGS = $(WEFT_IBV_UNIT_CPPFLAGS)
tests_unit_test_ibv_param_CFLAGS = $(WEFT_UNIT_CFLAGS)
tests_unit_test_ibv_param_LDADD = $(WEFT_IBV_UNIT_LDADD)
tests_unit_test_ibv_port_SOURCES = tests/unit/test_ibv_port.c
tests_unit_test_ibv_port_CPPFLAGS = $(WEFT_IBV_UNIT_CPPFLAGS)
tests_unit_test_ibv_port_CFLAGS = $(WEFT_UNIT_CFLAGS)
tests_unit_test_ibv_port_LDADD = $(WEFT_IBV_UNIT_LDADD)
tests_unit_test_ibv_qp_SOURCES = tests/unit/test_ibv_qp.c
tests_unit_test_ibv_qp_CPPFLAGS = $(WEFT_IBV_UNIT_CPPFLAGS)
tests_unit_test_ibv_qp_CFLAGS = $(WEFT_UNIT_CFLAGS)
tests_unit_test_ibv_qp_LDADD = $(WEFT_IBV_UNIT_LDADD)
tests_unit_test_ibv_rcache_SOURCES = tests/unit/test_ibv_rcache.c
tests_unit_test_ibv_rcache_CPPFLAGS = $(WEFT_IBV_UNIT_CPPFLAGS)
tests_unit_test_ibv_rcache_CFLAGS = $(WEFT_UNIT_CFLAGS)
tests_unit_test_ibv_rcache_LDADD = $(WEFT_IBV_UNIT_LDADD)
tests_unit_test_ibv_wc_SOURCES = tests/unit/test_ibv_wc.c
tests_unit_test_ibv_wc_CPPFLAGS = $(WEFT_IBV_UNIT_CPPFLAGS)
tests_unit_test_ibv_wc_CFLAGS = $(WEFT_UNIT_CFLAGS)
tests_unit_test_ibv_wc_LDADD = $(WEFT_IBV_UNIT_LDADD)
tests_unit_test_ibv_sym_SOURCES = tests/unit/test_ibv_sym.c
tests_unit_test_ibv_sym_CPPFLAGS = $(WEFT_IBV_UNIT_CPPFLAGS)
tests_unit_test_ibv_sym_CFLAGS = $(WEFT_UNIT_CFLAGS)
tests_unit_test_ibv_sym_LDADD = $(WEFT_IBV_UNIT_LDADD)
EXTRA_tests_unit_test_ibv_sym_DEPENDENCIES = $(WEFT_IBV_FAKES)
tests_unit_test_ibv_init_SOURCES = tests/unit/test_ibv_init.c
tests_unit_test_ibv_init_CPPFLAGS = $(WEFT_IBV_UNIT_CPPFLAGS)
tests_unit_test_ibv_init_CFLAGS = $(WEFT_UNIT_CFLAGS)
tests_unit_test_ibv_init_LDADD = $(WEFT_IBV_UNIT_LDADD)
EXTRA_tests_unit_test_ibv_init_DEPENDENCIES = $(WEFT_IBV_FAKES)
tests_unit_test_ibv_loop_SOURCES = tests/unit/test_ibv_loop.c tests/unit/oob_store.c \
	tests/unit/oob_store.h
tests_unit_test_ibv_loop_CPPFLAGS = $(WEFT_IBV_UNIT_CPPFLAGS)
tests_unit_test_ibv_loop_CFLAGS = $(WEFT_UNIT_CFLAGS)
tests_unit_test_ibv_loop_LDADD = $(WEFT_IBV_UNIT_LDADD)
EXTRA_tests_unit_test_ibv_loop_DEPENDENCIES = $(WEFT_IBV_FAKES)

# The fake libibverbs: -rpath makes libtool build shared modules that are
# never installed.
WEFT_IBV_FAKES = tests/unit/fakeverbs.la tests/unit/fakeverbs-old.la \
	tests/unit/fakeverbs-nover.la tests/unit/fakeverbs-noqp.la \
	tests/unit/fakeverbs-oldabi.la
check_LTLIBRARIES += $(WEFT_IBV_FAKES)
WEFT_IBV_FAKE_CPPFLAGS = $(AM_CPPFLAGS) $(VERBS_CFLAGS)
WEFT_IBV_FAKE_MODULE = -module -avoid-version -shared -rpath /nowhere
WEFT_IBV_FAKE_MAP = -Wl,--version-script=$(srcdir)/tests/unit/ibv_fake.map
tests_unit_fakeverbs_la_SOURCES = tests/unit/ibv_fake.c
tests_unit_fakeverbs_la_CPPFLAGS = $(WEFT_IBV_FAKE_CPPFLAGS)
tests_unit_fakeverbs_la_LDFLAGS = $(WEFT_IBV_FAKE_MODULE) $(WEFT_IBV_FAKE_MAP)
tests_unit_fakeverbs_old_la_SOURCES = tests/unit/ibv_fake.c
tests_unit_fakeverbs_old_la_CPPFLAGS = $(WEFT_IBV_FAKE_CPPFLAGS) -DFAKE_OLD
tests_unit_fakeverbs_old_la_LDFLAGS = $(WEFT_IBV_FAKE_MODULE) $(WEFT_IBV_FAKE_MAP)
tests_unit_fakeverbs_nover_la_SOURCES = tests/unit/ibv_fake.c
tests_unit_fakeverbs_nover_la_CPPFLAGS = $(WEFT_IBV_FAKE_CPPFLAGS)
tests_unit_fakeverbs_nover_la_LDFLAGS = $(WEFT_IBV_FAKE_MODULE)
tests_unit_fakeverbs_noqp_la_SOURCES = tests/unit/ibv_fake.c
tests_unit_fakeverbs_noqp_la_CPPFLAGS = $(WEFT_IBV_FAKE_CPPFLAGS) -DFAKE_NO_CREATE_QP
tests_unit_fakeverbs_noqp_la_LDFLAGS = $(WEFT_IBV_FAKE_MODULE) $(WEFT_IBV_FAKE_MAP)
tests_unit_fakeverbs_oldabi_la_SOURCES = tests/unit/ibv_fake.c
tests_unit_fakeverbs_oldabi_la_CPPFLAGS = $(WEFT_IBV_FAKE_CPPFLAGS)
tests_unit_fakeverbs_oldabi_la_LDFLAGS = $(WEFT_IBV_FAKE_MODULE) \
	-Wl,--version-script=$(srcdir)/tests/unit/ibv_fake_oldabi.map
endif
EXTRA_DIST += tests/unit/ibv_fake.map tests/unit/ibv_fake_oldabi.map

# GPU memory on the two test doubles: the software RDMA device and the
# CUDA test double, which the transport opens at run time.
if WEFT_BUILD_IB_VERBS
if WEFT_HAVE_CUDA
if WEFT_HAVE_VERBS
WEFT_UNIT_TESTS += tests/unit/test_ibv_gdr
tests_unit_test_ibv_gdr_SOURCES = tests/unit/test_ibv_gdr.c tests/unit/oob_store.c \
	tests/unit/oob_store.h
tests_unit_test_ibv_gdr_CPPFLAGS = $(WEFT_IBV_UNIT_CPPFLAGS) $(CUDA_CFLAGS)
tests_unit_test_ibv_gdr_CFLAGS = $(WEFT_UNIT_CFLAGS)
tests_unit_test_ibv_gdr_LDADD = $(WEFT_IBV_UNIT_LDADD)
EXTRA_tests_unit_test_ibv_gdr_DEPENDENCIES = tests/swrdma/libibverbs.la \
	tests/swrdma/no-1.12/libibverbs.la tests/fakecuda/libfakecuda.la
endif
endif
endif
