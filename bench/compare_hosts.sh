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

# hosts_taskset H: the words that confine host H's processes to its
# cores (netns_run's netns_wrap).
hosts_taskset() {
    echo "taskset -c $(hosts_cpus "$1" "$hosts_per_host")"
}

# hosts_weftrun NHOSTS PER_HOST ENV PROG ARGS...: one weftrun per host in
# multi-node mode (netns_run), every process with the environment
# assignments ENV and bound to its host's cores; host 0's output (stdout
# and stderr) on stdout. Returns 0 when every host's weftrun did.
hosts_weftrun() {
    hosts_per_host=$2
    (
        # shellcheck disable=SC2086 # ENV is a list of assignments
        [ -z "$3" ] || export $3
        netns_wrap=hosts_taskset
        netns_weftrun_opts="--bind-to core"
        nh=$1 ph=$2
        shift 3
        netns_run "$nh" "$ph" 600 "$@"
        status=$?
        cat "$netns_tmp/host0.out"
        exit "$status"
    )
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
            "$warmup_ms" | awk -v op="$4" '$1 == op { print $3 }' ;;
    esac
}
