#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# conf-algos.sh: fails when core/coll/algo/registry.c has an algorithm
# that the conformance specs do not force, so that a new algorithm cannot
# go untested. Every "op:name" of the algorithm table must appear in the
# WEFT_ALGO of a spec of make check (tests/mp/conf-algo-*.mp) and, in the
# long sweep (tests/mp/conf-long-*.mp), at each of 3, 4, 5 and 8 ranks.
# Each must also be a name that WEFT_ALGO accepts, which the specs check
# by running.
#
# The table's entries look like
#   [WEFT__ALGO_ALLREDUCE_RING] =
#       { WEFT__COLL_ALLREDUCE, "allreduce", "ring",
#         weft__allreduce_ring, 0, 0 },

srcdir=${abs_top_srcdir:-$(cd "$(dirname "$0")/../.." && pwd)}
table=$srcdir/core/coll/algo/registry.c
specs=$srcdir/tests/mp
long_ranks="3 4 5 8"

[ -f "$table" ] || { echo "conf-algos.sh: $table is missing" >&2; exit 99; }

algos=$(sed -n 's/^[[:space:]]*{[[:space:]]*WEFT__COLL_[A-Z_]*,[[:space:]]*"\([a-z_]*\)",[[:space:]]*"\([a-z_0-9]*\)",.*/\1:\2/p' "$table")
[ -n "$algos" ] || { echo "conf-algos.sh: no algorithm table found in $table" >&2; exit 99; }
# A row written another way (split over lines, say) must not slip through.
rows=$(grep -c '^[[:space:]]*{[[:space:]]*WEFT__COLL_' "$table")
parsed=$(echo "$algos" | wc -l)
if [ "$rows" -ne "$parsed" ]; then
    echo "conf-algos.sh: $table has $rows table rows but $parsed were read: update the" \
         "pattern of tests/mp/conf-algos.sh" >&2
    exit 99
fi

# forced SPEC: the op:name items of the spec's WEFT_ALGO, one a line.
forced() {
    sed -n 's/^env=.*WEFT_ALGO=\([^" ]*\).*/\1/p' "$1" | tr ',' '\n'
}

ranks_of() {
    sed -n 's/^ranks=\([0-9]*\).*/\1/p' "$1"
}

missing=0
count=0
for a in $algos; do
    count=$((count + 1))
    found=0
    for s in "$specs"/conf-algo-*.mp; do
        [ -f "$s" ] || continue
        if forced "$s" | grep -qx "$a"; then
            found=1
            break
        fi
    done
    if [ "$found" -eq 0 ]; then
        echo "FAIL: algorithm $a of core/coll/algo/registry.c is forced by no tests/mp/conf-algo-*.mp spec"
        missing=$((missing + 1))
    fi
    for n in $long_ranks; do
        found=0
        for s in "$specs"/conf-long-*.mp; do
            [ -f "$s" ] || continue
            [ "$(ranks_of "$s")" = "$n" ] || continue
            if forced "$s" | grep -qx "$a"; then
                found=1
                break
            fi
        done
        if [ "$found" -eq 0 ]; then
            echo "FAIL: algorithm $a is forced by no tests/mp/conf-long-*.mp spec at $n ranks"
            missing=$((missing + 1))
        fi
    done
done

if [ "$missing" -ne 0 ]; then
    echo "conf-algos.sh: add the algorithm(s) to the WEFT_ALGO of the conformance specs"
    exit 1
fi
echo "conf-algos.sh: all $count algorithms of core/coll/algo/registry.c are forced by the specs"
exit 0
