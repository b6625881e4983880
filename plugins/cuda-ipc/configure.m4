dnl SPDX-License-Identifier: BSD-3-Clause
dnl The cuda-ipc transport needs the CUDA toolkit's headers (cuda.h,
dnl cudaTypedefs.h), which configure.ac's --with-cuda finds, and nothing
dnl else at build time: it opens the driver, libcuda, at run time, so the
dnl plugin loads, and says why it does not apply, on machines without one.
AC_DEFUN([WEFT_TRANSPORT_CUDA_IPC_CONFIGURE], [
  weft_cuda_ipc_happy=no
  weft_cuda_ipc_why=$weft_cuda_why
  AS_IF([test "x$weft_cuda_happy" = xyes],
        [weft_cuda_ipc_happy=yes
         weft_cuda_ipc_why="device memory services; device buffers are staged through host memory (no direct GPU-to-GPU copies yet)"])
  AM_CONDITIONAL([WEFT_BUILD_CUDA_IPC], [test "x$weft_cuda_ipc_happy" = xyes])
])
