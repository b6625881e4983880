#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# lint.sh: the checks of weft's man pages that make check runs.
#
#  1. Every weft_* function declared in include/weft.h is named in the NAME
#     section of some man3 page; each page's first name is its file name.
#  2. Every further name of a man3 page has a link in WEFT_MAN3_LINKS of
#     man/Makefile.include, and every link there is a name of its page, so
#     that man(1) finds each function.
#  3. Every page under man/ is listed for installation there, and every
#     page listed exists.
#  4. The C programs under EXAMPLES of the man3 pages compile (skipped when
#     no compiler or no generated weft/version.h is at hand).
#  5. mandoc -T lint -W warning prints nothing for any page.
#
# Exit status (automake's test protocol): 0 all passed, 1 a check failed,
# 77 checks 1-4 passed but mandoc is not installed, so nothing was linted.
# Runs from the build tree or the source tree; $srcdir (set by make check)
# or the script's location gives the source tree. MANDOC and CC may name
# the programs to use.

set -u
LC_ALL=C
export LC_ALL

if [ -n "${srcdir:-}" ] && [ -f "$srcdir/include/weft.h" ]; then
    top=$srcdir
else
    top=$(dirname "$0")/..
fi
header=$top/include/weft.h
makefile=$top/man/Makefile.include
for f in "$header" "$makefile"; do
    if [ ! -f "$f" ]; then
        echo "lint.sh: $f not found" >&2
        exit 1
    fi
done

tmp=$(mktemp -d "${TMPDIR:-/tmp}/weft-manlint.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT
trap 'exit 1' HUP INT TERM
failed=0

fail() {
    echo "FAIL: $*"
    failed=1
}

# ------------------------------------------------- what the header declares

# Function names of the WEFT_API declarations: comments and preprocessor
# lines dropped, the rest cut into statements at ; { and }.
awk '
    BEGIN { incomment = 0; cont = 0; text = "" }
    {
        line = $0
        if (cont) { cont = (line ~ /\\$/); next }
        out = ""
        while (line != "") {
            if (incomment) {
                i = index(line, "*/")
                if (i == 0) { line = ""; break }
                line = substr(line, i + 2)
                incomment = 0
            } else {
                i = index(line, "/*")
                if (i == 0) { out = out line; line = ""; break }
                out = out substr(line, 1, i - 1)
                line = substr(line, i + 2)
                incomment = 1
            }
        }
        if (out ~ /^[ \t]*#/) { cont = (out ~ /\\$/); next }
        text = text " " out
    }
    END {
        n = split(text, stmts, /[;{}]/)
        for (k = 1; k <= n; k++) {
            s = stmts[k]
            if (s !~ /(^|[^A-Za-z0-9_])WEFT_API[ \t]/)
                continue
            if (match(s, /weft_[A-Za-z0-9_]*[ \t]*\(/)) {
                name = substr(s, RSTART, RLENGTH)
                sub(/[ \t]*\($/, "", name)
                print name
            }
        }
    }' "$header" | sort -u >"$tmp/declared"
if [ ! -s "$tmp/declared" ]; then
    fail "found no WEFT_API function in $header"
fi

# ------------------------------------------------- what the makefile lists

# The words of a variable of man/Makefile.include, one per line.
make_var() {
    awk -v var="$1" '
        !on && $0 ~ "^" var "[ \t]*[+]?=" { on = 1; sub(/^[^=]*=/, "") }
        on {
            more = sub(/\\$/, "")
            n = split($0, w, /[ \t]+/)
            for (i = 1; i <= n; i++)
                if (w[i] != "")
                    print w[i]
            if (!more)
                on = 0
        }' "$makefile"
}

for v in WEFT_MAN1_PAGES WEFT_MAN3_PAGES WEFT_MAN7_PAGES; do
    make_var "$v"
done | sort -u >"$tmp/listed"
make_var WEFT_MAN3_LINKS | sort -u >"$tmp/links"
if [ ! -s "$tmp/listed" ]; then
    fail "found no page list in $makefile"
fi

# ------------------------------------------------- pages on disk vs listed

(cd "$top" && ls man/man[1-9]/*.[1-9] 2>/dev/null) | sort -u >"$tmp/present"
comm -23 "$tmp/present" "$tmp/listed" | while read -r page; do
    echo "FAIL: $page is not listed in man/Makefile.include, so it is not installed"
done >"$tmp/out"
comm -13 "$tmp/present" "$tmp/listed" | while read -r page; do
    echo "FAIL: $page is listed in man/Makefile.include but does not exist"
done >>"$tmp/out"
if [ -s "$tmp/out" ]; then
    cat "$tmp/out"
    failed=1
fi
sort -u "$tmp/present" "$tmp/listed" >"$tmp/all"

# ------------------------------------------------- names of the man3 pages

: >"$tmp/named"
: >"$tmp/aliases"
for page in $(grep '^man/man3/' "$tmp/present"); do
    base=$(basename "$page" .3)
    # The names given in the NAME section, in order.
    awk '
        /^\.Sh / { on = ($0 == ".Sh NAME"); next }
        on && /^\.Nm / { print $2 }' "$top/$page" >"$tmp/names"
    first=$(head -n 1 "$tmp/names")
    if [ "$first" != "$base" ]; then
        fail "$page: the first .Nm of NAME is '$first', not '$base'"
    fi
    title=$(awk '/^\.Dt / { print $2, $3; exit }' "$top/$page")
    want=$(echo "$base" | tr '[:lower:]' '[:upper:]')
    if [ "$title" != "$want 3" ]; then
        fail "$page: .Dt is '$title', not '$want 3'"
    fi
    cat "$tmp/names" >>"$tmp/named"
    sed 1d "$tmp/names" | while read -r name; do
        echo "$base.3:$name.3"
    done >>"$tmp/aliases"
done
sort -u -o "$tmp/named" "$tmp/named"
sort -u -o "$tmp/aliases" "$tmp/aliases"

missing=$(comm -23 "$tmp/declared" "$tmp/named" | tr '\n' ' ')
if [ -n "$missing" ]; then
    fail "functions of include/weft.h named in no man3 page: $missing"
fi
unlinked=$(comm -23 "$tmp/aliases" "$tmp/links" | tr '\n' ' ')
if [ -n "$unlinked" ]; then
    fail "names without a link in WEFT_MAN3_LINKS (page:link): $unlinked"
fi
stale=$(comm -13 "$tmp/aliases" "$tmp/links" | tr '\n' ' ')
if [ -n "$stale" ]; then
    fail "links in WEFT_MAN3_LINKS that their page does not name: $stale"
fi

# ------------------------------------------------- examples compile

version_h=
for d in include "$top/include"; do
    if [ -f "$d/weft/version.h" ]; then
        version_h=$d
        break
    fi
done
cc=${CC:-cc}
if [ -z "$version_h" ]; then
    echo "note: weft/version.h not generated yet; EXAMPLES not compiled"
elif ! command -v "${cc%% *}" >/dev/null 2>&1; then
    echo "note: no C compiler ($cc); EXAMPLES not compiled"
else
    for page in $(grep '^man/man3/' "$tmp/present"); do
        # Every literal display of EXAMPLES that includes a header is a
        # translation unit; \e and \& are mdoc escapes.
        awk -v dir="$tmp" -v base="$(basename "$page")" '
            /^\.Sh / { ex = ($0 == ".Sh EXAMPLES"); next }
            ex && /^\.Bd -literal/ { lit = 1; text = ""; next }
            lit && /^\.Ed/ {
                lit = 0
                if (text ~ /#include/) {
                    n++
                    f = dir "/" base "-" n ".c"
                    printf "%s", text > f
                    close(f)
                    print f
                }
                next
            }
            lit {
                line = $0
                gsub(/\\e/, "\\", line)
                gsub(/\\&/, "", line)
                text = text line "\n"
            }' "$top/$page" >"$tmp/examples"
        while read -r src; do
            if $cc -std=gnu11 -Wall -Wextra -Werror -Wno-unused-function \
                -Wno-unused-parameter -I"$top/include" -I"$version_h" \
                -c "$src" -o "$tmp/example.o" >"$tmp/cc.out" 2>&1; then
                echo "ok: $page: example $(basename "$src" .c | sed 's/.*-//') compiles"
            else
                fail "$page: example $(basename "$src" .c | sed 's/.*-//') does not compile:"
                sed 's/^/    /' "$tmp/cc.out"
            fi
        done <"$tmp/examples"
    done
fi

# ------------------------------------------------- mandoc

mandoc=${MANDOC:-mandoc}
if ! command -v "$mandoc" >/dev/null 2>&1; then
    if [ "$failed" != 0 ]; then
        exit 1
    fi
    echo "SKIP: mandoc not found, pages not linted (apt-get install mandoc)"
    exit 77
fi
for page in $(cat "$tmp/all"); do
    [ -f "$top/$page" ] || continue
    (cd "$top" && "$mandoc" -T lint -W warning "$page") >"$tmp/lint.out" 2>&1
    if [ -s "$tmp/lint.out" ]; then
        fail "$page: mandoc -T lint -W warning:"
        sed 's/^/    /' "$tmp/lint.out"
    else
        echo "ok: $page"
    fi
done

exit "$failed"
