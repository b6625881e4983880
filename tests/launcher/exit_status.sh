#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# The job's exit status: 0 when every rank succeeds, else the failing
# rank's status, with a message naming the rank.
. "$(dirname "$0")/common.sh"

wr -n 3 sh -c 'exit 0' 2> "$tmp/err"
expect_status 0 $? "every rank exits 0"
[ ! -s "$tmp/err" ] || fail "weftrun wrote to stderr for a clean job: $(cat "$tmp/err")"

wr -n 1 sh -c 'exit 42' 2> "$tmp/err"
expect_status 42 $? "one rank exits 42"
expect_line "$tmp/err" '^weftrun: rank 0 \(pid [0-9]+\) exited with status 42$' "exit 42"

# Rank 2 fails once the others have exited 0.
wr -n 3 sh -c '[ "$RANK" = 2 ] || exit 0; sleep 0.2; exit 7' 2> "$tmp/err"
expect_status 7 $? "rank 2 exits 7"
expect_line "$tmp/err" '^weftrun: rank 2 \(pid [0-9]+\) exited with status 7$' "rank 2 exits 7"

# The first failure decides: rank 1 fails first, rank 0 later with another
# status (it ignores the SIGTERM weftrun sends, and fails on its own).
wr -n 2 --kill-grace 5 sh -c '
    if [ "$RANK" = 1 ]; then
        i=0; while [ ! -e "$0/ignoring" ] && [ $i -lt 100 ]; do sleep 0.05; i=$((i + 1)); done
        exit 5
    fi
    trap "" TERM; touch "$0/ignoring"; sleep 0.5; exit 9' "$tmp" 2> "$tmp/err"
expect_status 5 $? "rank 1 fails first"
expect_line "$tmp/err" '^weftrun: rank 1 \(pid [0-9]+\) exited with status 5$' "first failure"
if grep -q 'status 9' "$tmp/err"; then
    fail "the later failure was reported as if it decided: $(cat "$tmp/err")"
fi
exit 0
