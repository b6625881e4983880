dnl SPDX-License-Identifier: BSD-3-Clause
dnl The ib-verbs transport needs rdma-core's headers, which configure.ac's
dnl --with-verbs finds, of rdma-core 35 or later (ibv_gid_entry,
dnl IBV_FORK_UNNEEDED, IBV_ACCESS_RELAXED_ORDERING). It never links
dnl libibverbs: it opens it at run time, so the plugin loads, and says why
dnl it does not apply, on machines without rdma-core.
AC_DEFUN([WEFT_TRANSPORT_IB_VERBS_CONFIGURE], [
  weft_ib_verbs_happy=no
  weft_ib_verbs_why=$weft_verbs_why
  AS_IF([test "x$weft_verbs_happy" = xyes], [
    weft_ib_verbs_save_CPPFLAGS=$CPPFLAGS
    CPPFLAGS="$CPPFLAGS $VERBS_CFLAGS"
    AC_MSG_CHECKING([whether infiniband/verbs.h is of rdma-core 35 or later])
    AC_COMPILE_IFELSE([AC_LANG_PROGRAM([[#include <infiniband/verbs.h>]],
        [[struct ibv_gid_entry e;
          enum ibv_fork_status s = IBV_FORK_UNNEEDED;
          (void)e; (void)s;
          return IBV_ACCESS_RELAXED_ORDERING;]])],
      [AC_MSG_RESULT([yes])
       weft_ib_verbs_happy=yes
       weft_ib_verbs_why="InfiniBand and RoCE; libibverbs is opened at run time"],
      [AC_MSG_RESULT([no])
       weft_ib_verbs_why="infiniband/verbs.h predates rdma-core 35 (no ibv_gid_entry or IBV_FORK_UNNEEDED)"])
    CPPFLAGS=$weft_ib_verbs_save_CPPFLAGS])
  AS_IF([test "x$weft_ib_verbs_happy" = xno && test "x$with_verbs" != xcheck &&
         test "x$with_verbs" != xno],
        [AC_MSG_ERROR([--with-verbs given but $weft_ib_verbs_why])])
  AM_CONDITIONAL([WEFT_BUILD_IB_VERBS], [test "x$weft_ib_verbs_happy" = xyes])
])
