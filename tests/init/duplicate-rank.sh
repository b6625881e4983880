#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# Two processes claiming rank 1 of 3 (and none rank 2): every one of the
# three fails with WEFT_ERR_BOOTSTRAP naming rank 1, long before the
# timeout.
. "$(dirname "$0")/lib.sh"

three_processes() {
    for p in 0 1 1b; do
        r=${p%b}
        start "p$p" RANK="$r" WORLD_SIZE=3 MASTER_ADDR=127.0.0.1 MASTER_PORT="$port" \
            WEFT_TIMEOUT=20 -- --expect WEFT_ERR_BOOTSTRAP
        sleep 0.3
    done
    finish
}

with_free_port three_processes
show_outputs
for p in 0 1 1b; do
    expect_result "p$p" WEFT_ERR_BOOTSTRAP 'rank[s]?[^0-9]{0,3}1([^0-9]|$)'
    el=$(elapsed_of "p$p")
    [ "${el:-99}" -lt 15 ] || fail "p$p: weft_init took ${el} s to notice the duplicate"
done
echo "duplicate rank 1: every process failed as expected"
