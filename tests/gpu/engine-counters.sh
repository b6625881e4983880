#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# engine-counters.sh: mp_gpu coll over shm with cuda-ipc must run its
# collectives GPU to GPU inside the node: every rank's communicator line
# ("device collectives: N GPU to GPU, M staged") shows N > 0, and its
# PREMUL_SUM and mixed host/device calls staged (M > 0); cuda-ipc's
# finalize line shows peers' buffers mapped (opens > 0). With
# WEFT_CUDA_COLL=stage none runs GPU to GPU, and the results are checked
# all the same. mp_gpu vmm (ipc-vmm.mp) must import its peers' VMM
# allocations from descriptors they served (vmm_opens, vmm_fds_served),
# in its collectives (cuda-ipc's line) and its point-to-point messages
# (shm's line).
: "${abs_top_builddir:?}"
: "${abs_top_srcdir:=$abs_top_builddir}"
run=$abs_top_builddir/tests/mp/run.sh
spec=$abs_top_srcdir/tests/gpu/ipc-coll.mp
out=$(mktemp) || exit 99
trap 'rm -f "$out"' EXIT

WEFT_CUDA_COLL_MIN=0 WEFT_DEBUG=INFO WEFT_DEBUG_SUBSYS=COLL,TRANSPORT "$run" "$spec" >"$out" 2>&1
rc=$?
[ $rc -eq 77 ] && { cat "$out"; exit 77; }
[ $rc -eq 0 ] || { cat "$out"; echo "engine-counters.sh: coll failed ($rc)"; exit 1; }
grep 'communicator 0: device collectives:\|cuda-ipc: ipc: ' "$out"
# ranks "2 3": five ranks finalize in all.
lines=$(grep -c 'communicator 0: device collectives:' "$out")
gpu=$(grep 'communicator 0: device collectives:' "$out" | grep -c ': [1-9][0-9]* GPU to GPU, [1-9][0-9]* staged')
opens=$(grep 'cuda-ipc: ipc: ' "$out" | grep -c ' opens=[1-9]')
[ "$lines" -eq 5 ] && [ "$gpu" -eq 5 ] && [ "$opens" -eq 5 ] ||
    { echo "engine-counters.sh: $lines ranks counted, $gpu with calls both GPU to GPU and staged, $opens that mapped peers' memory; 5 each expected"; exit 1; }

WEFT_CUDA_COLL=stage WEFT_CUDA_COLL_MIN=0 WEFT_DEBUG=INFO WEFT_DEBUG_SUBSYS=COLL "$run" "$spec" >"$out" 2>&1 ||
    { cat "$out"; echo "engine-counters.sh: coll with WEFT_CUDA_COLL=stage failed"; exit 1; }
if grep -q 'device collectives:' "$out"; then
    grep 'device collectives:' "$out"
    echo "engine-counters.sh: WEFT_CUDA_COLL=stage: the engine still ran"
    exit 1
fi

WEFT_DEBUG=INFO WEFT_DEBUG_SUBSYS=TRANSPORT "$run" "$abs_top_srcdir/tests/gpu/ipc-vmm.mp" >"$out" 2>&1 ||
    { cat "$out"; echo "engine-counters.sh: vmm failed"; exit 1; }
grep 'cuda-ipc: ipc: \|shm: cuda: ipc_bytes' "$out"
for who in 'cuda-ipc: ipc: ' 'shm: cuda: ipc_bytes'; do
    vopens=$(grep "$who" "$out" | grep -c ' vmm_opens=[1-9]')
    served=$(grep "$who" "$out" | grep -c ' vmm_fds_served=[1-9]')
    [ "$vopens" -eq 5 ] && [ "$served" -eq 5 ] ||
        { echo "engine-counters.sh: vmm ($who): $vopens ranks imported VMM memory, $served served descriptors; 5 each expected"; exit 1; }
done
echo "engine-counters.sh: every rank ran collectives GPU to GPU and staged the rest; with WEFT_CUDA_COLL=stage none ran GPU to GPU; VMM descriptors crossed on every rank"
