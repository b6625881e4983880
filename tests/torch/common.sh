# SPDX-License-Identifier: BSD-3-Clause
# common.sh: sourced by the torch backend's tests. Skips where configure
# did not build the backend; otherwise stages the uninstalled module as the
# package torch_weft, points Python, the loader and weft at the build tree,
# and gives run_torchrun and rank_log.
set -u
top=${abs_top_builddir:?}
src=${abs_top_srcdir:?}

skip() { echo "SKIP: $*"; exit 77; }
fail() { echo "$me: FAIL: $*"; exit 1; }
[ -n "${TORCH_PYTHON:-}" ] || skip "the torch backend is not built (see configure's summary)"
module=$(ls "$top"/bindings/torch/.libs/_C.cpython-*.so 2>/dev/null | head -1)
[ -n "$module" ] || { echo "$me: build first (make)"; exit 99; }

work=$(mktemp -d "${TMPDIR:-/tmp}/weft-torch.XXXXXX") || exit 99
trap 'rm -rf "$work"' EXIT
mkdir "$work/torch_weft"
ln -s "$src/bindings/torch/torch_weft/__init__.py" "$work/torch_weft/__init__.py"
ln -s "$module" "$work/torch_weft/"
PYTHONPATH=$work:$src/examples/torch:$src/tests/torch
LD_LIBRARY_PATH=$top/.libs
WEFT_PLUGIN_PATH=$top/plugins/sockets/.libs:$top/plugins/shm/.libs
WEFT_TIMEOUT=${WEFT_TIMEOUT:-60}
OMP_NUM_THREADS=1
export PYTHONPATH LD_LIBRARY_PATH WEFT_PLUGIN_PATH WEFT_TIMEOUT OMP_NUM_THREADS

# free_port: a TCP port free on 127.0.0.1 now.
free_port() {
    "$TORCH_PYTHON" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

# run_torchrun NPROC LOGDIR PROGRAM [ARGS]: torchrun on a free port of its
# own, each rank's stdout into LOGDIR/<rank>.out. Not --standalone: torch
# 1.13 gives it the fixed port 29400, where two tests side by side would
# meet each other's rendezvous. Debian's
# torchrun (torch 1.13 on Python 3.11) cannot parse --redirects/--tee
# values 0 and 3, so both are given per rank with values it can parse.
run_torchrun() {
    n=$1 logdir=$2
    shift 2
    redirects=$(seq -s, 0 $((n - 1)) | sed 's/\([0-9]*\)/\1:1/g')
    mkdir -p "$logdir" || return 99
    "$TORCH_PYTHON" -m torch.distributed.run --master_addr 127.0.0.1 \
        --master_port "$(free_port)" --nproc_per_node "$n" \
        --monitor_interval 0.2 --redirects "$redirects" --tee 9:1 \
        --log_dir "$logdir/torchrun" "$@" > "$logdir/torchrun.out" 2>&1
    rc=$?
    for r in $(seq 0 $((n - 1))); do
        cat "$logdir"/torchrun/*/attempt_0/$r/stdout.log > "$logdir/$r.out" 2>/dev/null
    done
    if [ $rc != 0 ]; then
        echo "$me: torchrun $* at $n ranks exited $rc:"
        tail -40 "$logdir/torchrun.out"
        for r in $(seq 0 $((n - 1))); do
            echo "--- rank $r:"; tail -20 "$logdir/$r.out"
            tail -20 "$logdir"/torchrun/*/attempt_0/$r/stderr.log 2>/dev/null
        done
    fi
    return $rc
}
