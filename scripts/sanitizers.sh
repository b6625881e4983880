#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# sanitizers.sh: builds weft twice more from a copy of this checkout, once
# with AddressSanitizer and UndefinedBehaviorSanitizer and once with
# ThreadSanitizer, and runs `make check-sanitized` in each (the tests it
# runs are listed in tests/sanitizers/Makefile.include). The copies live in
# _sanitize/ so the main tree's build is left alone.
#
#   scripts/sanitizers.sh [address] [thread]    (default: both)
#
# Each test's result is printed as it comes. Exit status: 0 when every run
# passed, 1 otherwise. A failing test's log is printed (the sanitizer's
# report is in it, or the stacks of a test stopped at its time limit).
set -eu

cd "$(dirname "$0")/.."
top=$(pwd)
kinds=${*:-address thread}
jobs=$(nproc 2>/dev/null || echo 2)


status=0
for kind in $kinds; do
    case $kind in
    address) flag=--enable-sanitizers ;;
    thread) flag=--enable-sanitizers=thread ;;
    *) echo "sanitizers.sh: unknown kind '$kind' (address or thread)" >&2; exit 2 ;;
    esac
    dir=$top/_sanitize/$kind
    start=$(date +%s)
    echo "sanitizers.sh: $kind: copying the sources to $dir"
    "$top/scripts/copy_sources.sh" "$dir"
    (
        cd "$dir"
        ./configure -q "$flag" >configure.out 2>&1 || { cat configure.out; exit 1; }
        make -s -j"$jobs" >make.out 2>&1 || { tail -n 60 make.out; exit 1; }
        echo "sanitizers.sh: $kind: built in $(( $(date +%s) - start )) s"
        # Each result as it comes (sed -u: unbuffered into CI's pipe), so
        # that a log that stops shows where.
        # A hung test is stopped after WEFT_TEST_LIMIT seconds with its
        # stacks in its log (tests/limit-driver.sh).
        { WEFT_TEST_LIMIT=${WEFT_TEST_LIMIT:-600} make -j"$jobs" check-sanitized 2>&1
          echo $? >check.rc; } | tee check.out |
            sed -u -n "s/^\(PASS\|FAIL\|ERROR\|XPASS\|XFAIL\|SKIP\): /sanitizers.sh: $kind: &/p"
        exit "$(cat check.rc)"
    ) && rc=0 || rc=$?
    if [ -f "$dir/test-suite.log" ]; then
        pass=$(sed -n 's/^# PASS: *//p' "$dir/test-suite.log" | head -n 1)
        fail=$(sed -n 's/^# FAIL: *//p' "$dir/test-suite.log" | head -n 1)
        err=$(sed -n 's/^# ERROR: *//p' "$dir/test-suite.log" | head -n 1)
        skip=$(sed -n 's/^# SKIP: *//p' "$dir/test-suite.log" | head -n 1)
        echo "sanitizers.sh: $kind: ${pass:-0} passed, $(( ${fail:-0} + ${err:-0} )) failed," \
             "${skip:-0} skipped in $(( $(date +%s) - start )) s"
    fi
    if [ "$rc" != 0 ]; then
        status=1
        echo "sanitizers.sh: $kind: FAILED" >&2
        for log in $(grep -l -E '^(FAIL|ERROR)' $(find "$dir" -name '*.trs') 2>/dev/null |
                     sed 's/\.trs$/.log/'); do
            echo "===== $log"; tail -n 200 "$log"
        done
        [ -f "$dir/test-suite.log" ] || tail -n 40 "$dir/check.out" 2>/dev/null || true
    fi
done
exit $status
