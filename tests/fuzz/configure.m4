dnl SPDX-License-Identifier: BSD-3-Clause
dnl The fuzzing of make check-long (tests/fuzz) needs a clang that links
dnl libFuzzer with AddressSanitizer and UndefinedBehaviorSanitizer: on
dnl Debian the packages clang and libclang-rt-14-dev. Sets WEFT_FUZZ_CC
dnl (empty when there is none) and WEFT_FUZZ_WHY, which check-long prints
dnl when it skips. The test links a harness of its own: a compiler that
dnl takes -fsanitize=fuzzer but lacks the runtime fails only at the link.
AC_DEFUN([WEFT_FUZZ_CONFIGURE], [
  AC_ARG_VAR([WEFT_FUZZ_CC], [clang for the libFuzzer harnesses of make check-long
                              (default: the first of clang, clang-14 to clang-19 that works)])
  weft_fuzz_happy=no
  AS_IF([test -z "$WEFT_FUZZ_CC"],
        [AC_CHECK_PROGS([WEFT_FUZZ_CC],
                        [clang clang-14 clang-15 clang-16 clang-17 clang-18 clang-19])])
  AS_IF([test -z "$WEFT_FUZZ_CC"],
    [WEFT_FUZZ_WHY="no clang found (apt-get install clang libclang-rt-14-dev)"],
    [AC_MSG_CHECKING([whether $WEFT_FUZZ_CC links libFuzzer with ASan and UBSan])
     weft_fuzz_save_CC=$CC; weft_fuzz_save_CFLAGS=$CFLAGS
     weft_fuzz_save_LDFLAGS=$LDFLAGS; weft_fuzz_save_LIBS=$LIBS
     CC=$WEFT_FUZZ_CC; CFLAGS="-fsanitize=fuzzer,address,undefined"; LDFLAGS=; LIBS=
     AC_LANG_PUSH([C])
     AC_LINK_IFELSE([AC_LANG_SOURCE([[
#include <stddef.h>
#include <stdint.h>
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    return size > 0 && data[0] == 'w';
}
]])],
       [weft_fuzz_happy=yes; WEFT_FUZZ_WHY="libFuzzer harnesses built by $WEFT_FUZZ_CC"],
       [WEFT_FUZZ_WHY="$WEFT_FUZZ_CC cannot link -fsanitize=fuzzer,address,undefined (apt-get install libclang-rt-14-dev)"])
     AC_LANG_POP([C])
     CC=$weft_fuzz_save_CC; CFLAGS=$weft_fuzz_save_CFLAGS
     LDFLAGS=$weft_fuzz_save_LDFLAGS; LIBS=$weft_fuzz_save_LIBS
     AC_MSG_RESULT([$weft_fuzz_happy])])
  AS_IF([test "x$weft_fuzz_happy" != xyes], [WEFT_FUZZ_CC=])
  AC_SUBST([WEFT_FUZZ_CC])
  AC_SUBST([WEFT_FUZZ_WHY])
])
