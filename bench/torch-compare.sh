#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# torch-compare.sh: torch.distributed with backend "weft" against "gloo",
# in one run: all_reduce, all_gather, all_to_all_single and broadcast at
# 1 KiB, 64 KiB, 1 MiB and 16 MiB (bench/torch_backends.py), under
# torchrun, the two backends taking turns ROUNDS times (default 3) so
# that this machine's noise falls on both; each figure is the best round.
#
#   bench/torch-compare.sh [-n RANKS] [-r ROUNDS]      (from the build tree)
#
# Prints one row per operation and size: microseconds per call for each
# backend and gloo/weft (above 1: weft is faster). Needs the backend built
# (configure's summary: torch backend yes).
set -eu
n=4 rounds=3
while getopts n:r: o; do
    case $o in
    n) n=$OPTARG ;;
    r) rounds=$OPTARG ;;
    *) echo "usage: $0 [-n RANKS] [-r ROUNDS]" >&2; exit 2 ;;
    esac
done
top=$(pwd)
srcdir=$(cd "$(dirname "$0")/.." && pwd)
python=$(sed -n "s/^TORCH_PYTHON = //p" "$top/Makefile")
module=$(ls "$top"/bindings/torch/.libs/_C.cpython-*.so 2>/dev/null | head -1)
[ -n "$python" ] && [ -n "$module" ] || {
    echo "$0: run from a build tree whose configure found torch, after make" >&2; exit 1; }

tmp=$(mktemp -d "${TMPDIR:-/tmp}/weft-torch-bench.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
mkdir "$tmp/torch_weft"
ln -s "$srcdir/bindings/torch/torch_weft/__init__.py" "$module" "$tmp/torch_weft/"
PYTHONPATH=$tmp LD_LIBRARY_PATH=$top/.libs OMP_NUM_THREADS=1
WEFT_PLUGIN_PATH=$top/plugins/sockets/.libs:$top/plugins/shm/.libs
export PYTHONPATH LD_LIBRARY_PATH OMP_NUM_THREADS WEFT_PLUGIN_PATH

redirects=$(seq -s, 0 $((n - 1)) | sed 's/\([0-9]*\)/\1:1/g')
for round in $(seq "$rounds"); do
    for backend in weft gloo; do
        rm -rf "$tmp/log"
        port=$("$python" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
        BACKEND=$backend "$python" -m torch.distributed.run --master_addr 127.0.0.1 \
            --master_port "$port" --nproc_per_node "$n" \
            --monitor_interval 0.2 --redirects "$redirects" --tee 9:1 --log_dir "$tmp/log" \
            "$srcdir/bench/torch_backends.py" > "$tmp/torchrun.out" 2>&1 ||
            { tail -30 "$tmp/torchrun.out"; cat "$tmp"/log/*/attempt_0/*/stderr.log; exit 1; }
        sed "s/^/$backend /" "$tmp"/log/*/attempt_0/0/stdout.log >> "$tmp/all"
    done
done

echo "torch.distributed, $n ranks on $(getconf _NPROCESSORS_ONLN) cores of $(hostname), best of $rounds rounds"
awk '
{ key = $2 " " $3; t = $4
  if (!(key in seen)) { seen[key] = 1; order[++k] = key }
  if (!((key, $1) in best) || t < best[key, $1]) best[key, $1] = t }
END {
  printf "%-11s %10s %12s %12s %10s\n", "op", "bytes", "weft (us)", "gloo (us)", "gloo/weft"
  for (i = 1; i <= k; i++) {
    split(order[i], f, " ")
    w = best[order[i], "weft"]; g = best[order[i], "gloo"]
    printf "%-11s %10d %12.1f %12.1f %10.2f\n", f[1], f[2], w, g, g / w
  }
}' "$tmp/all"
