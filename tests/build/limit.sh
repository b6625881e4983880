#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# tests/limit-driver.sh, the time limit every test runs under: a test that
# passes, skips or fails keeps its result; one that outlives the limit is
# reported as failed with its processes listed, and is killed with every
# process it started, those in process groups of their own included (as
# weftrun's ranks are).
set -u
top=${abs_top_srcdir:?}
driver=$top/tests/limit-driver.sh
testdriver=$top/build-aux/test-driver
[ -f "$testdriver" ] || { echo "SKIP: $testdriver missing (run autogen.sh)"; exit 77; }
for c in setsid perl; do
    command -v $c >/dev/null 2>&1 || { echo "SKIP: $c missing"; exit 77; }
done
work=$(mktemp -d "${TMPDIR:-/tmp}/weft-limit-test.XXXXXX") || exit 99
trap 'rm -rf "$work"' EXIT
fail=0

# run NAME LIMIT SCRIPT: the script as a test under the driver; prints the
# result the driver recorded.
run() {
    printf '%s\n' "$3" >"$work/$1.sh"
    WEFT_TEST_LIMIT=$2 sh "$driver" sh "$testdriver" --test-name "$1" \
        --log-file "$work/$1.log" --trs-file "$work/$1.trs" --color-tests no \
        --enable-hard-errors yes --expect-failure no -- sh "$work/$1.sh" >/dev/null 2>&1
    sed -n 's/^:test-result: //p' "$work/$1.trs"
}

expect() {
    got=$(run "$1" "$2" "$3")
    if [ "$got" = "$4" ]; then
        echo "ok: $1: $got"
    else
        echo "FAIL: $1: the driver recorded '$got', expected $4"
        sed 's/^/    /' "$work/$1.log"
        fail=1
    fi
}

expect pass 30 'exit 0' PASS
expect skip 30 'exit 77' SKIP
expect fail 30 'exit 1' FAIL

# A hang: a child in a process group of its own, like a rank of weftrun's,
# and the test waiting on it forever.
pidfile=$work/child.pid
expect hang 2 "
perl -e 'setpgrp(0, 0); open(F, \">\", \$ARGV[0]) or die; print F \"\$\$\\n\"; close(F); exec(\"sleep\", \"1000\")' $pidfile &
sleep 1000" FAIL
grep -q 'ran past its limit of 2 s' "$work/hang.log" ||
    { echo "FAIL: the hung test's log does not say it ran past its limit"; fail=1; }
grep -q 'sleep 1000' "$work/hang.log" ||
    { echo "FAIL: the hung test's log does not list its processes"; fail=1; }
if [ -s "$pidfile" ]; then
    child=$(cat "$pidfile")
    sleep 0.2
    # Dead, or a zombie left to whichever process adopted it.
    state=$(ps -o stat= -p "$child" 2>/dev/null)
    if [ -n "$state" ] && [ "${state#Z}" = "$state" ]; then
        echo "FAIL: the hung test's child $child (own process group) was left running"
        kill -KILL "$child"
        fail=1
    else
        echo "ok: the hung test's child in a group of its own was killed"
    fi
else
    echo "FAIL: the hung test's child never started"
    fail=1
fi
exit $fail
