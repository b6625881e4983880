#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# kill -9 of weftrun leaves no rank behind: each rank has
# PR_SET_PDEATHSIG(SIGKILL).
. "$(dirname "$0")/common.sh"

# The ranks exec a program whose path is unique to this test, so that
# pgrep finds exactly them.
sleep_bin=$(command -v sleep) || skip "no sleep program"
marker=$tmp/weftrun-orphan-marker-$$
ln -s "$sleep_bin" "$marker" || fail "cannot link $marker"

"$WEFTRUN" -n 3 sh -c 'echo $$ > "$0.pid.$RANK"; exec "$0" 30' "$marker" &
pid=$!
background_pids=$pid
wait_files 3 10 "$marker.pid.*" || fail "the ranks did not start"
ranks=$(cat "$marker".pid.*)
# The pid files come just before exec; let the ranks get there.
sleep 0.3
if command -v pgrep >/dev/null 2>&1; then
    n=$(pgrep -f -c "$marker 30")
    [ "$n" -eq 3 ] || fail "expected 3 ranks running $marker, pgrep found $n"
fi

kill -9 "$pid"
wait "$pid" 2>/dev/null

left=
for i in 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20; do
    left=
    for r in $ranks; do
        alive "$r" && left="$left $r"
    done
    if command -v pgrep >/dev/null 2>&1 && pgrep -f "$marker 30" >/dev/null; then
        left="$left (pgrep)"
    fi
    [ -z "$left" ] && exit 0
    sleep 0.1
done
for r in $ranks; do
    alive "$r" && kill -9 "$r"
done
fail "ranks still running 2 s after kill -9 of weftrun:$left"
