#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# netns-hier.sh: the node-aware allreduce against the flat ring across
# simulated hosts with an inter-node latency, as on a cluster.
#
# Builds 4 hosts (network namespaces on a bridge, tests/netns/netns-lib.sh),
# adds DELAY of one-way latency to every host's link with tc netem, starts
# 2 ranks on each (8 in all) and runs weft-bench's allreduce with the ring
# and with the hierarchical algorithm forced, then prints their times side
# by side with the ratio ring / hier (above 1: hier is faster).
#
# Usage, from the build tree, as root: bench/netns-hier.sh [DELAY [MAXBYTES]]
# (defaults 50us and 4M; DELAY 0 adds no latency and needs no netem). A
# benchmark, not a test: figures, no verdict.
set -u
delay=${1:-50us}
maxbytes=${2:-4M}
nhosts=4
per_host=2
srcdir=${srcdir:-$(cd "$(dirname "$0")/.." && pwd)}
abs_top_builddir=${abs_top_builddir:-$(pwd)}
. "$srcdir/tests/netns/netns-lib.sh"

netns_require
command -v tc >/dev/null 2>&1 || skip "tc (iproute2) is not installed"
bench=$top/tools/weft-bench
[ -x "$bench" ] || { echo "ERROR: $bench missing: build first"; exit 99; }
plugins=$top/plugins/sockets/.libs
[ -e "$top/plugins/shm/.libs/weft-shm.so" ] && plugins=$plugins:$top/plugins/shm/.libs
export WEFT_PLUGIN_PATH=$plugins WEFT_TIMEOUT=120
unset MASTER_ADDR MASTER_PORT RANK WORLD_SIZE WEFT_INIT_METHOD WEFT_RANK WEFT_HOSTID WEFT_ALGO

netns_create "$nhosts" || { echo "cannot build the simulated hosts"; exit 1; }
h=0
while [ "$delay" != 0 ] && [ "$h" -lt "$nhosts" ]; do
    ip netns exec "${tag}h$h" tc qdisc add dev eth0 root netem delay "$delay" ||
        skip "tc netem failed: this kernel lacks sch_netem (CONFIG_NET_SCH_NETEM); DELAY 0 runs without it"
    h=$((h + 1))
done

for algo in ring hier; do
    netns_run "$nhosts" "$per_host" 600 "$bench" -o allreduce -b 8 -e "$maxbytes" -f 4 \
        -w 5 -n 50 -a "$algo" || { echo "weft-bench -a $algo failed"; netns_dump "$nhosts"; exit 1; }
    # Rank 0's rows: size and out-of-place time.
    sed -n 's/^\[0\]: *\([0-9][0-9]*\) .*/&/p' "$netns_tmp/host0.out" |
        awk '{print $2, $7}' >"$netns_tmp/$algo.txt"
done

echo "allreduce float32, $((nhosts * per_host)) ranks on $nhosts hosts, one-way latency $delay"
printf '%12s %14s %14s %8s\n' "size (B)" "ring (us)" "hier (us)" "ring/hier"
join "$netns_tmp/ring.txt" "$netns_tmp/hier.txt" |
    awk '{ printf "%12d %14.1f %14.1f %8.2f\n", $1, $2, $3, $2 / $3 }'
