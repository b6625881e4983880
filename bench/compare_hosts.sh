# SPDX-License-Identifier: BSD-3-Clause
# compare_hosts.sh: compare.sh's mode across simulated hosts (-H), sourced
# by compare.sh after it set top, srcdir, tmp, python and the plugin path.
#
# Each host is a network namespace on a bridge (tests/netns/netns-lib.sh).
# Every implementation uses its node-local transport inside a host and the
# kernel's TCP between hosts:
#  - weft: one weftrun per host in multi-node mode, shm inside, sockets
#    between (WEFT_HOSTID names the host);
#  - Open MPI: one mpirun in host 0, its daemons started in the other
#    hosts by a launch agent in place of ssh; pml ob1 with the btls vader
#    (inside) and tcp (between) over the hosts' eth0. Each host runs its
#    processes with a hostname of its own (a UTS namespace): Open MPI
#    tells nodes apart by hostname, and with one name it would put every
#    rank on one node and take shared memory between the hosts;
#  - Gloo: one weftrun per host starting the Python ranks, which meet
#    through a file store and talk over eth0 (GLOO_SOCKET_IFNAME).
# MPICH is left out here: its column stays empty.
#
# Placement is the same for the three: rank r, the l-th of host h, runs on
# core (h * PER_HOST + l) mod CORES. Each host's processes are confined
# to their cores with taskset (weftrun then binds within that set); Open
# MPI gets the same places from a rankfile, since its binding ignores the
# mask it starts in (on every host it took core 0, and a ping-pong between
# two ranks spinning on one core took 4 ms, a scheduler tick).

. "$srcdir/tests/netns/netns-lib.sh"

# hosts_setup MAXHOSTS: the namespaces and Open MPI's launch agent, or
# exit with the reason.
hosts_setup() {
    [ "$(id -u)" = 0 ] || { echo "-H needs root (ip netns)"; exit 2; }
    command -v ip >/dev/null 2>&1 || { echo "-H needs iproute2's ip"; exit 2; }
    command -v unshare >/dev/null 2>&1 || { echo "-H needs util-linux's unshare"; exit 2; }
    netns_tmp=$tmp/netns
    mkdir -p "$netns_tmp"
    netns_create "$1" || { echo "cannot build the simulated hosts"; exit 1; }
    hosts_cores=$(nproc)
    # The agent, called as ssh would be: HOST COMMAND... It runs the
    # daemon in the namespace whose address HOST is, under its hostname.
    cat >"$tmp/agent" <<EOF
#!/bin/sh
h=\$((\${1##*.} - 1))
shift
exec ip netns exec ${tag}h\$h unshare --uts sh -c "hostname ${tag}host\$h && exec \$*"
EOF
    chmod +x "$tmp/agent"
    # Open MPI's and Gloo's ranks must not find weft's variables.
    unset MASTER_ADDR MASTER_PORT RANK WORLD_SIZE WEFT_INIT_METHOD WEFT_RANK WEFT_HOSTID WEFT_ALGO
    export WEFT_AUTH_TOKEN="compare-$$"
}

# hosts_cpus H PER_HOST: the cores of host H's ranks, as taskset takes them.
hosts_cpus() {
    l=0 list=""
    while [ "$l" -lt "$2" ]; do
        list="$list${list:+,}$((($1 * $2 + l) % hosts_cores))"
        l=$((l + 1))
    done
    echo "$list"
}

# hosts_weftrun NHOSTS PER_HOST ENV PROG ARGS...: one weftrun per host in
# multi-node mode, every process with the environment assignments ENV;
# host 0's output on stdout. Returns 0 when every host's weftrun did.
hosts_weftrun() {
    nh=$1 ph=$2 envs=$3
    shift 3
    port=$((20000 + $(od -An -N2 -tu2 /dev/urandom | tr -d ' ') % 40000))
    pids=""
    h=$((nh - 1))
    while [ "$h" -ge 1 ]; do
        # shellcheck disable=SC2086 # ENV is a list of assignments
        ip netns exec "${tag}h$h" taskset -c "$(hosts_cpus "$h" "$ph")" \
            env WEFT_HOSTID="host$h" $envs timeout -s KILL 600 "$top/tools/weftrun" \
            --nnodes "$nh" --node-rank "$h" --nproc-per-node "$ph" --master-addr "$(host_ip 0)" \
            --master-port "$port" --bind-to core "$@" >/dev/null 2>&1 &
        pids="$pids $!"
        h=$((h - 1))
    done
    # shellcheck disable=SC2086
    ip netns exec "${tag}h0" taskset -c "$(hosts_cpus 0 "$ph")" \
        env WEFT_HOSTID=host0 $envs timeout -s KILL 600 "$top/tools/weftrun" \
        --nnodes "$nh" --node-rank 0 --nproc-per-node "$ph" --master-addr "$(host_ip 0)" \
        --master-port "$port" --bind-to core "$@" 2>/dev/null
    status=$?
    for pid in $pids; do
        wait "$pid" || status=1
    done
    return "$status"
}

# hosts_mpirun NHOSTS PER_HOST PROG ARGS...: Open MPI over TCP between
# the hosts, shared memory inside them.
hosts_mpirun() {
    nh=$1 ph=$2
    shift 2
    : >"$tmp/hostfile"
    : >"$tmp/rankfile"
    h=0 r=0
    while [ "$h" -lt "$nh" ]; do
        echo "$(host_ip "$h") slots=$ph" >>"$tmp/hostfile"
        l=0
        while [ "$l" -lt "$ph" ]; do
            echo "rank $r=$(host_ip "$h") slot=$(((h * ph + l) % hosts_cores))" >>"$tmp/rankfile"
            r=$((r + 1)) l=$((l + 1))
        done
        h=$((h + 1))
    done
    ip netns exec "${tag}h0" unshare --uts sh -c "hostname ${tag}host0 && exec timeout -s KILL 600 \
        mpirun.openmpi --allow-run-as-root --oversubscribe -n $((nh * ph)) \
        --hostfile $tmp/hostfile --rankfile $tmp/rankfile --mca plm_rsh_agent $tmp/agent \
        --mca pml ob1 --mca btl tcp,vader,self --mca btl_tcp_if_include eth0 \
        --mca oob_tcp_if_include eth0 $*" 2>/dev/null
}

# measure_hosts WHO NHOSTS PER_HOST OP BYTES ITERS WARMUP: one
# measurement in microseconds, as compare.sh's measure.
measure_hosts() {
    case $1 in
    weft)
        rm -f "$tmp/weft.csv"
        hosts_weftrun "$2" "$3" "" "$top/tools/weft-bench" -o "$4" -b "$5" -e "$5" -w "$7" \
            --warmup-ms "$warmup_ms" -n "$6" -c 0 --csv "$tmp/weft.csv" >/dev/null
        awk -F, '$8 == "out-of-place" { print $9; exit }' "$tmp/weft.csv" 2>/dev/null ;;
    ompi)
        hosts_mpirun "$2" "$3" "$tmp/ompi" "$4" "$5" "$6" "$7" "$warmup_ms" | awk '{ print $3 }' ;;
    gloo)
        rm -f "$tmp/gloo.store"
        git=$((($6 + 4) / 5))
        [ "$git" -le 100 ] || git=100
        hosts_weftrun "$2" "$3" "GLOO_BENCH_FILE=$tmp/gloo.store GLOO_SOCKET_IFNAME=eth0" \
            "$python" "$srcdir/bench/gloo_bench.py" "$4" "$5" "$git" "$(warmup_for "$git")" \
            "$warmup_ms" | awk '{ print $3 }' ;;
    esac
}
