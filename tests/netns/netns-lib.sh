# SPDX-License-Identifier: BSD-3-Clause
# netns-lib.sh: simulated hosts for multi-host tests, sourced by the
# tests/netns/hosts-*.sh scripts.
#
# Each host is a network namespace with its own address on a bridge in the
# root namespace (10.77.S.H/24, S from this shell's pid so that concurrent
# runs do not collide), and its own WEFT_HOSTID, so weft sees one node per
# namespace: node-local pairs inside a namespace, the network between them.
# Everything created is deleted on exit, whatever the outcome.
#
# Needs root and `ip netns`; otherwise the test is skipped (exit 77) with
# the reason printed.

set -u
top=${abs_top_builddir:-$(pwd)}
WEFTRUN=$top/tools/weftrun
tag=w$$
subnet=$((($$ % 200) + 20))
bridge=${tag}br
created_ns=""

skip() {
    echo "SKIP: $*"
    exit 77
}

netns_cleanup() {
    for ns in $created_ns; do
        # Processes still in a namespace keep it alive: stop them first.
        for pid in $(ip netns pids "$ns" 2>/dev/null); do
            kill -9 "$pid" 2>/dev/null
        done
        ip netns del "$ns" 2>/dev/null
    done
    ip link del "$bridge" 2>/dev/null
    [ -n "${netns_tmp:-}" ] && rm -rf "$netns_tmp"
}

# netns_require: skips unless this shell may create namespaces.
netns_require() {
    [ -x "$WEFTRUN" ] || { echo "ERROR: $WEFTRUN missing: build first"; exit 99; }
    [ "$(id -u)" = 0 ] || skip "simulated hosts need root (ip netns)"
    command -v ip >/dev/null 2>&1 || skip "iproute2's ip is not installed"
    ip netns add "${tag}probe" 2>/dev/null || skip "cannot create a network namespace here"
    ip netns del "${tag}probe"
    trap netns_cleanup EXIT
    trap 'exit 1' HUP INT TERM
    netns_tmp=$(mktemp -d) || exit 99
}

# host_ip H: the address of host H.
host_ip() {
    echo "10.77.$subnet.$(($1 + 1))"
}

# netns_create N: hosts 0 .. N-1 joined by a bridge.
netns_create() {
    ip link add "$bridge" type bridge || return 1
    ip link set "$bridge" up || return 1
    h=0
    while [ "$h" -lt "$1" ]; do
        ns=${tag}h$h
        ip netns add "$ns" || return 1
        created_ns="$created_ns $ns"
        ip link add "${tag}v$h" type veth peer name "${tag}p$h" || return 1
        ip link set "${tag}p$h" netns "$ns" || return 1
        ip link set "${tag}v$h" master "$bridge" || return 1
        ip link set "${tag}v$h" up || return 1
        ip netns exec "$ns" ip link set lo up || return 1
        ip netns exec "$ns" ip link set "${tag}p$h" name eth0 || return 1
        ip netns exec "$ns" ip addr add "$(host_ip "$h")/24" dev eth0 || return 1
        ip netns exec "$ns" ip link set eth0 up || return 1
        h=$((h + 1))
    done
}

# netns_run NHOSTS PER_HOST TIMEOUT PROG ARGS...: one weftrun per host in
# multi-node mode; output of host H in $netns_tmp/hostH.out. Returns 0
# when every weftrun exited 0. netns_wrap, when set, names a function
# whose output for host H goes before that host's weftrun (a command
# such as taskset, with its arguments); netns_weftrun_opts replaces
# weftrun's options (default --tag-output).
netns_run() {
    nhosts=$1 per_host=$2 limit=$3
    shift 3
    # Below Linux's ephemeral range (32768-60999): a port there may be the
    # local end of a connection an earlier job of the same host left in
    # TIME_WAIT, and the store could not listen on it.
    port=$((20000 + $(od -An -N2 -tu2 /dev/urandom | tr -d ' ') % 12000))
    pids=""
    h=$((nhosts - 1))
    while [ "$h" -ge 0 ]; do
        # shellcheck disable=SC2046,SC2086 # words of the wrapper and options
        ip netns exec "${tag}h$h" ${netns_wrap:+$($netns_wrap "$h")} \
            env WEFT_HOSTID="host$h" WEFT_AUTH_TOKEN="netns-$$" \
            timeout -s KILL "$limit" "$WEFTRUN" --nnodes "$nhosts" --node-rank "$h" \
            --nproc-per-node "$per_host" --master-addr "$(host_ip 0)" \
            --master-port "$port" ${netns_weftrun_opts---tag-output} "$@" \
            >"$netns_tmp/host$h.out" 2>&1 &
        pids="$pids $!"
        h=$((h - 1))
    done
    status=0
    for pid in $pids; do
        wait "$pid" || status=1
    done
    return "$status"
}

# netns_dump NHOSTS: every host's output, for a failure report.
netns_dump() {
    h=0
    while [ "$h" -lt "$1" ]; do
        echo "---- host $h"
        cat "$netns_tmp/host$h.out"
        h=$((h + 1))
    done
}
