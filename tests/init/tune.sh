#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# The tuner at start-up: weft-bench --tune writes a parameter file that a
# job then loads (WEFT_TUNE_FILE); WEFT_TUNE=0 uses the built-in
# parameters; by default weft_init measures them quickly, on a node and
# across (simulated) nodes; the predicted table is logged once, by rank 0.
# A malformed file or a bad WEFT_TUNE fails weft_init on every rank, with
# rank 0 naming the cause, rather than hanging the ranks that did not read
# it; so do a malformed WEFT_COLL_CHUNK or WEFT_ALLTOALL_THROTTLE. Every
# job runs mp_coll's collectives, whose results must stay right.
set -u
top=${abs_top_builddir:-$(pwd)}
WEFTRUN=$top/tools/weftrun
COLL=$top/tests/coll/mp_coll
BENCH=$top/tools/weft-bench
[ -x "$WEFTRUN" ] && [ -x "$COLL" ] && [ -x "$BENCH" ] || { echo "ERROR: build first"; exit 99; }
[ -e "$top/plugins/sockets/.libs/weft-sockets.so" ] || { echo "SKIP: no sockets transport"; exit 77; }
export WEFT_PLUGIN_PATH="$top/plugins/sockets/.libs" WEFT_TIMEOUT=60
. "$(dirname "$0")/../check.sh"

has() { grep -q -- "$1" "$tmp/out"; }
count() { grep -c -- "$1" "$tmp/out"; }

# --tune writes a file weft can load (and measures allreduce's algorithms
# on a few sizes, which tests/coll/bench-tune.sh checks).
timeout 120 "$WEFTRUN" -n 3 "$BENCH" --tune "$tmp/tune.txt" -o allreduce -e 64K -f 8 \
    >"$tmp/out" 2>&1
check "weft-bench --tune exits 0" test $? = 0
check "the file has its header" grep -q '^weft-tune 1$' "$tmp/tune.txt"
check "--tune prints the predicted table" has "-> rabenseifner\|-> rd\|-> ring"

export WEFT_DEBUG=INFO WEFT_DEBUG_SUBSYS=TUNING
WEFT_TUNE_FILE=$tmp/tune.txt timeout 120 "$WEFTRUN" -n 4 "$COLL" >"$tmp/out" 2>&1
check "a job with WEFT_TUNE_FILE passes" test $? = 0
check "it loads the file" has "parameters file"
check "rank 0 alone logs the world's table" test "$(count 'communicator of 4 ranks (context 0)')" = 1

WEFT_TUNE=0 timeout 120 "$WEFTRUN" -n 4 "$COLL" >"$tmp/out" 2>&1
check "a job with WEFT_TUNE=0 passes" test $? = 0
check "it uses the built-in parameters" has "parameters defaults"

MP_FAKE_NODE_SIZE=2 timeout 120 "$WEFTRUN" -n 4 "$COLL" >"$tmp/out" 2>&1
check "a job measuring on 2 simulated nodes passes" test $? = 0
check "it measures" has "parameters measured"
# Under 100 ms on a quiet machine; a loaded test machine gets slack.
ms=$(sed -n 's/.*parameters measured.*took \([0-9]*\)\..*/\1/p' "$tmp/out" | head -1)
check "the measurement took ${ms:-?} ms" test "${ms:-9999}" -lt 1000

# The collectives' own settings are checked at weft_init too: a malformed
# value fails the job, named, rather than falling back unseen.
unset WEFT_DEBUG WEFT_DEBUG_SUBSYS
for bad in WEFT_COLL_CHUNK=1024 WEFT_COLL_CHUNK=64k WEFT_ALLTOALL_THROTTLE=-1; do
    env "$bad" timeout 120 "$WEFTRUN" -n 2 "$COLL" >"$tmp/out" 2>&1
    check "$bad fails the job" test $? != 0
    check "the error names ${bad%%=*}" has "${bad%%=*}=.*is not a number"
done
WEFT_COLL_CHUNK=65536 WEFT_ALLTOALL_THROTTLE=1 timeout 120 "$WEFTRUN" -n 3 "$COLL" >"$tmp/out" 2>&1
check "a job with a 64 KiB chunk and a window of 1 passes" test $? = 0

exit "$fail"
