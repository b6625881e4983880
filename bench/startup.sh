#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# startup.sh: how long a job takes from its launcher's exec to the end of
# its first allreduce, for weft (weftrun), Open MPI (mpirun, MPI_Init and
# MPI_Allreduce) and torch with Gloo (init_process_group and all_reduce,
# started by weftrun with the torchrun environment), at each rank count.
# The program (bench/startup.c, bench/startup_gloo.py) prints the time
# its allreduce returned on rank 0; the script subtracts the time it
# started the launcher. Finalization is not counted. Each figure is the
# median of REPS runs (default 5), the implementations taking turns.
#
#   bench/startup.sh [-r REPS] [-n "2 4 8"]
#
# Run from the top of a built tree. Needs Open MPI's development package
# and python3-torch for their columns (a dash where missing). A
# benchmark: figures, no verdict.
set -u
reps=5
ranks="2 4 8"
while getopts r:n: opt; do
    case $opt in
    r) reps=$OPTARG ;;
    n) ranks=$OPTARG ;;
    *) sed -n '3,16p' "$0"; exit 2 ;;
    esac
done
top=$(pwd)
srcdir=$(cd "$(dirname "$0")/.." && pwd)
[ -x "$top/tools/weftrun" ] || { echo "run from the top of a built tree (tools/weftrun)"; exit 2; }
plugins=$top/plugins/sockets/.libs
[ -e "$top/plugins/shm/.libs/weft-shm.so" ] && plugins=$plugins:$top/plugins/shm/.libs
export WEFT_PLUGIN_PATH=$plugins
python=${PYTHON:-/usr/bin/python3}
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT

# weft's program against the build tree's library, as an installed one
# would be (no libtool wrapper script in the timed exec).
cc -O2 -I"$srcdir/include" -I"$top/include" "$srcdir/bench/startup.c" -o "$tmp/weft" \
    -L"$top/.libs" -Wl,-rpath,"$top/.libs" -lweft 2>"$tmp/cc.log" ||
    { cat "$tmp/cc.log"; echo "startup.sh: cannot build bench/startup.c"; exit 1; }
peers=
if command -v mpicc.openmpi >/dev/null 2>&1 &&
    mpicc.openmpi -O2 -DSTARTUP_MPI "$srcdir/bench/startup.c" -o "$tmp/ompi" 2>>"$tmp/cc.log"; then
    peers="$peers ompi"
fi
"$python" -c 'import torch.distributed' 2>/dev/null && peers="$peers gloo"

now_us() { echo $(($(date +%s%N) / 1000)); }

# One start-up in milliseconds: $1 who, $2 ranks.
measure() {
    start=$(now_us)
    case $1 in
    weft) out=$("$top/tools/weftrun" -n "$2" "$tmp/weft" 2>/dev/null) ;;
    ompi) out=$(mpirun.openmpi --allow-run-as-root --oversubscribe -n "$2" "$tmp/ompi" \
                2>/dev/null) ;;
    gloo)
        rm -f "$tmp/gloo.store"
        out=$(GLOO_BENCH_FILE=$tmp/gloo.store "$top/tools/weftrun" -n "$2" "$python" \
              "$srcdir/bench/startup_gloo.py" 2>/dev/null) ;;
    esac
    # the sum proves the allreduce ran over every rank
    echo "$out" | awk -v s="$start" -v n="$2" '$2 == n { printf "%.1f\n", ($1 - s) / 1000 }'
}

median() {
    sort -g | awk '{ v[NR] = $1 } END { if (NR) print (NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2) }'
}

printf '%5s %10s %10s %10s %9s %9s\n' ranks "weft (ms)" "ompi (ms)" "gloo (ms)" ompi/weft gloo/weft
for n in $ranks; do
    for who in weft ompi gloo; do : >"$tmp/runs.$who"; done
    r=0
    while [ "$r" -lt "$reps" ]; do
        for who in weft $peers; do
            measure "$who" "$n" >>"$tmp/runs.$who"
        done
        r=$((r + 1))
    done
    line=$n
    for who in weft ompi gloo; do
        v=$(median <"$tmp/runs.$who")
        line="$line ${v:--}"
    done
    echo "$line" | awk '{
        r1 = ($2 != "-" && $3 != "-" && $2 > 0) ? sprintf("%.2f", $3 / $2) : "-";
        r2 = ($2 != "-" && $4 != "-" && $2 > 0) ? sprintf("%.2f", $4 / $2) : "-";
        printf "%5d %10s %10s %10s %9s %9s\n", $1, $2, $3, $4, r1, r2 }'
done
