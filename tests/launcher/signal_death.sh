#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# A rank killed by a signal is reported with the signal's number and name,
# and weftrun exits with 128 + the signal.
. "$(dirname "$0")/common.sh"

wr -n 2 sh -c '[ "$RANK" = 1 ] && kill -9 $$; sleep 30' 2> "$tmp/err"
expect_status 137 $? "rank 1 killed by SIGKILL"
expect_line "$tmp/err" '^weftrun: rank 1 \(pid [0-9]+\) was killed by signal 9 \(Killed\)$' \
    "rank 1 killed by SIGKILL"

wr -n 1 sh -c 'kill -SEGV $$' 2> "$tmp/err"
expect_status 139 $? "rank 0 killed by SIGSEGV"
expect_line "$tmp/err" '^weftrun: rank 0 \(pid [0-9]+\) was killed by signal 11 \(' \
    "rank 0 killed by SIGSEGV"
exit 0
