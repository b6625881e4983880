#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# memlock.sh: ib-verbs under a low RLIMIT_MEMLOCK, on the software RDMA
# device, as a process without CAP_IPC_LOCK (setpriv drops it; the limit
# does not apply to a process that has it, as root's usually do):
#  1. 1 MiB, below what the transport pins whatever the job does: every
#     rank fails at once with WEFT_ERR_PLUGIN and a message that gives the
#     limit, what is needed and how to raise it; no hang.
#  2. 8 MiB: the transport starts; registering 16 MiB is refused with
#     WEFT_ERR_NO_MEMORY naming the limit, and the buffer, unregistered,
#     still travels (tests/ibv/mp_ibv_mem.c memlock).
top=$(pwd -P)
weftrun=$top/tools/weftrun
[ -e "$top/plugins/ib-verbs/.libs/weft-ib-verbs.so" ] ||
    { echo "SKIP: the ib-verbs transport is not built"; exit 77; }
[ -e "$top/tests/swrdma/.libs/libibverbs.so.1" ] ||
    { echo "SKIP: the software RDMA device is not built"; exit 77; }
for tool in prlimit setpriv timeout; do
    command -v "$tool" >/dev/null 2>&1 || { echo "SKIP: $tool (util-linux) is missing"; exit 77; }
done
export WEFT_PLUGIN_PATH=$top/plugins/ib-verbs/.libs WEFT_TRANSPORTS=ib-verbs WEFT_TIMEOUT=30
export WEFT_IBVERBS_LIB=$top/tests/swrdma/.libs/libibverbs.so.1
export WEFT_SWRDMA_REGISTRY=weft-memlock-$$
out=$(mktemp) || exit 99
# The registry, and a creator's temporary one (.new<pid>) where a rank
# was killed while it made it.
trap 'rm -f "$out" "/dev/shm/$WEFT_SWRDMA_REGISTRY"*' EXIT

# limited BYTES CMD...: CMD with RLIMIT_MEMLOCK at BYTES and no CAP_IPC_LOCK.
limited() {
    bytes=$1
    shift
    timeout -s KILL 90 prlimit --memlock="$bytes" \
        setpriv --inh-caps=-ipc_lock --ambient-caps=-ipc_lock --bounding-set=-ipc_lock "$@"
}
fail=0

limited 1048576 "$weftrun" -n 2 --timeout 60 "$top/tests/p2p/mp_p2p" pingpong >"$out" 2>&1
status=$?
if [ "$status" -eq 0 ] || [ "$status" -eq 137 ] || [ "$status" -eq 124 ]; then
    echo "FAIL: 1 MiB of locked memory: the job exited $status instead of failing at once"
    fail=1
elif ! grep -q "RLIMIT_MEMLOCK is 1 MiB (hard limit 1 MiB) but the transport pins at least" "$out"; then
    echo "FAIL: 1 MiB of locked memory: no message that names the limit"
    fail=1
else
    echo "1 MiB: refused at start: $(grep -o 'RLIMIT_MEMLOCK is 1 MiB[^:]*' "$out" | head -n 1)"
fi
[ "$fail" -eq 0 ] || cat "$out"

if limited 8388608 "$weftrun" -n 2 --timeout 60 "$top/tests/ibv/mp_ibv_mem" memlock >"$out" 2>&1 &&
    [ "$(grep -c 'registration refused' "$out")" -eq 2 ]; then
    echo "8 MiB: $(grep -m 1 'registration refused' "$out" | sed 's/^[^:]*: *//' | cut -c1-160)"
else
    echo "FAIL: 8 MiB of locked memory: mp_ibv_mem memlock"
    cat "$out"
    fail=1
fi
exit "$fail"
