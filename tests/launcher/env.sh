#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# weftrun -n 3 gives every rank the torchrun variables, a store that
# listens, one random token, and WEFT_STORE_EXTERNAL=1; two jobs side by side
# get different ports.
. "$(dirname "$0")/common.sh"

wr -n 3 --job-name envtest sh -c '
    echo "$RANK $WORLD_SIZE $LOCAL_RANK $LOCAL_WORLD_SIZE $GROUP_RANK $GROUP_WORLD_SIZE" \
         "$ROLE_RANK $ROLE_WORLD_SIZE $MASTER_ADDR $MASTER_PORT $WEFT_AUTH_TOKEN" \
         "$WEFT_STORE_EXTERNAL $WEFT_JOB_NAME" > "$0/env.$RANK"
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
    case $port in
    '' | *[!0-9]*) fail "rank $r: MASTER_PORT=$port" ;;
    esac
    [ "$port" -gt 0 ] && [ "$port" -le 65535 ] || fail "rank $r: MASTER_PORT=$port"
    [ "${#token}" -eq 32 ] || fail "rank $r: WEFT_AUTH_TOKEN '$token' is not 32 characters"
    case $token in
    *[!0-9a-f]*) fail "rank $r: WEFT_AUTH_TOKEN '$token' is not hexadecimal" ;;
    esac
    [ "${12}" = 1 ] || fail "rank $r: WEFT_STORE_EXTERNAL=${12}"
    [ "${13}" = envtest ] || fail "rank $r: WEFT_JOB_NAME=${13}"
    if [ "$r" -eq 0 ]; then
        port0=$port token0=$token
    else
        [ "$port" = "$port0" ] || fail "rank $r: MASTER_PORT $port, rank 0 got $port0"
        [ "$token" = "$token0" ] || fail "rank $r: another token than rank 0's"
    fi
done

# Variables of an enclosing job are replaced, not inherited.
RANK=99 WORLD_SIZE=99 MASTER_PORT=1 WEFT_STORE_EXTERNAL=0 \
    wr -n 1 sh -c 'echo "$RANK $WORLD_SIZE $WEFT_STORE_EXTERNAL" > "$0/outer"' "$tmp"
expect_status 0 $? "-n 1 inside another job's variables"
[ "$(cat "$tmp/outer")" = "0 1 1" ] || fail "inherited variables leaked: '$(cat "$tmp/outer")'"

# The store weftrun hosts accepts connections on MASTER_PORT while the job
# runs (bash's /dev/tcp; skipped without bash).
if command -v bash >/dev/null 2>&1; then
    wr -n 1 bash -c 'exec 3<>"/dev/tcp/$MASTER_ADDR/$MASTER_PORT"' ||
        fail "a rank could not connect to the store at MASTER_ADDR:MASTER_PORT"
fi

# Two jobs at once: each hosts its own store on a port of its own, and each
# has its own token.
for j in a b; do
    wr -n 1 sh -c 'echo "$MASTER_PORT $WEFT_AUTH_TOKEN" > "$0/job.$1"; touch "$0/up.$1"
                   i=0; while [ ! -e "$0/up.a" ] || [ ! -e "$0/up.b" ]; do
                       i=$((i + 1)); [ $i -gt 50 ] && exit 3; sleep 0.1; done' "$tmp" $j &
    eval "pid_$j=\$!"
done
background_pids="$pid_a $pid_b"
wait "$pid_a" || fail "concurrent job a failed"
wait "$pid_b" || fail "concurrent job b failed"
set -- $(cat "$tmp/job.a") $(cat "$tmp/job.b")
[ "$1" != "$3" ] || fail "two concurrent jobs got the same MASTER_PORT $1"
[ "$2" != "$4" ] || fail "two concurrent jobs got the same token"
exit 0
