#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# A failing rank makes weftrun stop its siblings at once: SIGTERM to their
# process groups (the sleeping grandchildren too), SIGKILL after the grace.
. "$(dirname "$0")/common.sh"

# The siblings sleep in a child of their shell, in the rank's process
# group, and write their pids so that the test can see them gone.
start=$(now_ms)
wr -n 3 sh -c '
    if [ "$RANK" = 1 ]; then
        i=0
        while [ ! -s "$0/sleeper.0" ] || [ ! -s "$0/sleeper.2" ]; do
            i=$((i + 1)); [ $i -gt 100 ] && exit 99; sleep 0.05
        done
        exit 3
    fi
    sleep 30 &
    echo $! > "$0/sleeper.$RANK.tmp"
    mv "$0/sleeper.$RANK.tmp" "$0/sleeper.$RANK"
    wait' "$tmp" 2> "$tmp/err"
status=$?
elapsed=$(($(now_ms) - start))
expect_status 3 "$status" "rank 1 exits 3"
expect_line "$tmp/err" '^weftrun: rank 1 \(pid [0-9]+\) exited with status 3$' "rank 1 exits 3"
[ "$elapsed" -lt 4000 ] || fail "siblings were stopped after $elapsed ms, expected under 4000"
for r in 0 2; do
    pid=$(cat "$tmp/sleeper.$r") || fail "rank $r did not start its sleeper"
    ! alive "$pid" || fail "rank $r's sleeper (pid $pid) is still running"
done

# A rank that ignores SIGTERM gets SIGKILL after --kill-grace (counted
# from when rank 1 fails, once rank 0 ignores SIGTERM).
start=$(now_ms)
wr -n 2 --kill-grace 1 sh -c '
    if [ "$RANK" = 1 ]; then
        i=0; while [ ! -e "$0/ignoring" ] && [ $i -lt 100 ]; do sleep 0.05; i=$((i + 1)); done
        exit 4
    fi
    trap "" TERM
    touch "$0/ignoring"
    sleep 30' "$tmp" 2> "$tmp/err"
status=$?
elapsed=$(($(now_ms) - start))
expect_status 4 "$status" "rank 1 exits 4, rank 0 ignores SIGTERM"
[ "$elapsed" -ge 900 ] || fail "SIGKILL came after $elapsed ms, before --kill-grace 1"
[ "$elapsed" -lt 4000 ] || fail "SIGKILL came after $elapsed ms, expected about 1000"
exit 0
