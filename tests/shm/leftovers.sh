#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# shm-leftovers.sh: the shm transport leaves nothing in /dev/shm: after a
# normal run, after a run in which a rank kills itself (SIGKILL), and the
# segments of ranks that died before they could remove their own (made up
# here with the pid of a process that has exited) go at the next start,
# while those of a live process stay. Segment names are read from each
# rank's log (WEFT_DEBUG=INFO), so that other jobs on the machine do not
# matter.
top=${abs_top_builddir:-$(pwd)}
shm_dir=$top/plugins/shm/.libs
prog=$top/tests/p2p/mp_p2p

fail() {
    echo "FAIL: $*" >&2
    exit 1
}

skip() {
    echo "SKIP: $*"
    exit 77
}

[ -x "$top/tools/weftrun" ] || fail "$top/tools/weftrun is missing: build first"
[ -e "$shm_dir/weft-shm.so" ] || skip "the shm transport is not built"
[ -d /dev/shm ] && [ -w /dev/shm ] || skip "no writable /dev/shm"
[ -x "$prog" ] || fail "$prog is missing: run make check"

tmp=$(mktemp -d "${TMPDIR:-/tmp}/weft-shm.XXXXXX") || fail "mktemp -d failed"
trap 'rm -rf "$tmp"' EXIT
trap 'exit 1' INT TERM HUP

WEFT_PLUGIN_PATH=$shm_dir WEFT_TRANSPORTS=shm WEFT_DEBUG=INFO WEFT_DEBUG_SUBSYS=TRANSPORT
WEFT_TIMEOUT=20
export WEFT_PLUGIN_PATH WEFT_TRANSPORTS WEFT_DEBUG WEFT_DEBUG_SUBSYS WEFT_TIMEOUT

# run NAME RANKS ARGS...: weftrun under a backstop, log in $tmp/NAME.log.
run() {
    name=$1
    ranks=$2
    shift 2
    WEFT_TEST_MARKER_DIR=$tmp timeout -s KILL 120 "$top/tools/weftrun" -n "$ranks" \
        --kill-grace 30 "$prog" "$@" >"$tmp/$name.log" 2>&1
}

# check_gone NAME RANKS: the log names RANKS segments, and none of them, nor
# their FIFOs, is left.
check_gone() {
    names=$(sed -n 's|.*shm: segment /\(weft-shm-[^:]*\):.*|\1|p' "$tmp/$1.log")
    count=$(printf '%s\n' "$names" | grep -c .)
    [ "$count" -eq "$2" ] || {
        cat "$tmp/$1.log" >&2
        fail "$1: the logs name $count segments, expected $2"
    }
    for n in $names; do
        [ ! -e "/dev/shm/$n" ] || fail "$1: /dev/shm/$n is left"
        [ ! -e "/dev/shm/$n.wake" ] || fail "$1: /dev/shm/$n.wake is left"
    done
    echo "$1: $count segments created, none left"
}

run normal 4 pingpong || { cat "$tmp/normal.log" >&2; fail "the normal run failed"; }
check_gone normal 4

# Rank 2 raises SIGKILL mid-stream: the others see it and leave.
run killed 3 peerlost
for r in 0 1; do
    [ -e "$tmp/peerlost.$r" ] || { cat "$tmp/killed.log" >&2; fail "rank $r did not see rank 2 die"; }
done
check_gone killed 3

# Made-up leftovers: one of a process that exited, one of this live shell.
sh -c 'exit 0' &
dead=$!
wait "$dead"
kill -0 "$dead" 2>/dev/null && skip "pid $dead was reused at once"
stale=/dev/shm/weft-shm-leftovertest-0-$dead
live=/dev/shm/weft-shm-leftovertest-0-$$
: >"$stale" && mkfifo "$stale.wake" && : >"$live" || fail "cannot create files in /dev/shm"
run stale 2 pingpong || { rm -f "$live"; cat "$tmp/stale.log" >&2; fail "the run after the stale files failed"; }
[ ! -e "$stale" ] && [ ! -e "$stale.wake" ] || { rm -f "$live" "$stale" "$stale.wake"; fail "the stale files of pid $dead were not removed"; }
[ -e "$live" ] || fail "$live of a live process was removed"
rm -f "$live"
check_gone stale 2
echo "stale files of exited pid $dead removed, the live one kept"
