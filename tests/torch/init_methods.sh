#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# init_methods.sh: backend "weft" started through torch's tcp:// and
# file:// init methods by processes started by hand, at 3 ranks (a world
# and a sub-group each); and a job whose last rank dies, where the others
# must get weft's error, not hang.
me=init_methods.sh
. "${abs_top_srcdir:?}/tests/torch/common.sh"

# run_job NAME METHOD [lose]: three ranks; each one's output in NAME.<rank>.
run_job() {
    name=$1 method=$2
    shift 2
    pids=
    for r in 0 1 2; do
        timeout 120 "$TORCH_PYTHON" "$src/tests/torch/init_job.py" "$method" $r 3 "$@" \
            > "$work/$name.$r" 2>&1 &
        pids="$pids $!"
    done
    r=0 bad=
    for p in $pids; do
        wait $p || bad="$bad $r:$?"
        r=$((r + 1))
    done
    # Ranks that end with os._exit leave their job's files in /dev/shm,
    # which weft sweeps only once they are a minute old: remove those of
    # jobs started here whose ranks are all gone.
    for bell in $(find /dev/shm -maxdepth 1 -name 'weft-*-bell-*' -newer "$work/start"); do
        job=${bell#/dev/shm/weft-}
        job=${job%%-bell-*}
        live=0
        for b in /dev/shm/weft-"$job"-bell-*; do
            kill -0 "${b##*-}" 2>/dev/null && live=1
        done
        [ $live = 0 ] && rm -f /dev/shm/weft-"$job"-*
    done
    echo "$bad"
}

touch "$work/start"
port=$((20000 + $$ % 20000))
for method in "tcp://127.0.0.1:$port" "file://$work/store"; do
    bad=$(run_job ok "$method")
    for r in 0 1 2; do
        grep -q "^rank $r: ok" "$work/ok.$r" || bad="$bad $r"
    done
    [ -z "$bad" ] || { tail -n 20 "$work"/ok.*; fail "$method: ranks$bad failed"; }
    echo "$me: $method: 3 ranks and a sub-group"
done

WEFT_TIMEOUT=20
bad=$(run_job lose "tcp://127.0.0.1:$((port + 1))" lose)
[ "$bad" = " 2:3" ] || { tail -n 20 "$work"/lose.*; fail "exit statuses$bad, want only rank 2's 3"; }
for r in 0 1; do
    grep -q "^rank $r: lost the last rank after" "$work/lose.$r" ||
        { cat "$work/lose.$r"; fail "rank $r did not report the lost rank"; }
    sed -n "s/^\(rank $r: lost the last rank after [0-9.]* s\).*/$me: \1/p" "$work/lose.$r"
done
