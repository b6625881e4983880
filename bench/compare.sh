#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# compare.sh: weft against Open MPI, MPICH and Gloo on this machine, the same
# operations and sizes, measured in one run, as a table of times and of
# ratios peer / weft (above 1: weft is faster).
#
# Usage, from the top of a built tree:
#   bench/compare.sh [-r REPS] [-n "2 4"] [-s "8 131072 2097152 33554432"]
#                    [-o "pingpong bw allreduce broadcast allgather reduce_scatter alltoall"]
#   bench/compare.sh -H "2 4" [-p "1 2"] [-r ...] [-s ...] [-o ...]
# Each figure is the median of REPS runs (default 5) of the mean time of
# one operation (the slowest rank's), after warm-up; the implementations
# take turns, one run each, REPS times. pingpong is half a round trip
# between ranks 0 and 1, bw one message's share of a window of 64
# nonblocking sends from rank 0 to rank 1 (the other ranks wait in both).
# Binding: every launcher binds each rank to a core (weftrun and Open MPI
# --bind-to core, MPICH's hydra -bind-to core; with more ranks than cores
# all three wrap round robin), so that no library gains or loses by where
# the scheduler puts unbound ranks. Core rather than none: mpirun binds by
# default, and two unbound ranks that land on one core cost 3 to 250 us a
# message.
# Installs Open MPI's and MPICH's development packages and python3-torch
# (Gloo, through torch.distributed) with apt-get when they are missing and
# this runs as root.
# -H "2 4" measures across that many simulated hosts instead (network
# namespaces, as root), -p ranks on each (default "1 2"): shared memory
# inside a host, TCP between, for weft, Open MPI and Gloo; MPICH's column
# stays empty (see bench/compare_hosts.sh); pingpong and bw run only
# with one rank a host, between hosts 0 and 1. Also prints this machine's
# single-core memcpy bandwidth and the 2-rank allreduce bus bandwidth at
# the largest size next to it, and how fast data crosses between two
# cores before and after the runs. A benchmark: figures, no verdict.
set -u
reps=5
ranks="2 4"
sizes="8 131072 2097152 33554432"
ops="pingpong bw allreduce broadcast allgather reduce_scatter alltoall"
hosts=""
per_host="1 2"
while getopts r:n:s:o:H:p: opt; do
    case $opt in
    r) reps=$OPTARG ;;
    n) ranks=$OPTARG ;;
    s) sizes=$OPTARG ;;
    o) ops=$OPTARG ;;
    H) hosts=$OPTARG ;;
    p) per_host=$OPTARG ;;
    *) sed -n '3,32p' "$0"; exit 2 ;;
    esac
done
top=$(pwd)
srcdir=$(cd "$(dirname "$0")/.." && pwd)
[ -x "$top/tools/weft-bench" ] || { echo "run from the top of a built tree (tools/weft-bench)"; exit 2; }
plugins=$top/plugins/sockets/.libs
[ -e "$top/plugins/shm/.libs/weft-shm.so" ] && plugins=$plugins:$top/plugins/shm/.libs
export WEFT_PLUGIN_PATH=$plugins

# mpicc without the development package (mpich alone, no libmpich-dev)
# has no mpi.h.
has_mpi() { # compiler
    command -v "$1" >/dev/null 2>&1 && echo '#include <mpi.h>' | "$1" -E -x c - >/dev/null 2>&1
}
if ! has_mpi mpicc.openmpi || ! has_mpi mpicc.mpich; then
    if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
        echo "installing Open MPI and MPICH (apt-get)..." >&2
        DEBIAN_FRONTEND=noninteractive apt-get install -y -q libopenmpi-dev openmpi-bin \
            mpich libmpich-dev >/dev/null 2>&1 || echo "apt-get failed" >&2
    fi
fi
# Debian's interpreter, the one python3-torch installs into (PATH may
# name another).
python=${PYTHON:-/usr/bin/python3}
[ -x "$python" ] || python=python3
if ! "$python" -c 'import torch.distributed' >/dev/null 2>&1 &&
    [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    echo "installing python3-torch for Gloo (apt-get)..." >&2
    DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends \
        python3-torch >/dev/null 2>&1 || echo "apt-get failed" >&2
fi
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
if [ -n "$hosts" ]; then
    . "$srcdir/bench/compare_hosts.sh"
    hosts_setup "$(echo $hosts | tr ' ' '\n' | sort -n | tail -1)"
    trap 'netns_cleanup; rm -rf "$tmp"' EXIT
    trap 'exit 1' HUP INT TERM
fi
peers=""
if command -v mpicc.openmpi >/dev/null 2>&1 &&
    mpicc.openmpi -O2 "$srcdir/bench/mpi_bench.c" -o "$tmp/ompi" 2>"$tmp/cc.log"; then
    peers="$peers ompi"
else
    echo "Open MPI is not available: its column stays empty" >&2
fi
if [ -n "$hosts" ]; then
    : # not across hosts (compare_hosts.sh)
elif command -v mpicc.mpich >/dev/null 2>&1 &&
    mpicc.mpich -O2 "$srcdir/bench/mpi_bench.c" -o "$tmp/mpich" 2>>"$tmp/cc.log"; then
    peers="$peers mpich"
else
    echo "MPICH is not available: its column stays empty" >&2
fi
if "$python" -c 'import torch.distributed as d; assert d.is_gloo_available()' >/dev/null 2>&1; then
    peers="$peers gloo"
else
    echo "torch with Gloo is not available: its column stays empty" >&2
fi
cc -O2 "$srcdir/bench/memcpy_bw.c" -o "$tmp/memcpy_bw" || exit 1
cc -O2 -pthread "$srcdir/bench/core_to_core.c" -o "$tmp/core_to_core" || exit 1
# How fast data crosses between cores now, and again at the end: on a
# virtual machine it changes for minutes at a time with where the host
# runs the virtual cores, and shared-memory figures with it (see
# core_to_core.c).
echo "before: $("$tmp/core_to_core")"

# Enough iterations for a stable mean, few for big sizes. The smallest
# sizes get more: some calls there move nothing (8 bytes over 4 ranks is
# a count of 0 per rank for an allgather, a reduce_scatter or an
# all-to-all) and take 10-20 ns, and 500 of them made a timed loop of
# 5-10 us, within the timer's and the scheduler's noise.
iters_for() { # bytes
    if [ "$1" -le 64 ]; then echo 5000; elif [ "$1" -le 65536 ]; then echo 500;
    elif [ "$1" -le 4194304 ]; then echo 50; else echo 8; fi
}

# Warm-up before the timed iterations, the same for every implementation:
# a fifth of their number (at least 5), then more until 100 ms passed.
# This machine's virtual cores run a burst of work slowly for its first
# few tens of milliseconds (a 128 KiB broadcast at 4 ranks: 125 us a call
# for the first 300 calls, 48 us after), and a few warm-up calls left
# that in the timed loop of the shorter runs, for whoever started fastest.
warmup_ms=100
warmup_for() { # iterations
    if [ "$1" -ge 25 ]; then echo $(($1 / 5)); else echo 5; fi
}

# One measurement in microseconds: $1 who, $2 ranks (HOSTSxPER_HOST
# across hosts), $3 op, $4 bytes.
measure() {
    it=$(iters_for "$4")
    wu=$(warmup_for "$it")
    case $2 in
    *x*)
        measure_hosts "$1" "${2%x*}" "${2#*x}" "$3" "$4" "$it" "$wu"
        return ;;
    esac
    case $1 in
    weft)
        # The CSV's times have a digit more than the table's (0.016, not
        # 0.02), as many as mpi_bench's and gloo_bench's.
        rm -f "$tmp/weft.csv"
        "$top/tools/weftrun" -n "$2" --bind-to core "$top/tools/weft-bench" -o "$3" -b "$4" \
            -e "$4" -w "$wu" --warmup-ms "$warmup_ms" -n "$it" -c 0 --csv "$tmp/weft.csv" \
            >/dev/null 2>&1
        awk -F, '$8 == "out-of-place" { print $9; exit }' "$tmp/weft.csv" 2>/dev/null ;;
    ompi)
        # overload-allowed: with more ranks than cores Open MPI refuses to
        # bind to core otherwise; the others wrap around silently.
        mpirun.openmpi --allow-run-as-root --oversubscribe --bind-to core:overload-allowed \
            -n "$2" "$tmp/ompi" "$3" "$4" "$it" "$wu" "$warmup_ms" \
            2>/dev/null | awk '{ print $3 }' ;;
    mpich)
        mpirun.mpich -bind-to core -n "$2" "$tmp/mpich" "$3" "$4" "$it" "$wu" "$warmup_ms" \
            2>/dev/null | awk '{ print $3 }' ;;
    gloo)
        # A fresh rendezvous file per run: torch's file store must not find
        # an old one. Fewer iterations, at most 100: each Python call costs
        # tens of us, Gloo's small calls hundreds.
        rm -f "$tmp/gloo.store"
        git=$(( (it + 4) / 5 ))
        [ "$git" -le 100 ] || git=100
        GLOO_BENCH_FILE=$tmp/gloo.store "$top/tools/weftrun" -n "$2" --bind-to core \
            "$python" "$srcdir/bench/gloo_bench.py" "$3" "$4" "$git" \
            "$(warmup_for "$git")" "$warmup_ms" \
            2>/dev/null | awk '{ print $3 }' ;;
    esac
}

median() { # the median of the numbers on stdin
    sort -g | awk '{ v[NR] = $1 } END { if (NR) print (NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2) }'
}

# Across hosts, a configuration is HOSTSxPER_HOST.
configs=$ranks
if [ -n "$hosts" ]; then
    configs=""
    for h in $hosts; do
        for p in $per_host; do
            configs="$configs ${h}x$p"
        done
    done
fi
printf '%-15s %5s %10s %12s %12s %12s %12s %9s %9s %9s\n' op ranks bytes "weft (us)" \
    "ompi (us)" "mpich (us)" "gloo (us)" ompi/weft mpich/weft gloo/weft
for n in $configs; do
    for op in $ops; do
        # Across hosts ranks 0 and 1 share host 0 unless it has one rank:
        # point-to-point between hosts is measured with one rank a host.
        case $op:$n in
        pingpong:*x1 | bw:*x1) ;;
        pingpong:*x* | bw:*x*) continue ;;
        esac
        for bytes in $sizes; do
            line="$op $n $bytes"
            # Repetitions interleaved, each implementation once per turn:
            # this machine's speed drifts by 2-5x over minutes, and all of
            # one implementation's runs before the next's would put the
            # drift into the ratios.
            for who in weft ompi mpich gloo; do
                : >"$tmp/runs.$who"
            done
            r=0
            while [ "$r" -lt "$reps" ]; do
                for who in weft $peers; do
                    measure "$who" "$n" "$op" "$bytes" >>"$tmp/runs.$who"
                done
                r=$((r + 1))
            done
            for who in weft ompi mpich gloo; do
                v=$(median <"$tmp/runs.$who")
                line="$line ${v:--}"
            done
            echo "$line" | awk '{
                r1 = ($4 != "-" && $5 != "-" && $4 > 0) ? sprintf("%.2f", $5 / $4) : "-";
                r2 = ($4 != "-" && $6 != "-" && $4 > 0) ? sprintf("%.2f", $6 / $4) : "-";
                r3 = ($4 != "-" && $7 != "-" && $4 > 0) ? sprintf("%.2f", $7 / $4) : "-";
                printf "%-15s %5s %10d %12s %12s %12s %12s %9s %9s %9s\n", $1, $2, $3, $4, $5,
                    $6, $7, r1, r2, r3 }'
        done
    done
done | tee "$tmp/table"

memcpy=$("$tmp/memcpy_bw")
big=$(echo $sizes | tr ' ' '\n' | sort -n | tail -1)
t2=$(awk -v b="$big" '$1 == "allreduce" && $2 == 2 && $3 == b { print $4 }' "$tmp/table")
echo
echo "after: $("$tmp/core_to_core")"
echo "single-core memcpy bandwidth: $memcpy GB/s"
if [ -n "$t2" ] && [ "$t2" != - ]; then
    awk -v b="$big" -v t="$t2" -v m="$memcpy" 'BEGIN {
        bus = b / t / 1e3;   # 2 ranks: busbw = algbw x 2(n-1)/n = algbw
        printf "allreduce %d B at 2 ranks: busbw %.2f GB/s = %.2f x memcpy\n", b, bus, bus / m }'
fi
