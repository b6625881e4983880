#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# installed.sh: the installed torch_weft, as a user meets it after
# `make install`: found in the Python folder configure chose (nothing of
# the build tree on any path), loading the installed libweft and plugins,
# running a 2-rank job over tcp:// and one over file://. Run by
# `make installcheck` with TORCH_PYTHON and TORCH_PYTHONDIR; exit 77
# (skip) where the backend was not built.
set -u
me=installed.sh
[ -n "${TORCH_PYTHON:-}" ] || { echo "SKIP: the torch backend is not built"; exit 77; }
dir=${TORCH_PYTHONDIR:?}
[ -f "$dir/torch_weft/__init__.py" ] || { echo "$me: FAIL: no torch_weft in $dir"; exit 1; }
ls "$dir"/torch_weft/_C.cpython-*.so >/dev/null 2>&1 ||
    { echo "$me: FAIL: no extension module in $dir/torch_weft"; exit 1; }
tmp=$(mktemp -d "${TMPDIR:-/tmp}/weft-torch-inst.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT
# Only the install: no build tree on the module, library or plugin paths.
unset LD_LIBRARY_PATH WEFT_PLUGIN_PATH
PYTHONPATH=$dir OMP_NUM_THREADS=1 WEFT_TIMEOUT=60
export PYTHONPATH OMP_NUM_THREADS WEFT_TIMEOUT
cat > "$tmp/job.py" <<'PY'
import sys
import torch
import torch.distributed as dist
import torch_weft

method, rank, size = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
dist.init_process_group("weft", init_method=method, rank=rank, world_size=size)
t = torch.tensor([rank + 1.0])
dist.all_reduce(t)
assert t.item() == size * (size + 1) / 2, t
print("rank %d: %s from %s" % (rank, torch_weft.__file__, method))
dist.destroy_process_group()
PY
port=$((20000 + $$ % 20000))
for method in "tcp://127.0.0.1:$port" "file://$tmp/store"; do
    "$TORCH_PYTHON" "$tmp/job.py" "$method" 0 2 > "$tmp/0.out" 2>&1 &
    p0=$!
    "$TORCH_PYTHON" "$tmp/job.py" "$method" 1 2 > "$tmp/1.out" 2>&1
    r1=$?
    wait $p0
    r0=$?
    if [ $r0 != 0 ] || [ $r1 != 0 ]; then
        echo "$me: FAIL: the job over $method exited $r0 and $r1:"; cat "$tmp/0.out" "$tmp/1.out"
        exit 1
    fi
    grep -q "^rank 0: $dir/torch_weft/__init__.py" "$tmp/0.out" ||
        { echo "$me: FAIL: torch_weft did not come from $dir:"; cat "$tmp/0.out"; exit 1; }
done
echo "$me: the installed torch_weft in $dir ran 2-rank jobs over tcp:// and file://"
