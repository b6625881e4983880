#!/bin/sh
# init-methods.sh: tutorial 1 started by hand, without weftrun, through
# tcp:// and file:// (its env:// run is 01_init.mp): four processes, rank
# and size on the command line, as a user's launcher script would.
set -u
top=${abs_top_builddir:-$(pwd)}
prog=$top/examples/tutorial/01_init
[ -x "$prog" ] || { echo "ERROR: $prog missing: build first"; exit 99; }
[ -e "$top/plugins/sockets/.libs/weft-sockets.so" ] || { echo "SKIP: no sockets transport"; exit 77; }
export WEFT_PLUGIN_PATH=$top/plugins/sockets/.libs WEFT_TIMEOUT=30
for v in RANK WORLD_SIZE LOCAL_RANK LOCAL_WORLD_SIZE MASTER_ADDR MASTER_PORT WEFT_INIT_METHOD \
         WEFT_RANK WEFT_SIZE SLURM_PROCID OMPI_COMM_WORLD_RANK PMIX_RANK; do
    unset "$v"
done
tmp=$(mktemp -d) || exit 99
trap 'rm -rf "$tmp"' EXIT

run4() { # $1 init method
    pids=""
    for r in 3 2 1 0; do
        timeout 60 "$prog" "$1" "$r" 4 >"$tmp/out$r" 2>&1 &
        pids="$pids $!"
    done
    status=0
    for p in $pids; do
        wait "$p" || status=1
    done
    return "$status"
}

fail=0
for attempt in 1 2 3; do
    port=$((20000 + $(od -An -N2 -tu2 /dev/urandom | tr -d ' ') % 40000))
    run4 "tcp://127.0.0.1:$port" && break
    grep -qi "address already in use" "$tmp"/out* || { fail=1; break; }
done
for method in tcp "file://$tmp/rendezvous"; do
    [ "$method" = tcp ] || run4 "$method" || fail=1
    for r in 0 1 2 3; do
        grep -q "^Rank $r of 4, local rank $r of 4$" "$tmp/out$r" || {
            echo "FAIL: tutorial 1 through ${method%%:*}: rank $r printed:"
            cat "$tmp/out$r"
            fail=1
        }
    done
    [ "$fail" = 0 ] && echo "tutorial 1 through ${method%%:*}://: 4 ranks ok"
done
exit "$fail"
