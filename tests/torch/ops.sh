#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# ops.sh: every torch.distributed operation on backend "weft" under
# torchrun (env://), at 1 to 4 ranks, checked against answers each rank
# computes itself (check_ops.py); at 3 ranks over the sockets transport.
me=ops.sh
. "${abs_top_srcdir:?}/tests/torch/common.sh"

for n in 1 2 3 4; do
    if [ $n = 3 ]; then t=sockets; else t=shm,sockets; fi
    WEFT_TRANSPORTS=$t run_torchrun $n "$work/ops$n" "$src/tests/torch/check_ops.py" ||
        fail "check_ops.py at $n ranks ($t)"
    for r in $(seq 0 $((n - 1))); do
        grep -q "^rank $r: 0 failures" "$work/ops$n/$r.out" ||
            fail "rank $r of $n did not report 0 failures"
    done
    echo "$me: $n ranks ($t): every check passed"
done
