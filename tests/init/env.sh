#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# env:// by hand, as torchrun's variables would set it up: three ranks with
# RANK, WORLD_SIZE, MASTER_ADDR and MASTER_PORT and nothing else; rank 0
# hosts the store. Ranks 1 and 2 start first and must wait for it. Once
# found by detection (no init_method), once named as env://.
. "$(dirname "$0")/lib.sh"

three_ranks() {
    for r in 2 1; do
        # shellcheck disable=SC2086 # method is empty or an option and its value
        start "r$r" RANK=$r WORLD_SIZE=3 MASTER_ADDR=127.0.0.1 MASTER_PORT="$port" \
            WEFT_TIMEOUT=30 -- $method
    done
    sleep 1
    # shellcheck disable=SC2086 # method is empty or an option and its value
    start r0 RANK=0 WORLD_SIZE=3 MASTER_ADDR=127.0.0.1 MASTER_PORT="$port" \
        WEFT_TIMEOUT=30 -- $method
    finish
}

for method in "" "--method env://"; do
    with_free_port three_ranks
    show_outputs
    for r in 0 1 2; do
        expect_ok "r$r" "$r" 3
    done
done
echo "env:// with 3 ranks: ok"
