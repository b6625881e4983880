#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# The command line: --help and --version exit 0, mistakes exit 2 with the
# usage on stderr and start nothing.
. "$(dirname "$0")/common.sh"

"$WEFTRUN" --help > "$tmp/out" 2>&1
expect_status 0 $? "--help"
expect_line "$tmp/out" '^Usage: weftrun' "--help"
expect_line "$tmp/out" '--tag-output' "--help"

"$WEFTRUN" --version > "$tmp/out" 2>&1
expect_status 0 $? "--version"
expect_line "$tmp/out" '^weftrun \(weft\) [0-9]+\.[0-9]+\.[0-9]+$' "--version"

bad() {
    "$WEFTRUN" "$@" sh -c 'touch "$0/ran"' "$tmp" > "$tmp/out" 2> "$tmp/err"
    status=$?
    [ "$status" -eq 2 ] || fail "weftrun $*: exited $status, expected 2"
    expect_line "$tmp/err" '^Usage: weftrun' "weftrun $*"
    [ ! -e "$tmp/ran" ] || fail "weftrun $*: the program ran"
}
bad -n 0
bad -n x
bad --nproc-per-node=-1
bad --bogus-option
bad --timeout -1
bad --kill-grace nan
bad --nnodes 2 -n 1
bad --nnodes 2 --node-rank 0 --master-port 29500 -n 1
bad --nnodes 2 --node-rank 0 --master-addr 127.0.0.1 -n 1
bad --nnodes 2 --node-rank 2 --master-addr 127.0.0.1 --master-port 29500
bad --node-rank 1
bad --master-port 70000
bad --job-name "has space"

"$WEFTRUN" -n 2 > "$tmp/out" 2> "$tmp/err"
expect_status 2 $? "no program"
expect_line "$tmp/err" '^weftrun: no program to run$' "no program"

# Options after the program belong to it.
wr -n 1 sh -c 'printf "%s\n" "$*" > "$0/args"' "$tmp" -n 5 --timeout
expect_status 0 $? "options after the program"
[ "$(cat "$tmp/args")" = "-n 5 --timeout" ] || fail "program arguments: '$(cat "$tmp/args")'"
exit 0
