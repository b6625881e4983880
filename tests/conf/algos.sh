#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# algos.sh: fails when core/coll/algo/registry.c has an algorithm that
# the conformance specs do not force, so that a new algorithm cannot go
# untested. Every "op:name" of the algorithm table must appear in the
# WEFT_ALGO of a spec of make check (tests/conf/algo-*.mp) and, in the
# long sweep (tests/conf/long-*.mp), at each of 3, 4, 5 and 8 ranks.
# Each must also be a name that WEFT_ALGO accepts, which the specs check
# by running.
#
# The table's entries look like
#   [WEFT__ALGO_ALLREDUCE_RING] =
#       { WEFT__COLL_ALLREDUCE, "allreduce", "ring",
#         weft__allreduce_ring, 0, 0 },

srcdir=${abs_top_srcdir:-$(cd "$(dirname "$0")/../.." && pwd)}
table=$srcdir/core/coll/algo/registry.c
specs=$srcdir/tests/conf
long_ranks="3 4 5 8"

[ -f "$table" ] || { echo "algos.sh: $table is missing" >&2; exit 99; }

algos=$(sed -n 's/^[[:space:]]*{[[:space:]]*WEFT__COLL_[A-Z_]*,[[:space:]]*"\([a-z_]*\)",[[:space:]]*"\([a-z_0-9]*\)",.*/\1:\2/p' "$table")
[ -n "$algos" ] || { echo "algos.sh: no algorithm table found in $table" >&2; exit 99; }
# A row written another way (split over lines, say) must not slip through.
rows=$(grep -c '^[[:space:]]*{[[:space:]]*WEFT__COLL_' "$table")
parsed=$(echo "$algos" | wc -l)
if [ "$rows" -ne "$parsed" ]; then
    echo "algos.sh: $table has $rows table rows but $parsed were read: update the" \
         "pattern of tests/conf/algos.sh" >&2
    exit 99
fi

# forced SPEC N: the op:name items of the spec's WEFT_ALGO at N ranks
# (its env@N line where it has one, else its env line), one a line.
forced() {
    if grep -q "^env@$2=" "$1"; then
        sed -n "s/^env@$2=.*WEFT_ALGO=\([^\" ]*\).*/\1/p" "$1"
    else
        sed -n 's/^env=.*WEFT_ALGO=\([^" ]*\).*/\1/p' "$1"
    fi | tr ',' '\n'
}

# The rank counts a spec runs at, one a line.
ranks_of() {
    sed -n 's/^ranks="*\([0-9 ]*\)"*$/\1/p' "$1" | tr ' ' '\n' | grep .
}

missing=0
count=0
for a in $algos; do
    count=$((count + 1))
    found=0
    for s in "$specs"/algo-*.mp; do
        [ -f "$s" ] || continue
        for n in $(ranks_of "$s"); do
            if forced "$s" "$n" | grep -qx "$a"; then
                found=1
                break 2
            fi
        done
    done
    if [ "$found" -eq 0 ]; then
        echo "FAIL: algorithm $a of core/coll/algo/registry.c is forced by no" \
             "tests/conf/algo-*.mp spec"
        missing=$((missing + 1))
    fi
    for n in $long_ranks; do
        found=0
        for s in "$specs"/long-*.mp; do
            [ -f "$s" ] || continue
            ranks_of "$s" | grep -qx "$n" || continue
            if forced "$s" "$n" | grep -qx "$a"; then
                found=1
                break
            fi
        done
        if [ "$found" -eq 0 ]; then
            echo "FAIL: algorithm $a is forced by no tests/conf/long-*.mp spec at $n ranks"
            missing=$((missing + 1))
        fi
    done
done

if [ "$missing" -ne 0 ]; then
    echo "algos.sh: add the algorithm(s) to the WEFT_ALGO of the conformance specs"
    exit 1
fi
echo "algos.sh: all $count algorithms of core/coll/algo/registry.c are forced by the specs"
exit 0
