#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# weft_init with the topology: a transport that needs another rank on the
# node is dropped when there is none (kept when WEFT_TRANSPORTS forces it),
# rank 0 logs the topology and the rank x rank transport matrix once, and
# WEFT_TOPO_FILE replaces the probe (a file hwloc cannot read fails init).
set -u
top=${abs_top_builddir:-$(pwd)}
WEFTRUN=$top/tools/weftrun
HELLO=$top/examples/hello
[ -x "$WEFTRUN" ] && [ -x "$HELLO" ] || { echo "ERROR: build first"; exit 99; }
for so in plugins/sockets/.libs/weft-sockets.so tests/plugins/.libs/weft-needlocal.so; do
    [ -e "$top/$so" ] || { echo "SKIP: $so not built"; exit 77; }
done
tmp=$(mktemp -d) || exit 99
trap 'rm -rf "$tmp"' EXIT
# Only sockets and needlocal: the other test plugins would only add warnings.
mkdir "$tmp/plugins"
ln -s "$top/plugins/sockets/.libs/weft-sockets.so" "$top/tests/plugins/.libs/weft-needlocal.so" \
    "$tmp/plugins/"
export WEFT_PLUGIN_PATH=$tmp/plugins WEFT_TIMEOUT=30
unset WEFT_TRANSPORTS WEFT_TOPO_FILE WEFT_DEBUG WEFT_DEBUG_SUBSYS WEFT_HOSTID
fail=0
bad() { echo "FAIL: $*"; cat "$tmp/out"; fail=1; }

run() { # ranks, then VAR=value... for the job
    n=$1; shift
    env "$@" timeout 60 "$WEFTRUN" -n "$n" "$HELLO" >"$tmp/out" 2>&1
}

# One rank: nobody to share the node with.
run 1 WEFT_DEBUG=INFO WEFT_DEBUG_SUBSYS=TRANSPORT || bad "1 rank with needlocal failed"
grep -q "needlocal: not applicable: no other rank on this node" "$tmp/out" ||
    bad "needlocal not dropped in a job of one rank"

# Two ranks on this node: kept.
run 2 WEFT_DEBUG=INFO WEFT_DEBUG_SUBSYS=TRANSPORT || bad "2 ranks with needlocal failed"
grep -q "needlocal: not applicable" "$tmp/out" && bad "needlocal dropped with a local peer"

# Forced by name: kept, with a warning.
run 1 WEFT_TRANSPORTS=sockets,needlocal || bad "1 rank with needlocal forced failed"
grep -q "needlocal: kept because WEFT_TRANSPORTS names it" "$tmp/out" ||
    bad "no warning for a forced needlocal without local peer"

# The report: once, from rank 0, with a full matrix.
run 3 WEFT_DEBUG=INFO WEFT_DEBUG_SUBSYS=TOPO,TRANSPORT || bad "3 ranks failed"
[ "$(grep -c "transport matrix (row: sending rank" "$tmp/out")" = 1 ] || bad "matrix not logged once"
[ "$(grep -c "INFO TOPO topology from this host" "$tmp/out")" = 1 ] || bad "topology not logged once"
for r in 0 1 2; do
    grep -q "INFO TRANSPORT *$r: a a a\$" "$tmp/out" || bad "matrix row $r is not a a a"
    grep -q "INFO TOPO *$r: host " "$tmp/out" || bad "rank $r missing from the rank list"
done
grep -q "legend: a=sockets" "$tmp/out" || bad "no legend"
grep -q "; node NUMA" "$tmp/out" || bad "ranks of one node and NUMA node not shown as sharing"

# A topology file instead of the probe, and one hwloc cannot read.
run 2 WEFT_DEBUG=INFO WEFT_DEBUG_SUBSYS=TOPO WEFT_TOPO_FILE="$(cd "$(dirname "$0")" && pwd)/dgx8.xml" ||
    bad "2 ranks with WEFT_TOPO_FILE failed"
grep -q "nearest NIC of cuda7: mlx5_3 (same PCI switch)" "$tmp/out" || bad "WEFT_TOPO_FILE not used"
run 2 WEFT_TOPO_FILE="$tmp/nothing.xml" && bad "init succeeded with an unreadable WEFT_TOPO_FILE"
grep -q "WEFT_TOPO_FILE=$tmp/nothing.xml" "$tmp/out" || bad "the error does not name WEFT_TOPO_FILE"

[ "$fail" = 0 ] && echo "needlocal dropped and forced as expected; matrix and topology logged once"
exit "$fail"
