#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# copy_sources.sh DEST: copies this checkout's sources into DEST (emptied
# first): the tracked files and the new ones git does not ignore, what a
# commit of the tree would hold, without the build's products. Then
# builds the copy's configure (autogen.sh, output in DEST/autogen.out).
# sanitizers.sh and installcheck.sh build their own trees from it.
set -eu

[ "$#" -eq 1 ] || { echo "usage: $0 DEST" >&2; exit 2; }
dest=$1
top=$(cd "$(dirname "$0")/.." && pwd)
git -C "$top" rev-parse --git-dir >/dev/null 2>&1 ||
    { echo "copy_sources.sh: $top is not a git checkout: cannot tell sources from build" \
           "products" >&2; exit 1; }
rm -rf "$dest"
mkdir -p "$dest"
git -C "$top" ls-files -z --cached --others --exclude-standard |
    (cd "$top" && xargs -0 tar -cf - --no-recursion) | tar -C "$dest" -xf -
(cd "$dest" && ./autogen.sh >autogen.out 2>&1) || { cat "$dest/autogen.out"; exit 1; }
