#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# outoftree.sh: a transport plugin builds and runs against an installed
# weft with nothing of weft's source tree, as a third party's would.
#
#  1. plugins/example/example.c and tests/plugins/outoftree_job.c are
#     copied to a temporary folder.
#  2. The plugin is built there as weft-example.so with the compiler flags
#     of `pkg-config --cflags weft` alone (PKG_CONFIG_PATH naming the
#     installed lib/pkgconfig), and must take weft.h, weft/transport.h and
#     weft/version.h from the installed include folder and export only
#     weft_transport_v1.
#  3. The job program is built with `pkg-config --cflags --libs weft`.
#  4. The installed weft-info, with WEFT_PLUGIN_PATH naming the plugin's
#     folder, must list the plugin as loaded.
#  5. The installed weftrun runs the job on one rank with
#     WEFT_TRANSPORTS=example; the job must pass its checks, and weft's log
#     must show the installed libweft choosing the example transport for
#     the rank and the plugin starting and finalizing.
#
# Usage: tests/plugins/outoftree.sh PREFIX
#   PREFIX is where `make install` put weft: PREFIX/lib/pkgconfig and
#   PREFIX/bin are used. make installcheck runs it with configure's own
#   folders in WEFT_PKGCONFIGDIR and WEFT_BINDIR instead. CC names the
#   compiler (default cc).
# Exit status: 0 passed; 1 a step failed, and the output says which;
# 77 skipped because pkg-config or the C compiler is missing.

set -u
LC_ALL=C
export LC_ALL

name=example
here=$(cd "$(dirname "$0")" && pwd)
src=${abs_top_srcdir:-$here/../..}
prefix=${1:-}
pcdir=${WEFT_PKGCONFIGDIR:-${prefix:+$prefix/lib/pkgconfig}}
bindir=${WEFT_BINDIR:-${prefix:+$prefix/bin}}
cc=${CC:-cc}

fail() {
    echo "FAIL: $*"
    exit 1
}

# Prints a file the failure that follows refers to, indented.
show() {
    echo "--- $1:"
    sed 's/^/    /' "$1"
}

if [ -z "$pcdir" ] || [ -z "$bindir" ]; then
    echo "usage: $0 PREFIX (the folder weft was installed to)" >&2
    exit 1
fi
if ! command -v pkg-config >/dev/null 2>&1; then
    echo "SKIP: pkg-config not found"
    exit 77
fi
if ! command -v "${cc%% *}" >/dev/null 2>&1; then
    echo "SKIP: no C compiler ($cc)"
    exit 77
fi

# What was installed must be there: its absence is a failure, not a skip.
[ -f "$pcdir/weft.pc" ] || fail "$pcdir/weft.pc not found: is weft installed there?"
for tool in weftrun weft-info; do
    [ -x "$bindir/$tool" ] || fail "$bindir/$tool not found: is weft installed there?"
done
for f in plugins/example/example.c tests/plugins/outoftree_job.c; do
    [ -f "$src/$f" ] || fail "$src/$f not found (set abs_top_srcdir to weft's source tree)"
done

tmp=$(mktemp -d "${TMPDIR:-/tmp}/weft-outoftree.XXXXXX") || fail "cannot create a temporary folder"
trap 'rm -rf "$tmp"' EXIT
trap 'exit 1' HUP INT TERM
mkdir "$tmp/src" "$tmp/plugins" || fail "cannot create folders in $tmp"
cp "$src/plugins/example/example.c" "$src/tests/plugins/outoftree_job.c" "$tmp/src/" ||
    fail "cannot copy the sources to $tmp/src"

# ------------------------------------------------------------ pkg-config

PKG_CONFIG_PATH=$pcdir
export PKG_CONFIG_PATH
cflags=$(pkg-config --cflags weft) || fail "pkg-config --cflags weft failed"
libs=$(pkg-config --libs weft) || fail "pkg-config --libs weft failed"
includedir=$(pkg-config --variable=includedir weft)
libdir=$(pkg-config --variable=libdir weft)
[ -n "$includedir" ] && [ -n "$libdir" ] || fail "weft.pc gives no includedir or libdir"
echo "ok: weft $(pkg-config --modversion weft) at $pcdir: cflags:" $cflags "libs:" $libs

# ---------------------------------------------------------- the plugin

cd "$tmp/src" || fail "cannot enter $tmp/src"
# Which files the preprocessor took (-H): every weft header must be the
# installed one, not another copy on the compiler's default path.
if ! $cc -std=gnu11 $cflags -H -fsyntax-only example.c >/dev/null 2>"$tmp/headers"; then
    show "$tmp/headers"
    fail "example.c does not compile with the installed headers"
fi
for h in weft.h weft/transport.h weft/version.h; do
    used=$(sed -n "s|^\.* \(.*/$h\)\$|\1|p" "$tmp/headers" | head -n 1)
    [ "$used" = "$includedir/$h" ] ||
        fail "$h came from '${used:-nowhere}', not from the installed $includedir/$h"
done
echo "ok: weft.h, weft/transport.h and weft/version.h come from $includedir"

so=$tmp/plugins/weft-$name.so
if ! $cc -std=gnu11 -Wall -Wextra -Wno-unused-parameter -fPIC -fvisibility=hidden $cflags \
    -shared -o "$so" example.c >"$tmp/cc.out" 2>&1; then
    show "$tmp/cc.out"
    fail "the example plugin does not build against the installed weft"
fi
[ -s "$tmp/cc.out" ] && show "$tmp/cc.out"
if command -v nm >/dev/null 2>&1; then
    syms=$(nm -D --defined-only "$so" | awk '{ print $3 }' |
        grep -v -E '^(_init|_fini|_edata|_end|__bss_start)$' | tr '\n' ' ')
    [ "$syms" = "weft_transport_v1 " ] ||
        fail "weft-$name.so exports '$syms', not weft_transport_v1 alone"
fi
echo "ok: built $so"

if ! $cc -std=gnu11 -Wall $cflags -o "$tmp/job" outoftree_job.c $libs \
    -Wl,-rpath,"$libdir" >"$tmp/cc.out" 2>&1; then
    show "$tmp/cc.out"
    fail "the job program does not build against the installed weft"
fi
echo "ok: built the job program with the installed libweft"

# ------------------------------------------------------------ weft-info

if ! WEFT_PLUGIN_PATH=$tmp/plugins WEFT_TRANSPORTS=$name "$bindir/weft-info" \
    >"$tmp/info.out" 2>&1; then
    show "$tmp/info.out"
    fail "weft-info found no usable transport"
fi
# "  example  loaded  /path/weft-example.so" in the transports table.
if ! awk -v n="$name" -v p="$so" '$1 == n && $2 == "loaded" && $3 == p { found = 1 }
                                  END { exit !found }' "$tmp/info.out"; then
    show "$tmp/info.out"
    fail "weft-info does not list $so as loaded"
fi
echo "ok: weft-info lists $name as loaded from $so"

# ------------------------------------------------------------ the job

if ! WEFT_PLUGIN_PATH=$tmp/plugins WEFT_TRANSPORTS=$name WEFT_TIMEOUT=60 \
    WEFT_DEBUG=INFO WEFT_DEBUG_SUBSYS=PLUGIN,TRANSPORT WEFT_DEBUG_FILE="$tmp/job.log" \
    "$bindir/weftrun" --timeout 120 -n 1 "$tmp/job" >"$tmp/job.out" 2>&1; then
    show "$tmp/job.out"
    [ -f "$tmp/job.log" ] && show "$tmp/job.log"
    fail "the job failed over the $name transport"
fi
cat "$tmp/job.out"
[ -f "$tmp/job.log" ] || fail "the job wrote no log to $tmp/job.log (WEFT_DEBUG_FILE)"
# The loader looks in weft/ beside the libweft it runs in: the installed one.
for line in "$libdir/weft (beside the weft library)" \
    "$name: rank 0 of 1: loopback transport ready" \
    "transport per rank: 0:$name" \
    "$name: finalized:"; do
    if ! grep -q -F "$line" "$tmp/job.log"; then
        show "$tmp/job.log"
        fail "weft's log of the job lacks '$line'"
    fi
done
echo "ok: the job ran over the $name transport with the libweft in $libdir"
exit 0
