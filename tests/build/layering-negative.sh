#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# layering-negative.sh: the two checks of the core's structure fail when
# they should. layering.sh, on a small tree with core/LAYERS, refuses an
# include of an upper layer and of another folder's private header, and
# accepts both once core/LAYERS allows them; callgraph.sh, on two objects
# that call each other, names the loop, and passes when only one calls
# the other.
set -u
src=${abs_top_srcdir:?}
cc=${CC:-cc}
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
fail=0

expect() { # STATUS WHAT: the last command's status and output against STATUS
    if [ "$1" != "$status" ]; then
        echo "FAIL: $2: exit status $status, expected $1"; cat "$tmp/out"; fail=1
    fi
}
says() { # TEXT WHAT
    grep -q "$1" "$tmp/out" || { echo "FAIL: $2: no '$1' in:"; cat "$tmp/out"; fail=1; }
}

# A tree of two layers and a private header.
mkdir -p "$tmp/tree/core/base" "$tmp/tree/core/api" "$tmp/tree/core/coll/shared"
cp "$src/core/LAYERS" "$tmp/tree/core/LAYERS"
echo 'int low(void);' > "$tmp/tree/core/base/low.h"
echo 'int up(void);' > "$tmp/tree/core/api/up.h"
echo 'int seg(void);' > "$tmp/tree/core/coll/shared/segment.h"
printf '#include "core/base/low.h"\n#include "core/api/up.h"\n' > "$tmp/tree/core/base/low.c"
printf '#include "core/base/low.h"\n' > "$tmp/tree/core/api/up.c"
"$src/tests/build/layering.sh" "$tmp/tree" > "$tmp/out" 2>&1; status=$?
expect 1 "an include of an upper layer"
says "core/base/low.c:2: base includes core/api/up.h of api" "an include of an upper layer"

printf '#include "core/base/low.h"\n' > "$tmp/tree/core/base/low.c"
printf '#include "core/coll/shared/segment.h"\n' > "$tmp/tree/core/api/up.c"
"$src/tests/build/layering.sh" "$tmp/tree" > "$tmp/out" 2>&1; status=$?
expect 1 "an include of a private header"
says "core/api/up.c:1: includes core/coll/shared/segment.h, private" "a private header"

echo 'allow core/api/up.c core/coll/shared/segment.h a test says so' >> "$tmp/tree/core/LAYERS"
"$src/tests/build/layering.sh" "$tmp/tree" > "$tmp/out" 2>&1; status=$?
expect 0 "an allowed include"

mkdir -p "$tmp/tree/core/misc"
echo 'int stray;' > "$tmp/tree/core/misc/stray.c"
"$src/tests/build/layering.sh" "$tmp/tree" > "$tmp/out" 2>&1; status=$?
expect 1 "a file outside every layer"
says "core/misc/stray.c lies in no layer" "a file outside every layer"

# Two files that call each other, and one that only calls.
if command -v "$cc" >/dev/null 2>&1 && command -v nm >/dev/null 2>&1; then
    printf 'int pong(int);\nint ping(int n) { return n ? pong(n - 1) : 0; }\n' > "$tmp/ping.c"
    printf 'int ping(int);\nint pong(int n) { return n ? ping(n - 1) : 1; }\n' > "$tmp/pong.c"
    printf 'int ping(int);\nint caller(void) { return ping(3); }\n' > "$tmp/caller.c"
    for f in ping pong caller; do
        "$cc" -c -o "$tmp/$f.o" "$tmp/$f.c" || { echo "FAIL: cannot compile $f.c"; exit 1; }
    done
    "$src/tests/build/callgraph.sh" "$tmp/ping.o" "$tmp/pong.o" "$tmp/caller.o" \
        > "$tmp/out" 2>&1; status=$?
    expect 1 "two files calling each other"
    says "ping -> .*pong: pong" "two files calling each other"
    "$src/tests/build/callgraph.sh" "$tmp/ping.o" "$tmp/caller.o" > "$tmp/out" 2>&1; status=$?
    expect 0 "one file calling another"
else
    echo "no compiler or nm: the call graph's negative test is skipped"
fi

[ "$fail" = 0 ] && echo "PASS: both checks fail on a wrong include and a loop of calls"
exit "$fail"
