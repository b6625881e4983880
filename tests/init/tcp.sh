#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# tcp://127.0.0.1:PORT with rank and size given as attributes (torch's
# init_process_group("tcp://...", rank=r, world_size=3)): no launcher
# variables at all.
. "$(dirname "$0")/lib.sh"

three_ranks() {
    for r in 1 2 0; do
        start "r$r" WEFT_TIMEOUT=30 -- --method "tcp://127.0.0.1:$port" --rank "$r" --size 3
    done
    finish
}

with_free_port three_ranks
show_outputs
for r in 0 1 2; do
    expect_ok "r$r" "$r" 3
done
echo "tcp://127.0.0.1 with 3 ranks: ok"
