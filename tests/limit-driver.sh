#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# limit-driver.sh: automake's test driver with a time limit on every test.
# A test that hangs must fail with a report, not hold `make check` (and CI)
# until its own limit kills the whole run with nothing said. On expiry the
# test's processes are listed, each one's threads' stacks are printed
# (gdb, where installed) into the test's log, and they are all killed.
#
#   LOG_DRIVER = $(SHELL) limit-driver.sh $(SHELL) test-driver
#       as the driver: runs TEST-DRIVER with the same options, the test's
#       command prefixed with `limit-driver.sh --run LIMIT`
#   limit-driver.sh --run LIMIT CMD [ARGS]
#       runs CMD in a session of its own and stops it after LIMIT
#       seconds (exit status 124 then, which the driver counts as a
#       failure); whatever the test left running in its session at its end
#       is killed too
#
# The limit is WEFT_TEST_LIMIT seconds (default 900): far above the
# slowest test (under a few minutes even in a sanitizer build), low enough
# that a hang costs minutes, not the CI run.
set -u

if [ "${1:-}" != --run ]; then
    [ "$#" -ge 2 ] || { echo "usage: $0 SHELL TEST-DRIVER [options] -- CMD [ARGS]" >&2; exit 99; }
    self=$0
    limit=${WEFT_TEST_LIMIT:-900}
    case $limit in
    '' | *[!0-9]* | 0) echo "$0: WEFT_TEST_LIMIT=$limit is not a number of seconds" >&2; exit 99 ;;
    esac
    shell=$1 driver=$2
    shift 2
    # Rebuild the arguments with the runner put in front of the command.
    seen=0
    for arg; do
        shift
        if [ "$seen" = 0 ] && [ "$arg" = -- ]; then
            seen=1
            set -- "$@" -- "$shell" "$self" --run "$limit"
        else
            set -- "$@" "$arg"
        fi
    done
    exec "$shell" "$driver" "$@"
fi

shift
limit=$1
shift
expired=${TMPDIR:-/tmp}/weft-limit-$$

# session_pids SID: the test's processes. weftrun puts its ranks in
# process groups of their own, all still in the test's session.
session_pids() {
    ps -e -o pid=,sid= | awk -v s="$1" '$2 == s { print $1 }'
}

# report SID: what the stopped test was doing, into its log. Its
# processes are stopped first, so that the picture holds still. Shells,
# sleep and timeout are listed, but their stacks say nothing.
report() {
    echo "limit-driver: the test ran past its limit of $limit s (WEFT_TEST_LIMIT); its processes:"
    pids=$(session_pids "$1")
    [ -n "$pids" ] || return 0
    # shellcheck disable=SC2086 # a list of numbers
    kill -STOP $pids 2>/dev/null
    # shellcheck disable=SC2086 # a list of numbers
    ps -o pid,ppid,pgid,stat,etime,args -p "$(echo $pids | tr ' ' ,)"
    command -v gdb >/dev/null 2>&1 || { echo "limit-driver: (no gdb: no stacks)"; return 0; }
    for p in $pids; do
        exe=$(readlink "/proc/$p/exe" 2>/dev/null) || continue
        case ${exe##*/} in
        sh | bash | dash | sleep | timeout) continue ;;
        esac
        echo "limit-driver: stacks of process $p"
        timeout 60 gdb -q -batch -nx -p "$p" -ex 'thread apply all bt 30' 2>&1 |
            grep -v -e '^\[New LWP' -e '^warning:' -e '^\[Thread debugging' \
                    -e '^Using host libthread_db' -e '^[0-9]*	' | head -n 300
    done
}

# kill_session SID: every process of the test, whatever its group.
kill_session() {
    # shellcheck disable=SC2046 # a list of numbers
    kill -KILL $(session_pids "$1") 2>/dev/null
}

# setsid gives the test a session of its own (the shell's background child
# is no group leader, so setsid execs in place: $! is the test and the
# session's id).
if command -v setsid >/dev/null 2>&1; then
    setsid "$@" &
else
    "$@" &
fi
test_pid=$!
trap 'kill_session "$test_pid"; exit 1' INT TERM HUP

(
    waited=0
    while kill -0 "$test_pid" 2>/dev/null; do
        if [ "$waited" -ge "$limit" ]; then
            : >"$expired"
            report "$test_pid"
            kill_session "$test_pid"
            exit 0
        fi
        sleep 1
        waited=$((waited + 1))
    done
) &
watchdog=$!

wait "$test_pid"
status=$?
kill "$watchdog" 2>/dev/null
wait "$watchdog" 2>/dev/null
# What the test left behind in its session goes with it.
kill_session "$test_pid"
if [ -e "$expired" ]; then
    rm -f "$expired"
    echo "FAIL: stopped after $limit s (WEFT_TEST_LIMIT)" >&2
    exit 124
fi
exit "$status"
