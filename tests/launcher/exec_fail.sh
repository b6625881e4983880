#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# A program that cannot run: a clear message, 127 (not found) or 126 (not
# executable), and no rank left running.
. "$(dirname "$0")/common.sh"

wr -n 3 "$tmp/no-such-program" a b 2> "$tmp/err"
expect_status 127 $? "missing program by path"
expect_line "$tmp/err" "^weftrun: cannot run $tmp/no-such-program: No such file or directory\$" \
    "missing program by path"

wr -n 2 "weftrun-test-no-such-program-$$" 2> "$tmp/err"
expect_status 127 $? "missing program on PATH"
expect_line "$tmp/err" "^weftrun: cannot run weftrun-test-no-such-program-$$: No such file or directory\$" \
    "missing program on PATH"

printf 'not a program\n' > "$tmp/data"
chmod -x "$tmp/data"
wr -n 1 "$tmp/data" 2> "$tmp/err"
expect_status 126 $? "file that is not executable"
expect_line "$tmp/err" "^weftrun: cannot run $tmp/data: Permission denied\$" \
    "file that is not executable"
[ "$(wc -l < "$tmp/err")" -eq 1 ] || fail "more than one message: $(cat "$tmp/err")"
exit 0
