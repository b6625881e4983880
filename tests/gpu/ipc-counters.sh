#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# ipc-counters.sh: mp_gpu p2p over shm alone must move its large device
# messages by CUDA IPC: every rank's finalize line (shm: cuda: ipc_bytes=
# ...) shows IPC bytes and opens, and with the double's noipc fault none
# (the rings carry them, still correctly).
: "${abs_top_builddir:?}"
: "${abs_top_srcdir:=$abs_top_builddir}"
run=$abs_top_builddir/tests/mp/run.sh
spec=$abs_top_srcdir/tests/gpu/ipc-p2p.mp
out=$(mktemp) || exit 99
trap 'rm -f "$out"' EXIT

# count OUT FIELD: how many ranks' finalize lines have FIELD nonzero
count() {
    grep 'shm: cuda: ipc_bytes=' "$1" | grep -c " $2=[1-9]"
}

WEFT_DEBUG=INFO WEFT_DEBUG_SUBSYS=TRANSPORT "$run" "$spec" >"$out" 2>&1
rc=$?
[ $rc -eq 77 ] && { cat "$out"; exit 77; }
[ $rc -eq 0 ] || { cat "$out"; echo "ipc-counters.sh: p2p failed ($rc)"; exit 1; }
lines=$(grep -c 'shm: cuda: ipc_bytes=' "$out")
ipc=$(count "$out" ipc_bytes)
opens=$(count "$out" ipc_opens)
grep 'shm: cuda: ipc_bytes=' "$out"
# ranks "2 3": five ranks finalize in all, each receives large messages.
[ "$lines" -eq 5 ] && [ "$ipc" -eq 5 ] && [ "$opens" -eq 5 ] ||
    { echo "ipc-counters.sh: $lines finalize lines, $ipc with IPC bytes, $opens with opens; 5 each expected"; exit 1; }

WEFT_FAKECUDA_FAULTS=noipc WEFT_DEBUG=INFO WEFT_DEBUG_SUBSYS=TRANSPORT "$run" "$spec" >"$out" 2>&1 ||
    { cat "$out"; echo "ipc-counters.sh: p2p with noipc failed"; exit 1; }
grep 'shm: cuda: ' "$out"
grep -q 'shm: cuda: no IPC' "$out" ||
    { echo "ipc-counters.sh: noipc: shm did not say IPC is off"; exit 1; }
[ "$(count "$out" ipc_bytes)" -eq 0 ] ||
    { echo "ipc-counters.sh: noipc: IPC bytes counted"; exit 1; }
echo "ipc-counters.sh: IPC used by every rank; with noipc by none"
