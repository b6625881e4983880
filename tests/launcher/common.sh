# SPDX-License-Identifier: BSD-3-Clause
# common.sh: sourced by every launcher test. Finds weftrun, makes a scratch
# directory that goes away at exit, and gives the helpers below.
# Exit codes of the tests: 0 pass, 1 fail, 77 skip.

fail() {
    echo "FAIL: $*" >&2
    exit 1
}

skip() {
    echo "SKIP: $*" >&2
    exit 77
}

# WEFTRUN names the launcher to test; else abs_top_builddir's; else the one
# of the current directory (make check runs the tests from the top build
# directory); else, run by hand in an in-tree build, the one beside the
# script.
if [ -z "${WEFTRUN:-}" ]; then
    if [ -n "${abs_top_builddir:-}" ]; then
        WEFTRUN=$abs_top_builddir/tools/weftrun
    elif [ -x tools/weftrun ]; then
        WEFTRUN=$(pwd)/tools/weftrun
    else
        WEFTRUN=$(cd "$(dirname "$0")/../.." && pwd)/tools/weftrun
    fi
fi
[ -x "$WEFTRUN" ] || fail "weftrun not found at $WEFTRUN (build it, or set WEFTRUN)"

tmp=$(mktemp -d "${TMPDIR:-/tmp}/weftrun-test.XXXXXX") || fail "cannot make a scratch directory"
background_pids=

# weftruns started in the background die with their ranks (PR_SET_PDEATHSIG)
# when a failing test leaves them behind.
cleanup() {
    for pid in $background_pids; do
        kill -9 "$pid" 2>/dev/null
    done
    rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 1' INT TERM HUP

now_ms() {
    ns=$(date +%s%N)
    case $ns in
    *N) echo $(($(date +%s) * 1000)) ;;
    *) echo $((ns / 1000000)) ;;
    esac
}

# weftrun in the foreground; a hung weftrun is killed after LIMIT seconds
# (its ranks die with it), so that a broken launcher fails the test instead
# of stalling make check.
wr() {
    if command -v timeout >/dev/null 2>&1; then
        timeout -s KILL "${LIMIT:-20}" "$WEFTRUN" "$@"
    else
        "$WEFTRUN" "$@"
    fi
}

# wait_files COUNT SECONDS GLOB: waits until GLOB matches COUNT files.
wait_files() {
    want=$1 limit=$(($2 * 10)) glob=$3
    while :; do
        n=0
        for f in $glob; do
            [ -e "$f" ] && n=$((n + 1))
        done
        [ "$n" -ge "$want" ] && return 0
        limit=$((limit - 1))
        [ "$limit" -le 0 ] && return 1
        sleep 0.1
    done
}

# alive PID: the process runs (a zombie that init has yet to reap does not).
alive() {
    state=$(sed 's/.*) //' "/proc/$1/stat" 2>/dev/null | cut -c1)
    [ -n "$state" ] && [ "$state" != Z ] && [ "$state" != X ]
}

# expect_status WANT GOT WHAT
expect_status() {
    [ "$2" -eq "$1" ] || fail "$3: weftrun exited with $2, expected $1"
}

# expect_line FILE PATTERN WHAT: FILE has a line matching the grep -E PATTERN.
expect_line() {
    grep -Eq -- "$2" "$1" || {
        echo "--- $1:" >&2
        cat "$1" >&2
        fail "$3: no line matching '$2'"
    }
}
