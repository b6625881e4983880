#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# installcheck.sh: builds a copy of this checkout in _installcheck/,
# installs it under _installcheck/prefix and runs `make installcheck`
# there: the example transport built out of the tree against the installed
# headers and weft.pc alone, and a job run through it with the installed
# weftrun and weft-info (tests/plugins/outoftree.sh). .ci/run calls it;
# the copy leaves the main tree's build and the system's folders alone.
#
# Exit status: 0 passed (or skipped, with the reason), 1 otherwise.
set -eu

cd "$(dirname "$0")/.."
top=$(pwd)
jobs=$(nproc 2>/dev/null || echo 2)
dir=$top/_installcheck
start=$(date +%s)

rm -rf "$dir"
scripts/copy_sources.sh "$dir/src"
cd "$dir/src"
./configure -q --prefix="$dir/prefix" >configure.out 2>&1 || { cat configure.out; exit 1; }
make -s -j"$jobs" >make.out 2>&1 || { tail -n 60 make.out; exit 1; }
make -s install >install.out 2>&1 || { tail -n 60 install.out; exit 1; }
if make installcheck >installcheck.out 2>&1; then
    cat installcheck.out
    echo "installcheck.sh: passed in $(( $(date +%s) - start )) s"
else
    cat installcheck.out
    echo "installcheck.sh: FAILED" >&2
    exit 1
fi
