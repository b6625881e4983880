#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# tutorials.sh: the programs of PyTorch's distributed tutorials
# (examples/torch) under torchrun at their world sizes, with backend
# "weft" and with "gloo": every rank must print the same answers with both
# (numbers within 1e-5: the backends may add in a different order).
me=tutorials.sh
. "${abs_top_srcdir:?}/tests/torch/common.sh"

for case in "p2p 2" "collective 4" "train 2" "train 3"; do
    set -- $case
    prog=$1 n=$2
    for backend in weft gloo; do
        BACKEND=$backend run_torchrun $n "$work/$prog$n-$backend" "$src/examples/torch/$prog.py" ||
            fail "$prog.py at $n ranks with $backend"
    done
    for r in $(seq 0 $((n - 1))); do
        w=$work/$prog$n-weft/$r.out g=$work/$prog$n-gloo/$r.out
        [ -s "$w" ] || fail "$prog.py rank $r printed nothing with weft"
        "$TORCH_PYTHON" "$src/tests/torch/same_answers.py" "$w" "$g" ||
            fail "$prog.py at $n ranks: rank $r's answers differ between weft and gloo"
    done
    echo "$me: $prog.py at $n ranks: weft and gloo agree ($(cat "$work/$prog$n-weft/0.out" | wc -l) lines at rank 0)"
done
