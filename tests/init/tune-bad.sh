#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# A tuning set-up that rank 0 refuses (a malformed WEFT_TUNE_FILE, a bad
# WEFT_TUNE) fails weft_init on every rank with WEFT_ERR_INVALID_ARG: rank
# 0 names the cause, the others say rank 0 refused; none hangs waiting for
# parameters. Only rank 0's environment matters, so the others here have
# none of it.
. "$(dirname "$0")/lib.sh"

printf 'weft-tune 1\nintra_alpha 1e-6\nintra_beta fast\n' >"$tmp/bad.txt"

three_ranks() {
    for r in 2 1; do
        start "r$r" RANK=$r WORLD_SIZE=3 MASTER_ADDR=127.0.0.1 MASTER_PORT="$port" \
            WEFT_TIMEOUT=20 -- --expect WEFT_ERR_INVALID_ARG
    done
    # shellcheck disable=SC2086 # tune_env is VAR=VALUE
    start r0 RANK=0 WORLD_SIZE=3 MASTER_ADDR=127.0.0.1 MASTER_PORT="$port" \
        WEFT_TIMEOUT=20 $tune_env -- --expect WEFT_ERR_INVALID_ARG
    finish
}

for case in file tune; do
    if [ $case = file ]; then
        tune_env="WEFT_TUNE_FILE=$tmp/bad.txt"
        why="tuning file .*bad.txt line 3"
    else
        tune_env="WEFT_TUNE=yes"
        why="WEFT_TUNE=yes is neither"
    fi
    with_free_port three_ranks
    show_outputs
    expect_result r0 WEFT_ERR_INVALID_ARG "$why"
    expect_result r1 WEFT_ERR_INVALID_ARG "rank 0 could not set up the tuner"
    expect_result r2 WEFT_ERR_INVALID_ARG "rank 0 could not set up the tuner"
    echo "$tune_env at rank 0: every rank failed as expected"
done
