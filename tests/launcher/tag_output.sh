#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# --tag-output: every line of every rank, stdout and stderr apart, comes out
# prefixed "[rank]:"; an unfinished last line too. Without it, output is
# untouched.
. "$(dirname "$0")/common.sh"

wr -n 2 --tag-output sh -c '
    echo "hello from $RANK"
    echo "warning from $RANK" >&2
    echo "second line"
    printf "unfinished %s" "$RANK"' > "$tmp/out" 2> "$tmp/err"
expect_status 0 $? "--tag-output"

for r in 0 1; do
    expect_line "$tmp/out" "^\[$r\]:hello from $r\$" "stdout of rank $r"
    expect_line "$tmp/out" "^\[$r\]:second line\$" "second line of rank $r"
    expect_line "$tmp/out" "^\[$r\]:unfinished $r\$" "unfinished line of rank $r"
    expect_line "$tmp/err" "^\[$r\]:warning from $r\$" "stderr of rank $r"
done
[ "$(wc -l < "$tmp/out")" -eq 6 ] || fail "expected 6 lines on stdout, got: $(cat "$tmp/out")"
[ "$(wc -l < "$tmp/err")" -eq 2 ] || fail "expected 2 lines on stderr, got: $(cat "$tmp/err")"
if grep -v '^\[[01]\]:' "$tmp/out" "$tmp/err"; then
    fail "lines without a rank prefix"
fi
if grep -q warning "$tmp/out" || grep -q hello "$tmp/err"; then
    fail "stdout and stderr were mixed up"
fi

# Many lines, one longer than weftrun's buffer: nothing lost, nothing
# untagged, line order kept within a rank.
wr -n 2 --tag-output sh -c '
    i=0
    while [ $i -lt 2000 ]; do echo "line $i"; i=$((i + 1)); done
    head -c 20000 /dev/zero | tr "\0" x; echo' > "$tmp/out"
expect_status 0 $? "--tag-output with much output"
for r in 0 1; do
    n=$(grep -c "^\[$r\]:line [0-9]*\$" "$tmp/out")
    [ "$n" -eq 2000 ] || fail "rank $r: $n of 2000 lines"
    grep "^\[$r\]:line " "$tmp/out" | sed "s/^\[$r\]:line //" > "$tmp/order"
    seq 0 1999 | cmp -s - "$tmp/order" || fail "rank $r: lines out of order"
    long=$(grep "^\[$r\]:xxx" "$tmp/out" | awk '{ print length($0) }')
    [ "$long" = $((20000 + 4)) ] || fail "rank $r: the long line came out as '$long' characters"
done

# A failing rank's last words come before weftrun's message about it.
wr -n 1 --tag-output sh -c 'echo "last words" >&2; exit 3' 2> "$tmp/err"
expect_status 3 $? "--tag-output, rank exits 3"
[ "$(head -n 1 "$tmp/err")" = "[0]:last words" ] || fail "order on stderr: $(cat "$tmp/err")"

wr -n 2 sh -c 'echo "plain $RANK"' > "$tmp/out"
expect_status 0 $? "without --tag-output"
expect_line "$tmp/out" '^plain 0$' "untagged output of rank 0"
expect_line "$tmp/out" '^plain 1$' "untagged output of rank 1"
exit 0
