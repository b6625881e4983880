#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# ibv-counts.sh: the work behind a message over ib-verbs on the software
# RDMA device: send and receive work requests, completions, and payload
# bytes the CPU copied per byte delivered, for registered and unregistered
# memory at several sizes, with every receive posted before its message
# arrives (the receiver says so with a message of no bytes, whose work is
# in the counts) and with the sender running ahead. Run from the top of a built tree:
#
#   bench/ibv-counts.sh [COUNT]        (default 200 messages per row)
#
# These are counts, not times: the device is software and its speed says
# nothing about a NIC. WEFT_TEST_IBVERBS=hardware keeps the system's
# libibverbs instead, on a machine with an RDMA NIC.
top=$(pwd -P)
count=${1:-200}
prog=$top/bench/ibv_counts
[ -x "$prog" ] || { echo "ibv-counts.sh: $prog is missing: make first" >&2; exit 1; }
export WEFT_PLUGIN_PATH=$top/plugins/ib-verbs/.libs WEFT_TRANSPORTS=ib-verbs
# WEFT_TUNE=0: no probe messages at start, which would blur the counts.
export WEFT_DEBUG=INFO WEFT_DEBUG_SUBSYS=TRANSPORT WEFT_TIMEOUT=120 WEFT_TUNE=0
if [ "${WEFT_TEST_IBVERBS:-}" != hardware ]; then
    export WEFT_IBVERBS_LIB=$top/tests/swrdma/.libs/libibverbs.so.1
    export WEFT_SWRDMA_REGISTRY=weft-ibv-counts-$$
    trap 'rm -f "/dev/shm/$WEFT_SWRDMA_REGISTRY"' EXIT
fi
log=$(mktemp) || exit 1
trap 'rm -f "$log"; [ -n "${WEFT_SWRDMA_REGISTRY:-}" ] && rm -f "/dev/shm/$WEFT_SWRDMA_REGISTRY"' EXIT

# run BYTES REG POSTED N: the job, and the sums of both ranks' finalize
# counters: sends, bytes, send WRs, signalled, receive WRs, CQEs, copied.
run() {
    if ! "$top/tools/weftrun" -n 2 "$prog" "$1" "$4" "$2" "$3" >"$log" 2>&1; then
        echo "ibv_counts $1 $4 $2 $3 failed:" >&2
        cat "$log" >&2
        exit 1
    fi
    sed -n 's/.*counts: sends \([0-9]*\) of \([0-9]*\) bytes; send WRs \([0-9]*\) (\([0-9]*\) signalled), receive WRs \([0-9]*\), completions \([0-9]*\); payload bytes copied by the CPU \([0-9]*\)/\1 \2 \3 \4 \5 \6 \7/p' \
        "$log" | awk '{ for (i = 1; i <= 7; i++) t[i] += $i }
                      END { if (NR != 2) exit 1; print t[1], t[2], t[3], t[4], t[5], t[6], t[7] }'
}

# What weft_init and teardown cost (the tuner's probes, connection set-up),
# taken off every row.
base=$(run 0 0 0 0) || { echo "ibv-counts.sh: no counts in the log" >&2; cat "$log" >&2; exit 1; }
printf '%-9s %-11s %-8s %9s %9s %9s %9s %12s\n' bytes memory receive "send WRs" signalled \
    "recv WRs" CQEs "copied/byte"
for bytes in 8 4096 65536 1048576 16777216; do
    for reg in 1 0; do
        for posted in 1 0; do
            row=$(run "$bytes" "$reg" "$posted" "$count") || exit 1
            echo "$base $row" | awk -v b="$bytes" -v r="$reg" -v p="$posted" -v n="$count" '{
                printf "%-9s %-11s %-8s %9.2f %9.2f %9.2f %9.2f %12.4f\n", b,
                       r ? "registered" : "malloc", p ? "posted" : "late",
                       ($10 - $3) / n, ($11 - $4) / n, ($12 - $5) / n, ($13 - $6) / n,
                       ($14 - $7) / ($9 - $2) }'
        done
    done
done
echo "(per data message, both ranks, less what a job without messages does; the"
echo " posted rows include the receiver's message of no bytes before each one."
echo " Software device: functional counts only, no times.)"
