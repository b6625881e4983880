#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# tcp://[::1]:PORT: the store over IPv6 loopback, three ranks.
. "$(dirname "$0")/lib.sh"

# IPv6 can be off (kernel, container): then there is nothing to test.
grep -q '^00000000000000000000000000000001 ' /proc/net/if_inet6 2>/dev/null ||
    skip "no IPv6 loopback address ::1 on this machine"

three_ranks() {
    for r in 2 0 1; do
        start "r$r" WEFT_TIMEOUT=30 -- --method "tcp://[::1]:$port" --rank "$r" --size 3
    done
    finish
}

with_free_port three_ranks
show_outputs
for r in 0 1 2; do
    expect_ok "r$r" "$r" 3
done
echo "tcp://[::1] with 3 ranks: ok"
