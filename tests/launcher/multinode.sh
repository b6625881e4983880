#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# Two weftruns on 127.0.0.1 acting as two nodes of 2 ranks: ranks 0-3 with
# the right variables, node 0 hosting the store on --master-port, both
# passing on the shared WEFT_AUTH_TOKEN.
. "$(dirname "$0")/common.sh"

WEFT_AUTH_TOKEN=multinode-test-$$
export WEFT_AUTH_TOKEN

# Each rank records its variables. Node 1's ranks check that the store of
# node 0 accepts connections (bash's /dev/tcp; without bash they only
# record); node 0's ranks keep node 0's weftrun, and so its store, up until
# node 1 is done.
rank_script='
    d=$0
    echo "$RANK $LOCAL_RANK $WORLD_SIZE $LOCAL_WORLD_SIZE $GROUP_RANK $GROUP_WORLD_SIZE" \
         "$ROLE_RANK $ROLE_WORLD_SIZE $MASTER_ADDR $MASTER_PORT $WEFT_AUTH_TOKEN" \
         "$WEFT_STORE_EXTERNAL" > "$d/env.$RANK"
    if [ "$GROUP_RANK" = 0 ]; then
        touch "$d/node0-up.$LOCAL_RANK"
        i=0
        while [ ! -e "$d/node1-done" ]; do
            i=$((i + 1)); [ $i -gt 100 ] && exit 3; sleep 0.1
        done
    elif command -v bash > /dev/null 2>&1; then
        bash -c "exec 3<>/dev/tcp/\$MASTER_ADDR/\$MASTER_PORT" || exit 4
        touch "$d/connected.$RANK"
    fi'

# A fixed port may be taken: try a few, telling a busy port (node 0 cannot
# host the store and exits 1 before starting any rank) from other failures.
started=
for try in 1 2 3 4 5; do
    port=$((20000 + ($$ * 7 + try * 7919) % 40000))
    "$WEFTRUN" --nnodes 2 --node-rank 0 --nproc-per-node 2 --master-addr 127.0.0.1 \
        --master-port "$port" sh -c "$rank_script" "$tmp" 2> "$tmp/err0" &
    node0=$!
    background_pids=$node0
    i=0
    while [ $i -lt 100 ]; do
        if wait_files 2 0 "$tmp/node0-up.*"; then
            started=yes
            break
        fi
        kill -0 "$node0" 2>/dev/null || break
        sleep 0.1
        i=$((i + 1))
    done
    [ -n "$started" ] && break
    wait "$node0"
    status=$?
    grep -q 'cannot host the rendezvous store' "$tmp/err0" ||
        fail "node 0 exited $status before its ranks started: $(cat "$tmp/err0")"
done
[ -n "$started" ] || fail "node 0 could not host the store on 5 ports: $(cat "$tmp/err0")"

wr --nnodes 2 --node-rank 1 --nproc-per-node 2 --master-addr 127.0.0.1 \
    --master-port "$port" sh -c "$rank_script" "$tmp" 2> "$tmp/err1"
status1=$?
touch "$tmp/node1-done"
wait "$node0"
status0=$?
expect_status 0 "$status1" "node 1 ($(cat "$tmp/err1"))"
expect_status 0 "$status0" "node 0 ($(cat "$tmp/err0"))"

for r in 0 1 2 3; do
    [ -s "$tmp/env.$r" ] || fail "rank $r wrote nothing"
    node=$((r / 2)) local=$((r % 2))
    want="$r $local 4 2 $node 2 $r 4 127.0.0.1 $port $WEFT_AUTH_TOKEN 1"
    [ "$(cat "$tmp/env.$r")" = "$want" ] ||
        fail "rank $r: got '$(cat "$tmp/env.$r")', expected '$want'"
done
if command -v bash > /dev/null 2>&1; then
    for r in 2 3; do
        [ -e "$tmp/connected.$r" ] || fail "rank $r could not reach node 0's store"
    done
fi
if grep -q 'accepts any client' "$tmp/err0" "$tmp/err1"; then
    fail "notice about a missing token although WEFT_AUTH_TOKEN is set"
fi

# Without WEFT_AUTH_TOKEN: one line of notice, and an empty token.
unset WEFT_AUTH_TOKEN
wr --nnodes 2 --node-rank 1 --nproc-per-node 1 --master-addr 127.0.0.1 \
    --master-port "$port" sh -c 'echo "[${WEFT_AUTH_TOKEN-unset}]" > "$0/token"' "$tmp" \
    2> "$tmp/err1"
expect_status 0 $? "node 1 without a token"
[ "$(cat "$tmp/token")" = "[]" ] || fail "token without WEFT_AUTH_TOKEN: $(cat "$tmp/token")"
[ "$(grep -c 'accepts any client' "$tmp/err1")" -eq 1 ] ||
    fail "expected one notice about the missing token: $(cat "$tmp/err1")"
exit 0
