#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# A world of 3 where rank 2 never comes: ranks 0 and 1 give up with
# WEFT_ERR_TIMEOUT after about WEFT_TIMEOUT=2 seconds, naming rank 2; then
# the same with weft_init_attr_t.timeout_ms = 1500 instead of WEFT_TIMEOUT.
. "$(dirname "$0")/lib.sh"

names_rank2='rank(s|\(s\))?( [a-z]+)?:? \[?([0-9]+(, ?| and | ?- ?))*2([^0-9]|$)'

two_of_three() {
    for r in 0 1; do
        # shellcheck disable=SC2086 # empty, or a variable / an option and its value
        start "r$r" RANK=$r WORLD_SIZE=3 MASTER_ADDR=127.0.0.1 MASTER_PORT="$port" \
            $timeout_var -- --expect WEFT_ERR_TIMEOUT $timeout_arg
    done
    finish
}

for how in env attr; do
    if [ "$how" = env ]; then
        timeout_var=WEFT_TIMEOUT=2 timeout_arg=''
    else
        timeout_var='' timeout_arg="--timeout-ms 1500"
    fi
    with_free_port two_of_three
    show_outputs
    for r in 0 1; do
        expect_result "r$r" WEFT_ERR_TIMEOUT "$names_rank2"
        el=$(elapsed_of "r$r")
        if [ -z "$el" ] || [ "$el" -lt 1 ] || [ "$el" -ge 12 ]; then
            fail "r$r: weft_init gave up after ${el:-?} s; the timeout was 2 s or less"
        fi
    done
    echo "timeout set through $how: ok"
done
