# SPDX-License-Identifier: BSD-3-Clause
# unit tests of plugins/cuda-common, one program per module, linked
# against its convenience library: loading (against a small fake libcuda,
# cudrv_fake.c, built in one variant per kind of library the loader must
# take or refuse, and against the toolkit's real stub library), opening
# with its refusals, the device inventory, buffer classification and the
# IPC caches.
# The fake is for the loader only; the CUDA test double lives elsewhere.
if WEFT_HAVE_CUDA
WEFT_CUDRV_UNIT_TESTS = tests/unit/test_cudrv_sym tests/unit/test_cudrv_open \
	tests/unit/test_cudrv_dev tests/unit/test_cudrv_ptr tests/unit/test_cudrv_fakecuda \
	tests/unit/test_cudrv_ipc tests/unit/test_cudrv_fds
WEFT_UNIT_TESTS += $(WEFT_CUDRV_UNIT_TESTS)
WEFT_CUDRV_UNIT_CPPFLAGS = $(WEFT_UNIT_CPPFLAGS) $(CUDA_CFLAGS) \
	-DWEFT_TEST_CUDA_STUB='"$(WEFT_CUDA_DIR)/lib64/stubs/libcuda.so"'
WEFT_CUDRV_UNIT_LDADD = plugins/cuda-common/libcudadrv.la $(CMOCKA_LIBS)
tests_unit_test_cudrv_sym_SOURCES = tests/unit/test_cudrv_sym.c
tests_unit_test_cudrv_sym_CPPFLAGS = $(WEFT_CUDRV_UNIT_CPPFLAGS)
tests_unit_test_cudrv_sym_CFLAGS = $(WEFT_UNIT_CFLAGS)
tests_unit_test_cudrv_sym_LDADD = $(WEFT_CUDRV_UNIT_LDADD)
EXTRA_tests_unit_test_cudrv_sym_DEPENDENCIES = $(WEFT_CUDRV_FAKES)
tests_unit_test_cudrv_open_SOURCES = tests/unit/test_cudrv_open.c
tests_unit_test_cudrv_open_CPPFLAGS = $(WEFT_CUDRV_UNIT_CPPFLAGS)
tests_unit_test_cudrv_open_CFLAGS = $(WEFT_UNIT_CFLAGS)
tests_unit_test_cudrv_open_LDADD = $(WEFT_CUDRV_UNIT_LDADD)
EXTRA_tests_unit_test_cudrv_open_DEPENDENCIES = $(WEFT_CUDRV_FAKES)
tests_unit_test_cudrv_dev_SOURCES = tests/unit/test_cudrv_dev.c
tests_unit_test_cudrv_dev_CPPFLAGS = $(WEFT_CUDRV_UNIT_CPPFLAGS)
tests_unit_test_cudrv_dev_CFLAGS = $(WEFT_UNIT_CFLAGS)
tests_unit_test_cudrv_dev_LDADD = $(WEFT_CUDRV_UNIT_LDADD)
EXTRA_tests_unit_test_cudrv_dev_DEPENDENCIES = $(WEFT_CUDRV_FAKES)
tests_unit_test_cudrv_ptr_SOURCES = tests/unit/test_cudrv_ptr.c
tests_unit_test_cudrv_ptr_CPPFLAGS = $(WEFT_CUDRV_UNIT_CPPFLAGS)
tests_unit_test_cudrv_ptr_CFLAGS = $(WEFT_UNIT_CFLAGS)
tests_unit_test_cudrv_ptr_LDADD = $(WEFT_CUDRV_UNIT_LDADD)
EXTRA_tests_unit_test_cudrv_ptr_DEPENDENCIES = $(WEFT_CUDRV_FAKES)
# The IPC caches, with the driver's three IPC calls stood in for.
tests_unit_test_cudrv_ipc_SOURCES = tests/unit/test_cudrv_ipc.c
tests_unit_test_cudrv_ipc_CPPFLAGS = $(WEFT_CUDRV_UNIT_CPPFLAGS)
tests_unit_test_cudrv_ipc_CFLAGS = $(WEFT_UNIT_CFLAGS)
tests_unit_test_cudrv_ipc_LDADD = $(WEFT_CUDRV_UNIT_LDADD)
# The VMM descriptor server, against the CUDA test double.
tests_unit_test_cudrv_fds_SOURCES = tests/unit/test_cudrv_fds.c
tests_unit_test_cudrv_fds_CPPFLAGS = $(WEFT_CUDRV_UNIT_CPPFLAGS)
tests_unit_test_cudrv_fds_CFLAGS = $(WEFT_UNIT_CFLAGS)
tests_unit_test_cudrv_fds_LDADD = $(WEFT_CUDRV_UNIT_LDADD)
EXTRA_tests_unit_test_cudrv_fds_DEPENDENCIES = tests/fakecuda/libfakecuda.la
# The access helper against weft's CUDA test double (tests/fakecuda).
tests_unit_test_cudrv_fakecuda_SOURCES = tests/unit/test_cudrv_fakecuda.c
tests_unit_test_cudrv_fakecuda_CPPFLAGS = $(WEFT_CUDRV_UNIT_CPPFLAGS)
tests_unit_test_cudrv_fakecuda_CFLAGS = $(WEFT_UNIT_CFLAGS)
tests_unit_test_cudrv_fakecuda_LDADD = $(WEFT_CUDRV_UNIT_LDADD)
EXTRA_tests_unit_test_cudrv_fakecuda_DEPENDENCIES = tests/fakecuda/libfakecuda.la

# The fake libcuda: -rpath makes libtool build shared modules that are
# never installed.
WEFT_CUDRV_FAKES = tests/unit/fakecudrv.la tests/unit/fakecudrv-noopt.la \
	tests/unit/fakecudrv-noipc.la tests/unit/fakecudrv-marked.la \
	tests/unit/fakecudrv-nogpa2.la
check_LTLIBRARIES += $(WEFT_CUDRV_FAKES)
WEFT_CUDRV_FAKE_CPPFLAGS = $(AM_CPPFLAGS) $(CUDA_CFLAGS)
WEFT_CUDRV_FAKE_MODULE = -module -avoid-version -shared -rpath /nowhere
tests_unit_fakecudrv_la_SOURCES = tests/unit/cudrv_fake.c
tests_unit_fakecudrv_la_CPPFLAGS = $(WEFT_CUDRV_FAKE_CPPFLAGS)
tests_unit_fakecudrv_la_LDFLAGS = $(WEFT_CUDRV_FAKE_MODULE)
tests_unit_fakecudrv_noopt_la_SOURCES = tests/unit/cudrv_fake.c
tests_unit_fakecudrv_noopt_la_CPPFLAGS = $(WEFT_CUDRV_FAKE_CPPFLAGS) -DFAKE_NO_OPTIONAL
tests_unit_fakecudrv_noopt_la_LDFLAGS = $(WEFT_CUDRV_FAKE_MODULE)
tests_unit_fakecudrv_noipc_la_SOURCES = tests/unit/cudrv_fake.c
tests_unit_fakecudrv_noipc_la_CPPFLAGS = $(WEFT_CUDRV_FAKE_CPPFLAGS) -DFAKE_NO_IPC
tests_unit_fakecudrv_noipc_la_LDFLAGS = $(WEFT_CUDRV_FAKE_MODULE)
tests_unit_fakecudrv_marked_la_SOURCES = tests/unit/cudrv_fake.c
tests_unit_fakecudrv_marked_la_CPPFLAGS = $(WEFT_CUDRV_FAKE_CPPFLAGS) -DFAKE_MARKED
tests_unit_fakecudrv_marked_la_LDFLAGS = $(WEFT_CUDRV_FAKE_MODULE)
tests_unit_fakecudrv_nogpa2_la_SOURCES = tests/unit/cudrv_fake.c
tests_unit_fakecudrv_nogpa2_la_CPPFLAGS = $(WEFT_CUDRV_FAKE_CPPFLAGS) -DFAKE_NO_GPA2
tests_unit_fakecudrv_nogpa2_la_LDFLAGS = $(WEFT_CUDRV_FAKE_MODULE)
endif
