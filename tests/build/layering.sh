#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# layering.sh: every #include "core/..." or "topo/..." of a file of the
# core (core/, topo/) goes to its own layer or one below it, as
# core/LAYERS orders them; a private header is included only from its own
# folder; every file of core/ lies in a layer. Exceptions are the "allow"
# lines of core/LAYERS. Prints each violation with its line.
#
#   layering.sh [SRCDIR]    SRCDIR: the tree to check (default: the source tree)
set -u
src=${1:-${abs_top_srcdir:?}}
layers=$src/core/LAYERS
[ -f "$layers" ] || { echo "FAIL: $layers is missing"; exit 1; }
cd "$src" || exit 1

files=$(find core topo -name '*.[ch]' 2>/dev/null | sort)
[ -n "$files" ] || { echo "FAIL: no source files under $src/core"; exit 1; }

# Each include line as "file:line:header", then judged in awk against
# LAYERS (read first).
grep -n '^[[:space:]]*#[[:space:]]*include[[:space:]]*"\(core\|topo\)/' $files |
sed 's/^\([^:]*\):\([0-9]*\):.*"\(.*\)".*/\1 \2 \3/' |
awk -v layers="$layers" -v all_files="$files" '
function layer_of(path,    i, best, blen) {
    best = -1; blen = 0
    for (i = 0; i < nl; i++)
        if (index(path, folder[i] "/") == 1 && length(folder[i]) > blen) {
            best = i; blen = length(folder[i])
        }
    return best
}
function dir_of(path) { sub(/\/[^\/]*$/, "", path); return path }
BEGIN {
    nl = 0
    while ((getline line < layers) > 0) {
        n = split(line, f, /[ \t]+/)
        if (f[1] == "layer" && n >= 3) { name[nl] = f[2]; folder[nl] = f[3]; nl++ }
        else if (f[1] == "private" && n >= 2) private[f[2]] = 1
        else if (f[1] == "allow" && n >= 3) allow[f[2] " " f[3]] = 1
    }
    if (nl == 0) { print "FAIL: no layer in " layers; bad = 1; exit }
    n = split(all_files, list, /[ \t\n]+/)
    for (i = 1; i <= n; i++)
        if (list[i] != "" && layer_of(list[i]) < 0) {
            print "FAIL: " list[i] " lies in no layer of core/LAYERS"; bad = 1
        }
    checked = 0
}
{
    file = $1; lineno = $2; hdr = $3; checked++
    lf = layer_of(file); lh = layer_of(hdr)
    if (lf < 0) next
    if (allow[file " " hdr]) next
    if (lh < 0) {
        print "FAIL: " file ":" lineno ": includes " hdr ", which lies in no layer"; bad = 1
        next
    }
    if (lh > lf) {
        print "FAIL: " file ":" lineno ": " name[lf] " includes " hdr " of " name[lh] \
              ", a layer above it"
        bad = 1
    }
    if (private[hdr] && dir_of(file) != dir_of(hdr)) {
        print "FAIL: " file ":" lineno ": includes " hdr ", private to " dir_of(hdr)
        bad = 1
    }
}
END {
    if (bad) exit 1
    print "PASS: " checked " includes of " nl " layers follow core/LAYERS"
}'
