dnl SPDX-License-Identifier: BSD-3-Clause
dnl The sockets transport needs nothing beyond libc and epoll, which the
dnl top-level configure already requires.
AC_DEFUN([WEFT_TRANSPORT_SOCKETS_CONFIGURE], [
  weft_sockets_happy=yes
  weft_sockets_why="TCP over any IP network (always available)"
  AM_CONDITIONAL([WEFT_BUILD_SOCKETS], [test "x$weft_sockets_happy" = xyes])
])
