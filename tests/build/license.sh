#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# license.sh: COPYING is present, and every source, header, script, build
# file and man page of the tree names its license in an SPDX line within
# its first five lines. Generated files (autotools' output) and test data
# that is compared byte for byte (topology XML and its expected output)
# are left out.
set -u
src=${abs_top_srcdir:?}
cd "$src" || exit 1
tag='SPDX-License-Identifier: BSD-3-Clause'

[ -f COPYING ] || { echo "FAIL: COPYING is missing"; exit 1; }
grep -q 'BSD 3-Clause License' COPYING || { echo "FAIL: COPYING is not the BSD-3-Clause text"; exit 1; }

checked=0
missing=
for f in $(find . \( -path ./.git -o -path ./config -o -path ./build-aux \
                     -o -path ./autom4te.cache -o -path './_build*' -o -path ./_sanitize -o -path ./_installcheck -o -path './weft-*' \
                     -o -name .deps -o -name .libs \) -prune -o -type f \( \
                     -name '*.c' -o -name '*.h' -o -name '*.sh' -o -name '*.py' \
                     -o -name '*.m4' -o -name '*.am' -o -name '*.ac' -o -name '*.in' \
                     -o -name '*.include' -o -name '*.mk' -o -name '*.mp' -o -name '*.map' \
                     -o -path './man/man?/*' -o -path ./.ci/run \) -print | sort); do
    case "$f" in
    ./Makefile.in|./config.h.in|./config.h|./confdefs.h|./aclocal.m4|./configure) continue ;;
    esac
    checked=$((checked + 1))
    head -n 5 "$f" | grep -q "$tag" || missing="$missing $f"
done
if [ -n "$missing" ]; then
    echo "FAIL: no '$tag' line in the first five lines of:"
    printf '  %s\n' $missing
    exit 1
fi
[ "$checked" -gt 100 ] || { echo "FAIL: only $checked files found under $src"; exit 1; }
echo "PASS: COPYING present; $checked files carry '$tag'"
