#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# run.sh: the fuzzing of make check-long. Runs every harness libfuzzer.mk
# built in OUT for FUZZ_SECONDS (default 30) on a scratch copy of its
# committed corpus, so that the inputs libFuzzer adds do not land in the
# source tree, and fails if any harness crashed, leaked, hung or found a
# property broken. What crashed is kept in OUT/../crashes/<what>-crash-*:
# fix weft, then commit that file into tests/fuzz/corpus/<what>/ under a
# name saying what it caught (crash-<description>), where make check
# replays it from then on.
#
# usage: run.sh OUT TESTS_FUZZ_SRCDIR; FUZZ_ONLY="frame env" runs those
# harnesses alone.
set -u
out=${1:?usage: run.sh OUT TESTS_FUZZ_SRCDIR}
src=${2:?usage: run.sh OUT TESTS_FUZZ_SRCDIR}
seconds=${FUZZ_SECONDS:-30}
crashes=$(dirname "$out")/crashes

case $seconds in
''|*[!0-9]*|0) echo "run.sh: FUZZ_SECONDS=$seconds is not a number of seconds"; exit 1 ;;
esac
mkdir -p "$crashes" || exit 1
scratch=$(mktemp -d "${TMPDIR:-/tmp}/weft-fuzz.XXXXXX") || exit 1
trap 'rm -rf "$scratch"' EXIT INT TERM

# Sanitizer reports name the line; UBSan aborts like ASan, so that
# libFuzzer keeps the input; other projects' leaks are theirs.
UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1${UBSAN_OPTIONS:+:$UBSAN_OPTIONS}"
LSAN_OPTIONS="suppressions=$src/lsan.supp:print_suppressions=0${LSAN_OPTIONS:+:$LSAN_OPTIONS}"
export UBSAN_OPTIONS LSAN_OPTIONS

failed=
total=0
for bin in "$out"/fuzz_*; do
    [ -x "$bin" ] || continue
    what=${bin##*/fuzz_}
    if [ -n "${FUZZ_ONLY:-}" ]; then
        case " $FUZZ_ONLY " in *" $what "*) ;; *) continue ;; esac
    fi
    mkdir -p "$scratch/$what"
    cp "$src/corpus/$what"/* "$scratch/$what/" 2>/dev/null
    set -- -max_total_time="$seconds" -timeout=30 -print_final_stats=1 \
        -artifact_prefix="$crashes/$what-"
    [ -f "$src/dict/$what.dict" ] && set -- "$@" -dict="$src/dict/$what.dict"
    asan=${ASAN_OPTIONS:-}
    case $what in
    sockets_handshake|shm_records)
        # A peer announces a message's size, and the transport buffers
        # that much when the message arrives before its receive, as MPI's
        # unexpected messages are; a size no allocation meets is refused
        # through malloc returning NULL. Under ASan a large allocation
        # touches its shadow (an eighth of it), so the harness caps
        # allocations where that stays small, and has them fail as
        # malloc would rather than stop the run.
        asan="allocator_may_return_null=1:max_allocation_size_mb=256${asan:+:$asan}" ;;
    esac
    log=$scratch/$what.log
    : >"$scratch/$what.start"
    printf '%s: fuzzing for %s s ... ' "$what" "$seconds"
    ASAN_OPTIONS=$asan "$bin" "$@" "$scratch/$what" >"$log" 2>&1
    rc=$?
    runs=$(sed -n 's/^Done \([0-9][0-9]*\) runs.*/\1/p' "$log" | tail -n 1)
    if [ "$rc" -eq 0 ] && [ -n "$runs" ]; then
        total=$((total + runs))
        echo "Done $runs runs, no crash"
    else
        echo "FAILED (exit $rc)"
        # The report: from the first error to libFuzzer's summary.
        sed -n '/ERROR: \|property violated/,/^SUMMARY/p' "$log" | head -n 80
        tail -n 5 "$log"
        find "$crashes" -name "$what-*" -newer "$scratch/$what.start" | sed 's/^/  input kept: /'
        failed="$failed $what"
    fi
done
if [ -n "$failed" ]; then
    echo "run.sh: fuzzing found problems in:$failed (inputs under $crashes)"
    exit 1
fi
echo "run.sh: $total runs in all, no crash"
