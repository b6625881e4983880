dnl SPDX-License-Identifier: BSD-3-Clause
dnl The shm transport needs POSIX shared memory (shm_open, in librt before
dnl glibc 2.34) and process_vm_readv for its single-copy path.
AC_DEFUN([WEFT_TRANSPORT_SHM_CONFIGURE], [
  weft_shm_happy=yes
  weft_shm_why="shared memory between ranks of a node"
  WEFT_SHM_LIBS=
  weft_shm_save_LIBS=$LIBS
  AC_SEARCH_LIBS([shm_open], [rt], [],
                 [weft_shm_happy=no; weft_shm_why="shm_open not found"])
  AS_IF([test "x$ac_cv_search_shm_open" != "xnone required" &&
         test "x$ac_cv_search_shm_open" != xno],
        [WEFT_SHM_LIBS=$ac_cv_search_shm_open])
  LIBS=$weft_shm_save_LIBS
  AC_CHECK_FUNC([process_vm_readv], [],
                [weft_shm_happy=no; weft_shm_why="process_vm_readv not found"])
  AC_SUBST([WEFT_SHM_LIBS])
  AM_CONDITIONAL([WEFT_BUILD_SHM], [test "x$weft_shm_happy" = xyes])
])
