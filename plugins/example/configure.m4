dnl SPDX-License-Identifier: BSD-3-Clause
dnl The example transport is a template for plugin authors; it is built (so
dnl it keeps compiling) but not installed.
AC_DEFUN([WEFT_TRANSPORT_EXAMPLE_CONFIGURE], [
  weft_example_happy=yes
  weft_example_why="in-tree template for plugin authors (not installed)"
  AM_CONDITIONAL([WEFT_BUILD_EXAMPLE], [test "x$weft_example_happy" = xyes])
])
