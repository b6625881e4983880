# SPDX-License-Identifier: BSD-3-Clause
# unit tests of the cuda-ipc transport, linked against the plugin's
# convenience library and run against weft's CUDA test double
# (tests/fakecuda), which they load as the plugin does, through
# WEFT_CUDA_DRIVER; the toolkit's stub libcuda checks a refusal.
if WEFT_BUILD_CUDA_IPC
WEFT_UNIT_TESTS += tests/unit/test_cuda_ipc
tests_unit_test_cuda_ipc_SOURCES = tests/unit/test_cuda_ipc.c tests/unit/cipc_test.c \
	tests/unit/cipc_test.h
tests_unit_test_cuda_ipc_CPPFLAGS = $(WEFT_UNIT_CPPFLAGS) $(CUDA_CFLAGS) \
	-DWEFT_TEST_CUDA_STUB='"$(WEFT_CUDA_DIR)/lib64/stubs/libcuda.so"'
tests_unit_test_cuda_ipc_CFLAGS = $(WEFT_UNIT_CFLAGS)
tests_unit_test_cuda_ipc_LDADD = plugins/cuda-ipc/libcudaipc.la \
	plugins/cuda-common/libcudadrv.la $(CMOCKA_LIBS)
EXTRA_tests_unit_test_cuda_ipc_DEPENDENCIES = tests/fakecuda/libfakecuda.la
endif

# Its GPU reductions, compared with the host kernels (linked from the
# core) by tests/gpu/kcheck.c, which tests/gpu/kernels_check shares.
if WEFT_BUILD_CUDA_IPC
WEFT_UNIT_TESTS += tests/unit/test_cuda_ipc_reduce
tests_unit_test_cuda_ipc_reduce_SOURCES = tests/unit/test_cuda_ipc_reduce.c \
	tests/unit/cipc_test.c tests/unit/cipc_test.h tests/gpu/kcheck.c tests/gpu/kcheck.h
tests_unit_test_cuda_ipc_reduce_CPPFLAGS = $(WEFT_UNIT_CPPFLAGS) $(CUDA_CFLAGS)
tests_unit_test_cuda_ipc_reduce_CFLAGS = $(WEFT_UNIT_CFLAGS)
tests_unit_test_cuda_ipc_reduce_LDADD = plugins/cuda-ipc/libcudaipc.la \
	plugins/cuda-common/libcudadrv.la $(WEFT_UNIT_LIBS)
EXTRA_tests_unit_test_cuda_ipc_reduce_DEPENDENCIES = tests/fakecuda/libfakecuda.la
endif

# The GPU kernels' source itself, compiled for the host (nvcc -x c++ with
# its own host compiler: configure asks for no C++ compiler), against the
# host kernels; built where nvcc is.
EXTRA_DIST += tests/unit/reduce_cu_host.cc
if WEFT_BUILD_CUDA_IPC
if WEFT_HAVE_NVCC
WEFT_UNIT_TESTS += tests/unit/test_reduce_cu
tests_unit_test_reduce_cu_SOURCES = tests/unit/test_reduce_cu.c
tests_unit_test_reduce_cu_CPPFLAGS = $(WEFT_UNIT_CPPFLAGS)
tests_unit_test_reduce_cu_CFLAGS = $(WEFT_UNIT_CFLAGS)
tests_unit_test_reduce_cu_LDADD = tests/unit/reduce_cu_host.$(OBJEXT) $(WEFT_UNIT_LIBS)
CLEANFILES += tests/unit/reduce_cu_host.$(OBJEXT)
tests/unit/reduce_cu_host.$(OBJEXT): $(srcdir)/tests/unit/reduce_cu_host.cc \
		$(srcdir)/plugins/cuda-ipc/kernels/reduce.cu $(top_srcdir)/include/weft.h
	@$(MKDIR_P) tests/unit
	$(AM_V_GEN)$(NVCC) -x c++ -c -O2 -std=c++17 -Xcompiler -fPIC,-fno-exceptions,-fno-rtti \
		-I$(top_srcdir) -I$(top_srcdir)/include -I$(top_builddir)/include \
		-o $@ $(srcdir)/tests/unit/reduce_cu_host.cc
endif
endif
