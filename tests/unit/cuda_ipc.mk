# SPDX-License-Identifier: BSD-3-Clause
# unit tests of the cuda-ipc transport, linked against the plugin's
# convenience library and run against weft's CUDA test double
# (tests/fakecuda), which they load as the plugin does, through
# WEFT_CUDA_DRIVER; the toolkit's stub libcuda checks a refusal.
if WEFT_BUILD_CUDA_IPC
WEFT_UNIT_TESTS += tests/unit/test_cuda_ipc
tests_unit_test_cuda_ipc_SOURCES = tests/unit/test_cuda_ipc.c
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
	tests/gpu/kcheck.c tests/gpu/kcheck.h
tests_unit_test_cuda_ipc_reduce_CPPFLAGS = $(WEFT_UNIT_CPPFLAGS) $(CUDA_CFLAGS)
tests_unit_test_cuda_ipc_reduce_CFLAGS = $(WEFT_UNIT_CFLAGS)
tests_unit_test_cuda_ipc_reduce_LDADD = plugins/cuda-ipc/libcudaipc.la \
	plugins/cuda-common/libcudadrv.la $(WEFT_UNIT_LIBS)
EXTRA_tests_unit_test_cuda_ipc_reduce_DEPENDENCIES = tests/fakecuda/libfakecuda.la
endif
