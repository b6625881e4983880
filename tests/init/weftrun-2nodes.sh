#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# weftrun's multi-node mode, as torchrun's: two weftrun processes, one per
# "node" (node ranks 0 and 1, two ranks each, the same master address and
# token), start one job of 4 ranks that passes a token around its ring and
# runs the any-source test across both halves.
set -u
top=${abs_top_builddir:-$(pwd)}
WEFTRUN=$top/tools/weftrun
P2P=$top/tests/p2p/mp_p2p
[ -x "$WEFTRUN" ] && [ -x "$P2P" ] || { echo "ERROR: build first"; exit 99; }
[ -e "$top/plugins/sockets/.libs/weft-sockets.so" ] || { echo "SKIP: no sockets transport"; exit 77; }
export WEFT_PLUGIN_PATH="$top/plugins/sockets/.libs" WEFT_TIMEOUT=30
export WEFT_AUTH_TOKEN="two-nodes-$$"
unset MASTER_ADDR MASTER_PORT RANK WORLD_SIZE WEFT_INIT_METHOD WEFT_RANK SLURM_PROCID \
    OMPI_COMM_WORLD_RANK PMIX_RANK PMIX_NAMESPACE
tmp=$(mktemp -d) || exit 99
trap 'rm -rf "$tmp"' EXIT

run_job() { # $1 port, $2 subcommand
    for node in 1 0; do
        timeout 90 "$WEFTRUN" --nnodes 2 --node-rank "$node" --nproc-per-node 2 \
            --master-addr 127.0.0.1 --master-port "$1" --tag-output "$P2P" "$2" \
            >"$tmp/node$node.out" 2>&1 &
        eval "pid$node=\$!"
    done
    wait "$pid0"; rc0=$?
    wait "$pid1"; rc1=$?
}

fail=0
for sub in ring anysource; do
    for attempt in 1 2 3; do
        port=$((20000 + $(od -An -N2 -tu2 /dev/urandom | tr -d ' ') % 40000))
        run_job "$port" "$sub"
        grep -qi "address already in use" "$tmp"/node*.out || break
    done
    if [ "$rc0" != 0 ] || [ "$rc1" != 0 ] || ! grep -q "4 ranks passed" "$tmp/node0.out"; then
        echo "FAIL: mp_p2p $sub over two weftrun nodes: exit $rc0 and $rc1"
        cat "$tmp/node0.out" "$tmp/node1.out"
        fail=1
    else
        echo "two weftrun nodes, 4 ranks: mp_p2p $sub passed"
    fi
done
exit "$fail"
