# SPDX-License-Identifier: BSD-3-Clause
# hosts.sh: the multi-host test, sourced by hosts-2.sh and hosts-4.sh with
# nhosts set: that many simulated hosts (tests/netns/netns-lib.sh), two ranks
# on each, started by one weftrun per host in multi-node mode:
#  1. the transport matrix that WEFT_DEBUG=INFO prints shows the node-local
#     transport inside each host (shm when built, else sockets) and
#     $between between hosts (sockets unless the caller sets it);
#  2. the collectives conformance programs pass across the hosts (on
#     device buffers with gpu=1).
# between=ib-verbs gives each host a port of the software RDMA device
# (tests/swrdma), its GIDs from the host's own address, and lets the ranks
# use nothing but the node-local transport and ib-verbs.
# gpu=1 (with between=ib-verbs) runs the programs on CUDA device buffers
# instead, on the CUDA test double (tests/fakecuda) with the cuda-ipc
# plugin loaded: GPUDirect RDMA between the hosts (dma-buf regions of the
# double that the software device accepts), CUDA IPC inside them, and
# collectives of a host's communicators GPU to GPU whatever their size.

nhosts=${nhosts:?}
per_host=2
n=$((nhosts * per_host))
. "${srcdir:-.}/tests/netns/netns-lib.sh"

netns_require
plugins=$top/plugins/sockets/.libs
local_transport=sockets
if [ -e "$top/plugins/shm/.libs/weft-shm.so" ]; then
    plugins=$plugins:$top/plugins/shm/.libs
    local_transport=shm
fi
between=${between:-sockets}
# need FILE WHAT: skip the test where FILE, which is WHAT, was not built.
need() {
    [ -e "$1" ] || { echo "SKIP: $2 is not built"; exit 77; }
}
if [ "$between" = ib-verbs ]; then
    need "$top/plugins/ib-verbs/.libs/weft-ib-verbs.so" "the ib-verbs transport"
    need "$top/tests/swrdma/.libs/libibverbs.so.1" "the software RDMA device"
    plugins=$plugins:$top/plugins/ib-verbs/.libs
    WEFT_TRANSPORTS=$local_transport,ib-verbs
    WEFT_IBVERBS_LIB=$top/tests/swrdma/.libs/libibverbs.so.1
    WEFT_SWRDMA_REGISTRY=weft-netns-$$
    WEFT_SWRDMA_CHECK_LOG=$netns_tmp/swrdma-check.log
    export WEFT_TRANSPORTS WEFT_IBVERBS_LIB WEFT_SWRDMA_REGISTRY WEFT_SWRDMA_CHECK_LOG
    trap 'netns_cleanup; rm -f "/dev/shm/$WEFT_SWRDMA_REGISTRY"*' EXIT
fi
progs="conf/conf --comms all --big 1048576
coll/mp_coll
coll/mp_coll_v
coll/mp_overlap
comm/mp_comm split group node dup mesh"
if [ "${gpu:-0}" = 1 ]; then
    [ "$between" = ib-verbs ] || { echo "hosts.sh: gpu=1 needs between=ib-verbs"; exit 99; }
    need "$top/plugins/cuda-ipc/.libs/weft-cuda-ipc.so" "the cuda-ipc plugin"
    need "$top/tests/fakecuda/.libs/libfakecuda.so" "the CUDA test double"
    plugins=$plugins:$top/plugins/cuda-ipc/.libs
    WEFT_TRANSPORTS=$WEFT_TRANSPORTS,cuda-ipc
    WEFT_CUDA_DRIVER=$top/tests/fakecuda/.libs/libfakecuda.so
    WEFT_CUDA_ALLOW_TEST_DRIVER=1
    WEFT_CUDA_COLL_MIN=0
    export WEFT_TRANSPORTS WEFT_CUDA_DRIVER WEFT_CUDA_ALLOW_TEST_DRIVER WEFT_CUDA_COLL_MIN
    progs="gpu/conf_gpu --comms all
gpu/mp_gpu coll
gpu/mp_gpu p2p
gpu/mp_gpu vmm"
fi
export WEFT_PLUGIN_PATH=$plugins WEFT_TIMEOUT=60
unset MASTER_ADDR MASTER_PORT RANK WORLD_SIZE WEFT_INIT_METHOD WEFT_RANK SLURM_PROCID \
    OMPI_COMM_WORLD_RANK PMIX_RANK PMIX_NAMESPACE WEFT_HOSTID
netns_create "$nhosts" || { echo "FAIL: cannot build $nhosts simulated hosts"; exit 1; }

fail=0

# 1. The transport matrix. Rank r is on host r / per_host.
if ! WEFT_DEBUG=INFO WEFT_DEBUG_SUBSYS=TRANSPORT netns_run "$nhosts" "$per_host" 60 \
        "$top/tests/p2p/mp_p2p" ring; then
    echo "FAIL: mp_p2p ring across $nhosts hosts"
    netns_dump "$nhosts"
    exit 1
fi
r=0
while [ "$r" -lt "$n" ]; do
    line=$(cat "$netns_tmp"/host*.out | grep "^\[$r\]:" | grep "transport per rank:" | head -1)
    [ -n "$line" ] || { echo "FAIL: rank $r printed no transport matrix"; fail=1; }
    p=0
    while [ "$p" -lt "$n" ]; do
        if [ $((p / per_host)) = $((r / per_host)) ]; then want=$local_transport; else want=$between; fi
        case "$line" in
        *" $p:$want"*) ;;
        *) echo "FAIL: rank $r reaches rank $p not through $want: $line"; fail=1 ;;
        esac
        p=$((p + 1))
    done
    r=$((r + 1))
done
[ "$fail" = 0 ] && echo "transport matrix at $n ranks on $nhosts hosts: $local_transport inside hosts, $between between"

# 2. Collectives across the hosts.
# conf: the conformance suite as tests/conf/all.mp runs it at 8 ranks (every communicator,
# the 1 Mi subset), with shm and sockets mixed in one job.
while IFS= read -r prog; do
    # shellcheck disable=SC2086 # prog carries its arguments
    if netns_run "$nhosts" "$per_host" 240 $top/tests/$prog </dev/null; then
        echo "$prog: passed at $n ranks on $nhosts hosts"
    else
        echo "FAIL: $prog at $n ranks on $nhosts hosts"
        netns_dump "$nhosts"
        fail=1
    fi
done <<EOF
$progs
EOF
if [ -n "${WEFT_SWRDMA_CHECK_LOG:-}" ] && [ -s "$WEFT_SWRDMA_CHECK_LOG" ]; then
    cat "$WEFT_SWRDMA_CHECK_LOG"
    echo "FAIL: the software RDMA device's checker reported the above"
    fail=1
fi
exit "$fail"
