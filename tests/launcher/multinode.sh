#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# Two weftruns on 127.0.0.1 acting as two nodes of 2 ranks: ranks 0-3 with
# the right variables, node 0 hosting weft's store on --master-port, every
# rank getting the same MASTER_PORT for the program's framework (chosen by
# node 0, free, another port than the store's), both passing on the shared
# WEFT_AUTH_TOKEN.
. "$(dirname "$0")/common.sh"

WEFT_AUTH_TOKEN=multinode-test-$$
export WEFT_AUTH_TOKEN
unset MASTER_PORT

# Each rank records its variables. Node 1's ranks check that the store of
# node 0 accepts connections and that nothing listens on MASTER_PORT yet
# (bash's /dev/tcp; without bash they only record); node 0's ranks keep
# node 0's weftrun, and so its store, up until node 1 is done, and then
# rank 0 listens on MASTER_PORT as a framework's rank 0 would (python3;
# skipped without it).
rank_script='
    d=$0
    echo "$RANK $LOCAL_RANK $WORLD_SIZE $LOCAL_WORLD_SIZE $GROUP_RANK $GROUP_WORLD_SIZE" \
         "$ROLE_RANK $ROLE_WORLD_SIZE $MASTER_ADDR $WEFT_AUTH_TOKEN $WEFT_STORE_EXTERNAL" \
         "$WEFT_RANK $WEFT_LOCAL_RANK $WEFT_SIZE $WEFT_LOCAL_SIZE $WEFT_MASTER_ADDR" \
         "$WEFT_MASTER_PORT" > "$d/env.$RANK"
    echo "$MASTER_PORT" > "$d/framework.$RANK"
    if [ "$GROUP_RANK" = 0 ]; then
        touch "$d/node0-up.$LOCAL_RANK"
        i=0
        while [ ! -e "$d/node1-done" ]; do
            i=$((i + 1)); [ $i -gt 100 ] && exit 3; sleep 0.1
        done
        if [ "$RANK" = 0 ] && command -v python3 > /dev/null 2>&1; then
            python3 -c "import os, socket
s = socket.socket()
s.bind((\"0.0.0.0\", int(os.environ[\"MASTER_PORT\"])))
s.listen()" || exit 5
            touch "$d/listened"
        fi
    elif command -v bash > /dev/null 2>&1; then
        bash -c "exec 3<>/dev/tcp/\$WEFT_MASTER_ADDR/\$WEFT_MASTER_PORT" || exit 4
        touch "$d/connected.$RANK"
        if ! bash -c "exec 3<>/dev/tcp/\$MASTER_ADDR/\$MASTER_PORT" 2> /dev/null; then
            touch "$d/nobody-on-master-port.$RANK"
        fi
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
    want="$r $local 4 2 $node 2 $r 4 127.0.0.1 $WEFT_AUTH_TOKEN 1 $r $local 4 2 127.0.0.1 $port"
    [ "$(cat "$tmp/env.$r")" = "$want" ] ||
        fail "rank $r: got '$(cat "$tmp/env.$r")', expected '$want'"
done
framework=$(cat "$tmp/framework.0")
case $framework in
'' | *[!0-9]*) fail "rank 0: MASTER_PORT=$framework" ;;
esac
[ "$framework" -gt 0 ] && [ "$framework" -le 65535 ] || fail "rank 0: MASTER_PORT=$framework"
[ "$framework" != "$port" ] || fail "MASTER_PORT is weft's store's port $port"
for r in 1 2 3; do
    [ "$(cat "$tmp/framework.$r")" = "$framework" ] ||
        fail "rank $r: MASTER_PORT $(cat "$tmp/framework.$r"), rank 0 got $framework"
done
if command -v bash > /dev/null 2>&1; then
    for r in 2 3; do
        [ -e "$tmp/connected.$r" ] || fail "rank $r could not reach node 0's store"
        [ -e "$tmp/nobody-on-master-port.$r" ] ||
            fail "rank $r: something listens on MASTER_PORT $framework already"
    done
fi
if command -v python3 > /dev/null 2>&1; then
    [ -e "$tmp/listened" ] || fail "rank 0 could not listen on MASTER_PORT $framework"
fi
if grep -q 'accepts any client' "$tmp/err0" "$tmp/err1"; then
    fail "notice about a missing token although WEFT_AUTH_TOKEN is set"
fi

# Without WEFT_AUTH_TOKEN: one line of notice on each node, and an empty
# token. Node 1 starts first and waits for node 0's store, from which it
# takes the MASTER_PORT of node 0's environment rather than its own; node
# 0's rank keeps the store up until node 1's has run, as weft_init would.
unset WEFT_AUTH_TOKEN
user_port=$((20000 + ($$ * 13) % 30000))
[ "$user_port" != "$port" ] || user_port=$((user_port + 1))
MASTER_PORT=$((user_port + 1)) wr --nnodes 2 --node-rank 1 --nproc-per-node 1 \
    --master-addr 127.0.0.1 --master-port "$port" \
    sh -c 'echo "[${WEFT_AUTH_TOKEN-unset}] $MASTER_PORT" > "$0/token.1"' "$tmp" \
    2> "$tmp/err1" &
node1=$!
background_pids=$node1
sleep 0.5
MASTER_PORT=$user_port wr --nnodes 2 --node-rank 0 --nproc-per-node 1 \
    --master-addr 127.0.0.1 --master-port "$port" \
    sh -c 'echo "[${WEFT_AUTH_TOKEN-unset}] $MASTER_PORT" > "$0/token.0"
           i=0
           while [ ! -e "$0/token.1" ]; do
               i=$((i + 1)); [ $i -gt 100 ] && exit 3; sleep 0.1
           done' "$tmp" \
    2> "$tmp/err0"
status0=$?
wait "$node1"
status1=$?
expect_status 0 "$status0" "node 0 without a token ($(cat "$tmp/err0"))"
expect_status 0 "$status1" "node 1 without a token ($(cat "$tmp/err1"))"
for n in 0 1; do
    [ "$(cat "$tmp/token.$n")" = "[] $user_port" ] ||
        fail "node $n without WEFT_AUTH_TOKEN, MASTER_PORT=$user_port on node 0:" \
             "$(cat "$tmp/token.$n")"
    [ "$(grep -c 'accepts any client' "$tmp/err$n")" -eq 1 ] ||
        fail "node $n: expected one notice about the missing token: $(cat "$tmp/err$n")"
done
expect_line "$tmp/err1" "MASTER_PORT is $((user_port + 1)) here but $user_port on node 0" \
    "node 1 with a MASTER_PORT of its own"
exit 0
