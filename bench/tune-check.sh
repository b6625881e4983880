#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# tune-check.sh: does the tuner pick the fastest algorithm? For each
# operation, runs weft-bench once with the tuner's choice, once with the
# model's alone (WEFT_TUNE_ADAPT=0: no timing of close algorithms on the
# calls) and once forcing each algorithm (-a), in one go, and prints per
# size every time (us, out of place), the fastest, and the tuner's time
# over the fastest one's.
# The runs take turns, REPS rounds of them, and each time is the best of
# its rounds, so that a burst of load on a shared machine does not land on
# one algorithm only. The algorithms are every one weft knows for the
# operation (as WEFT_ALGO lists them); a size an algorithm cannot run is
# left out of its column. The last line of each table counts the sizes
# where the tuner's choice, and the model's, is within 10% of the
# fastest. Each size warms up for 100 ms besides weft-bench's iterations:
# the first call of an algorithm that maps the node's pipelined segment
# (16 MiB, reserved at once) pays milliseconds, which 20 warm-up calls
# spread into the timed ones, and the first size to use it looked 3 times
# slower than it is; and the tuner's timing of close algorithms runs its
# first cycles there.
#
#   bench/tune-check.sh [-n RANKS] [-b MIN] [-e MAX] [-r REPS] [OPS...]
#
# Run from the build tree (it uses tools/weftrun and tools/weft-bench, and
# the sockets and shm plugins there, as an installed weft would); extra
# weft-bench options in BENCH_OPTS.
set -e

ranks=4 min=8 max=32M reps=3
while getopts n:b:e:r: opt; do
    case $opt in
    n) ranks=$OPTARG ;;
    b) min=$OPTARG ;;
    e) max=$OPTARG ;;
    r) reps=$OPTARG ;;
    *) echo "usage: $0 [-n RANKS] [-b MIN] [-e MAX] [-r REPS] [OPS...]" >&2; exit 2 ;;
    esac
done
shift $((OPTIND - 1))
[ $# -gt 0 ] || set -- allreduce allgather reduce_scatter

top=$(cd "$(dirname "$0")/.." && pwd)
if [ -z "${WEFT_PLUGIN_PATH:-}" ]; then
    WEFT_PLUGIN_PATH=$top/plugins/sockets/.libs
    [ -e "$top/plugins/shm/.libs/weft-shm.so" ] &&
        WEFT_PLUGIN_PATH=$WEFT_PLUGIN_PATH:$top/plugins/shm/.libs
fi
export WEFT_PLUGIN_PATH
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# Every algorithm of op, from weft's own refusal of a name it does not
# know ("... (valid: ring, rd, ...)").
algos_of() {
    "$top/tools/weftrun" -n 1 "$top/tools/weft-bench" -o "$1" -a no-such-algorithm -b 8 \
        -e 8 2>&1 | sed -n 's/.*(valid: \([^)]*\)).*/\1/p' | head -n 1 | tr -d ','
}

for op in "$@"; do
    names="tuner model $(algos_of "$op")"
    r=0
    while [ $r -lt "$reps" ]; do
        for a in $names; do
            force= adapt=1
            case $a in
            tuner) ;;
            model) adapt=0 ;;
            *) force="-a $a" ;;
            esac
            # shellcheck disable=SC2086
            WEFT_TUNE_ADAPT=$adapt "$top/tools/weftrun" -n "$ranks" "$top/tools/weft-bench" \
                -o "$op" -b "$min" -e "$max" $force --warmup-ms 100 ${BENCH_OPTS:-} \
                --csv "$tmp/$op.$a.$r.csv" >/dev/null 2>&1 || true
        done
        r=$((r + 1))
    done
    echo "# $op, $ranks ranks: time (us) per algorithm, tuner / fastest"
    for a in $names; do
        echo "$a"
    done | awk -v dir="$tmp" -v op="$op" -v reps="$reps" '
        { name[NR] = $1; n = NR }
        END {
            for (i = 1; i <= n; i++)
                for (r = 0; r < reps; r++) {
                    f = dir "/" op "." name[i] "." r ".csv"
                    while ((getline line < f) > 0) {
                        split(line, v, ",")
                        if (v[8] != "out-of-place")
                            continue
                        if (!(v[3] in seen)) { seen[v[3]] = 1; sizes[++ns] = v[3] }
                        # shared takes 8 KiB (WEFT__SHARED_SLOT) at most: forced
                        # beyond, the tuner chooses again, which is no column
                        if (name[i] == "shared" && v[3] + 0 > 8192)
                            continue
                        if (!((v[3], i) in t) || v[9] < t[v[3], i])
                            t[v[3], i] = v[9]
                    }
                    close(f)
                }
            printf "%10s", "bytes"
            for (i = 1; i <= n; i++)
                printf " %12s", name[i]
            printf " %12s %7s\n", "fastest", "ratio"
            for (s = 1; s <= ns; s++) {
                z = sizes[s]; best = 0
                printf "%10s", z
                for (i = 1; i <= n; i++) {
                    if (!((z, i) in t)) {
                        printf " %12s", "-"
                        continue
                    }
                    printf " %12.1f", t[z, i]
                    if (i > 1 && (best == 0 || t[z, i] < t[z, best]))
                        best = i
                }
                if (!best || !((z, 1) in t)) {
                    printf "\n"
                    continue
                }
                counted++
                good += t[z, 1] <= 1.1 * t[z, best]
                model_good += (z, 2) in t && t[z, 2] <= 1.1 * t[z, best]
                printf " %12s %7.2f%s\n", name[best], t[z, 1] / t[z, best],
                       (t[z, 1] > 1.1 * t[z, best] ? "  >10%" : "")
            }
            printf "# tuner within 10%% of the fastest at %d of %d sizes (the model alone at %d)\n",
                   good, counted, model_good
        }'
done
