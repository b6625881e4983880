#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# shm-mixed-rings.sh: ranks that set different WEFT_SHM_RING_SIZE values
# still talk: a sender cuts its records to a quarter of the receiver's ring,
# not of its own (rank 0 keeps the default 1 MiB ring, rank 1 takes 8 KiB,
# so rank 0's own 256 KiB records could never fit in rank 1's ring). A
# 256 MiB message goes both ways, through the ring (no cross memory attach).
top=${abs_top_builddir:-$(pwd)}
shm_dir=$top/plugins/shm/.libs
prog=$top/tests/p2p/mp_p2p

[ -x "$top/tools/weftrun" ] || { echo "FAIL: $top/tools/weftrun is missing: build first"; exit 1; }
[ -e "$shm_dir/weft-shm.so" ] || { echo "SKIP: the shm transport is not built"; exit 77; }
[ -x "$prog" ] || { echo "FAIL: $prog is missing: run make check"; exit 1; }

WEFT_PLUGIN_PATH=$shm_dir WEFT_TRANSPORTS=shm WEFT_SHM_CMA=0 WEFT_TIMEOUT=30
export WEFT_PLUGIN_PATH WEFT_TRANSPORTS WEFT_SHM_CMA WEFT_TIMEOUT
# Each rank picks its ring size from RANK, which weftrun sets.
timeout 120 "$top/tools/weftrun" -n 2 sh -c \
    '[ "$RANK" = 0 ] || export WEFT_SHM_RING_SIZE=8192; exec "$0" "$@"' \
    "$prog" big || { echo "FAIL: mp_p2p big with 1 MiB and 8 KiB rings"; exit 1; }
echo "mp_p2p big passed with rings of 1 MiB and 8 KiB"
