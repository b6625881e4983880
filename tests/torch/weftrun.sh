#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# weftrun.sh: a torch program under weftrun: torch's env:// rendezvous
# opens its store on the MASTER_PORT weftrun gives the program, weft's
# own store being elsewhere (WEFT_MASTER_PORT); then backend "weft" runs
# the tutorial's collectives at 4 ranks, and gloo in the same way.
me=weftrun.sh
. "${abs_top_srcdir:?}/tests/torch/common.sh"
weftrun=$top/tools/weftrun
[ -x "$weftrun" ] || { echo "$me: build first (make)"; exit 99; }

# stacks PID: every thread's stack of PID and its descendants, for a job
# that does not end.
stacks() {
    for p in $1 $(pgrep -P "$1") $(for c in $(pgrep -P "$1"); do pgrep -P "$c"; done); do
        echo "--- pid $p: $(tr '\0' ' ' < /proc/$p/cmdline 2>/dev/null | cut -c1-120)"
        timeout 30 gdb -p "$p" -batch -ex "thread apply all bt 12" 2>/dev/null | grep -E "^#|^Thread"
    done
}

for backend in weft gloo; do
    BACKEND=$backend "$weftrun" -n 4 --tag-output \
        "$TORCH_PYTHON" "$src/examples/torch/collective.py" > "$work/$backend.out" 2>&1 &
    job=$! waited=0
    while kill -0 $job 2>/dev/null && [ $waited -lt 180 ]; do
        sleep 1
        waited=$((waited + 1))
    done
    if kill -0 $job 2>/dev/null; then
        tail -n 40 "$work/$backend.out"
        command -v gdb >/dev/null && stacks $job
        kill -TERM $job
        wait $job
        fail "collective.py under weftrun with $backend did not end within 180 s"
    fi
    wait $job ||
        { tail -n 40 "$work/$backend.out"; fail "collective.py under weftrun with $backend"; }
    for r in 0 1 2 3; do
        grep -q "rank $r: barrier passed" "$work/$backend.out" ||
            { tail -n 40 "$work/$backend.out"; fail "rank $r did not finish with $backend"; }
    done
done
# The same answers, rank by rank, with either backend.
for r in 0 1 2 3; do
    grep -o "rank $r: .*" "$work/weft.out" > "$work/weft.$r"
    grep -o "rank $r: .*" "$work/gloo.out" > "$work/gloo.$r"
    "$TORCH_PYTHON" "$src/tests/torch/same_answers.py" "$work/weft.$r" "$work/gloo.$r" ||
        fail "rank $r's answers differ between weft and gloo under weftrun"
done
echo "$me: collective.py at 4 ranks under weftrun: weft and gloo agree"
