#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# SIGTERM to weftrun reaches every rank and the processes the ranks
# started (their process groups); weftrun exits 128 + 15 after them.
. "$(dirname "$0")/common.sh"

# Each rank starts a helper in the background; both trap SIGTERM, record
# it, and say when they are ready.
"$WEFTRUN" -n 3 sh -c '
    d=$0
    sh -c "trap \"echo term > $d/helper-term.\$RANK; exit 0\" TERM
           touch $d/helper-ready.\$RANK
           sleep 30 & wait" &
    trap "echo term > $d/rank-term.$RANK; wait; exit 0" TERM
    touch "$d/rank-ready.$RANK"
    sleep 30 & wait' "$tmp" 2> "$tmp/err" &
pid=$!
background_pids=$pid
wait_files 3 10 "$tmp/rank-ready.*" || fail "the ranks did not start"
wait_files 3 10 "$tmp/helper-ready.*" || fail "the ranks' helpers did not start"

start=$(now_ms)
kill -TERM "$pid"
wait "$pid"
status=$?
elapsed=$(($(now_ms) - start))
expect_status 143 "$status" "SIGTERM to weftrun"
[ "$elapsed" -lt 3000 ] || fail "weftrun took $elapsed ms to stop after SIGTERM"
for r in 0 1 2; do
    [ -s "$tmp/rank-term.$r" ] || fail "rank $r did not get SIGTERM"
    [ -s "$tmp/helper-term.$r" ] || fail "rank $r's helper did not get SIGTERM"
done
expect_line "$tmp/err" '^weftrun: got signal 15 ' "SIGTERM to weftrun"
exit 0
