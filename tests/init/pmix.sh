#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# weft_init under a PMIx launcher (Open MPI's mpirun): rank, size and the
# address exchange come from PMIx, with no MASTER_ADDR and no weft store.
# Skipped when weft was built without PMIx or mpirun is missing.
set -u
top=${abs_top_builddir:-$(pwd)}

grep -q '^#define WEFT_HAVE_PMIX 1' "$top/config.h" 2>/dev/null ||
    { echo "SKIP: weft was built without PMIx (apt-get install libpmix-dev)"; exit 77; }
command -v mpirun >/dev/null 2>&1 ||
    { echo "SKIP: no mpirun (apt-get install openmpi-bin)"; exit 77; }

export WEFT_PLUGIN_PATH="$top/plugins/sockets/.libs" WEFT_TIMEOUT=30
# The test may run as root (CI); Open MPI refuses that unless told.
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
unset MASTER_ADDR MASTER_PORT RANK WORLD_SIZE WEFT_INIT_METHOD WEFT_RANK SLURM_PROCID
out=$(mktemp) || exit 99
trap 'rm -f "$out"' EXIT
fail=0

timeout 60 mpirun --oversubscribe -x WEFT_DEBUG=INFO -x WEFT_DEBUG_SUBSYS=INIT -n 3 \
    "$top/tests/init/mp_init" >"$out" 2>&1
rc=$?
n=$(grep -c 'joining through PMIx' "$out")
ok=$(grep -c 'result=WEFT_SUCCESS' "$out")
if [ "$rc" != 0 ] || [ "$n" != 3 ] || [ "$ok" != 3 ]; then
    echo "FAIL: mp_init under mpirun -n 3: exit $rc, $n ranks joined through PMIx, $ok succeeded"
    cat "$out"
    fail=1
fi

# The transports' out-of-band exchange through PMIx's publish and lookup.
if ! timeout 60 mpirun --oversubscribe -n 3 "$top/tests/init/mp_oob" >"$out" 2>&1; then
    echo "FAIL: mp_oob under mpirun -n 3"
    cat "$out"
    fail=1
fi

for sub in ring anysource batch; do
    if ! timeout 60 mpirun --oversubscribe -n 4 "$top/tests/p2p/mp_p2p" "$sub" >"$out" 2>&1; then
        echo "FAIL: mp_p2p $sub under mpirun -n 4"
        cat "$out"
        fail=1
    fi
done
[ "$fail" = 0 ] && echo "PASS: weft_init through PMIx under mpirun; the out-of-band exchange;" \
    "ring, anysource, batch at 4 ranks"
exit "$fail"
