#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# weft-bench --tune at 2 and 3 ranks on small sizes: it writes a file a
# later job loads with the same parameters, and measures every algorithm
# its predicted table gives a time for, each forced (none may fall back to
# another: WEFT_DEBUG=INFO would say "does not apply"), checked, with the
# tuner's pick and the fastest marked and a summary per operation
# (bench-tune.awk checks the output against itself).
set -u
top=${abs_top_builddir:-$(pwd)}
src=${abs_top_srcdir:-$top}
WEFTRUN=$top/tools/weftrun
BENCH=$top/tools/weft-bench
[ -x "$WEFTRUN" ] && [ -x "$BENCH" ] || { echo "ERROR: build first"; exit 99; }
[ -e "$top/plugins/sockets/.libs/weft-sockets.so" ] ||
    { echo "SKIP: no sockets transport"; exit 77; }
WEFT_PLUGIN_PATH=$top/plugins/sockets/.libs
# Ranks of one host talk through shm when it is built, as installed.
[ -e "$top/plugins/shm/.libs/weft-shm.so" ] &&
    WEFT_PLUGIN_PATH=$WEFT_PLUGIN_PATH:$top/plugins/shm/.libs
export WEFT_PLUGIN_PATH WEFT_TIMEOUT=60
. "$(dirname "$0")/../check.sh"

lacks() { ! grep -q -- "$1" "$tmp/out"; }

# -b 8 -e 128K -f 4: these table sizes, across the shared slot (8 KiB).
sizes="8 32 128 512 2K 8K 32K 128K"
for n in 2 3; do
    WEFT_DEBUG=INFO WEFT_DEBUG_SUBSYS=COLL timeout 120 "$WEFTRUN" -n $n "$BENCH" \
        --tune "$tmp/tune.txt" -b 8 -e 128K -f 4 >"$tmp/out" 2>&1
    check "$n ranks: weft-bench --tune exits 0" test $? = 0
    check "$n ranks: no forced algorithm fell back" lacks "does not apply"
    check "$n ranks: no wrong element" grep -q '^# Out of bounds values : 0 OK' "$tmp/out"
    awk -v sizes="$sizes" -f "$src/tests/coll/bench-tune.awk" "$tmp/out" >"$tmp/awk" 2>&1
    st=$?
    sed "s/^/$n ranks: /" "$tmp/awk"
    check "$n ranks: the measured rows match the predicted table" test $st = 0
    for op in allreduce reduce broadcast allgather reduce_scatter alltoall gather scatter; do
        check "$n ranks: $op has its summary" \
            grep -q "^# $op: tuner's pick within 10% of the fastest measured at" "$tmp/out"
    done

    # The file holds the parameters the table was predicted with.
    check "$n ranks: the file has its header" grep -q '^weft-tune 1$' "$tmp/tune.txt"
    grep '^predicted microseconds' "$tmp/out" >"$tmp/params"
    WEFT_TUNE_FILE=$tmp/tune.txt WEFT_DEBUG=INFO WEFT_DEBUG_SUBSYS=TUNING timeout 120 \
        "$WEFTRUN" -n $n "$BENCH" -o allreduce -b 8 -e 8 -w 0 -n 1 >"$tmp/out" 2>&1
    check "$n ranks: a job with WEFT_TUNE_FILE passes" test $? = 0
    check "$n ranks: it loads the file" grep -q "parameters file" "$tmp/out"
    check "$n ranks: with the parameters --tune printed" \
        grep -qF "$(cat "$tmp/params")" "$tmp/out"
done
exit "$fail"
