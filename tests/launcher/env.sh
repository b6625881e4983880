#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# weftrun -n 3 gives every rank the torchrun variables, weft's own (WEFT_RANK,
# WEFT_MASTER_PORT, ...) naming a store that listens, one random token, and
# WEFT_STORE_EXTERNAL=1; MASTER_PORT is a second port, free for the
# program's framework; two jobs side by side get different ports.
. "$(dirname "$0")/common.sh"

# is_port VALUE: a TCP port number.
is_port() {
    case $1 in
    '' | *[!0-9]*) return 1 ;;
    esac
    [ "$1" -gt 0 ] && [ "$1" -le 65535 ]
}

wr -n 3 --job-name envtest sh -c '
    echo "$RANK $WORLD_SIZE $LOCAL_RANK $LOCAL_WORLD_SIZE $GROUP_RANK $GROUP_WORLD_SIZE" \
         "$ROLE_RANK $ROLE_WORLD_SIZE $MASTER_ADDR $MASTER_PORT $WEFT_AUTH_TOKEN" \
         "$WEFT_STORE_EXTERNAL $WEFT_JOB_NAME" > "$0/env.$RANK"
    echo "$WEFT_RANK $WEFT_SIZE $WEFT_LOCAL_RANK $WEFT_LOCAL_SIZE $WEFT_MASTER_ADDR" \
         "$WEFT_MASTER_PORT $WEFT_INIT_METHOD" > "$0/weft.$RANK"
    ' "$tmp"
expect_status 0 $? "-n 3"

for r in 0 1 2; do
    [ -s "$tmp/env.$r" ] || fail "rank $r wrote nothing"
    set -- $(cat "$tmp/env.$r")
    [ "$#" -eq 13 ] || fail "rank $r: expected 13 values, got '$*'"
    [ "$1 $2 $3 $4 $5 $6 $7 $8" = "$r 3 $r 3 0 1 $r 3" ] ||
        fail "rank $r: RANK WORLD_SIZE LOCAL_RANK LOCAL_WORLD_SIZE GROUP_RANK" \
             "GROUP_WORLD_SIZE ROLE_RANK ROLE_WORLD_SIZE = '$1 $2 $3 $4 $5 $6 $7 $8'"
    [ "$9" = 127.0.0.1 ] || fail "rank $r: MASTER_ADDR=$9"
    port=${10} token=${11}
    is_port "$port" || fail "rank $r: MASTER_PORT=$port"
    [ "${#token}" -eq 32 ] || fail "rank $r: WEFT_AUTH_TOKEN '$token' is not 32 characters"
    case $token in
    *[!0-9a-f]*) fail "rank $r: WEFT_AUTH_TOKEN '$token' is not hexadecimal" ;;
    esac
    [ "${12}" = 1 ] || fail "rank $r: WEFT_STORE_EXTERNAL=${12}"
    [ "${13}" = envtest ] || fail "rank $r: WEFT_JOB_NAME=${13}"

    set -- $(cat "$tmp/weft.$r")
    [ "$#" -eq 7 ] || fail "rank $r: expected 7 WEFT_* values, got '$*'"
    [ "$1 $2 $3 $4 $5" = "$r 3 $r 3 127.0.0.1" ] ||
        fail "rank $r: WEFT_RANK WEFT_SIZE WEFT_LOCAL_RANK WEFT_LOCAL_SIZE" \
             "WEFT_MASTER_ADDR = '$1 $2 $3 $4 $5'"
    store=$6
    is_port "$store" || fail "rank $r: WEFT_MASTER_PORT=$store"
    [ "$store" != "$port" ] || fail "rank $r: MASTER_PORT is weft's store's port $store"
    [ "$7" = env:// ] || fail "rank $r: WEFT_INIT_METHOD=$7"
    if [ "$r" -eq 0 ]; then
        port0=$port store0=$store token0=$token
    else
        [ "$port" = "$port0" ] || fail "rank $r: MASTER_PORT $port, rank 0 got $port0"
        [ "$store" = "$store0" ] || fail "rank $r: WEFT_MASTER_PORT $store, rank 0 got $store0"
        [ "$token" = "$token0" ] || fail "rank $r: another token than rank 0's"
    fi
done

# Variables of an enclosing job are replaced, not inherited.
RANK=99 WORLD_SIZE=99 WEFT_RANK=98 WEFT_SIZE=98 WEFT_MASTER_PORT=1 WEFT_STORE_EXTERNAL=0 \
    WEFT_INIT_METHOD=file:///nonexistent/rdv \
    wr -n 1 sh -c 'echo "$RANK $WORLD_SIZE $WEFT_RANK $WEFT_SIZE $WEFT_STORE_EXTERNAL" \
                        "$WEFT_INIT_METHOD" > "$0/outer"
                   [ "$WEFT_MASTER_PORT" != 1 ] || echo "WEFT_MASTER_PORT=1" >> "$0/outer"' \
    "$tmp"
expect_status 0 $? "-n 1 inside another job's variables"
[ "$(cat "$tmp/outer")" = "0 1 0 1 1 env://" ] ||
    fail "inherited variables leaked: '$(cat "$tmp/outer")'"

# weft's store accepts connections on WEFT_MASTER_PORT while the job runs;
# nothing listens on MASTER_PORT, which the program's rank 0 can listen on
# (bash's /dev/tcp and python3; each part skipped without them).
if command -v bash >/dev/null 2>&1; then
    wr -n 1 bash -c 'exec 3<>"/dev/tcp/$WEFT_MASTER_ADDR/$WEFT_MASTER_PORT"' ||
        fail "a rank could not connect to the store at WEFT_MASTER_ADDR:WEFT_MASTER_PORT"
    wr -n 1 bash -c '! (exec 3<>"/dev/tcp/$MASTER_ADDR/$MASTER_PORT") 2>/dev/null' ||
        fail "something listens on MASTER_PORT before the program does"
fi
if command -v python3 >/dev/null 2>&1; then
    # torch's TCPStore listens on every address, dual-stack where it can.
    listen='
import os, socket
port = int(os.environ["MASTER_PORT"])
try:
    s = socket.socket(socket.AF_INET6)
    s.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 0)
    s.bind(("::", port))
except OSError:
    s = socket.socket(socket.AF_INET)
    s.bind(("0.0.0.0", port))
s.listen()
open(os.path.join(os.environ["D"], "listening"), "w").close()
c, _ = s.accept()
'
    connect='
import os, socket, time
d = os.environ["D"]
for _ in range(100):
    if os.path.exists(os.path.join(d, "listening")):
        break
    time.sleep(0.1)
socket.create_connection((os.environ["MASTER_ADDR"], int(os.environ["MASTER_PORT"])), 10)
'
    D=$tmp LISTEN=$listen CONNECT=$connect wr -n 2 sh -c \
        'if [ "$RANK" = 0 ]; then exec python3 -c "$LISTEN"; else exec python3 -c "$CONNECT"; fi'
    expect_status 0 $? "rank 0 listening on MASTER_PORT, rank 1 connecting to it"
fi

# MASTER_PORT of weftrun's environment is the user's choice for the
# framework, as torchrun's --master_port; when it is also --master-port,
# the store keeps it and the framework gets a free one; it must be a port.
user_port=$((20000 + $$ % 30000))
MASTER_PORT=$user_port wr -n 2 sh -c 'echo "$MASTER_PORT $WEFT_MASTER_PORT" > "$0/user.$RANK"' \
    "$tmp"
expect_status 0 $? "-n 2 with MASTER_PORT=$user_port"
for r in 0 1; do
    set -- $(cat "$tmp/user.$r")
    [ "$1" = "$user_port" ] || fail "rank $r: MASTER_PORT=$1, weftrun was given $user_port"
    [ "$2" != "$user_port" ] || fail "rank $r: weft's store took MASTER_PORT $user_port"
done
MASTER_PORT=$user_port wr -n 1 --master-port "$user_port" \
    sh -c 'echo "$MASTER_PORT $WEFT_MASTER_PORT" > "$0/same"' "$tmp" 2> "$tmp/same.err"
expect_status 0 $? "MASTER_PORT equal to --master-port"
expect_line "$tmp/same.err" 'MASTER_PORT .* port of weft' "MASTER_PORT equal to --master-port"
set -- $(cat "$tmp/same")
[ "$2" = "$user_port" ] || fail "--master-port $user_port, but WEFT_MASTER_PORT=$2"
is_port "$1" && [ "$1" != "$user_port" ] ||
    fail "MASTER_PORT=$1 with MASTER_PORT and --master-port both $user_port"
MASTER_PORT=http wr -n 1 true 2> "$tmp/bad"
expect_status 2 $? "MASTER_PORT=http"
expect_line "$tmp/bad" "MASTER_PORT 'http' is not a port" "MASTER_PORT=http"

# Two jobs at once: each hosts its own store on a port of its own, and each
# has its own token.
for j in a b; do
    wr -n 1 sh -c 'echo "$WEFT_MASTER_PORT $WEFT_AUTH_TOKEN" > "$0/job.$1"; touch "$0/up.$1"
                   i=0; while [ ! -e "$0/up.a" ] || [ ! -e "$0/up.b" ]; do
                       i=$((i + 1)); [ $i -gt 50 ] && exit 3; sleep 0.1; done' "$tmp" $j &
    eval "pid_$j=\$!"
done
background_pids="$pid_a $pid_b"
wait "$pid_a" || fail "concurrent job a failed"
wait "$pid_b" || fail "concurrent job b failed"
set -- $(cat "$tmp/job.a") $(cat "$tmp/job.b")
[ "$1" != "$3" ] || fail "two concurrent jobs got the same WEFT_MASTER_PORT $1"
[ "$2" != "$4" ] || fail "two concurrent jobs got the same token"
exit 0
