#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# callgraph.sh: no two files of the core call each other, directly or
# round a loop. Reads which symbols each object file of the core defines
# and which it uses (nm), joins them into a graph of files, and fails on
# every strongly connected set of more than one file, naming the calls
# that close it. A layer may call the layers below it; an upper layer
# that a lower one must reach registers a callback instead (core/LAYERS).
#
#   callgraph.sh [OBJECT...]   default: the core's objects in the build tree
set -u
if [ $# -eq 0 ]; then
    top=${abs_top_builddir:?}
    # Libtool keeps the objects of the shared library in .libs/; a static
    # only build has them beside their .lo.
    set -- $(find "$top"/core/* "$top/topo" -path '*/.libs/*libweft_core_la-*.o' 2>/dev/null | sort)
    [ $# -gt 0 ] || set -- $(find "$top"/core/* "$top/topo" -name '*libweft_core_la-*.o' 2>/dev/null | sort)
    [ $# -gt 0 ] || { echo "SKIP: no object files of the core under $top"; exit 77; }
    strip=$top/
else
    strip=
fi
command -v nm >/dev/null 2>&1 || { echo "SKIP: nm missing"; exit 77; }

for o in "$@"; do
    name=${o#"$strip"}
    name=$(echo "$name" | sed 's|/\.libs/|/|; s|[a-z_]*libweft_core_la-||; s|\.o$||')
    nm "$o" | awk -v f="$name" '
        NF == 3 && $2 ~ /^[TDBRCGSV]$/ { print "D", f, $3 }
        NF == 2 && $1 == "U" { print "U", f, $2 }'
done | awk '
function visit(v,    w, i, j, k, members, comp) {
    idx[v] = low[v] = counter++
    stack[sp++] = v; on[v] = 1
    for (i = 0; i < nout[v]; i++) {
        w = out[v, i]
        if (!(w in idx)) { visit(w); if (low[w] < low[v]) low[v] = low[w] }
        else if (on[w] && idx[w] < low[v]) low[v] = idx[w]
    }
    if (low[v] == idx[v]) {
        k = 0; members = ""
        do { w = stack[--sp]; on[w] = 0; comp[k++] = w; members = members " " w } while (w != v)
        if (k > 1) {
            loops++
            print "FAIL: these files call each other in a loop:" members
            for (i = 0; i < k; i++) in_comp[comp[i]] = loops
            for (i = 0; i < k; i++)
                for (j = 0; j < nout[comp[i]]; j++)
                    if (in_comp[out[comp[i], j]] == loops)
                        print "  " comp[i] " -> " out[comp[i], j] ":" why[comp[i], out[comp[i], j]]
        }
    }
}
$1 == "D" { def[$3] = $2; files[$2] = 1 }
$1 == "U" { use[++nuse] = $2 " " $3; files[$2] = 1 }
END {
    for (i = 1; i <= nuse; i++) {
        split(use[i], u, " ")
        if (!(u[2] in def) || def[u[2]] == u[1]) continue
        t = def[u[2]]
        if (!((u[1], t) in why)) { out[u[1], nout[u[1]]++] = t; why[u[1], t] = "" }
        why[u[1], t] = why[u[1], t] " " u[2]
    }
    nfiles = 0
    for (f in files) { nfiles++; if (!(f in idx)) visit(f) }
    if (loops) exit 1
    print "PASS: " nfiles " files of the core, no loop of calls between them"
}'
