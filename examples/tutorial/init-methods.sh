#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# init-methods.sh: tutorial 1 started by hand, without weftrun, the three
# ways torch's init_process_group knows: env:// (torchrun's variables),
# tcp:// and file:// (rank and size on the command line). Four processes
# each time, as a user's launcher script would start them.
set -u
top=${abs_top_builddir:-$(pwd)}
prog=$top/examples/tutorial/01_init
[ -x "$prog" ] || { echo "ERROR: $prog missing: build first"; exit 99; }
[ -e "$top/plugins/sockets/.libs/weft-sockets.so" ] || { echo "SKIP: no sockets transport"; exit 77; }
export WEFT_PLUGIN_PATH="$top/plugins/sockets/.libs" WEFT_TIMEOUT=30
for v in RANK WORLD_SIZE LOCAL_RANK LOCAL_WORLD_SIZE MASTER_ADDR MASTER_PORT WEFT_INIT_METHOD \
         WEFT_RANK WEFT_SIZE SLURM_PROCID OMPI_COMM_WORLD_RANK PMIX_RANK; do
    unset "$v"
done
tmp=$(mktemp -d) || exit 99
trap 'rm -rf "$tmp"' EXIT

run4() { # $1: the init method; $port: a free port for env:// and tcp://
    pids=""
    for r in 3 2 1 0; do
        if [ "$1" = env:// ]; then
            RANK=$r WORLD_SIZE=4 LOCAL_RANK=$r LOCAL_WORLD_SIZE=4 MASTER_ADDR=127.0.0.1 \
                MASTER_PORT=$port timeout 60 "$prog" env:// >"$tmp/out$r" 2>&1 &
        else
            timeout 60 "$prog" "$1" "$r" 4 >"$tmp/out$r" 2>&1 &
        fi
        pids="$pids $!"
    done
    status=0
    for p in $pids; do
        wait "$p" || status=1
    done
    return "$status"
}

fail=0
for scheme in env tcp file; do
    # Another program may take the port between choosing and listening.
    for attempt in 1 2 3; do
        port=$((20000 + $(od -An -N2 -tu2 /dev/urandom | tr -d ' ') % 40000))
        case $scheme in
        env) method=env:// ;;
        tcp) method=tcp://127.0.0.1:$port ;;
        file) method=file://$tmp/rendezvous-$attempt ;;
        esac
        run4 "$method" && status=0 || status=1
        [ "$status" = 0 ] && break
        grep -qi "address already in use" "$tmp"/out* || break
    done
    ok=$((1 - status))
    for r in 0 1 2 3; do
        grep -q "^Rank $r of 4, local rank $r of 4$" "$tmp/out$r" || ok=0
    done
    if [ "$ok" = 1 ]; then
        echo "tutorial 1 through $scheme://: 4 ranks ok"
    else
        echo "FAIL: tutorial 1 through $scheme:// ($method):"
        for r in 0 1 2 3; do
            sed "s/^/rank $r: /" "$tmp/out$r"
        done
        fail=1
    fi
done
exit "$fail"
