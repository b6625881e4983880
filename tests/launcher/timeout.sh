#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# --timeout stops a job that runs too long: exit 124 with a message.
. "$(dirname "$0")/common.sh"

start=$(now_ms)
wr -n 2 --timeout 1 sh -c 'sleep 30' 2> "$tmp/err"
status=$?
elapsed=$(($(now_ms) - start))
expect_status 124 "$status" "--timeout 1"
expect_line "$tmp/err" '^weftrun: .*--timeout 1 seconds' "--timeout 1"
[ "$elapsed" -ge 900 ] || fail "stopped after $elapsed ms, before --timeout 1"
[ "$elapsed" -lt 4000 ] || fail "stopped after $elapsed ms, expected about 1000"

# A job that ends in time is not affected.
wr -n 2 --timeout 20 sh -c 'exit 0'
expect_status 0 $? "--timeout 20, quick job"
exit 0
