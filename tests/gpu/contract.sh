#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# contract.sh: the CUDA driver contract test (tests/gpu/contract.c) on the
# CUDA test double. Its lines, less the "info " lines and the "driver:"
# line, must be tests/gpu/contract.expected's, and it must exit 0 (every
# checked result as the driver API reference says). Skipped where
# configure found no CUDA headers: then neither it nor the double is
# built. tests/gpu/run.sh runs the same program on a real driver.
set -u
top=${abs_top_builddir:?}
src=${abs_top_srcdir:?}
prog=$top/tests/gpu/cuda_contract
double=$top/tests/fakecuda/.libs/libfakecuda.so
expected=$src/tests/gpu/contract.expected

[ -x "$prog" ] || { echo "SKIP: $prog is not built (no CUDA headers)"; exit 77; }
[ -e "$double" ] || { echo "SKIP: the CUDA test double is not built ($double missing)"; exit 77; }
tmp=$(mktemp -d) || exit 99
trap 'rm -rf "$tmp"' EXIT
# The double as the reference describes a device: no injected faults,
# delays or device counts from the caller's environment.
unset WEFT_FAKECUDA_FAULTS WEFT_FAKECUDA_DELAY_US WEFT_FAKECUDA_DEVICES

"$prog" "$double" >"$tmp/out" 2>"$tmp/err"
rc=$?
cat "$tmp/out"
cat "$tmp/err" >&2
fail=0
if [ "$(head -n 1 "$tmp/out")" != "driver: test-double" ]; then
    echo "FAIL: $double was not seen as the test double"
    fail=1
fi
grep -v -e '^info ' -e '^driver: ' "$tmp/out" >"$tmp/got"
grep -v '^#' "$expected" >"$tmp/want"
if ! diff -u "$tmp/want" "$tmp/got" >"$tmp/diff"; then
    echo "FAIL: the double's lines differ from $expected (- expected, + the double):"
    cat "$tmp/diff"
    fail=1
fi
if [ "$rc" -ne 0 ]; then
    echo "FAIL: cuda_contract exited $rc (1: a result the reference does not give; 2: it could not finish)"
    fail=1
fi
[ "$fail" -eq 0 ] || exit 1
echo "PASS: the test double gives the $(wc -l <"$tmp/want") results contract.expected lists"
