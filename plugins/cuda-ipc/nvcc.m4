dnl SPDX-License-Identifier: BSD-3-Clause
dnl nvcc for the cuda-ipc plugin's reduction kernels (kernels/reduce.cu),
dnl built into a fatbin the plugin embeds. Optional: without nvcc the
dnl plugin builds with no kernels and device reductions stage through
dnl host memory.
dnl
dnl   --with-nvcc[=PATH]   unset: probe $CUDA_DIR/bin/nvcc (CUDA_DIR as
dnl                        --with-cuda found it), quietly off if missing
dnl                        or broken; yes or PATH: fail if it cannot build
dnl                        the kernels; no: off
dnl   --with-nvcc-gencode=LIST  the GPU code the fatbin holds
dnl                        (kernels/gencode.sh says what LIST may be)
dnl
dnl Sets NVCC, NVCC_GENCODE, NVCC_TARGETS (substituted), weft_nvcc_happy
dnl and weft_nvcc_why, WEFT_NVCC_WHY in config.h, and the WEFT_HAVE_NVCC
dnl conditional. Runs after --with-cuda (weft_cuda_happy, weft_cuda_dir).
AC_DEFUN([WEFT_CUDA_IPC_NVCC], [
  AC_ARG_WITH([nvcc],
    [AS_HELP_STRING([--with-nvcc@<:@=PATH@:>@],
      [nvcc to build the cuda-ipc plugin's reduction kernels (default: probe DIR/bin/nvcc, DIR the --with-cuda toolkit; without: device reductions stage through host memory)])],
    [], [with_nvcc=check])
  AC_ARG_WITH([nvcc-gencode],
    [AS_HELP_STRING([--with-nvcc-gencode=LIST],
      [GPU code in the kernels' fatbin, comma-separated: 90 or sm_90 (native code), compute_90 (PTX), ptx (PTX of the newest listed), default; or nvcc flags as they are when LIST starts with - (default: 75,80,86,89,90,100,120,ptx less what nvcc lacks)])],
    [], [with_nvcc_gencode=default])
  AC_ARG_VAR([NVCCFLAGS], [extra flags for nvcc (the kernels of the cuda-ipc plugin)])
  weft_nvcc_happy=no
  NVCC_GENCODE=
  NVCC_TARGETS=
  AS_CASE([$with_nvcc],
    [no], [weft_nvcc_why="disabled by --without-nvcc"],
    [yes|check], [NVCC=$weft_cuda_dir/bin/nvcc],
    [NVCC=$with_nvcc])
  AS_IF([test "x$with_nvcc" != xno && test "x$weft_cuda_happy" != xyes],
    [weft_nvcc_why="no CUDA headers, so no cuda-ipc plugin"
     AS_IF([test "x$with_nvcc" != xcheck],
           [AC_MSG_ERROR([--with-nvcc given but there is no cuda-ipc plugin to build kernels for ($weft_cuda_why)])])
     with_nvcc=no])
  AS_IF([test "x$with_nvcc" != xno],
    [AC_MSG_CHECKING([for nvcc])
     AS_IF([test -x "$NVCC"],
       [AC_MSG_RESULT([$NVCC])
        AC_MSG_CHECKING([the GPU code for --with-nvcc-gencode=$with_nvcc_gencode])
        AS_IF([weft_gencode=`$SHELL "$srcdir/plugins/cuda-ipc/kernels/gencode.sh" "$NVCC" "$with_nvcc_gencode" 2>conftest.err`],
          [NVCC_GENCODE=`echo "$weft_gencode" | sed -n 1p`
           NVCC_TARGETS=`echo "$weft_gencode" | sed -n 2p`
           weft_nvcc_dropped=`echo "$weft_gencode" | sed -n 3p`
           AC_MSG_RESULT([$NVCC_TARGETS])
           AS_IF([test -n "$weft_nvcc_dropped"],
                 [AC_MSG_NOTICE([$NVCC lacks $weft_nvcc_dropped: left out of the default list])])
           AC_MSG_CHECKING([whether nvcc builds a fatbin for them])
           cat >conftest.cu <<_WEFT_EOF
extern "C" __global__ void weft_conftest(int *p) { p[[threadIdx.x]] = 1; }
_WEFT_EOF
           AS_IF([$NVCC --fatbin $NVCC_GENCODE $NVCCFLAGS -o conftest.fatbin conftest.cu >conftest.err 2>&1],
             [AC_MSG_RESULT([yes])
              weft_nvcc_happy=yes
              weft_nvcc_version=`$NVCC --version | sed -n 's/.*release \([[0-9.]]*\).*/\1/p'`
              weft_nvcc_why="nvcc $weft_nvcc_version ($NVCC): $NVCC_TARGETS"],
             [AC_MSG_RESULT([no])
              weft_nvcc_why="$NVCC cannot build a fatbin: `head -n 1 conftest.err`"])
           rm -f conftest.cu conftest.fatbin],
          [AC_MSG_RESULT([no])
           weft_nvcc_why=`head -n 1 conftest.err`
           dnl a LIST given that is wrong is an error even where nvcc is probed
           AS_IF([test "x$with_nvcc_gencode" != xdefault], [AC_MSG_ERROR([$weft_nvcc_why])])])
        rm -f conftest.err],
       [AC_MSG_RESULT([no])
        weft_nvcc_why="no nvcc at $NVCC (--with-nvcc=PATH)"])
     AS_IF([test "x$weft_nvcc_happy" = xno && test "x$with_nvcc" != xcheck],
           [AC_MSG_ERROR([--with-nvcc given but $weft_nvcc_why])])])
  AS_IF([test "x$weft_nvcc_happy" = xno], [NVCC=])
  AC_DEFINE_UNQUOTED([WEFT_NVCC_WHY], ["$weft_nvcc_why"],
                     [why the cuda-ipc plugin has no GPU kernels, or what they were built for])
  AS_IF([test "x$weft_nvcc_happy" = xno && test "x$weft_cuda_happy" = xyes],
        [weft_nvcc_why="$weft_nvcc_why: device reductions stage through host memory"])
  AC_SUBST([NVCC])
  AC_SUBST([NVCC_GENCODE])
  AC_SUBST([NVCC_TARGETS])
  AM_CONDITIONAL([WEFT_HAVE_NVCC], [test "x$weft_nvcc_happy" = xyes])
])
