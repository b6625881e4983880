#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# linkdown.sh: a host's link taken down in the middle of operations. Two
# simulated hosts (tests/netns/netns-lib.sh), two ranks each, run
# tests/faults/mp_fault over sockets between the hosts; once they run, the
# second host's eth0 goes down (ip link set eth0 down in its namespace),
# so that nothing it sends arrives and nothing tells the others why. Every
# rank must fail with a named error (WEFT_ERR_TIMEOUT or _PEER_LOST)
# within WEFT_TIMEOUT and a few seconds, a rank of the first host naming
# one of the second's (the others may name the neighbour they waited on),
# and every weftrun must exit non-zero.
#
#   linkdown.sh [KIND ...]        (default: p2p allreduce broadcast alltoall)
# Skipped (77) without root or network namespaces.
kinds=${*:-p2p allreduce broadcast alltoall}
nhosts=2
per_host=2
n=4
tmo=3
slack=5
. "${srcdir:-.}/tests/netns/netns-lib.sh"

netns_require
prog=$top/tests/faults/mp_fault
[ -x "$prog" ] || { echo "ERROR: $prog missing: build first"; exit 99; }
export WEFT_PLUGIN_PATH="$top/plugins/shm/.libs:$top/plugins/sockets/.libs" WEFT_TIMEOUT=$tmo
unset MASTER_ADDR MASTER_PORT RANK WORLD_SIZE WEFT_INIT_METHOD WEFT_RANK SLURM_PROCID \
    OMPI_COMM_WORLD_RANK PMIX_RANK PMIX_NAMESPACE WEFT_HOSTID
netns_create "$nhosts" || { echo "FAIL: cannot build $nhosts simulated hosts"; exit 1; }
now_ms() { date +%s%3N; }

fail=0
printf '%-10s %-44s %s\n' kind "outcomes (ranks 0-3)" "longest ms"
for kind in $kinds; do
    dir=$(mktemp -d /tmp/weft-linkdown.XXXXXX)
    chmod 0777 "$dir"
    export FAULT_DIR="$dir" FAULT_SECONDS=60
    netns_weftrun_opts="--tag-output --kill-grace $((tmo + slack + 5))"
    netns_run "$nhosts" "$per_host" $((tmo + slack + 40)) "$prog" "$kind" &
    job=$!
    waited=0
    while [ ! -e "$dir/ready" ] && [ $waited -lt 400 ]; do sleep 0.05; waited=$((waited + 1)); done
    sleep 0.1
    t_down=$(now_ms)
    ip netns exec "${tag}h1" ip link set eth0 down
    wait $job
    rc=$?
    ip netns exec "${tag}h1" ip link set eth0 up
    outcome="" longest=0 bad="" names_far=0
    for r in 0 1 2 3; do
        if [ ! -e "$dir/out.$r" ]; then
            bad="$bad rank $r reported nothing;"; outcome="$outcome NOREPORT"; continue
        fi
        read -r what at detail <"$dir/out.$r"
        d=$((at - t_down))
        [ $d -gt $longest ] && longest=$d
        [ $d -gt $(( (tmo + slack) * 1000 )) ] && bad="$bad rank $r late ($d ms);"
        case $what in
        WEFT_ERR_TIMEOUT | WEFT_ERR_PEER_LOST) ;;
        *) bad="$bad rank $r: $what;" ;;
        esac
        # A rank of host 0 that waits on host 1 directly names its rank; one
        # that waits on its neighbour, which waits on host 1, names that.
        if [ $r -lt 2 ]; then
            case $detail in *"rank 2"* | *"rank 3"*) names_far=1 ;; esac
        fi
        outcome="$outcome ${what#WEFT_ERR_}"
    done
    [ $names_far = 1 ] || bad="$bad no rank of host 0 names a rank of host 1;"
    [ $rc != 0 ] || bad="$bad the weftruns exited 0;"
    printf '%-10s %-44s %s%s\n' "$kind" "$outcome" "$longest" "${bad:+  FAILED:$bad}"
    if [ -n "$bad" ]; then
        fail=1
        netns_dump "$nhosts" | tail -n 20
    fi
    rm -rf "$dir"
done
exit $fail
