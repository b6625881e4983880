#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# Runs one topology fixture: tests/topo/NAME.xml through weft-info with
# WEFT_TOPO_FILE, compared with NAME.console beside it (what weft concludes:
# counts, devices, NUMA nodes, nearest NIC of each GPU). Then --dot must
# render with graphviz and --xml must load back into lstopo, each checked
# only where the tool is installed.
set -u
xml=$1
top=${abs_top_builddir:-$(pwd)}
info=$top/tools/weft-info
[ -x "$info" ] || { echo "ERROR: build tools/weft-info first"; exit 99; }
dir=$(cd "$(dirname "$xml")" && pwd) || exit 99
name=$(basename "$xml" .xml)
tmp=$(mktemp -d) || exit 99
trap 'rm -rf "$tmp"' EXIT
unset WEFT_DEBUG WEFT_TRANSPORTS

# A relative file name keeps the expected output free of build paths.
(cd "$dir" && WEFT_TOPO_FILE=$name.xml "$info" --topology) >"$tmp/out" 2>&1 || {
    echo "FAIL: weft-info --topology on $name.xml"; cat "$tmp/out"; exit 1; }
if ! diff -u "$dir/$name.console" "$tmp/out"; then
    echo "FAIL: $name.xml: weft-info --topology differs from $name.console"
    exit 1
fi
echo "$name.xml: topology as expected"

WEFT_TOPO_FILE=$dir/$name.xml "$info" --dot >"$tmp/dot" || { echo "FAIL: --dot"; exit 1; }
grep -q "^graph weft_topology {" "$tmp/dot" || { echo "FAIL: --dot wrote no graph"; exit 1; }
if command -v dot >/dev/null 2>&1; then
    dot -Tsvg "$tmp/dot" >"$tmp/svg" || { echo "FAIL: graphviz rejects --dot"; exit 1; }
    echo "$name.xml: --dot renders"
else
    echo "$name.xml: graphviz not installed, --dot not rendered"
fi

WEFT_TOPO_FILE=$dir/$name.xml "$info" --xml >"$tmp/xml" || { echo "FAIL: --xml"; exit 1; }
if command -v lstopo-no-graphics >/dev/null 2>&1; then
    # The export must describe the same machine: same GPUs and NICs again.
    (cd "$tmp" && WEFT_TOPO_FILE=xml "$info" --topology) | tail -n +2 >"$tmp/again"
    tail -n +2 "$tmp/out" | diff -u - "$tmp/again" ||
        { echo "FAIL: --xml does not load back to the same topology"; exit 1; }
    lstopo-no-graphics --if xml -i "$tmp/xml" --of console >/dev/null ||
        { echo "FAIL: lstopo rejects --xml"; exit 1; }
    echo "$name.xml: --xml loads back"
fi
exit 0
