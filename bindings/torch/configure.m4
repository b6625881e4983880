dnl SPDX-License-Identifier: BSD-3-Clause
dnl torch.distributed backend: found where a Python with torch, its C++
dnl headers (libtorch-dev) and pybind11 (pybind11-dev) are. Sets
dnl weft_torch_happy and weft_torch_why, and substitutes what the build
dnl needs; the pybind11 ABI and C++ ABI flags come from torch itself, as
dnl they must match the ones torch was built with.
AC_DEFUN([WEFT_TORCH_CONFIGURE], [
  AC_ARG_WITH([torch],
    [AS_HELP_STRING([--with-torch@<:@=PYTHON@:>@],
                    [build the torch.distributed backend for PYTHON (default: probe /usr/bin/python3, then python3)])],
    [], [with_torch=check])
  AC_ARG_WITH([torch-pythondir],
    [AS_HELP_STRING([--with-torch-pythondir=DIR],
                    [install the torch_weft module under DIR (default: /usr/lib/python3/dist-packages for prefix /usr, else PREFIX/lib/pythonX.Y/dist-packages)])],
    [], [with_torch_pythondir=])
  weft_torch_happy=no
  weft_torch_why="disabled by --without-torch"
  AS_IF([test "x$with_torch" != xno && test "x$enable_sanitizers" != xno],
        [weft_torch_why="not in sanitizer builds (libtorch is not instrumented)"
         AS_IF([test "x$with_torch" != xcheck],
               [AC_MSG_ERROR([--with-torch cannot be combined with --enable-sanitizers])])
         with_torch=no])
  AS_IF([test "x$with_torch" != xno],
    [AS_CASE([$with_torch],
       [yes|check], [AS_IF([test -x /usr/bin/python3], [TORCH_PYTHON=/usr/bin/python3],
                           [AC_PATH_PROG([TORCH_PYTHON], [python3])])],
       [TORCH_PYTHON=$with_torch])
     AC_MSG_CHECKING([for torch.distributed in $TORCH_PYTHON])
     weft_torch_probe=`$TORCH_PYTHON -c '
import sysconfig, torch, torch.distributed as d
assert d.is_available()
c = torch._C
print(torch.__version__, int(c._GLIBCXX_USE_CXX11_ABI), c._PYBIND11_COMPILER_TYPE,
      c._PYBIND11_STDLIB, c._PYBIND11_BUILD_ABI, sysconfig.get_config_var("EXT_SUFFIX"),
      sysconfig.get_paths()[["include"]], "%d.%d" % __import__("sys").version_info[[:2]])
' 2>/dev/null`
     AS_IF([test -n "$weft_torch_probe"],
       [set dummy $weft_torch_probe; shift
        TORCH_VERSION=$[1]; weft_torch_abi=$[2]; weft_torch_compiler=$[3]
        weft_torch_stdlib=$[4]; weft_torch_build_abi=$[5]; TORCH_EXT_SUFFIX=$[6]
        weft_torch_pyinc=$[7]; TORCH_PYTHON_VERSION=$[8]
        AC_MSG_RESULT([torch $TORCH_VERSION])
        TORCH_CPPFLAGS="-I/usr/include/torch/csrc/api/include -I$weft_torch_pyinc"
        TORCH_CXXFLAGS="-std=c++17 -D_GLIBCXX_USE_CXX11_ABI=$weft_torch_abi -DTORCH_EXTENSION_NAME=_C -DTORCH_API_INCLUDE_EXTENSION_H -DPYBIND11_COMPILER_TYPE=\\\"$weft_torch_compiler\\\" -DPYBIND11_STDLIB=\\\"$weft_torch_stdlib\\\" -DPYBIND11_BUILD_ABI=\\\"$weft_torch_build_abi\\\""
        AC_LANG_PUSH([C++])
        weft_save_CPPFLAGS=$CPPFLAGS; CPPFLAGS="$CPPFLAGS $TORCH_CPPFLAGS"
        weft_save_CXXFLAGS=$CXXFLAGS; CXXFLAGS="$CXXFLAGS -std=c++17"
        AC_CHECK_HEADER([pybind11/pybind11.h],
          [AC_CHECK_HEADER([torch/csrc/distributed/c10d/ProcessGroup.hpp], [weft_torch_happy=yes],
             [weft_torch_why="torch's C++ headers not found (apt-get install libtorch-dev)"])],
          [weft_torch_why="pybind11 not found (apt-get install pybind11-dev python3-dev)"])
        CPPFLAGS=$weft_save_CPPFLAGS; CXXFLAGS=$weft_save_CXXFLAGS
        AC_LANG_POP([C++])],
       [AC_MSG_RESULT([no])
        weft_torch_why="no torch.distributed in $TORCH_PYTHON (apt-get install python3-torch)"])
     AS_IF([test "x$weft_torch_happy" = xno && test "x$with_torch" != xcheck],
           [AC_MSG_ERROR([--with-torch given but $weft_torch_why])])])
  AS_IF([test "x$weft_torch_happy" = xyes],
    [TORCH_LIBS="-ltorch_python -ltorch -ltorch_cpu -lc10"
     AS_IF([test -n "$with_torch_pythondir"], [TORCH_PYTHONDIR=$with_torch_pythondir],
           [test "x$prefix" = x/usr], [TORCH_PYTHONDIR=/usr/lib/python3/dist-packages],
           [TORCH_PYTHONDIR='${prefix}'/lib/python$TORCH_PYTHON_VERSION/dist-packages])
     weft_torch_why="torch $TORCH_VERSION; module torch_weft into $TORCH_PYTHONDIR"])
  AC_SUBST([TORCH_PYTHON])
  AC_SUBST([TORCH_CPPFLAGS])
  AC_SUBST([TORCH_CXXFLAGS])
  AC_SUBST([TORCH_LIBS])
  AC_SUBST([TORCH_EXT_SUFFIX])
  AC_SUBST([TORCH_PYTHONDIR])
  AM_CONDITIONAL([WEFT_HAVE_TORCH], [test "x$weft_torch_happy" = xyes])
])
