#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# Ranks that disagree on the world size: every rank's weft_init fails with
# WEFT_ERR_BOOTSTRAP and says so, whichever rank holds the odd value
# (rank 0 hosts the store, so both sides of it are tried).
. "$(dirname "$0")/lib.sh"

pattern='size'

two_ranks() {
    start r0 RANK=0 WORLD_SIZE="$size0" MASTER_ADDR=127.0.0.1 MASTER_PORT="$port" \
        WEFT_TIMEOUT=20 -- --expect WEFT_ERR_BOOTSTRAP
    start r1 RANK=1 WORLD_SIZE="$size1" MASTER_ADDR=127.0.0.1 MASTER_PORT="$port" \
        WEFT_TIMEOUT=20 -- --expect WEFT_ERR_BOOTSTRAP
    finish
}

for sizes in "2 3" "3 2"; do
    # shellcheck disable=SC2086 # two numbers
    set -- $sizes
    size0=$1 size1=$2
    with_free_port two_ranks
    show_outputs
    expect_result r0 WEFT_ERR_BOOTSTRAP "$pattern"
    expect_result r1 WEFT_ERR_BOOTSTRAP "$pattern"
    echo "WORLD_SIZE $size0 at rank 0, $size1 at rank 1: both failed as expected"
done
